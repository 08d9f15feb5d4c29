// The CUDA kernel of ToDevice (a copy to or from a CUDA device, ops/core_ops.cpp): dispatch runs
// the non-CPU side's kernel for a transfer, and the CUDA Copy kernel (kernels/copy.cu) already
// handles every direction (host to device, device to host, device to device) with the dtype cast,
// so this forwards to it with the transfer's non_blocking flag.
#include "lucid/ops/op_def.h"

namespace lucid::cuda {
namespace {

void to_device_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  KernelFn copy = op_def(OpId::Copy).kernel(DeviceType::CUDA);
  LUCID_CHECK(copy, NotImplementedError, "to: the CUDA backend has no Copy kernel in this build");
  copy(in, out, Attrs{{"dtype", out[0].dtype()}, {"non_blocking", a.b("non_blocking", false)}});
}

}  // namespace

LUCID_REGISTER_KERNEL(ToDevice, CUDA, to_device_kernel);

}  // namespace lucid::cuda
