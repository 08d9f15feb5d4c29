#include "lucid/dispatch/dispatch.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "lucid/autograd/grad_mode.h"
#include "lucid/autograd/function_node.h"
#include "lucid/autograd/node.h"
#include "lucid/compile/trace/trace_hook.h"
#include "lucid/core/mem_overlap.h"
#include "lucid/dispatch/autocast.h"
#include "lucid/ops/core.h"

namespace lucid {

static thread_local bool tl_grad_enabled = true;
bool GradMode::is_enabled() { return tl_grad_enabled; }
void GradMode::set_enabled(bool on) { tl_grad_enabled = on; }

static thread_local TraceHook* tl_trace_hook = nullptr;
TraceHook* current_trace_hook() { return tl_trace_hook; }
void set_trace_hook(TraceHook* hook) { tl_trace_hook = hook; }

static DType g_default_float = DType::Float32;
DType default_float_dtype() { return g_default_float; }
void set_default_float_dtype(DType t) {
  LUCID_CHECK(is_floating(t), TypeError, "set_default_dtype: expected a floating dtype, got ", dtype_name(t));
  g_default_float = t;
}

Tensor scalar_tensor(double v) {
  Tensor t = Tensor::empty({}, DType::Float64);
  *t.data<double>() = v;
  t.impl()->is_wrapped_number = true;
  return t;
}
Tensor scalar_tensor(int64_t v) {
  Tensor t = Tensor::empty({}, DType::Int64);
  *t.data<int64_t>() = v;
  t.impl()->is_wrapped_number = true;
  return t;
}
Tensor scalar_tensor_bool(bool v) {
  Tensor t = Tensor::empty({}, DType::Bool);
  *t.data<bool>() = v;
  t.impl()->is_wrapped_number = true;
  return t;
}

DType result_type(const TensorList& ts) {
  // Three tiers, each promoted separately; a lower tier only counts if its category is higher.
  bool has[3] = {false, false, false};
  DType tier[3] = {DType::Bool, DType::Bool, DType::Bool};
  for (const Tensor& t : ts) {
    if (!t.defined()) continue;
    int k = t.impl()->is_wrapped_number ? 2 : (t.ndim() == 0 ? 1 : 0);
    DType d = t.dtype();
    if (k == 2 && d == DType::Float64) d = default_float_dtype();
    tier[k] = has[k] ? promote_types(tier[k], d) : d;
    has[k] = true;
  }
  DType r = DType::Bool;
  bool any = false;
  for (int k = 0; k < 3; ++k) {
    if (!has[k]) continue;
    if (!any) { r = tier[k]; any = true; continue; }
    if (scalar_kind(tier[k]) > scalar_kind(r)) {
      // A lower tier of a higher category: take its dtype (wrapped floats give the default).
      r = tier[k];
    }
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Autograd recording

static bool any_requires_grad(const OpDef& def, const TensorList& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
    if (std::find(def.nondiff_inputs.begin(), def.nondiff_inputs.end(), static_cast<int>(i)) !=
        def.nondiff_inputs.end())
      continue;
    return true;
  }
  return false;
}

static void record_node(OpId id, const OpDef& def, const TensorList& inputs, const Attrs& attrs,
                        const TensorList& outputs) {
  LUCID_CHECK(def.vjp, NotImplementedError, def.api_name, ": no VJP is defined, so its inputs cannot be differentiated");
  auto node = std::make_shared<Node>();
  node->op = id;
  node->attrs = attrs;
  node->num_outputs = static_cast<uint32_t>(outputs.size());
  connect_inputs(*node, inputs, def.nondiff_inputs);
  auto unsaved = [&](size_t i) {
    return std::find(def.unsaved_inputs.begin(), def.unsaved_inputs.end(), static_cast<int>(i)) != def.unsaved_inputs.end();
  };
  if (def.save & kSaveInputs)
    for (size_t i = 0; i < inputs.size(); ++i)
      node->saved_inputs.push_back(inputs[i].defined() && !unsaved(i) ? SavedTensor::save(inputs[i], false) : SavedTensor{});
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& o = outputs[k];
    if (!is_floating(o.dtype())) continue;
    attach_output(node, o, static_cast<uint32_t>(k));
  }
  if ((def.save & kSaveOutputs) && (!def.saves_outputs || def.saves_outputs(inputs)))
    for (size_t k = 0; k < outputs.size(); ++k) {
      bool skip = std::find(def.unsaved_outputs.begin(), def.unsaved_outputs.end(), static_cast<int>(k)) !=
                  def.unsaved_outputs.end();
      node->saved_outputs.push_back(skip ? SavedTensor{} : SavedTensor::save(outputs[k], true));
    }
}

// ---------------------------------------------------------------------------------------------

// LUCID_CHECK_ATTRS=1 (the test suite sets it) holds every call's attributes to the op's declared
// schema, proving the schemas complete and exact; off, the eager path pays one predictable branch.
static bool check_attrs_on() {
  static const bool on = [] {
    const char* e = std::getenv("LUCID_CHECK_ATTRS");
    return e && *e && std::strcmp(e, "0") != 0;
  }();
  return on;
}

static const OpDef& checked_def(OpId id, const Attrs& attrs) {
  const OpDef& def = op_def(id);
  LUCID_CHECK(def.name, NotImplementedError, op_name(id), ": op is declared but has no definition in this build");
  if (check_attrs_on()) check_attrs(id, attrs);
  return def;
}

// The device an op runs on: its inputs' device. They must share one, except that a CPU 0-dim
// tensor (a Python number, a scalar) may join tensors of any device, as in PyTorch; nothing is
// ever copied between devices silently. An op whose inputs are all CPU scalars runs on the CPU;
// one without tensor inputs (a factory) on the thread's factory device (core/device.h).
static Device op_device(const OpDef& def, const TensorList& inputs, const Tensor* dst = nullptr) {
  const Tensor* first = dst;
  bool any = dst != nullptr;
  for (const Tensor& t : inputs) {
    if (!t.defined()) continue;
    any = true;
    if (t.device().is_cpu() && t.ndim() == 0) continue;
    if (!first) {
      first = &t;
      continue;
    }
    LUCID_CHECK(t.device() == first->device(), Error, def.api_name,
                ": expected all tensors to be on the same device, but found at least two devices, ",
                first->device().str(), " and ", t.device().str(), "!");
  }
  if (first) return first->device();
  return any ? Device{} : factory_device();
}

// On another device than the CPU, a CPU 0-dim input (a Python number) reaches the kernels of the
// elementwise functor table as it is (they read its value on the host and pass it by value);
// every other kernel gets it copied to the op's device, so it sees one device only.
static const TensorList& device_inputs(const OpDef& def, const Device& dev, const TensorList& inputs,
                                       TensorList& moved) {
  if (dev.is_cpu() || def.ew_dtypes != 0) return inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.device().is_cpu()) continue;
    if (moved.empty()) moved = inputs;
    Tensor d = Tensor::empty(t.shape(), t.dtype(), dev);
    copy_values(d, t);
    d.impl()->is_wrapped_number = t.impl()->is_wrapped_number;
    moved[i] = d;
  }
  return moved.empty() ? inputs : moved;
}

