// The persistent compile cache (see disk_cache.h).
//
// Entry header (JSON, inside the container):
//   {"format": "lucid.compile_cache", "key": 32 hex digits, "kind": "graph" | "joint <n_in> <n_out>",
//    "stamp", "build", "ops": {name: schema}, "traced": blob (the traced graph's text),
//    "programs": [program (program_io.h) + {"hash": its canonical hash (ir::canonical_hash) in decimal,
//                 "stats": {"nodes_before", "nodes_after", "fused_groups"}}],
//    "num_saved": n (0 for a graph), "blobs": [...]}
#include "lucid/compile/export/disk_cache.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <set>

#include "lucid/compile/export/program_io.h"
#include "lucid/compile/export/stamp.h"

namespace lucid::artifact {

namespace {

constexpr const char* kFormat = "lucid.compile_cache";
constexpr const char* kExt = ".lcc";
constexpr const char* kTmp = ".lcc.tmp.";  // ContainerWriter's temporary files: <path>.tmp.<...>
constexpr time_t kStaleTmpSeconds = 3600;  // a temporary file this old belongs to a writer that died

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string cache_dir() {
  if (const char* env = std::getenv("LUCID_COMPILE_CACHE_DIR")) {
    std::string d = env;
    return d == "0" ? "" : d;
  }
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return str(xdg, "/lucid/compile");  // the XDG spec ignores relative paths
  const char* home = std::getenv("HOME");
  if (home && home[0]) return str(home, "/.cache/lucid/compile");
  return "";
}

uint64_t cap_bytes() {
  const char* env = std::getenv("LUCID_COMPILE_CACHE_MB");
  if (!env) return uint64_t(1024) << 20;
  char* end = nullptr;
  double mb = std::strtod(env, &end);
  LUCID_CHECK(end != env && *end == '\0' && std::isfinite(mb) && mb >= 0 && mb < 1e12, ValueError,
              "LUCID_COMPILE_CACHE_MB: expected a size in megabytes (a number >= 0), got '", env, "'");
  return static_cast<uint64_t>(mb * (1 << 20));
}

// mkdir -p, private to the user (0700: see disk_cache.h on who may write entries); false when
// the directory can't be made.
bool make_dirs(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i < dir.size() && dir[i] != '/') continue;
    std::string part = dir.substr(0, i);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  struct stat st {};
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string hex128(XXH128_hash_t h) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

// This build's identity: XXH3-128 of the binary holding this code (the Python module, or a
// program linking lucid). The version string and op registry don't change when a pass does.
const std::string& build_id() {
  static const std::string id = [] {
    Dl_info info{};
    std::string path = dladdr(reinterpret_cast<void*>(&cache_dir), &info) && info.dli_fname && info.dli_fname[0]
                           ? info.dli_fname : "/proc/self/exe";
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) f = std::fopen("/proc/self/exe", "rb");
    if (!f) return std::string("unknown");
    XXH3_state_t* st = XXH3_createState();
    XXH3_128bits_reset(st);
    std::vector<char> buf(1 << 20);
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) XXH3_128bits_update(st, buf.data(), n);
    std::fclose(f);
    std::string h = hex128(XXH3_128bits_digest(st));
    XXH3_freeState(st);
    return h;
  }();
  return id;
}

const json& stamp() {
  static const json s = make_stamp({"cpu"});
  return s;
}

struct Key {
  std::string kind;    // "graph" or "joint <n_fwd_inputs> <n_fwd_outputs>"
  int n_fwd_outputs;   // a joint compile's (its entry holds two programs); -1 for a graph
  std::string traced;  // the traced graph's text
  std::string hex;     // the digest: the entry's file name
};

