// CPU kernels of Embedding (row gather, padding rows zeroed on request) and EmbeddingBackward
// (rows scatter-added in the compute type, columns split across threads so no two threads write
// one element); op records in ops/nn_embed.cpp. Indices are validated against the table size.
#include <cstring>
#include <vector>

#include "lucid/backends/cpu/kernels/nn_operands.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

namespace {

Tensor checked_indices(const Tensor& idx, int64_t num, const char* op) {
  Tensor i64 = nnutil::contig_as(idx, DType::Int64);
  const int64_t* p = i64.data<int64_t>();
  for (int64_t i = 0; i < i64.numel(); ++i)
    LUCID_CHECK(p[i] >= 0 && p[i] < num, IndexError, op, ": index ", p[i], " is out of range for ", num,
                " embeddings (valid indices are 0..", num - 1, ")");
  return i64;
}

void embedding_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor w = in[0].contiguous_data();
  int64_t V = w.shape()[0], D = w.shape()[1];
  Tensor idx = checked_indices(in[1], V, "embedding");
  int64_t pad = a.i("padding_idx"), n = idx.numel();
  bool zero_pad = a.b("zero_padding", false);
  size_t row = static_cast<size_t>(D) * itemsize(w.dtype());
  const int64_t* ip = idx.data<int64_t>();
  const char* src = static_cast<const char*>(w.data_ptr());
  char* dst = static_cast<char*>(out[0].data_ptr());
  parallel_for(0, n, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(D, 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if (zero_pad && ip[i] == pad) std::memset(dst + i * row, 0, row);
      else std::memcpy(dst + i * row, src + ip[i] * row, row);
    }
  });
}

void embedding_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  int64_t V = a.i("num_weights"), pad = a.i("padding_idx");
  Tensor g = in[0].contiguous_data();
  Tensor idx = checked_indices(in[1], V, "embedding_backward");
  int64_t D = g.shape().back(), n = idx.numel();
  const int64_t* ip = idx.data<int64_t>();
  LUCID_DISPATCH_FLOATING(g.dtype(), "embedding_backward", [&] {
    using C = compute_t<scalar_t>;
    std::vector<C> acc(static_cast<size_t>(V * D), C(0));
    const scalar_t* gp = g.data<scalar_t>();
    // Columns are independent: split them across threads (no write conflicts).
    parallel_for(0, D, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)), [&](int64_t cb, int64_t ce) {
      for (int64_t i = 0; i < n; ++i) {
        if (ip[i] == pad) continue;
        C* dst = acc.data() + ip[i] * D;
        const scalar_t* src = gp + i * D;
        for (int64_t j = cb; j < ce; ++j) dst[j] += static_cast<C>(src[j]);
      }
    });
    scalar_t* o = out[0].data<scalar_t>();
    for (int64_t k = 0; k < V * D; ++k) o[k] = static_cast<scalar_t>(acc[k]);
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Embedding, CPU, embedding_kernel);
LUCID_REGISTER_KERNEL(EmbeddingBackward, CPU, embedding_backward_kernel);

}  // namespace lucid::cpu
