// The per-device registry of executor factories (see executor.h).
#include "lucid/compile/runtime/executor.h"

#include <array>
#include <cstdio>
#include <cstdlib>

namespace lucid::rt {

namespace {
std::array<ExecutorFactory, kNumDeviceTypes>& factories() {
  static std::array<ExecutorFactory, kNumDeviceTypes> f{};
  return f;
}
}  // namespace

ExecutorFactory executor_factory(DeviceType device) { return factories()[static_cast<int>(device)]; }

ExecutorRegistrar::ExecutorRegistrar(DeviceType device, ExecutorFactory factory) {
  ExecutorFactory& slot = factories()[static_cast<int>(device)];
  if (slot || !factory) {  // a build defect, found at load time
    std::fprintf(stderr, "lucid: executor for %s registered %s\n", Device{device, 0}.str().c_str(),
                 factory ? "twice" : "as null");
    std::abort();
  }
  slot = factory;
}

}  // namespace lucid::rt
