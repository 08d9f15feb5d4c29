// The CUDA backend's same-device copies and fills (device_copy.h): a same-dtype copy is
// strided_move.h's strided_copy (item-size or 16-byte words over the offset calculator); a
// converting copy adds cast_contiguous (device_cast.cu) between strided copies only where an
// operand is not contiguous.
#include "lucid/backends/cuda/device_copy.h"
#include "lucid/backends/cuda/elementwise_launch.cuh"
#include "lucid/backends/cuda/strided_move.h"

namespace lucid::cuda {

namespace {

template <class U> struct Constant {
  U value;
  __device__ U operator()() const { return value; }
};

// dst = src (broadcast), one dtype, any strides: a cudaMemcpyAsync when both are dense with as
// many elements (whatever their shapes: a sum_to over size-1 dims copies (1, n) into (n)), else
// strided_move.h's copy (16-byte words where the layout allows).
void copy_same_dtype(const Tensor& dst, const Tensor& src) {
  if (dst.is_contiguous() && src.is_contiguous() && dst.numel() == src.numel()) {
    DeviceGuard g(dst.device());
    check_cuda(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), dst.numel() * itemsize(dst.dtype()), cudaMemcpyDeviceToDevice,
                               current_stream(dst.device())),
               "cudaMemcpyAsync (device to device)");
    return;
  }
  strided_copy(dst, src);
}

}  // namespace

Tensor unexpanded(const Tensor& t) {
  Shape shape = t.shape();
  bool any = false;
  for (size_t d = 0; d < shape.size(); ++d)
    if (t.strides()[d] == 0 && shape[d] > 1) shape[d] = 1, any = true;
  return any ? Tensor::make_view(t, shape, t.strides(), t.offset()) : t;
}

void copy_on_device(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  LUCID_CHECK(dst.device() == src.device() && !dst.device().is_cpu(), Error, "copy_on_device: expected tensors on one CUDA device, got ",
              dst.device().str(), " and ", src.device().str());
  if (dst.dtype() == src.dtype()) return copy_same_dtype(dst, src);
  Tensor s = unexpanded(src);
  if (!s.is_contiguous()) {
    Tensor c = Tensor::empty(s.shape(), s.dtype(), s.device());
    copy_same_dtype(c, s);
    s = c;
  }
  const bool direct = dst.is_contiguous() && s.numel() == dst.numel();
  Tensor d = direct ? dst : Tensor::empty(s.shape(), dst.dtype(), dst.device());
  cast_contiguous(d, s);
  if (!direct) copy_same_dtype(dst, d);
}

void fill_bits(const Tensor& dst, uint64_t bits) {
  by_width(dst.dtype(), [&](auto tag) {
    using U = decltype(tag);
    gpu_kernel<U>("fill", dst, {}, Constant<U>{static_cast<U>(bits)});
  });
}

Tensor cast_on_device(const Tensor& x, DType dt) {
  if (x.dtype() == dt) return x;
  Tensor t = Tensor::empty(x.shape(), dt, x.device());
  copy_on_device(t, x);
  return t;
}

}  // namespace lucid::cuda
