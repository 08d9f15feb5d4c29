// Graph construction, verifier and canonical hash (the printer and parser are in text.cpp).
#include "lucid/compile/ir/graph.h"

#include <cstring>
#include <optional>

namespace lucid::ir {

int Graph::add_value(Value v) {
  values_.push_back(std::move(v));
  return static_cast<int>(values_.size()) - 1;
}

int Graph::add_input(const TensorMeta& m) {
  int id = add_value({ValueKind::Input, m.shape, m.dtype, m.device, -1, 0, static_cast<int>(inputs_.size())});
  inputs_.push_back(id);
  return id;
}

int Graph::add_state(const TensorMeta& m) {
  int id = add_value({ValueKind::State, m.shape, m.dtype, m.device, -1, 0, static_cast<int>(states_.size())});
  states_.push_back(id);
  return id;
}

int Graph::add_const(const Tensor& data) {
  int id = add_value({ValueKind::Const, data.shape(), data.dtype(), data.device(), -1, 0, static_cast<int>(consts_.size())});
  consts_.push_back(id);
  const_data_.push_back(data);
  return id;
}

std::vector<int> Graph::add_node(OpId op, std::vector<int> inputs, Attrs attrs, const std::vector<TensorMeta>& outs) {
  int n = static_cast<int>(nodes_.size());
  Node node{op, std::move(attrs), std::move(inputs), {}};
  for (size_t k = 0; k < outs.size(); ++k)
    node.outputs.push_back(add_value({ValueKind::Node, outs[k].shape, outs[k].dtype, outs[k].device, n, static_cast<int>(k), -1}));
  nodes_.push_back(std::move(node));
  return nodes_.back().outputs;
}

std::vector<int> Graph::add_fused(std::vector<int> inputs, std::shared_ptr<const Graph> body,
                                  const std::vector<TensorMeta>& outs) {
  std::vector<int> o = add_node(OpId::FusedElementwise, std::move(inputs), Attrs{}, outs);
  nodes_.back().body = std::move(body);
  return o;
}

static bool same_type(const Value& a, const Value& b) {
  return a.shape == b.shape && a.dtype == b.dtype && a.device == b.device;
}

// A FusedElementwise body: its inputs and outputs match the node's, it has no state, and it
// verifies on its own.
static void verify_body(const Node& node, int n, const Graph& g) {
  const Graph& b = *node.body;
  auto same = [&](int outer, int inner) { return same_type(g.value(outer), b.value(inner)); };
  LUCID_CHECK(b.inputs().size() == node.inputs.size() && b.outputs().size() == node.outputs.size(), Error,
              "verify: node ", n, " (FusedElementwise) has ", node.inputs.size(), " inputs and ", node.outputs.size(),
              " outputs, its body ", b.inputs().size(), " and ", b.outputs().size());
  for (size_t k = 0; k < node.inputs.size(); ++k)
    LUCID_CHECK(node.inputs[k] >= 0 && same(node.inputs[k], b.inputs()[k]), Error, "verify: node ", n,
                " (FusedElementwise): input ", k, " is absent or differs in shape, dtype or device from its body's");
  for (size_t k = 0; k < node.outputs.size(); ++k)
    LUCID_CHECK(same(node.outputs[k], b.outputs()[k]), Error, "verify: node ", n, " (FusedElementwise): output ", k,
                " differs in shape, dtype or device from its body's");
  LUCID_CHECK(b.states().empty() && b.assigns().empty(), Error, "verify: node ", n,
              " (FusedElementwise): a body has no state and no assigns");
  verify(b);
}

void verify(const Graph& g) {
  const auto& vals = g.values();
  int nv = static_cast<int>(vals.size());
  std::vector<bool> defined(nv, false);
  for (int id : g.inputs()) defined.at(id) = true;
  for (int id : g.states()) defined.at(id) = true;
  for (int id : g.consts()) defined.at(id) = true;
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    const Node& node = g.nodes()[n];
    LUCID_CHECK(op_registered(node.op), Error, "verify: node ", n, " has an unregistered op");
    check_attrs(node.op, node.attrs);  // the op's declared attribute schema (ops/attr_schema.h)
    for (int in : node.inputs) {
      if (in == -1) continue;
      LUCID_CHECK(in >= 0 && in < nv, Error, "verify: node ", n, " (", op_name(node.op), ") reads value %", in,
                  " which does not exist");
      LUCID_CHECK(defined[in], Error, "verify: node ", n, " (", op_name(node.op), ") reads %", in, " before it is defined");
    }
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      int out = node.outputs[k];
      LUCID_CHECK(out >= 0 && out < nv && !defined[out], Error, "verify: node ", n, " (", op_name(node.op),
                  ") defines %", out, " twice or out of range");
      const Value& v = vals[out];
      LUCID_CHECK(v.kind == ValueKind::Node && v.producer == static_cast<int>(n) && v.output_index == static_cast<int>(k),
                  Error, "verify: %", out, " does not record node ", n, " output ", k, " as its producer");
      defined[out] = true;
    }
    LUCID_CHECK((node.op == OpId::FusedElementwise) == (node.body != nullptr), Error, "verify: node ", n, " (",
                op_name(node.op), "): a body goes with FusedElementwise, and only with it");
    if (node.body) verify_body(node, static_cast<int>(n), g);
  }
  for (int id : g.outputs())
    LUCID_CHECK(id >= 0 && id < nv && defined[id], Error, "verify: graph output %", id, " is not defined");
  for (const Assign& a : g.assigns()) {
    LUCID_CHECK(a.state >= 0 && a.state < nv &&
                    (vals[a.state].kind == ValueKind::State || vals[a.state].kind == ValueKind::Input),
                Error, "verify: assign target %", a.state, " is not a state or input value");
    LUCID_CHECK(a.value >= 0 && a.value < nv && defined[a.value], Error, "verify: assign reads undefined %", a.value);
    LUCID_CHECK(same_type(vals[a.state], vals[a.value]), Error, "verify: assign %", a.state, " <- %", a.value,
                " changes shape, dtype or device");
  }
}

