// Device: where a tensor's bytes live, as {type, index} ("cpu", "cuda:0"). parse_device reads and
// validates a device string as torch does; check_available raises for a device this build or
// machine cannot run on. Core knows no backend: a backend describes its devices through
// DeviceHooks (set_device_hooks, from a static initialiser in backends/<device>/), so a CPU-only
// build names "cuda" (the IR text and the caches keep CPU and CUDA graphs apart) and raises on use.
//
// The factory device: ops without tensor inputs (zeros, arange, randn...) run on the current
// thread's factory device, the CPU unless a FactoryDeviceScope says otherwise. The Python
// factories' device= argument and `with lucid.device("cuda"):` set it for their extent, and the
// autograd engine sets it to a node's device while its VJP runs, so a zeros() inside a backward
// formula lands beside the gradients.
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

// What a backend tells core about its devices (all functions of the backend; never null).
struct DeviceHooks {
  int (*count)();                        // devices visible to the process (0 without a GPU or driver)
  std::string (*unavailable_reason)();  // why count() is 0
  void (*synchronize)(int index);        // waits for the device's work (D2H reads of results)
  // Raises the first failed input check the backend deferred (cuda/deferred_check.h), waiting for
  // the pending checks (not for the device); called at the end of a backward pass.
  void (*raise_deferred_errors)();
};
// Every backend's raise_deferred_errors, in device-type order (autograd's engine, after a pass).
void raise_deferred_device_errors();
// Sets device type t's hooks (once, from the backend's static initialiser); null for none.
void set_device_hooks(DeviceType t, const DeviceHooks* hooks);
const DeviceHooks* device_hooks(DeviceType t);

// Raises unless d can hold tensors here: NotImplementedError for a device type this build has no
// backend for; RuntimeError "no CUDA device is available (reason)" when the backend sees none;
// RuntimeError "invalid device ordinal" for an index past the last device (as torch's
// "CUDA error: invalid device ordinal"). `as_written` names the device as the user wrote it.
void check_available(const Device& d, const std::string& as_written = "");

// The current thread's factory device (see the header comment); set_factory_device sets it until
// changed (lucid.device's __enter__/__exit__); the scope restores the previous one at its end.
Device factory_device();
void set_factory_device(const Device& d);
class FactoryDeviceScope {
 public:
  explicit FactoryDeviceScope(const Device& d);
  ~FactoryDeviceScope();
  FactoryDeviceScope(const FactoryDeviceScope&) = delete;
  FactoryDeviceScope& operator=(const FactoryDeviceScope&) = delete;

 private:
  Device prev_;
};

}  // namespace lucid
