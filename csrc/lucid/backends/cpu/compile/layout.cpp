// keep_blocked_layouts, the CPU backend's layout pass (run as "layout", after "epilogue"): the
// activations between convolutions stay in the layout the convolutions' primitives use
// (cpu::conv_activation_layout: oneDNN's channel-blocked nChw16c, held as [N, C/16, H, W, 16]
// tensors (nChw8c, [N, C/8, H, W, 8], on AVX2 CPUs without AVX-512), or, for bfloat16 on AMX, nhwc, held as [N, 1, H, W, C]: the same 5-D form with the
// block b = C; ops/blocked_layout.h), so a conv reads and writes its primitive's layout instead
// of reordering its input from NCHW and its output back on every call (35 reorders per
// MobileNet-v2 call before this pass; 15% of ResNet-18's time at batch 32).
//
// Which values are blocked: a node result that is a batched 2-D float32/bfloat16 activation whose
// dtype has such a layout (for nChw16c / nChw8c, with a multiple of 16 / 8 channels), not a graph output or
// assigned value, produced by
//   - a 2-D Conv / ConvFused (its residual, when it has one, blocked too),
//   - MaxPool2d whose indices are unused, AvgPool2d, AdaptiveAvgPool2d, eval BatchNorm whose
//     statistics are unused, from a blocked input (they become the *Blocked ops),
//   - an elementwise op with a blocked operand of its full shape, whose other operands are
//     blocked too or broadcast along the channel only ([N|1, C, 1, 1], scalars) or along
//     everything but the channel ([N|1, 1, H|1, W|1]); those are reshaped to the 5-D form
//     ([N|1, C/16, 1, 1, 16] is the same memory as [N|1, C, 1, 1]),
//   - Cat along the channels of blocked parts (concatenating [N, C_k/16, H, W, 16] along dim 1,
//     or [N, 1, H, W, C_k] along dim 4, is the blocked form of the NCHW concatenation).
// An op reads a blocked operand as it is only when the operand has its output's dtype (so the
// same layout); an operand of another dtype is read in NCHW.
// A reader that takes the layout gets the blocked value; any other reader (a reshape, a
// backward op, a graph output) reads it through one UnblockChannels (a Reshape when H = W = 1,
// where both layouts are the same memory), so every op outside the list still sees NCHW, and a
// conv output nobody reads blocked stays NCHW (the conv reorders it itself, as before).
// A Relu that is the only reader of a blocked eval BatchNorm runs inside it (BatchNormBlocked's
// `relu`: DenseNet's BN -> ReLU before every conv, one pass over the activation instead of two).
// Everything the pass emits computes what the NCHW graph computes: elementwise ops and the
// concatenation are layout-blind, the blocked kernels compute each channel as the NCHW kernels
// do, and a conv runs the same oneDNN primitive (tests/python/test_layout_pass.py). The pass runs
// only where the convolutions have such a layout (AVX-512, and LUCID_CONV_LAYOUT unset or
// "blocked").
#include "lucid/backends/cpu/compile/layout.h"

#include "lucid/backends/cpu/dnnl_conv.h"
#include "lucid/compile/passes/passes.h"
#include "lucid/ops/blocked_layout.h"

namespace lucid::cpu {

using ir::Graph;
using ir::Node;
using ir::Rewriter;
using ir::Value;

namespace {

// The block value v is held in when blocked: 16 for nChw16c, 8 for nChw8c, C for nhwc; 0: no
// blocked layout for its dtype (or, for nChw16c/nChw8c, channels that are not a multiple of the block).
int64_t block_of(const Value& v) {
  if (v.shape.size() != 4 || v.shape[1] <= 0) return 0;
  switch (conv_activation_layout(v.dtype)) {
    case ConvLayout::Blocked16:
    case ConvLayout::Blocked8: {
      const int64_t b = conv_layout_block(conv_activation_layout(v.dtype));
      return v.shape[1] % b == 0 ? b : 0;
    }
    case ConvLayout::ChannelsLast: return v.shape[1];
    case ConvLayout::Plain: break;
  }
  return 0;
}

class LayoutPlan {
 public:
  explicit LayoutPlan(const Graph& g)
      : g_(g), users_(ir::value_users(g)), esc_(ir::escaping_values(g)), blocked_(g.values().size(), 0),
        plain_only_(g.values().size(), 0) {
    // Decide forward (a producer's rule reads only its inputs), then keep NCHW the conv outputs
    // that no reader takes blocked, and decide again, until nothing changes.
    for (bool changed = true; changed;) {
      decide();
      changed = false;
      for (size_t i = 0; i < g_.nodes().size(); ++i) {
        const Node& n = g_.nodes()[i];
        if (!is_conv(n) || !blocked_[n.outputs[0]]) continue;
        bool read = false;
        for (int u : users_[n.outputs[0]]) read = read || reads_blocked_any(g_.nodes()[u], n.outputs[0]);
        if (!read) {
          plain_only_[n.outputs[0]] = 1;
          changed = true;
        }
      }
    }
  }

