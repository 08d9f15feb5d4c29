// The artifact container (see container.h): atomic writer and mapped, verified reader.
#include "lucid/compile/export/container.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "lucid/core/shape.h"
#include "lucid/core/storage.h"

namespace lucid::artifact {

namespace {

constexpr char kMagic[8] = {'L', 'U', 'C', 'I', 'D', 'A', 'R', 'T'};
constexpr size_t kPrefix = 32;

uint64_t align_up(uint64_t n) { return (n + kBlobAlign - 1) / kBlobAlign * kBlobAlign; }

void put_u32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
void put_u64(char* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t get_u32(const char* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
uint64_t get_u64(const char* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }

std::string errno_text() { return std::strerror(errno); }

// Writes all of buf or raises.
void write_all(int fd, const char* buf, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, buf, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw ArtifactError(str("artifact: can't write '", path, "': ", errno_text()));
    buf += w;
    n -= static_cast<size_t>(w);
  }
}

// Nesting depth of a JSON text, brackets inside strings ignored: the parser recurses per level,
// so a hostile header of a million '[' is refused before parsing.
int json_depth(const char* s, size_t n) {
  int depth = 0, worst = 0;
  bool in_str = false;
  for (size_t i = 0; i < n; ++i) {
    char c = s[i];
    if (in_str) {
      if (c == '\\') ++i;
      else if (c == '"') in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '[' || c == '{') {
      worst = std::max(worst, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return worst;
}

}  // namespace

std::string checksum_hex(const void* data, size_t nbytes) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(XXH3_64bits(data, nbytes)));
  return buf;
}

size_t ContainerWriter::add_blob(const void* data, size_t nbytes) {
  blobs_.push_back({data, nbytes});
  return blobs_.size() - 1;
}

void ContainerWriter::write(const std::string& path, json header) const {
  // Blob offsets follow the header, which lists them: lay out with the offsets' text at a fixed
  // width first, so the header's length doesn't depend on the offsets it holds.
  json blobs = json::array();
  for (const Blob& b : blobs_)
    blobs.push_back({{"offset", 0}, {"nbytes", b.nbytes}, {"xxh3", checksum_hex(b.data, b.nbytes)}});
  header["blobs"] = blobs;
  std::string text;
  std::vector<uint64_t> offsets(blobs_.size());
  for (int pass = 0; pass < 4; ++pass) {  // offsets grow the header; converges in 2 passes
    text = header.dump();
    uint64_t at = align_up(kPrefix + text.size());
    bool same = true;
    for (size_t i = 0; i < blobs_.size(); ++i) {
      if (offsets[i] != at) same = false;
      offsets[i] = at;
      header["blobs"][i]["offset"] = at;
      at = align_up(at + blobs_[i].nbytes);
    }
    if (same) break;
  }
  text = header.dump();
  LUCID_CHECK(blobs_.empty() || offsets[0] == align_up(kPrefix + text.size()), Error,
              "artifact: internal error: blob layout did not converge");
  LUCID_CHECK(text.size() <= kMaxHeaderBytes, ArtifactError, "artifact: header of ", text.size(), " bytes exceeds the ",
              kMaxHeaderBytes, "-byte limit");

  // A temporary file in the target's directory (rename is atomic only within a file system).
  static std::atomic<uint64_t> counter{0};
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  std::string tmp = str(path, ".tmp.", ::getpid(), ".", counter.fetch_add(1), ".", now & 0xffffff);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw ArtifactError(str("artifact: can't write '", path, "': ", errno_text()));
  try {
    char prefix[kPrefix] = {};
    std::memcpy(prefix, kMagic, 8);
    put_u32(prefix + 8, kContainerVersion);
    put_u32(prefix + 12, 0);
    put_u64(prefix + 16, text.size());
    put_u64(prefix + 24, XXH3_64bits(text.data(), text.size()));
    write_all(fd, prefix, kPrefix, path);
    write_all(fd, text.data(), text.size(), path);
    uint64_t at = kPrefix + text.size();
    static const char zeros[kBlobAlign] = {};
    for (size_t i = 0; i < blobs_.size(); ++i) {
      write_all(fd, zeros, offsets[i] - at, path);
      write_all(fd, static_cast<const char*>(blobs_[i].data), blobs_[i].nbytes, path);
      at = offsets[i] + blobs_[i].nbytes;
    }
    if (::fsync(fd) != 0) throw ArtifactError(str("artifact: can't write '", path, "': ", errno_text()));
    ::close(fd);
    fd = -1;
    if (::rename(tmp.c_str(), path.c_str()) != 0) throw ArtifactError(str("artifact: can't write '", path, "': ", errno_text()));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
}

std::shared_ptr<const Container> Container::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ArtifactError(str("artifact: can't open '", path, "': ", errno_text()));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    throw ArtifactError(str("artifact: '", path, "' is ", dir ? "a directory" : "not a regular file", ", not an artifact"));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kPrefix) {
    ::close(fd);
    throw ArtifactError(str("artifact: '", path, "' is truncated or not an artifact (", size, " bytes)"));
  }
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throw ArtifactError(str("artifact: can't map '", path, "': ", errno_text()));
  std::shared_ptr<Container> c(new Container());
  c->path_ = path;
  c->base_ = static_cast<char*>(p);
  c->size_ = size;
  c->keep_ = std::shared_ptr<void>(p, [size](void* q) { ::munmap(q, size); });
  const char* b = c->base_;
  LUCID_CHECK(std::memcmp(b, kMagic, 8) == 0, ArtifactError, "artifact: '", path,
              "' is not a lucid artifact (no LUCIDART magic)");
  uint32_t version = get_u32(b + 8);
  LUCID_CHECK(version == kContainerVersion, ArtifactError, "artifact: '", path, "' has container version ", version,
              (version > kContainerVersion ? " (from a newer lucid)" : ""), "; this lucid reads version ", kContainerVersion);
  uint64_t hlen = get_u64(b + 16);
  LUCID_CHECK(hlen <= kMaxHeaderBytes && hlen <= size - kPrefix, ArtifactError, "artifact: '", path,
              "' is truncated or corrupt: its header claims ", hlen, " bytes, the file has ", size - kPrefix, " after the prefix");
  LUCID_CHECK(XXH3_64bits(b + kPrefix, hlen) == get_u64(b + 24), ArtifactError, "artifact: '", path,
              "' is corrupt: header checksum mismatch");
  LUCID_CHECK(json_depth(b + kPrefix, hlen) <= kMaxJsonDepth, ArtifactError, "artifact: '", path,
              "' is corrupt: header nested deeper than ", kMaxJsonDepth, " levels");
  try {
    c->header_ = json::parse(b + kPrefix, b + kPrefix + hlen);
  } catch (const std::exception& e) {
    throw ArtifactError(str("artifact: '", path, "' is corrupt: header is not valid JSON (", e.what(), ")"));
  }
  LUCID_CHECK(c->header_.is_object(), ArtifactError, "artifact: '", path, "' is corrupt: header is not a JSON object");
  const json& blobs = field(c->header_, "blobs", "header");
  LUCID_CHECK(blobs.is_array(), ArtifactError, "artifact: corrupt header: 'blobs' is not an array");
  uint64_t prev_end = kPrefix + hlen;
  for (size_t i = 0; i < blobs.size(); ++i) {
    std::string where = str("blob ", i);
    int64_t off = int_field(blobs[i], "offset", where.c_str(), 0, INT64_MAX);
    int64_t n = int_field(blobs[i], "nbytes", where.c_str(), 0, INT64_MAX);
    uint64_t uo = static_cast<uint64_t>(off), un = static_cast<uint64_t>(n);
    LUCID_CHECK(uo >= prev_end && uo % kBlobAlign == 0 && uo <= size && un <= size - uo, ArtifactError, "artifact: '",
                path, "' is truncated or corrupt: ", where, " claims bytes [", uo, ", ", uo + un, ") of a ", size, "-byte file");
    LUCID_CHECK(checksum_hex(b + uo, un) == str_field(blobs[i], "xxh3", where.c_str()), ArtifactError, "artifact: '",
                path, "' is corrupt: ", where, " checksum mismatch");
    c->blobs_.emplace_back(uo, un);
    prev_end = uo + un;
  }
  return c;
}

Container::~Container() = default;

size_t Container::blob_bytes(size_t i) const {
  LUCID_CHECK(i < blobs_.size(), ArtifactError, "artifact: corrupt header: blob ", i, " of ", blobs_.size());
  return blobs_[i].second;
}

const char* Container::blob_data(size_t i) const {
  LUCID_CHECK(i < blobs_.size(), ArtifactError, "artifact: corrupt header: blob ", i, " of ", blobs_.size());
  return base_ + blobs_[i].first;
}

Tensor Container::tensor(size_t blob, const Shape& shape, DType dtype, const std::string& what) const {
  size_t n = blob_bytes(blob);
  int64_t want = contiguous_nbytes(shape, static_cast<int64_t>(itemsize(dtype)));
  LUCID_CHECK(static_cast<uint64_t>(want) == n, ArtifactError, "artifact: corrupt: ", what, " is ", dtype_name(dtype),
              shape_str(shape), " (", want, " bytes) but its blob has ", n, " bytes");
  auto impl = std::make_shared<TensorImpl>();
  // The storage keeps the mapping alive (a zero-byte tensor still points into the file). Its
  // owner is an aliasing pointer to the blob itself, as Storage::allocate's owner is to its
  // buffer: the pages are private to this process and written only by lucid's ops (which bump
  // the version), so caches of derived data (packed GEMM weights) may serve them as they serve
  // allocated weights; a loaded model runs the same kernels as the one it was saved from.
  char* data = const_cast<char*>(blob_data(blob));
  impl->storage = Storage::wrap(data, n, std::shared_ptr<void>(keep_, data));
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(impl);
}

std::string Container::text(size_t blob) const { return std::string(blob_data(blob), blob_bytes(blob)); }

const json& field(const json& obj, const char* key, const char* where) {
  LUCID_CHECK(obj.is_object(), ArtifactError, "artifact: corrupt header: ", where, " is not an object");
  auto it = obj.find(key);
  LUCID_CHECK(it != obj.end(), ArtifactError, "artifact: corrupt header: ", where, " has no '", key, "'");
  return *it;
}

int64_t int_field(const json& obj, const char* key, const char* where, int64_t lo, int64_t hi) {
  const json& v = field(obj, key, where);
  bool ok = v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX));
  LUCID_CHECK(ok, ArtifactError, "artifact: corrupt header: ", where, ".", key, " is not an int64 integer");
  int64_t x = v.get<int64_t>();
  LUCID_CHECK(x >= lo && x <= hi, ArtifactError, "artifact: corrupt header: ", where, ".", key, " = ", x,
              " is outside [", lo, ", ", hi, "]");
  return x;
}

