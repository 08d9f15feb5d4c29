// Static memory plan: decides, once per compiled graph, where every value lives at run time, so
// the runtime allocates one arena per executable instead of one tensor per node per call.
//
//   input / state / constant        kExternal  fed by the caller, never allocated
//   output of a view op (ViewFn)    kAlias     made at run time by the ViewFn on its base
//   graph output, or the base of a  kFresh     allocated per call: it is handed to the caller,
//   view chain that is an output               so it must not live in the reused arena
//   every other node output         offset     a contiguous tensor inside the arena
//   output of a state_computed node kCached    (cache_state only) kept by the executor across
//   (computed from bound state and             calls, recomputed when a bound tensor it reads
//   constants only)                            changed: BatchNorm folded into conv weights is
//                                              computed once per weight update, not per call
//   the final value of a state or   kTarget    written by its node straight into the target
//   input (its last assign), when              (the parameter, optimizer moment...), so the
//   nothing reads the old value later          end-of-call copy disappears
//
// Writing into the target: the value is the last one assigned to target t (a state or input),
// and is assigned nowhere else; its node is not a view; no later node reads t or a view of t,
// and no graph output is t or a view of it (those see the storage after the call); if the node
// itself reads t, it is elementwise and reads t directly, so each element is read before it is
// written (the in-place rule below). What the planner can't know is whether two fed tensors
// share memory at run time; the runtime checks that per call and falls back to a fresh tensor
// plus the end-of-call copy for a target that does (or that is not contiguous).
//
// Lifetimes are node-index intervals [producer, last reader]. A view keeps its base alive, so
// a read of a view (or of a view of a view) counts as a read of the root base; a value assigned
// into state is copied at the end of the call, so its root base lives to the end (index N).
//
// In-place reuse: an elementwise node (Lowering::Elementwise or FusedElementwise) reads and writes
// each element at the same index, so an output may take over the buffer of an input that dies
// at this node: the input lives in the arena, has the output's exact shape and dtype, is read by
// no later node and no view of it is read at or after this node (a permuted view read here would
// see already-overwritten elements). Each input's buffer goes to at most one output. A handover
// merges the two values into one buffer whose interval is the union of theirs.
//
// Packing is the greedy-by-size heuristic (TFLite's GreedyBySize, the same idea as TVM/XLA):
// buffers sorted by size descending, each placed in the smallest gap between the already placed
// buffers whose intervals overlap it, else above them. Sizes are rounded up to 64 bytes so every
// offset is 64-byte aligned; arena_bytes is the high-water mark.
#include <algorithm>
#include <sstream>

#include "lucid/compile/passes/passes.h"

namespace lucid::ir {

namespace {

constexpr int64_t kArenaAlign = 64;
constexpr int64_t kUnplanned = -4;  // a node value bound for the arena, offset not yet chosen

int64_t value_bytes(const Value& v) { return contiguous_nbytes(v.shape, static_cast<int64_t>(itemsize(v.dtype))); }

int64_t align_up(int64_t n) { return checked_add(n, kArenaAlign - 1, "memory plan") / kArenaAlign * kArenaAlign; }

bool is_view_node(const Node& n) { return op_def(n.op).view != nullptr; }

bool is_elementwise_node(const Node& n) {
  return n.op == OpId::FusedElementwise || op_def(n.op).lowering == Lowering::Elementwise;
}

// An arena allocation: one value, or a chain of values joined by in-place handovers.
struct Buffer {
  int64_t size = 0;  // aligned bytes
  int first = 0, last = 0;
  int64_t offset = 0;
};

bool overlaps(const Buffer& a, const Buffer& b) { return a.first <= b.last && b.first <= a.last; }

// Greedy by size: largest buffers first, each into the smallest gap left by the placed buffers
// whose lifetimes overlap it. Returns the high-water mark.
int64_t pack(std::vector<Buffer>& bufs) {
  std::vector<int> order(bufs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (bufs[a].size != bufs[b].size) return bufs[a].size > bufs[b].size;
    return bufs[a].first != bufs[b].first ? bufs[a].first < bufs[b].first : a < b;
  });
  std::vector<int> placed;  // kept sorted by offset
  int64_t high = 0;
  for (int b : order) {
    Buffer& buf = bufs[b];
    if (buf.size == 0) continue;  // occupies no bytes; offset 0
    int64_t best = -1, best_gap = INT64_MAX, top = 0;
    for (int p : placed) {
      const Buffer& q = bufs[p];
      if (!overlaps(buf, q)) continue;
      int64_t gap = q.offset - top;
      if (gap >= buf.size && gap < best_gap) best = top, best_gap = gap;
      top = std::max(top, q.offset + q.size);
    }
    buf.offset = best >= 0 ? best : top;
    high = std::max(high, checked_add(buf.offset, buf.size, "memory plan"));
    auto at = std::upper_bound(placed.begin(), placed.end(), buf.offset,
                               [&](int64_t off, int p) { return off < bufs[p].offset; });
    placed.insert(at, b);
  }
  return high;
}

// Each value's root: the non-view value whose storage it uses.
std::vector<int> view_roots(const Graph& g) {
  std::vector<int> root(g.values().size());
  for (size_t v = 0; v < root.size(); ++v) root[v] = static_cast<int>(v);
  for (const Node& node : g.nodes())
    if (is_view_node(node))
      for (int o : node.outputs) root[o] = root[node.inputs.at(0)];
  return root;
}

}  // namespace

