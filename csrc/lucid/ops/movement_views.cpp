// View ops of the movement family: View, Squeeze, Unsqueeze, Slice, Split, Select, Diagonal, Unfold.
// Each one only computes new (shape, strides, offset) over the input's storage; no data moves.
// Their VJPs scatter the gradient back with SliceScatter / DiagonalBackward / UnfoldBackward
// (copies, whose records are here as well; their CPU kernels are in
// backends/cpu/kernels/movement.cpp), concatenate it (Split) or reshape it. The composite views (narrow,
// split, chunk, unbind, flatten, movedim) are C++ functions over these ops. The geometry the
// kernels share (slices, diagonals, unfold's window) is defined here, declared in movement_util.h.
#include <algorithm>

#include "lucid/ops/movement.h"
#include "lucid/ops/movement_util.h"
#include "lucid/ops/view_util.h"

namespace lucid {

// ---- View ---------------------------------------------------------------------------------
static TensorList reshape_grad(const VjpContext& c) { return {reshape(c.grads[0], c.input_meta[0].shape)}; }

LUCID_REGISTER_OP(View, "shape:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.lowering = Lowering::View;
  d.view = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    Shape shape = infer_reshape_shape("view", x.shape(), a.ints("shape"));
    Strides st;
    LUCID_CHECK(view_strides(x, shape, st), Error, "view: size ", shape_str(shape),
                " is not compatible with the input's size ", shape_str(x.shape()), " and stride ",
                shape_str(x.strides()), " (at least one dimension spans across two contiguous subspaces); "
                "use .reshape(...) instead");
    return TensorList{Tensor::make_view(x, shape, st, x.offset())};
  };
  d.vjp = reshape_grad;
  return d;
}());

Tensor view(const Tensor& x, const Shape& shape) { return dispatch1(OpId::View, {x}, {{"shape", shape}}); }

// ---- Squeeze / Unsqueeze -----------------------------------------------------------------
LUCID_REGISTER_OP(Squeeze, "dims:ints, all:bool", [] {
  OpDef d;
  d.num_inputs = 1;
  d.lowering = Lowering::View;
  d.view = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    bool all = a.b("all");
    std::vector<bool> drop(x.ndim(), false);
    if (all) {
      for (int64_t i = 0; i < x.ndim(); ++i) drop[i] = x.shape()[i] == 1;
    } else {
      for (int64_t dd : a.ints("dims")) {
        int64_t w = wrap_dim(dd, x.ndim(), "squeeze");
        if (x.ndim() > 0 && x.shape()[w] == 1) drop[w] = true;
      }
    }
    Shape s;
    Strides st;
    for (int64_t i = 0; i < x.ndim(); ++i)
      if (!drop[i]) { s.push_back(x.shape()[i]); st.push_back(x.strides()[i]); }
    return TensorList{Tensor::make_view(x, s, st, x.offset())};
  };
  d.vjp = reshape_grad;
  return d;
}());

LUCID_REGISTER_OP(Unsqueeze, "dim:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.lowering = Lowering::View;
  d.view = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    int64_t dim = wrap_dim(a.i("dim"), x.ndim() + 1, "unsqueeze");
    Shape s = x.shape();
    Strides st = x.strides();
    int64_t stride = dim < x.ndim() ? s[dim] * st[dim] : 1;
    s.insert(s.begin() + dim, 1);
    st.insert(st.begin() + dim, stride);
    return TensorList{Tensor::make_view(x, s, st, x.offset())};
  };
  d.vjp = reshape_grad;
  return d;
}());

