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

namespace {
// Constant-initialised, so a backend's static initialiser may set its slot in any order.
const DeviceHooks* g_hooks[kNumDeviceTypes] = {};
thread_local Device tl_factory_device{};
}  // namespace

void set_device_hooks(DeviceType t, const DeviceHooks* hooks) { g_hooks[static_cast<int>(t)] = hooks; }
const DeviceHooks* device_hooks(DeviceType t) { return g_hooks[static_cast<int>(t)]; }

void raise_deferred_device_errors() {
  for (const DeviceHooks* h : g_hooks)
    if (h && h->raise_deferred_errors) h->raise_deferred_errors();
}

void check_available(const Device& d, const std::string& as_written) {
  if (d.is_cpu()) return;
  const std::string name = as_written.empty() ? d.str() : as_written;
  const DeviceHooks* h = device_hooks(d.type);
  if (!h)
    throw NotImplementedError(str("device: '", name, "' requested, but this build of lucid has no CUDA backend "
                                  "(configure with -DLUCID_CUDA=ON on a machine with the CUDA toolkit); use device='cpu'"));
  const int n = h->count();
  LUCID_CHECK(n > 0, Error, "device: '", name, "' requested, but no CUDA device is available: ", h->unavailable_reason());
  LUCID_CHECK(d.index < n, Error, "device: '", name, "' requested: CUDA error: invalid device ordinal (", n,
              n == 1 ? " CUDA device is" : " CUDA devices are", " visible: cuda:0 to cuda:", n - 1, ")");
}

Device factory_device() { return tl_factory_device; }
void set_factory_device(const Device& d) { tl_factory_device = d; }
FactoryDeviceScope::FactoryDeviceScope(const Device& d) : prev_(tl_factory_device) { tl_factory_device = d; }
FactoryDeviceScope::~FactoryDeviceScope() { tl_factory_device = prev_; }

}  // namespace lucid
