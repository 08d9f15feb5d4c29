// Extremum reductions: Amax/Amin (over dims, gradient shared evenly between ties, as PyTorch),
// MaxDim/MinDim (values + indices along one dim, gradient to the selected element), Argmax/
// Argmin (non-differentiable), and the two mask ops their VJPs are written with: ReduceEqMask
// (x == reduced value) and IndexMask (one-hot of indices along a dim). NaN wins, as in PyTorch;
// among equal values the first index is selected.
#include <cstring>

#include "lucid/ops/reduce.h"
#include "lucid/ops/reduce_util.h"

namespace lucid {

template <class T, bool IsMax>
struct ExtR {
  using C = compute_t<T>;
  struct S {
    C v;
    int64_t i;
  };
  T* vals;
  int64_t* idx;
  static bool better(C v, C cur) {
    if (is_nan_v(cur)) return false;
    if (is_nan_v(v)) return true;
    return IsMax ? v > cur : v < cur;
  }
  S init() const { return {C(0), -1}; }
  void step(S& s, C v, int64_t k) const {
    if (s.i < 0 || better(v, s.v)) { s.v = v; s.i = k; }
  }
  // Column fast path: branch-free compare-select on value and index arrays.
  void cols(S* st, const T* p, int64_t r, int64_t stride, int64_t w) const {
    if (r == 0) return;
    C bv[kReduceCols];
    int64_t bi[kReduceCols];
    for (int64_t j = 0; j < w; ++j) { bv[j] = static_cast<C>(p[j]); bi[j] = 0; }
    for (int64_t k = 1; k < r; ++k) {
      const T* row = p + k * stride;
      for (int64_t j = 0; j < w; ++j) {
        C v = static_cast<C>(row[j]);
        bool take = IsMax ? v > bv[j] : v < bv[j];
        if constexpr (std::is_floating_point_v<C>) take = (take || v != v) && bv[j] == bv[j];
        bv[j] = take ? v : bv[j];
        bi[j] = take ? k : bi[j];
      }
    }
    for (int64_t j = 0; j < w; ++j) merge(st[j], S{bv[j], bi[j]});
  }
  void merge(S& a, const S& b) const {
    if (b.i >= 0 && (a.i < 0 || better(b.v, a.v))) a = b;
  }
  void write(const S& s, int64_t o) const {
    if (vals) vals[o] = static_cast<T>(s.v);
    if (idx) idx[o] = s.i;
  }
};

template <bool IsMax>
static void run_ext(const Tensor& x, const IntList& dims, const Tensor* vals, const Tensor* idx, const char* op) {
  RowLayout L = row_layout(x, dims);
  LUCID_DISPATCH_ALL(x.dtype(), op, [&] {
    run_reduce<scalar_t>(L, ExtR<scalar_t, IsMax>{vals ? vals->data<scalar_t>() : nullptr,
                                                  idx ? idx->data<int64_t>() : nullptr});
  });
}

static void check_nonempty(const Tensor& x, const IntList& dims, const char* op) {
  for (int64_t d : dims)
    LUCID_CHECK(x.shape()[d] != 0, IndexError, op, ": expected reduction dim ", d,
                " to have non-zero size (the operation has no identity), got shape ", shape_str(x.shape()));
}

static Tensor keep(const Tensor& g, const Shape& s, const IntList& dims, bool keepdim) {
  return keepdim ? g : reshape(g, reduced_shape(s, dims, true));
}

// ---- Amax / Amin ------------------------------------------------------------------------------------
template <class T, bool IsMax>
struct AmaxR {
  using C = compute_t<T>;
  using S = C;
  T* out;
  S init() const { return ext_identity<C, IsMax>(); }
  void step(S& s, C v, int64_t) const { s = ext_select<C, IsMax>(v, s); }
  void row(S& s, const T* p, int64_t, int64_t n) const { s = ext_select<C, IsMax>(ext_span<T, IsMax>(p, n), s); }
  void merge(S& a, const S& b) const { a = ext_select<C, IsMax>(b, a); }
  void write(const S& s, int64_t o) const { out[o] = static_cast<T>(s); }
};

template <bool IsMax>
static OpDef amax_op() {
  OpDef d;
  static const char* name = IsMax ? "amax" : "amin";
  d.num_inputs = 1;
  d.save = kSaveInputs | kSaveOutputs;
  d.infer = [](const TensorList& in, const Attrs& a) {
    IntList dims = reduce_dims(a.ints("dims"), in[0].ndim(), name);
    check_nonempty(in[0], dims, name);
    return std::vector<TensorMeta>{{reduced_shape(in[0].shape(), dims, a.b("keepdim")), in[0].dtype()}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    RowLayout L = row_layout(in[0], reduce_dims(a.ints("dims"), in[0].ndim(), name));
    LUCID_DISPATCH_ALL(in[0].dtype(), name, [&] { run_reduce<scalar_t>(L, AmaxR<scalar_t, IsMax>{out[0].data<scalar_t>()}); });
  };
  d.vjp = [](const VjpContext& c) {
    const Shape& s = c.input_meta[0].shape;
    IntList dims = reduce_dims(c.attrs.ints("dims"), static_cast<int64_t>(s.size()), name);
    bool kd = c.attrs.b("keepdim");
    const Tensor& g = c.grads[0];
    Tensor mask = dispatch1(OpId::ReduceEqMask, {c.inputs[0], keep(c.outputs[0], s, dims, kd)}, {{"dtype", g.dtype()}});
    Tensor count = sum(mask, dims, true);
    return TensorList{div(mul(keep(g, s, dims, kd), mask), count)};
  };
  return d;
}

LUCID_REGISTER_OP(Amax, "dims:ints, keepdim:bool", amax_op<true>());
LUCID_REGISTER_OP(Amin, "dims:ints, keepdim:bool", amax_op<false>());

Tensor amax(const Tensor& x, const IntList& dims, bool keepdim) {
  return dispatch1(OpId::Amax, {x}, {{"dims", dims}, {"keepdim", keepdim}});
}
Tensor amin(const Tensor& x, const IntList& dims, bool keepdim) {
  return dispatch1(OpId::Amin, {x}, {{"dims", dims}, {"keepdim", keepdim}});
}

// ---- MaxDim / MinDim ----------------------------------------------------------------------------------
template <bool IsMax>
static OpDef max_dim_op() {
  OpDef d;
  static const char* name = IsMax ? "max" : "min";
  d.num_inputs = 1;
  d.save = kSaveOutputs;
  d.unsaved_outputs = {0};  // the VJP reads the indices only (as PyTorch)
  d.infer = [](const TensorList& in, const Attrs& a) {
    IntList dims = reduce_dims({a.i("dim")}, in[0].ndim(), name);
    check_nonempty(in[0], dims, name);
    Shape s = reduced_shape(in[0].shape(), dims, a.b("keepdim"));
    return std::vector<TensorMeta>{{s, in[0].dtype()}, {s, DType::Int64}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    run_ext<IsMax>(in[0], reduce_dims({a.i("dim")}, in[0].ndim(), name), &out[0], &out[1], name);
  };
  d.vjp = [](const VjpContext& c) {
    const Shape& s = c.input_meta[0].shape;
    int64_t nd = static_cast<int64_t>(s.size());
    IntList dims = reduce_dims({c.attrs.i("dim")}, nd, name);
    bool kd = c.attrs.b("keepdim");
    const Tensor& g = c.grads[0];
    Tensor idx = keep(c.outputs[1], s, dims, kd);
    Tensor mask = dispatch1(OpId::IndexMask, {idx},
                            {{"dim", dims.empty() ? int64_t{0} : dims[0]}, {"shape", s}, {"dtype", g.dtype()}});
    return TensorList{mul(keep(g, s, dims, kd), mask)};
  };
  return d;
}

LUCID_REGISTER_OP(MaxDim, "dim:int, keepdim:bool", max_dim_op<true>());
LUCID_REGISTER_OP(MinDim, "dim:int, keepdim:bool", max_dim_op<false>());

std::pair<Tensor, Tensor> max_dim(const Tensor& x, int64_t dim, bool keepdim) {
  TensorList r = dispatch(OpId::MaxDim, {x}, {{"dim", dim}, {"keepdim", keepdim}});
  return {r[0], r[1]};
}
std::pair<Tensor, Tensor> min_dim(const Tensor& x, int64_t dim, bool keepdim) {
  TensorList r = dispatch(OpId::MinDim, {x}, {{"dim", dim}, {"keepdim", keepdim}});
  return {r[0], r[1]};
}

// ---- Argmax / Argmin -------------------------------------------------------------------------------
template <bool IsMax>
static OpDef argmax_op() {
  OpDef d;
  static const char* name = IsMax ? "argmax" : "argmin";
  d.num_inputs = 1;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs& a) {
    IntList dims = a.has("dim") ? reduce_dims({a.i("dim")}, in[0].ndim(), name) : reduce_dims({}, in[0].ndim(), name);
    if (!a.has("dim"))
      LUCID_CHECK(in[0].numel() != 0, IndexError, name, ": expected a non-empty tensor (the operation has no identity)");
    check_nonempty(in[0], dims, name);
    return std::vector<TensorMeta>{{reduced_shape(in[0].shape(), dims, a.b("keepdim")), DType::Int64}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    IntList dims = a.has("dim") ? reduce_dims({a.i("dim")}, in[0].ndim(), name) : reduce_dims({}, in[0].ndim(), name);
    run_ext<IsMax>(in[0], dims, nullptr, &out[0], name);
  };
  return d;
}

LUCID_REGISTER_OP(Argmax, "dim:int?, keepdim:bool", argmax_op<true>());
LUCID_REGISTER_OP(Argmin, "dim:int?, keepdim:bool", argmax_op<false>());

static Tensor arg_ext(OpId id, const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  Attrs a{{"keepdim", keepdim}};
  if (dim) a.set("dim", *dim);
  return dispatch1(id, {x}, a);
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return arg_ext(OpId::Argmax, x, dim, keepdim); }
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return arg_ext(OpId::Argmin, x, dim, keepdim); }

// ---- Masks -------------------------------------------------------------------------------------------
LUCID_REGISTER_OP(ReduceEqMask, "dtype:dtype", [] {
  OpDef d;
  d.num_inputs = 2;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs& a) {
    Shape b = broadcast_shapes(in[0].shape(), in[1].shape(), "reduce_eq_mask");
    LUCID_CHECK(b == in[0].shape() && in[0].dtype() == in[1].dtype(), ValueError,
                "reduce_eq_mask: the reference must broadcast to the input's shape and have its dtype");
    return std::vector<TensorMeta>{{in[0].shape(), a.dtype("dtype")}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs&) {
    const Tensor& o = out[0];
    cpu::StridedIter it({&o, &in[0], &in[1]});
    LUCID_DISPATCH_ALL(in[0].dtype(), "reduce_eq_mask", [&] {
      using T = scalar_t;
      using C = compute_t<T>;
      LUCID_DISPATCH_FLOATING(o.dtype(), "reduce_eq_mask", [&] {
        using O = scalar_t;
        it.for_each([](char** p, const int64_t* s, int64_t n) {
          for (int64_t i = 0; i < n; ++i) {
            C x = static_cast<C>(*reinterpret_cast<const T*>(p[1] + i * s[1]));
            C r = static_cast<C>(*reinterpret_cast<const T*>(p[2] + i * s[2]));
            bool eq = x == r || (is_nan_v(x) && is_nan_v(r));
            *reinterpret_cast<O*>(p[0] + i * s[0]) = static_cast<O>(eq ? 1.0f : 0.0f);
          }
        });
      });
    });
  };
  return d;
}());

LUCID_REGISTER_OP(IndexMask, "dim:int, shape:ints, dtype:dtype", [] {
  OpDef d;
  d.num_inputs = 1;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Shape& s = a.ints("shape");
    LUCID_CHECK(in[0].dtype() == DType::Int64, TypeError, "index_mask: indices must be int64");
    int64_t nd = static_cast<int64_t>(s.size());
    if (nd > 0) {
      IntList dims{wrap_dim(a.i("dim"), nd, "index_mask")};
      LUCID_CHECK(in[0].shape() == reduced_shape(s, dims, true), ValueError, "index_mask: indices of shape ",
                  shape_str(in[0].shape()), " do not match ", shape_str(s));
    }
    return std::vector<TensorMeta>{{s, a.dtype("dtype")}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const Tensor& o = out[0];
    std::memset(o.data_ptr(), 0, o.numel() * itemsize(o.dtype()));
    Tensor idx = in[0].contiguous_data();
    const int64_t* ip = idx.data<int64_t>();
    int64_t nd = o.ndim(), dim = nd > 0 ? wrap_dim(a.i("dim"), nd, "index_mask") : 0;
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t i = 0; i < nd; ++i) {
      if (i < dim) outer *= o.shape()[i];
      else if (i == dim) n = o.shape()[i];
      else inner *= o.shape()[i];
    }
    LUCID_DISPATCH_FLOATING(o.dtype(), "index_mask", [&] {
      scalar_t* op = o.data<scalar_t>();
      for (int64_t r = 0; r < outer; ++r)
        for (int64_t j = 0; j < inner; ++j) {
          int64_t k = ip[r * inner + j];
          LUCID_CHECK(k >= 0 && k < n, IndexError, "index_mask: index ", k, " is out of range for size ", n);
          op[(r * n + k) * inner + j] = static_cast<scalar_t>(1.0f);
        }
    });
  };
  return d;
}());

}  // namespace lucid
