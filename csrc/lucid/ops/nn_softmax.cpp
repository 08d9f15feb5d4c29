// Softmax, LogSoftmax and Dropout: the op records. Softmax/LogSoftmax are fused, numerically
// stable kernels (backends/cpu/kernels/softmax.cpp); their VJPs are written with ops
// (softmax: y * (g - sum(g*y)); log_softmax: g - softmax(x) * sum(g)), so they differentiate
// twice. Dropout takes its keep-mask as a tensor input (drawn by the caller), y = x*mask/(1-p)
// (backends/cpu/kernels/dropout.cpp), and its VJP is Dropout of the gradient with the same mask.
#include <vector>

#include "lucid/ops/core.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/nn.h"
#include "lucid/ops/nn_util.h"

namespace lucid {

namespace {

std::vector<TensorMeta> softmax_infer(const TensorList& in, const Attrs& a, const char* op) {
  const Tensor& x = in[0];
  nnutil::check_floating(x, op, "input");
  if (x.ndim() > 0) wrap_dim(a.i("dim"), x.ndim(), op);
  else LUCID_CHECK(a.i("dim") == 0 || a.i("dim") == -1, IndexError, op, ": dim ", a.i("dim"), " out of range for a 0-d tensor");
  return {{x.shape(), x.dtype()}};
}

}  // namespace

LUCID_REGISTER_OP(Softmax, "dim:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) { return softmax_infer(in, a, "softmax"); };
  d.save = kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& y = c.outputs[0];
    int64_t dim = y.ndim() == 0 ? 0 : wrap_dim(c.attrs.i("dim"), y.ndim(), "softmax");
    Tensor gy = mul(c.grads[0], y);
    IntList dims = y.ndim() == 0 ? IntList{} : IntList{dim};
    return TensorList{sub(gy, mul(y, sum(gy, dims, true)))};
  };
  return d;
}());

LUCID_REGISTER_OP(LogSoftmax, "dim:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) { return softmax_infer(in, a, "log_softmax"); };
  d.save = kSaveOutputs;  // the result, as PyTorch: softmax = exp(log_softmax)
  d.vjp = [](const VjpContext& c) {
    const Tensor& y = c.outputs[0];
    int64_t dim = y.ndim() == 0 ? 0 : wrap_dim(c.attrs.i("dim"), y.ndim(), "log_softmax");
    IntList dims = y.ndim() == 0 ? IntList{} : IntList{dim};
    const Tensor& g = c.grads[0];
    return TensorList{sub(g, mul(exp(y), sum(g, dims, true)))};
  };
  return d;
}());

Tensor softmax(const Tensor& x, int64_t dim) { return dispatch1(OpId::Softmax, {x}, {{"dim", dim}}); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return dispatch1(OpId::LogSoftmax, {x}, {{"dim", dim}}); }

// ---- Dropout ------------------------------------------------------------------------------
LUCID_REGISTER_OP(Dropout, "p:float", [] {
  OpDef d;
  d.num_inputs = 2;
  d.nondiff_inputs = {1};
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor &x = in[0], &m = in[1];
    nnutil::check_floating(x, "dropout", "input");
    LUCID_CHECK(m.dtype() == DType::Bool || m.dtype() == x.dtype(), TypeError,
                "dropout: argument 'mask' expected dtype bool or ", dtype_name(x.dtype()), ", got ", dtype_name(m.dtype()));
    LUCID_CHECK(m.shape() == x.shape(), ValueError, "dropout: argument 'mask' expected shape ", shape_str(x.shape()),
                ", got ", shape_str(m.shape()));
    double p = a.f("p");
    LUCID_CHECK(p >= 0.0 && p <= 1.0, ValueError, "dropout: probability has to be between 0 and 1, but got ", p);
    return std::vector<TensorMeta>{{x.shape(), x.dtype()}};
  };
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    return TensorList{dropout_with_mask(c.grads[0], c.inputs[1], c.attrs.f("p")), Tensor()};
  };
  return d;
}());

Tensor dropout_with_mask(const Tensor& x, const Tensor& mask, double p) {
  return dispatch1(OpId::Dropout, {x, mask}, {{"p", p}});
}

}  // namespace lucid
