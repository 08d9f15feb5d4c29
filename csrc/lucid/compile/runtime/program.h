// Program: the device-neutral half of a compiled signature, what any backend's executor runs.
// Built once from an optimised graph and its memory plan, then immutable and shared: the graph
// (ops, attributes, constants), the plan (arena offsets, fresh and in-target values), the
// instruction list (per node: how it runs, i.e. a kernel, a view or a fused elementwise group,
// over which value slots, and which of its outputs are fresh per call or written into an assign
// target), the final assigns (writes to state or arguments, the last one per target, in order)
// and which outputs are such a target. It is what save_compiled stores (as the graph) and what
// every executor shares; nothing in it points at a kernel or at memory. Which instructions form
// the state cache (values computed from bound state only, kept across calls) is here too.
//
// The parts of a call every executor does alike live here too: checking the feeds, deciding which
// targets can be written in place this call, applying the final assigns and collecting the
// outputs from the executor's value slots.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "lucid/compile/ir/graph.h"
#include "lucid/compile/passes/passes.h"

namespace lucid::rt {

struct Instruction {
  enum class Kind : uint8_t { Kernel, View, Fused };
  Kind kind = Kind::Kernel;
  const ir::Node* node = nullptr;  // the op, its attributes and its value slots (node->inputs, node->outputs)
  std::vector<int> fresh;  // outputs allocated per call (positions in node->outputs)
  std::vector<std::pair<int, int>> into;  // (output position, index in targets()): written into a target
  bool random = false;     // Lowering::Random: seed and offset filled in per call
  // A node of the state cache (MemoryPlan::kCached): computed from bound state and constants
  // only; its outputs are in `fresh`. An executor that keeps the cache runs it only when a bound
  // tensor it reads has changed; any other runs it every call like the rest.
  bool cached = false;
};

class Program {
 public:
  Program(ir::Graph g, ir::MemoryPlan plan);
  Program(const Program&) = delete;  // instructions point into graph_
  Program& operator=(const Program&) = delete;

  const ir::Graph& graph() const { return graph_; }
  const ir::MemoryPlan& plan() const { return plan_; }
  Device device() const { return device_; }  // where it runs (ir::graph_device): picks the executor
  const std::vector<Instruction>& instructions() const { return instrs_; }
  const std::vector<ir::Assign>& final_assigns() const { return final_assigns_; }
  const std::vector<int>& targets() const { return targets_; }  // value ids of the states/inputs written in place (plan kTarget)
  // The state cache: the state value ids its instructions read, and the value ids of its results
  // that the rest of the program reads (both empty when nothing is planned kCached).
  const std::vector<int>& cache_reads() const { return cache_reads_; }
  const std::vector<int>& cache_values() const { return cache_values_; }

  // Raises ValueError unless inputs and states match the graph's by count, shape, dtype and device.
  void check_feeds(const TensorList& inputs, const TensorList& states) const;
  // The fed tensor of input or state value id.
  const Tensor& fed(const TensorList& inputs, const TensorList& states, int id) const {
    const ir::Value& v = graph_.value(id);
    return v.kind == ir::ValueKind::State ? states[v.slot] : inputs[v.slot];
  }
  // ok[i]: targets()[i] can be written in place this call (contiguous, and sharing memory with no
  // other fed tensor: two fed tensors over one buffer would see each other's writes mid-call).
  void writable_targets(const TensorList& inputs, const TensorList& states, std::vector<char>& ok) const;
  // After every instruction ran, slots holding each value id's tensor: writes the final assigns
  // into their targets (bumping versions), then returns the outputs.
  void apply_assigns(const std::vector<Tensor>& slots, const TensorList& inputs, const TensorList& states) const;
  TensorList outputs(const std::vector<Tensor>& slots, const TensorList& inputs, const TensorList& states) const;

 private:
  ir::Graph graph_;
  ir::MemoryPlan plan_;
  Device device_;
  std::vector<Instruction> instrs_;
  std::vector<ir::Assign> final_assigns_;  // the last write to each target, in order
  std::vector<int> output_target_;         // per output: the target whose final value it is, or -1
  std::vector<int> targets_;
  std::vector<int> cache_reads_, cache_values_;
};

// The plan the runtime uses when the memory planner is switched off: every node value is
// allocated per call (views alias), exactly as eager would.
ir::MemoryPlan eager_plan(const ir::Graph& g);

}  // namespace lucid::rt
