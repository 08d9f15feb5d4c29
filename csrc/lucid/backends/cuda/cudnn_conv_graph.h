// One cuDNN convolution (forward, backward data or backward filter) through the cudnn-frontend
// graph API: a single-node graph (conv_fprop, conv_dgrad or conv_wgrad) per geometry, built once
// and cached, so a repeated call costs a hash lookup, a workspace allocation from the caching
// allocator and cuDNN's execute. The key holds everything the plan depends on: direction, dtype,
// device, the dims and strides of the three tensors, padding, stride, dilation, the pointers'
// alignment, and the lucid.backends.cudnn flags (allow_tf32, deterministic, benchmark), so
// changing a flag builds a new plan at the next call.
//
// Engine choice, as PyTorch's cuDNN v8 path: heuristics mode A then the fallback list; engines
// that down-convert their inputs are never taken; with allow_tf32 off, float32 convolutions take
// no tensor-core (TF32) engine, so they are full FP32; deterministic (or
// lucid.use_deterministic_algorithms) bars engines cuDNN marks nondeterministic; benchmark times
// every supported engine on the first call (synchronising the device, as torch's benchmark mode)
// and keeps the fastest. Compute is in float32 for float16/bfloat16/float32 and float64 for
// float64. A configuration no engine supports raises NotImplementedError naming the op, the dtype,
// the device and cuDNN's reason; any other frontend or cuDNN failure raises lucid::Error with
// cuDNN's text. Tensors are 4-D NCHW here (the caller lifts 1-D convolutions to H = 1).
#pragma once
#include <array>
#include <cstdint>

#include "lucid/core/device.h"
#include "lucid/core/dtype.h"

namespace lucid::cuda {

enum class ConvDirection : uint8_t {
  Forward,         // reads x, w; writes y
  BackwardData,    // reads y (dy) and w; writes x (dx)
  BackwardFilter,  // reads y (dy) and x; writes w (dw)
};

// A convolution call in cuDNN's terms: x the activation [N, C, H, W], w the filter
// [K, C/groups, R, S] (groups follow from the channel counts), y the output side [N, K, P, Q];
// symmetric zero padding per spatial dim.
struct ConvCall {
  ConvDirection direction = ConvDirection::Forward;
  DType dtype = DType::Float32;
  Device device;
  std::array<int64_t, 4> x_dim{}, x_stride{}, w_dim{}, w_stride{}, y_dim{}, y_stride{};
  std::array<int64_t, 2> pad{}, stride{}, dilation{};
  void* x = nullptr;
  void* w = nullptr;
  void* y = nullptr;
  const char* op = "conv";  // names the op in errors
};

// Runs `c` on the current stream of c.device (the caller holds a DeviceGuard for it).
void run_cudnn_conv(const ConvCall& c);

}  // namespace lucid::cuda
