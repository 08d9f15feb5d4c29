// Scalar rules the reduce and sort families share on every backend, device-neutral (no CPU
// code): a NaN test that compiles for integer compute types, the identities of max and min, and
// the NaN-propagating max/min step. The CPU's row-reduction loops are backends/cpu/reduce_loops.h.
#pragma once
#include <cmath>
#include <limits>
#include <type_traits>

namespace lucid {

// NaN test that compiles for integer compute types.
template <class C>
inline bool is_nan_v(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  else return false;
}

// Identity of max (IsMax) or min over a compute type: -inf / +inf for floats.
template <class C, bool IsMax>
inline C ext_identity() {
  if constexpr (std::is_floating_point_v<C>)
    return IsMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  else
    return IsMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
}

// max/min step that propagates NaN (branch-free select, so loops vectorise).
template <class C, bool IsMax>
inline C ext_select(C v, C m) {
  bool take = IsMax ? v > m : v < m;
  if constexpr (std::is_floating_point_v<C>) take = take || v != v;
  return take ? v : m;
}

}  // namespace lucid
