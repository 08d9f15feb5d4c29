// Cached single-node cudnn-frontend convolution graphs (cudnn_conv_graph.h).
#include "lucid/backends/cuda/cudnn_conv_graph.h"

#include <cudnn_frontend.h>

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "lucid/backends/cuda/cudnn_handle.h"
#include "lucid/backends/cudnn_flags.h"
#include "lucid/core/error.h"
#include "lucid/core/tensor.h"

namespace lucid::cuda {

namespace {

namespace fe = cudnn_frontend;

// Tensor uids in the graphs: one per role, whatever the direction.
constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;

// Everything a plan depends on, as one array of integers (hashed and compared as a whole).
constexpr size_t kKeyLen = 3 + 6 * 4 + 3 * 2 + 3 + 3;
using Key = std::array<int64_t, kKeyLen>;

struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
    for (int64_t v : k) {
      h ^= static_cast<uint64_t>(v);
      h *= 1099511628211ull;
    }
    return static_cast<size_t>(h);
  }
};

// The largest power of two (at most 16 bytes) dividing the address: cuDNN picks engines for the
// alignment a tensor declares, and the frontend refuses a pointer less aligned than declared.
int64_t alignment(const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  int64_t r = 16;
  while (r > 1 && a % static_cast<uintptr_t>(r) != 0) r /= 2;
  return r;
}

struct Flags {
  bool tf32, deterministic, benchmark;
};

Key make_key(const ConvCall& c, const Flags& f) {
  Key k{};
  size_t i = 0;
  k[i++] = static_cast<int64_t>(c.direction);
  k[i++] = static_cast<int64_t>(c.dtype);
  k[i++] = c.device.index;
  for (const auto* a : {&c.x_dim, &c.x_stride, &c.w_dim, &c.w_stride, &c.y_dim, &c.y_stride})
    for (int64_t v : *a) k[i++] = v;
  for (const auto* a : {&c.pad, &c.stride, &c.dilation})
    for (int64_t v : *a) k[i++] = v;
  k[i++] = alignment(c.x);
  k[i++] = alignment(c.w);
  k[i++] = alignment(c.y);
  k[i++] = f.tf32;
  k[i++] = f.deterministic;
  k[i++] = f.benchmark;
  return k;
}

struct Plan {
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t workspace = 0;
};

struct PlanCache {
  std::mutex mu;
  std::unordered_map<Key, std::shared_ptr<const Plan>, KeyHash> plans;
};

PlanCache& cache() {
  static PlanCache* c = new PlanCache;  // never destroyed: plans may be in use at exit
  return *c;
}

// Past this many geometries the cache starts over (a program with ever-changing shapes would
// otherwise grow it without bound); plans in use stay alive through their shared_ptr.
constexpr size_t kMaxPlans = 4096;

fe::DataType_t fe_dtype(DType t) {
  switch (t) {
    case DType::Float32: return fe::DataType_t::FLOAT;
    case DType::Float16: return fe::DataType_t::HALF;
    case DType::BFloat16: return fe::DataType_t::BFLOAT16;
    case DType::Float64: return fe::DataType_t::DOUBLE;
    default: break;
  }
  throw TypeError(str("cudnn convolution: unsupported dtype ", dtype_name(t)));
}

const char* direction_name(ConvDirection d) {
  switch (d) {
    case ConvDirection::Forward: return "forward";
    case ConvDirection::BackwardData: return "backward data";
    case ConvDirection::BackwardFilter: return "backward filter";
  }
  return "?";
}