// The op's kernel on a device (registered by that backend).
static KernelFn kernel_on(const OpDef& def, const Device& dev) {
  KernelFn k = def.kernel(dev.type);
  LUCID_CHECK(k, NotImplementedError, def.api_name, ": not implemented on ", dev.str(),
              dev.is_cpu() ? " in this build" : " (no kernel for this op in the backend)");
  return k;
}


// A copy between devices is the non-CPU side's Copy kernel's (it knows both memories).
void copy_values(const Tensor& dst, const Tensor& src) {
  const Device& dev = dst.device().is_cpu() ? src.device() : dst.device();
  kernel_on(op_def(OpId::Copy), dev)({src}, {dst}, {{"dtype", dst.dtype()}});
}

// Defined here, not in core: the copy is the Copy kernel of the tensor's device.
Tensor Tensor::contiguous_data() const {
  if (is_contiguous()) return *this;
  Tensor out = Tensor::empty(shape(), dtype(), device());
  copy_values(out, *this);
  return out;
}

static TensorList run_op(const OpDef& def, const TensorList& inputs, const Attrs& attrs) {
  if (def.view) {
    TensorList outs = def.view(inputs, attrs);
    for (Tensor& o : outs) {
      if (inputs.empty() || !o.same_storage(inputs[0])) continue;  // e.g. reshape that had to copy
      o.impl()->is_view = true;
      const Tensor& in = inputs[0];
      o.impl()->view_base = in.impl()->view_base ? in.impl()->view_base : in.impl_ptr();
    }
    return outs;
  }
  const Device dev = op_device(def, inputs);
  std::vector<TensorMeta> metas = def.infer(inputs, attrs);
  TensorList outs;
  outs.reserve(metas.size());
  if (def.device_transfer) {  // a copy between devices: the non-CPU side's kernel does both
    const Device& to = metas[0].device;
    outs.push_back(Tensor::empty(metas[0].shape, metas[0].dtype, to));
    kernel_on(def, to.is_cpu() ? dev : to)(inputs, outs, attrs);
    return outs;
  }
  KernelFn kernel = kernel_on(def, dev);
  for (const TensorMeta& m : metas) outs.push_back(Tensor::empty(m.shape, m.dtype, dev));
  TensorList moved;
  kernel(device_inputs(def, dev, inputs, moved), outs, attrs);
  return outs;
}

