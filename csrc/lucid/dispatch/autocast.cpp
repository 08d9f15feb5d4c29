// Autocast: the per-thread state, torch's op lists mapped onto lucid's ops, the input casts and
// the eager weight-cast cache. See autocast.h for the semantics.
//
// The lists follow torch/csrc/autocast_mode.cpp (torch 2.x), restricted to the ops lucid has as
// dispatched ops; composites (F.normalize, torch.dist...) reach these ops and inherit their
// policy. torch's CPU list keeps softmax and the norms in the autocast dtype (its CPU kernels
// take bfloat16 with float32 parameters); its CUDA list runs them in float32.
#include "lucid/dispatch/autocast.h"

#include <memory>
#include <unordered_map>
#include <vector>

#include "lucid/compile/trace/trace_hook.h"
#include "lucid/autograd/grad_mode.h"
#include "lucid/dispatch/dispatch.h"

namespace lucid {

namespace {

struct AutocastState {
  bool enabled[2] = {false, false};                    // indexed by idx(DeviceType): CPU, CUDA
  DType dtype[2] = {DType::BFloat16, DType::Float16};  // torch's defaults
  bool cache_enabled = true;
};

thread_local AutocastState tl_state;
thread_local int tl_nesting = 0;

int idx(DeviceType t) { return t == DeviceType::CPU ? 0 : 1; }

enum Policy : int { kNone = 0, kLower = 1, kFp32 = 2, kPromote = 3, kBanned = 4 };

bool is_linalg(OpId id) {
  switch (id) {
    case OpId::LinalgSolve: case OpId::LinalgSolveTriangular: case OpId::LinalgInv: case OpId::LinalgDet:
    case OpId::LinalgSlogdet: case OpId::LinalgCholesky: case OpId::LinalgQr: case OpId::LinalgSvd:
    case OpId::LinalgEigh: case OpId::LinalgLstsq:
      return true;
    default:
      return false;
  }
}

bool is_loss(OpId id) {  // in both lists (binary_cross_entropy: CPU only, banned on CUDA)
  switch (id) {
    case OpId::MseLoss: case OpId::L1Loss: case OpId::SmoothL1Loss: case OpId::HuberLoss:
    case OpId::BinaryCrossEntropyWithLogits: case OpId::NllLoss: case OpId::CrossEntropy: case OpId::KlDiv:
      return true;
    default:
      return false;
  }
}

// A cached cast: of a leaf float32 tensor that requires grad, to `dtype`, made with or without
// grad mode; valid while its source's storage, data pointer and version are unchanged.
struct CacheKey {
  const TensorImpl* src;
  DType dtype;
  bool grad;
  bool operator==(const CacheKey& o) const { return src == o.src && dtype == o.dtype && grad == o.grad; }
};
struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const {
    return std::hash<const void*>()(k.src) ^ (static_cast<size_t>(k.dtype) << 1) ^ static_cast<size_t>(k.grad);
  }
};
struct CacheEntry {
  std::weak_ptr<TensorImpl> src;
  const void* storage;
  const void* data;
  uint32_t version;
  Tensor cast;
};
thread_local std::unordered_map<CacheKey, CacheEntry, CacheKeyHash> tl_cache;

bool cacheable(const Tensor& t, DType to) {
  // torch's can_try_cache; not while tracing, so that a trace records the cast as an op.
  return tl_state.cache_enabled && t.dtype() == DType::Float32 && t.requires_grad() && t.is_leaf() &&
         !t.impl()->is_view && current_trace_hook() == nullptr && (to == DType::BFloat16 || to == DType::Float16);
}

Tensor cast_to(const Tensor& t, DType to) {
  if (!cacheable(t, to)) return dispatch1(OpId::Copy, {t}, {{"dtype", to}});
  CacheKey k{t.impl(), to, GradMode::is_enabled()};
  auto it = tl_cache.find(k);
  if (it != tl_cache.end()) {
    const CacheEntry& e = it->second;
    if (!e.src.expired() && e.storage == t.impl()->storage.get() && e.data == t.data_ptr() && e.version == t.version())
      return e.cast;
    tl_cache.erase(it);
  }
  Tensor c = dispatch1(OpId::Copy, {t}, {{"dtype", to}});
  tl_cache.emplace(k, CacheEntry{t.impl_ptr(), t.impl()->storage.get(), t.data_ptr(), t.version(), c});
  return c;
}

bool eligible(const Tensor& t, DeviceType dev) {
  return t.defined() && is_floating(t.dtype()) && t.dtype() != DType::Float64 && !t.impl()->is_wrapped_number &&
         t.device().type == dev;
}

}  // namespace

