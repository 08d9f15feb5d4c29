// CUDA kernels of the extremum reductions and their masks (records in ops/reduce_minmax.cpp):
// Amax/Amin, MaxDim/MinDim, Argmax/Argmin on the row-reduction driver (reduce_driver.cuh), and
// ReduceEqMask and IndexMask. As on the CPU (backends/cpu/kernels/reduce_minmax.cpp): NaN wins
// (the first NaN's index), and among equal values the first index is selected; the driver merges
// interleaved partial states, so the (value, index) merge breaks ties by the smaller index. Empty
// reductions never get here (the records' infer raises).
#include "lucid/backends/cuda/kernels/reduce_driver.cuh"

namespace lucid::cuda {

namespace {

template <class T, bool IsMax>
struct ExtR {
  using C = compute_t<T>;
  struct S {
    C v;
    int64_t i;
  };
  T* vals;
  int64_t* idx;
  // Whether b replaces a: b is NaN and a is not, or b is strictly better, or equal (both NaN
  // included) with a smaller index.
  __device__ static bool takes(const S& b, const S& a) {
    if (b.i < 0) return false;
    if (a.i < 0) return true;
    bool an = is_nan_v(a.v), bn = is_nan_v(b.v);
    if (an || bn) return an && bn ? b.i < a.i : bn;
    if (b.v == a.v) return b.i < a.i;
    return IsMax ? b.v > a.v : b.v < a.v;
  }
  __device__ S init() const { return {C(0), -1}; }
  __device__ void step(S& s, C v, int64_t k) const {
    S b{v, k};
    if (takes(b, s)) s = b;
  }
  __device__ void merge(S& a, const S& b) const {
    if (takes(b, a)) a = b;
  }
  __device__ void write(const S& s, int64_t o) const {
    if (vals) store(vals, o, s.v);
    if (idx) idx[o] = s.i;
  }
};

template <bool IsMax>
void run_ext(const Tensor& x, const IntList& dims, const Tensor* vals, const Tensor* idx, const char* op) {
  const Device dev = (vals ? vals : idx)->device();
  DeviceGuard g(dev);
  RowLayout L = row_layout(x, dims);
  LUCID_DISPATCH_ALL(x.dtype(), op, [&] {
    launch_reduce<scalar_t>(L, ExtR<scalar_t, IsMax>{vals ? vals->data<scalar_t>() : nullptr,
                                                     idx ? idx->data<int64_t>() : nullptr}, dev, op);
  });
}

// ---- Amax / Amin ------------------------------------------------------------------------------------
template <class T, bool IsMax>
struct AmaxR {
  using C = compute_t<T>;
  using S = C;
  T* out;
  __device__ S init() const { return ext_identity<C, IsMax>(); }
  __device__ void step(S& s, C v, int64_t) const { s = ext_select<C, IsMax>(v, s); }
  __device__ void merge(S& a, const S& b) const { a = ext_select<C, IsMax>(b, a); }
  __device__ void write(const S& s, int64_t o) const { store(out, o, s); }
};

template <bool IsMax>
void amax_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const char* name = IsMax ? "amax" : "amin";
  DeviceGuard g(out[0].device());
  RowLayout L = row_layout(in[0], reduce_attr_dims(a, in[0].ndim(), name));
  LUCID_DISPATCH_ALL(in[0].dtype(), name, [&] {
    launch_reduce<scalar_t>(L, AmaxR<scalar_t, IsMax>{out[0].data<scalar_t>()}, out[0].device(), name);
  });
}

// ---- MaxDim / MinDim, Argmax / Argmin ---------------------------------------------------------------
template <bool IsMax>
void max_dim_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const char* name = IsMax ? "max" : "min";
  run_ext<IsMax>(in[0], index_reduce_dims(a, in[0].ndim(), name), &out[0], &out[1], name);
}

template <bool IsMax>
void argmax_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const char* name = IsMax ? "argmax" : "argmin";
  run_ext<IsMax>(in[0], index_reduce_dims(a, in[0].ndim(), name), nullptr, &out[0], name);
}

// ---- Masks -------------------------------------------------------------------------------------------
// out[i] = 1 where x[i] equals the reduced value r[i] (both NaN counts as equal), else 0; x and r
// contiguous of x's shape.
template <class T, class O>
__global__ void eq_mask_kernel(const T* x, const T* r, O* out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  using C = compute_t<T>;
  C a = load(x, i), b = load(r, i);
  bool eq = a == b || (is_nan_v(a) && is_nan_v(b));
  store(out, i, static_cast<compute_t<O>>(eq ? 1.0f : 0.0f));
}

