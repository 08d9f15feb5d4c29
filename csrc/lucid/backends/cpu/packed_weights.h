// Packed weights: copies of weight tensors reordered once into the blocked layout a oneDNN
// primitive wants, so a call does not repack them. Used by small-M GEMMs on AVX-512 CPUs (dnnl_matmul.cpp:
// oneDNN's per-call copy of B dominated a 1-row 784->256 Linear, 36 us a call against 9 us with
// B prepacked) and by convolutions (dnnl_conv.cpp: the forward and backward-data weights).
//
// An entry is keyed by the caller (the weight's Storage object, byte offset, dims, strides,
// dtype and the packed layout) and remembers the storage, its version counter and its count of
// ended external views (core/external_views.h). It is served only while both still match; a
// change drops it. Packing waits until a key is seen a second time at the same version, so
// weights updated every step (training) and fresh activations never pay for a pack. Only
// storages whose version tracks their contents qualify (version_tracks_contents: lucid's own
// buffers, with no NumPy or DLPack view alive). Entries live no longer than their storage: the
// cache is a DerivedCache (core/storage.h), so freeing a weight frees its packed copies (and a
// later storage at the same address never matches a dead one's entry); its bytes count in
// lucid.memory_cached(), and lucid.empty_cache() drops them all. LRU-bounded in bytes
// (LUCID_WEIGHT_PACK_MB, default 1024: GPT-2's and BERT's weights fit; 0 turns it off). A weight
// evicted for the budget that comes back while the cache is full stays unpacked instead of
// evicting another: a model whose weights exceed the budget keeps part of them packed rather
// than repacking all of them on every call (measured: GPT-2 at the old 256 MiB default repacked
// 42 times in 4 calls).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

#include "lucid/backends/cpu/dnnl_common.h"
#include "lucid/core/storage.h"

namespace lucid::cpu {

bool weight_pack_enabled();
// The packed copy of `bytes` bytes for key k, derived from storage st, or null when the caller
// must read the weight as it is (cache off, storage not trusted, first sighting or changed since,
// over budget). pack() makes the copy (outside the cache's lock).
std::shared_ptr<void> packed_weight(const dnnl_util::Key& k, const std::shared_ptr<Storage>& st, size_t bytes,
                                    const std::function<std::shared_ptr<void>()>& pack);
// A new 64-byte aligned buffer holding src (laid out as `from`) reordered into `to`.
std::shared_ptr<void> reorder_copy(const dnnl::memory::desc& from, const void* src, const dnnl::memory::desc& to);
// Appends the layout of a blocked memory descriptor to a key; false for other format kinds.
bool add_layout(dnnl_util::Key& k, const dnnl::memory::desc& md);

struct WeightPackStats {
  size_t entries = 0, packed = 0, bytes = 0, limit = 0;  // packed: entries holding a packed copy
  uint64_t hits = 0, packs = 0;                         // since the last clear
};
WeightPackStats weight_pack_stats();
size_t weight_pack_set_limit(size_t bytes);  // byte bound (0: off); returns the previous one
void weight_pack_clear();

}  // namespace lucid::cpu
