// CUDA kernels of the pointwise losses (op records in ops/loss_pointwise.cpp): MseLoss, L1Loss,
// SmoothL1Loss, HuberLoss, BinaryCrossEntropy, BinaryCrossEntropyWithLogits, KlDiv and their
// backward ops (PointwiseLossBackward, BinaryCrossEntropyBackward, BceWithLogitsBackward,
// KlDivBackward). Per element in double with the CPU kernel's math (ops/pointwise_loss_math.h);
// 'mean' / 'sum' add the element losses in double with a deterministic two-pass sum
// (nn_device.cuh), so a result differs from the CPU's only by the order of that double sum.
// binary_cross_entropy checks its input range on the device and raises the CPU's error (reading
// the first bad value back, which synchronises).
#include "lucid/backends/cuda/kernels/nn_device.cuh"
#include "lucid/ops/op_def.h"
#include "lucid/ops/pointwise_loss_math.h"

namespace lucid::cuda {

namespace {

using nnutil::kBce;

// Contiguous operands in x's dtype; optional ones null.
template <class D>
struct LossArgs {
  const D *x, *t, *w, *pw;
  int64_t kind;
  double beta;
  __device__ double loss(int64_t i) const {
    return nnutil::elem_loss(kind, to_compute(x[i]), to_compute(t[i]), w ? static_cast<double>(to_compute(w[i])) : 1.0,
                             pw ? static_cast<double>(to_compute(pw[i])) : 1.0, beta);
  }
};

template <class D>
struct LossAt {
  LossArgs<D> a;
  __device__ double operator()(int64_t i) const { return a.loss(i); }
};

template <class D>
__global__ void loss_none_kernel(LossArgs<D> a, D* y, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) y[i] = from_compute<D>(a.loss(i));
}

template <class D>
__global__ void store_reduced_kernel(D* y, const double* sum, double div) {
  y[0] = from_compute<D>(div == 1.0 ? sum[0] : sum[0] / div);
}

// g: the loss output's gradient (n values for 'none', one otherwise); gt may be null.
template <class D>
__global__ void loss_backward_kernel(LossArgs<D> a, const D* g, bool per_elem, double scale, int64_t order, D* gx, D* gt,
                                     int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    double gv = static_cast<double>(to_compute(per_elem ? g[i] : g[0])) * scale;
    double dx, dt;
    double xv = to_compute(a.x[i]), tv = to_compute(a.t[i]);
    if (order == 2) {
      dx = nnutil::elem_grad2(a.kind, xv, tv, a.beta);
      dt = dx;
    } else {
      nnutil::elem_grad(a.kind, xv, tv, a.w ? static_cast<double>(to_compute(a.w[i])) : 1.0,
                        a.pw ? static_cast<double>(to_compute(a.pw[i])) : 1.0, a.beta, dx, dt);
    }
    gx[i] = from_compute<D>(gv * dx);
    if (gt) gt[i] = from_compute<D>(gv * dt);
  }
}

template <class D>
__global__ void check_unit_range_kernel(const D* x, int64_t n, int64_t* bad) {
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    float v = static_cast<float>(to_compute(x[i]));
    if (!(v >= 0.f && v <= 1.f)) record_bad_index(bad, i);
  }
}

// Contiguous operands (x, t, w, pw from in[first]) in x's dtype; optional ones undefined.
struct Operands {
  Tensor x, t, w, pw;
};
Operands load(const TensorList& in, size_t first) {
  DType dt = in[first].dtype();
  Operands o;
  o.x = contig_as(in[first], dt);
  o.t = contig_as(in[first + 1], dt);
  if (in.size() > first + 2 && in[first + 2].defined()) o.w = contig_as(in[first + 2], dt);
  if (in.size() > first + 3 && in[first + 3].defined()) o.pw = contig_as(in[first + 3], dt);
  return o;
}

template <class T>
LossArgs<device_t<T>> args_of(const Operands& o, int64_t kind, double beta) {
  using D = device_t<T>;
  return {o.x.data<D>(), o.t.data<D>(), o.w.defined() ? o.w.data<D>() : nullptr, o.pw.defined() ? o.pw.data<D>() : nullptr,
          kind, beta};
}