Tensor squeeze(const Tensor& x) { return dispatch1(OpId::Squeeze, {x}, {{"dims", IntList{}}, {"all", true}}); }
Tensor squeeze(const Tensor& x, const IntList& dims) {
  return dispatch1(OpId::Squeeze, {x}, {{"dims", dims}, {"all", false}});
}
Tensor unsqueeze(const Tensor& x, int64_t dim) { return dispatch1(OpId::Unsqueeze, {x}, {{"dim", dim}}); }

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  if (x.ndim() == 0) {
    wrap_dim(start_dim, 0, "flatten");
    wrap_dim(end_dim, 0, "flatten");
    return reshape(x, {1});
  }
  int64_t s = wrap_dim(start_dim, x.ndim(), "flatten"), e = wrap_dim(end_dim, x.ndim(), "flatten");
  LUCID_CHECK(s <= e, ValueError, "flatten: start_dim ", start_dim, " cannot come after end_dim ", end_dim);
  if (s == e) return x;
  Shape out(x.shape().begin(), x.shape().begin() + s);
  int64_t n = 1;
  for (int64_t i = s; i <= e; ++i) n *= x.shape()[i];
  out.push_back(n);
  out.insert(out.end(), x.shape().begin() + e + 1, x.shape().end());
  return reshape(x, out);
}

Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes) {
  int64_t d = wrap_dim(dim, x.ndim(), "unflatten");
  LUCID_CHECK(!sizes.empty(), ValueError, "unflatten: argument 'sizes' must be non-empty");
  Shape out(x.shape().begin(), x.shape().begin() + d);
  Shape sz = infer_reshape_shape("unflatten", {x.shape()[d]}, sizes);
  out.insert(out.end(), sz.begin(), sz.end());
  out.insert(out.end(), x.shape().begin() + d + 1, x.shape().end());
  return view(x, out);
}

// ---- Slice --------------------------------------------------------------------------------
SliceSpec normalize_slice(const Shape& shape, const Attrs& a, const char* op) {
  SliceSpec s{a.ints("dims"), a.ints("starts"), a.ints("ends"), a.ints("steps")};
  size_t n = s.dims.size();
  LUCID_CHECK(s.starts.size() == n && s.ends.size() == n && s.steps.size() == n, ValueError, op,
              ": dims, starts, ends and steps must have the same length");
  int64_t nd = static_cast<int64_t>(shape.size());
  for (size_t k = 0; k < n; ++k) {
    int64_t d = s.dims[k] = wrap_dim(s.dims[k], nd, op);
    LUCID_CHECK(s.steps[k] > 0, ValueError, op, ": slice step must be positive, got ", s.steps[k]);
    int64_t size = shape[d];
    auto clamp = [&](int64_t v) {
      if (v < 0) v += size;
      return std::clamp<int64_t>(v, 0, size);
    };
    s.starts[k] = clamp(s.starts[k]);
    s.ends[k] = std::max(s.starts[k], clamp(s.ends[k]));
  }
  return s;
}

static Shape sliced_shape(Shape shape, const SliceSpec& s) {
  for (size_t k = 0; k < s.dims.size(); ++k)
    shape[s.dims[k]] = slice_length(s.starts[k], s.ends[k], s.steps[k]);
  return shape;
}

Tensor slice_region(const Tensor& x, const SliceSpec& s) {
  Shape shape = x.shape();
  Strides st = x.strides();
  int64_t off = x.offset();
  for (size_t k = 0; k < s.dims.size(); ++k) {
    int64_t d = s.dims[k];
    if (s.ends[k] > s.starts[k]) off += s.starts[k] * st[d];
    shape[d] = slice_length(s.starts[k], s.ends[k], s.steps[k]);
    st[d] = stepped_stride(st[d], s.steps[k], shape[d], "slice");
  }
  return Tensor::make_view(x, shape, st, off);
}

static Attrs slice_attrs(const SliceSpec& s) {
  return {{"dims", s.dims}, {"starts", s.starts}, {"ends", s.ends}, {"steps", s.steps}};
}

LUCID_REGISTER_OP(Slice, "dims:ints, starts:ints, ends:ints, steps:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.lowering = Lowering::View;
  d.view = [](const TensorList& in, const Attrs& a) {
    return TensorList{slice_region(in[0], normalize_slice(in[0].shape(), a, "slice"))};
  };
  d.vjp = [](const VjpContext& c) {
    const TensorMeta& m = c.input_meta[0];
    SliceSpec s = normalize_slice(m.shape, c.attrs, "slice");
    Tensor zero = expand(full({}, 0.0, c.grads[0].dtype()), m.shape);
    return TensorList{slice_scatter(zero, c.grads[0], s.dims, s.starts, s.ends, s.steps)};
  };
  return d;
}());

Tensor slice(const Tensor& x, const IntList& dims, const IntList& starts, const IntList& ends, const IntList& steps) {
  Attrs a{{"dims", dims}, {"starts", starts}, {"ends", ends}, {"steps", steps}};
  return dispatch1(OpId::Slice, {x}, slice_attrs(normalize_slice(x.shape(), a, "slice")));
}
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  return slice(x, IntList{dim}, IntList{start}, IntList{end}, IntList{step});
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  int64_t d = wrap_dim(dim, x.ndim(), "narrow");
  int64_t size = x.shape()[d];
  LUCID_CHECK(start >= -size && start <= size, IndexError, "narrow: start ", start,
              " is out of range for dimension ", d, " with size ", size);
  if (start < 0) start += size;
  LUCID_CHECK(length >= 0 && start + length <= size, ValueError, "narrow: start (", start, ") + length (", length,
              ") exceeds dimension ", d, " of size ", size);
  return slice(x, d, start, start + length, 1);
}

