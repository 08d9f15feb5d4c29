// CUDA kernels of the indexing ops (records in ops/index_ops.cpp): Gather,
// Scatter, ScatterAdd, IndexGather / IndexPut (advanced indexing), with the CPU
// kernels' geometry (backends/cpu/kernels/index.cpp, ops/index_layout.h). Every index is checked
// on the device before anything is written (index_check.cuh: one stream synchronisation per op)
// and a bad one raises the CPU's IndexError. Negative indices: gather/scatter reject them as the
// CPU; advanced indexing wraps them.
//
// Duplicate indices: ScatterAdd and IndexPut(accumulate=True) add with atomics, so floating sums
// come in an unspecified order (bits may differ from the CPU's sequential order, as torch's CUDA);
// Scatter and IndexPut(accumulate=False) store one of the duplicates' values, unspecified which
// (the CPU keeps the last; torch leaves it undefined).
#include "lucid/backends/cuda/cuda_dtype.cuh"
#include "lucid/backends/cuda/index_check.cuh"
#include "lucid/backends/cuda/launch_geometry.cuh"
#include "lucid/backends/cuda/offset_calculator.cuh"
#include "lucid/backends/cuda/stream.h"
#include "lucid/backends/cuda/strided_move.h"
#include "lucid/ops/index_layout.h"
#include "lucid/ops/movement_util.h"

namespace lucid::cuda {

namespace {

// Runs launch(offset calculator, n) over shape walked through N operands' element strides, with
// 32-bit offsets when they fit.
template <int N, class Launch>
void with_indexer(const Shape& shape, const std::array<const Strides*, N>& st, const Launch& launch) {
  with_offset_calculator<N>(strided_geometry<N>(shape, st, "cuda indexing"), launch);
}

// The contiguous int64 copy of a gather/scatter index, checked against `size` (no negatives).
Tensor dim_index(const Tensor& index, int64_t size, int64_t dim, const char* op) {
  Tensor ix;
  int64_t bad = 0;
  bool ok = checked_index(index, size, false, ix, bad);
  LUCID_CHECK(ok, IndexError, op, ": index ", bad, " is out of bounds for dimension ", dim, " with size ", size);
  return ix;
}

// t's strides with the `dim` entry zeroed: that dim's offset comes from the index value instead.
Strides without_dim(const Tensor& t, int64_t dim) {
  Strides s = t.strides();
  s[dim] = 0;
  return s;
}

// ---- Gather / Scatter ---------------------------------------------------------------------
// Positions p of the index's shape (row-major, so idx[p] is its value): off[0] in the written
// tensor, off[1] in the read one, the indexed dim's stride entry zeroed in the indexed operand.
template <class U, class Index>
__global__ void gather_kernel(U* o, const U* x, const int64_t* idx, OffsetCalculator<2, Index> ix, Index n, int64_t xs) {
  LUCID_GRID_LOOP(Index, p, n) {
    Index off[2];
    ix.get(p, off);
    o[off[0]] = x[off[1] + idx[p] * xs];
  }
}

template <class T, bool Add, class Index>
__global__ void scatter_kernel(T* o, const T* s, const int64_t* idx, OffsetCalculator<2, Index> ix, Index n, int64_t os) {
  LUCID_GRID_LOOP(Index, p, n) {
    Index off[2];
    ix.get(p, off);
    T* t = o + off[0] + idx[p] * os;
    if constexpr (Add) atomic_accumulate(t, s[off[1]]);
    else *t = s[off[1]];
  }
}

void gather_kernel_fn(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor x = as_1d_if_scalar(in[0]);
  int64_t dim = wrap_dim(a.i("dim"), x.ndim(), "gather");
  Tensor ix = as_1d_if_scalar(dim_index(in[1], x.shape()[dim], dim, "gather"));
  Tensor o = as_1d_if_scalar(out[0]);
  if (o.numel() == 0) return;
  DeviceGuard g(o.device());
  cudaStream_t s = current_stream(o.device());
  Strides xst = without_dim(x, dim);
  by_width(x.dtype(), [&](auto tag) {
    using U = decltype(tag);
    with_indexer<2>(ix.shape(), {&o.strides(), &xst}, [&](auto ixr, auto n) {
      gather_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<U*>(o.data_ptr()), static_cast<const U*>(x.data_ptr()),
                                                         ix.data<int64_t>(), ixr, n, x.strides()[dim]);
    });
  });
  check_launch("gather_kernel");
}

template <bool Add>
void scatter_into(const TensorList& in, const TensorList& out, const Attrs& a, const char* op) {
  const Tensor& o0 = out[0];
  int64_t dim = wrap_dim(a.i("dim"), std::max<int64_t>(o0.ndim(), 1), op);
  Tensor ix = as_1d_if_scalar(dim_index(in[1], as_1d_if_scalar(o0).shape()[dim], dim, op));  // before any write
  bool inplace = same_view(o0, in[0]);
  Tensor srcv = in[2];
  if (srcv.same_storage(o0)) {  // read the source before writing
    srcv = Tensor::empty(in[2].shape(), in[2].dtype(), in[2].device());
    strided_copy(srcv, in[2]);
  }
  if (!inplace) strided_copy(o0, in[0]);
  Tensor o = as_1d_if_scalar(o0), sv = as_1d_if_scalar(srcv);
  if (ix.numel() == 0) return;
  DeviceGuard g(o.device());
  cudaStream_t s = current_stream(o.device());
  Strides ost = without_dim(o, dim);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    with_indexer<2>(ix.shape(), {&ost, &sv.strides()}, [&](auto ixr, auto n) {
      scatter_kernel<T, Add><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(o.data_ptr()), static_cast<const T*>(sv.data_ptr()),
                                                                  ix.data<int64_t>(), ixr, n, o.strides()[dim]);
    });
  };
  if constexpr (Add) {
    LUCID_DISPATCH_ALL(o.dtype(), op, [&] { run(device_t<scalar_t>{}); });
  } else {
    by_width(o.dtype(), run);
  }
  check_launch("scatter_kernel");
}

