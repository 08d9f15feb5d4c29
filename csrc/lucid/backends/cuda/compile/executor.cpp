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
//   - inputs are copied into the instance's fixed input buffers before the launch (small ones in
//     one kernel launch with the per-call words below, graph_capture.h's copy_for_replay);
//   - every value and kernel temporary allocated during the capture is kept by the instance's
//     GraphPool (graph_capture.h) for the graph's lifetime, so the addresses it replays stay its own;
//   - outputs held in the instance's memory are copied into fresh tensors after the launch (in one
//     launch where small), never
//     overwritten by the next replay; outputs that are bound tensors or arguments are those
//     tensors, and the final assigns and version bumps run after each launch, as without a graph;
//   - bound tensors (and state-cache values) are read at their captured addresses: a call whose
//     bound tensors moved, or whose in-place writes into targets are decided differently
//     (Program::writable_targets), drops the graph and captures again.
//   - random ops read their Philox seed and the call's offset from the instance's device words
//     (graph_capture.h's GraphPhilox), written before each launch with the call's reserved draws:
//     every replay draws fresh numbers, the ones eager draws for the same seed.
//   - host scalars that change per call (hyper-parameter inputs, an optimizer's step counter, the
//     CPU ops computing over only such values: bias corrections, step sizes) stay on the host. A
//     replay first runs the program's host instructions (the prelude, on the CPU as without a
//     graph), then writes the value of every host scalar the graph's kernels read, converted to
//     the dtype each kernel reads it in, into the instance's device words with the launch that
//     copies the inputs, taking them as arguments (graph_capture.h's copy_for_replay, together
//     with the Philox words), then launches the graph. While capturing, kernels ask for those addresses instead of
//     taking the values by value (graph_capture.h's GraphScalars, KernelInput::at, the fused
//     kernels' host-pointer mask), and a kernel outside the functor table gets a device tensor over
//     its word instead of a copy (upload). A device kernel that took a per-call host scalar
//     without asking (it would replay the captured value) ends the capture, with its op as the reason.
//   - deferred input checks (a loss's class targets, deferred_check.h) are captured with their
//     copy and event; each replay queues them as pending checks, raised as eager raises them, and
//     the next replay first collects the last one's (its copies land in the same memory).
// What cannot be captured runs without a graph, for the executable's lifetime, with the reason
// recorded (graph_fallback): a host instruction reading a device value (or a device one making a
// host value), a host value that is not one element, programs writing in place into an argument,
// an output that is a view of an argument, the cudaMallocAsync allocator, and any kernel that
// talks to the host during the capture (an index check's copy back, a synchronisation, a
// per-call host scalar read on the host): its error ends the capture and is
// the reason. LUCID_CUDA_GRAPHS=0 turns graphs off.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "lucid/backends/cuda/compile/fused_kernels.h"
#include "lucid/backends/cuda/cuda_allocator.h"
#include "lucid/backends/cuda/deferred_check.h"
#include "lucid/backends/cuda/graph_capture.h"
#include "lucid/backends/cuda/host_scalar.h"
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

// A host scalar word of a replay: the value id, in the dtype the kernel reads it in.
struct ScalarUse {
  int value;
  DType dtype;
};

constexpr size_t kMaxGraphWords = 1024;  // Philox state and host scalars, 8 bytes each
constexpr int kReservedChecks = 8;        // deferred checks a capture may keep (deferred_check.h)

// A frame's captured graph and the memory it replays.
struct GraphInstance {
  ~GraphInstance() {
    if (exec) cudaGraphExecDestroy(exec);
  }
  GraphPool pool;                     // declared first: released last, after the graph
  CapturedChecks checks;              // the deferred input checks it replays (a loss's class targets)
  cudaGraphExec_t exec = nullptr;
  TensorList inputs;                  // the fixed input buffers
  Tensor words;                       // device: {Philox seed, base offset} (random programs), then host scalars
  std::vector<uint64_t> host_words;   // what the next replay writes into `words`
  size_t first_scalar = 0;            // 2 for a random program
  std::vector<ScalarUse> uses;        // per word from first_scalar on
  std::vector<std::vector<int>> uses_of;  // per value id: its words
  std::vector<Tensor> slots;          // every value as captured
  std::vector<const void*> external;  // per CudaExecutor::external_ids_: its address at capture
  std::vector<char> into_ok;          // the in-place target decisions captured
  std::vector<int> copied;            // value ids of outputs held in the instance's memory
};

