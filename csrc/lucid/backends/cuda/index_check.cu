// BadIndexFlag and checked_index (index_check.cuh): the device-side index validation shared by
// the CUDA gather/scatter, indexing and embedding kernels.
#include "lucid/backends/cuda/deferred_check.h"
#include "lucid/backends/cuda/index_check.cuh"
#include "lucid/backends/cuda/launch_geometry.cuh"
#include "lucid/backends/cuda/offset_calculator.cuh"
#include "lucid/backends/cuda/stream.h"

namespace lucid::cuda {

BadIndexFlag::BadIndexFlag(const Device& dev) : dev_(dev), buf_(Tensor::empty({3}, DType::Int64, dev)) {
  check_cuda(cudaMemsetAsync(buf_.data_ptr(), 0, sizeof(BadIndexRecord), current_stream(dev)), "cudaMemsetAsync(index check)");
}

bool BadIndexFlag::fetch(int64_t& value, int64_t& where) const {
  BadIndexRecord h{};
  cudaStream_t s = current_stream(dev_);
  check_cuda(cudaMemcpyAsync(&h, buf_.data_ptr(), sizeof h, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync(index check)");
  // The one synchronisation of a checked op: the host needs the record to raise.
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize(index check)");
  raise_deferred_errors(false);
  value = h.value;
  where = h.where;
  return h.set != 0;
}

namespace {

template <class Index>
__global__ void check_index_kernel(const char* src, DType dt, int isz, OffsetCalculator<1, Index> ix, Index n,
                                   int64_t size, bool allow_negative, int64_t* out, BadIndexRecord* bad) {
  LUCID_GRID_LOOP(Index, i, n) {
    Index off[1];
    ix.get(i, off);
    int64_t v = load_index(src + static_cast<int64_t>(off[0]) * isz, dt);
    bool ok = (v >= 0 || (allow_negative && v >= -size)) && v < size;
    if (!ok) {
      record_bad_index(bad, v, 0);
      continue;
    }
    out[i] = v < 0 ? v + size : v;
  }
}

}  // namespace

bool checked_index(const Tensor& index, int64_t size, bool allow_negative, Tensor& out, int64_t& bad) {
  const Device dev = index.device();
  DeviceGuard g(dev);
  out = Tensor::empty(index.shape(), DType::Int64, dev);
  const int64_t n = index.numel();
  if (n == 0) return true;
  BadIndexFlag flag(dev);
  const char* src = static_cast<const char*>(index.data_ptr());
  const int isz = static_cast<int>(itemsize(index.dtype()));
  cudaStream_t s = current_stream(dev);
  with_offset_calculator<1>(strided_geometry<1>(index.shape(), {&index.strides()}, "index check"), [&](auto ix, auto ni) {
    check_index_kernel<<<grid_for(n), kThreads, 0, s>>>(src, index.dtype(), isz, ix, ni, size, allow_negative,
                                                         out.data<int64_t>(), flag.get());
  });
  check_launch("check_index_kernel");
  int64_t where = 0;
  return !flag.fetch(bad, where);
}

}  // namespace lucid::cuda
