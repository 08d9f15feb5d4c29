// onednn_shapes.cpp - standalone oneDNN micro-benchmark of Lucid's model-zoo shapes, built once per
// oneDNN version by bench/onednn_versions.py (issue 13 item 3, "Newer oneDNN": is 3.x faster than
// Debian's 2.6 on the shapes Lucid actually runs?).
//
// Uses only the C++ API common to oneDNN 2.6 and 3.x; the one difference that matters here (how
// primitive descriptors are made: op::desc + primitive_desc(desc, attr, engine) in 2.x,
// primitive_desc(engine, ...) in 3.x) is behind #if DNNL_VERSION_MAJOR guards.
//
// Layouts follow Lucid's CPU glue (csrc/lucid/backends/cpu/dnnl_conv.cpp, dnnl_matmul.cpp):
//   conv:   src/dst nChw16c when the channel count is a multiple of 16, else format_tag::any;
//           weights format_tag::any, reordered ONCE (outside the timing) to the primitive's layout;
//           no bias (torchvision convs before BN have none).
//   matmul: A and C row-major, B format_tag::any pre-reordered (Lucid's packed-weights path).
// dtypes: f32, and bf16 (bf16 src/weights/dst; f32 dst if oneDNN has no bf16-dst kernel).
// Primitive creation is excluded. Each case: warm-up, then N reps (N adaptive so the case runs
// ~0.3 s, 5..20000), each rep timed alone (execute + stream.wait); prints median and min.
//
// Shapes (batch 1, NCHW logical, torchvision padding):
//   r18_stem      3->64    7x7 s2 p3  224x224   (ResNet-18/50 stem)
//   r18_64        64->64   3x3 s1 p1  56x56
//   r18_128       128->128 3x3 s1 p1  28x28
//   r18_256       256->256 3x3 s1 p1  14x14
//   r18_512       512->512 3x3 s1 p1  7x7
//   r50_1x1_256_64  256->64 1x1 56x56   r50_1x1_64_256  64->256 1x1 56x56
//   r50_3x3s2     128->128 3x3 s2 p1  56x56->28x28 (ResNet-50 v1.5 downsampling 3x3)
//   mbv2_dw144    depthwise 3x3 s1 p1, 144 ch, 56x56 (groups=C)
//   mbv2_dw384    depthwise 3x3 s1 p1, 384 ch, 14x14
//   mbv2_pw32_192 32->192  1x1        112x112
//   mbv2_stem     3->32    3x3 s2 p1  224x224
// GEMMs (M x K @ K x N): 1024^3; ViT-B/16 qkv 197x768x2304, fc1 197x768x3072, fc2 197x3072x768;
//   GPT-2 fc 128x768x3072; LSTM step 1x64x256 and 32x64x256.
//
// Output: one JSON object per line ({"lib":...} first, then one per case); the driver parses them.
// Usage: onednn_shapes [case-substring-filter] [target_seconds]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace {

engine& eng() { static engine e(engine::kind::cpu, 0); return e; }
stream& strm() { static stream s(eng()); return s; }

double g_target_s = 0.3;

// Fills a memory with small deterministic values through map_data (works for every runtime,
// including the SYCL CPU runtime of the PyPI 3.13 build).
void fill(memory& m, float seed) {
  size_t bytes = m.get_desc().get_size();
#if DNNL_VERSION_MAJOR >= 3
  memory::data_type t = m.get_desc().get_data_type();
#else
  memory::data_type t = m.get_desc().data_type();
#endif
  void* p = m.map_data<void>();
  if (t == dt::f32) {
    float* f = static_cast<float*>(p);
    for (size_t i = 0; i < bytes / 4; ++i) f[i] = seed * static_cast<float>(static_cast<int>(i % 13) - 6) / 8.f;
  } else {  // bf16: upper half of the f32 bit pattern
    uint16_t* h = static_cast<uint16_t*>(p);
    for (size_t i = 0; i < bytes / 2; ++i) {
      float f = seed * static_cast<float>(static_cast<int>(i % 13) - 6) / 8.f;
      uint32_t u;
      std::memcpy(&u, &f, 4);
      h[i] = static_cast<uint16_t>(u >> 16);
    }
  }
  m.unmap_data(p);
}

// A memory in layout `md`, filled through a plain user memory and a reorder (outside the timing).
memory make_filled(const memory::desc& md, const memory::desc& user_md, float seed) {
  memory user(user_md, eng());
  fill(user, seed);
  memory m(md, eng());
  reorder(user, m).execute(strm(), user, m);
  strm().wait();
  return m;
}

