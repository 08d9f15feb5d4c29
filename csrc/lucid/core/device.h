// Device: where a tensor's bytes live, as {type, index} ("cpu", "cuda:0"). parse_device reads and
// validates a device string as torch does; check_available raises for a device this build has
// no backend for. Only the CPU backend is built: a CUDA device can be named (the IR text and the
// compile caches keep a CPU graph and a CUDA graph apart), but creating a CUDA tensor raises
// check_available's NotImplementedError instead of silently running on the CPU.
#pragma once
#include <cstdint>
#include <string>

#include "lucid/core/error.h"

namespace lucid {

enum class DeviceType : uint8_t { CPU, CUDA };
constexpr int kNumDeviceTypes = 2;  // sizes the per-device tables (an OpDef's kernels, the allocators)

// A concrete device: "cuda" without an index means the current CUDA device, cuda:0 (there is no
// set_device yet). The CPU is a single device, index 0.
struct Device {
  DeviceType type = DeviceType::CPU;
  int16_t index = 0;
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const;  // "cpu", "cuda:0"
};

// "cpu", "cpu:0", "cuda", "cuda:N". Raises ValueError for anything else (an unknown type, a
// malformed or negative index, a CPU index other than 0).
Device parse_device(const std::string& s);

// Raises NotImplementedError naming the device (as the user wrote it, when given) when this
// build has no backend for it (CUDA).
void check_available(const Device& d, const std::string& as_written = "");

}  // namespace lucid
