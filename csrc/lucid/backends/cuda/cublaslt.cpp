// cuBLASLt handles, the per-thread plan cache and the GEMM call (see cublaslt.h).
#include "lucid/backends/cuda/cublaslt.h"

#include <cublasLt.h>

#include <array>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "lucid/backends/cuda/stream.h"
#include "lucid/core/tensor.h"
#include "lucid/ops/matmul_precision.h"

namespace lucid::cuda {

namespace {

void check_lt(cublasStatus_t s, const char* call) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw Error(str("cuBLASLt error in ", call, ": ", cublasLtGetStatusName(s), " (", cublasLtGetStatusString(s), ")"));
}

// The workspace an algorithm may ask for (torch's default on Hopper is also 32 MiB).
constexpr size_t kMaxWorkspace = size_t(32) << 20;
constexpr int kMaxDevices = 64;
constexpr size_t kMaxPlans = 1024;  // per thread; the cache is dropped whole when full

cublasLtHandle_t lt_handle(int device) {
  LUCID_CHECK(device >= 0 && device < kMaxDevices, IndexError, "cublasLt: device index ", device, " out of range");
  thread_local std::array<cublasLtHandle_t, kMaxDevices> seen{};  // this thread's copy: no lock per call
  if (seen[device]) return seen[device];
  static std::mutex mu;
  static std::array<cublasLtHandle_t, kMaxDevices> handles{};
  std::lock_guard<std::mutex> g(mu);
  if (!handles[device]) {
    DeviceGuard dg(device);
    cublasLtHandle_t h = nullptr;
    check_lt(cublasLtCreate(&h), "cublasLtCreate");
    handles[device] = h;  // lives as long as the process (as torch's handle pool)
  }
  return seen[device] = handles[device];
}

// Largest power of two (<= 256) dividing the address: the alignment the heuristic may assume.
uint32_t alignment(const void* p) {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && (v % a) != 0) a /= 2;
  return a;
}

struct PlanKey {
  int64_t m, n, k, batch, lda, ldb, ldd, sa, sb, sd;
  int32_t device;
  uint32_t align_a, align_b, align_d, align_bias;
  uint8_t dtype, epilogue;
  bool ta, tb, tf32, beta;
  bool operator==(const PlanKey& o) const {
    return m == o.m && n == o.n && k == o.k && batch == o.batch && lda == o.lda && ldb == o.ldb && ldd == o.ldd &&
           sa == o.sa && sb == o.sb && sd == o.sd && device == o.device && align_a == o.align_a &&
           align_b == o.align_b && align_d == o.align_d && align_bias == o.align_bias && dtype == o.dtype &&
           epilogue == o.epilogue && ta == o.ta && tb == o.tb && tf32 == o.tf32 && beta == o.beta;
  }
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    for (int64_t v : {k.m, k.n, k.k, k.batch, k.lda, k.ldb, k.ldd, k.sa, k.sb, k.sd}) mix(static_cast<uint64_t>(v));
    mix(static_cast<uint64_t>(k.device));
    mix((uint64_t(k.align_a) << 32) | k.align_b);
    mix((uint64_t(k.align_d) << 32) | k.align_bias);
    mix(uint64_t(k.dtype) | uint64_t(k.epilogue) << 8 | uint64_t(k.ta) << 16 | uint64_t(k.tb) << 17 |
        uint64_t(k.tf32) << 18 | uint64_t(k.beta) << 19);
    return static_cast<size_t>(h);
  }
};

struct DescDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { cublasLtMatrixLayoutDestroy(l); }
};

struct Plan {
  bool ok = false;  // false: no algorithm for this problem (cached too, so the heuristic runs once)
  std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter> desc;
  std::unique_ptr<cublasLtMatrixLayoutOpaque_t, DescDeleter> la, lb, ld;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  bool scale_f64 = false;  // alpha and beta as double (float64 GEMMs), else float
};

cudaDataType_t data_type(DType dt) {
  switch (dt) {
    case DType::Float32: return CUDA_R_32F;
    case DType::Float64: return CUDA_R_64F;
    case DType::Float16: return CUDA_R_16F;
    case DType::BFloat16: return CUDA_R_16BF;
    default: throw TypeError(str("cublasLt: dtype ", dtype_name(dt), " is not supported"));
  }
}

template <class T>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v, const char* what) {
  check_lt(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(v)), what);
}

