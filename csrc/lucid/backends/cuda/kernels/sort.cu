// CUDA kernels of the sort family (records in ops/sort_ops.cpp): Sort, TopK, Median (all elements)
// and MedianDim. Every row of the sort dim (the [outer, n, inner] view of ops/reduce_layout.h) is
// gathered into (key, index) pairs and sorted by cub::DeviceSegmentedSort::StableSortPairs, one
// segment per row (segmented_sort.h); values are then read back from x by the sorted indices (so -0.0 and NaN
// payloads are kept). Keys are order-preserving unsigned integers (uint32 for types up to 32 bits,
// uint64 for int64/float64; descending is the bitwise complement), so only two sort
// instantiations are compiled. NaN is the largest value (first when descending or largest, last
// otherwise, as the CPU and PyTorch) and -0.0 equals 0.0. The sort is stable, so ties keep their
// original order: Sort matches the CPU's stable=True order (stable=False leaves ties unspecified on
// the CPU), TopK returns the lowest indices among tied values in sorted order (the CPU's
// nth_element leaves that choice unspecified), and the median of a row is the ((m - 1) / 2)-th of
// its m non-NaN values in stable order (the first NaN when NaN propagates).
#include <limits>

#include "lucid/backends/cuda/kernels/reduce_driver.cuh"
#include "lucid/backends/cuda/kernels/segmented_sort.h"

namespace lucid::cuda {

namespace {

template <class T>
using key_t = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;

// Order-preserving key of a value (NaN canonical and largest, -0.0 == 0.0).
template <class T>
__device__ inline key_t<T> sort_key(compute_t<T> v, bool descending) {
  using C = compute_t<T>;
  using K = key_t<T>;
  K k;
  if constexpr (std::is_same_v<C, float>) {
    uint32_t u = v != v ? 0x7fc00000u : v == 0.0f ? 0u : __float_as_uint(v);
    k = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  } else if constexpr (std::is_same_v<C, double>) {
    uint64_t u = v != v ? 0x7ff8000000000000ull : v == 0.0 ? 0ull : static_cast<uint64_t>(__double_as_longlong(v));
    k = (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
  } else if constexpr (std::is_signed_v<C>) {
    k = static_cast<K>(static_cast<std::make_signed_t<K>>(v)) ^ (K(1) << (sizeof(K) * 8 - 1));
  } else {
    k = static_cast<K>(v);
  }
  return descending ? ~k : k;
}

// Row t of the [outer, n, inner] view starts at (t / inner) * n * inner + t % inner; in an output
// whose dim has size n_out, at (t / inner) * n_out * inner + t % inner.
__device__ inline int64_t row_base(int64_t t, int64_t n, int64_t inner) { return (t / inner) * n * inner + t % inner; }

template <class T>
__global__ void gather_keys_kernel(const T* x, key_t<T>* keys, int64_t* idx, int64_t total, int64_t n, int64_t inner,
                                   bool descending) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= total) return;
  const int64_t r = t / n, k = t % n;
  keys[t] = sort_key<T>(load(x, row_base(r, n, inner) + k * inner), descending);
  idx[t] = k;
}

__global__ void segment_offsets_kernel(int64_t* off, int64_t rows, int64_t n) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t <= rows) off[t] = t * n;
}

// The first n_out sorted entries of every row, values read from x by index.
template <class T>
__global__ void write_sorted_kernel(const T* x, const int64_t* sidx, T* vals, int64_t* idx, int64_t rows, int64_t n,
                                    int64_t n_out, int64_t inner) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rows * n_out) return;
  const int64_t r = t / n_out, k = t % n_out;
  const int64_t i = sidx[r * n + k];
  const int64_t o = row_base(r, n_out, inner) + k * inner;
  vals[o] = x[row_base(r, n, inner) + i * inner];
  idx[o] = i;
}

