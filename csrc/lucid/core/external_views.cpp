// The external-view registry (see external_views.h): a map from exported storages to their
// counts, under one mutex; a storage with an entry is marked derived so its destructor erases it.
#include "lucid/core/external_views.h"

#include <mutex>
#include <unordered_map>

namespace lucid {

namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<const Storage*, ExternalViewCount> counts;
};

// Never destroyed (storages may die during static destruction and call storage_freed).
Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    static const DerivedCache hooks{[](const Storage* s) {
                                      std::lock_guard<std::mutex> g(registry().mu);
                                      registry().counts.erase(s);
                                    },
                                    [] { return int64_t{0}; }, [] { return int64_t{0}; }};
    register_derived_cache(&hooks);
    return reg;
  }();
  return *r;
}

}  // namespace

void external_view_begin(Storage* s) {
  Registry& r = registry();
  s->mark_derived();
  std::lock_guard<std::mutex> g(r.mu);
  ++r.counts[s].live;
}

void external_view_end(const Storage* s) {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  auto it = r.counts.find(s);
  if (it == r.counts.end()) return;
  --it->second.live;
  ++it->second.ended;
}

ExternalViewCount external_views(const Storage* s) {
  if (!s->has_derived.load(std::memory_order_relaxed)) return {};
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  auto it = r.counts.find(s);
  return it == r.counts.end() ? ExternalViewCount{} : it->second;
}

bool version_tracks_contents(const Storage& s) { return s.owner.get() == s.data && external_views(&s).live == 0; }

}  // namespace lucid
