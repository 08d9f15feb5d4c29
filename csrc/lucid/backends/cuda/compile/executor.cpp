// The CUDA backend's executor (compile/runtime/executor.h): runs a Program with the CUDA kernels
// on the calling thread's current stream of the program's device, over a statically planned
// arena from the CUDA caching allocator, and replays it as a CUDA graph where it can. Everything
// device-neutral (frames per concurrent call, static views, host scalars, fresh outputs, assigns
// into bound state, random ops' seed and offset, the state cache) is
// compile/runtime/frame_executor.h's, shared with every backend; what is the GPU's is here.
//
// Streams: the program's device is made current for the call (DeviceGuard), and every kernel,
// arena and fresh output is ordered on its current stream. A frame is reused in stream order: each
// call records an event on its stream when done with the frame, and a later call on another
// stream waits for it before touching the frame (the last call's kernels may still be running);
// the arena is marked as used on that stream (record_stream), so freeing the frame never hands
// the block out early. The state cache's values are computed on the stream of the call that
// filled it; calls on other streams read them unordered (the cache is for one stream at a time).
//
// Fused elementwise groups run as generated kernels (fused_kernels.h): the program's groups are
// one NVRTC program, compiled (or read from the cubin caches) when the executor is built, and
// their launches are captured into the graph like any kernel; fused_kernels() reports how many
// groups became kernels and why any runs op by op.
//
// CUDA graphs. Each frame is an executable instance with its own graph (so threads calling one
// compiled model at once each replay their own). A frame's first call runs the instruction list
// (the warm-up: lazy library handles, plans, cached blocks); its second captures the list into a
// CUDA graph on a stream of the frame's own (cudaStreamBeginCapture; the legacy default stream
// cannot be captured) and every call from then on replays it with one cudaGraphLaunch on the
// caller's stream:
//   - inputs are copied into the instance's fixed input buffers before the launch;
//   - every value and kernel temporary allocated during the capture is kept by the instance's
//     GraphPool (graph_capture.h) for the graph's lifetime, so the addresses it replays stay its own;
//   - outputs held in the instance's memory are copied into fresh tensors after the launch, never
//     overwritten by the next replay; outputs that are bound tensors or arguments are those
//     tensors, and the final assigns and version bumps run after each launch, as without a graph;
//   - bound tensors (and state-cache values) are read at their captured addresses: a call whose
//     bound tensors moved, or whose in-place writes into targets are decided differently
//     (Program::writable_targets), drops the graph and captures again.
//   - random ops read their Philox seed and the call's offset from the instance's device state
//     (graph_capture.h's GraphPhilox), written before each launch with the call's reserved draws:
//     every replay draws fresh numbers, the ones eager draws for the same seed.
// What cannot be captured runs without a graph, for the executable's lifetime, with the reason
// recorded (graph_fallback): programs with host scalars other than constants
// (hyper-parameters and step counters are read by kernels at launch), programs writing in place
// into an argument, an output that is a view of an argument, the cudaMallocAsync allocator, and
// any kernel that talks to the host during the capture (an index check's copy back, a deferred
// check, a synchronisation): its error ends the capture and is the reason. LUCID_CUDA_GRAPHS=0
// turns graphs off.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "lucid/backends/cuda/compile/fused_kernels.h"
#include "lucid/backends/cuda/cuda_allocator.h"
#include "lucid/backends/cuda/graph_capture.h"
#include "lucid/backends/cuda/stream.h"
#include "lucid/compile/runtime/frame_executor.h"
#include "lucid/dispatch/dispatch.h"