std::unique_ptr<cublasLtMatrixLayoutOpaque_t, DescDeleter> make_layout(cudaDataType_t t, int64_t rows, int64_t cols,
                                                                       int64_t ld, int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  check_lt(cublasLtMatrixLayoutCreate(&l, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld),
           "cublasLtMatrixLayoutCreate");
  std::unique_ptr<cublasLtMatrixLayoutOpaque_t, DescDeleter> r(l);
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    check_lt(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
             "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
    check_lt(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
             "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  }
  return r;
}

std::unique_ptr<Plan> make_plan(const LtGemm& g, const PlanKey& key, cublasLtHandle_t h) {
  auto p = std::make_unique<Plan>();
  const cudaDataType_t t = data_type(g.dtype);
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  if (g.dtype == DType::Float64) {
    compute = CUBLAS_COMPUTE_64F;
    scale = CUDA_R_64F;
    p->scale_f64 = true;
  } else if (key.tf32) {
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  }
  cublasLtMatmulDesc_t d = nullptr;
  check_lt(cublasLtMatmulDescCreate(&d, compute, scale), "cublasLtMatmulDescCreate");
  p->desc.reset(d);
  cublasOperation_t opa = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, opb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_desc(d, CUBLASLT_MATMUL_DESC_TRANSA, opa, "cublasLtMatmulDescSetAttribute(TRANSA)");
  set_desc(d, CUBLASLT_MATMUL_DESC_TRANSB, opb, "cublasLtMatmulDescSetAttribute(TRANSB)");
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (g.epilogue == LtEpilogue::Bias) epi = CUBLASLT_EPILOGUE_BIAS;
  set_desc(d, CUBLASLT_MATMUL_DESC_EPILOGUE, epi, "cublasLtMatmulDescSetAttribute(EPILOGUE)");
  if (epi != CUBLASLT_EPILOGUE_DEFAULT) {
    set_desc(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, t, "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
    int64_t bias_batch_stride = 0;  // one bias vector for every matrix of the batch
    set_desc(d, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, bias_batch_stride,
             "cublasLtMatmulDescSetAttribute(BIAS_BATCH_STRIDE)");
  }
  p->la = g.trans_a ? make_layout(t, g.k, g.m, g.lda, g.batch, g.stride_a) : make_layout(t, g.m, g.k, g.lda, g.batch, g.stride_a);
  p->lb = g.trans_b ? make_layout(t, g.n, g.k, g.ldb, g.batch, g.stride_b) : make_layout(t, g.k, g.n, g.ldb, g.batch, g.stride_b);
  p->ld = make_layout(t, g.m, g.n, g.ldd, g.batch, g.stride_d);

  cublasLtMatmulPreference_t pref = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, decltype(&cublasLtMatmulPreferenceDestroy)> pref_guard(
      pref, &cublasLtMatmulPreferenceDestroy);
  auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t a, auto v) {
    check_lt(cublasLtMatmulPreferenceSetAttribute(pref, a, &v, sizeof(v)), "cublasLtMatmulPreferenceSetAttribute");
  };
  set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(kMaxWorkspace));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_a);
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_b);
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_d);
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_d);
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(h, d, p->la.get(), p->lb.get(), p->ld.get(), p->ld.get(), pref, 1,
                                                    &res, &found);
  // No algorithm (NOT_SUPPORTED; INVALID_VALUE for layouts no algorithm takes): ok = false.
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE ||
      (s == CUBLAS_STATUS_SUCCESS && (found == 0 || res.state != CUBLAS_STATUS_SUCCESS)))
    return p;
  check_lt(s, "cublasLtMatmulAlgoGetHeuristic");
  p->algo = res.algo;
  p->workspace = res.workspaceSize;
  p->ok = true;
  return p;
}

using PlanCache = std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash>;
PlanCache& plan_cache() {
  thread_local PlanCache c;
  return c;
}

}  // namespace

bool lt_supports(DType dt) {
  return dt == DType::Float32 || dt == DType::Float64 || dt == DType::Float16 || dt == DType::BFloat16;
}

bool lt_matmul(const LtGemm& g, const Device& device) {
  LUCID_CHECK(g.k >= 1 && g.m >= 1 && g.n >= 1 && g.batch >= 1, Error, "lt_matmul: empty problem");
  LUCID_CHECK(g.epilogue == LtEpilogue::None || g.bias, Error, "lt_matmul: a bias epilogue needs a bias");
  LUCID_CHECK(g.batch <= INT32_MAX, Error, "lt_matmul: batch of ", g.batch, " matrices is above cuBLASLt's limit");
  const int dev = device.index;
  const bool batched = g.batch > 1;
  PlanKey key{};
  key.m = g.m, key.n = g.n, key.k = g.k, key.batch = g.batch;
  key.lda = g.lda, key.ldb = g.ldb, key.ldd = g.ldd;
  key.sa = batched ? g.stride_a : 0, key.sb = batched ? g.stride_b : 0, key.sd = batched ? g.stride_d : 0;
  key.device = dev;
  key.align_a = alignment(g.a), key.align_b = alignment(g.b), key.align_d = alignment(g.d);
  key.align_bias = g.bias ? alignment(g.bias) : 0;
  key.dtype = static_cast<uint8_t>(g.dtype), key.epilogue = static_cast<uint8_t>(g.epilogue);
  key.ta = g.trans_a, key.tb = g.trans_b, key.beta = g.beta != 0.0;
  key.tf32 = g.dtype == DType::Float32 && float32_matmul_precision() != MatmulPrecision::Highest;
  cublasLtHandle_t h = lt_handle(dev);
  PlanCache& cache = plan_cache();
  auto it = cache.find(key);
  if (it == cache.end()) {
    if (cache.size() >= kMaxPlans) cache.clear();
    it = cache.emplace(key, make_plan(g, key, h)).first;
  }
  Plan& p = *it->second;
  if (!p.ok) return false;
  if (g.epilogue != LtEpilogue::None)
    set_desc(p.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  Tensor workspace;
  void* ws = nullptr;
  if (p.workspace > 0) {
    workspace = Tensor::empty({static_cast<int64_t>(p.workspace)}, DType::UInt8, device);
    ws = workspace.data_ptr();
  }
  const float alpha32 = static_cast<float>(g.alpha), beta32 = static_cast<float>(g.beta);
  const void* alpha = p.scale_f64 ? static_cast<const void*>(&g.alpha) : &alpha32;
  const void* beta = p.scale_f64 ? static_cast<const void*>(&g.beta) : &beta32;
  check_lt(cublasLtMatmul(h, p.desc.get(), alpha, g.a, p.la.get(), g.b, p.lb.get(), beta, g.d, p.ld.get(), g.d,
                          p.ld.get(), &p.algo, ws, p.workspace, current_stream(device)),
           "cublasLtMatmul");
  return true;
}

size_t lt_plan_cache_size() { return plan_cache().size(); }

}  // namespace lucid::cuda
