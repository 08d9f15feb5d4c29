// Scalar rules the reduce and sort families share on every backend, device-neutral (no CPU
// code): a NaN test that compiles for integer compute types, the identities of max and min, and
// the NaN-propagating max/min step. The CPU's row-reduction loops are backends/cpu/reduce_loops.h;
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

}  // namespace lucid
