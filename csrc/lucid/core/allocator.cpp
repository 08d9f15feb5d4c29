// The table of allocators by device type (see allocator.h).
#include "lucid/core/allocator.h"

#include <atomic>
#include <cctype>
#include <string>

#include "lucid/core/error.h"

namespace lucid {

namespace {
// constinit: zero before any dynamic initialiser runs, so a backend's static initialiser may set
// its slot, and anything may look one up, in any order.
constinit std::atomic<Allocator*> g_allocators[kNumDeviceTypes]{};
}  // namespace

Allocator* set_allocator(DeviceType t, Allocator* a) {
  LUCID_CHECK(t != DeviceType::CPU, Error, "set_allocator: the CPU allocator is fixed (cpu_allocator())");
  return g_allocators[static_cast<int>(t)].exchange(a, std::memory_order_acq_rel);
}

Allocator& allocator_for(const Device& d, const char* what) {
  if (d.is_cpu()) return cpu_allocator();
  Allocator* a = g_allocators[static_cast<int>(d.type)].load(std::memory_order_acquire);
  if (!a) {
    std::string type = d.str().substr(0, d.str().find(':'));
    for (char& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    throw NotImplementedError(str(what, ": device '", d.str(), "' has no memory allocator in this build of lucid (it has no ",
                                  type, " backend)"));
  }
  return *a;
}

}  // namespace lucid
