// CUDA kernels of Softmax and LogSoftmax (records in ops/nn_softmax.cpp) over the [outer, n, inner]
// view of the softmax dim. One read pass keeps an online state per row (running max m and the sum
// s of exp(x - m), rescaled when m grows), one pass writes. Contiguous rows (inner == 1) get a
// group of 1..256 threads each (merged through shared memory); strided rows (inner > 1) a thread
// each, adjacent threads on adjacent columns. The results match the CPU's two-pass kernel
// (backends/cpu/kernels/softmax.cpp) in every special case: the max propagates NaN, an all -inf row
// uses max 0 (so softmax is NaN, as PyTorch), and a +inf element makes the row NaN (exp(inf - inf)).
// exp and the max are in the compute type (float for float/16-bit inputs); the sum is in double,
// so long rows lose nothing to the accumulation.
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

template <class T, bool Log>
__global__ void softmax_rows_kernel(const T* x, T* y, int64_t outer, int64_t n, int group) {
  using C = compute_t<T>;
  __shared__ Online<C> sm[kReduceThreads];
  const int64_t o = static_cast<int64_t>(blockIdx.x) * (kReduceThreads / group) + threadIdx.x / group;
  const int lane = threadIdx.x % group;
  Online<C> st{static_cast<C>(-INFINITY), 0.0};
  const T* xr = x + o * n;
  if (o < outer)
    for (int64_t k = lane; k < n; k += group) online_step(st, load(xr, k));
  sm[threadIdx.x] = st;
  __syncthreads();
  for (int w = group / 2; w > 0; w /= 2) {
    if (lane < w) {
      Online<C> a = sm[threadIdx.x];
      Online<C> b = sm[threadIdx.x + w];
      online_merge(a, b.m, b.s);
      sm[threadIdx.x] = a;
    }
    __syncthreads();
  }
  if (o >= outer) return;
  st = sm[threadIdx.x - lane];
  T* yr = y + o * n;
  for (int64_t k = lane; k < n; k += group) softmax_write<T, Log>(xr, yr, k, st);
}

template <class T, bool Log>
__global__ void softmax_cols_kernel(const T* x, T* y, int64_t rows, int64_t n, int64_t inner) {
  using C = compute_t<T>;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rows) return;
  const int64_t base = (t / inner) * n * inner + t % inner;
  Online<C> st{static_cast<C>(-INFINITY), 0.0};
  for (int64_t k = 0; k < n; ++k) online_step(st, load(x, base + k * inner));
  for (int64_t k = 0; k < n; ++k) softmax_write<T, Log>(x, y, base + k * inner, st);
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
  cudaStream_t stream = current_stream(o.device());
  LUCID_DISPATCH_FLOATING(x.dtype(), name, [&] {
    const scalar_t* xp = x.data<scalar_t>();
    scalar_t* yp = o.data<scalar_t>();
    if (r.inner == 1) {
      const int group = r.n >= 1024 ? 256 : r.n >= 128 ? 32 : r.n >= 16 ? 8 : 1;
      const int64_t rows_per_block = kReduceThreads / group;
      softmax_rows_kernel<scalar_t, Log><<<grid_for(r.outer, static_cast<int>(rows_per_block)), kReduceThreads, 0, stream>>>(
          xp, yp, r.outer, r.n, group);
    } else {
      softmax_cols_kernel<scalar_t, Log><<<grid_for(r.count(), 256), 256, 0, stream>>>(xp, yp, r.count(), r.n, r.inner);
    }
    check_launch(name);
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Softmax, CUDA, softmax_kernel<false>);
LUCID_REGISTER_KERNEL(LogSoftmax, CUDA, softmax_kernel<true>);

}  // namespace lucid::cuda
