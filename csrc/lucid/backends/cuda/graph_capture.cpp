// The thread's capture context (graph_capture.h).
#include "lucid/backends/cuda/graph_capture.h"

namespace lucid::cuda {

namespace {
thread_local GraphPool* t_pool = nullptr;
thread_local GraphPhilox t_philox;
}  // namespace

GraphPool* active_graph_pool() { return t_pool; }

GraphPoolScope::GraphPoolScope(GraphPool* pool) : prev_(t_pool) { t_pool = pool; }
GraphPoolScope::~GraphPoolScope() { t_pool = prev_; }

const GraphPhilox& graph_philox() { return t_philox; }

GraphPhiloxScope::GraphPhiloxScope(GraphPhilox p) : prev_(t_philox) { t_philox = p; }
GraphPhiloxScope::~GraphPhiloxScope() { t_philox = prev_; }

}  // namespace lucid::cuda
