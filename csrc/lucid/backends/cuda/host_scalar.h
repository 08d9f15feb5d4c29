// A host scalar's value as a CUDA kernel takes it: the bits of a CPU 0-d tensor converted to the
// kernel's compute dtype by the CPU Copy kernel (the CPU elementwise kernels' own input cast), in
// that dtype's storage type. Shared by the eager kernels that pass host scalars by value
// (elementwise.cuh) and the CUDA executor, which writes the same bits into a replayed graph's
// device scalars per call (compile/executor.cpp). No CUDA header here.
#pragma once
#include <cstdint>
#include <cstring>

#include "lucid/core/tensor.h"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

inline uint64_t host_scalar_bits(const Tensor& t, DType c) {
  uint64_t bits = 0;
  if (t.dtype() == c) {
    std::memcpy(&bits, t.data_ptr(), itemsize(c));
    return bits;
  }
  Tensor v = Tensor::empty({}, c);
  op_def(OpId::Copy).kernel(DeviceType::CPU)({t}, {v}, {{"dtype", c}});
  std::memcpy(&bits, v.data_ptr(), itemsize(c));
  return bits;
}

}  // namespace lucid::cuda
