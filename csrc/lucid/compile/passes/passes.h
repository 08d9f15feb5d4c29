// Compiler passes over the IR, one per file, each with a what-and-why header and IR-text tests
// (tests/cpp/test_passes_*.cpp). These are the shared passes: they know no backend. What a
// backend adds (its fusion rules, what its fused-elementwise runtime can run) comes from its
// description (backend_passes.h), which the pipeline picks by the graph's device. A pass takes a graph and returns a new one: graphs are values,
// never edited in place, so a cached executable's graph can't change under it. Every pass
// keeps the graph's inputs and states in the same slots (the runtime feeds them by slot).
//
// Rewriter is the shared "copy with changes" helper: it copies inputs, states and constants,
// then the pass copies, drops or replaces nodes, remapping value ids as it goes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lucid/compile/ir/graph.h"
#include "lucid/compile/passes/backend_passes.h"

namespace lucid::ir {

class Rewriter {
 public:
  explicit Rewriter(const Graph& src);  // copies inputs, states, constants (same slots)

  const Graph& src() const { return src_; }
  Graph& out() { return out_; }
  int map(int old) const { return old < 0 ? -1 : map_.at(old); }  // -1 (absent) stays -1
  std::vector<int> map(const std::vector<int>& old) const;
  void set(int old, int new_id) { map_.at(old) = new_id; }          // old value now stands for new_id
  // Copies a source node with its inputs mapped; maps its outputs; returns the new output ids.
  std::vector<int> copy(const Node& n);
  // Adds a new node over new-graph ids.
  std::vector<int> add(OpId op, std::vector<int> inputs, Attrs attrs, const std::vector<TensorMeta>& outs);
  int add_const(const Tensor& data) { return out_.add_const(data); }
  TensorMeta meta(int new_id) const { return out_.value(new_id).meta(); }
  // Maps the source's outputs and assigns, verifies, and returns the new graph.
  Graph finish();

 private:
  const Graph& src_;
  Graph out_;
  std::vector<int> map_;
};

// Uses of each value: node indices that read it (graph outputs and assigns are not counted here;
// see is_escaping).
std::vector<std::vector<int>> value_users(const Graph& g);
// True for values a pass must keep observable: graph outputs and assigned values.
std::vector<bool> escaping_values(const Graph& g);
// Escaping values and, through view ops, their bases: values whose storage the caller sees. A
// pass must not replace one of these by a constant, an input or another such value (eager mode
// gives each call, and each output, its own tensor).
std::vector<bool> observable_values(const Graph& g);

// True when id (of g) is a constant every element of which equals v.
bool constant_equal_to(const Graph& g, int id, double v);

// ---- passes (each in its own .cpp) --------------------------------------------------------
Graph dead_code_elimination(const Graph& g);        // dce.cpp
Graph common_subexpression_elimination(const Graph& g);  // cse.cpp
Graph constant_folding(const Graph& g);             // const_fold.cpp
Graph algebraic_simplification(const Graph& g);     // simplify.cpp: x*1, x+0, x-0, x/1, -(-x), no-op reshapes -> x
Graph fold_batchnorm(const Graph& g);               // bn_fold.cpp: eval BatchNorm into the preceding conv
// ew_group.cpp: elementwise chains -> FusedElementwise, of the nodes the backend's fused runtime
// can run (without a backend: the one of g's device).
Graph group_elementwise(const Graph& g, const BackendPasses& backend);
Graph group_elementwise(const Graph& g);
Graph scatter_sums_to_cat(const Graph& g);          // scatter_cat.cpp: sum of slice-scatters into zeros -> Cat

// Joint forward+backward trace -> forward and backward graphs (partition.cpp). The forward
// returns its outputs then `num_saved` saved values; the backward takes the saved values then
// the grad outputs and returns the gradients.
struct JointPartition {
  Graph forward, backward;
  int num_saved = 0;
};
JointPartition partition_joint(const Graph& joint, int n_fwd_inputs, int n_fwd_outputs);

// Memory plan (memory_plan.cpp): where each value lives at run time.
struct MemoryPlan {
  static constexpr int64_t kFresh = -1;  // allocated per call (graph outputs and their bases)
  static constexpr int64_t kAlias = -2;  // a view: shares its base's storage (set by the view op)
  static constexpr int64_t kExternal = -3;  // input, state or constant: fed, never allocated
  static constexpr int64_t kTarget = -5;  // written straight into its assign target (target[id])
  static constexpr int64_t kCached = -6;  // computed from bound state and constants only (state_computed_nodes):
                                          // the executor keeps it across calls (see memory_plan.cpp)
  std::vector<int64_t> offset;  // per value id: byte offset in the arena, or one of the above
  std::vector<int> target;      // per value id: for kTarget values, the state or input written; else -1
  int64_t arena_bytes = 0;
  int in_place = 0;   // values that reuse a dying input's buffer in place
  int to_target = 0;  // values written straight into their assign target
  std::string str(const Graph& g) const;  // one line per node value, for tests and LUCID_DUMP_IR
};
// cache_state: plan the outputs of state_computed_nodes as kCached (for a backend whose executor
// keeps them across calls, BackendPasses::caches_state_values); otherwise they are planned as
// any other node value.
MemoryPlan plan_memory(const Graph& g, bool cache_state = false);
// Per node: computed only from states and constants (directly or through other such nodes), not
// random, and no output of it (nor a view of one) is a graph output or an assigned value. Such a
// node gives the same result at every call while the bound tensors it reads keep their contents,
// so an executor may compute it once and reuse it (BatchNorm folded into a conv's weights, a
// weight's transpose). All zeros when no such node is a kernel (views alone are not worth it).
std::vector<char> state_computed_nodes(const Graph& g);

// The pipeline lucid.compile runs, in order: the shared passes with the backend's rewrites among
// them (see pipeline.cpp). `dump` names a pass (or "all") whose output is printed to stderr
// (LUCID_DUMP_IR). Without a backend: the description of g's device (ir::graph_device).
struct PassStats {
  int nodes_before = 0, nodes_after = 0, fused_groups = 0;
};
Graph optimize(const Graph& g, const BackendPasses& backend, const std::string& dump, PassStats* stats);
Graph optimize(const Graph& g, const std::string& dump, PassStats* stats);
// LUCID_COMPILE_DISABLE=<name>[,<name>...] names passes (or "memory_plan") to skip.
bool pass_disabled(const char* name);

}  // namespace lucid::ir
