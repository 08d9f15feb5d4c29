// Embedding (row gather) with its scatter-add backward, and 4-D Interpolate (nearest,
// nearest-exact, bilinear, bicubic) with its adjoint: the op records. Each backward op is linear
// in the gradient and its VJP is the forward op again, so both pairs differentiate to any order.
// Kernels: backends/cpu/kernels/embedding.cpp and interpolate.cpp.
#include <string>
#include <vector>

#include "lucid/ops/core.h"
#include "lucid/ops/nn.h"
#include "lucid/ops/nn_layout.h"
#include "lucid/ops/nn_util.h"

namespace lucid {

// ---- Embedding: inputs (weight, indices); attrs padding_idx (-1: none), zero_padding -------
LUCID_REGISTER_OP(Embedding, "padding_idx:int, zero_padding:bool?", [] {
  OpDef d;
  d.num_inputs = 2;
  d.nondiff_inputs = {1};
  d.infer = [](const TensorList& in, const Attrs&) {
    const Tensor &w = in[0], &idx = in[1];
    LUCID_CHECK(w.ndim() == 2, ValueError, "embedding: argument 'weight' expected a 2-D tensor, got shape ", shape_str(w.shape()));
    LUCID_CHECK(is_integral(idx.dtype()), TypeError, "embedding: argument 'indices' expected an integer tensor (int64 or int32), got ",
                dtype_name(idx.dtype()));
    Shape s = idx.shape();
    s.push_back(w.shape()[1]);
    return std::vector<TensorMeta>{{s, w.dtype()}};
  };
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    Attrs a{{"num_weights", c.input_meta[0].shape[0]}, {"padding_idx", c.attrs.i("padding_idx")}};
    return TensorList{dispatch1(OpId::EmbeddingBackward, {c.grads[0], c.inputs[1]}, a), Tensor()};
  };
  return d;
}());

// ---- EmbeddingBackward: inputs (grad, indices) -> (num_weights, D), rows scatter-added ----
LUCID_REGISTER_OP(EmbeddingBackward, "num_weights:int, padding_idx:int", [] {
  OpDef d;
  d.num_inputs = 2;
  d.nondiff_inputs = {1};
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor &g = in[0], &idx = in[1];
    nnutil::check_floating(g, "embedding_backward", "grad");
    LUCID_CHECK(g.ndim() == idx.ndim() + 1, ValueError, "embedding_backward: grad shape ", shape_str(g.shape()),
                " does not match indices shape ", shape_str(idx.shape()));
    return std::vector<TensorMeta>{{{a.i("num_weights"), g.shape().back()}, g.dtype()}};
  };
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    Attrs a{{"padding_idx", c.attrs.i("padding_idx")}, {"zero_padding", true}};
    return TensorList{dispatch1(OpId::Embedding, {c.grads[0], c.inputs[1]}, a), Tensor()};
  };
  return d;
}());

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx) {
  return dispatch1(OpId::Embedding, {weight, indices}, {{"padding_idx", padding_idx}, {"zero_padding", false}});
}

// ---- Interpolate ----------------------------------------------------------------------------
// attrs: size [OH, OW], input_size [H, W], mode, align_corners, scale_h, scale_w (<= 0: none).
LUCID_REGISTER_OP(Interpolate, "size:ints, input_size:ints, mode:str, align_corners:bool, scale_h:float, scale_w:float", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    nnutil::check_floating(x, "interpolate", "input");
    LUCID_CHECK(x.ndim() == 4, NotImplementedError, "interpolate: only 4-D input (N, C, H, W) is supported, got shape ",
                shape_str(x.shape()));
    nnutil::parse_interp_mode(a.s("mode"));
    const IntList& sz = a.ints("size");
    LUCID_CHECK(sz.size() == 2 && sz[0] > 0 && sz[1] > 0, ValueError, "interpolate: output size must be 2 positive ints, got ",
                shape_str(sz));
    return std::vector<TensorMeta>{{{x.shape()[0], x.shape()[1], sz[0], sz[1]}, x.dtype()}};
  };
  d.vjp = [](const VjpContext& c) { return TensorList{dispatch1(OpId::InterpolateBackward, {c.grads[0]}, c.attrs)}; };
  return d;
}());

LUCID_REGISTER_OP(InterpolateBackward, "size:ints, input_size:ints, mode:str, align_corners:bool, scale_h:float, scale_w:float", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& g = in[0];
    const IntList& is = a.ints("input_size");
    LUCID_CHECK(g.ndim() == 4 && g.shape()[2] == a.ints("size")[0] && g.shape()[3] == a.ints("size")[1], ValueError,
                "interpolate_backward: grad shape ", shape_str(g.shape()), " does not match the output size");
    return std::vector<TensorMeta>{{{g.shape()[0], g.shape()[1], is[0], is[1]}, g.dtype()}};
  };
  d.vjp = [](const VjpContext& c) { return TensorList{dispatch1(OpId::Interpolate, {c.grads[0]}, c.attrs)}; };
  return d;
}());

Tensor interpolate(const Tensor& x, int64_t out_h, int64_t out_w, const std::string& mode, bool align_corners,
                   double scale_h, double scale_w) {
  LUCID_CHECK(x.ndim() == 4, NotImplementedError, "interpolate: only 4-D input (N, C, H, W) is supported, got shape ",
              shape_str(x.shape()));
  Attrs a{{"size", IntList{out_h, out_w}}, {"input_size", IntList{x.shape()[2], x.shape()[3]}}, {"mode", mode},
          {"align_corners", align_corners}, {"scale_h", scale_h}, {"scale_w", scale_w}};
  return dispatch1(OpId::Interpolate, {x}, a);
}

}  // namespace lucid
