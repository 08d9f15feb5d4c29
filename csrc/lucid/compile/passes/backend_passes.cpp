// The per-device registry of backend pass descriptions (see backend_passes.h), and the stand-in
// tensors the elementwise-grouping rule is asked with.
#include "lucid/compile/passes/backend_passes.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lucid::ir {

namespace {
std::array<BackendPasses, kNumDeviceTypes>& table() {
  static std::array<BackendPasses, kNumDeviceTypes> t = [] {
    std::array<BackendPasses, kNumDeviceTypes> a;
    for (int d = 0; d < kNumDeviceTypes; ++d) a[d].device = static_cast<DeviceType>(d);
    return a;
  }();
  return t;
}
std::array<bool, kNumDeviceTypes>& registered() {
  static std::array<bool, kNumDeviceTypes> r{};
  return r;
}
}  // namespace

const BackendPasses& backend_passes(DeviceType device) { return table()[static_cast<int>(device)]; }

BackendPassesRegistrar::BackendPassesRegistrar(BackendPasses passes) {
  const int d = static_cast<int>(passes.device);
  if (registered()[d]) {  // a build defect, found at load time
    std::fprintf(stderr, "lucid: backend passes for %s registered twice\n", Device{passes.device, 0}.str().c_str());
    std::abort();
  }
  registered()[d] = true;
  table()[d] = std::move(passes);
}

}  // namespace lucid::ir

namespace lucid {

Tensor ew_stand_in(const ir::Value& v, bool wrapped) {
  Tensor t = Tensor::empty(Shape(v.shape.size(), 1), v.dtype);
  std::memset(t.data_ptr(), 0, itemsize(v.dtype));
  t.impl()->is_wrapped_number = wrapped;
  return t;
}

Tensor ew_stand_in(const ir::Value& v, const Tensor& constant) {
  const bool wrapped = constant.defined() && constant.impl()->is_wrapped_number;
  if (wrapped && constant.dtype() == v.dtype && constant.shape() == v.shape) return constant;
  return ew_stand_in(v, wrapped);
}

}  // namespace lucid