// ---- SliceScatter (copy) ------------------------------------------------------------------
LUCID_REGISTER_OP(SliceScatter, "dims:ints, starts:ints, ends:ints, steps:ints", [] {
  OpDef d;
  d.num_inputs = 2;
  d.infer = [](const TensorList& in, const Attrs& a) {
    SliceSpec s = normalize_slice(in[0].shape(), a, "slice_scatter");
    Shape region = sliced_shape(in[0].shape(), s);
    LUCID_CHECK(broadcasts_to(in[1].shape(), region), ValueError, "slice_scatter: argument 'src' of shape ", shape_str(in[1].shape()),
                " cannot be broadcast to the slice of shape ", shape_str(region));
    return std::vector<TensorMeta>{{in[0].shape(), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    SliceSpec s = normalize_slice(c.input_meta[0].shape, c.attrs, "slice_scatter");
    TensorList r(2);
    if (c.needs_grad[0])
      r[0] = slice_scatter(c.grads[0], full({}, 0.0, c.grads[0].dtype()), s.dims, s.starts, s.ends, s.steps);
    if (c.needs_grad[1]) r[1] = slice(c.grads[0], s.dims, s.starts, s.ends, s.steps);
    return r;
  };
  return d;
}());

Tensor slice_scatter(const Tensor& base, const Tensor& src, const IntList& dims, const IntList& starts,
                     const IntList& ends, const IntList& steps) {
  return dispatch1(OpId::SliceScatter, {base, src}, {{"dims", dims}, {"starts", starts}, {"ends", ends}, {"steps", steps}});
}

// ---- Select -------------------------------------------------------------------------------
// Wrapped (dim, index) pairs, dims ascending; IndexError names the dim and the index.
static void normalize_select(const Shape& shape, IntList& dims, IntList& idx) {
  LUCID_CHECK(dims.size() == idx.size(), ValueError, "select: dims and indices must have the same length");
  int64_t nd = static_cast<int64_t>(shape.size());
  LUCID_CHECK(nd > 0 || dims.empty(), IndexError, "select: invalid index of a 0-dim tensor");
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t d = dims[k] = wrap_dim(dims[k], nd, "select");
    int64_t size = shape[d];
    LUCID_CHECK(idx[k] >= -size && idx[k] < size, IndexError, "select: index ", idx[k],
                " is out of bounds for dimension ", d, " with size ", size);
    if (idx[k] < 0) idx[k] += size;
    LUCID_CHECK(k == 0 || dims[k] > dims[k - 1], ValueError, "select: dims must be strictly increasing");
  }
}

LUCID_REGISTER_OP(Select, "dims:ints, indices:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.lowering = Lowering::View;
  d.view = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    IntList dims = a.ints("dims"), idx = a.ints("indices");
    normalize_select(x.shape(), dims, idx);
    Shape s;
    Strides st;
    int64_t off = x.offset();
    size_t k = 0;
    for (int64_t i = 0; i < x.ndim(); ++i) {
      if (k < dims.size() && dims[k] == i) { off += idx[k] * x.strides()[i]; ++k; continue; }
      s.push_back(x.shape()[i]);
      st.push_back(x.strides()[i]);
    }
    return TensorList{Tensor::make_view(x, s, st, off)};
  };
  d.vjp = [](const VjpContext& c) {
    const Shape& shape = c.input_meta[0].shape;
    IntList dims = c.attrs.ints("dims"), idx = c.attrs.ints("indices");
    normalize_select(shape, dims, idx);
    Shape kept = shape;
    IntList ends(idx.size()), steps(idx.size(), 1);
    for (size_t k = 0; k < dims.size(); ++k) { kept[dims[k]] = 1; ends[k] = idx[k] + 1; }
    Tensor zero = expand(full({}, 0.0, c.grads[0].dtype()), shape);
    return TensorList{slice_scatter(zero, reshape(c.grads[0], kept), dims, idx, ends, steps)};
  };
  return d;
}());

