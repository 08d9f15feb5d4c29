// Python bindings of the movement family: lucid.cat/stack/split/gather/..., the matching Tensor
// methods, and Tensor.__getitem__ / __setitem__. Index parsing happens here in C++: basic
// indices (ints, slices, None, Ellipsis) become one Slice, one Select and Unsqueeze views;
// integer tensors, lists and bool masks become one IndexGather (or IndexPut for __setitem__).
#include <algorithm>

#include "bind.h"
#include "lucid/autograd/grad_mode.h"
#include "lucid/core/mem_overlap.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/movement.h"
#include "lucid/ops/movement_util.h"

namespace lucid::py {

namespace {

Shape sizes_arg(nb::args a, const char* op, const char* name) {
  if (a.size() == 1 && !PyLong_Check(a[0].ptr())) return to_shape(a[0], op, name);
  return to_shape(a, op, name);
}

TensorList tensor_list(nb::handle seq, const char* op) {
  if (is_tensor(seq) || !nb::hasattr(seq, "__iter__"))
    throw TypeError(str(op, ": argument 'tensors' must be a sequence of Tensors, got ",
                        nb::cast<std::string>(nb::str(seq.type().attr("__name__")))));
  TensorList out;
  size_t i = 0;
  for (nb::handle e : seq) {
    if (!is_tensor(e))
      throw TypeError(str(op, ": expected a sequence of Tensors, but element ", i, " is of type ",
                          nb::cast<std::string>(nb::str(e.type().attr("__name__")))));
    out.push_back(nb::cast<Tensor>(e));
    ++i;
  }
  return out;
}

nb::tuple to_tuple(const TensorList& ts) {
  nb::list l;
  for (const Tensor& t : ts) l.append(nb::cast(t));
  return nb::tuple(l);
}

IntList opt_dims(nb::handle dim, const char* op) { return dim.is_none() ? IntList{} : to_shape(dim, op, "dim"); }

Tensor squeeze_any(const Tensor& x, nb::handle dim) {
  if (dim.is_none()) return squeeze(x);
  return squeeze(x, to_shape(dim, "squeeze", "dim"));
}

TensorList split_any(const Tensor& x, nb::handle s, int64_t dim) {
  if (PyLong_Check(s.ptr()) || (nb::hasattr(s, "__index__") && !nb::hasattr(s, "__iter__")))
    return split(x, to_int64(s, "split", "split_size_or_sections"), dim);
  return split_with_sizes(x, to_shape(s, "split", "split_size_or_sections"), dim);
}

Tensor scatter_any(const Tensor& x, int64_t dim, const Tensor& index, nb::handle src, nb::handle value,
                   bool add, const char* op) {
  if (!src.is_none() && is_tensor(src)) return add ? scatter_add(x, dim, index, nb::cast<Tensor>(src)) : scatter(x, dim, index, nb::cast<Tensor>(src));
  nb::handle v = src.is_none() ? value : src;
  LUCID_CHECK(!v.is_none(), TypeError, op, ": expected argument 'src' or 'value'");
  Tensor sv = to_tensor(v, op, "value");
  double d = 0;
  LUCID_DISPATCH_ALL(sv.dtype(), op, [&] { d = static_cast<double>(static_cast<compute_t<scalar_t>>(*sv.data<scalar_t>())); });
  Tensor filled = expand(full({}, d, x.dtype()), index.shape());
  return add ? scatter_add(x, dim, index, filled) : scatter(x, dim, index, filled);
}

TensorList tensor_split_any(const Tensor& x, nb::handle s, int64_t dim) {
  if (is_tensor(s)) {
    Tensor t = nb::cast<Tensor>(s);
    if (t.ndim() == 0) return tensor_split(x, static_cast<int64_t>(*cast(t, DType::Int64).data<int64_t>()), dim);
    Tensor c = cast(t, DType::Int64);
    return tensor_split_at(x, IntList(c.data<int64_t>(), c.data<int64_t>() + c.numel()), dim);
  }
  if (PyLong_Check(s.ptr())) return tensor_split(x, to_int64(s, "tensor_split", "indices_or_sections"), dim);
  return tensor_split_at(x, to_shape(s, "tensor_split", "indices_or_sections"), dim);
}

Tensor take_along_dim_any(const Tensor& x, const Tensor& i, nb::handle dim) {
  return dim.is_none() ? take_along_dim(x, i, 0, true) : take_along_dim(x, i, to_int64(dim, "take_along_dim", "dim"), false);
}

Tensor repeat_interleave_any(const Tensor& x, nb::handle repeats, nb::handle dim) {
  bool flat = dim.is_none();
  int64_t d = flat ? 0 : to_int64(dim, "repeat_interleave", "dim");
  if (repeats.is_none()) {  // repeat_interleave(repeats): indices 0..n-1 repeated
    LUCID_CHECK(x.ndim() <= 1, ValueError, "repeat_interleave: repeats must be 0-D or 1-D, got ", x.ndim(), "-D");
    Tensor n = Tensor::empty({x.numel()}, DType::Int64);
    for (int64_t i = 0; i < x.numel(); ++i) n.data<int64_t>()[i] = i;
    return repeat_interleave(n, x, 0, true);
  }
  if (is_tensor(repeats)) return repeat_interleave(x, nb::cast<Tensor>(repeats), d, flat);
  return repeat_interleave(x, to_int64(repeats, "repeat_interleave", "repeats"), d, flat);
}

nb::object nonzero_any(const Tensor& x, bool as_tuple) {
  Tensor nz = nonzero(x);
  if (!as_tuple) return nb::cast(nz);
  nb::list l;
  int64_t nd = std::max<int64_t>(x.ndim(), 1);
  for (int64_t d = 0; d < nd; ++d) l.append(nb::cast(x.ndim() == 0 ? reshape(nz, {-1}) : cast(select(nz, 1, d), DType::Int64)));
  return nb::tuple(l);
}

Shape broadcast_all(const std::vector<Shape>& shapes) {
  Shape out;
  for (const Shape& s : shapes) out = broadcast_shapes(out, s, "broadcast_tensors");
  return out;
}

// index_fill: x[..., index, ...] = value along dim (an IndexPut with one index tensor).
Tensor index_fill_any(const Tensor& x, int64_t dim, const Tensor& index, nb::handle value, bool inplace) {
  LUCID_CHECK(index.ndim() <= 1, ValueError, "index_fill: argument 'index' must be 0-D or 1-D, got ", index.ndim(), "-D");
  Tensor v = to_tensor(value, "index_fill", "value");
  LUCID_CHECK(v.ndim() == 0, ValueError, "index_fill: value must be a number or a 0-dim tensor, got shape ",
              shape_str(v.shape()));
  Tensor t = x.ndim() == 0 ? reshape(x, {1}) : x;
  int64_t d = wrap_dim(dim, t.ndim(), "index_fill");
  Tensor i = reshape(index, {-1});
  if (inplace) {
    index_put_(t, {d}, {i}, v, false);
    return x;
  }
  Tensor r = index_put(t, {d}, {i}, v, false);
  return x.ndim() == 0 ? reshape(r, {}) : r;
}

Tensor tile(const Tensor& x, IntList dims) {
  while (static_cast<int64_t>(dims.size()) < x.ndim()) dims.insert(dims.begin(), 1);
  return repeat(x, dims);
}

// ---- __getitem__ / __setitem__ ------------------------------------------------------------
struct ParsedIndex {
  IntList slice_dims, starts, ends, steps;  // in x's dims
  IntList select_dims, select_idx;          // in x's dims
  IntList new_dims;                         // positions of None dims in the view
  IntList adv_dims;                         // positions (in the view) of advanced indices
  TensorList adv;                           // their integer index tensors
  Shape view_shape;                         // shape after the basic indices
  bool basic_ops = false;                   // any slicing/select/unsqueeze applied
};

const char* py_type_name(nb::handle h) {
  static thread_local std::string s;
  s = nb::cast<std::string>(nb::str(h.type().attr("__name__")));
  return s.c_str();
}

bool is_ndarray(nb::handle h) {
  return !is_tensor(h) && nb::hasattr(h, "__array_interface__") && nb::hasattr(h, "ndim");
}

Tensor list_to_index(nb::handle h) {
  // Leaked on purpose: a static nb::object would be released after the interpreter is gone.
  static nb::object& tensor_fn = *new nb::object(nb::module_::import_("lucid").attr("tensor"));
  if (is_ndarray(h)) return nb::cast<Tensor>(tensor_fn(h));
  size_t n = nb::len(h);
  if (n == 0) return Tensor::empty({0}, DType::Int64);
  // Flat lists of ints or of bools without a round trip through NumPy.
  bool ints = true, bools = true;
  for (nb::handle e : h) {
    bool b = PyBool_Check(e.ptr());
    ints = ints && !b && PyLong_Check(e.ptr());
    bools = bools && b;
  }
  if (ints || bools) {
    Tensor t = Tensor::empty({static_cast<int64_t>(n)}, ints ? DType::Int64 : DType::Bool);
    size_t i = 0;
    for (nb::handle e : h) {
      if (ints) t.data<int64_t>()[i++] = to_int64(e, "index", "index");
      else t.data<bool>()[i++] = e.ptr() == Py_True;
    }
    return t;
  }
  return nb::cast<Tensor>(tensor_fn(h));
}

bool is_mask(const Tensor& t) { return t.dtype() == DType::Bool || t.dtype() == DType::UInt8; }

ParsedIndex parse_index(const Tensor& x, nb::handle index) {
  std::vector<nb::handle> items;
  nb::object holder;
  // PyTorch (legacy NumPy rule): a list holding sequences, slices, Ellipsis, None or tensors
  // is read as a tuple of indices.
  bool as_tuple = nb::isinstance<nb::tuple>(index);
  if (!as_tuple && nb::isinstance<nb::list>(index))
    for (nb::handle e : index)
      if (nb::isinstance<nb::list>(e) || nb::isinstance<nb::tuple>(e) || PySlice_Check(e.ptr()) ||
          e.ptr() == Py_Ellipsis || e.is_none() || is_tensor(e)) {
        as_tuple = true;
        break;
      }
  if (as_tuple) {
    holder = nb::borrow(index);
    for (nb::handle h : index) items.push_back(h);
  } else {
    items.push_back(index);
  }
  // Convert lists to tensors up front; count the dims the items consume.
  std::vector<Tensor> tens(items.size());
  int64_t consumed = 0, ellipsis = -1;
  for (size_t k = 0; k < items.size(); ++k) {
    nb::handle h = items[k];
    if (is_tensor(h)) {
      tens[k] = nb::cast<Tensor>(h);
    } else if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h) ||
               (is_ndarray(h) && nb::cast<int64_t>(h.attr("ndim")) > 0)) {
      tens[k] = list_to_index(h);
    }
    if (tens[k].defined()) {
      const Tensor& t = tens[k];
      if (is_mask(t)) consumed += t.ndim();
      else if (t.dtype() == DType::Int64 || t.dtype() == DType::Int32) consumed += 1;
      else throw IndexError("index: tensors used as indices must be long, int, byte or bool tensors, got " +
                            std::string(dtype_name(t.dtype())));
    } else if (h.is_none() || PyBool_Check(h.ptr())) {
    } else if (h.ptr() == Py_Ellipsis) {
      LUCID_CHECK(ellipsis < 0, IndexError, "index: an index can only have a single ellipsis ('...')");
      ellipsis = static_cast<int64_t>(k);
    } else if (PySlice_Check(h.ptr()) || PyIndex_Check(h.ptr())) {
      consumed += 1;
    } else {
      throw IndexError(str("index: only integers, slices (`:`), ellipsis (`...`), None and long, int or bool tensors "
                           "are valid indices (got ", py_type_name(h), ")"));
    }
  }
  int64_t nd = x.ndim();
  LUCID_CHECK(consumed <= nd, IndexError, "index: too many indices for tensor of dimension ", nd);
  ParsedIndex P;
  // Tokens of the view: x dim kept (>= 0) or a new None dim (-1).
  std::vector<int64_t> tokens;
  int64_t src = 0;
  auto add_adv = [&](const Tensor& t) {
    P.adv_dims.push_back(static_cast<int64_t>(tokens.size()) - 1);
    P.adv.push_back(t);
  };
  for (size_t k = 0; k < items.size(); ++k) {
    nb::handle h = items[k];
    if (tens[k].defined() || PyBool_Check(h.ptr())) {
      Tensor t = tens[k].defined() ? tens[k] : scalar_tensor_bool(h.ptr() == Py_True);
      if (!is_mask(t)) {
        tokens.push_back(src++);
        add_adv(t);
        continue;
      }
      if (t.ndim() == 0) {  // a 0-d mask adds a dim of size 1 (true) or 0 (false)
        bool v = t.dtype() == DType::Bool ? *t.data<bool>() : *t.data<uint8_t>() != 0;
        tokens.push_back(-1);
        add_adv(Tensor::empty({v ? 1 : 0}, DType::Int64));
        if (v) *P.adv.back().data<int64_t>() = 0;
        continue;
      }
      for (int64_t j = 0; j < t.ndim(); ++j)
        if (t.shape()[j] != x.shape()[src + j]) {
          Shape xs(x.shape().begin() + src, x.shape().end());
          throw IndexError(str("index: the shape of the mask ", shape_str(t.shape()), " at index ", j,
                               " does not match the shape of the indexed tensor ", shape_str(x.shape()),
                               " at index ", src + j));
        }
      TensorList nz = nonzero_indices(t);
      for (const Tensor& z : nz) {
        tokens.push_back(src++);
        add_adv(z);
      }
    } else if (h.is_none()) {
      tokens.push_back(-1);
    } else if (h.ptr() == Py_Ellipsis) {
      for (int64_t j = 0; j < nd - consumed; ++j) tokens.push_back(src++);
    } else if (PySlice_Check(h.ptr())) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(h.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
      LUCID_CHECK(step > 0, ValueError, "index: step must be greater than zero, got ", step);
      int64_t size = x.shape()[src];
      if (!(start == 0 && step == 1 && stop >= size)) {
        P.slice_dims.push_back(src);
        P.starts.push_back(std::clamp<int64_t>(start, INT64_MIN / 4, INT64_MAX / 4));
        P.ends.push_back(std::clamp<int64_t>(stop, INT64_MIN / 4, INT64_MAX / 4));
        P.steps.push_back(step);
      }
      tokens.push_back(src++);
    } else {  // an integer
      int64_t i = to_int64(h, "index", "index");
      int64_t size = x.shape()[src];
      LUCID_CHECK(i >= -size && i < size, IndexError, "index: index ", i, " is out of bounds for dimension ", src,
                  " with size ", size);
      P.select_dims.push_back(src++);
      P.select_idx.push_back(i);
    }
  }
  while (src < nd) tokens.push_back(src++);
  for (size_t p = 0; p < tokens.size(); ++p)
    if (tokens[p] < 0) P.new_dims.push_back(static_cast<int64_t>(p));
  P.basic_ops = !P.slice_dims.empty() || !P.select_dims.empty() || !P.new_dims.empty();
  return P;
}

