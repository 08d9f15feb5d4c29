// CUDA kernels of the random ops (records in ops/random_ops.cpp): Uniform, Normal, RandInt,
// Bernoulli, RandPerm, Multinomial. Each thread computes one Philox block (core/philox.h) of the
// op's stream from (seed, offset / 4 + block) and turns its 4 draws into values with the same
// device-neutral rules as the CPU kernel (ops/random_draws.h), so element i only depends on
// (seed, offset, i) and equals the CPU's:
//   - Uniform, RandInt, Bernoulli, RandPerm, Multinomial with replacement: bit for bit;
//   - Normal in float32 and the 16-bit types: bit for bit (log and sincospi in double rounded to
//     float, which ops/random_draws.h shows gives the same float from CUDA's double functions as
//     from SLEEF's; sqrt and products as single IEEE float operations); float64 uses CUDA's log
//     and sincospi where the CPU uses SLEEF's, so a value may differ in its last ulp or two;
//   - Multinomial without replacement ranks by w / Exp(1) with CUDA's log1p (<= 1 ulp from
//     glibc's), which can only reorder two keys within an ulp of each other.
// RandPerm sorts the same 64-bit keys with CUB's (stable) radix sort, ties in index order as the
// CPU's std::sort of (key, index). Bad probabilities raise the CPU kernel's errors, found on the
// device and read back (that read synchronises the stream). Inside a CUDA graph capture
// (graph_capture.h) the seed and the call's offset are read from the graph's device state at run
// time (PhiloxArg), so every replay draws its own call's numbers.
#include <cub/device/device_radix_sort.cuh>

#include "lucid/backends/cuda/graph_capture.h"
#include "lucid/backends/cuda/kernels/nn_device.cuh"
#include "lucid/core/philox.h"
#include "lucid/ops/op_def.h"
#include "lucid/ops/random_draws.h"

