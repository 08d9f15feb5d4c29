// CompiledBackward and PrecomputedBackward (compiled_backward.h): the backward of a compiled
// call, with eager autograd's errors for a second backward and for double backward.
#include "lucid/compile/runtime/compiled_backward.h"

#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/core.h"

namespace lucid::rt {

TensorList CompiledBackward::apply(const TensorList& grads) {
  LUCID_CHECK(!released, Error, "backward of ", name(),
              ": trying to backward through the graph a second time (or to access saved tensors after "
              "they have been freed); pass retain_graph=True to the first backward");
  LUCID_CHECK(!GradMode::is_enabled(), NotImplementedError,
              "lucid.compile: double backward (create_graph=True) through a compiled forward is not supported");
  TensorList ins = saved;
  for (size_t k = 0; k < out_meta.size(); ++k) {
    const TensorMeta& m = out_meta[k];
    Tensor g = k < grads.size() ? grads[k] : Tensor();
    if (!g.defined()) g = full(m.shape, 0.0, m.dtype);
    else if (g.dtype() != m.dtype || g.shape() != m.shape) g = expand(cast(g, m.dtype), m.shape);
    ins.push_back(g);
  }
  TensorList r = bwd->run(ins, states);
  TensorList out(used.size());
  for (size_t e = 0, k = 0; e < used.size(); ++e)
    if (used[e]) out[e] = r[k++];
  return out;
}

void CompiledBackward::release_saved() {
  saved.clear();
  Node::release_saved();
}

TensorList PrecomputedBackward::apply(const TensorList& g) {
  LUCID_CHECK(!released, Error, "backward of ", name(),
              ": trying to backward through the graph a second time; pass retain_graph=True to the first backward");
  LUCID_CHECK(!GradMode::is_enabled(), NotImplementedError,
              "lucid.compile: double backward (create_graph=True) through a compiled step is not supported");
  TensorList out(used.size());
  if (g.empty() || !g[0].defined()) return out;  // no gradient flows into the loss
  LUCID_CHECK(g[0].numel() == 1, Error, "CompiledStep: the loss is a scalar; got a gradient of shape ",
              shape_str(g[0].shape()));
  for (size_t e = 0, k = 0; e < used.size(); ++e) {
    if (!used[e]) continue;
    const Tensor& d = grads[k++];
    out[e] = mul(d, cast(g[0], d.dtype()));
  }
  return out;
}

void PrecomputedBackward::release_saved() {
  grads.clear();
  Node::release_saved();
}

}  // namespace lucid::rt