Tensor apply_basic(const Tensor& x, const ParsedIndex& P) {
  Tensor t = x;
  if (!P.slice_dims.empty()) t = slice(t, P.slice_dims, P.starts, P.ends, P.steps);
  if (!P.select_dims.empty()) t = select(t, P.select_dims, P.select_idx);
  for (int64_t d : P.new_dims) t = unsqueeze(t, d);
  return t;
}

Tensor getitem(const Tensor& x, nb::handle index) {
  // Fast paths: x[int], x[slice].
  if (PyLong_Check(index.ptr()) && !PyBool_Check(index.ptr())) {
    LUCID_CHECK(x.ndim() > 0, IndexError, "index: invalid index of a 0-dim tensor");
    int64_t i = to_int64(index, "index", "index");
    int64_t size = x.shape()[0];
    LUCID_CHECK(i >= -size && i < size, IndexError, "index: index ", i, " is out of bounds for dimension 0 with size ",
                size);
    return select(x, 0, i);
  }
  ParsedIndex P = parse_index(x, index);
  Tensor t = apply_basic(x, P);
  if (!P.adv.empty()) return index_gather(t, P.adv_dims, P.adv);
  if (!P.basic_ops) return slice(x, IntList{}, IntList{}, IntList{}, IntList{});  // x[...] / x[:]: an alias
  return t;
}

