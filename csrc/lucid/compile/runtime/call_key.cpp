// overlap_code (call_key.h): PyTorch's memory-overlap statuses as key codes.
#include "lucid/compile/runtime/call_key.h"

#include "lucid/core/mem_overlap.h"

namespace lucid::rt {

uint64_t overlap_code(const Tensor& a, const Tensor& b) {
  if (!spans_intersect(a, b)) return 2;
  switch (get_overlap_status(a, b)) {
    case MemOverlapStatus::Full: return 3;
    case MemOverlapStatus::Partial: return 4;
    default: return 5;
  }
}

}  // namespace lucid::rt
