// Random ops: Uniform (rand, uniform_), Normal (randn, normal_; Box-Muller), RandInt, Bernoulli,
// RandPerm, Multinomial.
// Each is a non-differentiable op with Lowering::Random whose attributes carry the generator's
// seed and the draw offset reserved for it (see core/generator.h). Element i only depends on
// (seed, offset, i): results are deterministic and independent of the thread count, and a
// compiled step can re-run the op by changing the offset attribute.
#include <sleef.h>

#include <algorithm>
#include <cmath>

#include "lucid/backends/cpu/loops.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/creation.h"

namespace lucid {

static Generator& gen_or_default(Generator* g) { return g ? *g : *default_generator(); }

// Calls f(unit, draws) for units [0, nunits), each with k consecutive draws (k divides 4):
// unit u takes draws u*k .. u*k+k-1 of the op's block. Draws are made 8 Philox blocks at a time.
template <class F>
static void for_draws(int64_t nunits, int k, uint64_t seed, uint64_t offset, const F& f) {
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

// Uniform in [0, 1) with as many random bits as the type's mantissa holds, so 16-bit floats
// never round up to 1.
template <class T>
static inline double unit_uniform(const uint32_t* d) {
  if constexpr (std::is_same_v<T, double>) {
    uint64_t v = (static_cast<uint64_t>(d[0]) << 32 | d[1]) >> 11;
    return static_cast<double>(v) * 0x1.0p-53;
  } else if constexpr (std::is_same_v<T, Half>) {
    return static_cast<double>(d[0] >> 21) * 0x1.0p-11;
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return static_cast<double>(d[0] >> 24) * 0x1.0p-8;
  } else {
    return static_cast<double>(d[0] >> 8) * 0x1.0p-24;
  }
}

template <class T>
static constexpr int uniform_draws() { return std::is_same_v<T, double> ? 2 : 1; }

static uint64_t attr_seed(const Attrs& a) { return static_cast<uint64_t>(a.i("seed")); }
static uint64_t attr_offset(const Attrs& a) { return static_cast<uint64_t>(a.i("offset")); }

// Runs `fill(contiguous output)`; a strided in-place destination gets a contiguous temporary.
template <class F>
static void with_contiguous_out(const Tensor& o, const F& fill) {
  if (o.is_contiguous()) { fill(o); return; }
  Tensor t = Tensor::empty(o.shape(), o.dtype());
  fill(t);
  cpu::copy_into(o, t);
}

static OpDef random_op() {
  OpDef d;
  d.num_inputs = 0;
  d.differentiable = false;
  d.lowering = Lowering::Random;
  d.infer = [](const TensorList&, const Attrs& a) { return std::vector<TensorMeta>{{a.ints("shape"), a.dtype("dtype")}}; };
  return d;
}

static Attrs random_attrs(const Shape& shape, DType dtype, Generator& g, uint64_t draws) {
  return {{"shape", shape}, {"dtype", dtype}, {"seed", static_cast<int64_t>(g.initial_seed())},
          {"offset", static_cast<int64_t>(g.reserve(draws))}};
}

static void check_float(DType t, const char* op) {
  LUCID_CHECK(is_floating(t), TypeError, op, ": expected a floating point dtype, got ", dtype_name(t));
}

// ---- Uniform ---------------------------------------------------------------------------------
LUCID_REGISTER_OP(Uniform, "shape:ints, dtype:dtype, seed:int, offset:int, low:float, high:float", [] {
  OpDef d = random_op();
  d.infer = [](const TensorList&, const Attrs& a) {
    check_float(a.dtype("dtype"), "uniform");
    LUCID_CHECK(a.f("low") <= a.f("high"), ValueError, "uniform_: expects 'from' <= 'to', got from=", a.f("low"),
                " and to=", a.f("high"));
    return std::vector<TensorMeta>{{a.ints("shape"), a.dtype("dtype")}};
  };
  d.cpu_kernel = [](const TensorList&, const TensorList& out, const Attrs& a) {
    double lo = a.f("low"), span = a.f("high") - a.f("low");
    with_contiguous_out(out[0], [&](const Tensor& o) {
      LUCID_DISPATCH_FLOATING(o.dtype(), "uniform", [&] {
        using C = compute_t<scalar_t>;
        scalar_t* p = o.data<scalar_t>();
        for_draws(o.numel(), uniform_draws<scalar_t>(), attr_seed(a), attr_offset(a), [&](int64_t i, const uint32_t* dr) {
          p[i] = static_cast<scalar_t>(static_cast<C>(lo + span * unit_uniform<scalar_t>(dr)));
        });
      });
    });
  };
  return d;
}());

static uint64_t uniform_count(int64_t n, DType t) { return static_cast<uint64_t>(n) * (t == DType::Float64 ? 2 : 1); }

Tensor rand(const Shape& shape, DType dtype, Generator* gen) {
  Attrs a = random_attrs(shape, dtype, gen_or_default(gen), uniform_count(numel_of(shape), dtype));
  a.set("low", 0.0).set("high", 1.0);
  return dispatch1(OpId::Uniform, {}, a);
}

const Tensor& uniform_(const Tensor& x, double low, double high, Generator* gen) {
  Attrs a = random_attrs(x.shape(), x.dtype(), gen_or_default(gen), uniform_count(x.numel(), x.dtype()));
  a.set("low", low).set("high", high);
  return dispatch_inplace(OpId::Uniform, x, {}, a);
}

// ---- Normal (Box-Muller on pairs of uniforms) ----------------------------------------------------
// Pair j (elements 2j, 2j+1) uses draws 2j, 2j+1 (4j..4j+3 for float64): u1 in (0, 1], u2 in
// [0, 1); z = sqrt(-2 log u1) * (cos, sin)(2 pi u2). Vectorised with SLEEF, 8 (4) pairs at a time.
template <class T>
static void normal_fill(T* p, int64_t n, double mu, double sd, uint64_t seed, uint64_t offset) {
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
        for (int h = 0; h < 16; h += 8) {
          __m256 r = _mm256_sqrt_ps(_mm256_mul_ps(_mm256_set1_ps(-2.0f), Sleef_logf8_u10(_mm256_load_ps(u1 + h))));
          Sleef___m256_2 sc = Sleef_sincospif8_u05(_mm256_mul_ps(_mm256_set1_ps(2.0f), _mm256_load_ps(u2 + h)));
          _mm256_store_ps(fs + h, _mm256_mul_ps(r, sc.x));
          _mm256_store_ps(fc + h, _mm256_mul_ps(r, sc.y));
        }
        for (int q = 0; q < 16; ++q) { zs[q] = fs[q]; zc[q] = fc[q]; }
      }
      for (int64_t q = 0; q < G; ++q) {
        int64_t j = g * G + q;
        if (2 * j < n) p[2 * j] = static_cast<T>(static_cast<C>(mu + sd * zc[q]));
        if (2 * j + 1 < n) p[2 * j + 1] = static_cast<T>(static_cast<C>(mu + sd * zs[q]));
      }
    }
  });
}