Tensor select(const Tensor& x, const IntList& dims, const IntList& indices) {
  return dispatch1(OpId::Select, {x}, {{"dims", dims}, {"indices", indices}});
}
Tensor select(const Tensor& x, int64_t dim, int64_t index) { return select(x, IntList{dim}, IntList{index}); }

// ---- Diagonal -----------------------------------------------------------------------------
struct DiagGeom {
  int64_t d1, d2, size, offset;  // offset in elements from the tensor's own offset
};

static DiagGeom diag_geom(const Shape& shape, const Strides& st, int64_t offset, int64_t dim1, int64_t dim2) {
  int64_t nd = static_cast<int64_t>(shape.size());
  LUCID_CHECK(nd >= 2, ValueError, "diagonal: expected a tensor with at least 2 dims, got ", nd);
  DiagGeom g{wrap_dim(dim1, nd, "diagonal"), wrap_dim(dim2, nd, "diagonal"), 0, 0};
  LUCID_CHECK(g.d1 != g.d2, ValueError, "diagonal: dim1 and dim2 cannot be identical, got ", g.d1, " and ", g.d2);
  int64_t s1 = shape[g.d1], s2 = shape[g.d2];
  g.size = std::max<int64_t>(0, offset >= 0 ? std::min(s1, s2 - offset) : std::min(s1 + offset, s2));
  if (g.size > 0) g.offset = offset >= 0 ? offset * st[g.d2] : -offset * st[g.d1];
  return g;
}

Tensor diagonal_view(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  DiagGeom g = diag_geom(x.shape(), x.strides(), offset, dim1, dim2);
  Shape s;
  Strides st;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != g.d1 && i != g.d2) { s.push_back(x.shape()[i]); st.push_back(x.strides()[i]); }
  s.push_back(g.size);
  st.push_back(x.strides()[g.d1] + x.strides()[g.d2]);
  return Tensor::make_view(x, s, st, x.offset() + g.offset);
}

LUCID_REGISTER_OP(Diagonal, "offset:int, dim1:int, dim2:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.lowering = Lowering::View;
  d.view = [](const TensorList& in, const Attrs& a) {
    return TensorList{diagonal_view(in[0], a.i("offset"), a.i("dim1"), a.i("dim2"))};
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{diagonal_embed(c.grads[0], c.input_meta[0].shape, c.attrs.i("offset"), c.attrs.i("dim1"),
                                     c.attrs.i("dim2"))};
  };
  return d;
}());

LUCID_REGISTER_OP(DiagonalBackward, "shape:ints, offset:int, dim1:int, dim2:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    Shape shape = a.ints("shape");
    Tensor probe = Tensor::make_view(in[0], shape, contiguous_strides(shape), 0);  // geometry only
    Shape want = diagonal_view(probe, a.i("offset"), a.i("dim1"), a.i("dim2")).shape();
    LUCID_CHECK(want == in[0].shape(), ValueError, "diag_embed: input of shape ", shape_str(in[0].shape()),
                " does not fit the diagonal of shape ", shape_str(want), " of a ", shape_str(shape), " tensor");
    return std::vector<TensorMeta>{{shape, in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{diagonal(c.grads[0], c.attrs.i("offset"), c.attrs.i("dim1"), c.attrs.i("dim2"))};
  };
  return d;
}());

Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  return dispatch1(OpId::Diagonal, {x}, {{"offset", offset}, {"dim1", dim1}, {"dim2", dim2}});
}

Tensor diagonal_embed(const Tensor& x, const Shape& shape, int64_t offset, int64_t dim1, int64_t dim2) {
  return dispatch1(OpId::DiagonalBackward, {x},
                   {{"shape", shape}, {"offset", offset}, {"dim1", dim1}, {"dim2", dim2}});
}

Tensor diag_embed(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  LUCID_CHECK(x.ndim() >= 1, ValueError, "diag_embed: expected a tensor with at least 1 dim");
  int64_t nd = x.ndim() + 1;
  int64_t d1 = wrap_dim(dim1, nd, "diag_embed"), d2 = wrap_dim(dim2, nd, "diag_embed");
  LUCID_CHECK(d1 != d2, ValueError, "diag_embed: dim1 and dim2 cannot be identical, got ", d1, " and ", d2);
  int64_t n = x.shape().back() + (offset < 0 ? -offset : offset);
  Shape rest(x.shape().begin(), x.shape().end() - 1), shape;
  for (int64_t i = 0, k = 0; i < nd; ++i) shape.push_back(i == d1 || i == d2 ? n : rest[k++]);
  return diagonal_embed(x, shape, offset, d1, d2);
}