void scatter_add_kernel(const TensorList& in, const TensorList& out, const Attrs& a) { scatter_into<true>(in, out, a, "scatter_add"); }
void scatter_plain_kernel(const TensorList& in, const TensorList& out, const Attrs& a) { scatter_into<false>(in, out, a, "scatter"); }

// ---- IndexGather / IndexPut ---------------------------------------------------------------
// b[j] += (idx[j] wrapped) * stride for each broadcast position j of one index tensor, checked.
template <class Index>
__global__ void adv_offsets_kernel(int64_t* b, const char* idx, DType dt, int isz, OffsetCalculator<1, Index> ix, Index nb,
                                   int64_t size, int64_t stride, bool first, int64_t which, BadIndexRecord* bad) {
  LUCID_GRID_LOOP(Index, j, nb) {
    Index off[1];
    ix.get(j, off);
    int64_t v = load_index(idx + static_cast<int64_t>(off[0]) * isz, dt);
    int64_t d = 0;
    if (v >= -size && v < size) d = (v < 0 ? v + size : v) * stride;
    else record_bad_index(bad, v, which);
    b[j] = first ? d : b[j] + d;
  }
}

// The geometry of t[idx] as the CPU's AdvTables, on the device: the [outer, B, inner] positions'
// offsets are outer(r / nb) + b[r % nb] + inner(i), outer and inner from indexers over the
// non-indexed dims, b a device table of the summed index offsets.
struct AdvGeometry {
  Shape outer_shape, inner_shape;
  Strides outer_strides, inner_strides;
  Tensor b;  // int64 [nb]
  int64_t nb = 0, no = 0, ni = 0;
};

AdvGeometry adv_geometry(const Tensor& t, const IntList& dims, const TensorList& idx, const AdvLayout& L, const char* op) {
  AdvGeometry G;
  for (size_t k = 0; k < L.rest.size(); ++k) {
    int64_t d = L.rest[k];
    bool before = static_cast<int64_t>(k) < L.pos;
    (before ? G.outer_shape : G.inner_shape).push_back(t.shape()[d]);
    (before ? G.outer_strides : G.inner_strides).push_back(t.strides()[d]);
  }
  G.nb = numel_of(L.B);
  G.no = numel_of(G.outer_shape);
  G.ni = numel_of(G.inner_shape);
  const Device dev = t.device();
  G.b = Tensor::empty({G.nb}, DType::Int64, dev);
  if (G.nb == 0) return G;
  BadIndexFlag flag(dev);
  cudaStream_t s = current_stream(dev);
  for (size_t k = 0; k < dims.size(); ++k) {
    const Tensor& ix = idx[k];
    int64_t off = static_cast<int64_t>(L.B.size()) - ix.ndim();
    Strides bst(L.B.size(), 0);
    for (int64_t d = 0; d < ix.ndim(); ++d) bst[d + off] = ix.shape()[d] == 1 ? 0 : ix.strides()[d];
    const char* base = static_cast<const char*>(ix.data_ptr());
    int isz = static_cast<int>(itemsize(ix.dtype()));
    int64_t size = t.shape()[dims[k]], stride = t.strides()[dims[k]];
    with_indexer<1>(L.B, {&bst}, [&](auto ixr, auto n) {
      adv_offsets_kernel<<<grid_for(n), kThreads, 0, s>>>(G.b.data<int64_t>(), base, ix.dtype(), isz, ixr, n, size, stride,
                                                             k == 0, static_cast<int64_t>(k), flag.get());
    });
    check_launch("adv_offsets_kernel");
  }
  int64_t v = 0, which = 0;
  LUCID_CHECK(!flag.fetch(v, which), IndexError, op, ": index ", v, " is out of bounds for dimension ", dims[which],
              " with size ", t.shape()[dims[which]]);
  return G;
}

