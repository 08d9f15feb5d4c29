// The float32 matmul precision (torch.set_float32_matmul_precision): a process-wide setting read
// by the backends' float32 GEMMs. "highest" (the default) computes in full float32; "high" and
// "medium" let a backend use TF32 tensor cores (the CUDA backend's cuBLASLt GEMMs do; the CPU's
// GEMMs are always full float32, as torch's on the CPU). torch.backends.cuda.matmul.allow_tf32
// is the same setting seen as a bool (True is "high"), as in torch.
#pragma once
#include <cstdint>

namespace lucid {

enum class MatmulPrecision : uint8_t { Highest, High, Medium };

MatmulPrecision float32_matmul_precision();
void set_float32_matmul_precision(MatmulPrecision p);

}  // namespace lucid
