// CUDA device discovery: how many GPUs the CUDA runtime sees and what they are (torch.cuda's
// device_count / get_device_properties). One interface, two definitions chosen by the build
// (CMake's LUCID_CUDA): device_info.cu asks the CUDA runtime; ../no_cuda/device_info.cpp is the
// CPU-only build's answer (not built, no devices). Neither includes a CUDA header here, so the
// bindings compile the same in both builds.
//
// A machine without a GPU or without a driver (cudaErrorNoDevice, cudaErrorInsufficientDriver)
// has 0 devices, as has any other failure of the runtime's initialisation: device_count() never
// throws. The reason is kept and reported by device_properties(), which throws lucid::Error for
// "no device" (naming the CUDA error) and lucid::IndexError for an index out of range.
#pragma once
#include <cstddef>
#include <string>

namespace lucid::cuda {

// What torch.cuda.get_device_properties reports (the fields lucid reads today).
struct DeviceProperties {
  std::string name;               // "NVIDIA H200"
  int major = 0;                  // compute capability, e.g. 9.0
  int minor = 0;
  std::size_t total_memory = 0;   // bytes of device memory
  int multi_processor_count = 0;
};

// True when this build has the CUDA backend (LUCID_CUDA found the toolkit).
bool is_built();

// The number of CUDA devices visible to this process (CUDA_VISIBLE_DEVICES applies); 0 when the
// backend is not built, there is no driver or no GPU. Asked once, then cached.
int device_count();

inline bool is_available() { return device_count() > 0; }

// Why device_count() is 0: "this build of lucid has no CUDA backend" or the CUDA runtime's
// error name and string. Empty when a device exists.
std::string unavailable_reason();

// Properties of device `index`, 0 <= index < device_count().
DeviceProperties device_properties(int index);

}  // namespace lucid::cuda
