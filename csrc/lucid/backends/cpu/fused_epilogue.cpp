// LinearFused / ConvFused epilogue on the CPU (see fused_epilogue.h).
#include "lucid/backends/cpu/fused_epilogue.h"

#include "lucid/backends/cpu/loops.h"
#include "lucid/ops/op_def.h"

namespace lucid {

void run_fused_epilogue(const Attrs& a, const char* op, const Tensor& residual, const Tensor& out,
                        const std::function<void(const std::vector<cpu::MatmulPostOp>&)>& product) {
  const FusedActivation act = fused_activation(a, op);
  const bool res = residual.defined(), res_first = a.b("residual_first", false);
  // Activations run as eager's kernel in place on the finished output (see the header).
  const OpId in_place = act == FusedActivation::Relu    ? OpId::Relu
                        : act == FusedActivation::Relu6 ? OpId::Relu6
                        : act == FusedActivation::Silu  ? OpId::Silu
                                                        : OpId::Add;
  const bool relu = in_place != OpId::Add;
  std::vector<cpu::MatmulPostOp> post;
  // A residual is a oneDNN Sum post-op unless it is added after such an activation (below).
  if (res && (res_first || !relu)) cpu::copy_into(out, residual);
  if (res && res_first) post.push_back({cpu::MatmulPostOp::Sum, 1.0});
  if (act == FusedActivation::Gelu || act == FusedActivation::GeluTanh)
    post.push_back({act == FusedActivation::Gelu ? cpu::MatmulPostOp::Gelu : cpu::MatmulPostOp::GeluTanh});
  if (res && !res_first && !relu) post.push_back({cpu::MatmulPostOp::Sum, 1.0});
  product(post);
  if (!relu) return;
  op_def(in_place).kernel(DeviceType::CPU)({out}, {out}, Attrs{});
  if (res && !res_first) op_def(OpId::Add).kernel(DeviceType::CPU)({out, residual}, {out}, Attrs{});
}

}  // namespace lucid
