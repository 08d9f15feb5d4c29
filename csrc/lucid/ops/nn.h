// C++ API of the nn and loss ops (named like torch.nn.functional). VJPs of this family and the
// Python bindings (python/src/nn_bind.cpp) call these; each is one dispatch of the op of the
// same name in ops/list/nn.def or ops/list/loss.def, plus argument normalisation.
#pragma once
#include <cstdint>
#include <string>

#include "lucid/dispatch/dispatch.h"

namespace lucid {

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
Tensor dropout_with_mask(const Tensor& x, const Tensor& mask, double p);

// Norms. Undefined tensors stand for None. batch_norm updates running stats in place when
// training and they are given.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps);
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias, double eps);
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps);
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, double eps);

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx);  // padding_idx < 0: none
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    const Tensor& dropout_mask, double dropout_p, bool is_causal, double scale);
// mode: "nearest", "nearest-exact", "bilinear"; scale_h/scale_w <= 0 mean "not given".
Tensor interpolate(const Tensor& x, int64_t out_h, int64_t out_w, const std::string& mode, bool align_corners,
                   double scale_h, double scale_w);

// One direction of one LSTM / GRU layer (ops/nn_rnn.cpp): xp (T, B, 4H or 3H) is the input
// projection of every step; returns the op's outputs (LSTM: y, cells, gates; GRU: y, gates, hn).
TensorList lstm_recurrence(const Tensor& xp, const Tensor& h0, const Tensor& c0, const Tensor& w_hh, bool reverse);
TensorList gru_recurrence(const Tensor& xp, const Tensor& h0, const Tensor& w_hh, const Tensor& b_hh, bool reverse);

// Losses; reduction is "none", "mean" or "sum".
Tensor mse_loss(const Tensor& x, const Tensor& t, const std::string& reduction);
Tensor l1_loss(const Tensor& x, const Tensor& t, const std::string& reduction);
Tensor smooth_l1_loss(const Tensor& x, const Tensor& t, const std::string& reduction, double beta);
Tensor huber_loss(const Tensor& x, const Tensor& t, const std::string& reduction, double delta);
Tensor kl_div(const Tensor& x, const Tensor& t, const std::string& reduction, bool log_target);
Tensor binary_cross_entropy(const Tensor& x, const Tensor& t, const Tensor& weight, const std::string& reduction);
Tensor binary_cross_entropy_with_logits(const Tensor& x, const Tensor& t, const Tensor& weight,
                                        const Tensor& pos_weight, const std::string& reduction);
Tensor nll_loss(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                const std::string& reduction);
Tensor cross_entropy(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     const std::string& reduction, double label_smoothing);

}  // namespace lucid
