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

}  // namespace lucid::cpu
