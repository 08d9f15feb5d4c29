// CPU kernels of the indexing ops (records in ops/index_ops.cpp): Gather, ScatterAdd, Scatter
// and IndexGather / IndexPut (advanced indexing). Kernels precompute offset tables so the inner
// copy is a flat loop; index values are checked serially before any parallel region, and before
// anything is written.
#include <algorithm>
#include <cstring>

#include "lucid/backends/cpu/strided_copy.h"
#include "lucid/ops/index_layout.h"

namespace lucid::cpu {

namespace {

// ---- Gather / Scatter ---------------------------------------------------------------------
// Geometry shared by gather and scatter: index positions split into [outer, J, inner] around
// `dim`; offset tables of the outer and inner positions in a target tensor's strides.
struct DimIndexGeom {
  int64_t dim = 0, outer = 1, J = 1, inner = 1;
};

DimIndexGeom dim_geom(const Tensor& index, int64_t dim) {
  DimIndexGeom g;
  g.dim = dim;
  for (int64_t d = 0; d < index.ndim(); ++d) {
    if (d < dim) g.outer *= index.shape()[d];
    else if (d > dim) g.inner *= index.shape()[d];
  }
  g.J = index.shape()[dim];
  return g;
}

void split_tables(const Tensor& index, const Tensor& target, int64_t dim, std::vector<int64_t>& outer,
                  std::vector<int64_t>& inner) {
  Shape os(index.shape().begin(), index.shape().begin() + dim), is(index.shape().begin() + dim + 1, index.shape().end());
  Strides ost(target.strides().begin(), target.strides().begin() + dim),
      ist(target.strides().begin() + dim + 1, target.strides().end());
  outer = offset_table(os, ost);
  inner = offset_table(is, ist);
}

// Checks every index value against `size`; returns the contiguous index as int64.
Tensor checked_index(const Tensor& index, int64_t size, int64_t dim, const char* op, bool allow_negative) {
  Tensor ix = Tensor::empty(index.shape(), DType::Int64);
  strided_copy(ix, index);
  int64_t* p = ix.data<int64_t>();
  for (int64_t i = 0, n = ix.numel(); i < n; ++i) {
    int64_t v = p[i];
    LUCID_CHECK((v >= 0 || (allow_negative && v >= -size)) && v < size, IndexError, op, ": index ", v,
                " is out of bounds for dimension ", dim, " with size ", size);
    if (v < 0) p[i] = v + size;
  }
  return ix;
}

void gather_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor x = as_1d_if_scalar(in[0]);
  int64_t dim = wrap_dim(a.i("dim"), x.ndim(), "gather");
  Tensor ix = as_1d_if_scalar(checked_index(in[1], x.shape()[dim], dim, "gather", false));
  Tensor o = as_1d_if_scalar(out[0]);
  if (o.numel() == 0) return;
  DimIndexGeom g = dim_geom(ix, dim);
  std::vector<int64_t> xo, xi, oo, oi;
  split_tables(ix, x, dim, xo, xi);
  split_tables(ix, o, dim, oo, oi);
  const int64_t* idx = ix.data<int64_t>();
  int64_t xs = x.strides()[dim], os = o.strides()[dim];
  by_itemsize(x.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(x.data_ptr());
    U* dst = static_cast<U*>(o.data_ptr());
    parallel_for(0, g.outer * g.J, std::max<int64_t>(1, kParallelGrain / g.inner), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t oj = r / g.J, j = r % g.J;
        const int64_t* row = idx + r * g.inner;
        for (int64_t i = 0; i < g.inner; ++i)
          dst[oo[oj] + j * os + oi[i]] = src[xo[oj] + row[i] * xs + xi[i]];
      }
    });
  });
}

