#include "lucid/core/device.h"

#include <cctype>

namespace lucid {

std::string Device::str() const { return is_cpu() ? std::string("cpu") : ::lucid::str("cuda:", index); }

Device parse_device(const std::string& s) {
  size_t colon = s.find(':');
  std::string type = s.substr(0, colon);
  Device d;
  if (type == "cuda") d.type = DeviceType::CUDA;
  else if (type != "cpu")
    throw ValueError(str("device: expected a device type 'cpu' or 'cuda' at the start of the device string, got '",
                         s, "'"));
  if (colon == std::string::npos) return d;
  std::string idx = s.substr(colon + 1);
  bool digits = !idx.empty() && idx.size() <= 4 && (idx.size() == 1 || idx[0] != '0');
  for (char c : idx) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  LUCID_CHECK(digits, ValueError, "device: invalid device string '", s,
              "': expected a non-negative device index (at most 4 digits) after ':'");
  d.index = static_cast<int16_t>(std::stoi(idx));
  LUCID_CHECK(!d.is_cpu() || d.index == 0, ValueError, "device: CPU device index must be 0, got '", s, "'");
  return d;
}

void check_available(const Device& d, const std::string& as_written) {
  if (!d.is_cpu())
    throw NotImplementedError(str("device: '", as_written.empty() ? d.str() : as_written, "' requested, but this build of lucid has no CUDA "
                                  "backend yet; use device='cpu'"));
}

}  // namespace lucid