class ScalarCapture;

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
  friend class ScalarCapture;
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
  Tensor upload(int value, const Tensor& host, const Device& device) const override;

  bool graphs_on() const { return !off_.load(std::memory_order_acquire); }
  void give_up(const std::string& why) const;
  bool matches(const CudaFrame& f, const GraphInstance& g, const Call& c) const;
  std::unique_ptr<GraphInstance> capture(CudaFrame& f, const Call& c) const;
  void run_host_prelude(CudaFrame& f, GraphInstance& g, const Call& c) const;
  void replay(CudaFrame& f, GraphInstance& g, const Call& c) const;

  const rt::FusedKernelStats fused_stats_;
  const ir::Graph& graph_;
  std::vector<int> external_ids_;  // device states and state-cache values: read by the graph at their captured address
  std::vector<int> read_after_;    // value ids the final assigns and the outputs read after the launch
  std::vector<char> host_value_;   // per value id: a host value other than a constant (fresh per call)
  std::vector<char> host_instr_;   // per instruction: runs on the CPU (the replay's prelude)
  std::vector<int> host_sources_;  // host values not made by a host instruction: inputs, states, cached, static views
  mutable std::atomic<bool> off_{false};
  mutable std::mutex reason_mu_;
  mutable std::string reason_;
  mutable std::atomic<uint64_t> replays_{0};
};

// While a graph is captured: the host scalars the kernels read, each given a word of the
// instance's device words (GraphScalars), and the check that every device kernel asked for the
// per-call host scalars it takes.
class ScalarCapture final : public GraphScalars {
 public:
  ScalarCapture(const CudaExecutor& ex, CudaExecutor::CudaFrame& f, GraphInstance& g) : ex_(ex), f_(f), g_(g) {}

  // Instruction k runs next (a device one).
  void begin(size_t k) {
    k_ = k;
    asked_.assign(ex_.instrs()[k].node->inputs.size(), 0);
  }
  // Raises (ending the capture) when instruction k took a per-call host scalar without asking.
  void end() const {
    const ir::Node& n = *ex_.instrs()[k_].node;
    for (size_t j = 0; j < n.inputs.size(); ++j)
      LUCID_CHECK(n.inputs[j] < 0 || !ex_.host_value_[n.inputs[j]] || asked_[j], Error, op_name(n.op),
                  " read its per-call host scalar (input ", j, ") on the host, so a graph would replay the captured value");
  }

  const void* device_value(const Tensor& t, DType c) override {
    const ir::Node& n = *ex_.instrs()[k_].node;
    for (int v : n.inputs) {
      if (v < 0 || !ex_.host_value_[v]) continue;
      const Tensor& s = f_.slots[v];
      if (s.impl() == t.impl() || s.data_ptr() == t.data_ptr()) return word(v, c, t);
    }
    return nullptr;  // a constant, or a scalar the kernel made from its attributes: fixed
  }

  // A device 0-d tensor over value v's word, in its own dtype (what upload's copy would give).
  Tensor device_tensor(int v, const Tensor& host) {
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = Storage::wrap(const_cast<void*>(word(v, host.dtype(), host)), itemsize(host.dtype()), g_.words.impl()->storage);
    impl->storage->device = ex_.device();
    impl->dtype = host.dtype();
    impl->is_wrapped_number = host.impl()->is_wrapped_number;
    return Tensor(std::move(impl));
  }

 private:
  // The address of value v's word in dtype c (made on first use, its bits this call's value).
  const void* word(int v, DType c, const Tensor& t) {
    const ir::Node& n = *ex_.instrs()[k_].node;
    for (size_t j = 0; j < n.inputs.size(); ++j)
      if (n.inputs[j] == v) asked_[j] = 1;
    std::vector<int>& mine = g_.uses_of[v];
    size_t at = g_.host_words.size();
    for (int u : mine)
      if (g_.uses[u - g_.first_scalar].dtype == c) at = static_cast<size_t>(u);
    if (at == g_.host_words.size()) {
      LUCID_CHECK(g_.host_words.size() < kMaxGraphWords, Error, "more than ", kMaxGraphWords - g_.first_scalar,
                  " host scalar reads in one graph");
      at = g_.host_words.size();
      g_.uses.push_back({v, c});
      g_.host_words.push_back(host_scalar_bits(t, c));
      mine.push_back(static_cast<int>(at));
    }
    return static_cast<const uint64_t*>(g_.words.data_ptr()) + at;
  }