bool autocast_enabled(DeviceType t) { return tl_state.enabled[idx(t)]; }
void set_autocast_enabled(DeviceType t, bool on) { tl_state.enabled[idx(t)] = on; }
DType autocast_dtype(DeviceType t) { return tl_state.dtype[idx(t)]; }
void set_autocast_dtype(DeviceType t, DType dt) {
  LUCID_CHECK(dt == DType::BFloat16 || dt == DType::Float16, ValueError, "autocast: dtype ", dtype_name(dt),
              " is not supported on ", t == DeviceType::CPU ? "cpu" : "cuda",
              "; autocast runs ops in a 16-bit float type: expected bfloat16 or float16");
  tl_state.dtype[idx(t)] = dt;
}
bool autocast_cache_enabled() { return tl_state.cache_enabled; }
void set_autocast_cache_enabled(bool on) { tl_state.cache_enabled = on; }
int autocast_increment_nesting() { return ++tl_nesting; }
int autocast_decrement_nesting() {
  if (tl_nesting > 0) --tl_nesting;
  if (tl_nesting == 0) clear_autocast_cache();
  return tl_nesting;
}
void clear_autocast_cache() { tl_cache.clear(); }
size_t autocast_cache_size() { return tl_cache.size(); }

bool autocast_any_enabled() { return tl_state.enabled[0] || tl_state.enabled[1]; }

uint64_t autocast_key() {
  uint64_t k = 0;
  for (int i = 0; i < 2; ++i)
    if (tl_state.enabled[i]) k |= (uint64_t{1} | (static_cast<uint64_t>(tl_state.dtype[i]) << 1)) << (16 * i);
  return k;
}

int autocast_policy(OpId id, const Attrs& attrs, DeviceType t) {
  const bool cuda = t == DeviceType::CUDA;
  switch (id) {
    case OpId::Matmul: case OpId::Addmm: case OpId::Linear: case OpId::Conv: case OpId::ConvTranspose:
    case OpId::ScaledDotProductAttention:
      return kLower;
    case OpId::Cat:
      return kPromote;
    // lucid's fused recurrences take one dtype; torch runs the CPU LSTM (mkldnn_rnn_layer) in
    // the autocast dtype, lucid in the widest of its inputs (float32 weights: float32).
    case OpId::LstmRecurrence: case OpId::GruRecurrence:
      return kPromote;
    case OpId::Prod:
      return kFp32;
    case OpId::BinaryCrossEntropy:
      return cuda ? kBanned : kFp32;
    case OpId::Pad: {  // reflection_pad and replication_pad (CPU list); constant and circular: none
      if (cuda) return kNone;
      const std::string& m = attrs.s("mode");
      return m == "reflect" || m == "replicate" ? kFp32 : kNone;
    }
    default:
      break;
  }
  if (is_linalg(id) || is_loss(id)) return kFp32;
  if (!cuda) return kNone;
  switch (id) {  // the CUDA list's further float32 ops
    case OpId::Acos: case OpId::Asin: case OpId::Cosh: case OpId::Erfinv: case OpId::Exp: case OpId::Expm1:
    case OpId::Log: case OpId::Log10: case OpId::Log2: case OpId::Log1p: case OpId::Reciprocal: case OpId::Rsqrt:
    case OpId::Sinh: case OpId::Tan: case OpId::Pow: case OpId::Softplus: case OpId::LayerNorm:
    case OpId::GroupNorm: case OpId::Softmax: case OpId::LogSoftmax: case OpId::Sum: case OpId::Cumsum:
    case OpId::Cumprod: case OpId::LogSumExp: case OpId::Interpolate:
      return kFp32;
    case OpId::Addcdiv: case OpId::Addcmul: case OpId::Atan2: case OpId::IndexPut: case OpId::ScatterAdd:
      return kPromote;
    default:
      return kNone;
  }
}

const TensorList& autocast_inputs(OpId id, const Attrs& attrs, DeviceType t, const TensorList& inputs,
                                  TensorList& cast) {
  const int p = autocast_policy(id, attrs, t);
  if (p == kNone) return inputs;
  LUCID_CHECK(p != kBanned, Error, op_def(id).api_name,
              ": unsafe to autocast. Many models use a sigmoid layer right before the binary cross entropy layer. "
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits or "
              "torch.nn.BCEWithLogitsLoss, which are safe to autocast.");
  DType to = p == kLower ? tl_state.dtype[idx(t)] : DType::Float32;
  if (p == kPromote) {
    bool any = false;
    for (const Tensor& x : inputs)
      if (eligible(x, t)) { to = any ? promote_types(to, x.dtype()) : x.dtype(); any = true; }
    if (!any) return inputs;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!eligible(x, t) || x.dtype() == to) continue;
    if (cast.empty()) cast = inputs;
    cast[i] = cast_to(x, to);
  }
  return cast.empty() ? inputs : cast;
}

AutocastOffGuard::AutocastOffGuard() : prev_{tl_state.enabled[0], tl_state.enabled[1]} {
  tl_state.enabled[0] = tl_state.enabled[1] = false;
}
AutocastOffGuard::~AutocastOffGuard() {
  tl_state.enabled[0] = prev_[0];
  tl_state.enabled[1] = prev_[1];
}

}  // namespace lucid