std::vector<int> canonical_ids(const Graph& g) {
  std::vector<int> c(g.values().size(), -1);
  int next = 0;
  for (int id : g.inputs()) c[id] = next++;
  for (int id : g.states()) c[id] = next++;
  for (int id : g.consts()) c[id] = next++;
  for (const Node& n : g.nodes())
    for (int out : n.outputs) c[out] = next++;
  return c;
}

namespace {
struct Hasher {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  void bytes(const void* p, size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) { h ^= c[i]; h *= 1099511628211ULL; }
  }
  void i64(int64_t v) { bytes(&v, sizeof v); }
  void meta(const Value& v) {
    i64(static_cast<int64_t>(v.kind));
    i64(static_cast<int64_t>(v.dtype));
    i64(static_cast<int64_t>(v.shape.size()));
    for (int64_t d : v.shape) i64(d);
    if (!v.device.is_cpu()) {  // CPU values hash as before devices were recorded (graph.h)
      i64(-4);
      i64(static_cast<int64_t>(v.device.type));
      i64(v.device.index);
    }
  }
};
}  // namespace

uint64_t canonical_hash(const Graph& g) {
  Hasher hs;
  std::vector<int> c = canonical_ids(g);
  auto cid = [&](int id) { return id < 0 ? int64_t{-1} : static_cast<int64_t>(c[id]); };
  hs.i64(static_cast<int64_t>(g.inputs().size()));
  for (int id : g.inputs()) hs.meta(g.value(id));
  hs.i64(static_cast<int64_t>(g.states().size()));
  for (int id : g.states()) hs.meta(g.value(id));
  hs.i64(static_cast<int64_t>(g.consts().size()));
  for (int id : g.consts()) {
    hs.meta(g.value(id));
    hs.i64(g.const_data(g.value(id).slot).impl()->is_wrapped_number ? 1 : 0);
    Tensor c = g.const_data(g.value(id).slot).contiguous_data();
    hs.bytes(c.data_ptr(), static_cast<size_t>(c.numel()) * itemsize(c.dtype()));
  }
  for (const Node& n : g.nodes()) {
    hs.i64(static_cast<int64_t>(n.op));
    hs.i64(static_cast<int64_t>(n.attrs.hash()));
    hs.i64(static_cast<int64_t>(n.inputs.size()));
    for (int in : n.inputs) hs.i64(cid(in));
    for (int out : n.outputs) hs.meta(g.value(out));
    if (n.body) hs.i64(static_cast<int64_t>(canonical_hash(*n.body)));
  }
  hs.i64(-1);
  for (int id : g.outputs()) hs.i64(cid(id));
  hs.i64(-2);
  for (const Assign& a : g.assigns()) { hs.i64(cid(a.state)); hs.i64(cid(a.value)); }
  hs.i64(-3);
  hs.i64(g.rng_draws());
  return hs.h;
}

Device graph_device(const Graph& g) {
  std::optional<Device> d;
  for (const Value& v : g.values()) {
    if (v.kind == ValueKind::Const || (v.device.is_cpu() && v.shape.empty())) continue;
    if (!d) d = v.device;
    LUCID_CHECK(v.device == *d, NotImplementedError, "lucid.compile: the graph has values on ", d->str(), " and on ",
                v.device.str(), "; a compiled graph runs on one device");
  }
  return d.value_or(Device{});
}

}  // namespace lucid::ir
