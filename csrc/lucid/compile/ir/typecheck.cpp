// check_types (graph.h): every node's recorded result types re-derived by its op's own rule.
// A traced graph is right by construction (the tracer records what infer returned); a graph read
// from an artifact or the compile cache is not, and the kernels trust the shapes they are given.
// Each value gets a placeholder tensor of its recorded type that owns no memory of that size:
// kernel ops run `infer`, which validates arguments as in eager mode and needs only shapes and
// dtypes (results are placed on the inputs' device) (a placeholder reads as zeros through zero strides); view ops run their view function,
// which computes geometry only (a placeholder has contiguous strides over a one-element buffer,
// never read).
#include <cstring>

#include "lucid/compile/ir/graph.h"
#include "lucid/core/shape.h"
#include "lucid/core/storage.h"

namespace lucid::ir {

namespace {

alignas(64) char g_zeros[64] = {};

Tensor placeholder(const Value& v, bool contiguous) {
  auto impl = std::make_shared<TensorImpl>();
  int64_t claim = contiguous ? contiguous_nbytes(v.shape, static_cast<int64_t>(itemsize(v.dtype))) : 64;
  impl->storage = Storage::wrap(g_zeros, static_cast<size_t>(claim), nullptr);
  impl->storage->device = v.device;  // never read: the device is only what the shape rule reports
  impl->shape = v.shape;
  impl->strides = contiguous ? contiguous_strides(v.shape) : Strides(v.shape.size(), 0);
  impl->dtype = v.dtype;
  return Tensor(impl);
}

std::string types_str(const std::vector<TensorMeta>& ms) {
  std::string s;
  for (size_t k = 0; k < ms.size(); ++k)
    s += str(k ? ", " : "", dtype_name(ms[k].dtype), shape_str(ms[k].shape), ms[k].device.is_cpu() ? "" : "@",
             ms[k].device.is_cpu() ? "" : ms[k].device.str());
  return s;
}

}  // namespace

void check_types(const Graph& g) {
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    const Node& node = g.nodes()[n];
    std::vector<TensorMeta> recorded;
    for (int o : node.outputs) recorded.push_back(g.value(o).meta());
    if (node.body) {  // verify() matched the body's interface to the node; check the body itself
      check_types(*node.body);
      continue;
    }
    const OpDef& def = op_def(node.op);
    TensorList ins;
    for (int in : node.inputs) ins.push_back(in < 0 ? Tensor() : placeholder(g.value(in), def.view != nullptr));
    std::vector<TensorMeta> derived;
    try {
      if (def.view) {
        for (const Tensor& t : def.view(ins, node.attrs)) derived.push_back(meta_of(t));
      } else {
        LUCID_CHECK(def.infer, Error, "no shape rule");
        derived = def.infer(ins, node.attrs);
        for (TensorMeta& m : derived) m.device = inputs_device(ins);  // infer leaves it (op_def.h)
      }
    } catch (const Error& e) {
      throw Error(str("check_types: node ", n, " (", op_name(node.op), ") is invalid: ", e.what()));
    }
    bool same = derived.size() == recorded.size();
    for (size_t k = 0; same && k < derived.size(); ++k)
      same = derived[k].shape == recorded[k].shape && derived[k].dtype == recorded[k].dtype &&
             derived[k].device == recorded[k].device;
    LUCID_CHECK(same, Error, "check_types: node ", n, " (", op_name(node.op), ") records results ", types_str(recorded),
                "; its op gives ", types_str(derived));
  }
}

}  // namespace lucid::ir
