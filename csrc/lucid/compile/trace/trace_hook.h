// The one place where dispatch talks to the tracer. A thread-local pointer: null when no trace
// is active, so eager dispatch pays one load and one branch. The compile tracer implements it.
#pragma once
#include "lucid/ops/op_def.h"

namespace lucid {

struct TraceHook {
  virtual ~TraceHook() = default;
  // An op ran out of place: outputs are fresh (or views for View ops).
  virtual void on_op(OpId id, const TensorList& inputs, const Attrs& attrs, const TensorList& outputs) = 0;
  // An op wrote its results into `dsts`, one per output (in-place form, optimizer update, buffer
  // update; several destinations: BatchNorm's running mean and variance). When autograd recorded
  // it (one destination only), `result` is the op's out-of-place result (before any cast to dst's
  // dtype), computed untraced: the op's node may save it, so it must read the traced value.
  virtual void on_inplace(OpId id, const TensorList& dsts, const TensorList& inputs, const Attrs& attrs,
                          const Tensor& result) = 0;
  // A traced tensor's value was read on the host (item, bool, tolist, numpy).
  virtual void on_host_read(const Tensor& t, const char* what) = 0;
  // Python code the executable won't run again ran inside the traced computation (a tensor
  // hook during the traced backward): `what` says which.
  virtual void on_untraced_callback(const std::string& what) = 0;
};

TraceHook* current_trace_hook();
void set_trace_hook(TraceHook* hook);  // thread-local

}  // namespace lucid