struct Timing { double median_ms, min_ms; int n; };

Timing time_it(primitive& p, std::unordered_map<int, memory>& args) {
  using clk = std::chrono::steady_clock;
  auto once = [&] {
    auto t0 = clk::now();
    p.execute(strm(), args);
    strm().wait();
    return std::chrono::duration<double>(clk::now() - t0).count();
  };
  double est = 1e30;
  for (int i = 0; i < 3; ++i) est = std::min(est, once());  // warm-up (also faults pages in)
  int n = static_cast<int>(std::clamp(g_target_s / std::max(est, 1e-7), 5.0, 20000.0));
  std::vector<double> ts(n);
  for (int i = 0; i < n; ++i) ts[i] = once();
  std::sort(ts.begin(), ts.end());
  double med = n % 2 ? ts[n / 2] : 0.5 * (ts[n / 2 - 1] + ts[n / 2]);
  return {med * 1e3, ts[0] * 1e3, n};
}

const char* dt_name(dt t) { return t == dt::f32 ? "f32" : t == dt::bf16 ? "bf16" : "?"; }

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

void report(const std::string& name, const char* kind, dt t, dt dst_t, const Timing& tm, const std::string& impl,
            double gflop) {
  std::printf("{\"case\":\"%s\",\"kind\":\"%s\",\"dtype\":\"%s\",\"dst\":\"%s\",\"median_ms\":%.6f,"
              "\"min_ms\":%.6f,\"n\":%d,\"gflops_min\":%.3f,\"impl\":\"%s\"}\n",
              name.c_str(), kind, dt_name(t), dt_name(dst_t), tm.median_ms, tm.min_ms, tm.n,
              gflop / (tm.min_ms * 1e-3), json_escape(impl).c_str());
  std::fflush(stdout);
}

void report_fail(const std::string& name, const char* kind, dt t, const std::string& why) {
  std::printf("{\"case\":\"%s\",\"kind\":\"%s\",\"dtype\":\"%s\",\"error\":\"%s\"}\n", name.c_str(), kind, dt_name(t),
              json_escape(why).c_str());
  std::fflush(stdout);
}

struct Conv { const char* name; int ic, oc, hw, k, s, p, groups; };

convolution_forward::primitive_desc conv_pd(const memory::desc& x, const memory::desc& w, const memory::desc& y,
                                            const memory::dims& st, const memory::dims& pad) {
  memory::dims dil = {0, 0};
#if DNNL_VERSION_MAJOR >= 3
  return convolution_forward::primitive_desc(eng(), prop_kind::forward_inference, algorithm::convolution_direct, x, w,
                                             y, st, dil, pad, pad);
#else
  convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct, x, w, y, st, dil, pad, pad);
  return convolution_forward::primitive_desc(d, eng());
#endif
}

void run_conv(const Conv& c, dt t) {
  int oh = (c.hw + 2 * c.p - c.k) / c.s + 1;
  memory::dims xd = {1, c.ic, c.hw, c.hw}, yd = {1, c.oc, oh, oh}, st = {c.s, c.s}, pad = {c.p, c.p};
  memory::dims wd = c.groups == 1 ? memory::dims{c.oc, c.ic, c.k, c.k}
                                  : memory::dims{c.groups, c.oc / c.groups, c.ic / c.groups, c.k, c.k};
  tag wtag = c.groups == 1 ? tag::oihw : tag::goihw;
  for (dt dst_t : {t, dt::f32}) {
    auto x = memory::desc(xd, t, c.ic % 16 == 0 ? tag::nChw16c : tag::any);
    auto y = memory::desc(yd, dst_t, c.oc % 16 == 0 ? tag::nChw16c : tag::any);
    auto w = memory::desc(wd, t, tag::any);
    try {
      auto pd = conv_pd(x, w, y, st, pad);
      convolution_forward prim(pd);
      std::unordered_map<int, memory> args;
      args[DNNL_ARG_SRC] = make_filled(pd.src_desc(), memory::desc(xd, t, tag::nchw), 1.f);
      args[DNNL_ARG_WEIGHTS] = make_filled(pd.weights_desc(), memory::desc(wd, t, wtag), 0.5f);
      args[DNNL_ARG_DST] = memory(pd.dst_desc(), eng());
      if (pd.scratchpad_desc().get_size()) args[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), eng());
      Timing tm = time_it(prim, args);
      double gflop = 2.0 * c.oc * oh * oh * (c.ic / c.groups) * c.k * c.k * 1e-9;
      report(c.name, "conv", t, dst_t, tm, pd.impl_info_str(), gflop);
      return;
    } catch (const dnnl::error& e) {
      if (dst_t == dt::f32) report_fail(c.name, "conv", t, e.what());
    }
    if (t == dt::f32) return;
  }
}