  bool blocked(int v) const { return v >= 0 && blocked_[v]; }
  // v is read by exactly one node and is not a graph output or assigned value.
  bool single_reader(int v) const { return users_[v].size() == 1 && !esc_[v]; }

  // Node n's input slot s takes its value blocked.
  bool reads_blocked(const Node& n, size_t s) const {
    if (!blocked(n.inputs[s])) return false;
    if (is_conv(n)) return s == 0 || (s == 3 && blocked(n.outputs[0]) && same_layout(n.inputs[3], n.outputs[0]));
    return kind(n) != Kind::Other && blocked(n.outputs[0]) && same_layout(n.inputs[s], n.outputs[0]) &&
           (s == 0 || kind(n) == Kind::Pointwise || kind(n) == Kind::Cat);
  }

  // Whether blocked values a and b are in the same layout kind (their dtypes pick it).
  bool same_layout(int a, int b) const { return g_.value(a).dtype == g_.value(b).dtype; }

  enum class Kind { Other, Conv, MaxPool, AvgPool, AdaptiveAvgPool, BatchNorm, Pointwise, Cat };
  Kind kind(const Node& n) const {
    if (n.body) return Kind::Other;
    if (is_conv(n)) return Kind::Conv;
    switch (n.op) {
      case OpId::MaxPool2d: return unused(n.outputs[1]) ? Kind::MaxPool : Kind::Other;
      case OpId::AvgPool2d: return Kind::AvgPool;
      case OpId::AdaptiveAvgPool2d: return Kind::AdaptiveAvgPool;
      case OpId::BatchNorm:
        return !n.attrs.b("training") && n.inputs[1] >= 0 && n.inputs[2] >= 0 && unused(n.outputs[1]) && unused(n.outputs[2])
                   ? Kind::BatchNorm
                   : Kind::Other;
      case OpId::Cat: return n.attrs.i("dim") == 1 || n.attrs.i("dim") == -3 ? Kind::Cat : Kind::Other;
      default: break;
    }
    return op_def(n.op).lowering == Lowering::Elementwise && n.outputs.size() == 1 ? Kind::Pointwise : Kind::Other;
  }

  // A 2-D convolution the blocked primitives run: float32/bfloat16, and groups whose channels
  // fill whole blocks (or depthwise), which oneDNN's nChw16c kernels take; on nhwc, any groups
  // (its AMX kernels run grouped convolutions too: 32x64->128x28x28, 3x3, 2 groups, 0.43 ms on
  // nhwc against 7.6 ms on nChw16c; depthwise 2.5 against 4.0).
  bool is_conv(const Node& n) const {
    if ((n.op != OpId::Conv && n.op != OpId::ConvFused) || n.attrs.i("in_block", 0) || n.attrs.i("out_block", 0)) return false;
    const Value &x = g_.value(n.inputs[0]), &w = g_.value(n.inputs[1]);
    const ConvLayout layout = conv_activation_layout(x.dtype);
    if (x.shape.size() != 4 || w.shape.size() != 4 || layout == ConvLayout::Plain) return false;
    const int64_t G = n.attrs.i("groups"), icg = x.shape[1] / G, ocg = w.shape[0] / G;
    return G == 1 || (icg == 1 && ocg == 1) || layout == ConvLayout::ChannelsLast ||
           (icg % conv_layout_block(layout) == 0 && ocg % conv_layout_block(layout) == 0);
  }

  // Plain operand `v` of pointwise node output shape `out`, broadcast in a way the 5-D form
  // expresses: right-aligned [a, b, c, d] with b == 1, or b == C and c == d == 1.
  bool broadcast_ok(int v, const Shape& out) const {
    const Shape& s = g_.value(v).shape;
    if (s.size() > 4) return false;
    Shape r(4 - s.size(), 1);
    r.insert(r.end(), s.begin(), s.end());
    return r[1] == 1 || (r[1] == out[1] && r[2] == 1 && r[3] == 1);
  }

