// LstmRecurrence and GruRecurrence: the sequential part of one direction of one LSTM / GRU layer,
// the op records. The input projection of every step (x @ w_ih^T + biases) is one ordinary linear
// op computed by the caller (python/lucid/nn/modules/rnn.py), so these ops see time-major
// xp (T, B, G*H) and run the recurrence: per step one GEMM h @ w_hh^T and a fused gate kernel
// (backends/<device>/kernels/rnn*). `reverse` walks t = T-1 .. 0 (the reverse direction).
//
//   LstmRecurrence(xp (T,B,4H), h0 (B,H), c0 (B,H), w_hh (4H,H)) -> (y (T,B,H), cells (T,B,H),
//     gates (T,B,4H)): y[t] = h_t, cells[t] = c_t, gates[t] = the activated i, f, g, o (torch's
//     order); h_n = y[last step], c_n = cells[last step] are slices taken by the caller.
//   GruRecurrence(xp (T,B,3H), h0, w_hh (3H,H), b_hh (3H) or undefined) -> (y, gates (T,B,3H),
//     hn (T,B,H)): gates[t] = the activated r, z, n; hn[t] = (h_{t-1} @ w_hh^T + b_hh)[n part],
//     which the backward needs for dr.
//
// The backward ops run the reversed recurrence only (gate gradients and the state gradient): the
// weight gradients are one GEMM over all steps, written with ops in the VJP, so compiled training
// records them as ordinary matmul nodes. No double backward (create_graph) yet: it raises.
#include <vector>

#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/core.h"
#include "lucid/ops/linalg.h"
#include "lucid/ops/movement.h"
#include "lucid/ops/nn.h"
#include "lucid/ops/nn_util.h"