LUCID_REGISTER_OP(Normal, "shape:ints, dtype:dtype, mean:float, std:float, seed:int, offset:int", [] {
  OpDef d = random_op();
  d.infer = [](const TensorList&, const Attrs& a) {
    check_float(a.dtype("dtype"), "normal");
    LUCID_CHECK(a.f("std") >= 0, ValueError, "normal_: expects std >= 0.0, got std=", a.f("std"));
    return std::vector<TensorMeta>{{a.ints("shape"), a.dtype("dtype")}};
  };
  d.cpu_kernel = [](const TensorList&, const TensorList& out, const Attrs& a) {
    double mu = a.f("mean"), sd = a.f("std");
    with_contiguous_out(out[0], [&](const Tensor& o) {
      LUCID_DISPATCH_FLOATING(o.dtype(), "normal", [&] {
        normal_fill<scalar_t>(o.data<scalar_t>(), o.numel(), mu, sd, attr_seed(a), attr_offset(a));
      });
    });
  };
  return d;
}());

static uint64_t normal_count(int64_t n, DType t) { return static_cast<uint64_t>((n + 1) / 2) * (t == DType::Float64 ? 4 : 2); }

Tensor randn(const Shape& shape, DType dtype, Generator* gen) {
  Attrs a = random_attrs(shape, dtype, gen_or_default(gen), normal_count(numel_of(shape), dtype));
  a.set("mean", 0.0).set("std", 1.0);
  return dispatch1(OpId::Normal, {}, a);
}

