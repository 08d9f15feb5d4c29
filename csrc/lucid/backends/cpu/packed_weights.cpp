// The packed-weights cache (packed_weights.h): an LRU of packed copies keyed by storage and
// layout, bounded in bytes, each served only while its storage's version and external views are
// those it was packed at.
#include "lucid/backends/cpu/packed_weights.h"

#include <atomic>
#include <cstdlib>
#include <list>
#include <mutex>

#include "lucid/core/external_views.h"

namespace lucid::cpu {

namespace {
using dnnl_util::Key;
using dnnl_util::KeyHash;

constexpr size_t kPackMaxEntries = 1024;

class PackCache {
 public:
  PackCache() {
    const char* e = std::getenv("LUCID_WEIGHT_PACK_MB");
    limit_ = static_cast<size_t>(e ? std::max(0L, std::atol(e)) : 1024L) << 20;
  }

  bool enabled() const { return limit_.load(std::memory_order_relaxed) > 0; }

  // The packed copy of B for key k (k names storage st and the layout), or null when the call
  // must read B as it is. pack(bytes) makes a packed copy of `bytes` bytes (outside the lock).
  std::shared_ptr<void> get(const Key& k, const std::shared_ptr<Storage>& st, size_t bytes,
                            const std::function<std::shared_ptr<void>()>& pack) {
    const uint32_t ver = st->version.load(std::memory_order_acquire);
    const ExternalViewCount views = external_views(st.get());
    {
      std::lock_guard<std::mutex> g(mu_);
      if (views.live || bytes > limit_) return nullptr;
      auto it = map_.find(k);
      if (it == map_.end()) {
        st->mark_derived();
        order_.emplace_front(k, Entry{st.get(), ver, views.ended, nullptr, 0});
        map_[k] = order_.begin();
        trim();
        return nullptr;
      }
      order_.splice(order_.begin(), order_, it->second);
      Entry& e = it->second->second;
      if (e.version != ver || e.views_ended != views.ended) {  // written since
        bytes_ -= e.bytes;
        e = Entry{st.get(), ver, views.ended, nullptr, 0};
        return nullptr;
      }
      if (e.data) {
        ++hits_;
        return e.data;
      }
      // Evicted for the budget before and back: the working set is larger than the budget (a
      // model's weights cycled through every call). Evicting again would repack every weight on
      // every call; instead this one runs unpacked and the packed ones stay.
      if (bytes_ + bytes > limit_ && ghosts_.count(k)) return nullptr;
    }
    std::shared_ptr<void> data = pack();
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.find(k);
    // Serve it only if nothing changed while packing (a write racing the pack, or a new export).
    if (it == map_.end() || !(external_views(st.get()) == views) ||
        st->version.load(std::memory_order_acquire) != ver)
      return nullptr;
    Entry& e = it->second->second;
    if (e.version != ver || e.views_ended != views.ended) return nullptr;
    if (!e.data) {
      e.data = data;
      e.bytes = bytes;
      bytes_ += bytes;
      ++packs_;
      trim();
    }
    return e.data ? e.data : data;
  }

  // A storage's destructor (DerivedCache::storage_freed).
  void storage_freed(const Storage* s) {
    std::lock_guard<std::mutex> g(mu_);
    erase_storage(s);
  }
  int64_t bytes() {
    std::lock_guard<std::mutex> g(mu_);
    return static_cast<int64_t>(bytes_);
  }
  // lucid.empty_cache(): every entry goes; the counters stay.
  int64_t release_all() {
    std::lock_guard<std::mutex> g(mu_);
    const int64_t freed = static_cast<int64_t>(bytes_);
    order_.clear();
    map_.clear();
    ghosts_.clear();
    bytes_ = 0;
    return freed;
  }

  WeightPackStats stats() {
    std::lock_guard<std::mutex> g(mu_);
    WeightPackStats r;
    r.entries = order_.size();
    for (auto& kv : order_) r.packed += kv.second.data != nullptr;
    r.bytes = bytes_;
    r.limit = limit_;
    r.hits = hits_;
    r.packs = packs_;
    return r;
  }
  size_t set_limit(size_t bytes) {
    std::lock_guard<std::mutex> g(mu_);
    size_t old = limit_;
    limit_ = bytes;
    trim();
    return old;
  }
  void clear() {
    release_all();
    std::lock_guard<std::mutex> g(mu_);
    hits_ = packs_ = 0;
  }

