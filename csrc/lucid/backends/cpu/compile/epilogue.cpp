// absorb_epilogues, the CPU backend's fusion rule: the elementwise tail of a Linear or Conv moves
// into the op's oneDNN post-ops (LinearFused / ConvFused), so the product is written once,
// already finished, instead of being re-read by a bias add, an activation and a residual add.
// Which tails are absorbed is what the CPU kernels of LinearFused / ConvFused compute exactly, so
// the rule belongs to this backend (registered in backend_passes.cpp), not to the shared passes.
//
// Chains absorbed (op = Linear or Conv; each arrow is the only use of the value before it):
//   op [-> Add(bias)] -> act                      activation=act
//   op [-> Add(bias)] -> Add(residual)            residual, residual_first=false
//   op [-> Add(bias)] -> act -> Add(residual)     act(op) + residual, residual_first=false
//   op [-> Add(bias)] -> Add(residual) -> act     act(op + residual), residual_first=true
//   op (no bias) -> Add(bias)                     the bias becomes the op's own bias input
// act is an activation the fused op computes bit for bit as the eager kernel: Relu, Relu6 and
// Silu, which LinearFused / ConvFused run as eager's kernel in place after the primitive, not as a
// oneDNN post-op (oneDNN's is max(x, 0): NaN became 0 and -0.0 became +0.0; see
// backends/cpu/fused_epilogue.h). See post_op_activation for why GELU is not absorbed.
// A bias is an operand of the op's dtype that broadcasts along the channel only (shape
// [1,...,1,C] for Linear, [1,C,1,...] for Conv, leading ones optional); it is reshaped to [C]
// when needed. A residual has exactly the output's shape and dtype (no broadcasting). Every
// intermediate must have a single reader and not be a graph output or assigned value, since it
// no longer exists afterwards. Bias and residual adds only in float32 and float64: the fused
// kernels apply them in the output dtype's accumulator, which matches the unfused chain for
// these; for float16 and bfloat16 they would round once where the chain rounds after each step.
// A 16-bit op (autocast) absorbs only an activation right after it: the primitive's output is
// rounded as the op's, and the activation runs as eager's kernel on it, so that is exact too.
// A Conv takes a residual only where that is exact (cpu::conv_residual_exact: float64, and
// float32 on AVX-512; oneDNN's AVX2 kernels add it into partial sums, up to 5e-7 off the unfused add).
#include "lucid/backends/cpu/compile/epilogue.h"

#include "lucid/backends/cpu/dnnl_conv.h"

#include "lucid/compile/passes/passes.h"

namespace lucid::cpu {

using ir::Graph;
using ir::Node;
using ir::Rewriter;
using ir::Value;

namespace {

// Name of the fused activation an activation node computes, or "" when there is none. Only
// Relu, Relu6 and Silu, which are exact (eager's kernel, see the header): oneDNN's eltwise post-ops evaluate GELU
// (erf and tanh) with their own polynomials, 1-2 ulp away from the eager kernel (measured, after
// Conv and after Linear), and cancellation downstream can magnify that past the compiled == eager
// tolerance (found by the model fuzzer). GELU stays a node of its own (and joins an elementwise
// group).
std::string post_op_activation(const Node& n, OpId /*base*/) {
  switch (n.op) {
    case OpId::Relu: return "relu";
    case OpId::Relu6: return "relu6";  // MobileNet-v2
    case OpId::Silu: return "silu";    // EfficientNet
    default: return "";
  }
}

struct Epilogue {
  std::vector<int> chain;  // nodes after the op, in order; the last one's output is replaced
  int bias = -1;          // old value id of an absorbed bias operand (-1: the op's own bias)
  int residual = -1;      // old value id
  std::string activation = "none";
  bool residual_first = false;
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), users_(ir::value_users(g)), esc_(ir::escaping_values(g)) {}

  // The epilogue of Linear/Conv node i (an empty chain when nothing is absorbed).
  Epilogue match(int i) const {
    Epilogue ep;
    const Node& op = g_.nodes()[i];
    if (op.op != OpId::Linear && op.op != OpId::Conv) return ep;
    int cur = op.outputs[0];
    DType t = g_.value(cur).dtype;
    // Adds (bias, residual) only in float32/float64; a 16-bit op takes the activation alone.
    const bool adds = t == DType::Float32 || t == DType::Float64;
    if (!adds && t != DType::BFloat16 && t != DType::Float16) return ep;
    int j, other;
    if (adds && op.inputs[2] < 0 && add_of(cur, j, other) && is_bias(op, g_.value(cur), other)) {
      ep.bias = other;
      ep.chain.push_back(j);
      cur = g_.nodes()[j].outputs[0];
    }
    bool act_first = false;
    if (next_of(cur, j) && !post_op_activation(g_.nodes()[j], op.op).empty()) {
      ep.activation = post_op_activation(g_.nodes()[j], op.op);
      ep.chain.push_back(j);
      cur = g_.nodes()[j].outputs[0];
      act_first = true;
    }
    if (adds && (op.op != OpId::Conv || conv_residual_exact(t)) && add_of(cur, j, other) && same_meta(other, cur)) {
      ep.residual = other;
      ep.chain.push_back(j);
      cur = g_.nodes()[j].outputs[0];
      if (!act_first && next_of(cur, j) && !post_op_activation(g_.nodes()[j], op.op).empty()) {
        ep.activation = post_op_activation(g_.nodes()[j], op.op);
        ep.residual_first = true;
        ep.chain.push_back(j);
      }
    }
    return ep;
  }