// The device type autocast keys an op by: its first input that is not a CPU 0-dim tensor.
static DeviceType autocast_device(const TensorList& inputs) {
  for (const Tensor& t : inputs)
    if (t.defined() && !(t.device().is_cpu() && t.ndim() == 0)) return t.device().type;
  return DeviceType::CPU;
}

TensorList dispatch(OpId id, const TensorList& in, const Attrs& attrs) {
  const OpDef& def = checked_def(id, attrs);
  TensorList cast;  // autocast's copies of the inputs (dispatch/autocast.h), when it casts any
  const TensorList* ins = &in;
  if (autocast_any_enabled()) {
    const DeviceType dev = autocast_device(in);
    if (autocast_enabled(dev)) ins = &autocast_inputs(id, attrs, dev, in, cast);
  }
  const TensorList& inputs = *ins;
  TensorList outs = run_op(def, inputs, attrs);
  if (def.differentiable && GradMode::is_enabled() && any_requires_grad(def, inputs))
    record_node(id, def, inputs, attrs, outs);
  if (TraceHook* h = tl_trace_hook) h->on_op(id, inputs, attrs, outs);
  return outs;
}

static bool can_cast(DType from, DType to) {
  // PyTorch's can_cast for in-place results: no float into integral, no non-bool into bool.
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

// Ops whose in-place form may write a destination with internal overlap (an expanded view), as
// in PyTorch: every write to one location stores the same value (fill_, masked_fill_, tril_,
// triu_, index_put_ with PyTorch's deprecation), or the caller checks the region it writes
// (setitem's SliceScatter).
static bool allows_self_overlapping_dst(OpId id) {
  return id == OpId::Fill || id == OpId::MaskedFill || id == OpId::Tril || id == OpId::Triu || id == OpId::IndexPut ||
         id == OpId::SliceScatter;
}

// PyTorch's memory-overlap rules for an in-place write (core/mem_overlap.h): the destination
// must not have internal overlap; an input partially overlapping it raises (scatter_ and
// scatter_add_ refuse any alias of src, as PyTorch's assert_no_overlap); an input that PyTorch
// cannot classify ("too hard": non-dense views) but whose memory intersects dst's is copied
// first, so the kernel never reads what it already wrote. An input with dst's exact geometry is
// read as it is by elementwise ops (x.add_(x)); other ops copy it too. Input `self` is dst's own
// operand (x in x.op_(...); input k for destination k of dispatch_inplace_many), read as it is.
// Returns the inputs to run with: `inputs` itself unless something was copied into `copies`. The
// checks cost a geometry comparison only for inputs that share dst's storage.
static const TensorList& overlap_checked_inputs(OpId id, const OpDef& def, const Tensor& dst, const TensorList& inputs,
                                                TensorList& copies, size_t self = 0) {
  LUCID_CHECK(!has_broadcast_dim(dst) || allows_self_overlapping_dst(id) || dst.numel() == 0,
              Error, def.api_name, "_: ", kInternalOverlapError);
  const bool elementwise = def.lowering == Lowering::Elementwise || id == OpId::Copy;
  const bool no_alias = id == OpId::Scatter || id == OpId::ScatterAdd;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.same_storage(dst)) continue;
    const bool same_geometry = t.offset() == dst.offset() && t.shape() == dst.shape() && t.strides() == dst.strides();
    if (i == self && same_geometry) continue;  // the self operand of x.op_(...)
    const MemOverlapStatus st = get_overlap_status(dst, t);
    LUCID_CHECK(st != MemOverlapStatus::Partial && !(no_alias && st == MemOverlapStatus::Full), Error, def.api_name,
                "_: ", kPartialOverlapError);
    if ((elementwise && same_geometry) || !spans_intersect(dst, t)) continue;
    if (copies.empty()) copies = inputs;
    TraceHook* h = tl_trace_hook;
    tl_trace_hook = nullptr;  // the trace reads the SSA value, which is already a copy
    copies[i] = dispatch1(OpId::Copy, {t}, {{"dtype", t.dtype()}});
    tl_trace_hook = h;
  }
  return copies.empty() ? inputs : copies;
}

