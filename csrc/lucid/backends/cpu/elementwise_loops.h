// The CPU's row loops of elementwise ops, instantiated from scalar functors (ops/scalar_functors.h)
// for each row of the functor table (ops/list/elementwise_functors.def). A plain functor F has
//   template <class C> static C apply(C x)            (unary)    or
//   template <class C> static C apply(C a, C b)       (binary),   or
//   template <class C> static C apply(C a, C b, C c)  (ternary: where, lerp),
// where C is the compute type (float for 16-bit floats). make_blocks<F> gives one BlockFn per
// dtype of its domain: the eager kernel runs it over a StridedIter, the compiled fused-elementwise
// interpreter over 1024-element blocks (backends/cpu/elementwise_blocks.h). A functor with
// parameters (leaky_relu's slope, clamp's bounds...) is an object made from the op's Attrs and
// runs through ew_attr_row, in the eager kernel and (as param_row) in the fused interpreter.
// Where cpu::VecF32<F> (backends/cpu/scalar_vec.h) has a vectorised (Sleef/AVX2) float32 row
// path, the loops use it for float32 rows (and 16-bit rows widened to float, plain unary functors
// and functors with parameters of one or two inputs); apply stays the
// definition and serves every other dtype.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#include "lucid/backends/cpu/elementwise_blocks.h"
#include "lucid/backends/cpu/float16_convert.h"
#include "lucid/backends/cpu/loops.h"
#include "lucid/backends/cpu/scalar_vec.h"
#include "lucid/ops/elementwise_functors.h"