Tensor diag(const Tensor& x, int64_t k) {
  LUCID_CHECK(x.ndim() == 1 || x.ndim() == 2, ValueError, "diag: expected a 1-D or 2-D tensor, got ", x.ndim(), "-D");
  if (x.ndim() == 1) {
    int64_t n = x.shape()[0] + (k < 0 ? -k : k);
    return diagonal_embed(x, {n, n}, k, 0, 1);
  }
  return cast(diagonal(x, k, 0, 1), x.dtype());
}

// ---- Composite views ----------------------------------------------------------------------
// ---- Split: one view op, an output per part --------------------------------------------------
// Its VJP concatenates the parts' gradients (a broadcast zero for a part without one) in one Cat,
// as torch's split_with_sizes_backward; a Slice per part would scatter each gradient into a zero
// tensor of the input's size and add them up (three full-size writes and two adds for a q/k/v split).
static int64_t check_split(const Shape& shape, const IntList& sizes, int64_t dim) {
  int64_t d = wrap_dim(dim, static_cast<int64_t>(shape.size()), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    LUCID_CHECK(s >= 0, ValueError, "split: split sizes must be non-negative, got ", shape_str(sizes));
    total += s;
  }
  LUCID_CHECK(total == shape[d], ValueError, "split: split sizes ", shape_str(sizes), " sum to ", total,
              " but dimension ", d, " has size ", shape[d]);
  return d;
}

LUCID_REGISTER_OP(Split, "sizes:ints, dim:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.lowering = Lowering::View;
  d.view = [](const TensorList& in, const Attrs& a) {
    const IntList& sizes = a.ints("sizes");
    int64_t dim = check_split(in[0].shape(), sizes, a.i("dim")), at = 0;
    TensorList out;
    for (int64_t s : sizes) {
      out.push_back(slice_region(in[0], SliceSpec{{dim}, {at}, {at + s}, {1}}));
      at += s;
    }
    return out;
  };
  d.vjp = [](const VjpContext& c) {
    const IntList& sizes = c.attrs.ints("sizes");
    int64_t dim = check_split(c.input_meta[0].shape, sizes, c.attrs.i("dim"));
    const Tensor* some = nullptr;
    for (const Tensor& g : c.grads)
      if (g.defined()) some = some ? some : &g;
    TensorList parts;
    for (size_t k = 0; k < sizes.size(); ++k) {
      if (c.grads[k].defined()) {
        parts.push_back(c.grads[k]);
        continue;
      }
      Shape s = c.input_meta[0].shape;
      s[dim] = sizes[k];
      FactoryDeviceScope on(some->device());
      parts.push_back(expand(full({}, 0.0, some->dtype()), s));
    }
    return TensorList{cat(parts, dim)};
  };
  return d;
}());

TensorList split_with_sizes(const Tensor& x, const IntList& sizes, int64_t dim) {
  int64_t d = check_split(x.shape(), sizes, dim);
  return dispatch(OpId::Split, {x}, {{"sizes", sizes}, {"dim", d}});
}

TensorList split(const Tensor& x, int64_t split_size, int64_t dim) {
  int64_t d = wrap_dim(dim, x.ndim(), "split");
  int64_t n = x.shape()[d];
  LUCID_CHECK(split_size > 0 || (split_size == 0 && n == 0), ValueError,
              "split: split_size must be positive, got ", split_size);
  IntList sizes;
  if (n == 0) sizes.push_back(0);
  for (int64_t at = 0; at < n; at += split_size) sizes.push_back(std::min(split_size, n - at));
  return split_with_sizes(x, sizes, d);
}

TensorList chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  LUCID_CHECK(chunks > 0, ValueError, "chunk: argument 'chunks' must be positive, got ", chunks);
  int64_t d = wrap_dim(dim, x.ndim(), "chunk");
  int64_t n = x.shape()[d];
  int64_t size = (n + chunks - 1) / chunks;
  if (n == 0) return split_with_sizes(x, IntList(chunks, 0), d);
  return split(x, size, d);
}

