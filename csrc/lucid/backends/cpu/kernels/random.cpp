// CPU kernels of the random ops (records in ops/random_ops.cpp): Uniform, Normal, RandInt,
// Bernoulli, RandPerm, Multinomial. Draws come 8 Philox blocks at a time from the AVX2 stream
// (backends/cpu/philox_vec.h) and are turned into values by the device-neutral rules of
// ops/random_draws.h, so element i only depends on (seed, offset, i): results are the same for
// any thread count, and the same as another backend's for the same attributes. Normal's
// Box-Muller transform runs on SLEEF vectors (float: log and sincospi in double, rounded to
// float, as ops/random_draws.h says).
#include <sleef.h>

#include <algorithm>
#include <cmath>

#include "lucid/backends/cpu/loops.h"
#include "lucid/backends/cpu/philox_vec.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/op_def.h"
#include "lucid/ops/random_draws.h"

namespace lucid::cpu {

namespace {

// Calls f(unit, draws) for units [0, nunits), each with k consecutive draws (k divides 4):
// unit u takes draws u*k .. u*k+k-1 of the op's block. Draws are made 8 Philox blocks at a time.
template <class F>
void for_draws(int64_t nunits, int k, uint64_t seed, uint64_t offset, const F& f) {
  int64_t per = 32 / k;  // units per group of 8 blocks
  int64_t ngroups = (nunits + per - 1) / per;
  uint64_t c0 = offset / 4;
  parallel_for(0, ngroups, std::max<int64_t>(1, kParallelGrain / 32), [&](int64_t b, int64_t e) {
    alignas(32) uint32_t w[32];
    for (int64_t g = b; g < e; ++g) {
      philox_draws8(c0 + static_cast<uint64_t>(g) * 8, seed, w);
      int64_t u0 = g * per, u1 = std::min(nunits, u0 + per);
      for (int64_t u = u0; u < u1; ++u) f(u, &w[(u - u0) * k]);
    }
  });
}

uint64_t attr_seed(const Attrs& a) { return static_cast<uint64_t>(a.i("seed")); }
uint64_t attr_offset(const Attrs& a) { return static_cast<uint64_t>(a.i("offset")); }

// Runs `fill(contiguous output)`; a strided in-place destination gets a contiguous temporary.
template <class F>
void with_contiguous_out(const Tensor& o, const F& fill) {
  if (o.is_contiguous()) { fill(o); return; }
  Tensor t = Tensor::empty(o.shape(), o.dtype());
  fill(t);
  copy_into(o, t);
}

// ---- Uniform ---------------------------------------------------------------------------------
void uniform_kernel(const TensorList&, const TensorList& out, const Attrs& a) {
  double lo = a.f("low"), span = a.f("high") - a.f("low");
  with_contiguous_out(out[0], [&](const Tensor& o) {
    LUCID_DISPATCH_FLOATING(o.dtype(), "uniform", [&] {
      using C = compute_t<scalar_t>;
      scalar_t* p = o.data<scalar_t>();
      for_draws(o.numel(), uniform_draws<scalar_t>(), attr_seed(a), attr_offset(a), [&](int64_t i, const uint32_t* dr) {
        p[i] = static_cast<scalar_t>(static_cast<C>(affine_draw(lo, span, unit_uniform<scalar_t>(dr))));
      });
    });
  });
}

// ---- Normal (Box-Muller on pairs of uniforms) ----------------------------------------------------
// Pair j (elements 2j, 2j+1) uses draws 2j, 2j+1 (4j..4j+3 for float64): u1 in (0, 1], u2 in
// [0, 1); z = sqrt(-2 log u1) * (cos, sin)(2 pi u2). Vectorised with SLEEF, 4 pairs at a time.
template <class T>
void normal_fill(T* p, int64_t n, double mu, double sd, uint64_t seed, uint64_t offset) {
  using C = compute_t<T>;
  int64_t npairs = (n + 1) / 2;
  uint64_t c0 = offset / 4;
  constexpr bool dbl = std::is_same_v<T, double>;
  constexpr int64_t G = dbl ? 8 : 16;  // pairs per group of 8 Philox blocks (32 draws)
  int64_t ngroups = (npairs + G - 1) / G;
  parallel_for(0, ngroups, std::max<int64_t>(1, kParallelGrain / (2 * G)), [&](int64_t b, int64_t e) {
    alignas(32) uint32_t w[32];
    alignas(32) double zc[16], zs[16];
    for (int64_t g = b; g < e; ++g) {
      philox_draws8(c0 + static_cast<uint64_t>(g) * 8, seed, w);
      if constexpr (dbl) {
        alignas(32) double u1[8], u2[8];
        for (int q = 0; q < 8; ++q) {
          u1[q] = 1.0 - unit_uniform<double>(&w[4 * q]);
          u2[q] = unit_uniform<double>(&w[4 * q + 2]);
        }
        for (int h = 0; h < 8; h += 4) {
          __m256d r = _mm256_sqrt_pd(_mm256_mul_pd(_mm256_set1_pd(-2.0), Sleef_logd4_u10(_mm256_load_pd(u1 + h))));
          Sleef___m256d_2 sc = Sleef_sincospid4_u05(_mm256_mul_pd(_mm256_set1_pd(2.0), _mm256_load_pd(u2 + h)));
          _mm256_store_pd(zs + h, _mm256_mul_pd(r, sc.x));
          _mm256_store_pd(zc + h, _mm256_mul_pd(r, sc.y));
        }
      } else {
        alignas(32) float u1[16], u2[16], fs[16], fc[16];
        for (int q = 0; q < 16; ++q) {
          u1[q] = 1.0f - static_cast<float>(w[2 * q] >> 8) * 0x1.0p-24f;
          u2[q] = static_cast<float>(w[2 * q + 1] >> 8) * 0x1.0p-24f;
        }
        // log and sincospi in double, rounded to float: the correctly rounded float for every
        // one of the 2^24 possible u1 and u2 (the double results lie >= 21 double ulps from a
        // float rounding midpoint), so a device's double log/sincospi gives the same floats.
        for (int h = 0; h < 16; h += 4) {
          __m128 lg = _mm256_cvtpd_ps(Sleef_logd4_u10(_mm256_cvtps_pd(_mm_load_ps(u1 + h))));
          __m128 r = _mm_sqrt_ps(_mm_mul_ps(_mm_set1_ps(-2.0f), lg));
          Sleef___m256d_2 sc = Sleef_sincospid4_u05(_mm256_cvtps_pd(_mm_mul_ps(_mm_set1_ps(2.0f), _mm_load_ps(u2 + h))));
          _mm_store_ps(fs + h, _mm_mul_ps(r, _mm256_cvtpd_ps(sc.x)));
          _mm_store_ps(fc + h, _mm_mul_ps(r, _mm256_cvtpd_ps(sc.y)));
        }
        for (int q = 0; q < 16; ++q) { zs[q] = fs[q]; zc[q] = fc[q]; }
      }
      for (int64_t q = 0; q < G; ++q) {
        int64_t j = g * G + q;
        if (2 * j < n) p[2 * j] = static_cast<T>(static_cast<C>(affine_draw(mu, sd, zc[q])));
        if (2 * j + 1 < n) p[2 * j + 1] = static_cast<T>(static_cast<C>(affine_draw(mu, sd, zs[q])));
      }
    }
  });
}

void normal_kernel(const TensorList&, const TensorList& out, const Attrs& a) {
  double mu = a.f("mean"), sd = a.f("std");
  with_contiguous_out(out[0], [&](const Tensor& o) {
    LUCID_DISPATCH_FLOATING(o.dtype(), "normal", [&] {
      normal_fill<scalar_t>(o.data<scalar_t>(), o.numel(), mu, sd, attr_seed(a), attr_offset(a));
    });
  });
}

// ---- RandInt ---------------------------------------------------------------------------------
void randint_kernel(const TensorList&, const TensorList& out, const Attrs& a) {
  int64_t low = a.i("low"), high = a.i("high");
  uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  int k = randint_draws(low, high);
  with_contiguous_out(out[0], [&](const Tensor& o) {
    LUCID_DISPATCH_ALL(o.dtype(), "randint", [&] {
      using C = compute_t<scalar_t>;
      scalar_t* p = o.data<scalar_t>();
      for_draws(o.numel(), k, attr_seed(a), attr_offset(a), [&](int64_t i, const uint32_t* dr) {
        int64_t r = static_cast<int64_t>(static_cast<uint64_t>(low) + randint_offset(dr, k, range));
        p[i] = static_cast<scalar_t>(static_cast<C>(r));
      });
    });
  });
}

// ---- Bernoulli -------------------------------------------------------------------------------
void bernoulli_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor probs;
  if (!in.empty()) {
    probs = Tensor::empty(a.ints("shape"), DType::Float64);
    copy_into(probs, in[0]);  // broadcasts a probability tensor to the output shape
    const double* pp = probs.data<double>();
    for (int64_t i = 0, n = probs.numel(); i < n; ++i)  // as PyTorch; NaN fails too
      LUCID_CHECK(pp[i] >= 0 && pp[i] <= 1, ValueError, "bernoulli: expected all probabilities in [0, 1], got ", pp[i]);
  }
  double p = in.empty() ? a.f("p") : 0.0;
  with_contiguous_out(out[0], [&](const Tensor& o) {
    LUCID_DISPATCH_ALL(o.dtype(), "bernoulli", [&] {
      using C = compute_t<scalar_t>;
      scalar_t* dst = o.data<scalar_t>();
      const double* pp = probs.defined() ? probs.data<double>() : nullptr;
      for_draws(o.numel(), 1, attr_seed(a), attr_offset(a), [&](int64_t i, const uint32_t* dr) {
        double pi = pp ? pp[i] : p;
        dst[i] = static_cast<scalar_t>(static_cast<C>(unit_uniform<float>(dr) < pi ? 1 : 0));
      });
    });
  });
}

// ---- RandPerm --------------------------------------------------------------------------------
// Sorting indices by 64-bit Philox keys gives a uniform permutation (ties, probability ~n^2/2^65,
// fall back to index order), deterministic and independent of the thread count.
void randperm_kernel(const TensorList&, const TensorList& out, const Attrs& a) {
  int64_t n = a.i("n");
  std::vector<std::pair<uint64_t, int64_t>> keys(n);
  for_draws(n, 2, attr_seed(a), attr_offset(a), [&](int64_t i, const uint32_t* dr) {
    keys[i] = {static_cast<uint64_t>(dr[0]) << 32 | dr[1], i};
  });
  std::sort(keys.begin(), keys.end());
  with_contiguous_out(out[0], [&](const Tensor& o) {
    LUCID_DISPATCH_NUMERIC(o.dtype(), "randperm", [&] {
      scalar_t* p = o.data<scalar_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(keys[i].second));
    });
  });
}