struct Gemm { const char* name; int m, k, n; };

matmul::primitive_desc mm_pd(const memory::desc& a, const memory::desc& b, const memory::desc& c) {
#if DNNL_VERSION_MAJOR >= 3
  return matmul::primitive_desc(eng(), a, b, c);
#else
  return matmul::primitive_desc(matmul::desc(a, b, c), eng());
#endif
}

void run_gemm(const Gemm& g, dt t) {
  memory::dims ad = {g.m, g.k}, bd = {g.k, g.n}, cd = {g.m, g.n};
  for (dt dst_t : {t, dt::f32}) {
    try {
      auto pd = mm_pd(memory::desc(ad, t, tag::ab), memory::desc(bd, t, tag::any), memory::desc(cd, dst_t, tag::ab));
      matmul prim(pd);
      std::unordered_map<int, memory> args;
      args[DNNL_ARG_SRC] = make_filled(pd.src_desc(), memory::desc(ad, t, tag::ab), 1.f);
      args[DNNL_ARG_WEIGHTS] = make_filled(pd.weights_desc(), memory::desc(bd, t, tag::ab), 0.5f);
      args[DNNL_ARG_DST] = memory(pd.dst_desc(), eng());
      if (pd.scratchpad_desc().get_size()) args[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), eng());
      Timing tm = time_it(prim, args);
      report(g.name, "gemm", t, dst_t, tm, pd.impl_info_str(), 2.0 * g.m * g.k * g.n * 1e-9);
      return;
    } catch (const dnnl::error& e) {
      if (dst_t == dt::f32) report_fail(g.name, "gemm", t, e.what());
    }
    if (t == dt::f32) return;
  }
}

const char* isa_name(dnnl_cpu_isa_t i) {
  switch (i) {
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string filter = argc > 1 ? argv[1] : "";
  if (argc > 2) g_target_s = std::atof(argv[2]);
  const dnnl_version_t* v = dnnl_version();
  const char* omp = std::getenv("OMP_NUM_THREADS");
  std::printf("{\"lib\":\"%d.%d.%d\",\"hash\":\"%s\",\"cpu_runtime\":%u,\"isa\":\"%s\",\"omp_num_threads\":\"%s\"}\n",
              v->major, v->minor, v->patch, v->hash, v->cpu_runtime, isa_name(dnnl_get_effective_cpu_isa()),
              omp ? omp : "");
  std::fflush(stdout);
  const Conv convs[] = {
      {"r18_stem", 3, 64, 224, 7, 2, 3, 1},          {"r18_64", 64, 64, 56, 3, 1, 1, 1},
      {"r18_128", 128, 128, 28, 3, 1, 1, 1},         {"r18_256", 256, 256, 14, 3, 1, 1, 1},
      {"r18_512", 512, 512, 7, 3, 1, 1, 1},          {"r50_1x1_256_64", 256, 64, 56, 1, 1, 0, 1},
      {"r50_1x1_64_256", 64, 256, 56, 1, 1, 0, 1},   {"r50_3x3s2", 128, 128, 56, 3, 2, 1, 1},
      {"mbv2_dw144", 144, 144, 56, 3, 1, 1, 144},    {"mbv2_dw384", 384, 384, 14, 3, 1, 1, 384},
      {"mbv2_pw32_192", 32, 192, 112, 1, 1, 0, 1},   {"mbv2_stem", 3, 32, 224, 3, 2, 1, 1},
  };
  const Gemm gemms[] = {
      {"gemm_1024", 1024, 1024, 1024}, {"vit_qkv", 197, 768, 2304}, {"vit_fc1", 197, 768, 3072},
      {"vit_fc2", 197, 3072, 768},     {"gpt2_fc", 128, 768, 3072}, {"lstm_b1", 1, 64, 256},
      {"lstm_b32", 32, 64, 256},
  };
  for (dt t : {dt::f32, dt::bf16}) {
    for (const auto& c : convs)
      if (std::strstr(c.name, filter.c_str())) run_conv(c, t);
    for (const auto& g : gemms)
      if (std::strstr(g.name, filter.c_str())) run_gemm(g, t);
  }
  return 0;
}