template <bool Add>
void scatter_into(const TensorList& in, const TensorList& out, const Attrs& a, const char* op) {
  const Tensor& o0 = out[0];
  bool inplace = o0.same_storage(in[0]) && o0.offset() == in[0].offset() && o0.strides() == in[0].strides();
  Tensor srcv = in[2];
  if (srcv.same_storage(o0)) {  // read the source before writing
    srcv = Tensor::empty(in[2].shape(), in[2].dtype());
    strided_copy(srcv, in[2]);
  }
  if (!inplace) strided_copy(o0, in[0]);
  Tensor o = as_1d_if_scalar(o0), s = as_1d_if_scalar(srcv);
  int64_t dim = wrap_dim(a.i("dim"), o.ndim(), op);
  Tensor ix = as_1d_if_scalar(checked_index(in[1], o.shape()[dim], dim, op, false));
  if (ix.numel() == 0) return;
  DimIndexGeom g = dim_geom(ix, dim);
  std::vector<int64_t> so, si, oo, oi;
  split_tables(ix, s, dim, so, si);
  split_tables(ix, o, dim, oo, oi);
  const int64_t* idx = ix.data<int64_t>();
  int64_t ss = s.strides()[dim], os = o.strides()[dim];
  // Positions of different (outer, inner) never collide, so the outer loop can be parallel.
  auto run = [&](auto tag, auto combine) {
    using T = typename decltype(tag)::type;
    const T* src = static_cast<const T*>(s.data_ptr());
    T* dst = static_cast<T*>(o.data_ptr());
    parallel_for(0, g.outer, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(g.J * g.inner, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t oj = b; oj < e; ++oj)
        for (int64_t j = 0; j < g.J; ++j) {
          const int64_t* row = idx + (oj * g.J + j) * g.inner;
          for (int64_t i = 0; i < g.inner; ++i) {
            T& t = dst[oo[oj] + row[i] * os + oi[i]];
            t = combine(t, src[so[oj] + j * ss + si[i]]);
          }
        }
    });
  };
  if constexpr (Add) {
    LUCID_DISPATCH_ALL(o.dtype(), op, [&] {
      run(std::type_identity<scalar_t>{}, [](scalar_t acc, scalar_t v) {
        if constexpr (std::is_same_v<scalar_t, bool>) return static_cast<bool>(acc || v);
        else return static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(acc) + static_cast<compute_t<scalar_t>>(v));
      });
    });
  } else {
    by_itemsize(o.dtype(), [&](auto tag) {
      using U = typename decltype(tag)::type;
      run(tag, [](U, U v) { return v; });
    });
  }
}

void scatter_add_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  scatter_into<true>(in, out, a, "scatter_add");
}
void scatter_kernel(const TensorList& in, const TensorList& out, const Attrs& a) { scatter_into<false>(in, out, a, "scatter"); }

// ---- IndexGather / IndexPut ---------------------------------------------------------------
// Offsets (in t's elements, relative to t's data) of the [outer, B, inner] positions of t[idx].
struct AdvTables {
  std::vector<int64_t> outer, b, inner;
  bool inner_contiguous = false;  // inner[i] == i: rows copy with memcpy
};

AdvTables adv_tables(const Tensor& t, const IntList& dims, const TensorList& idx, const AdvLayout& L,
                            const char* op) {
  AdvTables T;
  Shape os, is;
  Strides ost, ist;
  for (size_t k = 0; k < L.rest.size(); ++k) {
    int64_t d = L.rest[k];
    (static_cast<int64_t>(k) < L.pos ? os : is).push_back(t.shape()[d]);
    (static_cast<int64_t>(k) < L.pos ? ost : ist).push_back(t.strides()[d]);
  }
  T.outer = offset_table(os, ost);
  T.inner = offset_table(is, ist);
  T.inner_contiguous = true;
  for (size_t i = 0; i < T.inner.size() && T.inner_contiguous; ++i) T.inner_contiguous = T.inner[i] == static_cast<int64_t>(i);
  int64_t nb = numel_of(L.B);
  T.b.assign(static_cast<size_t>(nb), 0);
  for (size_t k = 0; k < dims.size(); ++k) {
    const Tensor& ix = idx[k];
    int64_t off = static_cast<int64_t>(L.B.size()) - ix.ndim();
    Strides bst(L.B.size(), 0);
    for (int64_t d = 0; d < ix.ndim(); ++d) bst[d + off] = ix.shape()[d] == 1 ? 0 : ix.strides()[d];
    std::vector<int64_t> pos = offset_table(L.B, bst);
    const char* base = static_cast<const char*>(ix.data_ptr());
    int64_t isz = static_cast<int64_t>(itemsize(ix.dtype()));
    int64_t size = t.shape()[dims[k]], stride = t.strides()[dims[k]];
    for (int64_t j = 0; j < nb; ++j) {
      int64_t v = read_index(base + pos[j] * isz, ix.dtype());
      LUCID_CHECK(v >= -size && v < size, IndexError, op, ": index ", v, " is out of bounds for dimension ",
                  dims[k], " with size ", size);
      T.b[j] += (v < 0 ? v + size : v) * stride;
    }
  }
  return T;
}

