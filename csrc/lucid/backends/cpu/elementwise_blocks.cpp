// The table of elementwise blocks (see elementwise_blocks.h).
#include "lucid/backends/cpu/elementwise_blocks.h"

#include <cstdio>
#include <cstdlib>

namespace lucid::cpu {

// Function-local, so that it is built before the first registration whatever the order of
// static initialisation across translation units.
static std::array<std::array<BlockFn, kNumDTypes>, kNumOps>& table() {
  static std::array<std::array<BlockFn, kNumDTypes>, kNumOps> t{};
  return t;
}

BlockFn ew_block(OpId op, DType c) { return table()[static_cast<int>(op)][static_cast<int>(c)]; }

void set_ew_blocks(OpId op, const std::array<BlockFn, kNumDTypes>& blocks) {
  std::array<BlockFn, kNumDTypes>& slot = table()[static_cast<int>(op)];
  for (BlockFn f : slot)
    if (f) {  // a build defect (a table row expanded twice), found at load time
      std::fprintf(stderr, "lucid: CPU elementwise blocks for %s set twice\n", op_name(op));
      std::abort();
    }
  slot = blocks;
}

static std::array<ParamBlockMaker, kNumOps>& param_makers() {
  static std::array<ParamBlockMaker, kNumOps> t{};
  return t;
}

ParamBlock ew_param_block(OpId op, DType c, const Attrs& attrs) {
  ParamBlockMaker make = param_makers()[static_cast<int>(op)];
  return make ? make(c, attrs) : ParamBlock{};
}

bool has_ew_param_block(OpId op) { return param_makers()[static_cast<int>(op)] != nullptr; }

void set_ew_param_block_maker(OpId op, ParamBlockMaker make) {
  ParamBlockMaker& slot = param_makers()[static_cast<int>(op)];
  if (slot) {
    std::fprintf(stderr, "lucid: CPU parameterised elementwise block for %s set twice\n", op_name(op));
    std::abort();
  }
  slot = make;
}

}  // namespace lucid::cpu