  const CudaExecutor& ex_;
  CudaExecutor::CudaFrame& f_;
  GraphInstance& g_;
  size_t k_ = 0;
  std::vector<char> asked_;
};

thread_local ScalarCapture* t_scalar_capture = nullptr;  // the capture on this thread (upload's)

CudaExecutor::CudaExecutor(std::shared_ptr<const rt::Program> program, rt::FusedRunner fused)
    : FrameExecutor(std::move(program), fused), fused_stats_(fused_kernel_stats(fused)), graph_(this->program()->graph()) {
  const rt::Program& p = *this->program();
  std::string why;
  const char* env = std::getenv("LUCID_CUDA_GRAPHS");
  if (env && std::strcmp(env, "0") == 0) why = "CUDA graphs are turned off (LUCID_CUDA_GRAPHS=0)";
  else if (std::strcmp(allocator_backend(), "native") != 0)
    why = "CUDA graphs need the native caching allocator (LUCID_CUDA_ALLOCATOR=cudaMallocAsync is set)";
  const size_t nv = graph_.values().size();
  host_value_.assign(nv, 0);
  for (size_t id = 0; id < nv; ++id) {
    const ir::Value& v = graph_.value(static_cast<int>(id));
    if (v.kind == ValueKind::Const || !v.device.is_cpu()) continue;
    host_value_[id] = 1;
    if (why.empty() && (numel_of(v.shape) != 1 || itemsize(v.dtype) > sizeof(uint64_t)))
      why = str("the program has a host tensor of shape ", shape_str(v.shape), " (a graph refreshes one-element host scalars only)");
  }
  // Host instructions run before the launch, so they may read host values only; a device one
  // making a host value (a copy to the host) would be read before the graph computed it.
  std::vector<char> made(nv, 0);
  host_instr_.assign(instrs().size(), 0);
  for (size_t k = 0; k < instrs().size(); ++k) {
    const Instr& in = instrs()[k];
    if (in.static_view || in.cached) continue;
    const ir::Node& n = *in.node;
    if (in.device.is_cpu()) {
      host_instr_[k] = 1;
      for (int i : n.inputs)
        if (why.empty() && i >= 0 && !graph_.value(i).device.is_cpu())
          why = str("the program reads a device value on the host (", op_name(n.op), ")");
      for (int o : n.outputs) made[o] = 1;
    } else {
      for (int o : n.outputs)
        if (why.empty() && host_value_[o]) why = str("the program copies a device value to the host (", op_name(n.op), ")");
      // A device group computing host values inside (a program grouped before groups kept to
      // one device) would hand its kernels host values that are not the group's inputs.
      if (n.body)
        for (const ir::Node& b : n.body->nodes())
          if (why.empty() && !b.outputs.empty() && n.body->value(b.outputs[0]).device.is_cpu())
            why = str("a fused group on the device computes host values (", op_name(b.op), ")");
    }
  }
  for (size_t id = 0; id < nv; ++id)
    if (host_value_[id] && !made[id]) host_sources_.push_back(static_cast<int>(id));
  for (int t : p.targets())
    if (why.empty() && graph_.value(t).kind == ValueKind::Input)
      why = "the program writes in place into an argument (the graph would write into its own input buffer)";
  if (!why.empty()) give_up(why);
  for (int id : graph_.states())
    if (!host_value_[id]) external_ids_.push_back(id);
  for (int id : p.cache_values())
    if (!host_value_[id]) external_ids_.push_back(id);
  std::vector<char> seen(nv, 0);
  auto read = [&](int id) {
    const ValueKind k = graph_.value(id).kind;
    if (!seen[id] && k != ValueKind::Input && k != ValueKind::State && !host_value_[id]) read_after_.push_back(id);
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
  if (f.graph) {
    // The last replay's deferred checks first (their copies land in the same memory), before this
    // call changes anything: a failed one raises here, as eager's next check would.
    if (!f.graph->checks.empty()) f.graph->checks.collect_replayed();
    run_host_prelude(f, *f.graph, c);
    replay(f, *f.graph, c);
    return;
  }
  f.graph = capture(f, c);  // ran this call's host instructions; its words hold this call's values
  if (f.graph) replay(f, *f.graph, c);
}

Tensor CudaExecutor::upload(int value, const Tensor& host, const Device& dev) const {
  if (t_scalar_capture && host_value_[value]) return t_scalar_capture->device_tensor(value, host);
  return FrameExecutor::upload(value, host, dev);
}

bool CudaExecutor::matches(const CudaFrame& f, const GraphInstance& g, const Call& c) const {
  if (g.into_ok != c.into_ok) return false;
  for (size_t i = 0; i < external_ids_.size(); ++i)
    if (f.slots[external_ids_[i]].data_ptr() != g.external[i]) return false;
  return true;
}

// Captures the instruction list into a graph of the frame, running this call's host instructions
// on the way; null (with the reason recorded, and the rest of the call run without a graph) when
// it cannot be captured.
std::unique_ptr<GraphInstance> CudaExecutor::capture(CudaFrame& f, const Call& c) const {
  auto g = std::make_unique<GraphInstance>();
  const std::vector<int>& in_ids = graph_.inputs();
  for (size_t i = 0; i < in_ids.size(); ++i) {
    const Tensor& t = c.inputs[i];
    if (host_value_[in_ids[i]]) continue;  // a host scalar input stays the call's
    g->inputs.push_back(Tensor::empty(t.shape(), t.dtype(), device()));
    f.slots[in_ids[i]] = g->inputs.back();
  }
  for (int id : external_ids_) g->external.push_back(f.slots[id].data_ptr());
  g->into_ok = c.into_ok;
  if (!f.capture_stream)
    check_cuda(cudaStreamCreateWithFlags(&f.capture_stream, cudaStreamNonBlocking), "lucid.compile: cudaStreamCreate");
  const bool random = graph_.rng_draws() > 0;
  const bool scalars = !host_sources_.empty() || std::find(host_instr_.begin(), host_instr_.end(), 1) != host_instr_.end();
  if (random || scalars) g->words = Tensor::empty({static_cast<int64_t>(kMaxGraphWords)}, DType::Int64, device());
  if (random) g->host_words = {c.rng_seed, c.rng_base};
  g->first_scalar = g->host_words.size();
  g->uses_of.resize(graph_.values().size());
  reserve_deferred_slots(device(), kReservedChecks);  // a capture can't allocate pinned memory
  const int index = static_cast<int>(device().index);
  cudaStream_t caller = set_current_stream(index, f.capture_stream);
  std::string why;
  cudaGraph_t captured = nullptr;
  size_t k = 0;  // the next instruction
  {
    GraphPoolScope keep(&g->pool);
    GraphPhiloxScope draws({random ? static_cast<const uint64_t*>(g->words.data_ptr()) : nullptr, c.rng_base});
    ScalarCapture sc(*this, f, *g);
    GraphScalarsScope per_call(scalars ? &sc : nullptr);
    CapturedChecksScope checks(&g->checks);
    t_scalar_capture = scalars ? &sc : nullptr;
    cudaError_t st = cudaStreamBeginCapture(f.capture_stream, cudaStreamCaptureModeThreadLocal);
    if (st != cudaSuccess) {
      why = str("cudaStreamBeginCapture: ", cudaGetErrorString(st));
    } else {
      try {
        for (; k < instrs().size(); ++k) {
          const Instr& in = instrs()[k];
          if (in.static_view || in.cached) continue;  // made with the frame, or by the state cache
          if (host_instr_[k] || !scalars) {
            step(k, f, c);
            continue;
          }
          sc.begin(k);
          step(k, f, c);
          sc.end();
        }
      } catch (const std::exception& e) {
        why = e.what();
      }
      st = cudaStreamEndCapture(f.capture_stream, &captured);
      if (why.empty() && st != cudaSuccess) why = str("cudaStreamEndCapture: ", cudaGetErrorString(st));
    }
    t_scalar_capture = nullptr;
  }
  set_current_stream(index, caller);
  if (why.empty()) {
    cudaError_t st = cudaGraphInstantiate(&g->exec, captured, 0);
    if (st != cudaSuccess) why = str("cudaGraphInstantiate: ", cudaGetErrorString(st));
  }
  if (captured) cudaGraphDestroy(captured);
  cudaGetLastError();  // a failed capture's error is not sticky; clear it
  for (size_t i = 0; i < in_ids.size(); ++i) f.slots[in_ids[i]] = c.inputs[i];
  // Without a graph, nothing captured ran: the call runs its instructions plainly, the host ones
  // it ran already (they may have written in place) only from where the capture stopped.
  auto run_plainly = [&] {
    for (size_t j = 0; j < instrs().size(); ++j)
      if (!instrs()[j].static_view && !instrs()[j].cached && (!host_instr_[j] || j >= k)) step(j, f, c);
  };
  if (!why.empty()) {
    give_up(str("capturing a CUDA graph failed: ", why));
    run_plainly();
    return nullptr;
  }
  g->slots = f.slots;
  for (size_t i = 0, b = 0; i < in_ids.size(); ++i)
    if (!host_value_[in_ids[i]]) g->slots[in_ids[i]] = g->inputs[b++];
  // Outputs in the instance's memory (neither a bound tensor, a state-cache value, a constant nor
  // a host value) are copied out per call; one that is a view of an input buffer would alias it.
  std::vector<const Storage*> external;
  for (int id : external_ids_) external.push_back(g->slots[id].impl()->storage.get());
  for (int id : graph_.consts()) external.push_back(g->slots[id].impl()->storage.get());
  for (int id : graph_.outputs()) {
    const ValueKind kd = graph_.value(id).kind;
    if (kd == ValueKind::Input || kd == ValueKind::State || host_value_[id]) continue;
    const Storage* st = g->slots[id].impl()->storage.get();
    for (const Tensor& in : g->inputs)
      if (in.impl()->storage.get() == st) {
        give_up("an output is a view of an argument (a replay would return the graph's input buffer)");
        run_plainly();
        return nullptr;
      }
    if (std::find(external.begin(), external.end(), st) == external.end()) g->copied.push_back(id);
  }
  return g;
}

// The host instructions of a replayed call, in order, and the words of the host scalars the
// graph reads: sources at the start, each instruction's results right after it (a later host
// instruction may write in place into a state a kernel read before).
void CudaExecutor::run_host_prelude(CudaFrame& f, GraphInstance& g, const Call& c) const {
  if (g.words.defined() && g.first_scalar) g.host_words[0] = c.rng_seed, g.host_words[1] = c.rng_base;
  auto snap = [&](int v) {
    for (int u : g.uses_of[v]) g.host_words[u] = host_scalar_bits(f.slots[v], g.uses[u - g.first_scalar].dtype);
  };
  for (int v : host_sources_) snap(v);
  for (size_t k = 0; k < instrs().size(); ++k) {
    if (!host_instr_[k]) continue;
    step(k, f, c);
    for (int o : instrs()[k].node->outputs) snap(o);
  }
}

// A contiguous copy joins the replay's copy launch (graph_capture.h); another one is copied alone.
void add_copy(std::vector<GraphCopy>& copies, const Tensor& dst, const Tensor& src, cudaStream_t s) {
  if (dst.is_contiguous() && src.is_contiguous())
    copies.push_back({dst.data_ptr(), src.data_ptr(), static_cast<size_t>(src.numel()) * itemsize(src.dtype())});
  else
    copy_on(dst, src, s);
}

void CudaExecutor::replay(CudaFrame& f, GraphInstance& g, const Call& c) const {
  cudaStream_t s = current_stream(device());
  thread_local std::vector<GraphCopy> copies;
  copies.clear();
  const std::vector<int>& in_ids = graph_.inputs();
  for (size_t i = 0, b = 0; i < in_ids.size(); ++i)
    if (!host_value_[in_ids[i]]) add_copy(copies, g.inputs[b++], c.inputs[i], s);
  uint64_t* words = g.words.defined() ? static_cast<uint64_t*>(g.words.data_ptr()) : nullptr;
  copy_for_replay(copies, words, g.host_words.data(), g.host_words.size(), s);
  check_cuda(cudaGraphLaunch(g.exec, s), "lucid.compile: cudaGraphLaunch");
  if (!g.checks.empty()) g.checks.queue_replayed();
  for (int id : read_after_) f.slots[id] = g.slots[id];
  copies.clear();
  for (int id : g.copied) {
    const Tensor& t = g.slots[id];
    Tensor fresh = Tensor::empty(t.shape(), t.dtype(), device());
    add_copy(copies, fresh, t, s);
    f.slots[id] = std::move(fresh);
  }
  copy_for_replay(copies, nullptr, nullptr, 0, s);
  replays_.fetch_add(1, std::memory_order_relaxed);
}

std::unique_ptr<rt::Executor> make_cuda_executor(std::shared_ptr<const rt::Program> program) {
  return std::make_unique<CudaExecutor>(std::move(program));
}

}  // namespace

LUCID_REGISTER_EXECUTOR(CUDA, make_cuda_executor);

}  // namespace lucid::cuda
