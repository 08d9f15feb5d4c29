// CUDA kernels of the scans (records in ops/reduce_ops.cpp and ops/reduce_cumprod.cpp): Cumsum,
// Cumprod, CumprodBackward (the fused O(n)-per-row gradient, exact with zeros) and ProdOthers
// (prod's VJP: the product of the other elements, prefix * suffix, exact with zeros). The math is
// the CPU's (backends/cpu/kernels/scan.cpp, reduce.cpp): sums and products accumulate in double
// (int64 for integers). Rows are the [outer, n, inner] view of one dim (ops/reduce_layout.h): long
// contiguous rows are scanned by a block each (cub::BlockScan over 256-element tiles with a
// running prefix); other rows by a thread each, sequentially (adjacent threads read adjacent
// columns when inner > 1). ProdOthers and CumprodBackward have the same two kernels.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "lucid/backends/cuda/kernels/reduce_driver.cuh"

namespace lucid::cuda {

namespace {

template <class A, bool IsProd>
struct ScanOp {
  __device__ A operator()(const A& a, const A& b) const { return IsProd ? a * b : a + b; }
};

// The running prefix of a row scanned tile by tile (called by the block's first warp).
template <class A, bool IsProd>
struct RunningPrefix {
  A total;
  __device__ A operator()(A tile_aggregate) {
    A before = total;
    total = ScanOp<A, IsProd>{}(total, tile_aggregate);
    return before;
  }
};

// One thread per row of [outer, n, inner]: row t starts at (t / inner) * n * inner + t % inner.
template <class T, bool IsProd>
__global__ void scan_rows_kernel(const T* x, T* y, int64_t rows, int64_t n, int64_t inner, bool reverse) {
  using C = compute_t<T>;
  using A = acc_t<C>;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rows) return;
  const int64_t base = (t / inner) * n * inner + t % inner;
  A acc = IsProd ? A(1) : A(0);
  for (int64_t kk = 0; kk < n; ++kk) {
    const int64_t p = base + (reverse ? n - 1 - kk : kk) * inner;
    acc = ScanOp<A, IsProd>{}(acc, static_cast<A>(load(x, p)));
    store(y, p, static_cast<C>(acc));
  }
}

constexpr int kScanThreads = 256;

// One block per contiguous row of length n (inner == 1).
template <class T, bool IsProd>
__global__ void scan_long_rows_kernel(const T* x, T* y, int64_t n, bool reverse) {
  using C = compute_t<T>;
  using A = acc_t<C>;
  using BlockScan = cub::BlockScan<A, kScanThreads>;
  __shared__ typename BlockScan::TempStorage temp;
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * n;
  T* yr = y + static_cast<int64_t>(blockIdx.x) * n;
  RunningPrefix<A, IsProd> prefix{IsProd ? A(1) : A(0)};
  for (int64_t t0 = 0; t0 < n; t0 += kScanThreads) {
    const int64_t kk = t0 + threadIdx.x;
    const int64_t k = reverse ? n - 1 - kk : kk;
    A v = kk < n ? static_cast<A>(load(xr, k)) : (IsProd ? A(1) : A(0));
    BlockScan(temp).InclusiveScan(v, v, ScanOp<A, IsProd>{}, prefix);
    __syncthreads();
    if (kk < n) store(yr, k, static_cast<C>(v));
  }
}

template <bool IsProd>
void scan_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const char* name = IsProd ? "cumprod" : "cumsum";
  const Tensor& o = out[0];
  LUCID_CHECK(o.is_contiguous(), Error, name, ": the output must be contiguous");
  DeviceGuard g(o.device());
  Tensor x = contiguous_as(in[0], o.dtype());
  if (x.numel() == 0) return;
  DimRows r = dim_rows(x.shape(), x.ndim() == 0 ? 0 : wrap_dim(a.i("dim"), x.ndim(), name));
  const bool reverse = !IsProd && a.b("reverse", false);
  cudaStream_t stream = current_stream(o.device());
  LUCID_DISPATCH_NUMERIC(o.dtype(), name, [&] {
    const scalar_t* xp = x.data<scalar_t>();
    scalar_t* yp = o.data<scalar_t>();
    if (r.inner == 1 && r.n >= 1024) {
      scan_long_rows_kernel<scalar_t, IsProd><<<static_cast<unsigned>(r.outer), kScanThreads, 0, stream>>>(xp, yp, r.n, reverse);
    } else {
      scan_rows_kernel<scalar_t, IsProd><<<blocks_covering(r.count(), 256), 256, 0, stream>>>(xp, yp, r.count(), r.n, r.inner, reverse);
    }
    check_launch(name);
  });
}

