// The compiler's IR: an SSA graph recorded from dispatched ops. Values carry shape, dtype and
// device (a CPU graph and a CUDA graph that are otherwise alike are different graphs);
// nodes carry an OpId and typed attributes (the op's own Attrs). Graph inputs are the call's
// tensor arguments; bound state (parameters, buffers, optimizer state, RNG state) is a separate
// kind of value read at every call; constants are literals built from Python data. Writes to
// bound state are explicit `assign` records, so no side effect is dropped. The text form
// (text.cpp) round-trips; canonical_hash keys the executable cache on the whole
// graph (wiring, attributes, shapes, outputs, assigns), never on the op sequence alone.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lucid/core/tensor.h"
#include "lucid/ops/op_def.h"

namespace lucid::ir {

enum class ValueKind : uint8_t { Input, State, Const, Node };

struct Value {
  ValueKind kind = ValueKind::Node;
  Shape shape;
  DType dtype = DType::Float32;
  Device device{};
  int producer = -1;      // node index (kind Node)
  int output_index = 0;   // which output of the producer
  int slot = -1;          // index into inputs / states / consts (other kinds)
  TensorMeta meta() const { return {shape, dtype, device}; }
};

class Graph;

struct Node {
  OpId op{};
  Attrs attrs;
  std::vector<int> inputs;   // value ids; -1 = absent optional input (None)
  std::vector<int> outputs;  // value ids
  // FusedElementwise only: the group as a graph whose inputs are this node's inputs and whose
  // outputs are this node's outputs (elementwise nodes only). Shared and immutable.
  std::shared_ptr<const Graph> body;
};

struct Assign {
  int state = -1;  // value id of a State value (or an Input: the function wrote into its argument)
  int value = -1;  // value written into it
};

class Graph {
 public:
  int add_input(const TensorMeta& m);
  int add_state(const TensorMeta& m);
  int add_input(const Shape& shape, DType dtype) { return add_input(TensorMeta{shape, dtype}); }  // on the CPU
  int add_state(const Shape& shape, DType dtype) { return add_state(TensorMeta{shape, dtype}); }  // on the CPU
  int add_const(const Tensor& data);  // keeps the payload
  std::vector<int> add_node(OpId op, std::vector<int> inputs, Attrs attrs, const std::vector<TensorMeta>& outs);
  // FusedElementwise node with its body graph (see Node::body).
  std::vector<int> add_fused(std::vector<int> inputs, std::shared_ptr<const Graph> body, const std::vector<TensorMeta>& outs);
  void add_assign(int state, int value) { assigns_.push_back({state, value}); }
  void set_outputs(std::vector<int> outs) { outputs_ = std::move(outs); }
  // Random draws one call makes from the default generator (Philox). Random nodes carry their
  // offset relative to the call's first draw and seed 0; the runtime reserves rng_draws at every
  // call and fills in the generator's seed and the absolute offsets, so each call draws fresh
  // numbers and the generator advances exactly as eager would.
  void set_rng_draws(int64_t n) { rng_draws_ = n; }
  int64_t rng_draws() const { return rng_draws_; }

  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<int>& states() const { return states_; }
  const std::vector<int>& consts() const { return consts_; }
  const std::vector<int>& outputs() const { return outputs_; }
  const std::vector<Assign>& assigns() const { return assigns_; }
  const Tensor& const_data(int slot) const { return const_data_[slot]; }
  const Value& value(int id) const { return values_[id]; }

 private:
  int add_value(Value v);
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<int> inputs_, states_, consts_, outputs_;
  std::vector<Assign> assigns_;
  std::vector<Tensor> const_data_;
  int64_t rng_draws_ = 0;
};

// Canonical numbering of values: inputs, states, constants, then node results in node order.
// The printer and the hash use it, so a graph and parse(print(graph)) agree however the values
// were created (a tracer discovers state and constants in the middle of the op stream).
std::vector<int> canonical_ids(const Graph& g);

// Text form, e.g.
//   graph(%0: float32[2,3] input, %1: float32[3] state, %2: float64[] const=1.5) {
//     %3 = Add(%0, %1) : float32[2,3]
//     %4, %5 = MaxDim(%3) {dim=1, keepdim=false} : float32[2], int64[2]
//     assign %1 <- %4
//     return (%3, %5)
//   }
// A FusedElementwise node's body follows its result types as a nested block (ids are local):
//     %3 = FusedElementwise(%0, %1) : float32[2,3] {
//       graph(%0: float32[2,3] input, %1: float32[3] input) {
//         %2 = Add(%0, %1) : float32[2,3]
//         return (%2)
//       }
//     }
// A value on a device other than the CPU has it after its type: "float32[2,3]@cuda:0" (a CPU
// value prints without it, so CPU text reads as it did before devices were recorded).
std::string print(const Graph& g);
// Raises ValueError with the line and what was expected. consts: the constants' payloads in
// declaration order (an artifact stores them as blobs: exact, where the text holds only a rounded
// value of 1-element constants); each must match its declared type. Without them a constant is
// filled with its printed value (0 when none).
Graph parse(const std::string& text, const std::vector<Tensor>* consts = nullptr);

// Re-derives every node's result types with its op's own shape rule (infer, or the view function)
// and raises Error naming the node where they differ from the recorded ones: a graph read from a
// file is checked before any kernel trusts its shapes. FusedElementwise bodies are checked too.
void check_types(const Graph& g);

// Structural checks: every value defined exactly once before use, ids in range, producers and
// output indices consistent, assigns target state values of the same shape, dtype and device.
// Raises Error.
void verify(const Graph& g);

// The device a graph runs on, which picks its backend's passes and executor: the one device of
// its inputs, states and node results. Constants (CPU scalars) and other CPU 0-d values (host
// scalars: a hyper-parameter input, an optimizer's step counter, ops over those) join any device,
// as in dispatch; a graph of those only runs on the CPU. Raises NotImplementedError when the
// other values span two devices: a compiled program runs on one backend.
Device graph_device(const Graph& g);

// Stable hash of the whole graph; equal graphs (up to nothing) hash equal, and two graphs with
// the same op sequence but different wiring, attributes, shapes, devices or outputs do not. A
// value's device is mixed in only when it is not the CPU, so CPU graphs keep the hashes the disk
// cache (export/disk_cache.cpp) stored before devices were recorded.
uint64_t canonical_hash(const Graph& g);

}  // namespace lucid::ir
