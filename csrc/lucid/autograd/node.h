// Autograd graph node: one per differentiable op call that had an input requiring grad. It
// holds the op's id and attributes, the saved tensors the op's VJP needs, and one edge per
// input (to the producer's node, or to a leaf whose .grad accumulates). `apply` runs the VJP
// from the op's OpDef, so eager backward and traced backward share one definition.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "lucid/core/tensor.h"
#include "lucid/ops/op_def.h"

namespace lucid {

struct Node;

struct Edge {
  std::shared_ptr<Node> fn;          // producer's node, or null
  uint32_t input_nr = 0;             // which output of fn
  std::shared_ptr<TensorImpl> leaf;  // leaf tensor accumulating .grad, or null
  bool valid() const { return fn || leaf; }
};

// A tensor saved for backward, with the version it had when saved. Outputs are saved without
// their grad_fn (a weak reference) so a node does not keep itself alive.
struct SavedTensor {
  Tensor data;
  uint32_t version = 0;
  bool is_output = false;
  std::weak_ptr<Node> grad_fn;
  uint32_t output_nr = 0;

  static SavedTensor save(const Tensor& t, bool is_output);
  Tensor unpack(const char* op) const;
};

struct Node : std::enable_shared_from_this<Node> {
  OpId op{};
  Attrs attrs;
  uint64_t sequence_nr = 0;
  uint32_t num_outputs = 1;
  std::vector<Edge> next_edges;        // one per input
  std::vector<TensorMeta> input_meta;  // one per input
  std::vector<bool> needs_grad;        // one per input
  std::vector<SavedTensor> saved_inputs, saved_outputs;
  std::vector<std::pair<uint32_t, TensorHook>> pre_hooks;  // hooks on non-leaf outputs
  bool released = false;

  virtual ~Node() = default;
  virtual const char* name() const;
  virtual TensorList apply(const TensorList& grads);  // one grad per input
  virtual void release_saved();
};

uint64_t next_sequence_nr();

// The wiring every node kind shares (op nodes in dispatch, FunctionNode): a fresh sequence
// number, one edge, meta and needs_grad flag per input (inputs listed in `nondiff`, undefined ones
// and those that don't require grad get no edge), and output k of `node` made o's grad_fn.
void connect_inputs(Node& node, const TensorList& inputs, const std::vector<int>& nondiff = {});
void attach_output(const std::shared_ptr<Node>& node, const Tensor& o, uint32_t k);

}  // namespace lucid
