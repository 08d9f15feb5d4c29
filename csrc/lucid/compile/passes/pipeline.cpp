// The pass pipeline lucid.compile runs on every new trace, in order, verifying after each pass.
// LUCID_DUMP_IR=<pass name|all> prints the graph after the named pass (or after every pass).
#include <cstdio>

#include "lucid/compile/passes/passes.h"

namespace lucid::ir {

namespace {
struct PassEntry {
  const char* name;
  Graph (*fn)(const Graph&);
};
// Order: cheap clean-ups first so later passes see canonical graphs; DCE last removes what
// folding, CSE and simplification left unused.
const PassEntry kPipeline[] = {
    {"simplify", algebraic_simplification},
    {"const_fold", constant_folding},
    {"cse", common_subexpression_elimination},
    {"dce", dead_code_elimination},
    {"ew_group", group_elementwise},
};
}  // namespace

Graph optimize(const Graph& g, const std::string& dump, PassStats* stats) {
  if (stats) stats->nodes_before = static_cast<int>(g.nodes().size());
  Graph cur = g;
  if (dump == "trace" || dump == "all") std::fprintf(stderr, "== lucid IR after trace ==\n%s", print(cur).c_str());
  for (const PassEntry& p : kPipeline) {
    if (!p.fn) continue;
    cur = p.fn(cur);
    verify(cur);
    if (dump == p.name || dump == "all") std::fprintf(stderr, "== lucid IR after %s ==\n%s", p.name, print(cur).c_str());
  }
  if (stats) {
    stats->nodes_after = static_cast<int>(cur.nodes().size());
    stats->fused_groups = 0;
    for (const Node& n : cur.nodes()) stats->fused_groups += n.body != nullptr;
  }
  return cur;
}

}  // namespace lucid::ir
