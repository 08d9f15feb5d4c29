// The thread's active GraphPool (graph_pool.h).
#include "lucid/backends/cuda/graph_pool.h"

namespace lucid::cuda {

namespace {
thread_local GraphPool* t_pool = nullptr;
}  // namespace

GraphPool* active_graph_pool() { return t_pool; }

GraphPoolScope::GraphPoolScope(GraphPool* pool) : prev_(t_pool) { t_pool = pool; }
GraphPoolScope::~GraphPoolScope() { t_pool = prev_; }

}  // namespace lucid::cuda
