// The pass pipeline lucid.compile runs on every new trace, in order, verifying after each pass:
// the shared passes, with the backend's own rewrites (BackendPasses::rewrites; the CPU's is
// "epilogue", oneDNN post-ops) at their place in the order. LUCID_DUMP_IR=<pass name|all> prints
// the graph after the named pass (or after every pass); LUCID_COMPILE_DISABLE skips passes by
// name, the backend's included.
#include <cstdio>
#include <cstdlib>

#include "lucid/compile/passes/passes.h"

namespace lucid::ir {

namespace {
// Order: cheap clean-ups first so later passes see canonical graphs (DCE removes what folding,
// CSE, simplification and the scatter-sum rewrite left unused); then BatchNorm folding, which
// exposes conv -> act -> residual chains to the backend's rewrites (epilogue absorption); then
// elementwise grouping of what is left.
const NamedPass kBeforeBackend[] = {
    {"simplify", algebraic_simplification},
    {"const_fold", constant_folding},
    {"cse", common_subexpression_elimination},
    {"scatter_cat", scatter_sums_to_cat},
    {"dce", dead_code_elimination},
    {"bn_fold", fold_batchnorm},
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
  return optimize(g, backend_passes(graph_device(g).type), dump, stats);
}

Graph optimize(const Graph& g, const BackendPasses& backend, const std::string& dump, PassStats* stats) {
  if (stats) stats->nodes_before = static_cast<int>(g.nodes().size());
  Graph cur = g;
  if (dump == "trace" || dump == "all") std::fprintf(stderr, "== lucid IR after trace ==\n%s", print(cur).c_str());
  auto run = [&](const char* name, auto&& fn) {
    if (pass_disabled(name)) return;
    cur = fn(cur);
    cur.set_rng_draws(g.rng_draws());  // a pass may drop a draw's node, never the generator's advance
    verify(cur);
    if (dump == name || dump == "all") std::fprintf(stderr, "== lucid IR after %s ==\n%s", name, print(cur).c_str());
  };
  for (const NamedPass& p : kBeforeBackend) run(p.name, p.fn);
  for (const NamedPass& p : backend.rewrites) run(p.name, p.fn);
  run("dce2", dead_code_elimination);
  run("ew_group", [&](const Graph& x) { return group_elementwise(x, backend); });
  if (stats) {
    stats->nodes_after = static_cast<int>(cur.nodes().size());
    stats->fused_groups = 0;
    for (const Node& n : cur.nodes()) stats->fused_groups += n.body != nullptr;
  }
  return cur;
}

}  // namespace lucid::ir