// PyTorch drops leading size-1 dims of the value (x[0] = v of shape [1, 1, n]).
Tensor strip_value(Tensor v, int64_t target_ndim) {
  while (v.ndim() > target_ndim && v.shape()[0] == 1) v = reshape(v, Shape(v.shape().begin() + 1, v.shape().end()));
  return v;
}

// The region of x a basic index writes: slices, plus selected dims as slices of length 1.
struct Region {
  IntList dims, starts, ends, steps;
  Shape shape;
  Attrs attrs() const { return {{"dims", dims}, {"starts", starts}, {"ends", ends}, {"steps", steps}}; }
};

Region basic_region(const Tensor& x, const ParsedIndex& P) {
  Region R{P.slice_dims, P.starts, P.ends, P.steps, x.shape()};
  for (size_t k = 0; k < R.dims.size(); ++k) {
    int64_t size = R.shape[R.dims[k]], s = R.starts[k], e = R.ends[k];
    if (s < 0) s += size;
    if (e < 0) e += size;
    s = std::clamp<int64_t>(s, 0, size);
    e = std::max(s, std::clamp<int64_t>(e, 0, size));
    R.shape[R.dims[k]] = slice_length(s, e, R.steps[k]);
  }
  for (size_t k = 0; k < P.select_dims.size(); ++k) {
    int64_t d = P.select_dims[k], i = P.select_idx[k];
    if (i < 0) i += x.shape()[d];
    R.shape[d] = 1;
    auto it = std::lower_bound(R.dims.begin(), R.dims.end(), d);
    size_t pos = it - R.dims.begin();
    R.dims.insert(it, d);
    R.starts.insert(R.starts.begin() + pos, i);
    R.ends.insert(R.ends.begin() + pos, i + 1);
    R.steps.insert(R.steps.begin() + pos, 1);
  }
  return R;
}

