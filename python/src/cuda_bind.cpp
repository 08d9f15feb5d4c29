// lucid.cuda's engine calls (python/lucid/cuda.py): device discovery (device_info.h), library
// versions (libraries.h), the caching allocator's statistics and record_stream (cuda_allocator.h;
// Tensor.record_stream is python/lucid/_tensor.py), streams and events (stream_objects.h),
// synchronize (core/device.h's DeviceHooks), and pinned memory (pinned_memory.h, bound as the
// Tensor methods pin_memory and is_pinned), bound as is: a stream
// crosses as (device index, cudaStream_t as an int), and the Python classes hold those. The same
// bindings serve the CUDA build and the CPU-only one; the build chooses which definition answers.
#include "bind.h"
#include "lucid/backends/cuda/cuda_allocator.h"
#include "lucid/backends/cuda/device_info.h"
#include "lucid/backends/cuda/libraries.h"
#include "lucid/backends/cuda/pinned_memory.h"
#include "lucid/backends/cuda/stream_objects.h"
#include "lucid/core/device.h"

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

  m.def("_cuda_synchronize", [](int index) {
    const DeviceHooks* h = device_hooks(DeviceType::CUDA);
    if (!h) throw Error(str("cuda synchronize: no CUDA device is available: ", cuda::unavailable_reason()));
    check_available(Device{DeviceType::CUDA, static_cast<int16_t>(index)});
    nb::gil_scoped_release release;
    h->synchronize(index);
  }, nb::arg("index"), "Waits for all work queued on CUDA device `index` (torch.cuda.synchronize).");

  // The caching allocator's counters, as a dict of torch.cuda.memory_stats' keys.
  m.def("_cuda_memory_stats", [](int index) {
    const cuda::AllocatorStats s = cuda::allocator_stats(index);
    nb::dict d;
    d["active.all.current"] = s.active_blocks;
    d["active_bytes.all.current"] = s.active_bytes;
    d["allocated_bytes.all.current"] = s.allocated;
    d["allocated_bytes.all.peak"] = s.peak_allocated;
    d["allocation.all.allocated"] = s.num_allocs;
    d["num_alloc_retries"] = s.num_alloc_retries;
    d["num_device_alloc"] = s.num_device_alloc;
    d["num_device_free"] = s.num_device_free;
    d["num_ooms"] = s.num_ooms;
    d["reserved_bytes.all.current"] = s.reserved;
    d["reserved_bytes.all.peak"] = s.peak_reserved;
    d["segment.all.current"] = s.segments;
    return d;
  }, nb::arg("index"), "The CUDA caching allocator's counters of device `index` (a subset of torch.cuda.memory_stats).");
  m.def("_cuda_set_memory_fraction", &cuda::set_memory_fraction, nb::arg("fraction"), nb::arg("index"),
        "Caps the bytes the caching allocator of device `index` may reserve at `fraction` of its memory.");
  m.def("_cuda_allocator_backend", &cuda::allocator_backend,
        "The CUDA allocator in use: 'native' or 'cudaMallocAsync' (LUCID_CUDA_ALLOCATOR).");
  m.def("_cuda_record_stream", [](const Tensor& t, uintptr_t stream) {
    cuda::record_stream(t.impl()->storage->data, t.device().index, stream);
  }, nb::arg("tensor"), nb::arg("stream"),
     "Tensor.record_stream's engine call: `stream` (a cudaStream_t of the CUDA tensor's device) uses its storage.");
  m.def("_cuda_mem_get_info", [](int index) {
    const cuda::DeviceMemoryInfo i = cuda::mem_get_info(index);
    return nb::make_tuple(i.free, i.total);
  }, nb::arg("index"), "(free, total) bytes of CUDA device `index` (cudaMemGetInfo).");

  m.def("_cuda_stream_priority_range", [](int index) {
    auto [least, greatest] = cuda::stream_priority_range(index);
    return nb::make_tuple(least, greatest);
  }, nb::arg("index"), "(least, greatest) stream priority of CUDA device `index`.");
  m.def("_cuda_pooled_stream", [](int index, int priority) { return cuda::pooled_stream(index, priority).handle; },
        nb::arg("index"), nb::arg("priority"), "A stream of the device's pool for `priority` (its handle).");
  m.def("_cuda_stream_priority", [](int index, uintptr_t s) { return cuda::stream_priority({index, s}); },
        nb::arg("index"), nb::arg("stream"));
  m.def("_cuda_current_stream", [](int index) { return cuda::current_stream_ref(index).handle; }, nb::arg("index"),
        "This thread's current stream of CUDA device `index` (0: the legacy default stream).");
  m.def("_cuda_set_stream", [](int index, uintptr_t s) { cuda::set_current_stream_ref({index, s}); },
        nb::arg("index"), nb::arg("stream"));
  m.def("_cuda_stream_query", [](int index, uintptr_t s) { return cuda::stream_query({index, s}); },
        nb::arg("index"), nb::arg("stream"));
  m.def("_cuda_stream_synchronize", [](int index, uintptr_t s) {
    nb::gil_scoped_release release;
    cuda::stream_synchronize({index, s});
  }, nb::arg("index"), nb::arg("stream"));
  m.def("_cuda_stream_wait_stream", [](int index, uintptr_t waiter, int producer_index, uintptr_t producer) {
    cuda::stream_wait_stream({index, waiter}, {producer_index, producer});
  }, nb::arg("index"), nb::arg("waiter"), nb::arg("producer_index"), nb::arg("producer"));

  nb::class_<cuda::Event>(m, "_CudaEvent", "A CUDA event (lucid.cuda.Event holds one).")
      .def(nb::init<bool, bool>(), nb::arg("enable_timing") = false, nb::arg("blocking") = false)
      .def("record", [](cuda::Event& e, int index, uintptr_t s) { e.record({index, s}); }, nb::arg("index"),
           nb::arg("stream"))
      .def("wait", [](const cuda::Event& e, int index, uintptr_t s) { e.wait({index, s}); }, nb::arg("index"),
           nb::arg("stream"))
      .def("query", &cuda::Event::query)
      .def("synchronize", [](const cuda::Event& e) {
        nb::gil_scoped_release release;
        e.synchronize();
      })
      .def("elapsed_time", &cuda::Event::elapsed_time, nb::arg("end"))
      .def_prop_ro("recorded", &cuda::Event::recorded)
      .def_prop_ro("device", &cuda::Event::device)
      .def_prop_ro("handle", &cuda::Event::handle);

  def_method(m, "pin_memory", [](const Tensor& self, nb::handle device) {
    (void)device;  // torch's deprecated argument: pinned memory serves every CUDA device
    return cuda::pin_memory(self);
  }, nb::arg("device").none() = nb::none(),
     "A copy of this CPU tensor in pinned (page-locked) host memory, or the tensor itself when it is pinned already.");
  def_method(m, "is_pinned", [](const Tensor& self, nb::handle device) {
    (void)device;
    return self.device().is_cpu() && self.numel() > 0 && cuda::is_pinned(self.data_ptr());
  }, nb::arg("device").none() = nb::none(), "True when this CPU tensor's bytes are in pinned host memory.");
}

}  // namespace lucid::py
