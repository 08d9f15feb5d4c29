// CUDA kernels of the movement family's copying ops (records in ops/movement_copy.cpp,
// ops/movement_views.cpp, ops/core_strided.cpp): Cat, Flip, Roll, Tril, Triu, Repeat, Pad,
// PadBackward, SliceScatter, DiagonalBackward, UnfoldBackward, AsStridedScatter. As on the CPU
// (backends/cpu/kernels/movement.cpp), each is a strided copy or accumulation between views built
// from the records' shared geometry (ops/movement_util.h, ops/view_util.h), here with the device's
// strided_move.h; Cat copies many dense inputs in one batched launch, and Tril/Triu zero their
// triangle in one kernel. Accumulations (PadBackward, UnfoldBackward) run in the CPU's order, one
// launch per slice or window, so they give the CPU's bits.
#include "lucid/backends/cuda/stream.h"
#include "lucid/backends/cuda/strided_index.cuh"
#include "lucid/backends/cuda/strided_move.h"
#include "lucid/ops/movement_util.h"
#include "lucid/ops/op_def.h"
#include "lucid/ops/view_util.h"

namespace lucid::cuda {

namespace {

// ---- Cat ----------------------------------------------------------------------------------
// Up to kCatBatch dense inputs of the output's dtype per launch (blockIdx.y picks the input): the
// output seen as [outer, out_row] and input k as [outer, row_k] placed at column col_k.
constexpr int kCatBatch = 32;
struct CatBatch {
  const void* src[kCatBatch];
  int64_t row[kCatBatch];  // elements per outer index of input k (its dim size * inner)
  int64_t col[kCatBatch];  // where its row starts in the output's row
};

template <class U>
__global__ void cat_batch_kernel(U* dst, CatBatch b, int64_t outer, int64_t out_row) {
  const int k = blockIdx.y;
  const U* src = static_cast<const U*>(b.src[k]);
  const int64_t row = b.row[k], n = outer * row;
  U* d = dst + b.col[k];
  LUCID_GRID_LOOP(int64_t, i, n) {
    int64_t o = i / row, r = i - o * row;
    d[o * out_row + r] = src[i];
  }
}

void cat_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  if (o.numel() == 0) return;
  DeviceGuard g(o.device());
  int64_t dim = wrap_dim(a.i("dim"), o.ndim(), "cat");
  int64_t inner = 1, outer = 1;
  for (int64_t d = 0; d < o.ndim(); ++d) {
    if (d < dim) outer *= o.shape()[d];
    else if (d > dim) inner *= o.shape()[d];
  }
  const int64_t out_row = o.shape()[dim] * inner;
  const bool batched = o.is_contiguous();
  CatBatch batch{};
  int nb = 0;
  int64_t max_n = 0;
  auto flush = [&] {
    if (nb == 0) return;
    by_width(o.dtype(), [&](auto tag) {
      using U = decltype(tag);
      dim3 grid(grid_for(max_n), nb);
      cat_batch_kernel<U><<<grid, kThreads, 0, current_stream(o.device())>>>(static_cast<U*>(o.data_ptr()), batch, outer, out_row);
    });
    check_launch("cat_batch_kernel");
    nb = 0;
    max_n = 0;
  };
  int64_t at = 0;
  for (const Tensor& t : in) {
    if (cat_skipped(t)) continue;
    int64_t n = t.shape()[dim];
    if (n > 0 && t.numel() > 0) {
      if (batched && t.dtype() == o.dtype() && t.is_contiguous()) {
        batch.src[nb] = t.data_ptr();
        batch.row[nb] = n * inner;
        batch.col[nb] = at * inner;
        max_n = std::max(max_n, outer * n * inner);
        if (++nb == kCatBatch) flush();
      } else {
        strided_copy(narrow_view(o, dim, at, n), t);  // strided or another dtype (the converting copy)
      }
    }
    at += n;
  }
  flush();
}

// ---- Flip / Roll --------------------------------------------------------------------------
void flip_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  Strides st = x.strides();
  int64_t off = x.offset();
  for (int64_t dd : unique_dims(a.ints("dims"), x.ndim(), "flip")) {
    if (x.ndim() == 0 || x.shape()[dd] == 0) continue;
    off += (x.shape()[dd] - 1) * st[dd];
    st[dd] = -st[dd];
  }
  Tensor v = Tensor::make_view(x, x.shape(), st, off);
  if (out[0].same_storage(x)) {
    Tensor t = Tensor::empty(x.shape(), x.dtype(), x.device());
    strided_copy(t, v);
    v = t;
  }
  strided_copy(out[0], v);
}