std::string describe(const ConvCall& c, const Flags& f) {
  auto v = [](const auto& a) {
    std::string s = "[";
    for (size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + std::to_string(a[i]);
    return s + "]";
  };
  return str(direction_name(c.direction), " convolution, x ", v(c.x_dim), ", w ", v(c.w_dim), ", y ", v(c.y_dim),
             ", padding ", v(c.pad), ", stride ", v(c.stride), ", dilation ", v(c.dilation), ", ", dtype_name(c.dtype),
             " on ", c.device.str(), f.deterministic ? ", deterministic" : "", f.tf32 ? "" : ", allow_tf32=False");
}

// A failed frontend step: NotImplementedError when no engine takes the graph or cuDNN says
// CUDNN_STATUS_NOT_SUPPORTED (a configuration cuDNN does not support), lucid::Error otherwise.
void check_fe(fe::error_t status, const char* step, const ConvCall& c, const Flags& f) {
  if (status.is_good()) return;
  const auto code = status.get_code();
  const std::string msg = status.get_message();
  const std::string what = str(c.op, ": cuDNN ", step, " failed for the ", describe(c, f), ": ", msg);
  if (code == fe::error_code_t::GRAPH_NOT_SUPPORTED || code == fe::error_code_t::GRAPH_EXECUTION_PLAN_CREATION_FAILED ||
      code == fe::error_code_t::HEURISTIC_QUERY_FAILED || msg.find("NOT_SUPPORTED") != std::string::npos)
    throw NotImplementedError(what);
  throw Error(what);
}

std::vector<int64_t> vec(const std::array<int64_t, 4>& a) { return {a.begin(), a.end()}; }
std::vector<int64_t> vec2(const std::array<int64_t, 2>& a) { return {a.begin(), a.end()}; }

std::unordered_map<int64_t, void*> variant_pack(const ConvCall& c) {
  return {{kUidX, c.x}, {kUidW, c.w}, {kUidY, c.y}};
}

std::shared_ptr<const Plan> build(const ConvCall& c, const Flags& f, cudnnHandle_t handle) {
  const fe::DataType_t io = fe_dtype(c.dtype);
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(io).set_compute_data_type(c.dtype == DType::Float64 ? fe::DataType_t::DOUBLE
                                                                         : fe::DataType_t::FLOAT);
  auto attrs = [&](const char* name, int64_t uid, const std::array<int64_t, 4>& dim,
                   const std::array<int64_t, 4>& stride, const void* p) {
    return fe::graph::Tensor_attributes()
        .set_name(name)
        .set_uid(uid)
        .set_dim(vec(dim))
        .set_stride(vec(stride))
        .set_data_type(io)
        .set_alignment(alignment(p));
  };
  // The output tensor the node creates gets the same description as an input would.
  auto describe_output = [&](const std::shared_ptr<fe::graph::Tensor_attributes>& t, int64_t uid,
                             const std::array<int64_t, 4>& dim, const std::array<int64_t, 4>& stride, const void* p) {
    t->set_output(true).set_uid(uid).set_dim(vec(dim)).set_stride(vec(stride)).set_data_type(io).set_alignment(alignment(p));
  };
  switch (c.direction) {
    case ConvDirection::Forward: {
      auto X = g->tensor(attrs("x", kUidX, c.x_dim, c.x_stride, c.x));
      auto W = g->tensor(attrs("w", kUidW, c.w_dim, c.w_stride, c.w));
      auto Y = g->conv_fprop(X, W, fe::graph::Conv_fprop_attributes()
                                       .set_name("conv_fprop")
                                       .set_pre_padding(vec2(c.pad))
                                       .set_post_padding(vec2(c.pad))
                                       .set_stride(vec2(c.stride))
                                       .set_dilation(vec2(c.dilation)));
      describe_output(Y, kUidY, c.y_dim, c.y_stride, c.y);
      break;
    }
    case ConvDirection::BackwardData: {
      auto DY = g->tensor(attrs("dy", kUidY, c.y_dim, c.y_stride, c.y));
      auto W = g->tensor(attrs("w", kUidW, c.w_dim, c.w_stride, c.w));
      auto DX = g->conv_dgrad(DY, W, fe::graph::Conv_dgrad_attributes()
                                         .set_name("conv_dgrad")
                                         .set_pre_padding(vec2(c.pad))
                                         .set_post_padding(vec2(c.pad))
                                         .set_stride(vec2(c.stride))
                                         .set_dilation(vec2(c.dilation)));
      describe_output(DX, kUidX, c.x_dim, c.x_stride, c.x);
      break;
    }
    case ConvDirection::BackwardFilter: {
      auto DY = g->tensor(attrs("dy", kUidY, c.y_dim, c.y_stride, c.y));
      auto X = g->tensor(attrs("x", kUidX, c.x_dim, c.x_stride, c.x));
      auto DW = g->conv_wgrad(DY, X, fe::graph::Conv_wgrad_attributes()
                                         .set_name("conv_wgrad")
                                         .set_pre_padding(vec2(c.pad))
                                         .set_post_padding(vec2(c.pad))
                                         .set_stride(vec2(c.stride))
                                         .set_dilation(vec2(c.dilation)));
      describe_output(DW, kUidW, c.w_dim, c.w_stride, c.w);
      break;
    }
  }
  check_fe(g->validate(), "graph validation", c, f);
  check_fe(g->build_operation_graph(handle), "operation graph", c, f);
  check_fe(g->create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}), "heuristics", c, f);
  // PyTorch's engine filter (aten/src/ATen/native/cudnn/Conv_v8.cpp).
  std::vector<fe::NumericalNote_t> barred{fe::NumericalNote_t::DOWN_CONVERT_INPUTS};
  if (f.deterministic) barred.push_back(fe::NumericalNote_t::NONDETERMINISTIC);
  if (c.dtype == DType::Float32 && !f.tf32) barred.push_back(fe::NumericalNote_t::TENSOR_CORE);
  g->deselect_numeric_notes(barred);
  check_fe(g->check_support(handle), "support check", c, f);
  check_fe(g->build_plans(f.benchmark ? fe::BuildPlanPolicy_t::ALL : fe::BuildPlanPolicy_t::HEURISTICS_CHOICE),
           "plan build", c, f);
  if (f.benchmark) {
    const int64_t ws = g->get_autotune_workspace_size();
    Tensor scratch = ws > 0 ? Tensor::empty({ws}, DType::UInt8, c.device) : Tensor();
    auto pack = variant_pack(c);
    check_fe(g->autotune(handle, pack, ws > 0 ? scratch.data_ptr() : nullptr), "autotune", c, f);
  }
  auto plan = std::make_shared<Plan>();
  check_fe(g->get_workspace_size(plan->workspace), "workspace query", c, f);
  plan->graph = std::move(g);
  return plan;
}

}  // namespace

