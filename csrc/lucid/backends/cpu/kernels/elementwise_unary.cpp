// CPU kernels and fused-elementwise blocks of the table's plain unary ops (abs, exp, relu...),
// expanded from their functors (see elementwise.h).
#include "lucid/backends/cpu/kernels/elementwise.h"

namespace lucid::cpu {

#define LUCID_EW(Op, F, Arity, Rule, Domain) LUCID_EW_CPU_ROW(Op, Arity == 1)
#define LUCID_EW_ATTR(Op, F, Arity, Rule, Domain)
#include "lucid/ops/list/elementwise_functors.def"

}  // namespace lucid::cpu
