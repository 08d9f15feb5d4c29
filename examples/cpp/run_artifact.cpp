// run_artifact: a program with no Python that loads an artifact written by
// lucid.compile.save_compiled, runs it, and prints (or saves) the outputs. The deployment story:
// the model's Python code is not needed, only liblucid_core and the artifact.
//
//   run_artifact model.lucid                       # zeros as inputs of the first signature
//   run_artifact model.lucid --inputs in.safetensors --out out.safetensors
//   run_artifact model.lucid --inputs in.safetensors --iters 1000   # per-call time as JSON
//
// Inputs and outputs are safetensors files (tensors named "0", "1", ... in call order), the format
// the Python side writes with safetensors.numpy. A training step (fused_step) runs too: its
// hyper-parameters default to the values saved with it, and each call updates the loaded
// parameters and optimizer state in memory (never the file).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lucid/compile/export/artifact.h"

using lucid::DType;
using lucid::Shape;
using lucid::Tensor;
using lucid::TensorList;

namespace {

// safetensors dtype names <-> lucid dtypes.
const std::map<std::string, DType>& st_dtypes() {
  static const std::map<std::string, DType> m = {
      {"BOOL", DType::Bool},   {"U8", DType::UInt8},   {"I8", DType::Int8},     {"I32", DType::Int32},
      {"I64", DType::Int64},   {"F16", DType::Float16}, {"BF16", DType::BFloat16}, {"F32", DType::Float32},
      {"F64", DType::Float64}};
  return m;
}

std::string st_name(DType t) {
  for (const auto& [k, v] : st_dtypes())
    if (v == t) return k;
  throw std::runtime_error("no safetensors name for a dtype");
}

TensorList read_safetensors(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("can't open " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  uint64_t n = 0;
  if (bytes.size() < 8) throw std::runtime_error(path + ": not a safetensors file");
  std::memcpy(&n, bytes.data(), 8);
  if (n > bytes.size() - 8) throw std::runtime_error(path + ": truncated header");
  nlohmann::json h = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
  const char* data = bytes.data() + 8 + n;
  const uint64_t avail = bytes.size() - 8 - n;
  std::map<int, Tensor> by_index;
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    Shape shape = it.value()["shape"].get<std::vector<int64_t>>();
    DType dt = st_dtypes().at(it.value()["dtype"].get<std::string>());
    auto off = it.value()["data_offsets"].get<std::vector<uint64_t>>();
    if (off.size() != 2 || off[0] > off[1] || off[1] > avail) throw std::runtime_error(path + ": bad offsets");
    Tensor t = Tensor::empty(shape, dt);
    if (off[1] - off[0] != static_cast<uint64_t>(t.numel()) * lucid::itemsize(dt))
      throw std::runtime_error(path + ": tensor " + it.key() + " has the wrong byte size");
    std::memcpy(t.data_ptr(), data + off[0], off[1] - off[0]);
    by_index[std::stoi(it.key())] = t;
  }
  TensorList out;
  for (auto& [i, t] : by_index) out.push_back(t);
  return out;
}

void write_safetensors(const std::string& path, const TensorList& ts) {
  nlohmann::json h = nlohmann::json::object();
  uint64_t at = 0;
  std::vector<Tensor> flat;
  for (size_t i = 0; i < ts.size(); ++i) {
    Tensor c = ts[i].contiguous_data();
    uint64_t n = static_cast<uint64_t>(c.numel()) * lucid::itemsize(c.dtype());
    h[std::to_string(i)] = {{"dtype", st_name(c.dtype())},
                            {"shape", std::vector<int64_t>(c.shape().begin(), c.shape().end())},
                            {"data_offsets", {at, at + n}}};
    at += n;
    flat.push_back(c);
  }
  std::string text = h.dump();
  uint64_t hn = text.size();
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(&hn), 8);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const Tensor& c : flat)
    if (c.numel()) f.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.numel() * lucid::itemsize(c.dtype())));
  if (!f) throw std::runtime_error("can't write " + path);
}

void print_tensor(size_t i, const Tensor& t) {
  Tensor c = t.contiguous_data();
  std::printf("output %zu: %s%s", i, lucid::dtype_name(c.dtype()), lucid::shape_str(c.shape()).c_str());
  const int64_t n = std::min<int64_t>(c.numel(), 8);
  std::printf(" [");
  for (int64_t k = 0; k < n; ++k) {
    double v = 0;
    LUCID_DISPATCH_ALL(c.dtype(), "print", [&] { v = static_cast<double>(static_cast<lucid::compute_t<scalar_t>>(c.data<scalar_t>()[k])); });
    std::printf("%s%.6g", k ? ", " : "", v);
  }
  std::printf("%s]\n", c.numel() > n ? ", ..." : "");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s ARTIFACT [--inputs IN.safetensors] [--out OUT.safetensors] [--iters N]\n", argv[0]);
    return 2;
  }
  std::string path = argv[1], in_path, out_path;
  long iters = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--inputs") in_path = argv[i + 1];
    else if (k == "--out") out_path = argv[i + 1];
    else if (k == "--iters") iters = std::stol(argv[i + 1]);
    else { std::fprintf(stderr, "unknown option %s\n", k.c_str()); return 2; }
  }
  try {
    auto t0 = std::chrono::steady_clock::now();
    auto art = lucid::artifact::Artifact::load(path);
    double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    TensorList inputs;
    if (!in_path.empty()) {
      inputs = read_safetensors(in_path);
    } else {  // zeros for the first signature's inputs without a saved default
      const auto& e = art->entries().front();
      const auto& g = e.forward->graph();
      for (size_t i = 0; i < g.inputs().size(); ++i) {
        bool dflt = false;
        for (const auto& d : e.defaults) dflt |= static_cast<size_t>(d.first) == i;
        if (dflt) break;
        const auto& v = g.value(g.inputs()[i]);
        Tensor t = Tensor::empty(v.shape, v.dtype);
        if (t.numel()) std::memset(t.data_ptr(), 0, static_cast<size_t>(t.numel()) * lucid::itemsize(v.dtype));
        inputs.push_back(t);
      }
    }
    t0 = std::chrono::steady_clock::now();
    TensorList outs = art->run(inputs);
    double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (iters > 0) {
      t0 = std::chrono::steady_clock::now();
      for (long k = 0; k < iters; ++k) outs = art->run(inputs);
      double per = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
      std::printf("{\"load_ms\": %.3f, \"first_call_ms\": %.3f, \"call_us\": %.3f, \"iters\": %ld}\n", load_ms, first_ms,
                  per, iters);
    } else {
      std::printf("%s: %s, %zu signature(s), load %.2f ms, first call %.2f ms\n", path.c_str(), art->kind().c_str(),
                  art->entries().size(), load_ms, first_ms);
      for (size_t i = 0; i < outs.size(); ++i) print_tensor(i, outs[i]);
    }
    if (!out_path.empty()) write_safetensors(out_path, outs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "run_artifact: %s\n", e.what());
    return 1;
  }
  return 0;
}
