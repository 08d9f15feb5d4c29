// The activation attribute of LinearFused and ConvFused, the ops the compiler's epilogue pass
// emits (act(op(x, w) + bias) [+ residual]): its values and their parser, which the op records'
// infer uses to validate it and each backend's epilogue (backends/cpu/fused_epilogue.h) to run it.
#pragma once
#include <cstdint>
#include <string>

#include "lucid/core/error.h"
#include "lucid/ops/attrs.h"

namespace lucid {

enum class FusedActivation : uint8_t { None, Relu, Gelu, GeluTanh, Relu6, Silu };

// Parses attribute 'activation' ("none" or "", "relu", "gelu", "gelu_tanh", "relu6", "silu");
// ValueError naming op otherwise.
inline FusedActivation fused_activation(const Attrs& a, const char* op) {
  const std::string& name = a.s("activation");
  if (name == "none" || name.empty()) return FusedActivation::None;
  if (name == "relu") return FusedActivation::Relu;
  if (name == "gelu") return FusedActivation::Gelu;
  if (name == "gelu_tanh") return FusedActivation::GeluTanh;
  if (name == "relu6") return FusedActivation::Relu6;
  if (name == "silu") return FusedActivation::Silu;
  throw ValueError(str(op, ": argument 'activation' expected one of none, relu, gelu, gelu_tanh, relu6, silu, got '", name,
                       "'"));
}

}  // namespace lucid