void index_gather_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  const IntList& dims = a.ints("dims");
  TensorList idx(in.begin() + 1, in.end());
  AdvLayout L = adv_layout(x.shape(), dims, idx, "index");
  AdvTables T = adv_tables(x, dims, idx, L, "index");
  const Tensor& o = out[0];  // contiguous: [outer, B, inner]
  int64_t nb = static_cast<int64_t>(T.b.size()), ni = static_cast<int64_t>(T.inner.size());
  int64_t rows = static_cast<int64_t>(T.outer.size()) * nb;
  if (rows * ni == 0) return;
  by_itemsize(x.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(x.data_ptr());
    U* dst = static_cast<U*>(o.data_ptr());
    parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / ni), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const U* s = src + T.outer[r / nb] + T.b[r % nb];
        U* q = dst + r * ni;
        if (T.inner_contiguous) std::memcpy(q, s, ni * sizeof(U));
        else for (int64_t i = 0; i < ni; ++i) q[i] = s[T.inner[i]];
      }
    });
  });
}

void index_put_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  const IntList& dims = a.ints("dims");
  bool acc = a.b("accumulate");
  TensorList idx(in.begin() + 2, in.end());
  AdvLayout L = adv_layout(o.shape(), dims, idx, "index_put");
  AdvTables T = adv_tables(o, dims, idx, L, "index_put");  // validates before anything is written
  // Values broadcast to x[idx]'s shape in o's dtype (a copy: it may alias o); one value is
  // read once (vs = 0 strides over it).
  int64_t vs = in[1].numel() == 1 ? 0 : 1;
  Tensor v = Tensor::empty(vs ? L.out : Shape{}, o.dtype());
  strided_copy(v, vs ? in[1] : Tensor::make_view(in[1], {}, {}, in[1].offset()));
  bool inplace = o.same_storage(in[0]) && o.offset() == in[0].offset() && o.strides() == in[0].strides();
  if (!inplace) strided_copy(o, in[0]);
  int64_t nb = static_cast<int64_t>(T.b.size()), ni = static_cast<int64_t>(T.inner.size());
  int64_t rows = static_cast<int64_t>(T.outer.size()) * nb;
  if (rows * ni == 0) return;
  if (!acc) {
    by_itemsize(o.dtype(), [&](auto tag) {
      using U = typename decltype(tag)::type;
      const U* src = v.data<U>();
      U* dst = static_cast<U*>(o.data_ptr());
      parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / ni), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          U* q = dst + T.outer[r / nb] + T.b[r % nb];
          const U* s = src + r * ni * vs;
          if (T.inner_contiguous && vs) std::memcpy(q, s, ni * sizeof(U));
          else for (int64_t i = 0; i < ni; ++i) q[T.inner[i]] = s[i * vs];
        }
      });
    });
    return;
  }
  // Accumulate: repeated indices add up, so rows run in order on one thread.
  LUCID_DISPATCH_ALL(o.dtype(), "index_put", [&] {
    using C = compute_t<scalar_t>;
    const scalar_t* src = v.data<scalar_t>();
    scalar_t* dst = static_cast<scalar_t*>(o.data_ptr());
    for (int64_t r = 0; r < rows; ++r) {
      scalar_t* q = dst + T.outer[r / nb] + T.b[r % nb];
      const scalar_t* s = src + r * ni * vs;
      for (int64_t i = 0; i < ni; ++i) {
        scalar_t& t = q[T.inner[i]];
        if constexpr (std::is_same_v<scalar_t, bool>) t = t || s[i * vs];
        else t = static_cast<scalar_t>(static_cast<C>(t) + static_cast<C>(s[i * vs]));
      }
    }
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Gather, CPU, gather_kernel);
LUCID_REGISTER_KERNEL(ScatterAdd, CPU, scatter_add_kernel);
LUCID_REGISTER_KERNEL(Scatter, CPU, scatter_kernel);
LUCID_REGISTER_KERNEL(IndexGather, CPU, index_gather_kernel);
LUCID_REGISTER_KERNEL(IndexPut, CPU, index_put_kernel);

}  // namespace lucid::cpu