namespace lucid::cuda {

namespace {

// The Philox key and first counter block of one op's draws: kernel arguments, or, in a captured
// CUDA graph, read from its device state {seed, the call's base offset} plus the op's own offset
// within the call (in draws; a block is 4 draws).
struct PhiloxArg {
  uint64_t seed = 0, c0 = 0;
  const uint64_t* state = nullptr;
  uint64_t delta = 0;
  __device__ uint64_t key() const { return state ? state[0] : seed; }
  __device__ uint64_t counter() const { return state ? (state[1] + delta) / 4 : c0; }
};

PhiloxArg philox_arg(const Attrs& a) {
  const uint64_t seed = static_cast<uint64_t>(a.i("seed")), offset = static_cast<uint64_t>(a.i("offset"));
  const GraphPhilox& g = graph_philox();
  if (g.state) return {0, 0, g.state, offset - g.base};
  return {seed, offset / 4, nullptr, 0};
}

// Philox blocks covering n units of k draws each.
__host__ __device__ inline int64_t blocks_for(int64_t n, int k) { return (n * k + 3) / 4; }

// ---- Uniform ---------------------------------------------------------------------------------
template <class T>
__global__ void uniform_kernel(device_t<T>* p, int64_t n, double lo, double span, PhiloxArg r) {
  const uint64_t seed = r.key(), c0 = r.counter();
  constexpr int k = uniform_draws<T>(), per = 4 / k;
  int64_t nb = blocks_for(n, k);
  for (int64_t b = global_index(); b < nb; b += global_stride()) {
    PhiloxBlock w = philox4x32_10(c0 + static_cast<uint64_t>(b), seed);
    for (int q = 0; q < per; ++q) {
      int64_t i = b * per + q;
      if (i < n) p[i] = from_compute<device_t<T>>(affine_draw(lo, span, unit_uniform<T>(&w.w[q * k])));
    }
  }
}

void uniform(const TensorList&, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  double lo = a.f("low"), span = a.f("high") - a.f("low");
  if (out[0].numel() == 0) return;
  with_contiguous_out(out[0], [&](const Tensor& o) {
    LUCID_DISPATCH_FLOATING(o.dtype(), "uniform", [&] {
      int64_t n = o.numel();
      uniform_kernel<scalar_t><<<grid_for(blocks_for(n, uniform_draws<scalar_t>())), kThreads, 0, current_stream(o.device())>>>(
          o.data<device_t<scalar_t>>(), n, lo, span, philox_arg(a));
      check_launch("uniform");
    });
  });
}

// ---- Normal (Box-Muller on pairs of uniforms) ----------------------------------------------------
// Pair j (elements 2j, 2j+1): draws 2j, 2j+1 (4j..4j+3 for float64), as the CPU's normal_fill.
template <class T>
__global__ void normal_kernel(device_t<T>* p, int64_t n, double mu, double sd, PhiloxArg r) {
  const uint64_t seed = r.key(), c0 = r.counter();
  constexpr bool dbl = std::is_same_v<T, double>;
  constexpr int per = dbl ? 1 : 2;  // pairs per Philox block
  int64_t npairs = (n + 1) / 2, nb = (npairs + per - 1) / per;
  for (int64_t b = global_index(); b < nb; b += global_stride()) {
    PhiloxBlock w = philox4x32_10(c0 + static_cast<uint64_t>(b), seed);
    for (int q = 0; q < per; ++q) {
      int64_t j = b * per + q;
      if (j >= npairs) break;
      double zc, zs;
      if constexpr (dbl) {
        double u1 = 1.0 - unit_uniform<double>(&w.w[0]), u2 = unit_uniform<double>(&w.w[2]);
        double r = sqrt(-2.0 * log(u1)), s, c;
        sincospi(2.0 * u2, &s, &c);
        zs = r * s;
        zc = r * c;
      } else {
        // The CPU's float steps: u1, u2 exact; log and sincospi rounded to float; sqrt and the
        // products in float.
        float u1 = 1.0f - static_cast<float>(w.w[2 * q] >> 8) * 0x1.0p-24f;
        float u2 = static_cast<float>(w.w[2 * q + 1] >> 8) * 0x1.0p-24f;
        float lg = static_cast<float>(log(static_cast<double>(u1)));
        double sd_, cd_;
        sincospi(static_cast<double>(2.0f * u2), &sd_, &cd_);
        float r = __fsqrt_rn(__fmul_rn(-2.0f, lg));
        zs = __fmul_rn(r, static_cast<float>(sd_));
        zc = __fmul_rn(r, static_cast<float>(cd_));
      }
      if (2 * j < n) p[2 * j] = from_compute<device_t<T>>(affine_draw(mu, sd, zc));
      if (2 * j + 1 < n) p[2 * j + 1] = from_compute<device_t<T>>(affine_draw(mu, sd, zs));
    }
  }
}

void normal(const TensorList&, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  double mu = a.f("mean"), sd = a.f("std");
  if (out[0].numel() == 0) return;
  with_contiguous_out(out[0], [&](const Tensor& o) {
    LUCID_DISPATCH_FLOATING(o.dtype(), "normal", [&] {
      int64_t n = o.numel(), npairs = (n + 1) / 2;
      int64_t nb = std::is_same_v<scalar_t, double> ? npairs : (npairs + 1) / 2;
      normal_kernel<scalar_t><<<grid_for(nb), kThreads, 0, current_stream(o.device())>>>(o.data<device_t<scalar_t>>(), n, mu, sd,
                                                                                          philox_arg(a));
      check_launch("normal");
    });
  });
}

// ---- RandInt ---------------------------------------------------------------------------------
template <class D>
__global__ void randint_kernel(D* p, int64_t n, int k, int64_t low, uint64_t range, PhiloxArg r) {
  const uint64_t seed = r.key(), c0 = r.counter();
  int per = 4 / k;
  int64_t nb = blocks_for(n, k);
  for (int64_t b = global_index(); b < nb; b += global_stride()) {
    PhiloxBlock w = philox4x32_10(c0 + static_cast<uint64_t>(b), seed);
    for (int q = 0; q < per; ++q) {
      int64_t i = b * per + q;
      if (i >= n) break;
      int64_t r = static_cast<int64_t>(static_cast<uint64_t>(low) + randint_offset(&w.w[q * k], k, range));
      p[i] = from_compute<D>(r);
    }
  }
}

void randint(const TensorList&, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  int64_t low = a.i("low"), high = a.i("high");
  uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  int k = randint_draws(low, high);
  if (out[0].numel() == 0) return;
  with_contiguous_out(out[0], [&](const Tensor& o) {
    LUCID_DISPATCH_ALL(o.dtype(), "randint", [&] {
      int64_t n = o.numel();
      randint_kernel<<<grid_for(blocks_for(n, k)), kThreads, 0, current_stream(o.device())>>>(
          o.data<device_t<scalar_t>>(), n, k, low, range, philox_arg(a));
      check_launch("randint");
    });
  });
}

// ---- Bernoulli -------------------------------------------------------------------------------
// pp: per-element probabilities (float64, the output's shape) or null for the attribute p.
template <class D>
__global__ void bernoulli_kernel(D* dst, const double* pp, double p, int64_t n, PhiloxArg r) {
  const uint64_t seed = r.key(), c0 = r.counter();
  int64_t nb = blocks_for(n, 1);
  for (int64_t b = global_index(); b < nb; b += global_stride()) {
    PhiloxBlock w = philox4x32_10(c0 + static_cast<uint64_t>(b), seed);
    for (int q = 0; q < 4; ++q) {
      int64_t i = b * 4 + q;
      if (i >= n) break;
      double pi = pp ? pp[i] : p;
      dst[i] = from_compute<D>(unit_uniform<float>(&w.w[q]) < pi ? 1 : 0);
    }
  }
}

// Records the first probability outside [0, 1] (NaN too), as the CPU's check.
__global__ void check_probs_kernel(const double* pp, int64_t n, int64_t* bad) {
  for (int64_t i = global_index(); i < n; i += global_stride())
    if (!(pp[i] >= 0 && pp[i] <= 1)) record_bad_index(bad, i);
}

void bernoulli(const TensorList& in, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  const Device dev = out[0].device();
  cudaStream_t s = current_stream(dev);
  Tensor probs;
  if (!in.empty()) {
    probs = Tensor::empty(a.ints("shape"), DType::Float64, dev);
    if (probs.numel() == 0) return;
    copy_values(probs, in[0]);  // broadcasts a probability tensor to the output shape
    Tensor bad = bad_index_slot(dev);
    check_probs_kernel<<<grid_for(probs.numel()), kThreads, 0, s>>>(probs.data<double>(), probs.numel(), bad.data<int64_t>());
    check_launch("bernoulli (check probabilities)");
    int64_t i = first_bad_index(bad);
    LUCID_CHECK(i < 0, ValueError, "bernoulli: expected all probabilities in [0, 1], got ", i < 0 ? 0.0 : read_back<double>(probs, i));
  }
  double p = in.empty() ? a.f("p") : 0.0;
  if (out[0].numel() == 0) return;
  with_contiguous_out(out[0], [&](const Tensor& o) {
    LUCID_DISPATCH_ALL(o.dtype(), "bernoulli", [&] {
      int64_t n = o.numel();
      bernoulli_kernel<<<grid_for(blocks_for(n, 1)), kThreads, 0, s>>>(
          o.data<device_t<scalar_t>>(), probs.defined() ? probs.data<double>() : nullptr, p, n, philox_arg(a));
      check_launch("bernoulli");
    });
  });
}

// ---- RandPerm --------------------------------------------------------------------------------
__global__ void randperm_keys_kernel(uint64_t* keys, int64_t* idx, int64_t n, PhiloxArg r) {
  const uint64_t seed = r.key(), c0 = r.counter();
  int64_t nb = blocks_for(n, 2);
  for (int64_t b = global_index(); b < nb; b += global_stride()) {
    PhiloxBlock w = philox4x32_10(c0 + static_cast<uint64_t>(b), seed);
    for (int q = 0; q < 2; ++q) {
      int64_t i = b * 2 + q;
      if (i >= n) break;
      keys[i] = static_cast<uint64_t>(w.w[2 * q]) << 32 | w.w[2 * q + 1];
      idx[i] = i;
    }
  }
}

template <class D>
__global__ void store_indices_kernel(D* dst, const int64_t* idx, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) dst[i] = from_compute<D>(idx[i]);
}

// Sorts (keys, values) by key with CUB's stable radix sort into (keys_out, values_out); scratch on
// the device's allocator, ordered on stream s.
template <class K>
void radix_sort_pairs(const Device& dev, cudaStream_t s, const K* keys, K* keys_out, const int64_t* vals, int64_t* vals_out,
                      int64_t n, bool descending) {
  size_t bytes = 0;
  auto run = [&](void* tmp) {
    if (descending)
      return cub::DeviceRadixSort::SortPairsDescending(tmp, bytes, keys, keys_out, vals, vals_out, n, 0, sizeof(K) * 8, s);
    return cub::DeviceRadixSort::SortPairs(tmp, bytes, keys, keys_out, vals, vals_out, n, 0, sizeof(K) * 8, s);
  };
  check_cuda(run(nullptr), "cub::DeviceRadixSort (size query)");
  Tensor tmp = Tensor::empty({static_cast<int64_t>(bytes) + 1}, DType::UInt8, dev);
  check_cuda(run(tmp.data_ptr()), "cub::DeviceRadixSort");
}

void randperm(const TensorList&, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  const Device dev = out[0].device();
  cudaStream_t s = current_stream(dev);
  int64_t n = a.i("n");
  if (n == 0) return;
  Tensor keys = Tensor::empty({n}, DType::Int64, dev), keys_out = Tensor::empty({n}, DType::Int64, dev);
  Tensor idx = Tensor::empty({n}, DType::Int64, dev), idx_out = Tensor::empty({n}, DType::Int64, dev);
  randperm_keys_kernel<<<grid_for(blocks_for(n, 2)), kThreads, 0, s>>>(keys.data<uint64_t>(), idx.data<int64_t>(), n,
                                                                       philox_arg(a));
  check_launch("randperm (keys)");
  radix_sort_pairs<uint64_t>(dev, s, keys.data<uint64_t>(), keys_out.data<uint64_t>(), idx.data<int64_t>(),
                             idx_out.data<int64_t>(), n, false);
  with_contiguous_out(out[0], [&](const Tensor& o) {
    LUCID_DISPATCH_NUMERIC(o.dtype(), "randperm", [&] {
      store_indices_kernel<<<grid_for(n), kThreads, 0, s>>>(o.data<device_t<scalar_t>>(), idx_out.data<int64_t>(), n);
      check_launch("randperm");
    });
  });
}

// ---- Multinomial ------------------------------------------------------------------------------
// One thread per row, in the CPU's order: validates the weights (status[r] = first bad category,
// or cats for an all-zero row, or -1), turns replacement rows into their cumulative sums (the
// same sequential double sums as the CPU), and records the first bad row.
__global__ void multinomial_rows_kernel(double* wp, int64_t rows, int64_t cats, bool repl, int64_t* status, int64_t* bad_row) {
  for (int64_t r = global_index(); r < rows; r += global_stride()) {
    double* row = wp + r * cats;
    double total = 0;
    int64_t st = -1;
    for (int64_t c = 0; c < cats; ++c) {
      double v = row[c];
      if (!(isfinite(v) && v >= 0)) { st = c; break; }
      total += v;
      if (repl) row[c] = total;
    }
    if (st < 0 && !(total > 0)) st = cats;
    status[r] = st;
    if (st >= 0) record_bad_index(bad_row, r);
  }
}

__global__ void multinomial_repl_kernel(int64_t* dst, const double* cdf_all, int64_t rows, int64_t cats, int64_t ns,
                                        PhiloxArg r) {
  const uint64_t seed = r.key(), c0 = r.counter();
  int64_t n = rows * ns, nb = blocks_for(n, 2);
  for (int64_t b = global_index(); b < nb; b += global_stride()) {
    PhiloxBlock w = philox4x32_10(c0 + static_cast<uint64_t>(b), seed);
    for (int q = 0; q < 2; ++q) {
      int64_t u = b * 2 + q;
      if (u >= n) break;
      const double* cdf = cdf_all + (u / ns) * cats;
      double t = unit_uniform<double>(&w.w[2 * q]) * cdf[cats - 1];
      int64_t lo = 0, hi = cats;  // std::upper_bound: first c with cdf[c] > t
      while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (!(t < cdf[mid])) lo = mid + 1;
        else hi = mid;
      }
      dst[u] = lo < cats - 1 ? lo : cats - 1;
    }
  }
}