namespace lucid {

namespace {

// Checks a recurrence op's operands: xp (T, B, gates*H) with T >= 1, states (B, H), w_hh
// (gates*H, H), all float32 or float64 of one dtype. Returns H.
int64_t check_recurrence(const char* op, int gates, const Tensor& xp, const TensorList& states, const Tensor& w_hh,
                         const Tensor& b_hh) {
  LUCID_CHECK(xp.dtype() == DType::Float32 || xp.dtype() == DType::Float64, TypeError, op,
              ": argument 'input' expected float32 or float64, got ", dtype_name(xp.dtype()));
  LUCID_CHECK(w_hh.defined() && w_hh.ndim() == 2 && w_hh.shape()[0] == gates * w_hh.shape()[1], ValueError, op,
              ": argument 'w_hh' expected shape (", gates, "*H, H), got ",
              w_hh.defined() ? shape_str(w_hh.shape()) : std::string("None"));
  const int64_t H = w_hh.shape()[1];
  LUCID_CHECK(xp.ndim() == 3 && xp.shape()[0] >= 1 && xp.shape()[2] == gates * H, ValueError, op,
              ": argument 'input' expected shape (T >= 1, B, ", gates * H, "), got ", shape_str(xp.shape()));
  const Shape state{xp.shape()[1], H};
  for (const Tensor& s : states)
    LUCID_CHECK(s.defined() && s.shape() == state, ValueError, op, ": initial state expected shape ",
                shape_str(state), ", got ", s.defined() ? shape_str(s.shape()) : std::string("None"));
  if (b_hh.defined())
    LUCID_CHECK(b_hh.shape() == Shape{gates * H}, ValueError, op, ": argument 'b_hh' expected shape (", gates * H,
                ",), got ", shape_str(b_hh.shape()));
  auto same = [&](const Tensor& t) { return !t.defined() || t.dtype() == xp.dtype(); };
  bool ok = same(w_hh) && same(b_hh);
  for (const Tensor& s : states) ok = ok && same(s);
  LUCID_CHECK(ok, TypeError, op, ": expected input, states and weights of one dtype (", dtype_name(xp.dtype()), ")");
  return H;
}

// h_prev of every step, (T, B, H): h0 at the first step processed, else the previous step's y.
Tensor previous_states(const Tensor& y, const Tensor& h0, bool reverse) {
  const int64_t T = y.shape()[0];
  Tensor first = unsqueeze(h0, 0);
  if (T == 1) return first;
  return reverse ? cat({slice(y, 0, 1, T), first}, 0) : cat({first, slice(y, 0, 0, T - 1)}, 0);
}

// sum over t of a[t]^T @ b[t] for a (T, B, M), b (T, B, N): the (M, N) weight gradient.
Tensor steps_gemm(const Tensor& a, const Tensor& b) {
  const int64_t TB = a.shape()[0] * a.shape()[1];
  return matmul(transpose(reshape(a, {TB, a.shape()[2]}), 0, 1), reshape(b, {TB, b.shape()[2]}));
}

void check_no_create_graph(const char* op) {
  LUCID_CHECK(!GradMode::is_enabled(), NotImplementedError, op,
              ": double backward (create_graph=True through an LSTM/GRU layer) is not implemented");
}

}  // namespace

LUCID_REGISTER_OP(LstmRecurrence, "reverse:bool", [] {
  OpDef d;
  d.num_inputs = 4;
  d.infer = [](const TensorList& in, const Attrs&) {
    const Tensor& xp = in[0];
    const int64_t H = check_recurrence("lstm", 4, xp, {in[1], in[2]}, in[3], Tensor());
    const int64_t T = xp.shape()[0], B = xp.shape()[1];
    return std::vector<TensorMeta>{{{T, B, H}, xp.dtype()}, {{T, B, H}, xp.dtype()}, {{T, B, 4 * H}, xp.dtype()}};
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.unsaved_inputs = {0};
  d.vjp = [](const VjpContext& c) {
    TensorList r(4);
    if (!c.grads[0].defined() && !c.grads[1].defined()) return r;
    check_no_create_graph("lstm");
    LUCID_CHECK(!c.grads[2].defined(), NotImplementedError, "lstm: the saved gates output is not differentiable");
    const bool reverse = c.attrs.b("reverse");
    const Tensor &h0 = c.inputs[1], &w_hh = c.inputs[3], &y = c.outputs[0];
    TensorList g = dispatch(OpId::LstmRecurrenceBackward,
                            {c.grads[0], c.grads[1], y, c.outputs[1], c.outputs[2], h0, c.inputs[2], w_hh},
                            {{"reverse", reverse}});
    r[0] = g[0];
    if (c.needs_grad[1]) r[1] = g[1];
    if (c.needs_grad[2]) r[2] = g[2];
    if (c.needs_grad[3]) r[3] = steps_gemm(g[0], previous_states(y, h0, reverse));
    return r;
  };
  return d;
}());

// inputs (gy, gcells, y, cells, gates, h0, c0, w_hh), gy / gcells undefined for zero
LUCID_REGISTER_OP(LstmRecurrenceBackward, "reverse:bool", [] {
  OpDef d;
  d.num_inputs = 8;
  d.vjp = LUCID_NO_DOUBLE_BACKWARD("lstm backward");
  d.infer = [](const TensorList& in, const Attrs&) {
    const Tensor &gates = in[4], &h0 = in[5];
    return std::vector<TensorMeta>{{gates.shape(), gates.dtype()}, {h0.shape(), h0.dtype()}, {h0.shape(), h0.dtype()}};
  };
  return d;
}());

LUCID_REGISTER_OP(GruRecurrence, "reverse:bool", [] {
  OpDef d;
  d.num_inputs = 4;
  d.infer = [](const TensorList& in, const Attrs&) {
    const Tensor& xp = in[0];
    const int64_t H = check_recurrence("gru", 3, xp, {in[1]}, in[2], in[3]);
    const int64_t T = xp.shape()[0], B = xp.shape()[1];
    return std::vector<TensorMeta>{{{T, B, H}, xp.dtype()}, {{T, B, 3 * H}, xp.dtype()}, {{T, B, H}, xp.dtype()}};
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.unsaved_inputs = {0, 3};
  d.vjp = [](const VjpContext& c) {
    TensorList r(4);
    if (!c.grads[0].defined()) return r;
    check_no_create_graph("gru");
    LUCID_CHECK(!c.grads[1].defined() && !c.grads[2].defined(), NotImplementedError,
                "gru: the saved gates outputs are not differentiable");
    const bool reverse = c.attrs.b("reverse");
    const Tensor &h0 = c.inputs[1], &w_hh = c.inputs[2], &y = c.outputs[0];
    TensorList g = dispatch(OpId::GruRecurrenceBackward, {c.grads[0], y, c.outputs[1], c.outputs[2], h0, w_hh},
                            {{"reverse", reverse}});
    r[0] = g[0];
    if (c.needs_grad[1]) r[1] = g[2];
    if (c.needs_grad[2]) r[2] = steps_gemm(g[1], previous_states(y, h0, reverse));
    if (c.needs_grad[3]) r[3] = sum(g[1], {0, 1});
    return r;
  };
  return d;
}());

// inputs (gy, y, gates, hn, h0, w_hh) -> (dxp, dhp = d(h @ w_hh^T + b_hh), dh0)
LUCID_REGISTER_OP(GruRecurrenceBackward, "reverse:bool", [] {
  OpDef d;
  d.num_inputs = 6;
  d.vjp = LUCID_NO_DOUBLE_BACKWARD("gru backward");
  d.infer = [](const TensorList& in, const Attrs&) {
    const Tensor &gates = in[2], &h0 = in[4];
    return std::vector<TensorMeta>{{gates.shape(), gates.dtype()}, {gates.shape(), gates.dtype()}, {h0.shape(), h0.dtype()}};
  };
  return d;
}());

TensorList lstm_recurrence(const Tensor& xp, const Tensor& h0, const Tensor& c0, const Tensor& w_hh, bool reverse) {
  return dispatch(OpId::LstmRecurrence, {xp, h0, c0, w_hh}, {{"reverse", reverse}});
}

TensorList gru_recurrence(const Tensor& xp, const Tensor& h0, const Tensor& w_hh, const Tensor& b_hh, bool reverse) {
  return dispatch(OpId::GruRecurrence, {xp, h0, w_hh, b_hh}, {{"reverse", reverse}});
}

}  // namespace lucid