 private:
  bool unused(int v) const { return users_[v].empty() && !esc_[v]; }

  bool candidate(int v) const {
    const Value& x = g_.value(v);
    return x.kind == ir::ValueKind::Node && !esc_[v] && !plain_only_[v] && x.device.type == DeviceType::CPU &&
           block_of(x) > 0 && numel_of(x.shape) > 0;
  }

  bool reads_blocked_any(const Node& n, int v) const {
    for (size_t s = 0; s < n.inputs.size(); ++s)
      if (n.inputs[s] == v && reads_blocked(n, s)) return true;
    return false;
  }

  void decide() {
    std::fill(blocked_.begin(), blocked_.end(), 0);
    for (const Node& n : g_.nodes()) {
      if (n.outputs.empty() || !candidate(n.outputs[0])) continue;
      const int y = n.outputs[0];
      bool ok = false;
      switch (kind(n)) {
        case Kind::Conv:
          ok = n.op == OpId::Conv || n.inputs[3] < 0 || (blocked(n.inputs[3]) && same_layout(n.inputs[3], y));
          break;
        case Kind::MaxPool:
        case Kind::AvgPool:
        case Kind::AdaptiveAvgPool:
        case Kind::BatchNorm: ok = blocked(n.inputs[0]) && same_layout(n.inputs[0], y); break;
        case Kind::Cat:
          ok = true;
          for (int i : n.inputs) ok = ok && blocked(i) && same_layout(i, y);
          break;
        case Kind::Pointwise: {
          const Shape& out = g_.value(y).shape;
          bool full = false;
          ok = true;
          for (int i : n.inputs) {
            if (i < 0) continue;
            if (blocked(i) && same_layout(i, y)) {
              full = full || g_.value(i).shape == out;
              ok = ok && g_.value(i).shape[1] == out[1];
            } else {
              ok = ok && broadcast_ok(i, out);
            }
          }
          ok = ok && full;
          break;
        }
        case Kind::Other: break;
      }
      blocked_[y] = ok;
    }
  }

