// CUDA kernels of Softmax and LogSoftmax (records in ops/nn_softmax.cpp) over the [outer, n, inner]
// view of the softmax dim: one read pass keeps an online state per row (running max m and the sum
// s of exp(x - m), rescaled when m grows), run on the row-reduction driver (reduce_driver.cuh: any
// geometry, long rows split across blocks); then one elementwise pass writes. The results match
// the CPU's two-pass kernel (backends/cpu/kernels/softmax.cpp) in every special case: the max
// propagates NaN, an all -inf row uses max 0 (so softmax is NaN, as PyTorch), and a +inf element
// makes the row NaN (exp(inf - inf)). exp and the max are in the compute type (float for
// float/16-bit inputs); the sum is in double, so long rows lose nothing to the accumulation.
#include <cmath>

#include "lucid/backends/cuda/kernels/reduce_driver.cuh"

namespace lucid::cuda {

namespace {

template <class C>
struct Online {
  C m;
  double s;
};

// exp(a - m), with a == -inf contributing 0 (also when m == -inf).
template <class C>
__device__ inline C exp_from(C a, C m) {
  return a == -INFINITY ? C(0) : exp(a - m);
}

// (m, s) + (b_m, b_s): the new max propagates NaN; both sums are rescaled to it.
template <class C>
__device__ inline void online_merge(Online<C>& a, C bm, double bs) {
  C m = ext_select<C, true>(bm, a.m);
  a.s = a.s * static_cast<double>(exp_from(a.m, m)) + bs * static_cast<double>(exp_from(bm, m));
  a.m = m;
}

template <class C>
__device__ inline void online_step(Online<C>& a, C v) {
  C m = ext_select<C, true>(v, a.m);
  a.s = a.s * static_cast<double>(exp_from(a.m, m)) + static_cast<double>(exp_from(v, m));
  a.m = m;
}

// Writes element p of a row from the row's final state.
template <class T, bool Log>
__device__ inline void softmax_write(const T* x, T* y, int64_t p, Online<compute_t<T>> st) {
  using C = compute_t<T>;
  C mx = st.m == -INFINITY ? C(0) : st.m;
  C v = load(x, p), sum = static_cast<C>(st.s);
  if constexpr (Log) store(y, p, (v - mx) - log(sum));  // torch's order: exact for huge |x|
  else store(y, p, exp(v - mx) * (C(1) / sum));
}

// The online state of every row, as a Reducer of the row-reduction driver (which picks the
// geometry: row groups, column tiles, split long rows).
template <class T>
struct OnlineR {
  using C = compute_t<T>;
  using S = Online<C>;
  S* out;
  __device__ S init() const { return {static_cast<C>(-INFINITY), 0.0}; }
  __device__ void step(S& s, C v, int64_t) const { online_step(s, v); }
  __device__ void merge(S& a, const S& b) const { online_merge(a, b.m, b.s); }
  __device__ void write(const S& s, int64_t o) const { out[o] = s; }
};

// Element i of [outer, n, inner] belongs to row (i / (n * inner)) * inner + i % inner.
template <class T, bool Log>
__global__ void softmax_write_kernel(const T* x, T* y, const Online<compute_t<T>>* st, int64_t total, int64_t n,
                                     int64_t inner) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  softmax_write<T, Log>(x, y, i, st[(i / (n * inner)) * inner + i % inner]);
}

template <bool Log>
void softmax_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const char* name = Log ? "log_softmax" : "softmax";
  const Tensor& o = out[0];
  LUCID_CHECK(o.is_contiguous(), Error, name, ": the output must be contiguous");
  DeviceGuard g(o.device());
  Tensor x = in[0].contiguous_data();
  if (x.numel() == 0) return;
  DimRows r = dim_rows(x.shape(), x.ndim() == 0 ? 0 : wrap_dim(a.i("dim"), x.ndim(), name));
  RowLayout L;
  L.data = x;
  L.outer = r.outer;
  L.r = r.n;
  L.inner = r.inner;
  cudaStream_t stream = current_stream(o.device());
  LUCID_DISPATCH_FLOATING(x.dtype(), name, [&] {
    using S = Online<compute_t<scalar_t>>;
    Tensor states = Tensor::empty({r.count() * static_cast<int64_t>(sizeof(S))}, DType::UInt8, o.device());
    S* sp = reinterpret_cast<S*>(states.data_ptr());
    launch_reduce<scalar_t>(L, OnlineR<scalar_t>{sp}, o.device(), name);
    softmax_write_kernel<scalar_t, Log><<<blocks_covering(x.numel(), 256), 256, 0, stream>>>(x.data<scalar_t>(), o.data<scalar_t>(),
                                                                                     sp, x.numel(), r.n, r.inner);
    check_launch(name);
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Softmax, CUDA, softmax_kernel<false>);
LUCID_REGISTER_KERNEL(LogSoftmax, CUDA, softmax_kernel<true>);

}  // namespace lucid::cuda
