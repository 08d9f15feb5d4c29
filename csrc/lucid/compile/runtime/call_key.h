// The pieces of a compiled call's signature key that need no Python: the 64-bit mixer every
// key is built with, and the code for how two argument tensors on one storage relate. The walk
// over a call's Python arguments (python/src/compile_bind.cpp) feeds them; a C++ caller that
// keys calls itself (the artifact loader) can build the same kind of key from tensors alone.
#pragma once
#include <cstdint>

#include "lucid/core/tensor.h"

namespace lucid::rt {

// A running 64-bit hash: FNV-style start, each value multiplied by the golden ratio and folded
// in with splitmix64's finaliser steps. Inline: the key walk calls it per shape dimension.
struct CallKey {
  uint64_t h = 0x84222325cbf29ce4ULL;
  void mix(uint64_t v) {
    v *= 0x9e3779b97f4a7c15ULL;
    h ^= v ^ (v >> 29);
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
};

// How two tensors on one storage relate, for the key: disjoint (2), the same elements with the
// same geometry (3: eager may skip a copy between them), partially overlapping (4), or
// intersecting spans PyTorch's rules can't classify (5). A trace made under one relation is
// never served to a call with another.
uint64_t overlap_code(const Tensor& a, const Tensor& b);

}  // namespace lucid::rt
