// The Philox4x32-10 stream, device-neutral: how (seed, draw index) maps to 32-bit numbers. The
// n-th draw of the stream with key `seed` is word n % 4 of the block philox(counter = n / 4,
// key = seed). Every backend produces the same numbers for the same (seed, offset): the CPU's
// 8-lane AVX2 form is backends/cpu/philox_vec.h; a device kernel calls these functions
// (LUCID_HOST_DEVICE, plain integer arithmetic, so nvcc compiles them for the device). The
// generator's state (seed, offset) is core/generator.h; how random ops turn draws into values is
// ops/random_draws.h.
#pragma once
#include <cstdint>

#include "lucid/core/host_device.h"

namespace lucid {

// One Philox block: four 32-bit words (a plain aggregate, usable in device code).
struct PhiloxBlock {
  uint32_t w[4];
  LUCID_HOST_DEVICE uint32_t operator[](int i) const { return w[i]; }
  bool operator==(const PhiloxBlock&) const = default;
};

// Philox4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"),
// on a full 128-bit counter and 64-bit key (checked against the Random123 known answers).
LUCID_HOST_DEVICE inline PhiloxBlock philox4x32_10(PhiloxBlock c, uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c.w[0];
    uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c.w[2];
    c = {{static_cast<uint32_t>(p1 >> 32) ^ c.w[1] ^ k0, static_cast<uint32_t>(p1),
          static_cast<uint32_t>(p0 >> 32) ^ c.w[3] ^ k1, static_cast<uint32_t>(p0)}};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

// The generator's block function: counter = (counter, 0) as 128 bits, key = seed.
LUCID_HOST_DEVICE inline PhiloxBlock philox4x32_10(uint64_t counter, uint64_t key) {
  return philox4x32_10(PhiloxBlock{{static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u}},
                       static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
}

// The draw at absolute index n of the stream `seed`.
LUCID_HOST_DEVICE inline uint32_t philox_draw(uint64_t seed, uint64_t n) { return philox4x32_10(n >> 2, seed)[n & 3]; }

}  // namespace lucid