void setitem(const Tensor& x, nb::handle index, nb::handle value) {
  Tensor v = to_tensor(value, "index_put", "value");
  // x[mask] = v with a bool mask over x's leading dims and a one-element v is masked_fill:
  // a where() of x's shape, so no nonzero() and no data-dependent shape (it compiles).
  if (is_tensor(index)) {
    Tensor mask = nb::cast<Tensor>(index);
    int64_t k = mask.ndim();
    if (mask.dtype() == DType::Bool && v.numel() == 1 && v.ndim() <= 1 && k > 0 && k <= x.ndim() &&
        std::equal(mask.shape().begin(), mask.shape().end(), x.shape().begin())) {
      Shape ms = mask.shape();
      ms.resize(static_cast<size_t>(x.ndim()), 1);
      copy_(x, where(reshape(mask, ms), reshape(cast(v, x.dtype()), {}), x));
      return;
    }
  }
  ParsedIndex P = parse_index(x, index);
  if (P.adv.empty()) {
    // x[basic] = v: one SliceScatter on x itself. PyTorch's overlap errors concern the region
    // written, not x: they are checked here, and SliceScatter gets a v that no longer aliases x.
    if (v.same_storage(x) || has_broadcast_dim(x)) {
      Tensor region = apply_basic(x.detach(), P);
      assert_no_internal_overlap(region, "__setitem__");
      if (v.same_storage(x)) {
        // PyTorch copies a value of the region's shape as it is; any other value is filled (0-d)
        // or broadcast first, which hides it from the check.
        if (v.shape() == region.shape()) assert_no_partial_overlap(region, v, "__setitem__");
        v = cast(v, v.dtype());
      }
    }
    Region R = basic_region(x, P);
    if (v.ndim() > 0) {
      Shape view_shape = apply_basic(x.detach(), P).shape();
      v = strip_value(v, static_cast<int64_t>(view_shape.size()));
      LUCID_CHECK(broadcasts_to(v.shape(), view_shape), ValueError, "index_put: shape mismatch: value tensor of shape ",
                  shape_str(v.shape()), " cannot be broadcast to indexing result of shape ", shape_str(view_shape));
      v = reshape(expand(v, view_shape), R.shape);
    }
    dispatch_inplace(OpId::SliceScatter, x, {x, v}, R.attrs());
    return;
  }
  Tensor t = P.basic_ops ? apply_basic(x, P) : x;
  if (v.ndim() > 0) {
    int64_t bnd = 0;
    for (const Tensor& a : P.adv) bnd = std::max(bnd, a.ndim());
    v = strip_value(v, t.ndim() - static_cast<int64_t>(P.adv.size()) + bnd);
  }
  bool grad = GradMode::is_enabled() && (x.requires_grad() || v.requires_grad());
  if (!P.basic_ops || !grad) {
    index_put_(t, P.adv_dims, P.adv, v, false);  // in place (through the view when there is one)
    return;
  }
  // With autograd, x[basic][adv] = v is x[basic] = index_put(x[basic], adv, v): one in-place op on x.
  Region R = basic_region(x, P);
  Tensor tn = index_put(t, P.adv_dims, P.adv, v, false);
  dispatch_inplace(OpId::SliceScatter, x, {x, reshape(tn, R.shape)}, R.attrs());
}

