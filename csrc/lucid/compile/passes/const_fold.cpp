// Constant folding: a node whose inputs are all constants (or that has no inputs: Arange, Fill,
// Linspace, Eye...) is evaluated once at compile time through eager dispatch and its results
// become new constants. Traced code builds many values that do not depend on the call's data
// (index grids, masks, scale factors, casts of literals); computing them once per compile
// instead of once per call is free speed, and exposes constants to later passes.
//
// What does not fold, and why:
// - Random ops (Lowering::Random): each call must draw fresh numbers (the offset advances).
// - State values are not constants: parameters and buffers change between calls.
// - Empty: its contents are unspecified; a constant would only carry garbage bytes.
// - Values the caller can see: graph outputs, assigned values, and the bases of views that are
//   outputs. Eager mode gives a fresh tensor per call; a constant would be shared by every call
//   (an in-place edit of one call's output would change the next call's).
// - Results over kMaxFoldedElements elements (1<<20, 4 MiB of float32, over all results of the
//   node), so constants do not bloat the executable; and views whose result has more elements
//   than their input (Expand of a scalar stays a cheap broadcast, not a materialised tensor).
// - Nodes whose evaluation raises: the error belongs to the call, so the runtime raises it then.
// - Nodes whose results live on a device other than the CPU: a graph's constants are host
//   tensors (the printer, the hash, common-subexpression elimination and the artifact read their
//   bytes on the host; an executor copies a host scalar to its device where a kernel needs it),
//   so such a node stays and runs at each call.
// Folded view results are copied to fresh contiguous storage, so a constant never aliases
// another. The folded node's inputs stay behind (possibly unused); DCE removes them.
#include <cstring>

#include "lucid/autograd/grad_mode.h"
#include "lucid/compile/ir/interpret.h"
#include "lucid/compile/passes/passes.h"
#include "lucid/compile/trace/trace_hook.h"
#include "lucid/dispatch/dispatch.h"

namespace lucid::ir {

namespace {

constexpr int64_t kMaxFoldedElements = int64_t{1} << 20;

// Detaches the thread's trace hook while folding, so compile-time evaluation is never recorded.
struct NoTrace {
  TraceHook* prev = current_trace_hook();
  NoTrace() { set_trace_hook(nullptr); }
  ~NoTrace() { set_trace_hook(prev); }
};

bool is_view_op(const Node& n) { return !n.body && op_def(n.op).view != nullptr; }

int64_t numel_of_value(const Graph& g, int id) { return numel_of(g.value(id).shape); }

// The node's kind, observability and size allow folding (its inputs are checked by the caller).
bool foldable(const Graph& g, const Node& n, const std::vector<bool>& observable) {
  if (!n.body && (op_def(n.op).lowering == Lowering::Random || n.op == OpId::Empty)) return false;
  int64_t in_elems = 0, out_elems = 0;
  for (int in : n.inputs)
    if (in >= 0) in_elems += numel_of_value(g, in);
  for (int out : n.outputs) {
    if (observable[out] || !g.value(out).device.is_cpu()) return false;
    out_elems += numel_of_value(g, out);
  }
  if (out_elems > kMaxFoldedElements) return false;
  return !is_view_op(n) || out_elems <= in_elems;
}

}  // namespace

Graph constant_folding(const Graph& g) {
  GradModeGuard no_grad(false);
  NoTrace no_trace;
  Rewriter r(g);
  const Graph& out = r.out();
  std::vector<bool> observable = observable_values(g);
  for (const Node& n : g.nodes()) {
    // Inputs must be constants of the new graph: source constants or results folded earlier.
    bool all_const = foldable(g, n, observable);
    TensorList ins;
    for (int in : n.inputs) {
      if (!all_const) break;
      if (in < 0) { ins.emplace_back(); continue; }
      const Value& v = out.value(r.map(in));
      all_const = v.kind == ValueKind::Const;
      if (all_const) ins.push_back(out.const_data(v.slot));
    }
    if (!all_const) { r.copy(n); continue; }
    TensorList results;
    try {
      results = n.body ? interpret(*n.body, ins, {}) : dispatch(n.op, ins, n.attrs);
    } catch (const Error&) {
      r.copy(n);
      continue;
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const Value& want = g.value(n.outputs[k]);
      Tensor t = results.at(k);
      LUCID_CHECK(t.shape() == want.shape && t.dtype() == want.dtype, Error, "constant_folding: ", op_name(n.op),
                  " evaluated to ", dtype_name(t.dtype()), shape_str(t.shape()), " but the graph records ",
                  dtype_name(want.dtype), shape_str(want.shape), " for its result ", k);
      if (t.impl()->is_view) {
        Tensor fresh = Tensor::empty(t.shape(), t.dtype());
        Tensor src = t.contiguous_data();
        std::memcpy(fresh.data_ptr(), src.data_ptr(), static_cast<size_t>(src.numel()) * itemsize(src.dtype()));
        t = fresh;
      }
      r.set(n.outputs[k], r.add_const(t));
    }
  }
  return r.finish();
}

}  // namespace lucid::ir