const Tensor& normal_(const Tensor& x, double mean, double std, Generator* gen) {
  Attrs a = random_attrs(x.shape(), x.dtype(), gen_or_default(gen), normal_count(x.numel(), x.dtype()));
  a.set("mean", mean).set("std", std);
  return dispatch_inplace(OpId::Normal, x, {}, a);
}

// ---- RandInt ---------------------------------------------------------------------------------
static int randint_draws(int64_t low, int64_t high) {
  return static_cast<uint64_t>(high) - static_cast<uint64_t>(low) <= (uint64_t{1} << 32) ? 1 : 2;
}

LUCID_REGISTER_OP(RandInt, "shape:ints, dtype:dtype, seed:int, offset:int, low:int, high:int", [] {
  OpDef d = random_op();
  d.infer = [](const TensorList&, const Attrs& a) {
    LUCID_CHECK(a.i("low") < a.i("high"), ValueError, "randint: expects 'low' < 'high', got low=", a.i("low"),
                " and high=", a.i("high"));
    return std::vector<TensorMeta>{{a.ints("shape"), a.dtype("dtype")}};
  };
  d.cpu_kernel = [](const TensorList&, const TensorList& out, const Attrs& a) {
    int64_t low = a.i("low"), high = a.i("high");
    uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
    int k = randint_draws(low, high);
    with_contiguous_out(out[0], [&](const Tensor& o) {
      LUCID_DISPATCH_ALL(o.dtype(), "randint", [&] {
        using C = compute_t<scalar_t>;
        scalar_t* p = o.data<scalar_t>();
        for_draws(o.numel(), k, attr_seed(a), attr_offset(a), [&](int64_t i, const uint32_t* dr) {
          // 32-bit draws: multiply-shift (Lemire) instead of a division; 64-bit: modulo.
          uint64_t off = k == 1 ? (static_cast<uint64_t>(dr[0]) * range) >> 32
                                : (static_cast<uint64_t>(dr[0]) << 32 | dr[1]) % range;
          int64_t r = static_cast<int64_t>(static_cast<uint64_t>(low) + off);
          p[i] = static_cast<scalar_t>(static_cast<C>(r));
        });
      });
    });
  };
  return d;
}());

Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Generator* gen) {
  LUCID_CHECK(low < high, ValueError, "randint: expects 'low' < 'high', got low=", low, " and high=", high);
  uint64_t draws = static_cast<uint64_t>(numel_of(shape)) * randint_draws(low, high);
  Attrs a = random_attrs(shape, dtype, gen_or_default(gen), draws);
  a.set("low", low).set("high", high);
  return dispatch1(OpId::RandInt, {}, a);
}

