// The pass pipeline lucid.compile runs on every new trace, in order, verifying after each pass.
// LUCID_DUMP_IR=<pass name|all> prints the graph after the named pass (or after every pass).
#include <cstdio>
#include <cstdlib>

#include "lucid/compile/passes/passes.h"

namespace lucid::ir {

namespace {
struct PassEntry {
  const char* name;
  Graph (*fn)(const Graph&);
};
// Order: cheap clean-ups first so later passes see canonical graphs (DCE removes what folding,
// CSE, simplification and the scatter-sum rewrite left unused); then BatchNorm folding, which exposes conv -> act ->
// residual chains to epilogue absorption; then elementwise grouping of what is left.
const PassEntry kPipeline[] = {
    {"simplify", algebraic_simplification},
    {"const_fold", constant_folding},
    {"cse", common_subexpression_elimination},
    {"scatter_cat", scatter_sums_to_cat},
    {"dce", dead_code_elimination},
    {"bn_fold", fold_batchnorm},
    {"epilogue", absorb_epilogues},
    {"dce2", dead_code_elimination},
    {"ew_group", group_elementwise},
};
}  // namespace

bool pass_disabled(const char* name) {
  // LUCID_COMPILE_DISABLE=<pass>[,<pass>...]: skip passes (bisecting a suspected miscompile).
  const char* env = std::getenv("LUCID_COMPILE_DISABLE");
  if (!env) return false;
  std::string list = str(",", env, ","), key = str(",", name, ",");
  return list.find(key) != std::string::npos;
}

Graph optimize(const Graph& g, const std::string& dump, PassStats* stats) {
  if (stats) stats->nodes_before = static_cast<int>(g.nodes().size());
  Graph cur = g;
  if (dump == "trace" || dump == "all") std::fprintf(stderr, "== lucid IR after trace ==\n%s", print(cur).c_str());
  for (const PassEntry& p : kPipeline) {
    if (pass_disabled(p.name)) continue;
    cur = p.fn(cur);
    cur.set_rng_draws(g.rng_draws());  // a pass may drop a draw's node, never the generator's advance
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
