// CUDA kernels of Embedding (row gather, the padding row zeroed on request) and EmbeddingBackward
// (records in ops/nn_embed.cpp; CPU kernels in backends/cpu/kernels/embedding.cpp). Indices are
// checked on the device first (index_check.cuh; one stream synchronisation) and a bad one raises the
// CPU's IndexError.
//
// The backward is deterministic and gives the CPU's bits: the (index, position) pairs are sorted by
// index with CUB's stable radix sort, runs of equal indices found with CUB's run-length encode, and
// each (run, column) sums its gradient rows in position order in the compute type (float for
// 16-bit floats), exactly the CPU's order, then rounds once. Rows no index names stay zero, and
// padding_idx's row is never written. A run of many repeats of one index is summed by one thread
// per column (sequential in the run's length).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include "lucid/backends/cuda/device_scalar.cuh"
#include "lucid/backends/cuda/index_check.cuh"
#include "lucid/backends/cuda/stream.h"
#include "lucid/backends/cuda/strided_index.cuh"
#include "lucid/backends/cuda/strided_move.h"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

namespace {

Tensor embedding_indices(const Tensor& idx, int64_t num, const char* op) {
  Tensor ix;
  int64_t bad = 0;
  LUCID_CHECK(checked_index(idx, num, false, ix, bad), IndexError, op, ": index ", bad, " is out of range for ", num,
              " embeddings (valid indices are 0..", num - 1, ")");
  return ix;
}

template <class U>
__global__ void embedding_kernel(U* dst, const U* w, const int64_t* idx, int64_t n, int64_t D, bool zero_pad, int64_t pad) {
  LUCID_GRID_LOOP(int64_t, e, n) {
    int64_t i = e / D, j = e - i * D;
    int64_t k = idx[i];
    dst[e] = zero_pad && k == pad ? U(0) : w[k * D + j];
  }
}

void embedding_fn(const TensorList& in, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  Tensor w = contiguous(in[0]);
  int64_t V = w.shape()[0], D = w.shape()[1];
  Tensor idx = embedding_indices(in[1], V, "embedding");
  int64_t pad = a.i("padding_idx");
  bool zero_pad = a.b("zero_padding", false);
  const int64_t n = idx.numel() * D;
  if (n == 0) return;
  cudaStream_t s = current_stream(out[0].device());
  auto run = [&](auto tag) {
    using U = decltype(tag);
    embedding_kernel<<<launch_grid(n), kThreads, 0, s>>>(static_cast<U*>(out[0].data_ptr()), static_cast<const U*>(w.data_ptr()),
                                                          idx.data<int64_t>(), n, D, zero_pad, pad);
  };
  switch (itemsize(w.dtype())) {
    case 1: run(uint8_t{}); break;
    case 2: run(uint16_t{}); break;
    case 4: run(uint32_t{}); break;
    default: run(uint64_t{}); break;
  }
  check_launch("embedding_kernel");
}

__global__ void iota_kernel(int64_t* p, int64_t n) {
  LUCID_GRID_LOOP(int64_t, i, n) p[i] = i;
}

// Thread (r, j) sums column j of the gradient rows of run r (positions pos[start[r] .. +count[r]),
// in order) into row key[r] of the output; runs past *num_runs and padding_idx's run do nothing.
template <class T>
__global__ void embedding_backward_kernel(T* out, const T* g, const int64_t* key, const int64_t* pos, const int64_t* start,
                                          const int64_t* count, const int64_t* num_runs, int64_t n, int64_t D, int64_t pad) {
  const int64_t runs = *num_runs;
  LUCID_GRID_LOOP(int64_t, e, n) {
    int64_t r = e / D, j = e - r * D;
    if (r >= runs) continue;
    int64_t k = key[r];
    if (k == pad) continue;
    dcompute_t<T> acc = 0;
    for (int64_t q = start[r], end = start[r] + count[r]; q < end; ++q) acc += to_compute(g[pos[q] * D + j]);
    out[k * D + j] = from_compute<T>(acc);
  }
}

// Scratch bytes on dev (freed at return, safe: the allocator is ordered on the stream).
Tensor scratch(size_t bytes, const Device& dev) { return Tensor::empty({static_cast<int64_t>(std::max<size_t>(bytes, 1))}, DType::UInt8, dev); }

void embedding_backward_fn(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Device dev = out[0].device();
  DeviceGuard dg(dev);
  int64_t V = a.i("num_weights"), pad = a.i("padding_idx");
  Tensor gr = contiguous(in[0]);
  Tensor idx = embedding_indices(in[1], V, "embedding_backward");
  int64_t D = gr.shape().back(), n = idx.numel();
  zero(out[0]);
  if (n == 0 || D == 0) return;
  cudaStream_t s = current_stream(dev);
  Tensor pos_in = Tensor::empty({n}, DType::Int64, dev), keys = Tensor::empty({n}, DType::Int64, dev),
         pos = Tensor::empty({n}, DType::Int64, dev);
  iota_kernel<<<launch_grid(n), kThreads, 0, s>>>(pos_in.data<int64_t>(), n);
  check_launch("iota_kernel");
  int end_bit = 1;  // indices are in [0, V): sort only their significant bits
  while (end_bit < 63 && (int64_t{1} << end_bit) < V) ++end_bit;
  const int num = static_cast<int>(n);
  LUCID_CHECK(n <= INT32_MAX, ValueError, "embedding_backward: more than 2^31 - 1 indices on CUDA are not supported");
  size_t bytes = 0;
  check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, bytes, idx.data<int64_t>(), keys.data<int64_t>(), pos_in.data<int64_t>(),
                                             pos.data<int64_t>(), num, 0, end_bit, s),
             "cub::DeviceRadixSort::SortPairs");
  {
    Tensor tmp = scratch(bytes, dev);
    check_cuda(cub::DeviceRadixSort::SortPairs(tmp.data_ptr(), bytes, idx.data<int64_t>(), keys.data<int64_t>(),
                                               pos_in.data<int64_t>(), pos.data<int64_t>(), num, 0, end_bit, s),
               "cub::DeviceRadixSort::SortPairs");
  }
  Tensor uniq = Tensor::empty({n}, DType::Int64, dev), counts = Tensor::empty({n}, DType::Int64, dev),
         starts = Tensor::empty({n}, DType::Int64, dev), nruns = Tensor::empty({1}, DType::Int64, dev);
  bytes = 0;
  check_cuda(cub::DeviceRunLengthEncode::Encode(nullptr, bytes, keys.data<int64_t>(), uniq.data<int64_t>(), counts.data<int64_t>(),
                                                nruns.data<int64_t>(), num, s),
             "cub::DeviceRunLengthEncode::Encode");
  {
    Tensor tmp = scratch(bytes, dev);
    check_cuda(cub::DeviceRunLengthEncode::Encode(tmp.data_ptr(), bytes, keys.data<int64_t>(), uniq.data<int64_t>(),
                                                  counts.data<int64_t>(), nruns.data<int64_t>(), num, s),
               "cub::DeviceRunLengthEncode::Encode");
  }
  // Runs past num_runs hold garbage counts; their scan entries are never read.
  bytes = 0;
  check_cuda(cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts.data<int64_t>(), starts.data<int64_t>(), num, s),
             "cub::DeviceScan::ExclusiveSum");
  {
    Tensor tmp = scratch(bytes, dev);
    check_cuda(cub::DeviceScan::ExclusiveSum(tmp.data_ptr(), bytes, counts.data<int64_t>(), starts.data<int64_t>(), num, s),
               "cub::DeviceScan::ExclusiveSum");
  }
  const int64_t work = n * D;
  LUCID_DISPATCH_FLOATING(gr.dtype(), "embedding_backward", [&] {
    using T = DeviceT<scalar_t>;
    embedding_backward_kernel<<<launch_grid(work), kThreads, 0, s>>>(
        static_cast<T*>(out[0].data_ptr()), static_cast<const T*>(gr.data_ptr()), uniq.data<int64_t>(), pos.data<int64_t>(),
        starts.data<int64_t>(), counts.data<int64_t>(), nruns.data<int64_t>(), work, D, pad);
  });
  check_launch("embedding_backward_kernel");
}

}  // namespace

LUCID_REGISTER_KERNEL(Embedding, CUDA, embedding_fn);
LUCID_REGISTER_KERNEL(EmbeddingBackward, CUDA, embedding_backward_fn);

}  // namespace lucid::cuda
