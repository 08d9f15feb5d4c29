// The CUDA executor's fused-elementwise runner: a program's module of generated kernels, their
// launches, and the op-by-op fallback (see fused_kernels.h).
#include "lucid/backends/cuda/compile/fused_kernels.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "lucid/backends/cpu/compile/fused_ew.h"
#include "lucid/backends/cuda/compile/fused_source.h"
#include "lucid/backends/cuda/compile/nvrtc_program.h"
#include "lucid/backends/cuda/cuda_check.h"
#include "lucid/backends/cuda/device_info.h"
#include "lucid/backends/cuda/graph_capture.h"
#include "lucid/backends/cuda/stream.h"
#include "lucid/dispatch/dispatch.h"

namespace lucid::cuda {

namespace {

constexpr int kThreads = 256;

struct Group {
  const ir::Node* node = nullptr;
  FusedKernelSource src;          // src.refused non-empty: runs op by op
  cudaKernel_t kernel = nullptr;
  std::shared_ptr<const FusedProgram> host;  // a group of host values: the CPU's block interpreter
  Device device;
  int64_t max_blocks = 1;
};

struct Module {
  ~Module() {
    if (library) cudaLibraryUnload(library);
  }
  cudaLibrary_t library = nullptr;
  std::shared_ptr<const std::string> image;
  std::vector<Group> groups;  // never resized after build: build_group hands out their addresses
  std::map<const ir::Node*, size_t> index;
  rt::FusedKernelStats stats;
};

// "group 2 (mul, gelu)" for messages.
std::string describe(const Group& g, size_t k) {
  std::string ops;
  for (const ir::Node& n : g.node->body->nodes()) ops += str(ops.empty() ? "" : ", ", op_def(n.op).api_name);
  return str("group ", k, " (", ops, ")");
}

std::shared_ptr<Module> build_module(const rt::Program& p) {
  auto m = std::make_shared<Module>();
  const ir::Graph& g = p.graph();
  const char* env = std::getenv("LUCID_CUDA_FUSED");
  const bool off = env && std::strcmp(env, "0") == 0;
  size_t count = 0;
  for (const rt::Instruction& in : p.instructions()) count += in.kind == rt::Instruction::Kind::Fused;
  m->groups.reserve(count);
  for (const rt::Instruction& in : p.instructions()) {
    if (in.kind != rt::Instruction::Kind::Fused) continue;
    Group gr;
    gr.node = in.node;
    gr.device = p.device();
    gr.src = generate_fused_kernel(g, *in.node, str("lucid_fused_", m->groups.size()));
    if (off) gr.src.refused = "generated kernels are turned off (LUCID_CUDA_FUSED=0)";
    // Host scalar math (an optimizer's bias corrections; a CUDA graph's replay runs it first, on the
    // host) runs as one program of the CPU's block interpreter rather than op by op.
    bool host = !off;
    for (const ir::Node& n : in.node->body->nodes()) host = host && in.node->body->value(n.outputs.at(0)).device.is_cpu();
    if (host) {
      try {
        gr.host = std::make_shared<const FusedProgram>(*in.node->body, wrapped_inputs(g, *in.node));
      } catch (const Error&) {
        gr.host = nullptr;  // an op the interpreter can't run: op by op
      }
    }
    m->index[in.node] = m->groups.size();
    m->groups.push_back(std::move(gr));
  }
  std::vector<const FusedKernelSource*> sources;
  for (const Group& gr : m->groups)
    if (gr.src.refused.empty()) sources.push_back(&gr.src);
  if (!sources.empty()) {
    const DeviceProperties props = device_properties(static_cast<int>(p.device().index));
    const int arch = props.major * 10 + props.minor;
    std::string failure;
    Cubin c = compile_cubin(fused_program_source(sources), arch);
    if (!c.image) {
      failure = str("NVRTC could not compile the program for sm_", arch, ": ", c.error.substr(0, 4000));
    } else {
      DeviceGuard guard(p.device());
      cudaError_t st = cudaLibraryLoadData(&m->library, c.image->data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
      if (st != cudaSuccess) {
        failure = str("cudaLibraryLoadData: ", cudaGetErrorString(st));
        m->library = nullptr;
        cudaGetLastError();
      }
      m->image = c.image;
      m->stats.code = c.from;
    }
    for (Group& gr : m->groups) {
      if (!gr.src.refused.empty()) continue;
      if (failure.empty()) {
        cudaError_t st = cudaLibraryGetKernel(&gr.kernel, m->library, gr.src.name.c_str());
        if (st != cudaSuccess) {
          gr.kernel = nullptr;
          gr.src.refused = str("cudaLibraryGetKernel: ", cudaGetErrorString(st));
          cudaGetLastError();
        }
      } else {
        gr.src.refused = failure;
      }
      // One element per thread (a grid-stride loop only past 2^28 elements): memory-bound
      // kernels want every load in flight at once, not a few loops' worth per SM.
      gr.max_blocks = std::max(1, props.multi_processor_count) * int64_t{8192};
    }
  }
  for (size_t k = 0; k < m->groups.size(); ++k) {
    const Group& gr = m->groups[k];
    if (gr.kernel) {
      ++m->stats.kernels;
    } else {
      ++m->stats.per_op;
      if (m->stats.fallback.empty()) m->stats.fallback = str(describe(gr, k), ": ", gr.src.refused);
    }
  }
  return m;
}

// Byte ranges of two tensors' elements overlap (by address: arena slots are distinct Storages
// over one allocation).
bool overlaps(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0 || a.device().is_cpu() != b.device().is_cpu()) return false;
  auto range = [](const Tensor& t, const char*& lo, const char*& hi) {
    int64_t mn = 0, mx = 0;
    for (int64_t d = 0; d < t.ndim(); ++d) {
      int64_t e = (t.shape()[d] - 1) * t.strides()[d];
      (e < 0 ? mn : mx) += e;
    }
    const int64_t isz = static_cast<int64_t>(itemsize(t.dtype()));
    lo = static_cast<const char*>(t.data_ptr()) + mn * isz;
    hi = static_cast<const char*>(t.data_ptr()) + (mx + 1) * isz;
  };
  const char *alo, *ahi, *blo, *bhi;
  range(a, alo, ahi);
  range(b, blo, bhi);
  return alo < bhi && blo < ahi;
}

void launch(const Group& gr, const TensorList& inputs, const TensorList& outputs) {
  const FusedKernelSource& k = gr.src;
  const char* me = "fused_elementwise";
  const int ni = static_cast<int>(k.inputs.size()), no = static_cast<int>(k.outputs.size());
  LUCID_CHECK(static_cast<int>(inputs.size()) == ni && static_cast<int>(outputs.size()) == no, ValueError, me,
              ": expected ", ni, " inputs and ", no, " outputs");
  for (int j = 0; j < no; ++j)
    LUCID_CHECK(outputs[j].shape() == k.outputs[j].shape && outputs[j].dtype() == k.outputs[j].dtype &&
                    outputs[j].is_contiguous() && !outputs[j].device().is_cpu(),
                ValueError, me, ": output ", j, " expected a contiguous device ", dtype_name(k.outputs[j].dtype),
                " tensor of shape ", shape_str(k.outputs[j].shape));
  TensorList in = inputs;
  for (int i = 0; i < ni; ++i) {
    LUCID_CHECK(in[i].shape() == k.inputs[i].shape && in[i].dtype() == k.inputs[i].dtype &&
                    in[i].device().is_cpu() == static_cast<bool>(k.host_input[i]),
                ValueError, me, ": input ", i, " expected ", k.host_input[i] ? "a host " : "a device ",
                dtype_name(k.inputs[i].dtype), " tensor of shape ", shape_str(k.inputs[i].shape));
    if (k.host_input[i]) continue;
    for (const Tensor& o : outputs) {
      const bool in_place = in[i].shape() == k.shape && in[i].is_contiguous() && in[i].data_ptr() == o.data_ptr() &&
                            itemsize(in[i].dtype()) == itemsize(o.dtype());
      if (!in_place && overlaps(in[i], o)) {  // another thread's element may be written first: read a copy
        Tensor c = Tensor::empty(in[i].shape(), in[i].dtype(), in[i].device());
        copy_values(c, in[i]);
        in[i] = c;
        break;
      }
    }
  }
  const int64_t n = numel_of(k.shape);
  if (n == 0) return;

  // Iteration dims without size-1 dims, input strides against them (0: broadcast), then
  // coalesced where every device input allows it.
  const int nd0 = static_cast<int>(k.shape.size());
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> st(ni);
  for (int d = 0; d < nd0; ++d) {
    if (k.shape[d] == 1) continue;
    dims.push_back(k.shape[d]);
    for (int i = 0; i < ni; ++i) {
      if (k.host_input[i]) continue;
      const int td = d - (nd0 - static_cast<int>(in[i].ndim()));
      st[i].push_back(td < 0 || in[i].shape()[td] == 1 ? 0 : in[i].strides()[td]);
    }
  }
  std::vector<int64_t> cdims;
  std::vector<std::vector<int64_t>> cst(ni);
  for (size_t d = 0; d < dims.size(); ++d) {
    bool merge = !cdims.empty();
    for (int i = 0; i < ni; ++i)
      if (!k.host_input[i]) merge = merge && cst[i].back() == st[i][d] * dims[d];
    if (merge) {
      cdims.back() *= dims[d];
      for (int i = 0; i < ni; ++i)
        if (!k.host_input[i]) cst[i].back() = st[i][d];
    } else {
      cdims.push_back(dims[d]);
      for (int i = 0; i < ni; ++i)
        if (!k.host_input[i]) cst[i].push_back(st[i][d]);
    }
  }
  const FusedArgsLayout& L = k.layout;
  std::vector<uint64_t> w(static_cast<size_t>(L.words()), 0);
  uint32_t strided = 0, scalar = 0, host_at = 0;
  GraphScalars* per_call = active_graph_scalars();
  for (int i = 0; i < ni; ++i) {
    if (k.host_input[i]) {
      if (const void* at = per_call ? per_call->device_value(in[i], in[i].dtype()) : nullptr) {
        w[L.host() + i] = reinterpret_cast<uint64_t>(at);
        host_at |= 1u << i;
      } else {
        std::memcpy(&w[L.host() + i], in[i].data_ptr(), itemsize(in[i].dtype()));
      }
      continue;
    }
    bool is_scalar = true, contiguous = true;
    int64_t expect = 1;
    for (int d = static_cast<int>(cdims.size()) - 1; d >= 0; --d) {
      is_scalar = is_scalar && cst[i][d] == 0;
      contiguous = contiguous && cst[i][d] == expect;
      expect *= cdims[d];
      w[L.stride() + i * kFusedMaxDims + d] = static_cast<uint64_t>(cst[i][d]);
    }
    if (is_scalar) scalar |= 1u << i;
    else if (!contiguous) strided |= 1u << i;
    w[L.in() + i] = reinterpret_cast<uint64_t>(in[i].data_ptr());
  }
  for (int j = 0; j < no; ++j) w[L.out() + j] = reinterpret_cast<uint64_t>(outputs[j].data_ptr());
  // The 4-wide path: every device input contiguous or a scalar, 4 | n, every vector aligned.
  bool vec4 = strided == 0 && n % 4 == 0;
  auto aligned = [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % (4 * itemsize(t.dtype())) == 0; };
  for (int i = 0; i < ni && vec4; ++i)
    if (!k.host_input[i] && !(scalar >> i & 1u)) vec4 = aligned(in[i]);
  for (int j = 0; j < no && vec4; ++j) vec4 = aligned(outputs[j]);
  for (size_t d = 0; d < cdims.size(); ++d) w[L.size() + d] = static_cast<uint64_t>(cdims[d]);
  w[0] = static_cast<uint64_t>(n);
  w[1] = static_cast<uint64_t>(cdims.size()) | static_cast<uint64_t>(strided) << 32;
  w[2] = static_cast<uint64_t>(scalar) | static_cast<uint64_t>(vec4) << 32;
  w[L.host_at()] = host_at;
  if (!k.attrs.empty()) std::memcpy(&w[L.attr()], k.attrs.data(), k.attrs.size() * sizeof(uint64_t));
  void* params[] = {w.data()};
  const int64_t threads = vec4 ? n / 4 : n;
  const int64_t blocks = std::min((threads + kThreads - 1) / kThreads, gr.max_blocks);
  check_cuda(cudaLaunchKernel(reinterpret_cast<const void*>(gr.kernel), dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                              params, 0, current_stream(gr.device)),
             "lucid.compile: cudaLaunchKernel (a generated fused kernel)");
}

// The body's nodes one by one with their eager kernels, each on its result's device.
void run_per_op(const ir::Graph& body, const TensorList& inputs, const TensorList& outputs) {
  std::vector<Tensor> val(body.values().size());
  for (size_t i = 0; i < body.inputs().size(); ++i) val[body.inputs()[i]] = inputs[i];
  for (const ir::Node& n : body.nodes()) {
    const OpDef& def = op_def(n.op);
    TensorList ins;
    for (int in : n.inputs) ins.push_back(in >= 0 ? val[in] : Tensor());
    const ir::Value& ov = body.value(n.outputs[0]);
    Device dev = ov.device;
    if (def.device_transfer && dev.is_cpu() && !n.inputs.empty() && n.inputs[0] >= 0) dev = body.value(n.inputs[0]).device;
    KernelFn kernel = def.kernel(dev.type);
    LUCID_CHECK(kernel, NotImplementedError, "lucid.compile: ", def.api_name, " has no kernel on ", dev.str());
    Tensor o = Tensor::empty(ov.shape, ov.dtype, ov.device);
    kernel(ins, {o}, n.attrs);
    val[n.outputs[0]] = o;
  }
  for (size_t j = 0; j < outputs.size(); ++j) copy_values(outputs[j], val[body.outputs()[j]]);
}

std::shared_ptr<const void> build_group(const void* context, const ir::Graph&, const ir::Node& node) {
  const Module& m = *static_cast<const Module*>(context);
  const Group* g = &m.groups.at(m.index.at(&node));
  return std::shared_ptr<const void>(g, [](const void*) {});  // the module (the runner's context) owns it
}

void run_group(const void* prepared, const TensorList& inputs, const TensorList& outputs) {
  const Group& g = *static_cast<const Group*>(prepared);
  if (g.kernel) launch(g, inputs, outputs);
  else if (g.host) run_fused(*g.host, inputs, outputs);
  else run_per_op(*g.node->body, inputs, outputs);
}

}  // namespace

rt::FusedRunner fused_runner(const rt::Program& program) {
  return {build_group, run_group, build_module(program)};
}

rt::FusedKernelStats fused_kernel_stats(const rt::FusedRunner& runner) {
  return runner.context ? static_cast<const Module*>(runner.context.get())->stats : rt::FusedKernelStats{};
}

}  // namespace lucid::cuda
