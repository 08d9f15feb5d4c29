// Tracer: records every op dispatched on this thread into an ir::Graph while the ops still run
// eagerly (tracing by execution). Tensors the call passes in are graph inputs; any other tensor
// an op reads is bound state (parameters, buffers, optimizer state), fed from its current
// storage at every call, except Python scalars (wrapped numbers), which become constants.
// In-place writes to bound state or to arguments become explicit assigns; writes through views
// become AsStridedScatter on the view's root, and later reads of other views see the new root.
// Random ops from the default generator are recorded with offsets relative to the trace's first
// draw (the runtime reserves fresh draws at every call); other generators make the trace fall back. A host read of a traced value
// (item, bool, tolist, numpy) means Python control flow may depend on data: the trace records
// a fallback reason instead of pretending the graph is complete. So does a write to an argument
// or bound tensor whose memory overlaps another one (a view of it passed separately): the graph
// holds them as independent values, so the other would read stale data.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "lucid/compile/ir/graph.h"
#include "lucid/compile/trace/trace_hook.h"

namespace lucid {

// Where the host read happened, in the caller's terms (the Python bindings install one that names
// the user's source line); empty when none is installed. Called only while a trace is recording.
using HostReadLocator = std::function<std::string()>;
void set_host_read_locator(HostReadLocator f);

class Tracer : public TraceHook {
 public:
  Tracer();  // notes the default generator's state: random ops are recorded relative to it
  int add_input(const Tensor& t);
  void set_outputs(const TensorList& outs);
  // A module attribute rebound during the trace from `old` (a tensor from before the trace) to
  // `now` (self.s = self.s + x): `old` becomes bound state assigned `now`'s value, so cached
  // calls update the bound tensor. Returns an empty string, or why it can't be an assign.
  std::string rebind(const Tensor& old, const Tensor& now);

  void on_op(OpId id, const TensorList& inputs, const Attrs& attrs, const TensorList& outputs) override;
  void on_inplace(OpId id, const TensorList& dsts, const TensorList& inputs, const Attrs& attrs,
                  const Tensor& result) override;
  void on_host_read(const Tensor& t, const char* what) override;
  void on_untraced_callback(const std::string& what) override;

  const ir::Graph& graph() const { return graph_; }
  int id_of(const Tensor& t) const {  // the value t currently stands for, or -1
    auto it = ids_.find(t.impl());
    return it == ids_.end() ? -1 : it->second;
  }
  const TensorList& state_feeds() const { return state_feeds_; }  // one per graph state value
  const std::string& fallback_reason() const { return fallback_; }
  bool ok() const { return fallback_.empty(); }

 private:
  int value_of(const Tensor& t);           // lookup, or bind as state / constant
  static const TensorImpl* root_of(const Tensor& t);  // a view's root base, or null
  int add_view_of_root(const Tensor& t, int root_value);  // t as AsStrided of its root's value
  void record_write(const TensorImpl* target, int value);  // new content; assign if state/input
  void write_into(const OpDef& def, const Tensor& dst, int r, DType rdt);  // value r (of dtype rdt) becomes dst's
  void note_storage(const Tensor& t);  // t owns its storage in the trace
  Attrs random_attrs(const OpDef& def, const Attrs& attrs);  // seed 0, offset relative to the trace
  int alias_value(const Tensor& t);    // value an unseen alias of a traced tensor reads, or -1
  void fallback(const std::string& why) { if (fallback_.empty()) fallback_ = why; }
  void check_written_aliases();  // fallback if a written input/state overlaps another fed tensor
  ir::Graph graph_;
  std::unordered_map<const TensorImpl*, int> ids_;      // tensor -> current value id
  std::unordered_map<const TensorImpl*, int> state_of_;  // bound tensor -> its State value id
  std::unordered_map<const TensorImpl*, int> input_of_;  // argument -> its Input value id
  std::unordered_map<const TensorImpl*, int> view_src_;  // view -> root value it was taken from
  std::unordered_map<const Storage*, Tensor> storage_owner_;  // storage -> the traced tensor owning it
  TensorList keep_alive_;  // every tensor seen, so addresses are not reused during the trace
  TensorList state_feeds_;
  std::vector<std::pair<Tensor, int>> fed_;  // every input and state with its value id, in order
  std::string fallback_;
  uint64_t rng_seed_ = 0, rng_start_ = 0;
};

// Installs a tracer on this thread for the guard's lifetime (restores the previous hook).
class TraceGuard {
 public:
  explicit TraceGuard(Tracer* t) : prev_(current_trace_hook()) { set_trace_hook(t); }
  ~TraceGuard() { set_trace_hook(prev_); }
  TraceGuard(const TraceGuard&) = delete;
  TraceGuard& operator=(const TraceGuard&) = delete;

 private:
  TraceHook* prev_;
};

}  // namespace lucid