// ---- Bernoulli -------------------------------------------------------------------------------
// With no input: probability attribute p. With one input: per-element probabilities (output
// has the input's shape; dtype from the attribute).
LUCID_REGISTER_OP(Bernoulli, "shape:ints, dtype:dtype, p:float?, seed:int, offset:int", [] {
  OpDef d = random_op();
  d.num_inputs = -1;
  d.nondiff_inputs = {0};
  d.infer = [](const TensorList& in, const Attrs& a) {
    LUCID_CHECK(in.size() <= 1, ValueError, "bernoulli: expected at most one probability tensor");
    if (in.empty()) {
      double p = a.f("p");
      LUCID_CHECK(p >= 0 && p <= 1, ValueError, "bernoulli_: expects 0 <= p <= 1, got p=", p);
    } else {
      LUCID_CHECK(is_floating(in[0].dtype()), TypeError, "bernoulli: expected a floating point probability tensor, got ",
                  dtype_name(in[0].dtype()));
      LUCID_CHECK(broadcast_shapes(in[0].shape(), a.ints("shape"), "bernoulli") == a.ints("shape"), ValueError,
                  "bernoulli: probabilities of shape ", shape_str(in[0].shape()), " do not broadcast to the output shape ",
                  shape_str(a.ints("shape")));
    }
    return std::vector<TensorMeta>{{a.ints("shape"), a.dtype("dtype")}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    Tensor probs;
    if (!in.empty()) {
      probs = Tensor::empty(a.ints("shape"), DType::Float64);
      cpu::copy_into(probs, in[0]);  // broadcasts a probability tensor to the output shape
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
  };
  return d;
}());

Tensor bernoulli(const Shape& shape, double p, DType dtype, Generator* gen) {
  Attrs a = random_attrs(shape, dtype, gen_or_default(gen), static_cast<uint64_t>(numel_of(shape)));
  a.set("p", p);
  return dispatch1(OpId::Bernoulli, {}, a);
}

Tensor bernoulli(const Tensor& probs, Generator* gen) {
  Attrs a = random_attrs(probs.shape(), probs.dtype(), gen_or_default(gen), static_cast<uint64_t>(probs.numel()));
  Tensor pr = probs.detach();
  return dispatch1(OpId::Bernoulli, {pr}, a);
}

const Tensor& bernoulli_(const Tensor& x, double p, Generator* gen) {
  Attrs a = random_attrs(x.shape(), x.dtype(), gen_or_default(gen), static_cast<uint64_t>(x.numel()));
  a.set("p", p);
  return dispatch_inplace(OpId::Bernoulli, x, {}, a);
}

const Tensor& bernoulli_(const Tensor& x, const Tensor& p, Generator* gen) {
  Attrs a = random_attrs(x.shape(), x.dtype(), gen_or_default(gen), static_cast<uint64_t>(x.numel()));
  Tensor pr = p.detach();
  return dispatch_inplace(OpId::Bernoulli, x, {pr}, a);
}

// ---- RandPerm --------------------------------------------------------------------------------
// Sorting indices by 64-bit Philox keys gives a uniform permutation (ties, probability ~n^2/2^65,
// fall back to index order), deterministic and independent of the thread count.
LUCID_REGISTER_OP(RandPerm, "n:int, dtype:dtype, seed:int, offset:int", [] {
  OpDef d = random_op();
  d.infer = [](const TensorList&, const Attrs& a) {
    int64_t n = a.i("n");
    LUCID_CHECK(n >= 0, ValueError, "randperm: argument 'n' must be non-negative, got ", n);
    LUCID_CHECK(a.dtype("dtype") != DType::Bool, TypeError, "randperm: dtype bool is not supported");
    return std::vector<TensorMeta>{{{n}, a.dtype("dtype")}};
  };
  d.cpu_kernel = [](const TensorList&, const TensorList& out, const Attrs& a) {
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
  };
  return d;
}());

Tensor randperm(int64_t n, DType dtype, Generator* gen) {
  LUCID_CHECK(n >= 0, ValueError, "randperm: argument 'n' must be non-negative, got ", n);
  Attrs a{{"n", n}, {"dtype", dtype}, {"seed", static_cast<int64_t>(gen_or_default(gen).initial_seed())},
          {"offset", static_cast<int64_t>(gen_or_default(gen).reserve(2 * static_cast<uint64_t>(n)))}};
  return dispatch1(OpId::RandPerm, {}, a);
}

// ---- Multinomial ------------------------------------------------------------------------------
// Rows of non-negative weights (1-D: one row). With replacement, sample s of a row inverts the
// row's cumulative sum at a 53-bit uniform; without, the row's categories are ranked by
// w_c / E_c with E_c ~ Exp(1) (the exponential race, as PyTorch) and the first num_samples are
// taken. Each uniform takes two draws: rows * (num_samples or categories) * 2 in all.
static uint64_t multinomial_draws(const Attrs& a) {
  int64_t per_row = a.b("replacement") ? a.i("num_samples") : a.i("categories");
  return 2 * static_cast<uint64_t>(a.i("rows")) * static_cast<uint64_t>(per_row);
}

static void check_multinomial(const Tensor& p, int64_t num_samples, bool replacement) {
  LUCID_CHECK(p.ndim() == 1 || p.ndim() == 2, Error, "multinomial: argument 'input' (prob_dist) must be 1 or 2 dim, got ",
              p.ndim(), " dims (shape ", shape_str(p.shape()), ")");
  LUCID_CHECK(is_floating(p.dtype()), Error, "multinomial: argument 'input' must have a floating point dtype, got ",
              dtype_name(p.dtype()));
  LUCID_CHECK(num_samples > 0, Error, "multinomial: argument 'num_samples' must be positive (cannot sample n_sample <= 0 "
              "samples), got ", num_samples);
  int64_t cats = p.shape().back();
  LUCID_CHECK(replacement || num_samples <= cats, Error, "multinomial: argument 'num_samples' (", num_samples,
              ") cannot exceed the number of categories (", cats, ") when sampling without replacement");
  LUCID_CHECK(cats <= (int64_t{1} << 24), Error, "multinomial: the number of categories cannot exceed 2^24, got ", cats);
}

LUCID_REGISTER_OP(Multinomial, "num_samples:int, replacement:bool, rows:int, categories:int, seed:int, offset:int", [] {
  OpDef d = random_op();
  d.num_inputs = 1;
  d.nondiff_inputs = {0};
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& p = in[0];
    int64_t ns = a.i("num_samples");
    check_multinomial(p, ns, a.b("replacement"));
    int64_t rows = p.ndim() == 2 ? p.shape()[0] : 1;
    LUCID_CHECK(a.i("rows") == rows && a.i("categories") == p.shape().back(), ValueError,
                "multinomial: the rows/categories attributes do not match the input of shape ", shape_str(p.shape()));
    Shape s = p.ndim() == 2 ? Shape{rows, ns} : Shape{ns};
    return std::vector<TensorMeta>{{s, DType::Int64}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    int64_t rows = a.i("rows"), cats = a.i("categories"), ns = a.i("num_samples");
    bool repl = a.b("replacement");
    Tensor w = Tensor::empty(in[0].shape(), DType::Float64);
    cpu::copy_into(w, in[0]);
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
  };
  return d;
}());

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  check_multinomial(probs, num_samples, replacement);
  Attrs a{{"num_samples", num_samples}, {"replacement", replacement},
          {"rows", probs.ndim() == 2 ? probs.shape()[0] : int64_t{1}}, {"categories", probs.shape().back()}};
  Generator& g = gen_or_default(gen);
  a.set("seed", static_cast<int64_t>(g.initial_seed())).set("offset", static_cast<int64_t>(g.reserve(multinomial_draws(a))));
  return dispatch1(OpId::Multinomial, {probs.detach()}, a);
}

uint64_t random_draws(OpId id, const Attrs& a) {
  switch (id) {
    case OpId::Uniform: return uniform_count(numel_of(a.ints("shape")), a.dtype("dtype"));
    case OpId::Normal: return normal_count(numel_of(a.ints("shape")), a.dtype("dtype"));
    case OpId::RandInt: return static_cast<uint64_t>(numel_of(a.ints("shape"))) * randint_draws(a.i("low"), a.i("high"));
    case OpId::Bernoulli: return static_cast<uint64_t>(numel_of(a.ints("shape")));
    case OpId::RandPerm: return 2 * static_cast<uint64_t>(a.i("n"));
    case OpId::Multinomial: return multinomial_draws(a);
    default: throw Error(str("random_draws: ", op_name(id), " is not a random op"));
  }
}

}  // namespace lucid
