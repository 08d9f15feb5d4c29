// Scalar rules the reduce and sort families share on every backend, device-neutral (no CPU
// code): a NaN test that compiles for integer compute types, the identities of max and min, the
// NaN-propagating max/min step, and the running states of var/std (Welford) and logsumexp (a
// running max and rescaled sum). The CPU's row-reduction loops are backends/cpu/reduce_loops.h;
// the CUDA kernels (backends/cuda/kernels/reduce_driver.cuh) call the same functions on the device.
#pragma once
#include <cmath>
#include <type_traits>

#ifdef __CUDACC__
#include <cuda/std/limits>
#else
#include <limits>
#endif

#include "lucid/core/host_device.h"

namespace lucid {

// std::numeric_limits is host-only to nvcc; libcu++'s gives the same values on both sides.
#ifdef __CUDACC__
template <class C> using reduce_limits = ::cuda::std::numeric_limits<C>;
#else
template <class C> using reduce_limits = std::numeric_limits<C>;
#endif

// NaN test that compiles for integer compute types.
template <class C>
LUCID_HOST_DEVICE inline bool is_nan_v(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  else return false;
}

// Identity of max (IsMax) or min over a compute type: -inf / +inf for floats.
template <class C, bool IsMax>
LUCID_HOST_DEVICE inline C ext_identity() {
  if constexpr (std::is_floating_point_v<C>)
    return IsMax ? -reduce_limits<C>::infinity() : reduce_limits<C>::infinity();
  else
    return IsMax ? reduce_limits<C>::lowest() : reduce_limits<C>::max();
}

// max/min step that propagates NaN (branch-free select, so loops vectorise).
template <class C, bool IsMax>
LUCID_HOST_DEVICE inline C ext_select(C v, C m) {
  bool take = IsMax ? v > m : v < m;
  if constexpr (std::is_floating_point_v<C>) take = take || v != v;
  return take ? v : m;
}

// Var/std state: count, mean and sum of squared deviations. Plain members (no initialisers), so
// the CUDA driver can keep states in shared memory; {} is the empty state.
struct Welford {
  double n, mean, m2;
};

// One value into the state (Welford's update).
LUCID_HOST_DEVICE inline void welford_step(Welford& s, double x) {
  s.n += 1;
  double d = x - s.mean;
  s.mean += d / s.n;
  s.m2 += d * (x - s.mean);
}

// b merged into a (Chan's formula).
LUCID_HOST_DEVICE inline void welford_merge(Welford& a, const Welford& b) {
  if (b.n == 0) return;
  if (a.n == 0) { a = b; return; }
  double n = a.n + b.n, d = b.mean - a.mean;
  a.m2 += b.m2 + d * d * a.n * b.n / n;
  a.mean += d * b.n / n;
  a.n = n;
}

// The variance m2 / max(0, n - correction), or its square root.
LUCID_HOST_DEVICE inline double welford_result(const Welford& s, double correction, bool take_sqrt) {
  double dof = s.n - correction;
  double v = s.m2 / (0.0 < dof ? dof : 0.0);
  return take_sqrt ? std::sqrt(v) : v;
}

// Logsumexp state: running max m and the sum s of exp(v - m); {-inf, 0} is the empty state.
struct Lse {
  double m, s;
};

// A block of maximum m whose exp(v - m) sum to s, into the state; NaN anywhere makes it NaN.
LUCID_HOST_DEVICE inline void lse_add(Lse& st, double m, double s) {
  if (std::isnan(m) || std::isnan(st.m)) { st.m = NAN; return; }
  if (m == -INFINITY) return;
  if (m > st.m) {
    st.s = (st.m == -INFINITY ? 0.0 : st.s * std::exp(st.m - m)) + s;
    st.m = m;
  } else {
    st.s += m == st.m ? s : s * std::exp(m - st.m);
  }
}

// log(sum exp(v)): a +-inf or NaN maximum is the result itself.
LUCID_HOST_DEVICE inline double lse_result(const Lse& st) {
  return std::isinf(st.m) || std::isnan(st.m) ? st.m : st.m + std::log(st.s);
}

}  // namespace lucid