 private:
  bool same_meta(int a, int b) const {
    return g_.value(a).shape == g_.value(b).shape && g_.value(a).dtype == g_.value(b).dtype &&
           g_.value(a).device == g_.value(b).device;
  }
  // The single reader j of v (v not escaping, read through one input slot); j's output keeps v's meta.
  bool next_of(int v, int& j) const {
    if (esc_[v] || users_[v].size() != 1) return false;
    j = users_[v][0];
    const Node& n = g_.nodes()[j];
    int reads = 0;
    for (int in : n.inputs) reads += in == v;
    return reads == 1 && n.outputs.size() == 1 && same_meta(n.outputs[0], v);
  }
  // v's single reader j is Add(v, other) or Add(other, v).
  bool add_of(int v, int& j, int& other) const {
    if (!next_of(v, j) || g_.nodes()[j].op != OpId::Add) return false;
    const Node& n = g_.nodes()[j];
    other = n.inputs[0] == v ? n.inputs[1] : n.inputs[0];
    return other >= 0;
  }
  // `b` broadcasts along the channel of op's output only and has its dtype.
  bool is_bias(const Node& op, const Value& out, int b) const {
    const Value& bv = g_.value(b);
    if (bv.dtype != out.dtype || bv.shape.size() > out.shape.size()) return false;
    size_t ch = op.op == OpId::Linear ? out.shape.size() - 1 : 1;
    size_t lead = out.shape.size() - bv.shape.size();
    for (size_t d = 0; d < out.shape.size(); ++d) {
      int64_t s = d < lead ? 1 : bv.shape[d - lead];
      if (s != (d == ch ? out.shape[d] : 1)) return false;
    }
    return true;
  }

  const Graph& g_;
  std::vector<std::vector<int>> users_;
  std::vector<bool> esc_;
};

}  // namespace

Graph absorb_epilogues(const Graph& g) {
  Matcher m(g);
  const size_t N = g.nodes().size();
  std::vector<int> fused_at(N, -1);  // tail node -> the Linear/Conv node it completes
  std::vector<Epilogue> eps(N);
  std::vector<bool> absorbed(N, false);  // the op and every chain node but the tail
  std::vector<bool> claimed(N, false);   // in some accepted chain (two ops may end in one Add)
  for (size_t i = 0; i < N; ++i) {
    Epilogue ep = m.match(static_cast<int>(i));
    if (ep.chain.empty() || claimed[i]) continue;
    bool taken = false;
    for (int j : ep.chain) taken |= claimed[j];
    if (taken) continue;  // conv_a + conv_b -> Add: the first op takes it, the second stays a residual
    claimed[i] = true;
    for (int j : ep.chain) claimed[j] = true;
    absorbed[i] = true;
    for (size_t k = 0; k + 1 < ep.chain.size(); ++k) absorbed[ep.chain[k]] = true;
    fused_at[ep.chain.back()] = static_cast<int>(i);
    eps[ep.chain.back()] = std::move(ep);
  }

  Rewriter rw(g);
  for (size_t i = 0; i < N; ++i) {
    const Node& n = g.nodes()[i];
    if (absorbed[i]) continue;
    if (fused_at[i] < 0) {
      rw.copy(n);
      continue;
    }
    // Emitted at the chain's tail: the op's inputs, the bias and the residual are all defined here.
    const Node& op = g.nodes()[fused_at[i]];
    const Epilogue& ep = eps[i];
    const Value& y = g.value(n.outputs[0]);
    int bias = rw.map(op.inputs[2]);
    if (ep.bias >= 0) {
      bias = rw.map(ep.bias);
      const Shape& w = g.value(op.inputs[1]).shape;
      if (rw.meta(bias).shape != Shape{w[0]})
        bias = rw.add(OpId::Reshape, {bias}, {{"shape", IntList{w[0]}}}, {{{w[0]}, y.dtype, y.device}})[0];
    }
    std::vector<int> ins{rw.map(op.inputs[0]), rw.map(op.inputs[1]), bias};
    int out;
    if (ep.activation == "none" && ep.residual < 0) {
      out = rw.add(op.op, ins, op.attrs, {y.meta()})[0];
    } else {
      ins.push_back(rw.map(ep.residual));
      Attrs a = op.attrs;
      a.set("activation", ep.activation).set("residual_first", ep.residual_first);
      out = rw.add(op.op == OpId::Linear ? OpId::LinearFused : OpId::ConvFused, ins, a, {y.meta()})[0];
    }
    rw.set(n.outputs[0], out);
  }
  return rw.finish();
}

}  // namespace lucid::cpu
