#include "lucid/autograd/engine.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "lucid/autograd/grad_mode.h"
#include "lucid/autograd/node.h"
#include "lucid/compile/trace/trace_hook.h"
#include "lucid/core/device.h"
#include "lucid/core/mem_overlap.h"
#include "lucid/dispatch/autocast.h"
#include "lucid/dispatch/dispatch.h"
#include "lucid/ops/core.h"

namespace lucid::autograd {

namespace {

struct NodeCmp {
  bool operator()(Node* a, Node* b) const { return a->sequence_nr < b->sequence_nr; }
};

// Reduce a gradient to the input's shape and dtype (broadcasting and type promotion in forward).
Tensor fit_to_input(Tensor g, const TensorMeta& meta) {
  // A CPU scalar that joined a CUDA op gets its gradient back on the CPU, as in torch.
  if (g.device() != meta.device) g = to_device(g, meta.device, g.dtype());
  if (g.shape() != meta.shape) g = dispatch1(OpId::SumTo, {g}, {{"shape", meta.shape}});
  if (g.dtype() != meta.dtype) g = dispatch1(OpId::Copy, {g}, {{"dtype", meta.dtype}});
  return g;
}

Tensor add_grads(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return dispatch1(OpId::Add, {a, b});
}

// A gradient stored into .grad must own its memory: no stride-0 views, no buffer shared with
// another tensor's grad (an in-place update of one must not change the other).
Tensor owned(const Tensor& g) {
  if (g.is_contiguous() && !g.impl()->is_view && g.impl()->storage.use_count() == 1 &&
      g.impl_ptr().use_count() <= 2)
    return g.detach();
  return dispatch1(OpId::Copy, {g}, {{"dtype", g.dtype()}});
}

Tensor run_hooks(const std::vector<TensorHook>& hooks, Tensor g) {
  for (const TensorHook& h : hooks) {
    Tensor r = h(g);
    if (r.defined()) g = r;
  }
  return g;
}

void accumulate_leaf(const std::shared_ptr<TensorImpl>& leaf, Tensor g, bool create_graph) {
  AutogradMeta& m = leaf->meta();
  g = run_hooks(m.hooks, g);
  if (!m.grad) {
    m.grad = create_graph ? g.impl_ptr() : owned(g).impl_ptr();
  } else if (create_graph) {
    m.grad = dispatch1(OpId::Add, {Tensor(m.grad), g}).impl_ptr();
  } else {
    GradModeGuard ng(false);
    Tensor cur(m.grad);
    // A grad kept from create_graph may be an expanded view: accumulate out of place into it.
    if (has_broadcast_dim(cur)) m.grad = dispatch1(OpId::Add, {cur, g}).impl_ptr();
    else dispatch_inplace(OpId::Add, cur, {cur, g});
  }
}

struct Task {
  TensorList outputs;
  TensorList roots_grad;
};

// Runs the graph. `capture` maps (node, output_nr) or leaf impl to an output slot of grad().
struct Runner {
  bool retain_graph, create_graph;
  bool accumulate;  // backward() writes .grad; grad() captures instead
  std::unordered_map<const TensorImpl*, size_t> leaf_capture;
  std::unordered_map<const Node*, std::vector<std::pair<uint32_t, size_t>>> node_capture;
  TensorList captured;

  void run(const TensorList& roots, const TensorList& grad_roots) {
    AutocastOffGuard no_autocast;  // each VJP takes the dtypes its forward saw (dispatch/autocast.h)
    std::unordered_map<Node*, int> deps;
    std::unordered_map<Node*, TensorList> buffers;
    std::vector<Node*> stack;
    std::unordered_set<Node*> seen;
    for (const Tensor& r : roots)
      if (Node* n = r.grad_fn().get(); n && seen.insert(n).second) stack.push_back(n);
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge& e : n->next_edges) {
        if (!e.fn) continue;
        deps[e.fn.get()] += 1;
        if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
      }
    }
    std::priority_queue<Node*, std::vector<Node*>, NodeCmp> ready;
    for (size_t i = 0; i < roots.size(); ++i) {
      const Tensor& r = roots[i];
      if (Node* n = r.grad_fn().get()) {
        TensorList& buf = buffers[n];
        buf.resize(n->num_outputs);
        uint32_t nr = r.impl()->autograd->output_nr;
        buf[nr] = add_grads(buf[nr], grad_roots[i]);
      } else {
        deliver_leaf(r.impl_ptr(), grad_roots[i]);
      }
    }
    for (const Tensor& r : roots)
      if (Node* n = r.grad_fn().get(); n && deps[n] == 0) {
        deps[n] = -1;  // queued
        ready.push(n);
      }
    while (!ready.empty()) {
      Node* n = ready.top();
      ready.pop();
      TensorList grads = std::move(buffers[n]);
      buffers.erase(n);
      grads.resize(n->num_outputs);
      for (auto& [nr, hook] : n->pre_hooks)
        if (grads[nr].defined()) {
          Tensor r = hook(grads[nr]);
          if (r.defined()) grads[nr] = r;
        }
      if (auto it = node_capture.find(n); it != node_capture.end())
        for (auto [nr, slot] : it->second) captured[slot] = add_grads(captured[slot], grads[nr]);
      bool any = false;
      for (const Tensor& g : grads) any = any || g.defined();
      TensorList in_grads;
      if (any) {
        // Tensors the VJP makes without inputs (zeros, ones) land on the gradients' device.
        Device dev{};
        for (const Tensor& g : grads)
          if (g.defined()) { dev = g.device(); break; }
        FactoryDeviceScope on_device(dev);
        in_grads = n->apply(grads);
        if (!retain_graph) n->release_saved();
      }
      for (size_t i = 0; i < n->next_edges.size(); ++i) {
        const Edge& e = n->next_edges[i];
        if (!e.valid()) continue;
        // Moved out, so a leaf's gradient that nothing else holds is stored without a copy (owned).
        Tensor g = i < in_grads.size() ? std::move(in_grads[i]) : Tensor();
        if (g.defined()) g = fit_to_input(g, n->input_meta[i]);
        if (e.leaf) {
          if (g.defined()) deliver_leaf(e.leaf, g);
          continue;
        }
        Node* next = e.fn.get();
        if (g.defined()) {
          TensorList& buf = buffers[next];
          buf.resize(next->num_outputs);
          buf[e.input_nr] = add_grads(buf[e.input_nr], g);
        }
        if (--deps[next] == 0) ready.push(next);
      }
    }
  }