// Whether an in-place op differentiates through dst's old value (x.relu_(): yes; fill_, copy_
// from another tensor, and ops without a VJP (comparisons, random fills): no).
static bool reads_dst(const OpDef& def, const TensorList& inputs, const Tensor& dst) {
  if (!def.differentiable) return false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].impl() == dst.impl() &&
        std::find(def.nondiff_inputs.begin(), def.nondiff_inputs.end(), static_cast<int>(i)) == def.nondiff_inputs.end())
      return true;
  return false;
}

// dst (not a view) was overwritten by r, an op result that did not read dst: dst's new history
// passes its gradient to r's and a zero gradient to dst's old history (PyTorch's FillBackward and
// CopyBackwards do the same), so the ops before the write still run their backward (and their
// saved-tensor checks) while no gradient of the overwritten values leaks through.
static void overwrite_history(const OpDef& def, const Tensor& dst, const Tensor& r) {
  Tensor old = dst.detach();
  AutogradMeta& om = old.impl()->meta();
  om.requires_grad = true;
  om.grad_fn = dst.grad_fn();
  om.output_nr = dst.impl()->autograd->output_nr;
  TensorMeta meta{dst.shape(), dst.dtype()};
  auto backward = [meta](const TensorList& grads, const TensorList&) {
    const Tensor& g = grads[0];
    return TensorList{g, g.defined() ? full(meta.shape, 0.0, meta.dtype) : Tensor()};
  };
  std::string name = std::string(def.name) + "Overwrite";
  TensorList outs{dst};
  make_function_node(std::move(name), {r, old}, outs, {true}, {}, backward);
}