// ---- CumprodBackward (the CPU's cumprod_backward_rows, one thread per row) ----------------------------
template <class T>
__global__ void cumprod_backward_kernel(const T* gr, const T* x, const T* y, T* gi, int64_t rows, int64_t n, int64_t inner) {
  using C = compute_t<T>;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rows) return;
  const int64_t base = (t / inner) * n * inner + t % inner;
  auto at = [&](const T* p, int64_t k) { return static_cast<double>(load(p, base + k * inner)); };
  int64_t z = 0;
  while (z < n && at(x, z) != 0.0) ++z;
  double acc = 0;
  for (int64_t k = z - 1; k >= 0; --k) {
    acc += at(gr, k) * at(y, k);
    store(gi, base + k * inner, static_cast<C>(acc / at(x, k)));
  }
  if (z == n) return;
  double p = z > 0 ? at(y, z - 1) : 1.0;
  double s = at(gr, z) * p;
  for (int64_t j = z + 1; j < n; ++j) {
    p *= at(x, j);
    s += at(gr, j) * p;
    store(gi, base + j * inner, C(0));
  }
  store(gi, base + z * inner, static_cast<C>(s));
}

// One block per long contiguous row, the same formula with block-wide steps: z = the first zero
// (a min reduction); before z a reversed running sum of g * y (divided by x); at z the sum of
// g_j * p_j with p_j = y_{z-1} * x_{z+1} * ... * x_j (a running product); after z zeros.
template <class T>
__global__ void cumprod_backward_long_kernel(const T* gr, const T* x, const T* y, T* gi, int64_t n) {
  using C = compute_t<T>;
  using BlockScan = cub::BlockScan<double, kScanThreads>;
  using FirstZero = cub::BlockReduce<int64_t, kScanThreads>;
  using BlockSum = cub::BlockReduce<double, kScanThreads>;
  __shared__ union {
    typename BlockScan::TempStorage scan;
    typename FirstZero::TempStorage zero;
    typename BlockSum::TempStorage sum;
  } temp;
  __shared__ int64_t first_zero;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * n;
  auto at = [&](const T* p, int64_t k) { return static_cast<double>(load(p, base + k)); };
  int64_t mine = n;
  for (int64_t k = threadIdx.x; k < n && mine == n; k += kScanThreads)
    if (at(x, k) == 0.0) mine = k;
  const int64_t zr = FirstZero(temp.zero).Reduce(mine, ::cuda::minimum<>{});
  if (threadIdx.x == 0) first_zero = zr;
  __syncthreads();
  const int64_t z = first_zero;
  RunningPrefix<double, false> after{0.0};
  for (int64_t t0 = 0; t0 < z; t0 += kScanThreads) {
    const int64_t kk = t0 + threadIdx.x, k = z - 1 - kk;
    double v = kk < z ? at(gr, k) * at(y, k) : 0.0;
    BlockScan(temp.scan).InclusiveScan(v, v, ScanOp<double, false>{}, after);
    __syncthreads();
    if (kk < z) store(gi, base + k, static_cast<C>(v / at(x, k)));
  }
  if (z == n) return;
  const double pz = z > 0 ? at(y, z - 1) : 1.0;
  RunningPrefix<double, true> prod{1.0};
  double part = 0.0;
  for (int64_t t0 = z + 1; t0 < n; t0 += kScanThreads) {
    const int64_t j = t0 + threadIdx.x;
    double v = j < n ? at(x, j) : 1.0;
    BlockScan(temp.scan).InclusiveScan(v, v, ScanOp<double, true>{}, prod);
    __syncthreads();
    if (j < n) {
      part += at(gr, j) * (pz * v);
      store(gi, base + j, C(0));
    }
  }
  const double rest = BlockSum(temp.sum).Sum(part);
  if (threadIdx.x == 0) store(gi, base + z, static_cast<C>(at(gr, z) * pz + rest));
}

void cumprod_backward_host(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  LUCID_CHECK(o.is_contiguous(), Error, "cumprod_backward: the output must be contiguous");
  DeviceGuard dg(o.device());
  Tensor g = in[0].contiguous_data(), x = in[1].contiguous_data(), y = in[2].contiguous_data();
  if (g.numel() == 0) return;
  DimRows r = dim_rows(g.shape(), g.ndim() == 0 ? 0 : wrap_dim(a.i("dim"), g.ndim(), "cumprod_backward"));
  cudaStream_t stream = current_stream(o.device());
  LUCID_DISPATCH_FLOATING(g.dtype(), "cumprod_backward", [&] {
    if (r.inner == 1 && r.n >= 1024)
      cumprod_backward_long_kernel<scalar_t><<<static_cast<unsigned>(r.outer), kScanThreads, 0, stream>>>(
          g.data<scalar_t>(), x.data<scalar_t>(), y.data<scalar_t>(), o.data<scalar_t>(), r.n);
    else
      cumprod_backward_kernel<scalar_t><<<blocks_covering(r.count(), 256), 256, 0, stream>>>(
          g.data<scalar_t>(), x.data<scalar_t>(), y.data<scalar_t>(), o.data<scalar_t>(), r.count(), r.n, r.inner);
    check_launch("cumprod_backward");
  });
}

