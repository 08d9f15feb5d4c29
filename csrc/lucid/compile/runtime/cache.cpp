// Process-wide executable cache (see cache.h).
#include "lucid/compile/runtime/cache.h"

#include <cstdlib>
#include <list>
#include <mutex>
#include <unordered_map>

#include "lucid/compile/passes/backend_passes.h"

namespace lucid::rt {

namespace {
struct CacheEntry {
  uint64_t hash;
  std::string text;  // printed optimised graph: confirms a hash match
  std::shared_ptr<const Executable> exe;
};

struct Cache {
  std::mutex mu;
  std::list<CacheEntry> lru;  // front = most recently used
  std::unordered_multimap<uint64_t, std::list<CacheEntry>::iterator> by_hash;
  size_t capacity;
  Cache() {
    const char* env = std::getenv("LUCID_COMPILE_MAX_CACHE");
    long n = env ? std::strtol(env, nullptr, 10) : 64;
    capacity = n > 0 ? static_cast<size_t>(n) : 64;
  }
  // Arenas of executables only the cache holds (caller holds mu).
  void trim_unused() {
    for (const CacheEntry& e : lru)
      if (e.exe.use_count() == 1) e.exe->trim();
  }
  void evict() {
    while (lru.size() > capacity) {
      auto last = std::prev(lru.end());
      auto range = by_hash.equal_range(last->hash);
      for (auto it = range.first; it != range.second; ++it)
        if (it->second == last) { by_hash.erase(it); break; }
      lru.erase(last);
    }
  }
};
Cache& cache() {
  static Cache c;
  return c;
}
}  // namespace

CompileResult compile_graph(const ir::Graph& traced, const std::string& dump) {
  ir::PassStats stats;
  ir::Graph g = ir::optimize(traced, dump, &stats);
  CompileResult r = build_executable(std::move(g));
  r.stats = stats;
  return r;
}

CompileResult build_executable(ir::Graph g) {
  CompileResult r;
  r.stats.nodes_before = r.stats.nodes_after = static_cast<int>(g.nodes().size());
  r.hash = ir::canonical_hash(g);
  std::string text = ir::print(g);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lk(c.mu);
    auto range = c.by_hash.equal_range(r.hash);
    for (auto it = range.first; it != range.second; ++it)
      if (it->second->text == text) {
        c.lru.splice(c.lru.begin(), c.lru, it->second);
        r.exe = it->second->exe;
        r.cache_hit = true;
        return r;
      }
  }
  ir::MemoryPlan plan = ir::pass_disabled("memory_plan")
                            ? eager_plan(g)
                            : ir::plan_memory(g, !ir::pass_disabled("state_cache") &&
                                                     ir::backend_passes(ir::graph_device(g).type).caches_state_values);
  auto exe = std::make_shared<const Executable>(std::move(g), std::move(plan));
  std::lock_guard<std::mutex> lk(c.mu);
  c.lru.push_front({r.hash, std::move(text), exe});
  c.by_hash.emplace(r.hash, c.lru.begin());
  c.evict();
  r.exe = exe;
  c.trim_unused();
  return r;
}

JointCompileResult compile_joint(const ir::Graph& joint, int n_fwd_inputs, int n_fwd_outputs, const std::string& dump) {
  ir::JointPartition p = ir::partition_joint(joint, n_fwd_inputs, n_fwd_outputs);
  JointCompileResult r;
  r.forward = compile_graph(p.forward, dump);
  r.backward = compile_graph(p.backward, dump);
  r.num_saved = p.num_saved;
  return r;
}

size_t executable_cache_size() {
  std::lock_guard<std::mutex> lk(cache().mu);
  return cache().lru.size();
}
size_t executable_cache_capacity() {
  std::lock_guard<std::mutex> lk(cache().mu);
  return cache().capacity;
}
void set_executable_cache_capacity(size_t n) {
  std::lock_guard<std::mutex> lk(cache().mu);
  cache().capacity = n > 0 ? n : 1;
  cache().evict();
}
void clear_executable_cache() {
  std::lock_guard<std::mutex> lk(cache().mu);
  cache().lru.clear();
  cache().by_hash.clear();
}

void trim_executable_cache() {
  std::lock_guard<std::mutex> lk(cache().mu);
  cache().trim_unused();
}

}  // namespace lucid::rt
