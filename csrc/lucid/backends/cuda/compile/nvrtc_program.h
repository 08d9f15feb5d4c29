// NVRTC for the CUDA backend's generated kernels: one source (fused_source.h) compiled to a cubin
// for one GPU architecture, with the headers it includes served from memory (the scalar functors,
// core/host_device.h and nvrtc_std.h, embedded into the library at build time by
// cmake/cuda_libraries.cmake), so compiling needs no include path and no GPU.
//
// Cubins are cached twice: in the process (by key), and in the persistent compile cache
// (export/disk_cache.h's directory, LUCID_COMPILE_CACHE_DIR) as one cubin/<key>.lcc container per
// cubin holding the cubin and the text it was compiled from, so a warm process never calls NVRTC
// again.
// The key is XXH3-128 of the source, the embedded headers, the options, NVRTC's version and the
// architecture; an entry whose stored text, NVRTC version or architecture differs from the asked
// one (a collision, a corrupt or truncated file) is compiled again and rewritten. A failed write
// warns once and leaves the compile as it was. The subfolder keeps them apart from the programs'
// entries; the directory's size bound (LUCID_COMPILE_CACHE_MB) does not count them yet (a cubin
// is tens of kilobytes; a program entry holds its weights).
//
// libnvrtc is linked (cmake/cuda_libraries.cmake); its builtins library, which it dlopens by
// name at the first compile, is preloaded from libnvrtc's own folder, so a wheel's copy is found
// without LD_LIBRARY_PATH.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace lucid::cuda {

struct Cubin {
  std::shared_ptr<const std::string> image;  // the cubin; null when compiling failed
  std::string from;                          // "nvrtc", "disk" or "memory" (the process cache)
  std::string error;                         // NVRTC's log when compiling failed
  std::string key;                           // 32 hex digits
};

// The cubin of `source` for compute capability `arch` (90 for sm_90): from the caches, else
// compiled by NVRTC (and stored). Never raises for a source NVRTC rejects: `error` holds its log.
Cubin compile_cubin(const std::string& source, int arch);

// NVRTC's PTX of `source` for `arch` (no cache): tests compile generated sources without a GPU.
// Raises Error with NVRTC's log when it fails.
std::string compile_ptx(const std::string& source, int arch);

// The newest architecture this NVRTC compiles cubins for, as compute capability (e.g. 120).
int nvrtc_max_arch();

// Process-wide counts: NVRTC compiles, and cubins served by the disk and the process caches.
struct NvrtcStats {
  uint64_t compiles = 0, disk_hits = 0, memory_hits = 0;
};
NvrtcStats nvrtc_stats();

}  // namespace lucid::cuda