namespace lucid::cpu {

template <class F>
concept HasVecF32 = requires(float* o, const float* a, int64_t n) { VecF32<F>::run(o, a, n); };

template <class T>
constexpr bool is_16bit_float = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// A 16-bit row (output and `arity` inputs of type T, any strides; stride 0 is a broadcast
// scalar) computed in float 256 at a time: widen the inputs (float16_convert.h's vector
// conversion where contiguous, a gather elsewhere), run body(out, in, m) over the floats, narrow
// the result. The values of the scalar loop `T(apply<float>(float(a)...))`, vectorised.
template <class T, int Arity, class Body>
void widened_row(char** p, const int64_t* s, int64_t n, Body body) {
  constexpr int64_t unit = sizeof(T);
  float in[Arity][256], out[256];
  for (int k = 0; k < Arity; ++k)
    if (s[k + 1] == 0) std::fill(in[k], in[k] + 256, static_cast<float>(*reinterpret_cast<const T*>(p[k + 1])));
  for (int64_t b = 0; b < n; b += 256) {
    int64_t m = std::min<int64_t>(256, n - b);
    for (int k = 0; k < Arity; ++k) {
      if (s[k + 1] == unit) widen(reinterpret_cast<const T*>(p[k + 1]) + b, in[k], m);
      else if (s[k + 1] != 0)
        for (int64_t i = 0; i < m; ++i) in[k][i] = static_cast<float>(*reinterpret_cast<const T*>(p[k + 1] + (b + i) * s[k + 1]));
    }
    body(out, in, m);
    if (s[0] == unit) narrow(out, reinterpret_cast<T*>(p[0]) + b, m);
    else for (int64_t i = 0; i < m; ++i) *reinterpret_cast<T*>(p[0] + (b + i) * s[0]) = T(out[i]);
  }
}

// ReLU and ReLU6 of a dense bfloat16 row on the 16-bit patterns, 16 lanes at a time: x < 0
// (sign set, nonzero magnitude, not NaN) becomes +0, and for ReLU6 x > 6 (positive, above 0x40C0,
// not NaN) becomes 6; every other value, -0.0 and NaN included, passes unchanged. The values of
// the widened row (the result is one of x, 0, 6: exact in bfloat16), without converting (the
// widen-narrow loop spent 0.2 ns an element; a compiled MobileNet-v2 runs 144M of them at batch 32).
template <bool Six>
inline void bf16_relu_row(const BFloat16* x, BFloat16* y, int64_t n) {
  const __m256i mag_mask = _mm256_set1_epi16(0x7fff), zero = _mm256_setzero_si256(), inf = _mm256_set1_epi16(0x7f80),
                six = _mm256_set1_epi16(0x40C0);
  auto one = [&](__m256i v) {
    const __m256i mag = _mm256_and_si256(v, mag_mask);
    const __m256i finite_or_inf = _mm256_andnot_si256(_mm256_cmpgt_epi16(mag, inf), _mm256_set1_epi16(-1));
    const __m256i neg = _mm256_and_si256(_mm256_and_si256(_mm256_cmpgt_epi16(zero, v), _mm256_cmpgt_epi16(mag, zero)), finite_or_inf);
    __m256i r = _mm256_andnot_si256(neg, v);
    if constexpr (Six) {
      const __m256i over = _mm256_and_si256(_mm256_and_si256(_mm256_cmpgt_epi16(v, six), finite_or_inf),
                                            _mm256_cmpgt_epi16(v, _mm256_set1_epi16(-1)));  // positive only
      r = _mm256_blendv_epi8(r, six, over);
    }
    return r;
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), one(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
  if (i < n) {
    alignas(32) BFloat16 t[16] = {};
    std::copy(x + i, x + n, t);
    _mm256_store_si256(reinterpret_cast<__m256i*>(t), one(_mm256_load_si256(reinterpret_cast<const __m256i*>(t))));
    std::copy(t, t + (n - i), y + i);
  }
}

template <class F, class T, class O>
void unary_block(char** p, const int64_t* s, int64_t n) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, BFloat16> && std::is_same_v<O, T> &&
                (std::is_same_v<F, sm::Relu> || std::is_same_v<F, sm::Relu6>)) {
    if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
      bf16_relu_row<std::is_same_v<F, sm::Relu6>>(reinterpret_cast<const BFloat16*>(p[1]), reinterpret_cast<BFloat16*>(p[0]), n);
      return;
    }
  }
  if constexpr (is_16bit_float<T> && std::is_same_v<O, T>) {
    widened_row<T, 1>(p, s, n, [](float* o, float (*in)[256], int64_t m) {
      if constexpr (HasVecF32<F>) VecF32<F>::run(o, in[0], m);
      else for (int64_t i = 0; i < m; ++i) o[i] = F::template apply<float>(in[0][i]);
    });
    return;
  }
  if (s[0] == sizeof(O) && s[1] == sizeof(T)) {
    O* o = reinterpret_cast<O*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    if constexpr (HasVecF32<F> && std::is_same_v<T, float> && std::is_same_v<O, float>) {
      VecF32<F>::run(o, a, n);
      return;
    }
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(F::template apply<C>(static_cast<C>(a[i])));
    return;
  }
  if constexpr (HasVecF32<F> && std::is_same_v<T, float> && std::is_same_v<O, float>) {
    // Strided float32 row: gather, run the vector path, scatter.
    float in[256], out[256];
    for (int64_t b = 0; b < n; b += 256) {
      int64_t m = std::min<int64_t>(256, n - b);
      for (int64_t i = 0; i < m; ++i) in[i] = *reinterpret_cast<const float*>(p[1] + (b + i) * s[1]);
      VecF32<F>::run(out, in, m);
      for (int64_t i = 0; i < m; ++i) *reinterpret_cast<float*>(p[0] + (b + i) * s[0]) = out[i];
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<O*>(p[0] + i * s[0]) =
        static_cast<O>(F::template apply<C>(static_cast<C>(*reinterpret_cast<const T*>(p[1] + i * s[1]))));
}

// Binary functors may have VecF32<F>::run(o, a, b, n) for contiguous float32 rows (fused
// activation backwards).
template <class F>
concept HasVec2F32 = requires(float* o, const float* a, const float* b, int64_t n) { VecF32<F>::run(o, a, b, n); };

template <class F, class T, class O>
void binary_block(char** p, const int64_t* s, int64_t n) {
  using C = compute_t<T>;
  if constexpr (is_16bit_float<T> && std::is_same_v<O, T>) {
    widened_row<T, 2>(p, s, n, [](float* o, float (*in)[256], int64_t m) {
      if constexpr (HasVec2F32<F>) VecF32<F>::run(o, in[0], in[1], m);
      else for (int64_t i = 0; i < m; ++i) o[i] = F::template apply<float>(in[0][i], in[1][i]);
    });
    return;
  }
  O* o = reinterpret_cast<O*>(p[0]);
  const T* a = reinterpret_cast<const T*>(p[1]);
  const T* b = reinterpret_cast<const T*>(p[2]);
  if (s[0] == sizeof(O) && s[1] == sizeof(T) && s[2] == sizeof(T)) {
    if constexpr (HasVec2F32<F> && std::is_same_v<T, float> && std::is_same_v<O, float>) {
      VecF32<F>::run(o, a, b, n);
      return;
    }
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(F::template apply<C>(static_cast<C>(a[i]), static_cast<C>(b[i])));
    return;
  }
  if (s[0] == sizeof(O) && s[1] == sizeof(T) && s[2] == 0) {
    const C bv = static_cast<C>(b[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(F::template apply<C>(static_cast<C>(a[i]), bv));
    return;
  }
  if (s[0] == sizeof(O) && s[1] == 0 && s[2] == sizeof(T)) {
    const C av = static_cast<C>(a[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(F::template apply<C>(av, static_cast<C>(b[i])));
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<O*>(p[0] + i * s[0]) = static_cast<O>(F::template apply<C>(
        static_cast<C>(*reinterpret_cast<const T*>(p[1] + i * s[1])),
        static_cast<C>(*reinterpret_cast<const T*>(p[2] + i * s[2]))));
}

template <class F, class T, class O>
void ternary_block(char** p, const int64_t* s, int64_t n) {
  using C = compute_t<T>;
  if (s[0] == sizeof(O) && s[1] == sizeof(T) && s[2] == sizeof(T) && s[3] == sizeof(T)) {
    O* o = reinterpret_cast<O*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    const T* b = reinterpret_cast<const T*>(p[2]);
    const T* c = reinterpret_cast<const T*>(p[3]);
    for (int64_t i = 0; i < n; ++i)
      o[i] = static_cast<O>(F::template apply<C>(static_cast<C>(a[i]), static_cast<C>(b[i]), static_cast<C>(c[i])));
    return;
  }
  if (s[0] == sizeof(O) && s[1] == sizeof(T) && s[2] == sizeof(T) && s[3] == 0) {
    // Third operand a broadcast scalar (lerp's weight).
    O* o = reinterpret_cast<O*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    const T* b = reinterpret_cast<const T*>(p[2]);
    const C cv = static_cast<C>(*reinterpret_cast<const T*>(p[3]));
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(F::template apply<C>(static_cast<C>(a[i]), static_cast<C>(b[i]), cv));
    return;
  }
  auto unit = [](int64_t st) { return st == 0 || st == static_cast<int64_t>(sizeof(T)); };
  if (s[0] == sizeof(O) && unit(s[1]) && unit(s[2]) && unit(s[3])) {
    // Contiguous with broadcast scalars (stride 0): index multipliers 0 or 1.
    O* o = reinterpret_cast<O*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    const T* b = reinterpret_cast<const T*>(p[2]);
    const T* c = reinterpret_cast<const T*>(p[3]);
    const int64_t ka = s[1] != 0, kb = s[2] != 0, kc = s[3] != 0;
    for (int64_t i = 0; i < n; ++i)
      o[i] = static_cast<O>(F::template apply<C>(static_cast<C>(a[i * ka]), static_cast<C>(b[i * kb]),
                                                 static_cast<C>(c[i * kc])));
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<O*>(p[0] + i * s[0]) = static_cast<O>(F::template apply<C>(
        static_cast<C>(*reinterpret_cast<const T*>(p[1] + i * s[1])),
        static_cast<C>(*reinterpret_cast<const T*>(p[2] + i * s[2])),
        static_cast<C>(*reinterpret_cast<const T*>(p[3] + i * s[3]))));
}


// Domain is a template argument so that blocks for dtypes outside it are never instantiated.
template <class F, int Arity, bool BoolOut, EwDomain domain>
std::array<BlockFn, kNumDTypes> make_blocks() {
  std::array<BlockFn, kNumDTypes> blocks{};
  auto put = [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = std::conditional_t<BoolOut, bool, T>;
    if constexpr (Arity == 1) blocks[static_cast<int>(dtype_of<T>::value)] = &unary_block<F, T, O>;
    else if constexpr (Arity == 2) blocks[static_cast<int>(dtype_of<T>::value)] = &binary_block<F, T, O>;
    else blocks[static_cast<int>(dtype_of<T>::value)] = &ternary_block<F, T, O>;
  };
  if constexpr (domain != EwDomain::Integral) {
    put(std::type_identity<float>{});
    put(std::type_identity<double>{});
    put(std::type_identity<Half>{});
    put(std::type_identity<BFloat16>{});
  }
  if constexpr (domain != EwDomain::Floating) {
    put(std::type_identity<int64_t>{});
    put(std::type_identity<int32_t>{});
    put(std::type_identity<int8_t>{});
    put(std::type_identity<uint8_t>{});
    if constexpr (domain == EwDomain::All || domain == EwDomain::Integral) put(std::type_identity<bool>{});
  }
  return blocks;
}


// ---- functors with parameters ----

template <class F>
concept HasVecF32Member = requires(const F& f, float* o, const float* a, int64_t n) { VecF32<F>::run(f, o, a, n); };

template <class F>
concept HasVec2F32Member = requires(const F& f, float* o, const float* a, const float* b, int64_t n) { VecF32<F>::run(f, o, a, b, n); };


template <class F, class T, class O, int Arity>
void ew_attr_row(const F& fref, char** p, const int64_t* s, int64_t n) {
  using C = compute_t<T>;
  const F f = fref;  // a local copy: the compiler knows stores to o can't change the parameters
  if constexpr (is_16bit_float<T> && std::is_same_v<O, T> && Arity <= 2) {
    widened_row<T, Arity>(p, s, n, [&f](float* o, float (*in)[256], int64_t m) {
      if constexpr (Arity == 1 && HasVecF32Member<F>) VecF32<F>::run(f, o, in[0], m);
      else if constexpr (Arity == 2 && HasVec2F32Member<F>) VecF32<F>::run(f, o, in[0], in[1], m);
      else if constexpr (Arity == 1) for (int64_t i = 0; i < m; ++i) o[i] = f.template apply<float>(in[0][i]);
      else for (int64_t i = 0; i < m; ++i) o[i] = f.template apply<float>(in[0][i], in[1][i]);
    });
    return;
  }
  bool contig = s[0] == sizeof(O);
  for (int k = 1; k <= Arity; ++k) contig = contig && s[k] == sizeof(T);
  if (contig) {
    O* o = reinterpret_cast<O*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    if constexpr (Arity == 1) {
      if constexpr (HasVecF32Member<F> && std::is_same_v<T, float> && std::is_same_v<O, float>) {
        VecF32<F>::run(f, o, a, n);
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f.template apply<C>(static_cast<C>(a[i])));
      }
    } else if constexpr (Arity == 2) {
      const T* b = reinterpret_cast<const T*>(p[2]);
      if constexpr (HasVec2F32Member<F> && std::is_same_v<T, float> && std::is_same_v<O, float>) {
        VecF32<F>::run(f, o, a, b, n);
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f.template apply<C>(static_cast<C>(a[i]), static_cast<C>(b[i])));
      }
    } else {
      const T* b = reinterpret_cast<const T*>(p[2]);
      const T* c = reinterpret_cast<const T*>(p[3]);
      for (int64_t i = 0; i < n; ++i)
        o[i] = static_cast<O>(f.template apply<C>(static_cast<C>(a[i]), static_cast<C>(b[i]), static_cast<C>(c[i])));
    }
    return;
  }
  auto ld = [&](int k, int64_t i) { return static_cast<C>(*reinterpret_cast<const T*>(p[k] + i * s[k])); };
  for (int64_t i = 0; i < n; ++i) {
    O* o = reinterpret_cast<O*>(p[0] + i * s[0]);
    if constexpr (Arity == 1) *o = static_cast<O>(f.template apply<C>(ld(1, i)));
    else if constexpr (Arity == 2) *o = static_cast<O>(f.template apply<C>(ld(1, i), ld(2, i)));
    else *o = static_cast<O>(f.template apply<C>(ld(1, i), ld(2, i), ld(3, i)));
  }
}

// ew_attr_row behind a type-erased functor pointer: the row loop of a ParamBlock
// (elementwise_blocks.h), so a fused program runs an op with parameters as eager does.
template <class F, class T, class O, int Arity>
void param_row(const void* f, char** p, const int64_t* s, int64_t n) {
  ew_attr_row<F, T, O, Arity>(*static_cast<const F*>(f), p, s, n);
}

template <class F, int Arity, bool BoolOut, class T>
void ew_attr_run_typed(const F& f, const TensorList& in, const Tensor& dst) {
  using O = std::conditional_t<BoolOut, bool, T>;
  const Tensor* ops[kMaxOperands];
  ops[0] = &dst;
  for (int k = 0; k < Arity; ++k) ops[k + 1] = &in[k];
  StridedIter it(ops, Arity + 1);
  it.for_each([&f](char** p, const int64_t* s, int64_t n) { ew_attr_row<F, T, O, Arity>(f, p, s, n); });
}

}  // namespace lucid::cpu
