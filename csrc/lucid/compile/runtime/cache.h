// The process-wide executable cache: optimised graph -> Executable, keyed by the graph's
// canonical hash (wiring, attributes, shapes, dtypes, constants, outputs, assigns) and confirmed
// by comparing the printed graphs, so two graphs with the same op sequence never share an
// executable. LRU-bounded by LUCID_COMPILE_MAX_CACHE (default 64). Entries are shared_ptrs:
// evicting one never invalidates an executable a CompiledModule still holds.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "lucid/compile/runtime/executable.h"

namespace lucid::rt {

struct CompileResult {
  std::shared_ptr<const Executable> exe;
  ir::PassStats stats;
  uint64_t hash = 0;
  bool cache_hit = false;  // the executable came from the process-wide cache
  bool from_disk = false;  // the optimised program came from the persistent compile cache (export/disk_cache.h)
};

// Optimises a traced graph, then returns the cached executable for it or builds one.
// dump: LUCID_DUMP_IR's value ("" for none).
CompileResult compile_graph(const ir::Graph& traced, const std::string& dump);

// The cached executable for an already optimised graph, or a new one (planned, not optimised
// again): compile_graph's second half, and how artifacts and the compile cache build theirs.
CompileResult build_executable(ir::Graph optimized);

// A joint forward+backward trace: partitioned, then each half compiled as above.
struct JointCompileResult {
  CompileResult forward, backward;
  int num_saved = 0;
};
JointCompileResult compile_joint(const ir::Graph& joint, int n_fwd_inputs, int n_fwd_outputs, const std::string& dump);

size_t executable_cache_size();
size_t executable_cache_capacity();
void set_executable_cache_capacity(size_t n);
void clear_executable_cache();
// Frees the arenas of cached executables that only the cache still holds (no compiled entry or
// backward node uses them): they stay cached for a later identical graph, without their memory.
// Runs after every compile, and when a CompiledModule's entries are cleared.
void trim_executable_cache();

}  // namespace lucid::rt
