// Python bindings of the memory statistics (core/storage.h): lucid.memory_allocated,
// max_memory_allocated, reset_peak_memory_stats, memory_cached and empty_cache, per device.
// Each takes an optional `device` (as torch.cuda.memory_allocated does): None is the CPU (so
// lucid.memory_allocated() is the CPU's), a str ('cpu', 'cuda:0'), a lucid.device, or an int, an
// accelerator index as in torch.device(0) (cuda:N). A device type without an allocator in this
// build raises NotImplementedError naming the function and the device; a CUDA device this machine
// does not have (no GPU, an index out of range) raises RuntimeError naming the function.
#include "bind.h"
#include "lucid/core/storage.h"

namespace lucid::py {

namespace {

Device device_arg(nb::handle h, const char* fn) {
  if (h.is_none()) return Device{};
  if (PyBool_Check(h.ptr()))
    throw TypeError(str(fn, ": argument 'device' expected a str, a lucid.device or an int, got bool"));
  if (PyLong_Check(h.ptr())) {
    int64_t index = to_int64(h, fn, "device");
    LUCID_CHECK(index >= 0 && index <= 9999, ValueError, fn, ": argument 'device' expected a non-negative device index "
                "(at most 4 digits), got ", index);
    return Device{DeviceType::CUDA, static_cast<int16_t>(index)};
  }
  const bool device_like = nb::hasattr(h, "type") && nb::hasattr(h, "index");  // lucid.device (or torch.device)
  if (!nb::isinstance<nb::str>(h) && !device_like)
    throw TypeError(str(fn, ": argument 'device' expected a str, a lucid.device or an int, got ",
                        nb::cast<std::string>(nb::str(h.type().attr("__name__")))));
  return parse_device(nb::cast<std::string>(nb::str(h)));
}

// A device of a backend this build has but this machine cannot use (no GPU, index out of range)
// raises RuntimeError naming `fn`; a device type this build has no backend for is left to the
// allocator table's NotImplementedError.
Device usable_device(nb::handle h, const char* fn) {
  Device d = device_arg(h, fn);
  if (d.is_cpu() || !device_hooks(d.type)) return d;
  try {
    check_available(d);
  } catch (const Error& e) {
    throw Error(str(fn, ": ", e.what()));
  }
  return d;
}

}  // namespace

LUCID_BINDER(memory) {
  m.def("memory_allocated", [](nb::handle d) { return memory_allocated(usable_device(d, "memory_allocated")); },
        nb::arg("device").none() = nb::none(),
        "Bytes held by tensors (and compiled executables' arenas) that lucid allocated on the device (the CPU by "
        "default); wrapped NumPy memory is not counted.");
  m.def("max_memory_allocated", [](nb::handle d) { return max_memory_allocated(usable_device(d, "max_memory_allocated")); },
        nb::arg("device").none() = nb::none(),
        "The most memory_allocated(device) has been since the start or the last reset_peak_memory_stats(device).");
  m.def("reset_peak_memory_stats", [](nb::handle d) { reset_peak_memory_stats(usable_device(d, "reset_peak_memory_stats")); },
        nb::arg("device").none() = nb::none(), "Restarts max_memory_allocated(device) from the current value.");
  m.def("memory_cached", [](nb::handle d) { return memory_cached(usable_device(d, "memory_cached")); },
        nb::arg("device").none() = nb::none(),
        "Bytes lucid keeps for reuse on the device: freed buffers (on the CPU, LUCID_CPU_CACHE_MB bounds them) and, "
        "on the CPU, packed GEMM weights (LUCID_WEIGHT_PACK_MB).");
  m.def("empty_cache", [](nb::handle d) { return empty_cache(usable_device(d, "empty_cache")); },
        nb::arg("device").none() = nb::none(),
        "Frees the buffers (and, on the CPU, packed weights) kept for reuse on the device; returns their bytes.");
}

}  // namespace lucid::py