Key make_key(const ir::Graph& traced, std::string kind, int n_fwd_outputs) {
  Key k{std::move(kind), n_fwd_outputs, ir::print(traced), ""};
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  auto put = [&](const void* p, size_t n) {  // length-prefixed, so parts can't run into each other
    uint64_t len = n;
    XXH3_128bits_update(st, &len, sizeof len);
    XXH3_128bits_update(st, p, n);
  };
  auto put_str = [&](const std::string& s) { put(s.data(), s.size()); };
  const char* disable = std::getenv("LUCID_COMPILE_DISABLE");
  put_str(kFormat);
  put_str(stamp().dump());
  put_str(build_id());
  put_str(disable ? str("disable=", disable) : std::string("disable unset"));
  put_str(k.kind);
  put_str(k.traced);
  for (int id : traced.consts()) {
    Tensor c = traced.const_data(traced.value(id).slot).contiguous_data();
    put(c.numel() ? c.data_ptr() : nullptr, static_cast<size_t>(c.numel()) * itemsize(c.dtype()));
  }
  k.hex = hex128(XXH3_128bits_digest(st));
  XXH3_freeState(st);
  return k;
}

// The entry's executables, or nullopt when there is none; a bad entry is deleted.
struct Hit {
  std::vector<rt::CompileResult> programs;
  int num_saved = 0;
};

std::optional<Hit> read_entry(const std::string& path, const Key& key) {
  const size_t n_programs = key.n_fwd_outputs < 0 ? 1 : 2;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  try {
    std::shared_ptr<const Container> f = Container::open(path);
    const json& h = f->header();
    LUCID_CHECK(h.contains("format") && h["format"] == kFormat, ArtifactError, "not a compile-cache entry");
    check_compatible(h, path);
    LUCID_CHECK(str_field(h, "key", "header") == key.hex && str_field(h, "kind", "header") == key.kind &&
                    field(h, "stamp", "header") == stamp() && str_field(h, "build", "header") == build_id(),
                ArtifactError, "entry of another key, compile, stamp or build");
    int64_t traced = int_field(h, "traced", "header", 0, static_cast<int64_t>(f->num_blobs()) - 1);
    LUCID_CHECK(f->text(static_cast<size_t>(traced)) == key.traced, ArtifactError, "entry of another graph");
    const json& pj = field(h, "programs", "header");
    LUCID_CHECK(pj.is_array() && pj.size() == n_programs, ArtifactError, "wrong number of programs");
    Hit hit;
    hit.num_saved = static_cast<int>(int_field(h, "num_saved", "header", 0, 1 << 30));
    for (size_t p = 0; p < n_programs; ++p) {
      std::string where = str("program ", p);
      ir::Graph g = read_program(*f, h, pj[p], where, /*copy_consts=*/true);
      LUCID_CHECK(std::to_string(ir::canonical_hash(g)) == str_field(pj[p], "hash", where.c_str()), ArtifactError,
                  "program differs from the one written");
      const json& sj = field(pj[p], "stats", where.c_str());
      ir::PassStats stats;
      stats.nodes_before = static_cast<int>(int_field(sj, "nodes_before", "stats", 0, INT32_MAX));
      stats.nodes_after = static_cast<int>(int_field(sj, "nodes_after", "stats", 0, INT32_MAX));
      stats.fused_groups = static_cast<int>(int_field(sj, "fused_groups", "stats", 0, INT32_MAX));
      rt::CompileResult r = rt::build_executable(std::move(g));
      r.stats = stats;
      r.from_disk = true;
      hit.programs.push_back(std::move(r));
    }
    if (n_programs == 2)  // a joint entry: the forward returns its outputs, then the saved values
      LUCID_CHECK(hit.programs[0].exe->graph().outputs().size() == static_cast<size_t>(key.n_fwd_outputs + hit.num_saved) &&
                      hit.programs[1].exe->graph().inputs().size() >= static_cast<size_t>(hit.num_saved),
                  ArtifactError, "num_saved doesn't match the programs");
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // least recently used goes first
    return hit;
  } catch (const std::exception&) {
    ::unlink(path.c_str());  // compiled again and rewritten by the caller
    return std::nullopt;
  }
}

