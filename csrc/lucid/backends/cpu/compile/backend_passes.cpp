// The CPU backend's description for the shared pass pipeline (compile/passes/backend_passes.h):
// its fusion rule into oneDNN post-ops (absorb_epilogues, run as the pass "epilogue"), its
// layout pass keeping activations channel-blocked between convolutions (keep_blocked_layouts,
// the pass "layout", after the epilogues have become ConvFused), and the
// block interpreter's rule for which elementwise nodes join a FusedElementwise group
// (ew_block_dtype: the op is defined for the dtype eager computes it in).
#include "lucid/backends/cpu/compile/epilogue.h"
#include "lucid/backends/cpu/compile/fused_ew.h"
#include "lucid/backends/cpu/compile/layout.h"
#include "lucid/compile/passes/backend_passes.h"

namespace lucid::cpu {

LUCID_REGISTER_BACKEND_PASSES(CPU, "cpu", {{"epilogue", absorb_epilogues}, {"layout", keep_blocked_layouts}}, ew_block_dtype, true);

}  // namespace lucid::cpu