std::vector<char> state_computed_nodes(const Graph& g) {
  const auto& nodes = g.nodes();
  std::vector<int> root = view_roots(g);
  std::vector<char> escapes(g.values().size(), 0), derived(g.values().size(), 0), out(nodes.size(), 0);
  for (int o : g.outputs()) escapes[root[o]] = 1;
  for (const Assign& a : g.assigns()) escapes[root[a.value]] = 1;
  for (size_t v = 0; v < derived.size(); ++v) {
    ValueKind k = g.value(static_cast<int>(v)).kind;
    derived[v] = k == ValueKind::State || k == ValueKind::Const;
  }
  bool any_kernel = false;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    bool ok = op_def(node.op).lowering != Lowering::Random;
    for (int in : node.inputs) ok = ok && (in < 0 || derived[in]);
    for (int o : node.outputs) ok = ok && !escapes[root[o]];
    if (!ok) continue;
    out[n] = 1;
    any_kernel = any_kernel || !is_view_node(node);
    for (int o : node.outputs) derived[o] = 1;
  }
  if (!any_kernel) out.assign(nodes.size(), 0);
  return out;
}

MemoryPlan plan_memory(const Graph& g, bool cache_state) {
  const auto& nodes = g.nodes();
  const int nv = static_cast<int>(g.values().size());
  const int end = static_cast<int>(nodes.size());  // "after the last node": assigns are copied here
  MemoryPlan plan;
  plan.offset.assign(nv, MemoryPlan::kExternal);

  // Classify node outputs and find each value's root: the non-view value whose storage it uses.
  std::vector<int> root = view_roots(g), last(nv, -1);
  for (int n = 0; n < end; ++n) {
    const bool view = is_view_node(nodes[n]);
    for (int o : nodes[n].outputs) {
      plan.offset[o] = view ? MemoryPlan::kAlias : kUnplanned;
      last[o] = n;
    }
  }
  // Lifetimes, counted on roots: a read of a view is a read of its base.
  for (int n = 0; n < end; ++n)
    for (int in : nodes[n].inputs)
      if (in >= 0) last[root[in]] = std::max(last[root[in]], n);
  // Final values written straight into their assign targets (see the header). A target is an
  // input or state, so last[t] is still its last reader (through any view); -1 when none.
  plan.target.assign(nv, -1);
  {
    std::vector<bool> output_root(nv, false), final_write(g.assigns().size(), false), seen(nv, false);
    for (int o : g.outputs()) output_root[root[o]] = true;
    std::vector<int> n_assigned(nv, 0);
    for (size_t i = g.assigns().size(); i-- > 0;) {
      const Assign& a = g.assigns()[i];
      final_write[i] = !seen[a.state];
      seen[a.state] = true;
      ++n_assigned[a.value];
    }
    for (size_t i = 0; i < g.assigns().size(); ++i) {
      const int t = g.assigns()[i].state, v = g.assigns()[i].value;
      const Value &tv = g.value(t), &vv = g.value(v);
      if (!final_write[i] || vv.kind != ValueKind::Node || n_assigned[v] != 1 || plan.offset[v] != kUnplanned) continue;
      const int n = vv.producer;
      if (tv.shape != vv.shape || tv.dtype != vv.dtype || output_root[t] || last[t] > n) continue;
      if (last[t] == n) {  // read here: only elementwise, and only t itself (no view of it)
        bool direct = is_elementwise_node(nodes[n]);
        for (int in : nodes[n].inputs) direct = direct && (in < 0 || root[in] != t || in == t);
        if (!direct) continue;
      }
      plan.offset[v] = MemoryPlan::kTarget;
      plan.target[v] = t;
      ++plan.to_target;
    }
  }
  for (const Assign& a : g.assigns()) last[root[a.value]] = end;
  if (cache_state) {
    std::vector<char> cached = state_computed_nodes(g);
    for (int n = 0; n < end; ++n)
      if (cached[n] && !is_view_node(nodes[n]))
        for (int o : nodes[n].outputs) plan.offset[o] = MemoryPlan::kCached;
  }
  // Graph outputs (and the bases of output views) escape the call: fresh per call.
  for (int o : g.outputs())
    if (plan.offset[root[o]] == kUnplanned) plan.offset[root[o]] = MemoryPlan::kFresh;

  // One buffer per arena value, except where an elementwise output takes over a dying input.
  std::vector<int> buffer_of(nv, -1);
  std::vector<Buffer> bufs;
  std::vector<bool> taken(nv, false);
  for (int n = 0; n < end; ++n) {
    const Node& node = nodes[n];
    bool elementwise = is_elementwise_node(node);
    std::vector<int> viewed_here;  // roots read through a view at this node
    for (int in : node.inputs)
      if (in >= 0 && plan.offset[in] == MemoryPlan::kAlias) viewed_here.push_back(root[in]);
    // An input that dies here, lives in the arena, has o's shape and dtype, is not read here
    // through a view, and was not already handed to another output.
    auto find_donor = [&](const Value& ov) {
      if (!elementwise) return -1;
      for (int in : node.inputs) {
        if (in < 0 || plan.offset[in] != kUnplanned || taken[in] || last[in] != n) continue;
        const Value& iv = g.value(in);
        if (iv.shape != ov.shape || iv.dtype != ov.dtype) continue;
        if (std::find(viewed_here.begin(), viewed_here.end(), in) == viewed_here.end()) return in;
      }
      return -1;
    };
    for (int o : node.outputs) {
      if (plan.offset[o] != kUnplanned) continue;
      const Value& ov = g.value(o);
      int donor = find_donor(ov);
      if (donor >= 0) {
        taken[donor] = true;
        buffer_of[o] = buffer_of[donor];
        bufs[buffer_of[o]].last = last[o];
        ++plan.in_place;
      } else {
        buffer_of[o] = static_cast<int>(bufs.size());
        bufs.push_back({align_up(value_bytes(ov)), n, last[o], 0});
      }
    }
  }

  plan.arena_bytes = pack(bufs);
  for (int v = 0; v < nv; ++v)
    if (buffer_of[v] >= 0) plan.offset[v] = bufs[buffer_of[v]].offset;
  return plan;
}

std::string MemoryPlan::str(const Graph& g) const {
  std::vector<int> c = canonical_ids(g);
  std::ostringstream s;
  for (const Node& n : g.nodes())
    for (int o : n.outputs) {
      s << '%' << c[o] << ' ';
      int64_t off = offset.at(o);
      if (off >= 0) s << "arena[" << off << ',' << off + value_bytes(g.value(o)) << ")\n";
      else if (off == kTarget) s << "into %" << c[target.at(o)] << '\n';
      else if (off == kCached) s << "cached\n";
      else s << (off == kFresh ? "fresh\n" : "alias\n");  // node values are never external
    }
  s << "arena_bytes=" << arena_bytes << " in_place=" << in_place << " to_target=" << to_target << '\n';
  return s.str();
}

}  // namespace lucid::ir
