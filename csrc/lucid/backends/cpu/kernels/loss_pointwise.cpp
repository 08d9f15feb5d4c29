// CPU kernels of the pointwise losses (op records in ops/loss_pointwise.cpp): one templated loop
// computes every loss kind (ops/nn_layout.h; the per-element math is ops/pointwise_loss_math.h,
// shared with the CUDA kernel) and one its gradients (first order, or the constant
// second derivative of the difference losses for their double backward). Per element in double,
// reduced ('none' | 'mean' | 'sum') with fixed chunking, so results do not depend on the thread
// count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "lucid/backends/cpu/kernels/nn_operands.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/nn_layout.h"
#include "lucid/ops/op_def.h"
#include "lucid/ops/pointwise_loss_math.h"

namespace lucid::cpu {

namespace {

using nnutil::kBce;
using nnutil::kBceLogits;
using nnutil::kHuber;
using nnutil::kKlDiv;
using nnutil::kL1;
using nnutil::kMse;
using nnutil::kSmoothL1;
using nnutil::elem_grad;
using nnutil::elem_grad2;
using nnutil::elem_loss;
using nnutil::pointwise_loss_name;

constexpr int64_t kChunk = 16384;

// Contiguous operands in x's dtype; optional ones undefined.
struct Operands {
  Tensor x, t, w, pw;
};
Operands load(const TensorList& in, size_t first) {
  DType dt = in[first].dtype();
  Operands o;
  o.x = nnutil::contig_as(in[first], dt);
  o.t = nnutil::contig_as(in[first + 1], dt);
  if (in.size() > first + 2 && in[first + 2].defined()) o.w = nnutil::contig_as(in[first + 2], dt);
  if (in.size() > first + 3 && in[first + 3].defined()) o.pw = nnutil::contig_as(in[first + 3], dt);
  return o;
}

template <class T>
void loss_forward(int64_t kind, const Operands& o, const Tensor& out, int64_t red, double beta) {
  using C = compute_t<T>;
  int64_t n = o.x.numel();
  const T *x = o.x.data<T>(), *t = o.t.data<T>();
  const T* w = o.w.defined() ? o.w.data<T>() : nullptr;
  const T* pw = o.pw.defined() ? o.pw.data<T>() : nullptr;
  auto at = [&](int64_t i) {
    return elem_loss(kind, static_cast<C>(x[i]), static_cast<C>(t[i]), w ? static_cast<double>(static_cast<C>(w[i])) : 1.0,
                     pw ? static_cast<double>(static_cast<C>(pw[i])) : 1.0, beta);
  };
  if (red == nnutil::kNone) {
    T* y = out.data<T>();
    parallel_for(0, n, kParallelGrain / 8, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = static_cast<T>(static_cast<C>(at(i)));
    });
    return;
  }
  int64_t nch = (n + kChunk - 1) / kChunk;
  std::vector<double> part(nch, 0.0);
  parallel_for(0, nch, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      double s = 0;
      for (int64_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i) s += at(i);
      part[c] = s;
    }
  });
  double s = 0;
  for (double v : part) s += v;
  if (red == nnutil::kMean) s /= static_cast<double>(n);  // 0/0 -> nan like PyTorch
  *out.data<T>() = static_cast<T>(static_cast<C>(s));
}

// g: grad of the loss output (full shape for 'none', scalar otherwise). gt may be undefined.
template <class T>
void loss_backward(int64_t kind, const Tensor& g, const Operands& o, const Tensor& gx, const Tensor& gt, int64_t red, double beta,
                   int64_t order) {
  using C = compute_t<T>;
  int64_t n = o.x.numel();
  const T *x = o.x.data<T>(), *t = o.t.data<T>(), *gp = g.data<T>();
  const T* w = o.w.defined() ? o.w.data<T>() : nullptr;
  const T* pw = o.pw.defined() ? o.pw.data<T>() : nullptr;
  double scale = red == nnutil::kMean ? 1.0 / static_cast<double>(n) : 1.0;
  T* gxp = gx.data<T>();
  T* gtp = gt.defined() ? gt.data<T>() : nullptr;
  parallel_for(0, n, kParallelGrain / 8, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      double gv = static_cast<double>(static_cast<C>(red == nnutil::kNone ? gp[i] : gp[0])) * scale;
      double dx, dt;
      if (order == 2) {
        dx = elem_grad2(kind, static_cast<C>(x[i]), static_cast<C>(t[i]), beta);
        dt = dx;
      } else {
        elem_grad(kind, static_cast<C>(x[i]), static_cast<C>(t[i]), w ? static_cast<double>(static_cast<C>(w[i])) : 1.0,
                  pw ? static_cast<double>(static_cast<C>(pw[i])) : 1.0, beta, dx, dt);
      }
      gxp[i] = static_cast<T>(static_cast<C>(gv * dx));
      if (gtp) gtp[i] = static_cast<T>(static_cast<C>(gv * dt));
    }
  });
}

template <int64_t Kind>
void loss_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Operands o = load(in, 0);
  if constexpr (Kind == kBce) {
    LUCID_DISPATCH_FLOATING(o.x.dtype(), "binary_cross_entropy", [&] {
      const scalar_t* x = o.x.data<scalar_t>();
      for (int64_t i = 0; i < o.x.numel(); ++i) {
        float v = static_cast<float>(x[i]);
        LUCID_CHECK(v >= 0.f && v <= 1.f, ValueError,
                    "binary_cross_entropy: all elements of input should be between 0 and 1, got ", v);
      }
    });
  }
  LUCID_DISPATCH_FLOATING(o.x.dtype(), pointwise_loss_name(Kind), [&] {
    loss_forward<scalar_t>(Kind, o, out[0], a.i("reduction"), a.f("beta", 1.0));
  });
}

void pointwise_loss_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Operands o = load(in, 1);
  Tensor g = nnutil::contig_as(in[0], o.x.dtype());
  int64_t kind = a.i("kind");
  LUCID_DISPATCH_FLOATING(o.x.dtype(), pointwise_loss_name(kind), [&] {
    loss_backward<scalar_t>(kind, g, o, out[0], out.size() > 1 ? out[1] : Tensor(), a.i("reduction"), a.f("beta", 1.0),
                              a.i("order", 1));
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(MseLoss, CPU, loss_kernel<kMse>);
LUCID_REGISTER_KERNEL(L1Loss, CPU, loss_kernel<kL1>);
LUCID_REGISTER_KERNEL(SmoothL1Loss, CPU, loss_kernel<kSmoothL1>);
LUCID_REGISTER_KERNEL(HuberLoss, CPU, loss_kernel<kHuber>);
LUCID_REGISTER_KERNEL(BinaryCrossEntropy, CPU, loss_kernel<kBce>);
LUCID_REGISTER_KERNEL(BinaryCrossEntropyWithLogits, CPU, loss_kernel<kBceLogits>);
LUCID_REGISTER_KERNEL(KlDiv, CPU, loss_kernel<kKlDiv>);
LUCID_REGISTER_KERNEL(PointwiseLossBackward, CPU, pointwise_loss_backward_kernel);
LUCID_REGISTER_KERNEL(BinaryCrossEntropyBackward, CPU, pointwise_loss_backward_kernel);
LUCID_REGISTER_KERNEL(BceWithLogitsBackward, CPU, pointwise_loss_backward_kernel);
LUCID_REGISTER_KERNEL(KlDivBackward, CPU, pointwise_loss_backward_kernel);

}  // namespace lucid::cpu
