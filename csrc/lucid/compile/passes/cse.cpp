// Common subexpression elimination: two nodes with the same op, equal attributes, equal result
// types and the same inputs (after their own inputs were deduplicated) compute the same values,
// so the later one is replaced by the earlier one. Equal constants (same dtype, shape, bytes
// and wrapped-number flag, which changes type promotion) are merged first, so expressions over
// two copies of a literal merge too. Traced code repeats work often (the same broadcast, cast or
// mask built in several places); merging it saves compute and exposes more to later passes.
//
// Equality is exact, never by hash alone: hashes only pick candidates. Attributes compare
// doubles by bit pattern (-0.0 and 0.0 give different results, e.g. under division).
// FusedElementwise nodes merge only when their bodies are structurally equal. Random ops
// (Lowering::Random) never merge: each is a separate draw. Two nodes that both produce graph
// outputs are not merged either, so distinct outputs of a call stay distinct tensors, as in
// eager mode. The merged-away nodes are not copied; their inputs may become dead (DCE removes
// them), and merged-away constants stay in their slots until DCE.
#include <cstring>
#include <unordered_map>

#include "lucid/compile/passes/passes.h"

namespace lucid::ir {

namespace {

bool same_attr_value(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a)) {
    double y = std::get<double>(b);
    return std::memcmp(x, &y, sizeof y) == 0;
  }
  return a == b;
}

bool same_attrs(const Attrs& a, const Attrs& b) {
  const auto& x = a.items();
  const auto& y = b.items();
  if (x.size() != y.size()) return false;
  for (size_t k = 0; k < x.size(); ++k)
    if (x[k].first != y[k].first || !same_attr_value(x[k].second, y[k].second)) return false;
  return true;
}

size_t payload_bytes(const Tensor& t) { return static_cast<size_t>(t.numel()) * itemsize(t.dtype()); }

bool same_payload(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape() || a.impl()->is_wrapped_number != b.impl()->is_wrapped_number)
    return false;
  Tensor ca = a.contiguous_data(), cb = b.contiguous_data();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), payload_bytes(ca)) == 0;
}

uint64_t payload_hash(const Tensor& t) {
  Tensor c = t.contiguous_data();
  uint64_t h = 1469598103934665603ULL;  // FNV-1a over dtype and bytes
  auto mix = [&](const unsigned char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) { h ^= p[i]; h *= 1099511628211ULL; }
  };
  int d = static_cast<int>(c.dtype());
  mix(reinterpret_cast<const unsigned char*>(&d), sizeof d);
  mix(static_cast<const unsigned char*>(c.data_ptr()), payload_bytes(c));
  return h;
}

bool same_meta(const Value& a, const Value& b) { return a.shape == b.shape && a.dtype == b.dtype && a.device == b.device; }

// Structural equality of two FusedElementwise bodies: values compared by canonical number.
bool same_graph(const Graph& a, const Graph& b) {
  if (&a == &b) return true;
  if (a.values().size() != b.values().size() || a.nodes().size() != b.nodes().size() ||
      a.inputs().size() != b.inputs().size() || a.states().size() != b.states().size() ||
      a.consts().size() != b.consts().size() || a.outputs().size() != b.outputs().size() ||
      a.assigns().size() != b.assigns().size())
    return false;
  std::vector<int> ca = canonical_ids(a), cb = canonical_ids(b);
  auto same_id = [&](int x, int y) { return (x < 0 || y < 0) ? x == y : ca[x] == cb[y]; };
  auto same_values = [&](const std::vector<int>& x, const std::vector<int>& y) {
    if (x.size() != y.size()) return false;
    for (size_t k = 0; k < x.size(); ++k)
      if (!same_id(x[k], y[k]) || (x[k] >= 0 && !same_meta(a.value(x[k]), b.value(y[k])))) return false;
    return true;
  };
  if (!same_values(a.inputs(), b.inputs()) || !same_values(a.states(), b.states()) ||
      !same_values(a.consts(), b.consts()) || !same_values(a.outputs(), b.outputs()))
    return false;
  for (size_t k = 0; k < a.consts().size(); ++k)
    if (!same_payload(a.const_data(static_cast<int>(k)), b.const_data(static_cast<int>(k)))) return false;
  for (size_t n = 0; n < a.nodes().size(); ++n) {
    const Node& x = a.nodes()[n];
    const Node& y = b.nodes()[n];
    if (x.op != y.op || !same_attrs(x.attrs, y.attrs) || !same_values(x.inputs, y.inputs) ||
        !same_values(x.outputs, y.outputs) || bool(x.body) != bool(y.body) || (x.body && !same_graph(*x.body, *y.body)))
      return false;
  }
  for (size_t k = 0; k < a.assigns().size(); ++k)
    if (!same_id(a.assigns()[k].state, b.assigns()[k].state) || !same_id(a.assigns()[k].value, b.assigns()[k].value))
      return false;
  return true;
}

}  // namespace

