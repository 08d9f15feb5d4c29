// DLPack for the bindings: the legacy DLManagedTensor of the DLPack specification (the "dltensor"
// capsule that torch, NumPy, JAX and CuPy exchange; dlpack.h, Apache-2, written from the spec over
// nanobind's DLTensor structs), and the mapping of lucid's dtypes to DLPack's. dlpack_bind.cpp
// implements Tensor.__dlpack__ / __dlpack_device__ and from_dlpack with them; tensor_bind.cpp's
// NumPy conversions use the dtype mapping.
#pragma once
#include <nanobind/ndarray.h>

#include "lucid/core/dtype.h"

namespace lucid::py {

struct DLManagedTensor {
  nb::dlpack::dltensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

// DLPack's device types (DLDeviceType) that lucid reads or writes.
enum DLDeviceType : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 };

nb::dlpack::dtype dl_dtype(DType t);
// TypeError naming `op` for a dtype lucid has no equivalent of.
DType from_dl_dtype(nb::dlpack::dtype d, const char* op);

}  // namespace lucid::py