void roll_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const IntList& sh = a.ints("shifts");
  const IntList& dims = a.ints("dims");
  Tensor src = in[0];
  if (out[0].same_storage(src)) {  // in place: read from a copy
    src = Tensor::empty(src.shape(), src.dtype(), src.device());
    strided_copy(src, in[0]);
  }
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t dd = wrap_dim(dims[k], src.ndim(), "roll");
    int64_t n = src.shape()[dd];
    Tensor dst = k + 1 == dims.size() ? out[0] : Tensor::empty(src.shape(), src.dtype(), src.device());
    if (n == 0) { src = dst; continue; }
    int64_t s = ((sh[k] % n) + n) % n;
    if (n - s > 0) strided_copy(narrow_view(dst, dd, s, n - s), narrow_view(src, dd, 0, n - s));
    if (s > 0) strided_copy(narrow_view(dst, dd, 0, s), narrow_view(src, dd, n - s, s));
    src = dst;
  }
}

// ---- Tril / Triu --------------------------------------------------------------------------
// Zeroes the elements of o above (Lower) or below the k-th diagonal of its last two dims.
template <class U, class Index>
__global__ void tri_zero_kernel(U* o, StridedIndexer<1, Index> ix, Index n, int64_t R, int64_t C, int64_t k, bool lower) {
  LUCID_GRID_LOOP(Index, i, n) {
    int64_t c = static_cast<int64_t>(i) % C, r = (static_cast<int64_t>(i) / C) % R;
    if (lower ? c - r > k : c - r < k) {
      Index off[1];
      ix.offsets(i, off);
      o[off[0]] = U(0);
    }
  }
}

template <bool Lower>
void tri_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  if (!same_view(o, in[0])) strided_copy(o, in[0]);
  if (o.numel() == 0) return;
  DeviceGuard g(o.device());
  int64_t k = a.i("diagonal");
  int64_t nd = o.ndim(), R = o.shape()[nd - 2], C = o.shape()[nd - 1];
  const int64_t n = o.numel();
  MergedDims<1> m = merge_dims<1>(o.shape(), {&o.strides()});
  cudaStream_t s = current_stream(o.device());
  by_width(o.dtype(), [&](auto tag) {
    using U = decltype(tag);
    U* p = static_cast<U*>(o.data_ptr());
    if (fits_int32(m, n))
      tri_zero_kernel<<<grid_for(n), kThreads, 0, s>>>(p, make_indexer<1, int32_t>(m), static_cast<int32_t>(n), R, C, k, Lower);
    else
      tri_zero_kernel<<<grid_for(n), kThreads, 0, s>>>(p, make_indexer<1, int64_t>(m), n, R, C, k, Lower);
  });
  check_launch("tri_zero_kernel");
}

// ---- Repeat -------------------------------------------------------------------------------
void repeat_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  const Tensor& o = out[0];
  if (o.numel() == 0) return;
  const IntList& r = a.ints("repeats");
  int64_t off = static_cast<int64_t>(r.size()) - x.ndim();
  Shape vs;
  Strides ost, xst;
  for (size_t i = 0; i < r.size(); ++i) {
    int64_t xi = static_cast<int64_t>(i) - off;
    int64_t s = xi < 0 ? 1 : x.shape()[xi];
    vs.push_back(r[i]); vs.push_back(s);
    ost.push_back(o.strides()[i] * s); ost.push_back(o.strides()[i]);
    xst.push_back(0); xst.push_back(xi < 0 ? 0 : x.strides()[xi]);
  }
  strided_copy(Tensor::make_view(o, vs, ost, o.offset()), Tensor::make_view(x, vs, xst, x.offset()));
}

// ---- Pad / PadBackward --------------------------------------------------------------------
Tensor select_view(const Tensor& t, int64_t d, int64_t i) { return narrow_view(t, d, i, 1); }

void pad_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  const IntList& p = a.ints("pad");
  const std::string& mode = a.s("mode");
  int64_t nd = in[0].ndim();
  if (mode == "constant") {
    fill(o, a.f("value"));
    Tensor src = in[0], dst = o;
    for (size_t k = 0; k < p.size() / 2; ++k) {
      int64_t dd = nd - 1 - static_cast<int64_t>(k), l = p[2 * k];
      int64_t n = src.shape()[dd], m = dst.shape()[dd];
      int64_t is = std::max<int64_t>(0, -l), os = std::max<int64_t>(0, l);
      int64_t len = std::max<int64_t>(0, std::min(n - is, m - os));
      src = narrow_view(src, dd, is, len);
      dst = narrow_view(dst, dd, os, len);
    }
    if (src.numel() > 0) strided_copy(dst, src);
    return;
  }
  // One padded dim at a time, each output slice copied from its source slice (one launch each:
  // pads are a few elements wide).
  Tensor cur = in[0];
  for (size_t k = 0; k < p.size() / 2; ++k) {
    int64_t dd = nd - 1 - static_cast<int64_t>(k), l = p[2 * k], r = p[2 * k + 1];
    if (l == 0 && r == 0) continue;
    Shape s = cur.shape();
    int64_t n = s[dd];
    s[dd] = n + l + r;
    Tensor next = Tensor::empty(s, cur.dtype(), o.device());
    strided_copy(narrow_view(next, dd, l, n), cur);
    for (int64_t j = 0; j < s[dd]; ++j)
      if (j < l || j >= l + n) strided_copy(select_view(next, dd, j), select_view(cur, dd, pad_source(mode, j, n, l)));
    cur = next;
  }
  strided_copy(o, cur);
}