// Deletes least recently used entries until the directory's entries fit in `cap` bytes, and
// temporary files of writers that died. Other processes may delete files meanwhile.
void evict(const std::string& dir, uint64_t cap) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  struct File {
    timespec mtime;
    uint64_t bytes;
    std::string name;
  };
  std::vector<File> files;
  uint64_t total = 0;
  const time_t now = std::time(nullptr);
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    bool entry = ends_with(name, kExt), tmp = name.find(kTmp) != std::string::npos;
    if (!entry && !tmp) continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (tmp) {
      if (now - st.st_mtim.tv_sec > kStaleTmpSeconds) ::unlinkat(::dirfd(d), name.c_str(), 0);
      continue;
    }
    files.push_back({st.st_mtim, static_cast<uint64_t>(st.st_size), name});
    total += static_cast<uint64_t>(st.st_size);
  }
  if (total > cap) {
    std::sort(files.begin(), files.end(), [](const File& a, const File& b) {
      return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec : a.mtime.tv_nsec < b.mtime.tv_nsec;
    });
    for (const File& f : files) {
      if (total <= cap) break;
      ::unlinkat(::dirfd(d), f.name.c_str(), 0);  // gone already (another process): counted as gone
      total -= f.bytes;
    }
  }
  ::closedir(d);
}

void write_entry(const std::string& dir, const std::string& path, const Key& key,
                 const std::vector<const rt::CompileResult*>& programs, int num_saved, uint64_t cap) {
  static std::atomic<bool> warned{false};
  try {
    LUCID_CHECK(make_dirs(dir), ArtifactError, "can't create the directory: ", std::strerror(errno));
    ContainerWriter w;
    Keep keep;
    std::set<OpId> ops;
    json pj = json::array();
    for (const rt::CompileResult* r : programs) {
      json p = write_program(w, keep, r->exe->graph(), ops);
      p["hash"] = std::to_string(r->hash);
      p["stats"] = {{"nodes_before", r->stats.nodes_before}, {"nodes_after", r->stats.nodes_after},
                    {"fused_groups", r->stats.fused_groups}};
      pj.push_back(std::move(p));
    }
    json header = {{"format", kFormat}, {"key", key.hex}, {"kind", key.kind}, {"stamp", stamp()}, {"build", build_id()},
                   {"ops", op_table(ops)}, {"traced", w.add_blob(key.traced.data(), key.traced.size())},
                   {"programs", pj}, {"num_saved", num_saved}};
    w.write(path, std::move(header));
  } catch (const std::exception& e) {
    if (!warned.exchange(true))
      std::fprintf(stderr, "lucid.compile: can't write to the compile cache %s (LUCID_COMPILE_CACHE_DIR): %s\n",
                   dir.c_str(), e.what());
    return;
  }
  evict(dir, cap);
}

}  // namespace

std::string compile_cache_dir() { return cache_dir(); }

rt::CompileResult compile_graph_cached(const ir::Graph& traced, const std::string& dump) {
  std::string dir = dump.empty() ? cache_dir() : "";
  if (dir.empty()) return rt::compile_graph(traced, dump);
  const uint64_t cap = cap_bytes();
  Key key = make_key(traced, "graph", -1);
  std::string path = str(dir, "/", key.hex, kExt);
  if (std::optional<Hit> hit = read_entry(path, key)) return std::move(hit->programs[0]);
  rt::CompileResult r = rt::compile_graph(traced, dump);
  write_entry(dir, path, key, {&r}, 0, cap);
  return r;
}

rt::JointCompileResult compile_joint_cached(const ir::Graph& joint, int n_fwd_inputs, int n_fwd_outputs,
                                            const std::string& dump) {
  std::string dir = dump.empty() ? cache_dir() : "";
  if (dir.empty()) return rt::compile_joint(joint, n_fwd_inputs, n_fwd_outputs, dump);
  const uint64_t cap = cap_bytes();
  Key key = make_key(joint, str("joint ", n_fwd_inputs, " ", n_fwd_outputs), n_fwd_outputs);
  std::string path = str(dir, "/", key.hex, kExt);
  if (std::optional<Hit> hit = read_entry(path, key)) {
    rt::JointCompileResult r;
    r.forward = std::move(hit->programs[0]);
    r.backward = std::move(hit->programs[1]);
    r.num_saved = hit->num_saved;
    return r;
  }
  rt::JointCompileResult r = rt::compile_joint(joint, n_fwd_inputs, n_fwd_outputs, dump);
  write_entry(dir, path, key, {&r.forward, &r.backward}, r.num_saved, cap);
  return r;
}

}  // namespace lucid::artifact
