// Autocast: PyTorch's automatic mixed precision (torch.autocast), at the dispatch layer.
//
// While autocast is on for a device type, dispatch() consults autocast_inputs() before an op
// runs and casts its floating inputs by the op's policy, exactly as torch's autocast op lists do
// for that device type (the lists are in autocast.cpp):
//   - Lower: matmul, linear, conv, attention... run in the autocast dtype (bfloat16 on the CPU,
//     float16 on CUDA by default);
//   - Fp32: ops that lose too much in 16 bits (losses, linear algebra, and on CUDA also
//     softmax, norms, exp/log...) run in float32;
//   - Promote: ops that take several floating inputs (cat, addcmul...) run in the widest of them.
// Only floating tensors of that device type, other than float64 and wrapped Python numbers, are
// cast (torch's is_eligible). The casts are ordinary Copy ops, so autograd differentiates
// through them and a trace records them; a compiled graph then converts a weight once (the
// cast of a bound state is a state-computed value, cached by the CPU executor).
//
// Eager weight casts are cached like torch's: the cast of a leaf float32 tensor that requires
// grad (a parameter) is reused until the outermost autocast region ends; unlike torch, an entry
// is dropped when its tensor is written (version or storage change), so it is never stale, and
// one made without grad mode is never served with it (it has no autograd history).
//
// The backward pass runs with autocast off (autograd/engine.cpp): each VJP's ops take the
// dtypes its forward saw. The state is thread-local, like grad mode; compiled calls key on
// autocast_key(), so a trace made under one autocast state never serves another.
#pragma once
#include <cstdint>

#include "lucid/core/device.h"
#include "lucid/core/dtype.h"
#include "lucid/ops/op_def.h"

namespace lucid {

// This thread's state, per device type.
bool autocast_enabled(DeviceType t);
void set_autocast_enabled(DeviceType t, bool on);
DType autocast_dtype(DeviceType t);
void set_autocast_dtype(DeviceType t, DType dt);  // bfloat16 or float16, else ValueError
bool autocast_cache_enabled();
void set_autocast_cache_enabled(bool on);
int autocast_increment_nesting();
int autocast_decrement_nesting();  // the weight-cast cache is cleared when it reaches 0
void clear_autocast_cache();
size_t autocast_cache_size();  // entries held (tests)

// 0 while autocast is off on every device type; otherwise a value that differs per enabled
// device type and dtype (for compiled-call keys).
uint64_t autocast_key();
// Fast check for dispatch: whether any device type has autocast on.
bool autocast_any_enabled();

// The policy of an op under autocast, by torch's lists for the device type: 0 none, 1 lower,
// 2 fp32, 3 promote. Exposed for the tests, which hold it to the lists.
int autocast_policy(OpId id, const Attrs& attrs, DeviceType t);

// The inputs an op runs with under autocast on device type `t`: `inputs` itself when nothing is
// cast, else `cast` filled with the cast copies.
const TensorList& autocast_inputs(OpId id, const Attrs& attrs, DeviceType t, const TensorList& inputs,
                                  TensorList& cast);

// Turns autocast off for a scope (the backward pass); restores the previous state.
struct AutocastOffGuard {
  AutocastOffGuard();
  ~AutocastOffGuard();
  AutocastOffGuard(const AutocastOffGuard&) = delete;
  AutocastOffGuard& operator=(const AutocastOffGuard&) = delete;

 private:
  bool prev_[2];
};

}  // namespace lucid