Graph common_subexpression_elimination(const Graph& g) {
  Rewriter r(g);
  const Graph& out = r.out();

  std::unordered_map<uint64_t, std::vector<int>> consts_by_hash;  // payload hash -> source const ids
  for (int id : g.consts()) {
    const Tensor& data = g.const_data(g.value(id).slot);
    std::vector<int>& bucket = consts_by_hash[payload_hash(data)];
    bool merged = false;
    for (int prev : bucket) {
      if (same_payload(g.const_data(g.value(prev).slot), data)) {
        r.set(id, r.map(prev));
        merged = true;
        break;
      }
    }
    if (!merged) bucket.push_back(id);
  }

  std::vector<bool> is_output(g.values().size(), false);
  for (int id : g.outputs()) is_output[id] = true;
  std::vector<bool> new_is_output;  // per node of the new graph: one of its results is a graph output
  std::unordered_map<size_t, std::vector<int>> nodes_by_key;  // key hash -> new-graph node indices
  for (const Node& n : g.nodes()) {
    bool produces_output = false;
    for (int o : n.outputs) produces_output = produces_output || is_output[o];
    if (op_def(n.op).lowering == Lowering::Random) {
      r.copy(n);
      new_is_output.push_back(produces_output);
      continue;
    }
    std::vector<int> ins = r.map(n.inputs);
    size_t key = n.attrs.hash() ^ (static_cast<size_t>(n.op) * 0x9e3779b97f4a7c15ULL);
    for (int in : ins) key = key * 1000003u + static_cast<size_t>(in + 1);
    if (n.body) key ^= canonical_hash(*n.body);
    std::vector<int>& bucket = nodes_by_key[key];
    int match = -1;
    for (int m : bucket) {
      const Node& c = out.nodes()[m];
      if (c.op != n.op || c.inputs != ins || c.outputs.size() != n.outputs.size() || !same_attrs(c.attrs, n.attrs) ||
          bool(c.body) != bool(n.body) || (n.body && !same_graph(*c.body, *n.body)) ||
          (produces_output && new_is_output[m]))
        continue;
      bool metas_equal = true;
      for (size_t k = 0; k < n.outputs.size(); ++k)
        metas_equal = metas_equal && same_meta(out.value(c.outputs[k]), g.value(n.outputs[k]));
      if (metas_equal) { match = m; break; }
    }
    if (match >= 0) {
      for (size_t k = 0; k < n.outputs.size(); ++k) r.set(n.outputs[k], out.nodes()[match].outputs[k]);
      if (produces_output) new_is_output[match] = true;
      continue;
    }
    r.copy(n);
    bucket.push_back(static_cast<int>(out.nodes().size()) - 1);
    new_is_output.push_back(produces_output);
  }
  return r.finish();
}

}  // namespace lucid::ir