// Keys of the exponential race: w / Exp(1), zero weights -1 (ranked last, by index); the row of
// each flat index for the second (stable) sort.
__global__ void multinomial_keys_kernel(double* key, int64_t* idx, const double* wp, int64_t n, PhiloxArg r) {
  const uint64_t seed = r.key(), c0 = r.counter();
  int64_t nb = blocks_for(n, 2);
  for (int64_t b = global_index(); b < nb; b += global_stride()) {
    PhiloxBlock w = philox4x32_10(c0 + static_cast<uint64_t>(b), seed);
    for (int q = 0; q < 2; ++q) {
      int64_t u = b * 2 + q;
      if (u >= n) break;
      double e = -log1p(-unit_uniform<double>(&w.w[2 * q]));
      key[u] = wp[u] > 0 ? wp[u] / e : -1.0;
      idx[u] = u;
    }
  }
}

__global__ void row_of_kernel(int64_t* row, const int64_t* idx, int64_t n, int64_t cats) {
  for (int64_t i = global_index(); i < n; i += global_stride()) row[i] = idx[i] / cats;
}

// dst[r, s] = category of the s-th ranked flat index of row r (sorted holds rows * cats indices).
__global__ void take_ranked_kernel(int64_t* dst, const int64_t* sorted, int64_t rows, int64_t cats, int64_t ns) {
  for (int64_t u = global_index(); u < rows * ns; u += global_stride()) {
    int64_t r = u / ns, s = u % ns;
    dst[u] = sorted[r * cats + s] - r * cats;
  }
}

