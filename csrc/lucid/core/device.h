// Device: "cpu" today. Every device argument is validated here; CUDA is a later backend, so
// asking for it raises a clear error instead of silently running on the CPU.
#pragma once
#include <cstdint>
#include <string>

#include "lucid/core/error.h"

namespace lucid {

enum class DeviceType : uint8_t { CPU };

struct Device {
  DeviceType type = DeviceType::CPU;
  bool operator==(const Device& o) const { return type == o.type; }
  std::string str() const { return "cpu"; }
};

Device parse_device(const std::string& s);

}  // namespace lucid