 private:
  struct Entry {
    const Storage* storage;  // alive: its destructor erases the entry
    uint32_t version = 0;
    uint64_t views_ended = 0;  // external views of the storage that had ended when it was packed
    std::shared_ptr<void> data;  // null until packed
    size_t bytes = 0;
  };
  using List = std::list<std::pair<Key, Entry>>;

  List::iterator erase(List::iterator it) {
    bytes_ -= it->second.bytes;
    map_.erase(it->first);
    return order_.erase(it);
  }
  void erase_storage(const Storage* s) {
    for (auto it = order_.begin(); it != order_.end();) {
      if (it->second.storage == s) it = erase(it);
      else ++it;
    }
    for (auto it = ghosts_.begin(); it != ghosts_.end();) {
      if (it->second == s) it = ghosts_.erase(it);
      else ++it;
    }
  }
  // Evicts least recently used entries over the byte or entry limit.
  // A packed entry evicted for the byte budget leaves a ghost (its key), so that its return is
  // recognised (get); ghosts are bounded and die with their storage.
  void trim() {
    while (!order_.empty() && (bytes_ > limit_ || order_.size() > kPackMaxEntries)) {
      auto last = std::prev(order_.end());
      if (last->second.data && bytes_ > limit_) {
        if (ghosts_.size() >= kPackMaxEntries) ghosts_.clear();
        ghosts_.emplace(last->first, last->second.storage);
      }
      erase(last);
    }
  }

  std::mutex mu_;
  std::atomic<size_t> limit_{0};
  List order_;
  std::unordered_map<Key, List::iterator, KeyHash> map_;
  std::unordered_map<Key, const Storage*, KeyHash> ghosts_;  // evicted for the budget (trim)
  size_t bytes_ = 0;
  uint64_t hits_ = 0, packs_ = 0;
};

// Never destroyed (storages may die during static destruction and call storage_freed).
PackCache& pack_cache() {
  static PackCache* c = [] {
    auto* cache = new PackCache;
    static const DerivedCache hooks{[](const Storage* s) { pack_cache().storage_freed(s); },
                                    [] { return pack_cache().bytes(); }, [] { return pack_cache().release_all(); }};
    register_derived_cache(&hooks);
    return cache;
  }();
  return *c;
}

}  // namespace

bool weight_pack_enabled() { return pack_cache().enabled(); }

std::shared_ptr<void> packed_weight(const dnnl_util::Key& k, const std::shared_ptr<Storage>& st, size_t bytes,
                                    const std::function<std::shared_ptr<void>()>& pack) {
  if (!pack_cache().enabled() || !version_tracks_contents(*st)) return nullptr;
  return pack_cache().get(k, st, bytes, pack);
}

std::shared_ptr<void> reorder_copy(const dnnl::memory::desc& from, const void* src, const dnnl::memory::desc& to) {
  const size_t bytes = to.get_size();
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  std::shared_ptr<void> buf(p, [](void* q) { std::free(q); });
  dnnl::memory s = dnnl_util::mem(from, src), d = dnnl_util::mem(to, p);
  dnnl::reorder(s, d).execute(dnnl_util::stream(), s, d);
  dnnl_util::stream().wait();
  return buf;
}

bool add_layout(dnnl_util::Key& k, const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked) return false;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  k.add(d.ndims).add(d.data_type).add(d.offset0).add(b.inner_nblks).add(d.extra.flags);
  for (int i = 0; i < d.ndims; ++i) k.add(d.dims[i]).add(d.padded_dims[i]).add(d.padded_offsets[i]).add(b.strides[i]);
  for (int i = 0; i < b.inner_nblks; ++i) k.add(b.inner_blks[i]).add(b.inner_idxs[i]);
  return true;
}

WeightPackStats weight_pack_stats() { return pack_cache().stats(); }
size_t weight_pack_set_limit(size_t bytes) { return pack_cache().set_limit(bytes); }
void weight_pack_clear() { pack_cache().clear(); }

}  // namespace lucid::cpu