namespace lucid::cuda {

namespace {

using ir::ValueKind;

// dst = src (same shape and dtype) on stream s: one cudaMemcpyAsync when both are contiguous.
void copy_on(const Tensor& dst, const Tensor& src, cudaStream_t s) {
  if (dst.is_contiguous() && src.is_contiguous()) {
    const size_t n = static_cast<size_t>(src.numel()) * itemsize(src.dtype());
    if (n) check_cuda(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), n, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
    return;
  }
  copy_values(dst, src);
}

// A frame's captured graph and the memory it replays.
struct GraphInstance {
  ~GraphInstance() {
    if (exec) cudaGraphExecDestroy(exec);
  }
  GraphPool pool;                     // declared first: released last, after the graph
  cudaGraphExec_t exec = nullptr;
  TensorList inputs;                  // the fixed input buffers
  Tensor philox;                      // int64 {seed, base offset} of the replayed call (random programs)
  std::vector<Tensor> slots;          // every value as captured
  std::vector<const void*> external;  // per CudaExecutor::external_ids_: its address at capture
  std::vector<char> into_ok;          // the in-place target decisions captured
  std::vector<int> copied;            // value ids of outputs held in the instance's memory
};

class CudaExecutor final : public rt::FrameExecutor {
 public:
  explicit CudaExecutor(std::shared_ptr<const rt::Program> program) : CudaExecutor(program, fused_runner(*program)) {}

  TensorList run(const TensorList& inputs, const TensorList& states) const override {
    DeviceGuard guard(device());
    return FrameExecutor::run(inputs, states);
  }
  uint64_t graph_replays() const override { return replays_.load(std::memory_order_relaxed); }
  std::string graph_fallback() const override {
    std::lock_guard<std::mutex> lk(reason_mu_);
    return reason_;
  }
  rt::FusedKernelStats fused_kernels() const override { return fused_stats_; }

 private:
  CudaExecutor(std::shared_ptr<const rt::Program> program, rt::FusedRunner fused);

  struct CudaFrame : Frame {
    ~CudaFrame() override {
      if (done) {
        cudaEventSynchronize(done);  // the graph's last replay and the frame's last call are over
        cudaEventDestroy(done);
      }
      graph.reset();
      if (capture_stream) cudaStreamDestroy(capture_stream);
    }
    bool used = false;
    cudaStream_t alloc_stream = nullptr;  // the stream its arena was allocated on
    cudaStream_t stream = nullptr;        // the stream of its last call
    cudaEvent_t done = nullptr;           // recorded on `stream` at the end of that call
    bool warmed = false;                  // ran the instruction list once
    cudaStream_t capture_stream = nullptr;
    std::unique_ptr<GraphInstance> graph;
  };

  std::unique_ptr<Frame> new_frame() const override { return std::make_unique<CudaFrame>(); }
  void frame_acquired(Frame& frame) const override;
  void frame_released(Frame& frame) const override;
  void execute(Frame& frame, const Call& c) const override;

  bool graphs_on() const { return !off_.load(std::memory_order_acquire); }
  void give_up(const std::string& why) const;
  bool matches(const CudaFrame& f, const GraphInstance& g, const Call& c) const;
  std::unique_ptr<GraphInstance> capture(CudaFrame& f, const Call& c) const;
  void replay(CudaFrame& f, const GraphInstance& g, const Call& c) const;