  void deliver_leaf(const std::shared_ptr<TensorImpl>& leaf, const Tensor& g) {
    if (!g.defined()) return;
    if (accumulate) {
      if (leaf->autograd && leaf->autograd->requires_grad) accumulate_leaf(leaf, g, create_graph);
      return;
    }
    if (auto it = leaf_capture.find(leaf.get()); it != leaf_capture.end())
      captured[it->second] = add_grads(captured[it->second], run_hooks(leaf->meta().hooks, g));
  }
};

TensorList default_grads(const TensorList& roots, const TensorList& given, const char* api) {
  TensorList out(roots.size());
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    LUCID_CHECK(r.requires_grad(), Error, api,
                ": element ", i, " of tensors does not require grad and does not have a grad_fn");
    if (i < given.size() && given[i].defined()) {
      LUCID_CHECK(given[i].shape() == r.shape(), ValueError, api, ": argument 'gradient' expected shape ",
                  shape_str(r.shape()), ", got ", shape_str(given[i].shape()));
      out[i] = given[i];
    } else {
      LUCID_CHECK(r.numel() == 1, Error, api,
                  ": grad can be implicitly created only for scalar outputs; got shape ", shape_str(r.shape()));
      FactoryDeviceScope on_device(r.device());
      out[i] = full(r.shape(), 1.0, r.dtype());
    }
  }
  return out;
}

}  // namespace

void backward(const TensorList& roots, const TensorList& grad_roots, bool retain_graph, bool create_graph) {
  TensorList g = default_grads(roots, grad_roots, "backward");
  GradModeGuard mode(create_graph);
  Runner r{retain_graph, create_graph, true, {}, {}, {}};
  r.run(roots, g);
  raise_deferred_device_errors();  // an input check of the pass's ops that failed (core/device.h)
}

TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs,
                bool retain_graph, bool create_graph, bool allow_unused) {
  TensorList g = default_grads(outputs, grad_outputs, "autograd.grad");
  Runner r{retain_graph, create_graph, false, {}, {}, {}};
  r.captured.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    LUCID_CHECK(t.requires_grad(), Error, "autograd.grad: input ", i, " does not require grad");
    if (t.grad_fn())
      r.node_capture[t.grad_fn().get()].push_back({t.impl()->autograd->output_nr, i});
    else
      r.leaf_capture[t.impl()] = i;
  }
  {
    GradModeGuard mode(create_graph);
    r.run(outputs, g);
  }
  raise_deferred_device_errors();
  for (size_t i = 0; i < inputs.size(); ++i)
    LUCID_CHECK(allow_unused || r.captured[i].defined(), Error, "autograd.grad: input ", i,
                " was not used in the graph; pass allow_unused=True if this is intended");
  return r.captured;
}

void register_hook(const Tensor& t, TensorHook hook) {
  LUCID_CHECK(t.requires_grad(), Error, "register_hook: cannot register a hook on a tensor that doesn't require grad");
  if (t.grad_fn())
    t.grad_fn()->pre_hooks.emplace_back(t.impl()->autograd->output_nr, std::move(hook));
  else
    t.impl()->meta().hooks.push_back(std::move(hook));
}

void retain_grad(const Tensor& t) {
  LUCID_CHECK(t.requires_grad(), Error, "retain_grad: tensor does not require grad");
  if (t.is_leaf()) return;
  AutogradMeta& m = t.impl()->meta();
  if (m.retains_grad) return;
  m.retains_grad = true;
  std::weak_ptr<TensorImpl> weak = t.impl_ptr();
  register_hook(t, [weak](const Tensor& g) {
    if (TraceHook* h = current_trace_hook()) h->on_untraced_callback("retain_grad's hook");
    if (auto impl = weak.lock()) {
      Tensor self(impl);
      Tensor prev = self.grad();
      GradModeGuard ng(false);
      self.impl()->meta().grad = prev.defined() ? dispatch1(OpId::Add, {prev, g}).impl_ptr()
                                                : dispatch1(OpId::Copy, {g}, {{"dtype", g.dtype()}}).impl_ptr();
    }
    return Tensor();
  });
}

}  // namespace lucid::autograd
