// Dispatch by device: an op runs the kernel its backend registered for the inputs' device. These
// tests give a tensor a CUDA device by hand (its bytes stay on the host, and no CUDA kernel runs:
// each case must raise before any kernel touches the data), so they run in every build: tensors
// on two devices raise PyTorch's error, a CPU 0-dim tensor joins a tensor of any device, an op
// without a kernel for a device raises "not implemented on <device>", and the registry's kernel
// table rejects nothing it should accept.
#include <gtest/gtest.h>

#include <string>

#include "lucid/core/storage.h"
#include "lucid/dispatch/dispatch.h"
#include "lucid/ops/core.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/linalg.h"
#include "lucid/ops/op_def.h"

using namespace lucid;

namespace {

// A float32 tensor whose storage says it lives on cuda:0.
Tensor fake_cuda(const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::Float32);
  t.impl()->storage->device = Device{DeviceType::CUDA, 0};
  return t;
}

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DispatchDevice, TensorsOnTwoDevicesRaisePyTorchsError) {
  Tensor a = Tensor::empty({2, 3}, DType::Float32);
  Tensor b = fake_cuda({2, 3});
  std::string msg = error_of([&] { add(a, b); });
  EXPECT_NE(msg.find("add: expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0"),
            std::string::npos)
      << msg;
  msg = error_of([&] { add(b, a); });
  EXPECT_NE(msg.find("cuda:0 and cpu"), std::string::npos) << msg;
}

TEST(DispatchDevice, CudaIndicesAreDifferentDevices) {
  Tensor a = fake_cuda({4});
  Tensor b = fake_cuda({4});
  b.impl()->storage->device = Device{DeviceType::CUDA, 1};
  std::string msg = error_of([&] { mul(a, b); });
  EXPECT_NE(msg.find("cuda:0 and cuda:1"), std::string::npos) << msg;
}

TEST(DispatchDevice, OpWithoutAKernelForTheDeviceRaises) {
  // A CPU-only build has no CUDA kernels; a CUDA build has one for every op (so nothing to call).
  if (op_def(OpId::LinalgInv).kernel(DeviceType::CUDA)) GTEST_SKIP() << "every op has a CUDA kernel in this build";
  Tensor b = fake_cuda({3, 3});
  std::string msg = error_of([&] { linalg_inv(b); });
  EXPECT_NE(msg.find("not implemented on cuda:0"), std::string::npos) << msg;
}

TEST(DispatchDevice, CpuScalarJoinsATensorOfAnyDevice) {
  // A Python number (a wrapped CPU 0-dim tensor) with a CUDA tensor is not a device mismatch:
  // the op goes to the CUDA backend, as in PyTorch. A CUDA build has an Add kernel, which must
  // not run on this fake tensor's host memory (tests/python/test_cuda_elementwise.py covers it).
  if (op_def(OpId::Add).kernel(DeviceType::CUDA)) GTEST_SKIP() << "the CUDA backend has an Add kernel";
  Tensor b = fake_cuda({2, 3});
  std::string msg = error_of([&] { add(b, scalar_tensor(2.0)); });
  EXPECT_NE(msg.find("not implemented on cuda:0"), std::string::npos) << msg;
  msg = error_of([&] { add(scalar_tensor(2.0), b); });
  EXPECT_NE(msg.find("not implemented on cuda:0"), std::string::npos) << msg;
}

TEST(DispatchDevice, CpuOpsRunTheCpuKernel) {
  Tensor a = full({3}, 2.0, DType::Float32);
  Tensor r = add(a, a);
  EXPECT_TRUE(r.device().is_cpu());
  EXPECT_EQ(r.data<float>()[2], 4.0f);
  EXPECT_NE(op_def(OpId::Add).kernel(DeviceType::CPU), nullptr);
}

}  // namespace
