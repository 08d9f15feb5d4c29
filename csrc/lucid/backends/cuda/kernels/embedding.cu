// CUDA kernels of Embedding (row gather, the padding row zeroed on request) and EmbeddingBackward
// (records in ops/nn_embed.cpp; CPU kernels in backends/cpu/kernels/embedding.cpp). Indices are
// checked on the device first (index_check.cuh; one stream synchronisation) and a bad one raises the
// CPU's IndexError.
//
// The backward is deterministic and gives the CPU's bits: keys index << 32 | position are sorted
// with CUB's radix sort (so by index, then position), and the first key of each run of one index
// sums, per column, the gradient rows of the run's positions in position order in the compute type
// (float for 16-bit floats), exactly the CPU's order, then rounds once. Rows no index names stay
// zero, and padding_idx's row is never written. A run of many repeats of one index is summed by one
// thread per column (sequential in the run's length). One CUB sort of keys only (no run-length
// encode or scan) keeps this file's compile time down.
#include <cub/device/device_radix_sort.cuh>

#include "lucid/backends/cuda/cuda_dtype.cuh"
#include "lucid/backends/cuda/launch_geometry.cuh"
#include "lucid/backends/cuda/index_check.cuh"
#include "lucid/backends/cuda/stream.h"
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
    embedding_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<U*>(out[0].data_ptr()), static_cast<const U*>(w.data_ptr()),
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

// key[i] = index << 32 | position: sorting these keys orders by index, then by position (stable).
__global__ void sort_key_kernel(uint64_t* key, const int64_t* idx, int64_t n) {
  LUCID_GRID_LOOP(int64_t, i, n) key[i] = (static_cast<uint64_t>(idx[i]) << 32) | static_cast<uint64_t>(i);
}

// Thread (q, j): when sorted key q starts a run of one index k (and k is not padding_idx), sums
// column j of the gradient rows of the run's positions, in position order, into row k.
template <class T>
__global__ void embedding_backward_kernel(T* out, const T* g, const uint64_t* key, int64_t n, int64_t D, int64_t pad) {
  LUCID_GRID_LOOP(int64_t, e, n * D) {
    int64_t q = e / D, j = e - q * D;
    const uint64_t k = key[q] >> 32;
    if ((q > 0 && (key[q - 1] >> 32) == k) || static_cast<int64_t>(k) == pad) continue;
    compute_t<T> acc = 0;
    for (int64_t r = q; r < n && (key[r] >> 32) == k; ++r) acc += to_compute(g[static_cast<int64_t>(key[r] & 0xffffffffu) * D + j]);
    out[static_cast<int64_t>(k) * D + j] = from_compute<T>(acc);
  }
}

void embedding_backward_fn(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Device dev = out[0].device();
  DeviceGuard dg(dev);
  int64_t V = a.i("num_weights"), pad = a.i("padding_idx");
  Tensor gr = contiguous(in[0]);
  Tensor idx = embedding_indices(in[1], V, "embedding_backward");
  int64_t D = gr.shape().back(), n = idx.numel();
  zero(out[0]);
  if (n == 0 || D == 0) return;
  LUCID_CHECK(n <= INT32_MAX && V <= INT32_MAX, ValueError,
              "embedding_backward: more than 2^31 - 1 indices or embeddings on CUDA are not supported");
  cudaStream_t s = current_stream(dev);
  Tensor keys_in = Tensor::empty({n}, DType::Int64, dev), keys = Tensor::empty({n}, DType::Int64, dev);
  auto* kin = static_cast<uint64_t*>(keys_in.data_ptr());
  auto* kout = static_cast<uint64_t*>(keys.data_ptr());
  sort_key_kernel<<<grid_for(n), kThreads, 0, s>>>(kin, idx.data<int64_t>(), n);
  check_launch("sort_key_kernel");
  int end_bit = 33;  // positions take the low 32 bits; indices in [0, V) only their significant bits
  while (end_bit < 64 && (int64_t{1} << (end_bit - 32)) < V) ++end_bit;
  size_t bytes = 0;
  check_cuda(cub::DeviceRadixSort::SortKeys(nullptr, bytes, kin, kout, static_cast<int>(n), 0, end_bit, s),
             "cub::DeviceRadixSort::SortKeys");
  Tensor tmp = Tensor::empty({static_cast<int64_t>(std::max<size_t>(bytes, 1))}, DType::UInt8, dev);  // freed in stream order
  check_cuda(cub::DeviceRadixSort::SortKeys(tmp.data_ptr(), bytes, kin, kout, static_cast<int>(n), 0, end_bit, s),
             "cub::DeviceRadixSort::SortKeys");
  LUCID_DISPATCH_FLOATING(gr.dtype(), "embedding_backward", [&] {
    using T = device_t<scalar_t>;
    embedding_backward_kernel<<<grid_for(n * D), kThreads, 0, s>>>(static_cast<T*>(out[0].data_ptr()),
                                                                       static_cast<const T*>(gr.data_ptr()), kout, n, D, pad);
  });
  check_launch("embedding_backward_kernel");
}

}  // namespace

LUCID_REGISTER_KERNEL(Embedding, CUDA, embedding_fn);
LUCID_REGISTER_KERNEL(EmbeddingBackward, CUDA, embedding_backward_fn);

}  // namespace lucid::cuda
