// DLPack exchange, zero-copy both ways, CPU and CUDA tensors: Tensor.__dlpack__ and
// __dlpack_device__ (the producer's side) and _C._from_dlpack (the consumer's: lucid.from_dlpack).
//
// The stream handshake is the array-API standard's. As producer, __dlpack__(stream=s) makes the
// consumer's stream s wait for the work lucid has queued on its current stream of the tensor's
// device (an event recorded there; stream_objects.h's stream_wait_stream): s is 1 for the legacy
// default stream, 2 for the per-thread default stream, any other int a cudaStream_t, -1 for no
// synchronisation; None is taken as the legacy default stream, and 0 is refused as the standard
// says. As consumer, lucid passes its current stream of the device (1 for the legacy default), so
// the producer orders its work before lucid's.
//
// Capsules are the legacy "dltensor" kind (DLManagedTensor), which every consumer accepts; a
// versioned one is not produced (max_version is accepted and ignored, as the standard allows).
// copy=True exports a copy; dl_device other than the tensor's own device is refused.
#include <Python.h>

#include <vector>

#include "bind.h"
#include "dlpack.h"
#include "lucid/core/external_views.h"
#include "lucid/backends/cuda/stream_objects.h"
#include "lucid/compile/trace/trace_hook.h"
#include "lucid/core/storage.h"
#include "lucid/ops/core.h"