// The lower median of every sorted (ascending) row: NaN keys are last, so m (the non-NaN count)
// is found by binary search. idx may be null (Median).
template <class T>
__global__ void write_median_kernel(const T* x, const key_t<T>* skeys, const int64_t* sidx, T* vals, int64_t* idx,
                                    int64_t rows, int64_t n, int64_t inner, bool ignore_nan) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  int64_t m = n;
  if constexpr (std::is_floating_point_v<compute_t<T>>) {
    const key_t<T> nan_key = sort_key<T>(static_cast<compute_t<T>>(NAN), false);
    const key_t<T>* row = skeys + r * n;
    int64_t lo = 0, hi = n;  // first position whose key is NaN's
    while (lo < hi) {
      int64_t mid = (lo + hi) / 2;
      if (row[mid] < nan_key) lo = mid + 1;
      else hi = mid;
    }
    m = lo;
  }
  // All NaN: the first (index 0); NaN propagates: the first NaN; else the lower median.
  const int64_t pos = m == 0 ? 0 : !ignore_nan && m < n ? m : (m - 1) / 2;
  const int64_t i = sidx[r * n + pos];
  vals[row_base(r, 1, inner)] = x[row_base(r, n, inner) + i * inner];
  if (idx) idx[row_base(r, 1, inner)] = i;
}

// Sorted (key, index) pairs of every row of x along dim (x contiguous): skeys/sidx [rows * n].
struct SortedRows {
  Tensor keys, idx;
};

template <class T>
SortedRows sort_rows(const Tensor& x, const DimRows& g, bool descending, const char* name) {
  using K = key_t<T>;
  const Device dev = x.device();
  cudaStream_t stream = current_stream(dev);
  const int64_t rows = g.count(), n = g.n, total = rows * n;
  const DType kd = sizeof(K) == 8 ? DType::Int64 : DType::Int32;
  Tensor keys_in = Tensor::empty({total}, kd, dev), idx_in = Tensor::empty({total}, DType::Int64, dev);
  SortedRows out{Tensor::empty({total}, kd, dev), Tensor::empty({total}, DType::Int64, dev)};
  Tensor off = Tensor::empty({rows + 1}, DType::Int64, dev);
  K* kin = static_cast<K*>(keys_in.data_ptr());
  K* kout = static_cast<K*>(out.keys.data_ptr());
  gather_keys_kernel<T><<<blocks_covering(total, 256), 256, 0, stream>>>(x.data<T>(), kin, idx_in.data<int64_t>(), total, n,
                                                                   g.inner, descending);
  check_launch(name);
  segment_offsets_kernel<<<blocks_covering(rows + 1, 256), 256, 0, stream>>>(off.data<int64_t>(), rows, n);
  check_launch(name);
  stable_sort_segments(kin, kout, idx_in.data<int64_t>(), out.idx.data<int64_t>(), total, rows, off.data<int64_t>(), dev,
                       name);
  return out;
}

// Values and indices of the first n_out entries of every row of x sorted along dim.
template <class T>
void sorted_into(const Tensor& x, int64_t dim, bool descending, int64_t n_out, const Tensor& vals, const Tensor& idx,
                 const char* name) {
  DimRows g = dim_rows(x.shape(), dim);
  if (g.count() == 0 || g.n == 0 || n_out == 0) return;
  SortedRows s = sort_rows<T>(x, g, descending, name);
  const int64_t rows = g.count();
  write_sorted_kernel<T><<<blocks_covering(rows * n_out, 256), 256, 0, current_stream(x.device())>>>(
      x.data<T>(), s.idx.data<int64_t>(), vals.data<T>(), idx.data<int64_t>(), rows, g.n, n_out, g.inner);
  check_launch(name);
}

void check_outputs(const TensorList& out, const char* name) {
  for (const Tensor& o : out) LUCID_CHECK(o.is_contiguous(), Error, name, ": the outputs must be contiguous");
}

