#include "lucid/core/device.h"

namespace lucid {

Device parse_device(const std::string& s) {
  if (s == "cpu" || s == "cpu:0") return Device{};
  if (s.rfind("cuda", 0) == 0)
    throw NotImplementedError(str("device: '", s, "' requested, but this build of lucid has no CUDA "
                                  "backend yet; use device='cpu'"));
  throw ValueError(str("device: expected 'cpu', got '", s, "'"));
}

}  // namespace lucid
