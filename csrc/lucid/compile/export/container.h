// The artifact container: one file holding a bounded JSON header and 64-byte-aligned binary
// blobs (weights, constants; later device code), each blob checksummed. Written atomically
// (a temporary file in the same directory, then rename), so a reader never sees a half-written
// file and a failed save leaves the old file intact; opened by mapping the file copy-on-write, so
// weights become tensors without a copy and a loaded training step may update them in place
// without touching the file.
//
// Layout (little-endian):
//   0   magic "LUCIDART"          8 bytes
//   8   container version (u32)   format of this layout and of the header's keys
//   12  reserved (u32, 0)
//   16  header length (u64)       at most kMaxHeaderBytes and within the file
//   24  XXH3-64 of the header (u64)
//   32  header: UTF-8 JSON object; its "blobs" array lists {offset, nbytes, xxh3} per blob
//   ... zero padding, blobs at 64-byte-aligned offsets, in order, within the file
// Every check raises ArtifactError naming the cause; nothing is read outside the file.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lucid/compile/export/artifact_error.h"
#include "lucid/core/tensor.h"

namespace lucid::artifact {

using json = nlohmann::json;

constexpr uint32_t kContainerVersion = 1;
constexpr uint64_t kMaxHeaderBytes = uint64_t(1) << 30;
constexpr int kMaxJsonDepth = 64;
constexpr size_t kBlobAlign = 64;

// Collects blobs, then writes header + blobs to `path` atomically. Blob data is borrowed: it
// must stay alive until write() returns.
class ContainerWriter {
 public:
  size_t add_blob(const void* data, size_t nbytes);
  // Adds "blobs" to header and writes the file; raises ArtifactError when the path can't be
  // written (the old file, if any, is left as it was).
  void write(const std::string& path, json header) const;

 private:
  struct Blob {
    const void* data;
    size_t nbytes;
  };
  std::vector<Blob> blobs_;
};

// A mapped, verified container: header parsed, every blob's bounds and checksum checked.
class Container {
 public:
  static std::shared_ptr<const Container> open(const std::string& path);
  ~Container();
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;

  const json& header() const { return header_; }
  size_t num_blobs() const { return blobs_.size(); }
  size_t blob_bytes(size_t i) const;
  const char* blob_data(size_t i) const;
  uint64_t file_bytes() const { return size_; }
  const std::string& path() const { return path_; }
  // A tensor over blob i (no copy; writes go to private pages, never to the file). Raises when
  // the blob's size is not numel(shape) * itemsize(dtype).
  Tensor tensor(size_t blob, const Shape& shape, DType dtype, const std::string& what) const;
  // A blob as text (the IR of a program).
  std::string text(size_t blob) const;

 private:
  Container() = default;
  std::string path_;
  char* base_ = nullptr;
  uint64_t size_ = 0;
  json header_;
  std::vector<std::pair<uint64_t, uint64_t>> blobs_;  // (offset, nbytes)
  std::shared_ptr<void> keep_;  // unmaps when the last tensor over the mapping goes
};

// XXH3-64 of a buffer (the container's checksum), as 16 hex digits.
std::string checksum_hex(const void* data, size_t nbytes);

// Header accessors that raise ArtifactError("corrupt: ...") instead of json's exceptions.
const json& field(const json& obj, const char* key, const char* where);
int64_t int_field(const json& obj, const char* key, const char* where, int64_t lo, int64_t hi);
std::string str_field(const json& obj, const char* key, const char* where);
Shape shape_field(const json& obj, const char* key, const char* where);
DType dtype_field(const json& obj, const char* key, const char* where);

}  // namespace lucid::artifact
