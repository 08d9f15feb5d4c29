// Bindings of the nn and loss ops (private _C._nn_* functions; python/lucid/_ops_nn.py wraps
// them with torch.nn.functional signatures) and the Tensor.softmax / log_softmax methods.
#include <cmath>

#include "bind.h"
#include "lucid/ops/core.h"
#include "lucid/ops/nn.h"

namespace lucid::py {

static Tensor opt(nb::handle h, const char* op, const char* arg) {
  if (h.is_none()) return Tensor();
  if (!is_tensor(h))
    throw TypeError(str(op, ": argument '", arg, "' expected a Tensor or None, got ",
                        nb::cast<std::string>(nb::str(h.type().attr("__name__")))));
  return nb::cast<Tensor>(h);
}

LUCID_BINDER(nn) {
  m.def("_nn_softmax", [](const Tensor& x, int64_t dim) { return softmax(x, dim); });
  m.def("_nn_log_softmax", [](const Tensor& x, int64_t dim) { return log_softmax(x, dim); });
  def_method(m, "softmax", [](const Tensor& x, int64_t dim, nb::handle dtype) {
    return softmax(dtype.is_none() ? x : cast(x, to_dtype(dtype, "softmax")), dim);
  }, nb::arg("dim"), nb::arg("dtype").none() = nb::none());
  def_method(m, "log_softmax", [](const Tensor& x, int64_t dim, nb::handle dtype) {
    return log_softmax(dtype.is_none() ? x : cast(x, to_dtype(dtype, "log_softmax")), dim);
  }, nb::arg("dim"), nb::arg("dtype").none() = nb::none());
  m.def("_nn_dropout", [](const Tensor& x, const Tensor& mask, double p) { return dropout_with_mask(x, mask, p); });
  m.def("_nn_batch_norm", [](const Tensor& x, nb::handle rm, nb::handle rv, nb::handle w, nb::handle b, bool training,
                             double momentum, double eps) {
    const char* op = "batch_norm";
    return batch_norm(x, opt(rm, op, "running_mean"), opt(rv, op, "running_var"), opt(w, op, "weight"), opt(b, op, "bias"),
                      training, momentum, eps);
  }, nb::arg("input"), nb::arg("running_mean").none(), nb::arg("running_var").none(), nb::arg("weight").none(), nb::arg("bias").none(), nb::arg("training"), nb::arg("momentum"), nb::arg("eps"));
  m.def("_nn_layer_norm", [](const Tensor& x, nb::handle ns, nb::handle w, nb::handle b, double eps) {
    const char* op = "layer_norm";
    return layer_norm(x, to_shape(ns, op, "normalized_shape"), opt(w, op, "weight"), opt(b, op, "bias"), eps);
  }, nb::arg("input"), nb::arg("normalized_shape"), nb::arg("weight").none(), nb::arg("bias").none(), nb::arg("eps"));
  m.def("_nn_rms_norm", [](const Tensor& x, nb::handle ns, nb::handle w, double eps) {
    const char* op = "rms_norm";
    return rms_norm(x, to_shape(ns, op, "normalized_shape"), opt(w, op, "weight"), eps);
  }, nb::arg("input"), nb::arg("normalized_shape"), nb::arg("weight").none(), nb::arg("eps"));
  m.def("_nn_group_norm", [](const Tensor& x, int64_t g, nb::handle w, nb::handle b, double eps) {
    const char* op = "group_norm";
    return group_norm(x, g, opt(w, op, "weight"), opt(b, op, "bias"), eps);
  }, nb::arg("input"), nb::arg("num_groups"), nb::arg("weight").none(), nb::arg("bias").none(), nb::arg("eps"));
  m.def("_nn_embedding", [](const Tensor& w, const Tensor& idx, int64_t padding_idx) { return embedding(w, idx, padding_idx); });
  m.def("_nn_sdpa", [](const Tensor& q, const Tensor& k, const Tensor& v, nb::handle mask, nb::handle dmask, double p,
                       bool causal, nb::handle scale) {
    const char* op = "scaled_dot_product_attention";
    double s = scale.is_none() ? NAN : nb::cast<double>(scale);
    return scaled_dot_product_attention(q, k, v, opt(mask, op, "attn_mask"), opt(dmask, op, "dropout_mask"), p, causal, s);
  }, nb::arg("query"), nb::arg("key"), nb::arg("value"), nb::arg("attn_mask").none(), nb::arg("dropout_mask").none(), nb::arg("dropout_p"), nb::arg("is_causal"), nb::arg("scale").none());
  // One direction of one LSTM / GRU layer over time-major xp = x @ w_ih^T + biases (ops/nn_rnn.cpp).
  m.def("_nn_lstm_recurrence", [](const Tensor& xp, const Tensor& h0, const Tensor& c0, const Tensor& w_hh, bool reverse) {
    TensorList r = lstm_recurrence(xp, h0, c0, w_hh, reverse);
    return nb::make_tuple(r[0], r[1]);
  }, nb::arg("xp"), nb::arg("h0"), nb::arg("c0"), nb::arg("w_hh"), nb::arg("reverse"),
     "LSTM recurrence: (y, cells), each (T, B, H); h_n = y[last step], c_n = cells[last step].");
  m.def("_nn_gru_recurrence", [](const Tensor& xp, const Tensor& h0, const Tensor& w_hh, nb::handle b_hh, bool reverse) {
    return gru_recurrence(xp, h0, w_hh, opt(b_hh, "gru", "b_hh"), reverse)[0];
  }, nb::arg("xp"), nb::arg("h0"), nb::arg("w_hh"), nb::arg("b_hh").none(), nb::arg("reverse"),
     "GRU recurrence: y (T, B, H); h_n = y[last step].");
  m.def("_nn_interpolate", [](const Tensor& x, int64_t oh, int64_t ow, const std::string& mode, bool align, double sh, double sw) {
    return interpolate(x, oh, ow, mode, align, sh, sw);
  });

  // Losses.
  m.def("_nn_mse_loss", [](const Tensor& x, const Tensor& t, const std::string& r) { return mse_loss(x, t, r); });
  m.def("_nn_l1_loss", [](const Tensor& x, const Tensor& t, const std::string& r) { return l1_loss(x, t, r); });
  m.def("_nn_smooth_l1_loss", [](const Tensor& x, const Tensor& t, const std::string& r, double beta) {
    return smooth_l1_loss(x, t, r, beta);
  });
  m.def("_nn_huber_loss", [](const Tensor& x, const Tensor& t, const std::string& r, double delta) {
    return huber_loss(x, t, r, delta);
  });
  m.def("_nn_kl_div", [](const Tensor& x, const Tensor& t, const std::string& r, bool log_target) {
    return kl_div(x, t, r, log_target);
  });
  m.def("_nn_dropout_", [](Tensor& x, const Tensor& mask, double p) {
    dispatch_inplace(OpId::Dropout, x, {x, mask}, {{"p", p}});
    return x;
  });
  m.def("_nn_binary_cross_entropy", [](const Tensor& x, const Tensor& t, nb::handle w, const std::string& r) {
    return binary_cross_entropy(x, t, opt(w, "binary_cross_entropy", "weight"), r);
  }, nb::arg("input"), nb::arg("target"), nb::arg("weight").none(), nb::arg("reduction"));
  m.def("_nn_binary_cross_entropy_with_logits", [](const Tensor& x, const Tensor& t, nb::handle w, nb::handle pw,
                                                   const std::string& r) {
    const char* op = "binary_cross_entropy_with_logits";
    return binary_cross_entropy_with_logits(x, t, opt(w, op, "weight"), opt(pw, op, "pos_weight"), r);
  }, nb::arg("input"), nb::arg("target"), nb::arg("weight").none(), nb::arg("pos_weight").none(), nb::arg("reduction"));
  m.def("_nn_nll_loss", [](const Tensor& x, const Tensor& t, nb::handle w, int64_t ignore, const std::string& r) {
    return nll_loss(x, t, opt(w, "nll_loss", "weight"), ignore, r);
  }, nb::arg("input"), nb::arg("target"), nb::arg("weight").none(), nb::arg("ignore_index"), nb::arg("reduction"));
  m.def("_nn_cross_entropy", [](const Tensor& x, const Tensor& t, nb::handle w, int64_t ignore, const std::string& r,
                                double ls) { return cross_entropy(x, t, opt(w, "cross_entropy", "weight"), ignore, r, ls); }, nb::arg("input"), nb::arg("target"), nb::arg("weight").none(), nb::arg("ignore_index"), nb::arg("reduction"), nb::arg("label_smoothing"));
}

}  // namespace lucid::py