  const rt::FusedKernelStats fused_stats_;
  const ir::Graph& graph_;
  std::vector<int> external_ids_;  // states and state-cache values: read by the graph at their captured address
  std::vector<int> read_after_;    // value ids the final assigns and the outputs read after the launch
  mutable std::atomic<bool> off_{false};
  mutable std::mutex reason_mu_;
  mutable std::string reason_;
  mutable std::atomic<uint64_t> replays_{0};
};

CudaExecutor::CudaExecutor(std::shared_ptr<const rt::Program> program, rt::FusedRunner fused)
    : FrameExecutor(std::move(program), fused), fused_stats_(fused_kernel_stats(fused)), graph_(this->program()->graph()) {
  const rt::Program& p = *this->program();
  std::string why;
  const char* env = std::getenv("LUCID_CUDA_GRAPHS");
  if (env && std::strcmp(env, "0") == 0) why = "CUDA graphs are turned off (LUCID_CUDA_GRAPHS=0)";
  else if (std::strcmp(allocator_backend(), "native") != 0)
    why = "CUDA graphs need the native caching allocator (LUCID_CUDA_ALLOCATOR=cudaMallocAsync is set)";
  for (const ir::Value& v : graph_.values())
    if (why.empty() && v.kind != ValueKind::Const && v.device.is_cpu())
      why = "the program reads host scalars (hyper-parameters, step counters) that kernels take at launch";
  for (int t : p.targets())
    if (why.empty() && graph_.value(t).kind == ValueKind::Input)
      why = "the program writes in place into an argument (the graph would write into its own input buffer)";
  if (!why.empty()) give_up(why);
  external_ids_ = graph_.states();
  external_ids_.insert(external_ids_.end(), p.cache_values().begin(), p.cache_values().end());
  std::vector<char> seen(graph_.values().size(), 0);
  auto read = [&](int id) {
    const ValueKind k = graph_.value(id).kind;
    if (!seen[id] && k != ValueKind::Input && k != ValueKind::State) read_after_.push_back(id);
    seen[id] = 1;
  };
  for (const ir::Assign& a : p.final_assigns()) read(a.value);
  for (int id : graph_.outputs()) read(id);
}

void CudaExecutor::give_up(const std::string& why) const {
  std::lock_guard<std::mutex> lk(reason_mu_);
  if (reason_.empty()) reason_ = why;
  off_.store(true, std::memory_order_release);
}

void CudaExecutor::frame_acquired(Frame& frame) const {
  auto& f = static_cast<CudaFrame&>(frame);
  cudaStream_t s = current_stream(device());
  if (!f.used) {
    f.alloc_stream = s;
  } else if (f.stream != s) {
    check_cuda(cudaStreamWaitEvent(s, f.done, 0), "lucid.compile: cudaStreamWaitEvent (frame reuse)");
  }
}

void CudaExecutor::frame_released(Frame& frame) const {
  auto& f = static_cast<CudaFrame&>(frame);
  cudaStream_t s = current_stream(device());
  if (!f.done) check_cuda(cudaEventCreateWithFlags(&f.done, cudaEventDisableTiming), "lucid.compile: cudaEventCreate");
  check_cuda(cudaEventRecord(f.done, s), "lucid.compile: cudaEventRecord (frame release)");
  if (s != f.alloc_stream && f.arena)
    record_stream(f.arena->data, static_cast<int>(device().index), reinterpret_cast<uintptr_t>(s));
  f.stream = s;
  f.used = true;
}

void CudaExecutor::execute(Frame& frame, const Call& c) const {
  auto& f = static_cast<CudaFrame&>(frame);
  if (!graphs_on() || !f.warmed) {
    FrameExecutor::execute(f, c);
    f.warmed = true;
    return;
  }
  // Bound tensors moved: capture again. Dropping the old instance while its last replay may still
  // run is safe: its blocks return to the frame's own capture stream, reused only by this frame's
  // next capture, whose replays are ordered after that one (frame_acquired), and an executable
  // graph destroyed in flight is freed when it completes.
  if (f.graph && !matches(f, *f.graph, c)) f.graph.reset();
  if (!f.graph) f.graph = capture(f, c);
  if (f.graph) replay(f, *f.graph, c);
  else FrameExecutor::execute(f, c);
}

bool CudaExecutor::matches(const CudaFrame& f, const GraphInstance& g, const Call& c) const {
  if (g.into_ok != c.into_ok) return false;
  for (size_t i = 0; i < external_ids_.size(); ++i)
    if (f.slots[external_ids_[i]].data_ptr() != g.external[i]) return false;
  return true;
}

// Captures the instruction list into a graph of the frame; null (with the reason recorded) when
// it cannot be captured.
std::unique_ptr<GraphInstance> CudaExecutor::capture(CudaFrame& f, const Call& c) const {
  auto g = std::make_unique<GraphInstance>();
  const std::vector<int>& in_ids = graph_.inputs();
  for (size_t i = 0; i < in_ids.size(); ++i) {
    const Tensor& t = c.inputs[i];
    g->inputs.push_back(Tensor::empty(t.shape(), t.dtype(), device()));
    f.slots[in_ids[i]] = g->inputs.back();
  }
  for (int id : external_ids_) g->external.push_back(f.slots[id].data_ptr());
  g->into_ok = c.into_ok;
  if (!f.capture_stream)
    check_cuda(cudaStreamCreateWithFlags(&f.capture_stream, cudaStreamNonBlocking), "lucid.compile: cudaStreamCreate");
  const int index = static_cast<int>(device().index);
  cudaStream_t caller = set_current_stream(index, f.capture_stream);
  std::string why;
  cudaGraph_t captured = nullptr;
  const bool random = graph_.rng_draws() > 0;
  if (random) g->philox = Tensor::empty({2}, DType::Int64, device());
  {
    GraphPoolScope keep(&g->pool);
    GraphPhiloxScope draws({random ? static_cast<const uint64_t*>(g->philox.data_ptr()) : nullptr, c.rng_base});
    cudaError_t st = cudaStreamBeginCapture(f.capture_stream, cudaStreamCaptureModeThreadLocal);
    if (st != cudaSuccess) {
      why = str("cudaStreamBeginCapture: ", cudaGetErrorString(st));
    } else {
      try {
        FrameExecutor::execute(f, c);
      } catch (const std::exception& e) {
        why = e.what();
      }
      st = cudaStreamEndCapture(f.capture_stream, &captured);
      if (why.empty() && st != cudaSuccess) why = str("cudaStreamEndCapture: ", cudaGetErrorString(st));
    }
  }
  set_current_stream(index, caller);
  if (why.empty()) {
    cudaError_t st = cudaGraphInstantiate(&g->exec, captured, 0);
    if (st != cudaSuccess) why = str("cudaGraphInstantiate: ", cudaGetErrorString(st));
  }
  if (captured) cudaGraphDestroy(captured);
  cudaGetLastError();  // a failed capture's error is not sticky; clear it
  for (size_t i = 0; i < in_ids.size(); ++i) f.slots[in_ids[i]] = c.inputs[i];
  if (!why.empty()) {
    give_up(str("capturing a CUDA graph failed: ", why));
    return nullptr;
  }
  g->slots = f.slots;
  for (size_t i = 0; i < in_ids.size(); ++i) g->slots[in_ids[i]] = g->inputs[i];
  // Outputs in the instance's memory (neither a bound tensor, a state-cache value nor a constant)
  // are copied out per call; one that is a view of an input buffer would alias it.
  std::vector<const Storage*> external;
  for (int id : external_ids_) external.push_back(g->slots[id].impl()->storage.get());
  for (int id : graph_.consts()) external.push_back(g->slots[id].impl()->storage.get());
  for (int id : graph_.outputs()) {
    const ValueKind k = graph_.value(id).kind;
    if (k == ValueKind::Input || k == ValueKind::State) continue;
    const Storage* st = g->slots[id].impl()->storage.get();
    for (const Tensor& in : g->inputs)
      if (in.impl()->storage.get() == st) {
        give_up("an output is a view of an argument (a replay would return the graph's input buffer)");
        return nullptr;
      }
    if (std::find(external.begin(), external.end(), st) == external.end()) g->copied.push_back(id);
  }
  return g;
}

void CudaExecutor::replay(CudaFrame& f, const GraphInstance& g, const Call& c) const {
  cudaStream_t s = current_stream(device());
  for (size_t i = 0; i < g.inputs.size(); ++i) copy_on(g.inputs[i], c.inputs[i], s);
  if (g.philox.defined()) write_graph_philox(static_cast<uint64_t*>(g.philox.data_ptr()), c.rng_seed, c.rng_base, s);
  check_cuda(cudaGraphLaunch(g.exec, s), "lucid.compile: cudaGraphLaunch");
  for (int id : read_after_) f.slots[id] = g.slots[id];
  for (int id : g.copied) {
    const Tensor& t = g.slots[id];
    Tensor fresh = Tensor::empty(t.shape(), t.dtype(), device());
    copy_on(fresh, t, s);
    f.slots[id] = std::move(fresh);
  }
  replays_.fetch_add(1, std::memory_order_relaxed);
}

std::unique_ptr<rt::Executor> make_cuda_executor(std::shared_ptr<const rt::Program> program) {
  return std::make_unique<CudaExecutor>(std::move(program));
}

}  // namespace

LUCID_REGISTER_EXECUTOR(CUDA, make_cuda_executor);

}  // namespace lucid::cuda