void multinomial(const TensorList& in, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  const Device dev = out[0].device();
  cudaStream_t s = current_stream(dev);
  int64_t rows = a.i("rows"), cats = a.i("categories"), ns = a.i("num_samples");
  bool repl = a.b("replacement");
  if (rows == 0) return;
  Tensor w = Tensor::empty(in[0].shape(), DType::Float64, dev);
  copy_values(w, in[0]);
  double* wp = w.data<double>();
  Tensor status = Tensor::empty({rows}, DType::Int64, dev), bad = bad_index_slot(dev);
  multinomial_rows_kernel<<<grid_for(rows), kThreads, 0, s>>>(wp, rows, cats, repl, status.data<int64_t>(), bad.data<int64_t>());
  check_launch("multinomial (check weights)");
  int64_t r = first_bad_index(bad);
  if (r >= 0) {
    int64_t c = read_back<int64_t>(status, r);
    LUCID_CHECK(c == cats, Error, "multinomial: argument 'input' must hold finite, non-negative "
                "weights (probability tensor contains either inf, nan or element < 0), got ", read_back<double>(w, r * cats + c),
                " in row ", r);
    throw Error(str("multinomial: argument 'input' has a row of all-zero weights (invalid multinomial "
                    "distribution, sum of probabilities <= 0) in row ", r));
  }
  with_contiguous_out(out[0], [&](const Tensor& o) {
    int64_t* dst = o.data<int64_t>();
    if (repl) {
      multinomial_repl_kernel<<<grid_for(blocks_for(rows * ns, 2)), kThreads, 0, s>>>(dst, wp, rows, cats, ns, philox_arg(a));
      check_launch("multinomial");
      return;
    }
    // Rank each row's categories by key, descending, ties by index: one stable sort of all keys,
    // then a stable sort by row (both CUB radix sorts, which are stable).
    int64_t n = rows * cats;
    Tensor key = Tensor::empty({n}, DType::Float64, dev), key_out = Tensor::empty({n}, DType::Float64, dev);
    Tensor idx = Tensor::empty({n}, DType::Int64, dev), idx1 = Tensor::empty({n}, DType::Int64, dev);
    multinomial_keys_kernel<<<grid_for(blocks_for(n, 2)), kThreads, 0, s>>>(key.data<double>(), idx.data<int64_t>(), wp, n,
                                                                            philox_arg(a));
    check_launch("multinomial (keys)");
    radix_sort_pairs<double>(dev, s, key.data<double>(), key_out.data<double>(), idx.data<int64_t>(), idx1.data<int64_t>(), n,
                             true);
    if (rows > 1) {
      Tensor row = Tensor::empty({n}, DType::Int64, dev), row_out = Tensor::empty({n}, DType::Int64, dev);
      row_of_kernel<<<grid_for(n), kThreads, 0, s>>>(row.data<int64_t>(), idx1.data<int64_t>(), n, cats);
      check_launch("multinomial (rows)");
      radix_sort_pairs<int64_t>(dev, s, row.data<int64_t>(), row_out.data<int64_t>(), idx1.data<int64_t>(),
                                idx.data<int64_t>(), n, false);
      idx1 = idx;
    }
    take_ranked_kernel<<<grid_for(rows * ns), kThreads, 0, s>>>(dst, idx1.data<int64_t>(), rows, cats, ns);
    check_launch("multinomial");
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Uniform, CUDA, uniform);
LUCID_REGISTER_KERNEL(Normal, CUDA, normal);
LUCID_REGISTER_KERNEL(RandInt, CUDA, randint);
LUCID_REGISTER_KERNEL(Bernoulli, CUDA, bernoulli);
LUCID_REGISTER_KERNEL(RandPerm, CUDA, randperm);
LUCID_REGISTER_KERNEL(Multinomial, CUDA, multinomial);

}  // namespace lucid::cuda