// Every output gradient slice is added to its source slice, in the CPU's order.
void pad_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const IntList& p = a.ints("pad");
  const std::string& mode = a.s("mode");
  int64_t nd = in[0].ndim();
  Tensor cur = in[0];
  for (int64_t k = static_cast<int64_t>(p.size() / 2) - 1; k >= 0; --k) {
    int64_t dd = nd - 1 - k, l = p[2 * k], r = p[2 * k + 1];
    if (l == 0 && r == 0) continue;
    Shape s = cur.shape();
    int64_t n = s[dd] - l - r;
    s[dd] = n;
    Tensor next = Tensor::empty(s, cur.dtype(), out[0].device());
    strided_copy(next, narrow_view(cur, dd, l, n));
    for (int64_t j = 0; j < cur.shape()[dd]; ++j)
      if (j < l || j >= l + n) add_into(select_view(next, dd, pad_source(mode, j, n, l)), select_view(cur, dd, j));
    cur = next;
  }
  strided_copy(out[0], cur);
}

// ---- SliceScatter / DiagonalBackward / UnfoldBackward / AsStridedScatter -------------------
// src read into a scratch copy when it shares dst's storage (x[a] = x[b]).
Tensor unaliased(const Tensor& src, const Tensor& dst) {
  if (!src.same_storage(dst)) return src;
  Tensor t = Tensor::empty(src.shape(), src.dtype(), src.device());
  strided_copy(t, src);
  return t;
}

void slice_scatter_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  bool inplace = o.same_storage(in[0]) && o.offset() == in[0].offset() && o.strides() == in[0].strides();
  Tensor src = unaliased(in[1], o);
  if (!inplace) strided_copy(o, in[0]);
  SliceSpec s = normalize_slice(o.shape(), a, "slice_scatter");
  strided_copy(slice_region(o, s), src);
}

void diagonal_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  zero(o);
  strided_copy(diagonal_view(o, a.i("offset"), a.i("dim1"), a.i("dim2")), in[0]);
}

// Sums each window of the gradient back into its input positions (the adjoint of Unfold), one
// window offset k per launch, as the CPU.
void unfold_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  zero(o);
  int64_t dim = a.i("dim"), size = a.i("size"), step = a.i("step");
  check_unfold(o.shape(), dim, size, step);
  const Tensor& g = in[0];
  if (o.ndim() == 0) { strided_copy(o, Tensor::make_view(g, {}, {}, g.offset())); return; }
  int64_t nw = g.shape()[dim];
  for (int64_t k = 0; k < size; ++k) {
    Shape gs(g.shape().begin(), g.shape().end() - 1);
    Strides gst(g.strides().begin(), g.strides().end() - 1);
    Tensor gk = Tensor::make_view(g, gs, gst, g.offset() + k * g.strides().back());
    Shape os = o.shape();
    Strides ost = o.strides();
    os[dim] = nw;
    ost[dim] *= step;
    Tensor ok = Tensor::make_view(o, os, ost, o.offset() + k * o.strides()[dim]);
    add_into(ok, gk);
  }
}

void as_strided_scatter_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor src = unaliased(in[1], out[0]);
  if (!same_view(out[0], in[0])) strided_copy(out[0], in[0]);
  strided_copy(strided_region(out[0], a), src);
}

}  // namespace

LUCID_REGISTER_KERNEL(Cat, CUDA, cat_kernel);
LUCID_REGISTER_KERNEL(Flip, CUDA, flip_kernel);
LUCID_REGISTER_KERNEL(Roll, CUDA, roll_kernel);
LUCID_REGISTER_KERNEL(Tril, CUDA, tri_kernel<true>);
LUCID_REGISTER_KERNEL(Triu, CUDA, tri_kernel<false>);
LUCID_REGISTER_KERNEL(Repeat, CUDA, repeat_kernel);
LUCID_REGISTER_KERNEL(Pad, CUDA, pad_kernel);
LUCID_REGISTER_KERNEL(PadBackward, CUDA, pad_backward_kernel);
LUCID_REGISTER_KERNEL(SliceScatter, CUDA, slice_scatter_kernel);
LUCID_REGISTER_KERNEL(DiagonalBackward, CUDA, diagonal_backward_kernel);
LUCID_REGISTER_KERNEL(UnfoldBackward, CUDA, unfold_backward_kernel);
LUCID_REGISTER_KERNEL(AsStridedScatter, CUDA, as_strided_scatter_kernel);

}  // namespace lucid::cuda
