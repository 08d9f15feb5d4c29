// The CPU's epilogue of LinearFused and ConvFused, the ops the compiler's epilogue pass emits:
//   act(op(x, w) + bias) + residual,  or  act(op(x, w) + bias + residual)  (residual_first)
// with act one of none, relu, relu6, silu, gelu, gelu_tanh. The bias, the residual (unless it
// follows a ReLU, ReLU6 or SiLU) and GELU are oneDNN post-ops, so the product is written once,
// finished. ReLU is not: oneDNN's
// relu post-op is max(x, 0), which turns NaN into 0 and -0.0 into +0.0 where eager's relu (as
// PyTorch's) keeps both, so a NaN in a batch vanished from a compiled forward while its backward
// still spread it into the parameters. Eager's own relu kernel runs instead, in place on the
// finished output (still in cache), and a residual added after the activation goes through
// eager's add kernel: bit for bit the unfused chain, NaN, inf and -0.0 included. ReLU6 and SiLU
// run the same way (oneDNN's clip and swish post-ops have their own NaN handling and polynomial).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lucid/backends/cpu/dnnl_matmul.h"
#include "lucid/ops/attrs.h"
#include "lucid/ops/fused_activation.h"

namespace lucid {

// Runs product(post_ops), which must write op(x, w) + bias into `out` and apply post_ops in
// order (a Sum adds scale * the value out held before: the residual, filled in here), then the
// rest of the epilogue given by attrs 'activation' and 'residual_first'.
void run_fused_epilogue(const Attrs& a, const char* op, const Tensor& residual, const Tensor& out,
                        const std::function<void(const std::vector<cpu::MatmulPostOp>&)>& product);

}  // namespace lucid