namespace lucid::py {

namespace {

// Runs `f` holding the GIL (a deleter may run on a thread without it); nothing after finalisation.
template <class F>
void with_gil(F&& f) {
  if (!Py_IsInitialized()) return;
  PyGILState_STATE g = PyGILState_Ensure();
  f();
  PyGILState_Release(g);
}

// What an exported capsule owns: the tensor (its storage stays alive) and its geometry.
struct Exported {
  DLManagedTensor managed{};
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  ~Exported() {
    external_view_end(tensor.impl()->storage.get());
  }
};

void delete_exported(DLManagedTensor* m) {
  auto* e = static_cast<Exported*>(m->manager_ctx);
  with_gil([e] { delete e; });
}

// The capsule's destructor: frees the export when no consumer took it (still named "dltensor").
void capsule_destructor(PyObject* cap) {
  if (!PyCapsule_IsValid(cap, "dltensor")) return;  // consumed (renamed "used_dltensor")
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
  if (m && m->deleter) m->deleter(m);
}

nb::object to_dlpack(const Tensor& self, nb::handle stream, nb::handle max_version, nb::handle dl_device,
                     nb::handle copy) {
  (void)max_version;  // a legacy capsule is what every version of the protocol accepts
  LUCID_CHECK(!self.requires_grad(), Error,
              "__dlpack__: can't export a tensor that requires grad; use tensor.detach()");
  // Another library reads (or writes) the bytes: under a trace that is a host read of the value.
  if (TraceHook* h = current_trace_hook()) h->on_host_read(self, "__dlpack__");
  const Device dev = self.device();
  if (!dl_device.is_none()) {
    auto want = nb::cast<std::pair<int, int>>(dl_device);
    const int type = dev.is_cpu() ? kDLCPU : kDLCUDA;
    LUCID_CHECK(want.first == type && want.second == (dev.is_cpu() ? 0 : dev.index), NotImplementedError,
                "__dlpack__: dl_device=(", want.first, ", ", want.second, ") is not the tensor's device ", dev.str(),
                " (lucid exports on the tensor's own device)");
  }
  if (!dev.is_cpu() && !(stream.is_none() || PyLong_Check(stream.ptr())))
    throw TypeError("__dlpack__: argument 'stream' expected an int or None");
  // copy=True exports a fresh copy, queued on the current stream before the handshake below.
  Tensor out = !copy.is_none() && nb::cast<bool>(copy) ? cast(self.detach(), self.dtype()) : self.detach();
  if (!dev.is_cpu()) {
    const int64_t s = stream.is_none() ? 1 : nb::cast<int64_t>(stream);
    LUCID_CHECK(s != 0, ValueError, "__dlpack__: stream=0 is ambiguous for CUDA and not allowed by the DLPack "
                "standard; use 1 for the legacy default stream or 2 for the per-thread default stream");
    if (s != -1) {
      const cuda::StreamRef producer = cuda::current_stream_ref(dev.index);
      const uintptr_t consumer = static_cast<uintptr_t>(s);
      // lucid's legacy default stream (handle 0) and the consumer's stream 1 are the same stream.
      if (!(producer.handle == 0 && consumer == 1))
        cuda::stream_wait_stream({dev.index, consumer}, producer);
    }
  }
  auto* e = new Exported;
  e->tensor = std::move(out);
  const Tensor& exported = e->tensor;
  e->shape.assign(exported.shape().begin(), exported.shape().end());
  e->strides.assign(exported.strides().begin(), exported.strides().end());
  external_view_begin(exported.impl()->storage.get());  // it may be written outside (core/external_views.h)
  nb::dlpack::dltensor& t = e->managed.dl_tensor;
  t.data = exported.data_ptr();
  t.device = {dev.is_cpu() ? kDLCPU : kDLCUDA, dev.is_cpu() ? 0 : dev.index};
  t.ndim = static_cast<int32_t>(exported.ndim());
  t.dtype = dl_dtype(exported.dtype());
  t.shape = e->shape.data();
  t.strides = e->strides.data();
  t.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = &delete_exported;
  PyObject* cap = PyCapsule_New(&e->managed, "dltensor", &capsule_destructor);
  if (!cap) {
    delete e;
    throw nb::python_error();
  }
  return nb::steal(cap);
}

nb::tuple dlpack_device(const Tensor& self) {
  const Device d = self.device();
  return d.is_cpu() ? nb::make_tuple(int(kDLCPU), 0) : nb::make_tuple(int(kDLCUDA), int(d.index));
}

// The DLManagedTensor of a producer (an object with __dlpack__, or a "dltensor" capsule) as a
// tensor sharing its memory; the producer's deleter runs when the storage is freed.
Tensor from_dlpack(nb::handle obj) {
  nb::object cap;
  if (PyCapsule_CheckExact(obj.ptr())) {
    cap = nb::borrow(obj);
  } else {
    LUCID_CHECK(nb::hasattr(obj, "__dlpack__"), TypeError, "from_dlpack: expected a DLPack capsule or an object with "
                "__dlpack__ (a tensor of torch, NumPy, JAX, CuPy ...), got ",
                nb::cast<std::string>(nb::str(obj.type().attr("__name__"))));
    int type = kDLCPU, id = 0;
    if (nb::hasattr(obj, "__dlpack_device__")) {
      auto d = nb::cast<std::pair<int, int>>(obj.attr("__dlpack_device__")());
      type = d.first;
      id = d.second;
    }
    if (type == kDLCUDA) {
      check_available(Device{DeviceType::CUDA, static_cast<int16_t>(id)});
      const uintptr_t cur = cuda::current_stream_ref(id).handle;
      cap = obj.attr("__dlpack__")(nb::arg("stream") = cur == 0 ? uintptr_t{1} : cur);
    } else {
      cap = obj.attr("__dlpack__")();
    }
  }
  if (PyCapsule_IsValid(cap.ptr(), "used_dltensor"))
    throw ValueError("from_dlpack: this DLPack capsule was already consumed (a capsule can be imported once)");
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  if (!m) throw nb::python_error();
  const nb::dlpack::dltensor& t = m->dl_tensor;
  // Checked before the capsule is taken: on an error the capsule still frees the producer's tensor.
  const DType dtype = from_dl_dtype(t.dtype, "from_dlpack");
  Device dev;
  if (t.device.device_type == kDLCUDA) {
    dev = Device{DeviceType::CUDA, static_cast<int16_t>(t.device.device_id)};
    check_available(dev);
  } else {
    LUCID_CHECK(t.device.device_type == kDLCPU || t.device.device_type == kDLCUDAHost, NotImplementedError,
                "from_dlpack: DLPack device type ", t.device.device_type, " is not supported (lucid reads CPU (1), "
                "CUDA (2) and CUDA pinned host (3) memory)");
  }
  Shape shape(t.shape, t.shape + t.ndim);
  Strides strides = t.strides ? Strides(t.strides, t.strides + t.ndim) : contiguous_strides(shape);
  int64_t extent = 1;  // elements spanned
  for (int i = 0; i < t.ndim; ++i) {
    if (shape[i] == 0) extent = 0;
    LUCID_CHECK(strides[i] >= 0 || shape[i] <= 1, ValueError,
                "from_dlpack: negative strides are not supported (got strides ", shape_str(strides), ")");
    if (shape[i] <= 1) strides[i] = std::max<int64_t>(strides[i], 0);
  }
  if (extent) {
    for (int i = 0; i < t.ndim; ++i) extent += (shape[i] - 1) * strides[i];
  }
  PyCapsule_SetName(cap.ptr(), "used_dltensor");
  std::shared_ptr<void> owner(m, [](void* p) {
    auto* mt = static_cast<DLManagedTensor*>(p);
    if (mt->deleter) with_gil([mt] { mt->deleter(mt); });
  });
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::wrap(static_cast<char*>(t.data) + t.byte_offset,
                                static_cast<size_t>(extent) * itemsize(dtype), std::move(owner));
  impl->storage->device = dev;
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

}  // namespace

LUCID_BINDER(dlpack) {
  def_method(m, "__dlpack__", &to_dlpack, nb::arg("stream").none() = nb::none(), nb::kw_only(),
             nb::arg("max_version").none() = nb::none(), nb::arg("dl_device").none() = nb::none(),
             nb::arg("copy").none() = nb::none(),
             "A DLPack capsule sharing this tensor's memory (the array-API protocol; `stream`: the consumer's CUDA "
             "stream, which is made to wait for lucid's work on the tensor).");
  def_method(m, "__dlpack_device__", &dlpack_device, "(DLPack device type, index): (1, 0) on the CPU, (2, i) on cuda:i.");
  m.def("_from_dlpack", &from_dlpack, nb::arg("ext"),
        "A tensor sharing the memory of a DLPack producer or capsule (CPU or CUDA), zero-copy.");
}

}  // namespace lucid::py
