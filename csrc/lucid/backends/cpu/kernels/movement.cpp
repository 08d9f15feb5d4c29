// CPU kernels of the movement family's copying ops: Cat, Flip, Roll, Tril, Triu, Repeat, Pad,
// PadBackward (records in ops/movement_copy.cpp), the scatters behind the views' VJPs:
// SliceScatter, DiagonalBackward, UnfoldBackward (records in ops/movement_views.cpp), and
// AsStridedScatter (ops/core_strided.cpp). Flip, Roll, Repeat, Pad, PadBackward and the scatters
// are the backend-neutral ones of ops/movement_plan.h on the CPU's strided copy, accumulation and
// fill (CpuMoves, backends/cpu/strided_copy.h); Cat and Tril/Triu are written here. Everything is
// a strided copy between views computed from the record's geometry (ops/movement_util.h), so it
// is written once for every dtype.
#include <algorithm>

#include "lucid/backends/cpu/strided_copy.h"
#include "lucid/ops/movement_plan.h"
#include "lucid/ops/movement_util.h"
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

namespace {

// ---- Cat ----------------------------------------------------------------------------------
void cat_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  if (o.numel() == 0) return;
  int64_t dim = wrap_dim(a.i("dim"), o.ndim(), "cat");
  int64_t at = 0;
  for (const Tensor& t : in) {
    if (cat_skipped(t)) continue;
    int64_t n = t.shape()[dim];
    if (n > 0) strided_copy(narrow_view(o, dim, at, n), t);
    at += n;
  }
}

// ---- Tril / Triu --------------------------------------------------------------------------
template <bool Lower>
void tri_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  if (!same_view(o, in[0])) strided_copy(o, in[0]);
  int64_t k = a.i("diagonal");
  int64_t nd = o.ndim(), R = o.shape()[nd - 2], C = o.shape()[nd - 1];
  int64_t rs = o.strides()[nd - 2], cs = o.strides()[nd - 1];
  Shape bs(o.shape().begin(), o.shape().end() - 2);
  Strides bst(o.strides().begin(), o.strides().end() - 2);
  std::vector<int64_t> boff = offset_table(bs, bst);
  by_itemsize(o.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    U* base = static_cast<U*>(o.data_ptr());
    parallel_for(0, static_cast<int64_t>(boff.size()), std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(R * C, 1)),
                 [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b)
        for (int64_t r = 0; r < R; ++r) {
          U* row = base + boff[b] + r * rs;
          int64_t c0 = Lower ? std::clamp<int64_t>(r + k + 1, 0, C) : 0;
          int64_t c1 = Lower ? C : std::clamp<int64_t>(r + k, 0, C);
          for (int64_t c = c0; c < c1; ++c) row[c * cs] = U(0);
        }
    });
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Cat, CPU, cat_kernel);
LUCID_REGISTER_KERNEL(Tril, CPU, tri_kernel<true>);
LUCID_REGISTER_KERNEL(Triu, CPU, tri_kernel<false>);
LUCID_REGISTER_MOVEMENT_PLAN(CPU, CpuMoves);

}  // namespace lucid::cpu