// index_put(input, indices, values, accumulate): indices apply to the leading dims; masks expand.
Tensor index_put_any(const Tensor& x, nb::handle indices, const Tensor& values, bool accumulate, bool inplace) {
  IntList dims;
  TensorList idx;
  int64_t d = 0;
  for (nb::handle h : indices) {
    Tensor t = is_tensor(h) ? nb::cast<Tensor>(h) : list_to_index(h);
    if (is_mask(t)) {
      for (const Tensor& z : nonzero_indices(t)) { dims.push_back(d++); idx.push_back(z); }
    } else {
      dims.push_back(d++);
      idx.push_back(t);
    }
  }
  if (inplace) return index_put_(x, dims, idx, values, accumulate);
  return index_put(x, dims, idx, values, accumulate);
}

}  // namespace

LUCID_BINDER(movement) {
  // ---- module functions ----
  m.def("cat", [](nb::handle ts, int64_t dim) { return cat(tensor_list(ts, "cat"), dim); }, nb::arg("tensors"), nb::arg("dim") = 0);
  m.def("stack", [](nb::handle ts, int64_t dim) { return stack(tensor_list(ts, "stack"), dim); }, nb::arg("tensors"), nb::arg("dim") = 0);
  m.def("split", [](const Tensor& x, nb::handle s, int64_t dim) { return to_tuple(split_any(x, s, dim)); },
        nb::arg("tensor"), nb::arg("split_size_or_sections"), nb::arg("dim") = 0);
  m.def("chunk", [](const Tensor& x, int64_t c, int64_t dim) { return to_tuple(chunk(x, c, dim)); },
        nb::arg("input"), nb::arg("chunks"), nb::arg("dim") = 0);
  m.def("unbind", [](const Tensor& x, int64_t dim) { return to_tuple(unbind(x, dim)); }, nb::arg("input"), nb::arg("dim") = 0);
  m.def("squeeze", &squeeze_any, nb::arg("input"), nb::arg("dim").none() = nb::none());
  m.def("unsqueeze", [](const Tensor& x, int64_t d) { return unsqueeze(x, d); }, nb::arg("input"), nb::arg("dim"));
  m.def("flatten", [](const Tensor& x, int64_t s, int64_t e) { return flatten(x, s, e); }, nb::arg("input"),
        nb::arg("start_dim") = 0, nb::arg("end_dim") = -1);
  m.def("unflatten", [](const Tensor& x, int64_t d, nb::handle s) { return unflatten(x, d, to_shape(s, "unflatten", "sizes")); },
        nb::arg("input"), nb::arg("dim"), nb::arg("sizes"));
  m.def("narrow", [](const Tensor& x, int64_t d, int64_t s, int64_t l) { return narrow(x, d, s, l); }, nb::arg("input"),
        nb::arg("dim"), nb::arg("start"), nb::arg("length"));
  m.def("select", [](const Tensor& x, int64_t d, int64_t i) { return select(x, d, i); }, nb::arg("input"), nb::arg("dim"), nb::arg("index"));
  m.def("transpose", [](const Tensor& x, int64_t a, int64_t b) { return transpose(x, a, b); }, nb::arg("input"), nb::arg("dim0"), nb::arg("dim1"));
  m.def("permute", [](const Tensor& x, nb::handle d) { return permute(x, to_shape(d, "permute", "dims")); }, nb::arg("input"), nb::arg("dims"));
  m.def("reshape", [](const Tensor& x, nb::handle s) { return reshape(x, to_shape(s, "reshape", "shape")); }, nb::arg("input"), nb::arg("shape"));
  m.def("t", [](const Tensor& x) {
    LUCID_CHECK(x.ndim() <= 2, ValueError, "t: expects a tensor with <= 2 dimensions, but self is ", x.ndim(), "D");
    return x.ndim() == 2 ? transpose(x, 0, 1) : slice(x, IntList{}, IntList{}, IntList{}, IntList{});
  }, nb::arg("input"));
  m.def("movedim", [](const Tensor& x, nb::handle s, nb::handle d) {
    return movedim(x, to_shape(s, "movedim", "source"), to_shape(d, "movedim", "destination"));
  }, nb::arg("input"), nb::arg("source"), nb::arg("destination"));
  m.def("gather", [](const Tensor& x, int64_t d, const Tensor& i) { return gather(x, d, i); }, nb::arg("input"), nb::arg("dim"), nb::arg("index"));
  m.def("index_select", [](const Tensor& x, int64_t d, const Tensor& i) { return index_select(x, d, i); },
        nb::arg("input"), nb::arg("dim"), nb::arg("index"));
  m.def("scatter_add", [](const Tensor& x, int64_t d, const Tensor& i, const Tensor& s) { return scatter_add(x, d, i, s); },
        nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::arg("src"));
  m.def("scatter", [](const Tensor& x, int64_t d, const Tensor& i, nb::handle src, nb::handle value) {
    return scatter_any(x, d, i, src, value, false, "scatter");
  }, nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::arg("src").none() = nb::none(), nb::arg("value").none() = nb::none());
  m.def("flip", [](const Tensor& x, nb::handle d) { return flip(x, to_shape(d, "flip", "dims")); }, nb::arg("input"), nb::arg("dims"));
  m.def("roll", [](const Tensor& x, nb::handle s, nb::handle d) {
    return roll(x, to_shape(s, "roll", "shifts"), opt_dims(d, "roll"));
  }, nb::arg("input"), nb::arg("shifts"), nb::arg("dims").none() = nb::none());
  m.def("tril", [](const Tensor& x, int64_t k) { return tril(x, k); }, nb::arg("input"), nb::arg("diagonal") = 0);
  m.def("triu", [](const Tensor& x, int64_t k) { return triu(x, k); }, nb::arg("input"), nb::arg("diagonal") = 0);
  m.def("tile", [](const Tensor& x, nb::handle d) { return tile(x, to_shape(d, "tile", "dims")); }, nb::arg("input"), nb::arg("dims"));
  m.def("masked_select", [](const Tensor& x, const Tensor& mk) { return masked_select(x, mk); }, nb::arg("input"), nb::arg("mask"));
  m.def("index_put", [](const Tensor& x, nb::handle idx, nb::handle v, bool acc) {
    return index_put_any(x, idx, to_tensor(v, "index_put", "values"), acc, false);
  }, nb::arg("input"), nb::arg("indices"), nb::arg("values"), nb::arg("accumulate") = false);
  m.def("_pad", [](const Tensor& x, nb::handle p, const std::string& mode, nb::handle value) {
    double v = 0;
    if (!value.is_none()) v = nb::cast<double>(value.attr("__float__")());
    return pad(x, to_shape(p, "pad", "pad"), mode, v);
  }, nb::arg("input"), nb::arg("pad"), nb::arg("mode") = "constant", nb::arg("value").none() = nb::none());
  m.def("_slice_scatter", [](const Tensor& base, const Tensor& src, int64_t dim, nb::handle start, nb::handle end, int64_t step) {
    int64_t s = start.is_none() ? 0 : to_int64(start, "slice_scatter", "start"), e = end.is_none() ? INT64_MAX / 4 : to_int64(end, "slice_scatter", "end");
    return slice_scatter(base, src, IntList{dim}, IntList{s}, IntList{e}, IntList{step});
  }, nb::arg("input"), nb::arg("src"), nb::arg("dim") = 0, nb::arg("start").none() = nb::none(),
     nb::arg("end").none() = nb::none(), nb::arg("step") = 1);

  m.def("tensor_split", [](const Tensor& x, nb::handle s, int64_t dim) { return to_tuple(tensor_split_any(x, s, dim)); },
        nb::arg("input"), nb::arg("indices_or_sections"), nb::arg("dim") = 0);
  m.def("rot90", [](const Tensor& x, int64_t k, nb::handle dims) { return rot90(x, k, to_shape(dims, "rot90", "dims")); },
        nb::arg("input"), nb::arg("k") = 1, nb::arg("dims") = nb::make_tuple(0, 1));
  m.def("take_along_dim", &take_along_dim_any, nb::arg("input"), nb::arg("indices"), nb::arg("dim").none() = nb::none());
  m.def("index_add", [](const Tensor& x, int64_t d, const Tensor& i, const Tensor& s, double alpha) {
    return index_add(x, d, i, s, alpha);
  }, nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::arg("source"), nb::kw_only(), nb::arg("alpha") = 1.0);

  m.def("diagonal", [](const Tensor& x, int64_t o, int64_t a, int64_t b) { return diagonal(x, o, a, b); },
        nb::arg("input"), nb::arg("offset") = 0, nb::arg("dim1") = 0, nb::arg("dim2") = 1);
  m.def("diag", [](const Tensor& x, int64_t k) { return diag(x, k); }, nb::arg("input"), nb::arg("diagonal") = 0);
  m.def("diag_embed", [](const Tensor& x, int64_t o, int64_t a, int64_t b) { return diag_embed(x, o, a, b); },
        nb::arg("input"), nb::arg("offset") = 0, nb::arg("dim1") = -2, nb::arg("dim2") = -1);
  m.def("repeat_interleave", [](const Tensor& x, nb::handle r, nb::handle dim, nb::handle) {
    return repeat_interleave_any(x, r, dim);
  }, nb::arg("input"), nb::arg("repeats").none() = nb::none(), nb::arg("dim").none() = nb::none(), nb::kw_only(),
     nb::arg("output_size").none() = nb::none());
  m.def("nonzero", &nonzero_any, nb::arg("input"), nb::kw_only(), nb::arg("as_tuple") = false);
  m.def("argwhere", [](const Tensor& x) { return nonzero(x); }, nb::arg("input"));
  m.def("take", [](const Tensor& x, const Tensor& i) { return take(x, i); }, nb::arg("input"), nb::arg("index"));
  m.def("broadcast_to", [](const Tensor& x, nb::handle s) { return expand(x, to_shape(s, "broadcast_to", "size")); },
        nb::arg("input"), nb::arg("size"));
  m.def("broadcast_shapes", [](nb::args shapes) {
    std::vector<Shape> ss;
    for (nb::handle h : shapes) ss.push_back(to_shape(h, "broadcast_shapes", "shapes"));
    nb::list l;
    for (int64_t d : broadcast_all(ss)) l.append(d);
    return nb::tuple(l);
  });
  m.def("broadcast_tensors", [](nb::args ts) {
    TensorList xs = ts.size() == 1 && !is_tensor(ts[0]) ? tensor_list(ts[0], "broadcast_tensors") : tensor_list(ts, "broadcast_tensors");
    std::vector<Shape> ss;
    for (const Tensor& t : xs) ss.push_back(t.shape());
    Shape b = broadcast_all(ss);
    TensorList out;
    for (const Tensor& t : xs) out.push_back(expand(t, b));
    return to_tuple(out);
  });

  m.def("index_fill", [](const Tensor& x, int64_t d, const Tensor& i, nb::handle v) { return index_fill_any(x, d, i, v, false); },
        nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::arg("value"));
  m.def("select_scatter", [](const Tensor& x, const Tensor& src, int64_t dim, int64_t index) {
    int64_t d = wrap_dim(dim, x.ndim(), "select_scatter");
    int64_t size = x.shape()[d];
    LUCID_CHECK(index >= -size && index < size, IndexError, "select_scatter: index ", index,
                " is out of bounds for dimension ", d, " with size ", size);
    if (index < 0) index += size;
    Shape want = x.shape();
    want.erase(want.begin() + d);
    LUCID_CHECK(src.shape() == want, ValueError, "select_scatter: argument 'src' expected shape ", shape_str(want),
                ", got ", shape_str(src.shape()));
    return slice_scatter(x, unsqueeze(src, d), IntList{d}, IntList{index}, IntList{index + 1}, IntList{1});
  }, nb::arg("input"), nb::arg("src"), nb::arg("dim"), nb::arg("index"));

  // ---- Tensor methods ----
  def_method(m, "index_fill", [](const Tensor& x, int64_t d, const Tensor& i, nb::handle v) {
    return index_fill_any(x, d, i, v, false);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("value"));
  def_method(m, "index_fill_", [](const Tensor& x, int64_t d, const Tensor& i, nb::handle v) {
    return index_fill_any(x, d, i, v, true);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("value"));
  def_method(m, "diagonal", [](const Tensor& x, int64_t o, int64_t a, int64_t b) { return diagonal(x, o, a, b); },
             nb::arg("offset") = 0, nb::arg("dim1") = 0, nb::arg("dim2") = 1);
  def_method(m, "diag", [](const Tensor& x, int64_t k) { return diag(x, k); }, nb::arg("diagonal") = 0);
  def_method(m, "diag_embed", [](const Tensor& x, int64_t o, int64_t a, int64_t b) { return diag_embed(x, o, a, b); },
             nb::arg("offset") = 0, nb::arg("dim1") = -2, nb::arg("dim2") = -1);
  def_method(m, "repeat_interleave", [](const Tensor& x, nb::handle r, nb::handle dim, nb::handle) {
    return repeat_interleave_any(x, r, dim);
  }, nb::arg("repeats").none() = nb::none(), nb::arg("dim").none() = nb::none(), nb::kw_only(),
     nb::arg("output_size").none() = nb::none());
  def_method(m, "nonzero", &nonzero_any, nb::kw_only(), nb::arg("as_tuple") = false);
  def_method(m, "argwhere", [](const Tensor& x) { return nonzero(x); });
  def_method(m, "take", [](const Tensor& x, const Tensor& i) { return take(x, i); }, nb::arg("index"));
  def_method(m, "broadcast_to", [](const Tensor& x, nb::handle s) { return expand(x, to_shape(s, "broadcast_to", "size")); },
             nb::arg("size"));
  def_method(m, "tensor_split", [](const Tensor& x, nb::handle s, int64_t dim) { return to_tuple(tensor_split_any(x, s, dim)); },
             nb::arg("indices_or_sections"), nb::arg("dim") = 0);
  def_method(m, "rot90", [](const Tensor& x, int64_t k, nb::handle dims) { return rot90(x, k, to_shape(dims, "rot90", "dims")); },
             nb::arg("k") = 1, nb::arg("dims") = nb::make_tuple(0, 1));
  def_method(m, "take_along_dim", &take_along_dim_any, nb::arg("indices"), nb::arg("dim").none() = nb::none());
  def_method(m, "index_add", [](const Tensor& x, int64_t d, const Tensor& i, const Tensor& s, double alpha) {
    return index_add(x, d, i, s, alpha);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("source"), nb::kw_only(), nb::arg("alpha") = 1.0);
  def_method(m, "index_add_", [](Tensor& x, int64_t d, const Tensor& i, const Tensor& s, double alpha) {
    index_add_(x, d, i, s, alpha);
    return x;
  }, nb::arg("dim"), nb::arg("index"), nb::arg("source"), nb::kw_only(), nb::arg("alpha") = 1.0);
  def_method(m, "_mv_view", [](const Tensor& x, nb::args s) { return view(x, sizes_arg(s, "view", "size")); });
  def_method(m, "_mv_view_as", [](const Tensor& x, const Tensor& o) { return view(x, o.shape()); });
  def_method(m, "_mv_t", [](const Tensor& x) {
    LUCID_CHECK(x.ndim() <= 2, ValueError, "t: expects a tensor with <= 2 dimensions, but self is ", x.ndim(), "D");
    return x.ndim() == 2 ? transpose(x, 0, 1) : slice(x, IntList{}, IntList{}, IntList{}, IntList{});
  });
  def_method(m, "flatten", [](const Tensor& x, int64_t s, int64_t e) { return flatten(x, s, e); }, nb::arg("start_dim") = 0, nb::arg("end_dim") = -1);
  def_method(m, "unflatten", [](const Tensor& x, int64_t d, nb::handle s) { return unflatten(x, d, to_shape(s, "unflatten", "sizes")); },
             nb::arg("dim"), nb::arg("sizes"));
  def_method(m, "squeeze", &squeeze_any, nb::arg("dim").none() = nb::none());
  def_method(m, "unsqueeze", [](const Tensor& x, int64_t d) { return unsqueeze(x, d); }, nb::arg("dim"));
  def_method(m, "narrow", [](const Tensor& x, int64_t d, int64_t s, int64_t l) { return narrow(x, d, s, l); },
             nb::arg("dim"), nb::arg("start"), nb::arg("length"));
  def_method(m, "select", [](const Tensor& x, int64_t d, int64_t i) { return select(x, d, i); }, nb::arg("dim"), nb::arg("index"));
  def_method(m, "swapaxes", [](const Tensor& x, int64_t a, int64_t b) { return transpose(x, a, b); }, nb::arg("axis0"), nb::arg("axis1"));
  def_method(m, "swapdims", [](const Tensor& x, int64_t a, int64_t b) { return transpose(x, a, b); }, nb::arg("dim0"), nb::arg("dim1"));
  def_method(m, "movedim", [](const Tensor& x, nb::handle s, nb::handle d) {
    return movedim(x, to_shape(s, "movedim", "source"), to_shape(d, "movedim", "destination"));
  }, nb::arg("source"), nb::arg("destination"));
  def_method(m, "split", [](const Tensor& x, nb::handle s, int64_t dim) { return to_tuple(split_any(x, s, dim)); },
             nb::arg("split_size"), nb::arg("dim") = 0);
  def_method(m, "chunk", [](const Tensor& x, int64_t c, int64_t dim) { return to_tuple(chunk(x, c, dim)); }, nb::arg("chunks"), nb::arg("dim") = 0);
  def_method(m, "unbind", [](const Tensor& x, int64_t dim) { return to_tuple(unbind(x, dim)); }, nb::arg("dim") = 0);
  def_method(m, "unfold", [](const Tensor& x, int64_t d, int64_t s, int64_t st) { return unfold(x, d, s, st); },
             nb::arg("dimension"), nb::arg("size"), nb::arg("step"));
  def_method(m, "gather", [](const Tensor& x, int64_t d, const Tensor& i) { return gather(x, d, i); }, nb::arg("dim"), nb::arg("index"));
  def_method(m, "index_select", [](const Tensor& x, int64_t d, const Tensor& i) { return index_select(x, d, i); }, nb::arg("dim"), nb::arg("index"));
  def_method(m, "scatter_add", [](const Tensor& x, int64_t d, const Tensor& i, const Tensor& s) { return scatter_add(x, d, i, s); },
             nb::arg("dim"), nb::arg("index"), nb::arg("src"));
  def_method(m, "scatter_add_", [](Tensor& x, int64_t d, const Tensor& i, const Tensor& s) {
    dispatch_inplace(OpId::ScatterAdd, x, {x, i, s}, {{"dim", d}});
    return x;
  }, nb::arg("dim"), nb::arg("index"), nb::arg("src"));
  def_method(m, "scatter", [](const Tensor& x, int64_t d, const Tensor& i, nb::handle src, nb::handle value) {
    return scatter_any(x, d, i, src, value, false, "scatter");
  }, nb::arg("dim"), nb::arg("index"), nb::arg("src").none() = nb::none(), nb::arg("value").none() = nb::none());
  def_method(m, "scatter_", [](Tensor& x, int64_t d, const Tensor& i, nb::handle src, nb::handle value) {
    Tensor s;
    if (!src.is_none() && is_tensor(src)) {
      s = nb::cast<Tensor>(src);
    } else {
      Tensor sv = to_tensor(src.is_none() ? value : src, "scatter_", "value");
      s = expand(cast(sv, x.dtype()), i.shape());
    }
    dispatch_inplace(OpId::Scatter, x, {x, i, s}, {{"dim", d}});
    return x;
  }, nb::arg("dim"), nb::arg("index"), nb::arg("src").none() = nb::none(), nb::arg("value").none() = nb::none());
  def_method(m, "flip", [](const Tensor& x, nb::args d) { return flip(x, sizes_arg(d, "flip", "dims")); });
  def_method(m, "roll", [](const Tensor& x, nb::handle s, nb::handle d) {
    return roll(x, to_shape(s, "roll", "shifts"), opt_dims(d, "roll"));
  }, nb::arg("shifts"), nb::arg("dims").none() = nb::none());
  def_method(m, "tril", [](const Tensor& x, int64_t k) { return tril(x, k); }, nb::arg("diagonal") = 0);
  def_method(m, "triu", [](const Tensor& x, int64_t k) { return triu(x, k); }, nb::arg("diagonal") = 0);
  def_method(m, "tril_", [](Tensor& x, int64_t k) { dispatch_inplace(OpId::Tril, x, {x}, {{"diagonal", k}}); return x; }, nb::arg("diagonal") = 0);
  def_method(m, "triu_", [](Tensor& x, int64_t k) { dispatch_inplace(OpId::Triu, x, {x}, {{"diagonal", k}}); return x; }, nb::arg("diagonal") = 0);
  def_method(m, "repeat", [](const Tensor& x, nb::args r) { return repeat(x, sizes_arg(r, "repeat", "repeats")); });
  def_method(m, "tile", [](const Tensor& x, nb::args r) { return tile(x, sizes_arg(r, "tile", "dims")); });
  def_method(m, "masked_select", [](const Tensor& x, const Tensor& mk) { return masked_select(x, mk); }, nb::arg("mask"));
  def_method(m, "index_put", [](const Tensor& x, nb::handle idx, nb::handle v, bool acc) {
    return index_put_any(x, idx, to_tensor(v, "index_put", "values"), acc, false);
  }, nb::arg("indices"), nb::arg("values"), nb::arg("accumulate") = false);
  def_method(m, "index_put_", [](Tensor& x, nb::handle idx, nb::handle v, bool acc) {
    index_put_any(x, idx, to_tensor(v, "index_put_", "values"), acc, true);
    return x;
  }, nb::arg("indices"), nb::arg("values"), nb::arg("accumulate") = false);
  def_method(m, "__getitem__", &getitem, nb::arg("index").none());
  def_method(m, "__setitem__", &setitem, nb::arg("index").none(), nb::arg("value").none());
}

}  // namespace lucid::py
