// Shared oneDNN plumbing for the linalg kernels: the CPU engine, a per-thread stream, dtype
// mapping, strided memory descriptors from lucid tensors, and a small thread-safe LRU cache of
// primitives. Creating a oneDNN primitive_desc costs tens of microseconds (implementation
// search, JIT), so every kernel keys its primitives by shapes/strides/dtype/attributes and
// reuses them. oneDNN here is Debian's 2.6.3 built with the OpenMP (libgomp) runtime, the same
// runtime lucid::parallel_for uses, so the two never oversubscribe each other.
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "lucid/core/tensor.h"

namespace lucid::cpu {
struct MatmulPostOp;  // dnnl_matmul.h
}

namespace lucid::dnnl_util {

dnnl::engine& engine();
dnnl::stream& stream();  // one per thread (streams are not shared between threads)
// oneDNN's kernels for `isa` run on this CPU (its ISA values are feature masks); has_amx: its AMX
// (bfloat16 tile) kernels, read once.
bool has_isa(dnnl::cpu_isa isa);
bool has_amx();

// oneDNN data type of a lucid dtype; `ok` is false when oneDNN has no such type.
dnnl::memory::data_type to_dnnl(DType t, bool* ok = nullptr);

// Memory descriptor with the tensor's exact dims and strides (in elements).
dnnl::memory::desc strided_desc(const Shape& dims, const Strides& strides, DType t);
inline dnnl::memory::desc desc_of(const Tensor& t) { return strided_desc(t.shape(), t.strides(), t.dtype()); }
dnnl::memory::desc plain_desc(const Shape& dims, DType t);  // contiguous (row-major)

// A primitive attribute with the caller's scratchpad (scratchpad_mode::user: oneDNN's own is shared
// by concurrent executions of one primitive) and these post-ops in order (defined beside the
// post-op vocabulary, dnnl_matmul.cpp).
dnnl::primitive_attr post_op_attr(const std::vector<cpu::MatmulPostOp>& post);

inline dnnl::memory mem(const dnnl::memory::desc& md, const void* p) {
  return dnnl::memory(md, engine(), const_cast<void*>(p));
}

// Key of a cached primitive: a flat list of integers (op kind, dims, strides, dtype, attrs).
struct Key {
  std::vector<int64_t> v;
  Key& add(int64_t x) { v.push_back(x); return *this; }
  Key& add(const std::vector<int64_t>& xs) {
    v.push_back(static_cast<int64_t>(xs.size()));
    v.insert(v.end(), xs.begin(), xs.end());
    return *this;
  }
  Key& addf(double f) {
    int64_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return add(bits);
  }
  bool operator==(const Key& o) const { return v == o.v; }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t x : k.v) { h ^= static_cast<uint64_t>(x); h *= 1099511628211ULL; }
    return static_cast<size_t>(h);
  }
};

// LRU cache of shared values (primitives and their descriptors), guarded by a mutex.
template <class V>
class LruCache {
 public:
  explicit LruCache(size_t capacity) : cap_(capacity) {}
  // Returns the cached value for k, or builds it with make() (outside the lock) and caches it.
  std::shared_ptr<V> get(const Key& k, const std::function<std::shared_ptr<V>()>& make) {
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = map_.find(k);
      if (it != map_.end()) {
        order_.splice(order_.begin(), order_, it->second);
        return it->second->second;
      }
    }
    std::shared_ptr<V> v = make();
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.find(k);
    if (it != map_.end()) return it->second->second;
    order_.emplace_front(k, v);
    map_[k] = order_.begin();
    if (order_.size() > cap_) {
      map_.erase(order_.back().first);
      order_.pop_back();
    }
    return v;
  }
  size_t size() {
    std::lock_guard<std::mutex> g(mu_);
    return order_.size();
  }

 private:
  size_t cap_;
  std::mutex mu_;
  std::list<std::pair<Key, std::shared_ptr<V>>> order_;
  std::unordered_map<Key, typename std::list<std::pair<Key, std::shared_ptr<V>>>::iterator, KeyHash> map_;
};

}  // namespace lucid::dnnl_util