TensorList tensor_split(const Tensor& x, int64_t sections, int64_t dim) {
  LUCID_CHECK(sections > 0, ValueError, "tensor_split: number of sections must be positive, got ", sections);
  int64_t d = wrap_dim(dim, x.ndim(), "tensor_split");
  int64_t n = x.shape()[d], base = n / sections, extra = n % sections;
  IntList sizes;
  for (int64_t i = 0; i < sections; ++i) sizes.push_back(base + (i < extra ? 1 : 0));
  return split_with_sizes(x, sizes, d);
}

TensorList tensor_split_at(const Tensor& x, const IntList& indices, int64_t dim) {
  int64_t d = wrap_dim(dim, x.ndim(), "tensor_split");
  TensorList out;
  int64_t prev = 0;
  for (size_t i = 0; i <= indices.size(); ++i) {
    int64_t end = i < indices.size() ? indices[i] : x.shape()[d];
    out.push_back(slice(x, d, prev, std::max(prev, end), 1));
    prev = end;
  }
  return out;
}

TensorList unbind(const Tensor& x, int64_t dim) {
  int64_t d = wrap_dim(dim, x.ndim(), "unbind");
  TensorList out;
  for (int64_t i = 0; i < x.shape()[d]; ++i) out.push_back(select(x, d, i));
  return out;
}

Tensor movedim(const Tensor& x, const IntList& src, const IntList& dst) {
  LUCID_CHECK(src.size() == dst.size(), ValueError, "movedim: source and destination must have the same length, got ",
              src.size(), " and ", dst.size());
  int64_t n = x.ndim();
  IntList perm(n, -1);
  std::vector<bool> used(n, false), placed(n, false);
  for (size_t k = 0; k < src.size(); ++k) {
    int64_t s = wrap_dim(src[k], n, "movedim"), t = wrap_dim(dst[k], n, "movedim");
    LUCID_CHECK(!used[s] && !placed[t], ValueError, "movedim: repeated dim in source or destination");
    perm[t] = s;
    used[s] = placed[t] = true;
  }
  int64_t next = 0;
  for (int64_t t = 0; t < n; ++t) {
    if (perm[t] >= 0) continue;
    while (used[next]) ++next;
    perm[t] = next++;
  }
  return permute(x, perm);
}

// ---- Unfold (sliding windows, a view) ------------------------------------------------------
void check_unfold(const Shape& shape, int64_t& dim, int64_t size, int64_t step) {
  int64_t nd = static_cast<int64_t>(shape.size());
  dim = wrap_dim(dim, nd, "unfold");
  int64_t n = nd == 0 ? 1 : shape[dim];
  LUCID_CHECK(size >= 0 && size <= n, ValueError, "unfold: size ", size, " exceeds dimension ", dim, " of size ", n);
  LUCID_CHECK(step > 0, ValueError, "unfold: step must be positive, got ", step);
}

LUCID_REGISTER_OP(Unfold, "dim:int, size:int, step:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.lowering = Lowering::View;
  d.view = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    int64_t dim = a.i("dim"), size = a.i("size"), step = a.i("step");
    check_unfold(x.shape(), dim, size, step);
    Shape s = x.shape();
    Strides st = x.strides();
    if (x.ndim() == 0) return TensorList{Tensor::make_view(x, {size}, {1}, x.offset())};
    int64_t inner = st[dim];
    s[dim] = (s[dim] - size) / step + 1;
    st[dim] = stepped_stride(st[dim], step, s[dim], "unfold");
    s.push_back(size);
    st.push_back(inner);
    return TensorList{Tensor::make_view(x, s, st, x.offset())};
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{dispatch1(OpId::UnfoldBackward, {c.grads[0]},
                                {{"shape", c.input_meta[0].shape}, {"dim", c.attrs.i("dim")},
                                 {"size", c.attrs.i("size")}, {"step", c.attrs.i("step")}})};
  };
  return d;
}());

// Sums each window of the gradient back into its input positions (the adjoint of Unfold).
LUCID_REGISTER_OP(UnfoldBackward, "shape:ints, dim:int, size:int, step:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    return std::vector<TensorMeta>{{a.ints("shape"), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{unfold(c.grads[0], c.attrs.i("dim"), c.attrs.i("size"), c.attrs.i("step"))};
  };
  return d;
}());

Tensor unfold(const Tensor& x, int64_t dim, int64_t size, int64_t step) {
  return dispatch1(OpId::Unfold, {x}, {{"dim", dim}, {"size", size}, {"step", step}});
}

}  // namespace lucid