  const Graph& g_;
  std::vector<std::vector<int>> users_;
  std::vector<bool> esc_;
  std::vector<char> blocked_, plain_only_;
};

TensorMeta blocked_meta(const Value& v) { return {blocked_shape(v.shape, block_of(v)), v.dtype, v.device}; }

}  // namespace

Graph keep_blocked_layouts(const Graph& g) {
  if (conv_activation_layout(DType::Float32) == ConvLayout::Plain && conv_activation_layout(DType::BFloat16) == ConvLayout::Plain)
    return g;
  LayoutPlan plan(g);
  bool any = false;
  for (size_t v = 0; v < g.values().size(); ++v) any = any || plan.blocked(static_cast<int>(v));
  if (!any) return g;

  Rewriter rw(g);
  std::vector<int> plain_of(g.values().size(), -1);
  // v's NCHW form in the new graph (made once, at its first reader that needs it).
  auto plain = [&](int v) {
    if (v < 0 || !plan.blocked(v)) return rw.map(v);
    if (plain_of[v] < 0) {
      const Value& x = g.value(v);
      plain_of[v] = x.shape[2] == 1 && x.shape[3] == 1
                        ? rw.add(OpId::Reshape, {rw.map(v)}, {{"shape", IntList(x.shape)}}, {x.meta()})[0]
                        : rw.add(OpId::UnblockChannels, {rw.map(v)}, {}, {x.meta()})[0];
    }
    return plain_of[v];
  };
  using Kind = LayoutPlan::Kind;
  // A Relu absorbed into the blocked BatchNorm it reads: BatchNorm node index -> that Relu's.
  std::vector<int> relu_of_bn(g.nodes().size(), -1);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (n.op != OpId::Relu || n.body || !plan.blocked(n.inputs[0]) || !plan.blocked(n.outputs[0])) continue;
    const Value& x = g.value(n.inputs[0]);
    const int bn = x.kind == ir::ValueKind::Node ? x.producer : -1;
    if (bn >= 0 && x.output_index == 0 && plan.kind(g.nodes()[bn]) == Kind::BatchNorm && plan.single_reader(n.inputs[0]) &&
        x.dtype == g.value(n.outputs[0]).dtype)
      relu_of_bn[bn] = static_cast<int>(i);
  }
  std::vector<char> absorbed(g.nodes().size(), 0);
  for (int r : relu_of_bn)
    if (r >= 0) absorbed[r] = 1;
  for (size_t ni = 0; ni < g.nodes().size(); ++ni) {
    const Node& n = g.nodes()[ni];
    if (absorbed[ni]) continue;  // its BatchNorm wrote its value (rw.set below)
    bool touches = !n.outputs.empty() && plan.blocked(n.outputs[0]);
    for (int i : n.inputs) touches = touches || plan.blocked(i);
    if (!touches) {
      rw.copy(n);
      continue;
    }
    const Kind k = plan.kind(n);
    const bool out_blocked = !n.outputs.empty() && plan.blocked(n.outputs[0]);
    std::vector<int> ins;
    for (size_t s = 0; s < n.inputs.size(); ++s) {
      const int i = n.inputs[s];
      if (plan.reads_blocked(n, s)) {
        ins.push_back(rw.map(i));
      } else if (out_blocked && k == Kind::Pointwise && i >= 0) {  // a broadcast operand, in the 5-D form
        const Value& x = g.value(i);
        const int64_t C = g.value(n.outputs[0]).shape[1], b = block_of(g.value(n.outputs[0]));
        Shape r(4 - x.shape.size(), 1);
        r.insert(r.end(), x.shape.begin(), x.shape.end());
        const Shape s5 = r[1] == 1 ? Shape{r[0], 1, r[2], r[3], 1} : Shape{r[0], C / b, 1, 1, b};
        ins.push_back(rw.add(OpId::Reshape, {plain(i)}, {{"shape", IntList(s5)}}, {{s5, x.dtype, x.device}})[0]);
      } else {
        ins.push_back(plain(i));
      }
    }
    std::vector<TensorMeta> outs;
    for (int o : n.outputs) outs.push_back(g.value(o).meta());
    if (out_blocked) outs[0] = blocked_meta(g.value(n.outputs[0]));
    std::vector<int> got;
    switch (out_blocked ? k : (k == Kind::Conv ? Kind::Conv : Kind::Other)) {
      case Kind::Conv: {
        Attrs a = n.attrs;
        if (n.op == OpId::Conv) {
          a.set("activation", std::string("none")).set("residual_first", false);
          ins.push_back(-1);
        }
        if (plan.blocked(n.inputs[0])) a.set("in_block", block_of(g.value(n.inputs[0])));
        if (out_blocked) a.set("out_block", block_of(g.value(n.outputs[0])));
        got = rw.add(OpId::ConvFused, ins, a, outs);
        break;
      }
      case Kind::MaxPool: got = rw.add(OpId::MaxPool2dBlocked, ins, n.attrs, {outs[0]}); break;
      case Kind::AvgPool: got = rw.add(OpId::AvgPool2dBlocked, ins, n.attrs, outs); break;
      case Kind::AdaptiveAvgPool: got = rw.add(OpId::AdaptiveAvgPool2dBlocked, ins, n.attrs, outs); break;
      case Kind::BatchNorm:
        got = rw.add(OpId::BatchNormBlocked, ins, {{"eps", n.attrs.f("eps")}, {"relu", relu_of_bn[ni] >= 0}}, {outs[0]});
        if (relu_of_bn[ni] >= 0) rw.set(g.nodes()[relu_of_bn[ni]].outputs[0], got[0]);
        break;
      case Kind::Cat: {  // along the blocks (nChw16c: dim 1) or the lanes (nhwc: dim 4; its one block is whole)
        Attrs a = n.attrs;
        a.set("dim", int64_t(conv_activation_layout(g.value(n.outputs[0]).dtype) == ConvLayout::ChannelsLast ? 4 : 1));
        got = rw.add(n.op, ins, a, outs);
        break;
      }
      case Kind::Pointwise:
      case Kind::Other:
        got = n.body ? rw.out().add_fused(ins, n.body, outs) : rw.add(n.op, ins, n.attrs, outs);
        break;
    }
    for (size_t j = 0; j < got.size(); ++j) rw.set(n.outputs[j], got[j]);
  }
  return rw.finish();
}

}  // namespace lucid::cpu
