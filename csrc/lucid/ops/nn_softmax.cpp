// Softmax, LogSoftmax and Dropout. Softmax/LogSoftmax are fused, numerically stable kernels
// (max-subtract, one exp pass) over [outer, dim, inner] views; their VJPs are written with ops
// (softmax: y * (g - sum(g*y)); log_softmax: g - softmax(x) * sum(g)), so they differentiate
// twice. Dropout takes its keep-mask as a tensor input (drawn by the caller), y = x*mask/(1-p),
// and its VJP is Dropout of the gradient with the same mask.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "lucid/core/parallel.h"
#include "lucid/ops/core.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/nn.h"
#include "lucid/ops/nn_util.h"
#include "lucid/ops/nn_vec.h"

namespace lucid {

namespace {

void split_dim(const Shape& s, int64_t dim, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = 1;
  inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= s[i];
  n = s.empty() ? 1 : s[dim];
  for (int64_t i = dim + 1; i < static_cast<int64_t>(s.size()); ++i) inner *= s[i];
}

template <class T, bool Log>
void softmax_rows(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  using C = compute_t<T>;
  constexpr bool kSame = std::is_same_v<T, C>;
  int64_t work = std::max<int64_t>(1, n * inner);
  parallel_for(0, outer, std::max<int64_t>(1, kParallelGrain / work), [&](int64_t b, int64_t e) {
    if (inner == 1) {
      // Contiguous rows: max, exp (SLEEF, 8 lanes), sum, scale.
      std::vector<C> buf(n);
      for (int64_t o = b; o < e; ++o) {
        const T* xo = x + o * n;
        T* yo = y + o * n;
        C* t = kSame ? reinterpret_cast<C*>(yo) : buf.data();
        for (int64_t d = 0; d < n; ++d) t[d] = static_cast<C>(xo[d]);
        C mx = nnvec::vmax(t, n);
        if (std::isinf(mx) && mx < 0) mx = 0;  // all -inf: exp gives 0s, sum 0 -> nan like PyTorch
        nnvec::vexp_sub(t, n, mx);
        C sm = static_cast<C>(nnvec::vsum(t, n));
        if constexpr (Log) {
          C lse = mx + std::log(sm);
          for (int64_t d = 0; d < n; ++d) yo[d] = static_cast<T>(static_cast<C>(xo[d]) - lse);
        } else {
          C inv = C(1) / sm;
          for (int64_t d = 0; d < n; ++d) yo[d] = static_cast<T>(t[d] * inv);
        }
      }
      return;
    }
    // Strided classes: vectorise over the inner dim.
    std::vector<C> mx(inner), sm(inner), buf(inner);
    for (int64_t o = b; o < e; ++o) {
      const T* xo = x + o * n * inner;
      T* yo = y + o * n * inner;
      std::fill(mx.begin(), mx.end(), -std::numeric_limits<C>::infinity());
      std::fill(sm.begin(), sm.end(), C(0));
      for (int64_t d = 0; d < n; ++d)
        for (int64_t i = 0; i < inner; ++i) {
          C v = static_cast<C>(xo[d * inner + i]);
          mx[i] = (v > mx[i] || std::isnan(v)) ? v : mx[i];
        }
      for (int64_t i = 0; i < inner; ++i)
        if (std::isinf(mx[i]) && mx[i] < 0) mx[i] = 0;
      for (int64_t d = 0; d < n; ++d) {
        C* t = kSame && !Log ? reinterpret_cast<C*>(yo + d * inner) : buf.data();
        for (int64_t i = 0; i < inner; ++i) t[i] = static_cast<C>(xo[d * inner + i]) - mx[i];
        nnvec::vexp_sub(t, inner, C(0));
        for (int64_t i = 0; i < inner; ++i) sm[i] += t[i];
      }
      if constexpr (Log) {
        for (int64_t i = 0; i < inner; ++i) sm[i] = mx[i] + std::log(sm[i]);
        for (int64_t d = 0; d < n; ++d)
          for (int64_t i = 0; i < inner; ++i) yo[d * inner + i] = static_cast<T>(static_cast<C>(xo[d * inner + i]) - sm[i]);
      } else {
        for (int64_t i = 0; i < inner; ++i) sm[i] = C(1) / sm[i];
        for (int64_t d = 0; d < n; ++d) {
          if constexpr (kSame) {
            C* t = reinterpret_cast<C*>(yo + d * inner);
            for (int64_t i = 0; i < inner; ++i) t[i] *= sm[i];
          } else {
            for (int64_t i = 0; i < inner; ++i) buf[i] = static_cast<C>(xo[d * inner + i]) - mx[i];
            nnvec::vexp_sub(buf.data(), inner, C(0));
            for (int64_t i = 0; i < inner; ++i) yo[d * inner + i] = static_cast<T>(buf[i] * sm[i]);
          }
        }
      }
    }
  });
}

template <bool Log>
void softmax_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor x = in[0].contiguous_data();
  int64_t dim = x.ndim() == 0 ? 0 : wrap_dim(a.i("dim"), x.ndim(), Log ? "log_softmax" : "softmax");
  int64_t outer, n, inner;
  split_dim(x.shape(), dim, outer, n, inner);
  if (x.numel() == 0) return;
  LUCID_DISPATCH_FLOATING(x.dtype(), Log ? "log_softmax" : "softmax", [&] {
    softmax_rows<scalar_t, Log>(x.data<scalar_t>(), out[0].data<scalar_t>(), outer, n, inner);
  });
}

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
  d.cpu_kernel = softmax_kernel<false>;
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
  d.cpu_kernel = softmax_kernel<true>;
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
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    double p = a.f("p");
    const Tensor &x = in[0], &m = in[1], &o = out[0];
    LUCID_DISPATCH_FLOATING(x.dtype(), "dropout", [&] {
      using C = compute_t<scalar_t>;
      const C scale = p >= 1.0 ? C(0) : static_cast<C>(1.0 / (1.0 - p));
      cpu::StridedIter it({&o, &x, &m});
      bool bool_mask = m.dtype() == DType::Bool;
      it.for_each([&](char** ptr, const int64_t* s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          C xv = static_cast<C>(*reinterpret_cast<const scalar_t*>(ptr[1] + i * s[1]));
          C mv = bool_mask ? C(*reinterpret_cast<const bool*>(ptr[2] + i * s[2]))
                           : static_cast<C>(*reinterpret_cast<const scalar_t*>(ptr[2] + i * s[2]));
          *reinterpret_cast<scalar_t*>(ptr[0] + i * s[0]) = static_cast<scalar_t>(xv * mv * scale);
        }
      });
    });
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