// ---- ProdOthers (the CPU's prod_others_rows: prefix products in an A scratch, then suffixes) -------
template <class T>
__global__ void prod_others_kernel(const T* x, T* dst, acc_t<compute_t<T>>* pre, int64_t rows, int64_t r, int64_t inner) {
  using C = compute_t<T>;
  using A = acc_t<C>;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rows) return;
  const int64_t base = (t / inner) * r * inner + t % inner;
  A acc = 1;
  for (int64_t k = 0; k < r; ++k) {
    pre[base + k * inner] = acc;
    acc *= static_cast<A>(load(x, base + k * inner));
  }
  acc = 1;
  for (int64_t k = r - 1; k >= 0; --k) {
    store(dst, base + k * inner, static_cast<C>(pre[base + k * inner] * acc));
    acc *= static_cast<A>(load(x, base + k * inner));
  }
}

// One block per contiguous row (inner == 1): exclusive prefix products into pre, then exclusive
// suffix products times pre, each a tiled cub::BlockScan with a running prefix.
template <class T>
__global__ void prod_others_long_kernel(const T* x, T* dst, acc_t<compute_t<T>>* pre, int64_t r) {
  using C = compute_t<T>;
  using A = acc_t<C>;
  using BlockScan = cub::BlockScan<A, kScanThreads>;
  __shared__ typename BlockScan::TempStorage temp;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * r;
  RunningPrefix<A, true> before{A(1)};
  for (int64_t t0 = 0; t0 < r; t0 += kScanThreads) {
    const int64_t k = t0 + threadIdx.x;
    A v = k < r ? static_cast<A>(load(x, base + k)) : A(1), e;
    BlockScan(temp).ExclusiveScan(v, e, ScanOp<A, true>{}, before);
    __syncthreads();
    if (k < r) pre[base + k] = e;
  }
  RunningPrefix<A, true> after{A(1)};
  for (int64_t t0 = 0; t0 < r; t0 += kScanThreads) {
    const int64_t kk = t0 + threadIdx.x, k = r - 1 - kk;
    A v = kk < r ? static_cast<A>(load(x, base + k)) : A(1), e;
    BlockScan(temp).ExclusiveScan(v, e, ScanOp<A, true>{}, after);
    __syncthreads();
    if (kk < r) store(dst, base + k, static_cast<C>(pre[base + k] * e));
  }
}

void prod_others_host(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  DeviceGuard g(out[0].device());
  RowLayout L = row_layout(x, reduce_dims(a.ints("dims"), x.ndim(), "prod"));
  const int64_t rows = L.outer * L.inner, total = rows * L.r;
  if (total == 0) return;
  LUCID_CHECK(!L.perm.empty() || out[0].is_contiguous(), Error, "prod: the output must be contiguous");
  Tensor dst = L.perm.empty() ? out[0] : Tensor::empty(L.data.shape(), x.dtype(), x.device());
  Tensor pre = Tensor::empty({total}, is_floating(x.dtype()) ? DType::Float64 : DType::Int64, x.device());
  cudaStream_t stream = current_stream(out[0].device());
  LUCID_DISPATCH_NUMERIC(x.dtype(), "prod", [&] {
    using A = acc_t<compute_t<scalar_t>>;
    if (L.inner == 1 && L.r >= 1024)
      prod_others_long_kernel<scalar_t><<<static_cast<unsigned>(L.outer), kScanThreads, 0, stream>>>(
          L.data.data<scalar_t>(), dst.data<scalar_t>(), pre.data<A>(), L.r);
    else
      prod_others_kernel<scalar_t><<<blocks_covering(rows, 256), 256, 0, stream>>>(L.data.data<scalar_t>(), dst.data<scalar_t>(),
                                                                             pre.data<A>(), rows, L.r, L.inner);
    check_launch("prod_others");
  });
  if (!L.perm.empty()) unpermute_on_device(out[0], dst, L.perm);
}

}  // namespace

LUCID_REGISTER_KERNEL(Cumsum, CUDA, scan_kernel<false>);
LUCID_REGISTER_KERNEL(Cumprod, CUDA, scan_kernel<true>);
LUCID_REGISTER_KERNEL(CumprodBackward, CUDA, cumprod_backward_host);
LUCID_REGISTER_KERNEL(ProdOthers, CUDA, prod_others_host);

}  // namespace lucid::cuda