// t broadcast to `shape` (right-aligned, size-1 dims repeated) as a stride-0 view.
Tensor broadcast_view(const Tensor& t, const Shape& shape) {
  const int64_t nd = static_cast<int64_t>(shape.size()), lead = nd - t.ndim();
  Strides st(nd, 0);
  for (int64_t d = 0; d < t.ndim(); ++d)
    st[lead + d] = t.shape()[d] == 1 && shape[lead + d] != 1 ? 0 : t.strides()[d];
  return Tensor::make_view(t, shape, st, t.offset());
}

void reduce_eq_mask_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  const Tensor& o = out[0];
  const int64_t n = o.numel();
  if (n == 0) return;
  DeviceGuard g(o.device());
  Tensor x = in[0].contiguous_data();
  Tensor r = broadcast_view(in[1], x.shape()).contiguous_data();
  // The output may be a strided destination: compute contiguously, then copy.
  Tensor dst = o.is_contiguous() ? o : Tensor::empty(o.shape(), o.dtype(), o.device());
  cudaStream_t stream = current_stream(o.device());
  LUCID_DISPATCH_ALL(x.dtype(), "reduce_eq_mask", [&] {
    using T = scalar_t;
    LUCID_DISPATCH_FLOATING(o.dtype(), "reduce_eq_mask", [&] {
      eq_mask_kernel<T, scalar_t><<<blocks_covering(n, 256), 256, 0, stream>>>(x.data<T>(), r.data<T>(), dst.data<scalar_t>(), n);
      check_launch("reduce_eq_mask");
    });
  });
  if (!(dst == o)) copy_on_device(o, dst);
}

// out (zeroed, [outer, n, inner]) gets 1 at (r, idx[r, j], j). The indices come from
// max/min(dim) (IndexMask is their VJP), so they are in range; unlike the CPU, an index out of
// range is skipped rather than raised, which would need a device-to-host read and a sync.
template <class O>
__global__ void index_mask_kernel(const int64_t* idx, O* out, int64_t outer, int64_t n, int64_t inner) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= outer * inner) return;
  const int64_t r = t / inner, j = t % inner, k = idx[t];
  if (k >= 0 && k < n) store(out, (r * n + k) * inner + j, compute_t<O>(1.0f));
}

void index_mask_host(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  LUCID_CHECK(o.is_contiguous(), Error, "index_mask: the output must be contiguous");
  if (o.numel() == 0) return;
  DeviceGuard g(o.device());
  cudaStream_t stream = current_stream(o.device());
  check_cuda(cudaMemsetAsync(o.data_ptr(), 0, o.numel() * itemsize(o.dtype()), stream), "index_mask: cudaMemsetAsync");
  Tensor idx = in[0].contiguous_data();
  int64_t nd = o.ndim();
  const DimRows rows = dim_rows(o.shape(), nd > 0 ? wrap_dim(a.i("dim"), nd, "index_mask") : 0);
  const int64_t outer = rows.outer, n = rows.n, inner = rows.inner;
  LUCID_DISPATCH_FLOATING(o.dtype(), "index_mask", [&] {
    index_mask_kernel<scalar_t><<<blocks_covering(outer * inner, 256), 256, 0, stream>>>(idx.data<int64_t>(), o.data<scalar_t>(),
                                                                                  outer, n, inner);
    check_launch("index_mask");
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Amax, CUDA, amax_kernel<true>);
LUCID_REGISTER_KERNEL(Amin, CUDA, amax_kernel<false>);
LUCID_REGISTER_KERNEL(MaxDim, CUDA, max_dim_kernel<true>);
LUCID_REGISTER_KERNEL(MinDim, CUDA, max_dim_kernel<false>);
LUCID_REGISTER_KERNEL(Argmax, CUDA, argmax_kernel<true>);
LUCID_REGISTER_KERNEL(Argmin, CUDA, argmax_kernel<false>);
LUCID_REGISTER_KERNEL(ReduceEqMask, CUDA, reduce_eq_mask_kernel);
LUCID_REGISTER_KERNEL(IndexMask, CUDA, index_mask_host);

}  // namespace lucid::cuda