// ---- Multinomial ------------------------------------------------------------------------------
// With replacement, sample s of a row inverts the row's cumulative sum at a 53-bit uniform;
// without, the row's categories are ranked by w_c / E_c with E_c ~ Exp(1) (the exponential race,
// as PyTorch) and the first num_samples are taken.
void multinomial_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  int64_t rows = a.i("rows"), cats = a.i("categories"), ns = a.i("num_samples");
  bool repl = a.b("replacement");
  Tensor w = Tensor::empty(in[0].shape(), DType::Float64);
  copy_into(w, in[0]);
  double* wp = w.data<double>();
  // Validate first: nothing is drawn from a bad distribution. Replacement rows become cumulative sums.
  for (int64_t r = 0; r < rows; ++r) {
    double total = 0;
    for (int64_t c = 0; c < cats; ++c) {
      double v = wp[r * cats + c];
      LUCID_CHECK(std::isfinite(v) && v >= 0, Error, "multinomial: argument 'input' must hold finite, non-negative "
                  "weights (probability tensor contains either inf, nan or element < 0), got ", v, " in row ", r);
      total += v;
      if (repl) wp[r * cats + c] = total;
    }
    LUCID_CHECK(total > 0, Error, "multinomial: argument 'input' has a row of all-zero weights (invalid multinomial "
                "distribution, sum of probabilities <= 0) in row ", r);
  }
  with_contiguous_out(out[0], [&](const Tensor& o) {
    int64_t* dst = o.data<int64_t>();
    if (repl) {
      for_draws(rows * ns, 2, attr_seed(a), attr_offset(a), [&](int64_t u, const uint32_t* dr) {
        const double* cdf = wp + (u / ns) * cats;
        double t = unit_uniform<double>(dr) * cdf[cats - 1];
        int64_t c = std::upper_bound(cdf, cdf + cats, t) - cdf;
        dst[u] = std::min(c, cats - 1);
      });
      return;
    }
    std::vector<double> key(rows * cats);
    for_draws(rows * cats, 2, attr_seed(a), attr_offset(a), [&](int64_t u, const uint32_t* dr) {
      double e = -std::log1p(-unit_uniform<double>(dr));  // Exp(1), from u in [0, 1)
      key[u] = wp[u] > 0 ? wp[u] / e : -1.0;             // zero weights rank last, by index
    });
    parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / (8 * cats)), [&](int64_t b, int64_t e) {
      std::vector<int64_t> idx(cats);
      for (int64_t r = b; r < e; ++r) {
        const double* kr = key.data() + r * cats;
        for (int64_t c = 0; c < cats; ++c) idx[c] = c;
        std::partial_sort(idx.begin(), idx.begin() + ns, idx.end(),
                          [&](int64_t x, int64_t y) { return kr[x] > kr[y] || (kr[x] == kr[y] && x < y); });
        std::copy(idx.begin(), idx.begin() + ns, dst + r * ns);
      }
    });
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Uniform, CPU, uniform_kernel);
LUCID_REGISTER_KERNEL(Normal, CPU, normal_kernel);
LUCID_REGISTER_KERNEL(RandInt, CPU, randint_kernel);
LUCID_REGISTER_KERNEL(Bernoulli, CPU, bernoulli_kernel);
LUCID_REGISTER_KERNEL(RandPerm, CPU, randperm_kernel);
LUCID_REGISTER_KERNEL(Multinomial, CPU, multinomial_kernel);

}  // namespace lucid::cpu