std::string str_field(const json& obj, const char* key, const char* where) {
  const json& v = field(obj, key, where);
  LUCID_CHECK(v.is_string(), ArtifactError, "artifact: corrupt header: ", where, ".", key, " is not a string");
  return v.get<std::string>();
}

Shape shape_field(const json& obj, const char* key, const char* where) {
  const json& v = field(obj, key, where);
  LUCID_CHECK(v.is_array() && v.size() <= 64, ArtifactError, "artifact: corrupt header: ", where, ".", key,
              " is not a shape (a list of at most 64 sizes)");
  Shape s;
  for (const json& d : v) {
    LUCID_CHECK(d.is_number_integer() && d.get<int64_t>() >= 0, ArtifactError, "artifact: corrupt header: ", where, ".",
                key, " has a size that is not a non-negative integer");
    s.push_back(d.get<int64_t>());
  }
  try {
    numel_of(s);
  } catch (const Error& e) {
    throw ArtifactError(str("artifact: corrupt header: ", where, ".", key, " ", shape_str(s), ": ", e.what()));
  }
  return s;
}

DType dtype_field(const json& obj, const char* key, const char* where) {
  std::string s = str_field(obj, key, where);
  try {
    return dtype_from_name(s);
  } catch (const Error&) {
    throw ArtifactError(str("artifact: corrupt header: ", where, ".", key, " = '", s, "' is not a dtype"));
  }
}

}  // namespace lucid::artifact
