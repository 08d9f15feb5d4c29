// How the nn and loss ops view their operands and decode their attributes, shared by the op
// records (infer, VJP, C++ API) and the backend kernels, so every backend reads an op the same
// way: the [P, Q, S] view of the four norms, the (N, C, D) rows of the class losses, the modes of
// interpolate, the kinds and reductions of the losses, and the class-index check. Device-neutral:
// shapes, enums and host checks, no backend code.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "lucid/core/dtype.h"
#include "lucid/core/error.h"
#include "lucid/core/shape.h"

namespace lucid::nnutil {

// ---- Norms ------------------------------------------------------------------------------------
// All four norms are one kernel over a [P, Q, S] view of the input: statistics are taken per
// q over (p, s), and the affine parameter of element (q, s) is w[(q % qmod) * qmul + s / sdiv]:
//   batch_norm  x (N, C, *):  P=N, Q=C,   S=spatial; param index q
//   layer_norm  x (*, K...):  P=1, Q=rows, S=K;      param index s
//   group_norm  x (N, C, *):  P=1, Q=N*G, S=C/G*HW;  param index (q % G) * C/G + s / HW
//   rms_norm    like layer_norm, not centered (mean output is zero)
struct NormLayout {
  int64_t P = 1, Q = 1, S = 1;
  int64_t qmod = 1, qmul = 0, sdiv = 1;
  int64_t W = 0;  // number of affine parameters
  bool centered = true;
  int64_t idx(int64_t q, int64_t s) const { return (q % qmod) * qmul + s / sdiv; }
};

enum NormKind : int64_t { kBatch = 0, kLayer = 1, kGroup = 2, kRms = 3 };
inline const char* norm_name(int64_t k) {
  static const char* n[] = {"batch_norm", "layer_norm", "group_norm", "rms_norm"};
  return n[k];
}

// Dtype of statistics (mean, rstd) saved by norm ops: float64 stays, everything else float32.
inline DType stat_dtype(DType x) { return x == DType::Float64 ? DType::Float64 : DType::Float32; }

// k: normalized ndim (layer/rms) or number of groups (group).
inline NormLayout make_norm_layout(int64_t kind, const Shape& s, int64_t k) {
  NormLayout L;
  int64_t nd = static_cast<int64_t>(s.size());
  if (kind == kBatch) {
    L.P = s[0];
    L.Q = s[1];
    L.S = 1;
    for (int64_t i = 2; i < nd; ++i) L.S *= s[i];
    L.qmod = L.Q;
    L.qmul = 1;
    L.sdiv = std::max<int64_t>(L.S, 1);
    L.W = L.Q;
  } else if (kind == kGroup) {
    int64_t hw = 1;
    for (int64_t i = 2; i < nd; ++i) hw *= s[i];
    int64_t cpg = s[1] / k;
    L.Q = s[0] * k;
    L.S = cpg * hw;
    L.qmod = k;
    L.qmul = cpg;
    L.sdiv = std::max<int64_t>(hw, 1);
    L.W = s[1];
  } else {
    L.Q = 1;
    for (int64_t i = 0; i < nd - k; ++i) L.Q *= s[i];
    L.S = 1;
    for (int64_t i = nd - k; i < nd; ++i) L.S *= s[i];
    L.qmod = 1;
    L.qmul = 0;
    L.sdiv = 1;
    L.W = L.S;
    L.centered = kind != kRms;
  }
  return L;
}

// ---- Class losses (nll_loss, cross_entropy) ----------------------------------------------------
// Input (N, C), (N, C, d1, ...) or (C,): N rows of C classes, each class read with stride D (the
// product of the trailing dims), so no transpose is needed.
struct ClassLayout {
  int64_t N = 1, C = 1, D = 1;
};

inline ClassLayout class_layout(const Shape& s) {
  ClassLayout L;
  if (s.size() == 1) {
    L.C = s[0];
    return L;
  }
  L.N = s[0];
  L.C = s[1];
  for (size_t i = 2; i < s.size(); ++i) L.D *= s[i];
  return L;
}

// Class-index targets of nll_loss / cross_entropy (host values, n of them): each is ignore or in
// [0, C); raises IndexError naming the op, the index and the number of classes.
inline void check_class_indices(const int64_t* p, int64_t n, int64_t C, int64_t ignore, const char* op) {
  for (int64_t i = 0; i < n; ++i)
    LUCID_CHECK(p[i] == ignore || (p[i] >= 0 && p[i] < C), IndexError, op, ": target index ", p[i],
                " is out of bounds for ", C, " classes (valid: 0..", C - 1, " or ignore_index=", ignore, ")");
}

// ---- Interpolate --------------------------------------------------------------------------------
enum InterpMode { kNearest, kNearestExact, kBilinear, kBicubic };

inline int parse_interp_mode(const std::string& m) {
  if (m == "nearest") return kNearest;
  if (m == "nearest-exact") return kNearestExact;
  if (m == "bilinear") return kBilinear;
  if (m == "bicubic") return kBicubic;
  throw NotImplementedError(str("interpolate: mode '", m, "' is not supported (supported: nearest, nearest-exact, bilinear, bicubic)"));
}

// ---- Loss reductions ---------------------------------------------------------------------------
// The `reduction` attribute of the losses, numbered like PyTorch's Reduction enum.
enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

inline int64_t parse_reduction(const std::string& s, const char* op) {
  if (s == "none") return kNone;
  if (s == "mean") return kMean;
  if (s == "sum") return kSum;
  throw ValueError(str(op, ": argument 'reduction' expected 'none', 'mean' or 'sum', got '", s, "'"));
}

inline Shape reduced_loss_shape(const Shape& s, int64_t reduction) { return reduction == kNone ? s : Shape{}; }

// ---- Pointwise losses ---------------------------------------------------------------------------
// The `kind` attribute of the pointwise losses' backward ops. kKlDiv reads its log_target flag
// from `beta` (1: the target holds log-probabilities).
enum PointwiseLoss : int64_t { kMse = 0, kL1 = 1, kSmoothL1 = 2, kHuber = 3, kBce = 4, kBceLogits = 5, kKlDiv = 6 };

inline const char* pointwise_loss_name(int64_t k) {
  static const char* n[] = {"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                            "binary_cross_entropy_with_logits", "kl_div"};
  return n[k];
}

}  // namespace lucid::nnutil
