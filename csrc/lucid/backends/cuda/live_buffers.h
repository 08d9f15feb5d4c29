// LiveBuffers: the buffers a CUDA allocator has handed out and not yet taken back, by the address
// it returned, so record_stream (cuda_allocator.h) can find the record of a storage's pointer.
// Both CUDA allocators keep one under their own mutex (cuda_allocator.cu: address -> Block;
// cuda_malloc_async.cu: address -> the streams that used the buffer). The map's nodes are kept
// for reuse (extract / insert of node handles), so once warm the allocate / free hot path makes no
// heap allocation for it. Internal to backends/cuda; no CUDA header.
#pragma once
#include <unordered_map>
#include <utility>
#include <vector>

namespace lucid::cuda {

template <class V>
class LiveBuffers {
 public:
  void add(const void* p, V v) {
    if (spare_.empty()) {
      map_.emplace(p, std::move(v));
      return;
    }
    auto node = std::move(spare_.back());
    spare_.pop_back();
    node.key() = p;
    node.mapped() = std::move(v);
    map_.insert(std::move(node));
  }

  // p's entry, or null when p is not a live buffer of this allocator (e.g. a DLPack import).
  V* find(const void* p) {
    auto it = map_.find(p);
    return it == map_.end() ? nullptr : &it->second;
  }

  // Removes p's entry, which must be there, and returns its value.
  V take(const void* p) {
    auto node = map_.extract(p);
    V v = std::move(node.mapped());
    spare_.push_back(std::move(node));
    return v;
  }

 private:
  using Map = std::unordered_map<const void*, V>;
  Map map_;
  std::vector<typename Map::node_type> spare_;
};

}  // namespace lucid::cuda
