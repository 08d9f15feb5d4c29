// lucid.cuda's device and library queries (python/lucid/cuda.py): the engine's device discovery
// (lucid/backends/cuda/device_info.h) and library versions (lucid/backends/cuda/libraries.h),
// bound as is. The same bindings serve the CUDA build and the
// CPU-only one; the build chooses which definition answers.
#include "bind.h"
#include "lucid/backends/cuda/device_info.h"
#include "lucid/backends/cuda/libraries.h"

namespace lucid::py {

LUCID_BINDER(cuda) {
  nb::class_<cuda::DeviceProperties>(m, "_CudaDeviceProperties",
                                     "A CUDA device's properties, as torch.cuda.get_device_properties returns.")
      .def_ro("name", &cuda::DeviceProperties::name)
      .def_ro("major", &cuda::DeviceProperties::major)
      .def_ro("minor", &cuda::DeviceProperties::minor)
      .def_ro("total_memory", &cuda::DeviceProperties::total_memory)
      .def_ro("multi_processor_count", &cuda::DeviceProperties::multi_processor_count)
      .def("__repr__", [](const cuda::DeviceProperties& p) {
        return str("_CudaDeviceProperties(name='", p.name, "', major=", p.major, ", minor=", p.minor,
                   ", total_memory=", p.total_memory / (1024 * 1024), "MB, multi_processor_count=",
                   p.multi_processor_count, ")");
      });
  nb::class_<cuda::Library>(m, "_CudaLibrary", "A CUDA library of this build: its compiled and loaded versions.")
      .def_ro("name", &cuda::Library::name)
      .def_ro("compiled", &cuda::Library::compiled)
      .def_ro("loaded", &cuda::Library::loaded)
      .def_ro("configured", &cuda::Library::configured)
      .def_ro("version", &cuda::Library::version)
      .def("__repr__", [](const cuda::Library& l) {
        return str("_CudaLibrary(name='", l.name, "', version='", l.version, "', loaded=", l.loaded,
                   ", compiled=", l.compiled, ", configured='", l.configured, "')");
      });
  m.def("_cuda_libraries", &cuda::libraries, "The CUDA libraries of this build (empty in a CPU-only build).");
  m.def("_cuda_is_built", &cuda::is_built, "True when this build of lucid has the CUDA backend.");
  m.def("_cuda_device_count", &cuda::device_count, "The number of CUDA devices visible (0 without a GPU or driver).");
  m.def("_cuda_unavailable_reason", &cuda::unavailable_reason, "Why there is no CUDA device; empty when there is one.");
  m.def("_cuda_device_properties", &cuda::device_properties, nb::arg("index"),
        "Properties of CUDA device `index`; RuntimeError without a device, IndexError out of range.");
}

}  // namespace lucid::py