void run_cudnn_conv(const ConvCall& c) {
  const CudnnFlags& flags = cudnn_flags();
  const Flags f{flags.allow_tf32.load(std::memory_order_relaxed),
                flags.deterministic.load(std::memory_order_relaxed) ||
                    flags.deterministic_algorithms.load(std::memory_order_relaxed),
                flags.benchmark.load(std::memory_order_relaxed)};
  const Key key = make_key(c, f);
  cudnnHandle_t handle = cudnn_handle(c.device);
  std::shared_ptr<const Plan> plan;
  PlanCache& pc = cache();
  {
    std::lock_guard<std::mutex> lock(pc.mu);
    auto it = pc.plans.find(key);
    if (it != pc.plans.end()) plan = it->second;
  }
  if (!plan) {
    // Built outside the lock (building can take milliseconds); two threads racing on a new
    // geometry both build, and the first to insert wins.
    plan = build(c, f, handle);
    std::lock_guard<std::mutex> lock(pc.mu);
    if (pc.plans.size() >= kMaxPlans) pc.plans.clear();
    plan = pc.plans.emplace(key, plan).first->second;
  }
  Tensor workspace = plan->workspace > 0 ? Tensor::empty({plan->workspace}, DType::UInt8, c.device) : Tensor();
  auto pack = variant_pack(c);
  check_fe(plan->graph->execute(handle, pack, plan->workspace > 0 ? workspace.data_ptr() : nullptr), "execution", c, f);
}

}  // namespace lucid::cuda
