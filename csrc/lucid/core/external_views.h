// External views: a NumPy array (Tensor.numpy(), __array__) or a DLPack capsule over a storage's
// bytes can write them without bumping the storage's version. Whatever caches data derived from
// a storage's contents (the packed GEMM / convolution weights, backends/cpu/packed_weights.h; a
// compiled graph's state cache, compile/runtime/frame_executor.cpp) must trust the version only
// while no such view lives, and must notice one that lived and died in between: per storage, the
// registry counts the live external views and the ones that ended.
//
// Kept here, beside Storage rather than in it, so that it costs nothing for storages never
// exported: only an exported storage has an entry (erased when the storage is freed).
#pragma once
#include <cstdint>

#include "lucid/core/storage.h"

namespace lucid {

struct ExternalViewCount {
  int64_t live = 0;    // external views alive now
  uint64_t ended = 0;  // external views that ended (each may have written anything)
  bool operator==(const ExternalViewCount& o) const { return live == o.live && ended == o.ended; }
};

// Bracket the life of one external view of s (the binding that hands out the view calls both).
void external_view_begin(Storage* s);
void external_view_end(const Storage* s);
// s's counts; {0, 0} for a storage never exported.
ExternalViewCount external_views(const Storage* s);

// Whether a cache may key data derived from s's bytes on s's version: s is lucid's own buffer
// (Storage::allocate; not wrapped NumPy or DLPack memory, nor a compiled arena slot, which are
// written without a version bump) and no external view of it lives now.
bool version_tracks_contents(const Storage& s);

}  // namespace lucid
