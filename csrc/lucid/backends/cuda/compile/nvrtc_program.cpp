// NVRTC compiles and the cubin caches (see nvrtc_program.h).
#include "lucid/backends/cuda/compile/nvrtc_program.h"

#include <dlfcn.h>
#include <nvrtc.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <xxhash.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

#include "lucid/backends/cuda/compile/nvrtc_headers.h"
#include "lucid/compile/export/container.h"
#include "lucid/compile/export/disk_cache.h"
#include "lucid/core/error.h"

namespace lucid::cuda {

namespace {

constexpr const char* kFormat = "lucid.cuda_cubin";

std::atomic<uint64_t> g_compiles{0}, g_disk_hits{0}, g_memory_hits{0};

void check_nvrtc(nvrtcResult r, const char* call) {
  LUCID_CHECK(r == NVRTC_SUCCESS, Error, "lucid.compile: ", call, ": ", nvrtcGetErrorString(r));
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return str(major, ".", minor);
}

// libnvrtc dlopens libnvrtc-builtins.so.<major>.<minor> by name at its first compile; a wheel's
// copy sits next to libnvrtc, which the loader's search path may not include. Loading it from
// there by full path first makes the by-name open find it already loaded.
void preload_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&nvrtcCompileProgram), &info) || !info.dli_fname) return;
    std::string dir = info.dli_fname;
    dir = dir.substr(0, dir.find_last_of('/') + 1);
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    dlopen(str(dir, "libnvrtc-builtins.so.", major, ".", minor).c_str(), RTLD_NOW | RTLD_GLOBAL);
  });
}

// Runs NVRTC on source for arch: cubin (or PTX) into *out; false with the log in *log.
bool run_nvrtc(const std::string& source, int arch, bool ptx, std::string* out, std::string* log) {
  preload_builtins();
  std::vector<const char*> names, texts;
  static const std::string alias = "#include \"lucid_nvrtc_std.h\"\n";
  for (const char* n : {"cmath", "cstdint", "type_traits", "cuda/std/limits"}) {
    names.push_back(n);
    texts.push_back(alias.c_str());
  }
  for (int i = 0; i < kNvrtcHeaderCount; ++i) {
    names.push_back(kNvrtcHeaders[i].name);
    texts.push_back(kNvrtcHeaders[i].text);
  }
  nvrtcProgram prog = nullptr;
  check_nvrtc(nvrtcCreateProgram(&prog, source.c_str(), "lucid_fused.cu", static_cast<int>(names.size()), texts.data(),
                                 names.data()),
              "nvrtcCreateProgram");
  const std::string arch_opt = str(ptx ? "-arch=compute_" : "-arch=sm_", arch);
  const char* opts[] = {arch_opt.c_str(), "-std=c++17", "-DNDEBUG"};
  nvrtcResult r = nvrtcCompileProgram(prog, 3, opts);
  g_compiles.fetch_add(1, std::memory_order_relaxed);
  bool ok = r == NVRTC_SUCCESS;
  if (!ok) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string l(n, '\0');
    if (n) nvrtcGetProgramLog(prog, l.data());
    *log = str(nvrtcGetErrorString(r), ": ", l.c_str());
  } else {
    size_t n = 0;
    if (ptx) {
      check_nvrtc(nvrtcGetPTXSize(prog, &n), "nvrtcGetPTXSize");
      out->assign(n, '\0');
      check_nvrtc(nvrtcGetPTX(prog, out->data()), "nvrtcGetPTX");
    } else {
      check_nvrtc(nvrtcGetCUBINSize(prog, &n), "nvrtcGetCUBINSize");
      out->assign(n, '\0');
      check_nvrtc(nvrtcGetCUBIN(prog, out->data()), "nvrtcGetCUBIN");
    }
  }
  nvrtcDestroyProgram(&prog);
  return ok;
}

// What a cubin is compiled from, as one text: the key's preimage, stored in the entry to confirm it.
std::string key_text(const std::string& source, int arch) {
  std::string t = str("nvrtc ", nvrtc_version(), " sm_", arch, " -std=c++17 -DNDEBUG\n");
  for (int i = 0; i < kNvrtcHeaderCount; ++i) t += str("// header ", kNvrtcHeaders[i].name, "\n", kNvrtcHeaders[i].text, "\n");
  return t + source;
}