const Tensor& dispatch_inplace(OpId id, const Tensor& dst, const TensorList& in_args, const Attrs& attrs) {
  const OpDef& def = checked_def(id, attrs);
  LUCID_CHECK(!def.view, Error, def.name, ": a view op has no in-place form");
  // The op runs on dst's device, and its inputs must be there too (CPU scalars aside); only
  // dst.copy_(src) may read src from another device, as torch's: the non-CPU side's Copy kernel
  // does the transfer.
  const Device src_dev = inputs_device(in_args);
  const bool transfer = id == OpId::Copy && src_dev != dst.device() && !(src_dev.is_cpu() && in_args[0].ndim() == 0);
  const Device dev = transfer ? (dst.device().is_cpu() ? src_dev : dst.device()) : op_device(def, in_args, &dst);
  TensorList copies;
  const TensorList& inputs = overlap_checked_inputs(id, def, dst, in_args, copies);
  // Recorded whenever dst requires grad, even for ops without a VJP: the write replaces dst's
  // value, so its old history must stop receiving dst's gradient (see overwrite_history).
  bool record = GradMode::is_enabled() && (dst.requires_grad() || (def.differentiable && any_requires_grad(def, inputs)));
  if (record) {
    LUCID_CHECK(!(dst.is_leaf() && dst.requires_grad()), Error, def.api_name,
                "_: a leaf tensor that requires grad is being used in an in-place operation; "
                "wrap it in lucid.no_grad() or use the out-of-place form");
    if (dst.impl()->is_view) {
      Tensor base(dst.impl()->view_base);
      LUCID_CHECK(!(base.is_leaf() && base.requires_grad()), Error, def.api_name,
                  "_: a view of a leaf tensor that requires grad is being used in an in-place operation; "
                  "wrap it in lucid.no_grad() or clone the tensor first");
      LUCID_CHECK(base.is_contiguous(), NotImplementedError, def.api_name,
                  "_: in-place operation with autograd on a view of a non-contiguous tensor is not supported");
    }
  }
  std::vector<TensorMeta> metas = def.infer(inputs, attrs);
  LUCID_CHECK(metas.size() == 1, Error, def.api_name, "_: only single-output ops have an in-place form");
  LUCID_CHECK(metas[0].shape == dst.shape(), ValueError, def.api_name, "_: output with shape ", shape_str(dst.shape()),
              " doesn't match the broadcast shape ", shape_str(metas[0].shape));
  LUCID_CHECK(can_cast(metas[0].dtype, dst.dtype()), TypeError, def.api_name, "_: result type ",
              dtype_name(metas[0].dtype), " can't be cast to the desired output type ", dtype_name(dst.dtype()));

  Tensor op_result;  // recorded: the out-of-place result its autograd node may save
  if (record) {
    // Out of place on a snapshot of dst (when the VJP needs saved inputs), then copy back and
    // rebase dst's history onto the new node.
    TensorList ins = inputs;
    if (def.save & kSaveInputs)
      for (size_t i = 0; i < ins.size(); ++i) {
        Tensor& t = ins[i];
        bool unsaved = std::find(def.unsaved_inputs.begin(), def.unsaved_inputs.end(), static_cast<int>(i)) !=
                       def.unsaved_inputs.end();
        if (t.defined() && !unsaved && t.same_storage(dst)) t = dispatch1(OpId::Copy, {t}, {{"dtype", t.dtype()}});
      }
    Tensor r;
    {
      TraceHook* h = tl_trace_hook;
      tl_trace_hook = nullptr;  // the trace sees one in-place op, not its parts
      r = op_result = dispatch1(id, ins, attrs);
      if (r.dtype() != dst.dtype()) r = dispatch1(OpId::Copy, {r}, {{"dtype", dst.dtype()}});
      tl_trace_hook = h;
    }
    if (dst.impl()->is_view) {
      // Write through the view: the base becomes as_strided_scatter(base, r) (PyTorch's
      // CopySlices), and the view's history becomes a view of the new base.
      Tensor base(dst.impl()->view_base);
      int64_t off = dst.offset() - base.offset();
      Tensor base_new, view_new;
      {
        TraceHook* h = tl_trace_hook;
        tl_trace_hook = nullptr;
        base_new = as_strided_scatter(base, r, dst.shape(), dst.strides(), off);
        copy_values(dst, r);
        dst.bump_version();
        AutogradMeta& bm = base.impl()->meta();
        bm.requires_grad = true;
        bm.grad_fn = base_new.grad_fn();
        bm.output_nr = 0;
        view_new = as_strided(base, dst.shape(), dst.strides(), off);
        tl_trace_hook = h;
      }
      AutogradMeta& m = dst.impl()->meta();
      m.requires_grad = true;
      m.grad_fn = view_new.grad_fn();
      m.output_nr = 0;
    } else {
      copy_values(dst, r);
      dst.bump_version();
      if (dst.requires_grad() && !reads_dst(def, inputs, dst)) {
        overwrite_history(def, dst, r);
      } else {
        AutogradMeta& m = dst.impl()->meta();
        m.requires_grad = true;
        m.grad_fn = r.grad_fn();
        m.output_nr = r.impl()->autograd ? r.impl()->autograd->output_nr : 0;
        // The node saved its out-of-place result; as PyTorch's, it saves dst itself (at its new
        // version), so a later in-place write to dst (relu_ then add_) raises at backward.
        Node* n = r.grad_fn().get();
        if (n && r.dtype() == dst.dtype() && m.output_nr < n->saved_outputs.size() &&
            n->saved_outputs[m.output_nr].data.defined())
          n->saved_outputs[m.output_nr] = SavedTensor::save(dst, true);
      }
    }
  } else if (metas[0].dtype == dst.dtype()) {
    TensorList moved;
    kernel_on(def, dev)(device_inputs(def, dev, inputs, moved), {dst}, attrs);
    dst.bump_version();
  } else {
    Tensor r = Tensor::empty(metas[0].shape, metas[0].dtype, dev);
    TensorList moved;
    kernel_on(def, dev)(device_inputs(def, dev, inputs, moved), {r}, attrs);
    copy_values(dst, r);
    dst.bump_version();
  }
  if (TraceHook* h = tl_trace_hook) h->on_inplace(id, {dst}, in_args, attrs, op_result);
  return dst;
}

