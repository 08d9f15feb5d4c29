// The CUDA kernel of Copy (cast, clone, contiguous, copy_) and of every copy between devices:
// dispatch's copy_values and the transfers (`.to(device)`) run the Copy kernel of the non-CPU
// side, so this one handles every direction. src is broadcast to dst's shape and converted to
// dst's dtype (the CPU kernel's rules, cuda_dtype.cuh's convert); either side may be strided.
//   - device to device, one device: copy_on_device (one kernel, or cudaMemcpyAsync when both are
//     contiguous of one dtype);
//   - host to device: the host side made contiguous in dst's dtype first (the CPU Copy kernel, on
//     the distinct elements only: a broadcast source is copied unexpanded), one cudaMemcpyAsync,
//     then a device-side broadcast/strided copy when dst is not that buffer; a single element
//     is a fill with its value (no transfer, nothing to wait for);
//   - device to host: the device side made contiguous in dst's dtype first, one cudaMemcpyAsync,
//     then the stream is synchronised (the host reads the result), then a host-side strided
//     copy when dst is not that buffer;
//   - between two devices: cudaMemcpyPeerAsync on dst's stream, ordered after src's stream by an
//     event and before src's later work by another (so a freed source buffer is not reused
//     early).
// Host-to-device copies synchronise the stream as well, as torch's blocking copies do, so the
// host buffer may be freed or changed as soon as this returns. With the attribute non_blocking, a
// copy whose host side is the caller's own pinned buffer (pinned_memory.h) returns without
// waiting, as torch's: the host must not read (device to host) or change (host to device) it
// before synchronising; the buffer is recorded as in use by the stream (record_host_use), so
// freeing it is safe. A copy through a host temporary (a cast or strided layout on the host
// side) or from pageable memory waits in every case.
#include <cstring>

#include "lucid/backends/cuda/deferred_check.h"
#include "lucid/backends/cuda/device_copy.h"
#include "lucid/backends/cuda/pinned_memory.h"
#include "lucid/backends/cuda/stream.h"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

namespace {

// The CPU backend's Copy kernel (host-side conversions and strided copies), through the registry.
void host_copy(const Tensor& dst, const Tensor& src) {
  KernelFn cpu = op_def(OpId::Copy).kernel(DeviceType::CPU);
  LUCID_CHECK(cpu, Error, "copy: no CPU Copy kernel");
  cpu({src}, {dst}, {{"dtype", dst.dtype()}});
}

// src as one contiguous buffer in dtype dt on its own device: src itself when it already is one,
// else a copy of its distinct elements (shape unexpanded(src)).
Tensor dense_source(const Tensor& src, DType dt) {
  Tensor s = unexpanded(src);
  if (s.is_contiguous() && s.dtype() == dt) return s;
  Tensor d = Tensor::empty(s.shape(), dt, s.device());
  if (s.device().is_cpu()) host_copy(d, s);
  else copy_on_device(d, s);
  return d;
}

// The bits of a host element (CPU tensor, one element) in its dtype.
uint64_t element_bits(const Tensor& t) {
  uint64_t bits = 0;
  std::memcpy(&bits, t.data_ptr(), itemsize(t.dtype()));
  return bits;
}

// Whether an asynchronous copy may return before the host buffer `h` has been read or written:
// non_blocking, and h is pinned memory (then recorded as used by the copy's stream).
bool async_host_use(bool non_blocking, const Tensor& h, int device, cudaStream_t stream) {
  if (!non_blocking || !is_pinned(h.data_ptr())) return false;
  record_host_use(h.data_ptr(), StreamRef{device, reinterpret_cast<uintptr_t>(stream)});
  return true;
}

void host_to_device(const Tensor& dst, const Tensor& src, bool non_blocking) {
  const Tensor s = dense_source(src, dst.dtype());
  if (s.numel() == 1) return fill_bits(dst, element_bits(s));
  const bool direct = dst.is_contiguous() && s.numel() == dst.numel();
  const Tensor d = direct ? dst : Tensor::empty(s.shape(), dst.dtype(), dst.device());
  DeviceGuard g(dst.device());
  cudaStream_t stream = current_stream(dst.device());
  check_cuda(cudaMemcpyAsync(d.data_ptr(), s.data_ptr(), s.numel() * itemsize(s.dtype()), cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync (host to device)");
  if (!direct) copy_on_device(dst, d);
  if (async_host_use(non_blocking, s, dst.device().index, stream)) return;
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (host to device copy)");
}

void device_to_host(const Tensor& dst, const Tensor& src, bool non_blocking) {
  const Tensor s = dense_source(src, dst.dtype());
  const bool direct = dst.is_contiguous() && s.numel() == dst.numel();
  const Tensor h = direct ? dst : Tensor::empty(s.shape(), dst.dtype());
  DeviceGuard g(src.device());
  cudaStream_t stream = current_stream(src.device());
  check_cuda(cudaMemcpyAsync(h.data_ptr(), s.data_ptr(), s.numel() * itemsize(s.dtype()), cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync (device to host)");
  if (direct && async_host_use(non_blocking, h, src.device().index, stream)) return;
  // The host reads the result.
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (device to host copy)");
  raise_deferred_errors(false);  // a result read back never hides a failed check before it
  if (!direct) host_copy(dst, h);
}

// An event recorded on `stream` of device `index` that `waiter` waits for.
void order_after(int index, cudaStream_t stream, cudaStream_t waiter) {
  DeviceGuard g(index);
  cudaEvent_t e;
  check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  cudaError_t st = cudaEventRecord(e, stream);
  if (st == cudaSuccess) st = cudaStreamWaitEvent(waiter, e, 0);
  cudaEventDestroy(e);  // released once it has completed
  check_cuda(st, "cudaEventRecord / cudaStreamWaitEvent (copy between devices)");
}

void peer_to_peer(const Tensor& dst, const Tensor& src) {
  const Tensor s = dense_source(src, dst.dtype());
  const bool direct = dst.is_contiguous() && s.numel() == dst.numel();
  const Tensor d = direct ? dst : Tensor::empty(s.shape(), dst.dtype(), dst.device());
  const int si = src.device().index, di = dst.device().index;
  cudaStream_t src_stream = current_stream(src.device()), dst_stream = current_stream(dst.device());
  order_after(si, src_stream, dst_stream);  // s is ready
  {
    DeviceGuard g(di);
    check_cuda(cudaMemcpyPeerAsync(d.data_ptr(), di, s.data_ptr(), si, s.numel() * itemsize(s.dtype()), dst_stream),
               "cudaMemcpyPeerAsync");
  }
  order_after(di, dst_stream, src_stream);  // s is not reused on src's stream before the copy read it
  if (!direct) copy_on_device(dst, d);
}

void copy_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor &src = in[0], &dst = out[0];
  if (dst.numel() == 0) return;
  const bool src_host = src.device().is_cpu(), dst_host = dst.device().is_cpu();
  if (src_host && dst_host) return host_copy(dst, src);
  const bool non_blocking = a.b("non_blocking", false);
  if (src_host) return host_to_device(dst, src, non_blocking);
  if (dst_host) return device_to_host(dst, src, non_blocking);
  if (src.device() == dst.device()) return copy_on_device(dst, src);
  peer_to_peer(dst, src);
}

}  // namespace

LUCID_REGISTER_KERNEL(Copy, CUDA, copy_kernel);

}  // namespace lucid::cuda