std::string hex128(const std::string& s) {
  XXH128_hash_t h = XXH3_128bits(s.data(), s.size());
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

std::shared_ptr<const std::string> read_disk(const std::string& path, const std::string& key, const std::string& text,
                                             int arch) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return nullptr;
  try {
    std::shared_ptr<const artifact::Container> f = artifact::Container::open(path);
    const artifact::json& h = f->header();
    LUCID_CHECK(h.contains("format") && h["format"] == kFormat, ArtifactError, "not a cubin entry");
    LUCID_CHECK(artifact::str_field(h, "key", "header") == key && artifact::str_field(h, "nvrtc", "header") == nvrtc_version() &&
                    artifact::int_field(h, "arch", "header", 0, 10000) == arch,
                ArtifactError, "entry of another key, NVRTC or architecture");
    const int64_t last = static_cast<int64_t>(f->num_blobs()) - 1;
    const int64_t src = artifact::int_field(h, "source", "header", 0, last);
    const int64_t bin = artifact::int_field(h, "cubin", "header", 0, last);
    LUCID_CHECK(f->text(static_cast<size_t>(src)) == text, ArtifactError, "entry of another source");
    auto image = std::make_shared<const std::string>(f->blob_data(static_cast<size_t>(bin)), f->blob_bytes(static_cast<size_t>(bin)));
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // least recently used goes first
    return image;
  } catch (const std::exception&) {
    ::unlink(path.c_str());  // compiled again and rewritten
    return nullptr;
  }
}

void write_disk(const std::string& dir, const std::string& path, const std::string& key, const std::string& text, int arch,
                const std::string& image) {
  static std::atomic<bool> warned{false};
  try {
    for (size_t i = 1; i <= dir.size(); ++i)  // mkdir -p, private as the program cache's (disk_cache.h)
      if (i == dir.size() || dir[i] == '/') ::mkdir(dir.substr(0, i).c_str(), 0700);
    artifact::ContainerWriter w;
    size_t src = w.add_blob(text.data(), text.size());
    size_t bin = w.add_blob(image.data(), image.size());
    w.write(path, {{"format", kFormat}, {"key", key}, {"nvrtc", nvrtc_version()}, {"arch", arch}, {"source", src}, {"cubin", bin}});
  } catch (const std::exception& e) {
    if (!warned.exchange(true))
      std::fprintf(stderr, "lucid.compile: can't write a cubin to the compile cache %s: %s\n", dir.c_str(), e.what());
  }
}

}  // namespace

Cubin compile_cubin(const std::string& source, int arch) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const std::string>> memory;
  const std::string text = key_text(source, arch);
  Cubin c;
  c.key = hex128(text);
  {
    std::lock_guard<std::mutex> lk(mu);
    auto it = memory.find(c.key);
    if (it != memory.end()) {
      g_memory_hits.fetch_add(1, std::memory_order_relaxed);
      c.image = it->second;
      c.from = "memory";
      return c;
    }
  }
  const std::string root = artifact::compile_cache_dir();
  const std::string dir = root.empty() ? "" : root + "/cubin";
  const std::string path = dir.empty() ? "" : str(dir, "/", c.key, ".lcc");
  if (!dir.empty()) c.image = read_disk(path, c.key, text, arch);
  if (c.image) {
    g_disk_hits.fetch_add(1, std::memory_order_relaxed);
    c.from = "disk";
  } else {
    std::string image;
    if (!run_nvrtc(source, arch, false, &image, &c.error)) return c;
    c.image = std::make_shared<const std::string>(std::move(image));
    c.from = "nvrtc";
    if (!dir.empty()) write_disk(dir, path, c.key, text, arch, *c.image);
  }
  std::lock_guard<std::mutex> lk(mu);
  memory.emplace(c.key, c.image);
  return c;
}

std::string compile_ptx(const std::string& source, int arch) {
  std::string ptx, log;
  LUCID_CHECK(run_nvrtc(source, arch, true, &ptx, &log), Error, "lucid.compile: NVRTC failed for compute_", arch, ": ", log);
  return ptx;
}

int nvrtc_max_arch() {
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return 0;
  std::vector<int> archs(static_cast<size_t>(n));
  nvrtcGetSupportedArchs(archs.data());
  return archs.back();
}

NvrtcStats nvrtc_stats() {
  return {g_compiles.load(std::memory_order_relaxed), g_disk_hits.load(std::memory_order_relaxed),
          g_memory_hits.load(std::memory_order_relaxed)};
}

}  // namespace lucid::cuda
