// Bindings of the channel-blocked layout ops (ops/blocked_layout.h): compiler-internal ops that
// the CPU layout pass emits, exposed as private _C functions with every attribute explicit so the
// op-spec table (tests/python/specs/blocked_layout.py) can hold their kernels to torch and to
// lucid's own NCHW kernels.
#include "bind.h"
#include "lucid/ops/blocked_layout.h"

namespace lucid::py {

LUCID_BINDER(blocked_layout) {
  m.def("_block_channels", [](const Tensor& x, int64_t block) { return block_channels(x, block); });
  m.def("_unblock_channels", [](const Tensor& x) { return unblock_channels(x); });
  m.def("_max_pool2d_blocked", [](const Tensor& x, IntList kernel, IntList stride, IntList padding, IntList dilation,
                                  bool ceil_mode) { return max_pool2d_blocked(x, kernel, stride, padding, dilation, ceil_mode); });
  m.def("_avg_pool2d_blocked", [](const Tensor& x, IntList kernel, IntList stride, IntList padding, bool ceil_mode,
                                  bool count_include_pad, int64_t divisor_override) {
    return avg_pool2d_blocked(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override);
  });
  m.def("_adaptive_avg_pool2d_blocked", [](const Tensor& x, IntList output_size) {
    return adaptive_avg_pool2d_blocked(x, output_size);
  });
  m.def("_batch_norm_blocked", [](const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                                  std::optional<Tensor> weight, std::optional<Tensor> bias, double eps, bool relu) {
    return batch_norm_blocked(x, running_mean, running_var, weight.value_or(Tensor()), bias.value_or(Tensor()), eps, relu);
  }, nb::arg("x"), nb::arg("running_mean"), nb::arg("running_var"), nb::arg("weight").none(), nb::arg("bias").none(),
     nb::arg("eps"), nb::arg("relu") = false);
}

}  // namespace lucid::py