void dispatch_inplace_many(OpId id, const TensorList& dsts, const TensorList& in_args, const Attrs& attrs) {
  const OpDef& def = checked_def(id, attrs);
  LUCID_CHECK(!def.view && !def.differentiable && !dsts.empty(), Error, def.name,
              ": only a non-differentiable op writes several destinations");
  const Device dev = op_device(def, in_args, &dsts[0]);
  TensorList copies;
  const TensorList* inputs = &in_args;
  for (size_t k = 0; k < dsts.size(); ++k) {
    const Tensor& d = dsts[k];
    LUCID_CHECK(!(GradMode::is_enabled() && d.requires_grad()), Error, def.api_name,
                "_: a destination that requires grad cannot be written by an op without a gradient");
    LUCID_CHECK(d.device() == dev, ValueError, def.api_name, "_: expected every destination on ", dev.str(), ", got ",
                d.device().str());
    inputs = &overlap_checked_inputs(id, def, d, *inputs, copies, k);
  }
  std::vector<TensorMeta> metas = def.infer(*inputs, attrs);
  LUCID_CHECK(metas.size() == dsts.size(), Error, def.api_name, "_: ", metas.size(), " results for ", dsts.size(),
              " destinations");
  for (size_t k = 0; k < dsts.size(); ++k)
    LUCID_CHECK(metas[k].shape == dsts[k].shape() && metas[k].dtype == dsts[k].dtype(), ValueError, def.api_name,
                "_: result ", k, " (", dtype_name(metas[k].dtype), " ", shape_str(metas[k].shape),
                ") doesn't match its destination (", dtype_name(dsts[k].dtype()), " ", shape_str(dsts[k].shape()), ")");
  TensorList moved;
  kernel_on(def, dev)(device_inputs(def, dev, *inputs, moved), dsts, attrs);
  for (const Tensor& d : dsts) d.bump_version();
  if (TraceHook* h = tl_trace_hook) h->on_inplace(id, dsts, in_args, attrs, Tensor());
}

}  // namespace lucid