void sort_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  check_outputs(out, "sort");
  DeviceGuard g(out[0].device());
  Tensor x = in[0].contiguous_data();
  int64_t dim = x.ndim() == 0 ? 0 : wrap_dim(a.i("dim"), x.ndim(), "sort");
  int64_t n = x.ndim() == 0 ? 1 : x.shape()[dim];
  LUCID_DISPATCH_ALL(x.dtype(), "sort", [&] { sorted_into<scalar_t>(x, dim, a.b("descending"), n, out[0], out[1], "sort"); });
}

void topk_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  check_outputs(out, "topk");
  DeviceGuard g(out[0].device());
  Tensor x = in[0].contiguous_data();
  int64_t dim = x.ndim() == 0 ? 0 : wrap_dim(a.i("dim"), x.ndim(), "topk");
  LUCID_DISPATCH_NUMERIC(x.dtype(), "topk", [&] { sorted_into<scalar_t>(x, dim, a.b("largest"), a.i("k"), out[0], out[1], "topk"); });
}

// Median rows of x along dim into vals (and idx when defined), x contiguous and non-empty.
template <class T>
void median_into(const Tensor& x, const DimRows& g, bool ignore_nan, const Tensor& vals, int64_t* idx, const char* name) {
  SortedRows s = sort_rows<T>(x, g, false, name);
  const int64_t rows = g.count();
  write_median_kernel<T><<<blocks_covering(rows, 256), 256, 0, current_stream(x.device())>>>(
      x.data<T>(), static_cast<const key_t<T>*>(s.keys.data_ptr()), s.idx.data<int64_t>(), vals.data<T>(), idx, rows, g.n,
      g.inner, ignore_nan);
  check_launch(name);
}

// The median of no elements: NaN, as PyTorch (an integer dtype gets NaN's conversion: the lowest
// value). 16-bit NaNs by bit pattern (core/half.h's conversions use F16C).
template <class T>
T empty_median() {
  T v{};
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) v.bits = std::is_same_v<T, Half> ? 0x7e00 : 0x7fc0;
  else if constexpr (std::is_floating_point_v<T>) v = std::numeric_limits<T>::quiet_NaN();
  else v = std::numeric_limits<T>::lowest();
  return v;
}

// out[0] = v (one element).
template <class T>
__global__ void set_one_kernel(T* out, T v) { *out = v; }

void median_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  Tensor x = in[0].contiguous_data();
  const bool ignore_nan = a.b("ignore_nan");
  LUCID_DISPATCH_NUMERIC(x.dtype(), "median", [&] {
    if (x.numel() == 0) {
      set_one_kernel<scalar_t><<<1, 1, 0, current_stream(x.device())>>>(out[0].data<scalar_t>(), empty_median<scalar_t>());
      check_launch("median");
      return;
    }
    DimRows rows;
    rows.n = x.numel();
    median_into<scalar_t>(x, rows, ignore_nan, out[0], nullptr, "median");
  });
}

void median_dim_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  check_outputs(out, "median");
  DeviceGuard g(out[0].device());
  Tensor x = in[0].contiguous_data();
  DimRows rows = dim_rows(x.shape(), x.ndim() == 0 ? 0 : wrap_dim(a.i("dim"), x.ndim(), "median"));
  if (rows.count() == 0 || rows.n == 0) return;
  LUCID_DISPATCH_NUMERIC(x.dtype(), "median", [&] {
    median_into<scalar_t>(x, rows, a.b("ignore_nan"), out[0], out[1].data<int64_t>(), "median");
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Sort, CUDA, sort_kernel);
LUCID_REGISTER_KERNEL(TopK, CUDA, topk_kernel);
LUCID_REGISTER_KERNEL(Median, CUDA, median_kernel);
LUCID_REGISTER_KERNEL(MedianDim, CUDA, median_dim_kernel);

}  // namespace lucid::cuda