template <int64_t Kind>
void loss(const TensorList& in, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  const Device dev = out[0].device();
  cudaStream_t s = current_stream(dev);
  Operands o = load(in, 0);
  int64_t n = o.x.numel(), red = a.i("reduction");
  LUCID_DISPATCH_FLOATING(o.x.dtype(), nnutil::pointwise_loss_name(Kind), [&] {
    using D = device_t<scalar_t>;
    if constexpr (Kind == kBce) {
      if (n > 0) {
        Tensor bad = bad_index_slot(dev);
        check_unit_range_kernel<<<grid_for(n), kThreads, 0, s>>>(o.x.data<D>(), n, bad.data<int64_t>());
        check_launch("binary_cross_entropy (check input)");
        int64_t i = first_bad_index(bad);
        LUCID_CHECK(i < 0, ValueError, "binary_cross_entropy: all elements of input should be between 0 and 1, got ",
                    i < 0 ? 0.f : static_cast<float>(read_back<scalar_t>(o.x, i)));
      }
    }
    LossArgs<D> la = args_of<scalar_t>(o, Kind, a.f("beta", 1.0));
    if (red == nnutil::kNone) {
      if (n == 0) return;
      loss_none_kernel<<<grid_for(n), kThreads, 0, s>>>(la, out[0].data<D>(), n);
      check_launch(nnutil::pointwise_loss_name(Kind));
      return;
    }
    Tensor sum = device_sum(dev, LossAt<D>{la}, n);
    // 'mean' of nothing is 0/0 = nan, like PyTorch.
    store_reduced_kernel<<<1, 1, 0, s>>>(out[0].data<D>(), sum.data<double>(), red == nnutil::kMean ? static_cast<double>(n) : 1.0);
    check_launch(nnutil::pointwise_loss_name(Kind));
  });
}

void pointwise_loss_backward(const TensorList& in, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  cudaStream_t s = current_stream(out[0].device());
  Operands o = load(in, 1);
  Tensor gr = contig_as(in[0], o.x.dtype());
  int64_t kind = a.i("kind"), red = a.i("reduction"), n = o.x.numel();
  if (n == 0) return;
  double scale = red == nnutil::kMean ? 1.0 / static_cast<double>(n) : 1.0;
  LUCID_DISPATCH_FLOATING(o.x.dtype(), nnutil::pointwise_loss_name(kind), [&] {
    using D = device_t<scalar_t>;
    D* gt = out.size() > 1 && out[1].defined() ? out[1].data<D>() : nullptr;
    loss_backward_kernel<<<grid_for(n), kThreads, 0, s>>>(args_of<scalar_t>(o, kind, a.f("beta", 1.0)), gr.data<D>(),
                                                           red == nnutil::kNone, scale, a.i("order", 1), out[0].data<D>(), gt, n);
    check_launch(nnutil::pointwise_loss_name(kind));
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(MseLoss, CUDA, loss<nnutil::kMse>);
LUCID_REGISTER_KERNEL(L1Loss, CUDA, loss<nnutil::kL1>);
LUCID_REGISTER_KERNEL(SmoothL1Loss, CUDA, loss<nnutil::kSmoothL1>);
LUCID_REGISTER_KERNEL(HuberLoss, CUDA, loss<nnutil::kHuber>);
LUCID_REGISTER_KERNEL(BinaryCrossEntropy, CUDA, loss<nnutil::kBce>);
LUCID_REGISTER_KERNEL(BinaryCrossEntropyWithLogits, CUDA, loss<nnutil::kBceLogits>);
LUCID_REGISTER_KERNEL(KlDiv, CUDA, loss<nnutil::kKlDiv>);
LUCID_REGISTER_KERNEL(PointwiseLossBackward, CUDA, pointwise_loss_backward);
LUCID_REGISTER_KERNEL(BinaryCrossEntropyBackward, CUDA, pointwise_loss_backward);
LUCID_REGISTER_KERNEL(BceWithLogitsBackward, CUDA, pointwise_loss_backward);
LUCID_REGISTER_KERNEL(KlDivBackward, CUDA, pointwise_loss_backward);

}  // namespace lucid::cuda