// Element e of the [outer, B, inner] result: its offset in the indexed tensor.
template <class Index>
struct AdvAddress {
  OffsetCalculator<1, Index> outer, inner;
  const int64_t* b;
  int64_t nb, ni;
  __device__ int64_t operator()(int64_t e) const {
    int64_t r = e / ni, i = e - r * ni;
    int64_t oj = r / nb, jb = r - oj * nb;
    Index oo[1], io[1];
    outer.get(static_cast<Index>(oj), oo);
    inner.get(static_cast<Index>(i), io);
    return static_cast<int64_t>(oo[0]) + b[jb] + static_cast<int64_t>(io[0]);
  }
};

template <class U, class Index>
__global__ void index_gather_kernel(U* o, const U* x, AdvAddress<Index> at, int64_t n) {
  LUCID_GRID_LOOP(int64_t, e, n) o[e] = x[at(e)];
}

template <class T, bool Acc, class Index>
__global__ void index_put_kernel(T* o, const T* v, int64_t vs, AdvAddress<Index> at, int64_t n) {
  LUCID_GRID_LOOP(int64_t, e, n) {
    T* q = o + at(e);
    if constexpr (Acc) atomic_accumulate(q, v[e * vs]);
    else *q = v[e * vs];
  }
}

// Runs launch(AdvAddress) with 32-bit outer/inner offsets when they fit.
template <class Launch>
void with_address(const AdvGeometry& G, const Launch& launch) {
  const Geometry go = strided_geometry<1>(G.outer_shape, {&G.outer_strides}, "index");
  const Geometry gi = strided_geometry<1>(G.inner_shape, {&G.inner_strides}, "index");
  if (go.fits_32bit && gi.fits_32bit)
    launch(AdvAddress<uint32_t>{OffsetCalculator<1, uint32_t>(go), OffsetCalculator<1, uint32_t>(gi), G.b.data<int64_t>(), G.nb, G.ni});
  else
    launch(AdvAddress<int64_t>{OffsetCalculator<1, int64_t>(go), OffsetCalculator<1, int64_t>(gi), G.b.data<int64_t>(), G.nb, G.ni});
}

void index_gather_fn(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  const IntList& dims = a.ints("dims");
  TensorList idx(in.begin() + 1, in.end());
  AdvLayout L = adv_layout(x.shape(), dims, idx, "index");
  DeviceGuard g(x.device());
  AdvGeometry G = adv_geometry(x, dims, idx, L, "index");
  const Tensor& o = out[0];  // contiguous: [outer, B, inner]
  const int64_t n = G.no * G.nb * G.ni;
  if (n == 0) return;
  cudaStream_t s = current_stream(x.device());
  by_width(x.dtype(), [&](auto tag) {
    using U = decltype(tag);
    with_address(G, [&](auto at) {
      index_gather_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<U*>(o.data_ptr()), static_cast<const U*>(x.data_ptr()), at, n);
    });
  });
  check_launch("index_gather_kernel");
}

void index_put_fn(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  const IntList& dims = a.ints("dims");
  bool acc = a.b("accumulate");
  TensorList idx(in.begin() + 2, in.end());
  AdvLayout L = adv_layout(o.shape(), dims, idx, "index_put");
  DeviceGuard g(o.device());
  AdvGeometry G = adv_geometry(o, dims, idx, L, "index_put");  // validates before anything is written
  // Values broadcast to x[idx]'s shape in o's dtype (a copy: it may alias o); one value is read
  // once (vs = 0 over it).
  int64_t vs = in[1].numel() == 1 ? 0 : 1;
  Tensor v = Tensor::empty(vs ? L.out : Shape{}, o.dtype(), o.device());
  strided_copy(v, vs ? in[1] : Tensor::make_view(in[1], {}, {}, in[1].offset()));
  if (!same_view(o, in[0])) strided_copy(o, in[0]);
  const int64_t n = G.no * G.nb * G.ni;
  if (n == 0) return;
  cudaStream_t s = current_stream(o.device());
  auto run = [&](auto tag, auto acc_tag) {
    using T = decltype(tag);
    constexpr bool Acc = decltype(acc_tag)::value;
    with_address(G, [&](auto at) {
      index_put_kernel<T, Acc><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(o.data_ptr()), static_cast<const T*>(v.data_ptr()),
                                                                    vs, at, n);
    });
  };
  if (acc) {
    LUCID_DISPATCH_ALL(o.dtype(), "index_put", [&] { run(device_t<scalar_t>{}, std::true_type{}); });
  } else {
    by_width(o.dtype(), [&](auto tag) { run(tag, std::false_type{}); });
  }
  check_launch("index_put_kernel");
}

}  // namespace

LUCID_REGISTER_KERNEL(Gather, CUDA, gather_kernel_fn);
LUCID_REGISTER_KERNEL(ScatterAdd, CUDA, scatter_add_kernel);
LUCID_REGISTER_KERNEL(Scatter, CUDA, scatter_plain_kernel);
LUCID_REGISTER_KERNEL(IndexGather, CUDA, index_gather_fn);
LUCID_REGISTER_KERNEL(IndexPut, CUDA, index_put_fn);

}  // namespace lucid::cuda
