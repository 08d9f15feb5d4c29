// The persistent compile cache: optimised programs on disk, shared by every process of one build,
// so a fresh process skips the passes (ir::optimize) and the forward/backward partition for a
// graph some earlier run compiled. Tracing still runs (the trace is the key); planning and the
// executable are rebuilt from the stored program (rt::build_executable), as for an artifact.
//
// Where: LUCID_COMPILE_CACHE_DIR; unset means $XDG_CACHE_HOME/lucid/compile (an absolute
// XDG_CACHE_HOME), else ~/.cache/lucid/compile; "" or "0" disables the cache. Read at every
// compile. LUCID_DUMP_IR set bypasses it (the dump needs the passes to run).
//
// Key: XXH3-128 of the traced graph's text (ir::print), the bytes of every constant (the text
// rounds them), the stamp (stamp.h: format and lucid version, op registry hash, ISA, libraries),
// this build's binary (a rebuild with a changed pass must not serve the old program),
// LUCID_COMPILE_DISABLE, and which compile it is (a graph, or a joint trace with its forward's
// input and output counts). One file per key, <key>.lcc, a container (container.h) holding the
// optimised program(s) (program_io.h), their canonical hashes, the pass statistics and the
// traced text.
//
// Reading trusts nothing: an entry that is truncated, corrupt, from another stamp or build, or
// whose stored key, traced text or program hash differs from what was asked for is deleted and
// compiled again (and rewritten): never a crash, never another graph's program. Writes are atomic
// (a temporary file, then rename), so processes writing one key at once each leave a whole entry.
// A hit touches the entry's mtime; after a write, if the directory's entries exceed
// LUCID_COMPILE_CACHE_MB (default 1024; fractions allowed), the least recently used are deleted.
// Only *.lcc files (and this cache's temporary files) are ever deleted. A failed write (read-only
// directory, full disk) leaves the compile as it was and warns once per process on stderr.
//
// Trust: reading an entry is as safe as loading an artifact (no code runs, sizes are bounded by
// the file, programs are verified and type-checked), and accidents (corruption, truncation,
// collisions, renamed files, another build's entries) are caught. A well-formed entry written on
// purpose with another program under a graph's key would be served, as in any compile cache
// (ccache, torch inductor's), so the directories this cache creates are private (mode 0700).
#pragma once
#include <string>

#include "lucid/compile/runtime/cache.h"

namespace lucid::artifact {

// The cache's directory as configured now (see above); "" when the cache is disabled. Backends
// keep their device code there too (the CUDA backend's cubins, backends/cuda/compile/nvrtc_program.h).
std::string compile_cache_dir();

// rt::compile_graph through the cache: from_disk tells whether the program was read from it.
rt::CompileResult compile_graph_cached(const ir::Graph& traced, const std::string& dump);
// rt::compile_joint through the cache (forward, backward and num_saved stored together).
rt::JointCompileResult compile_joint_cached(const ir::Graph& joint, int n_fwd_inputs, int n_fwd_outputs,
                                            const std::string& dump);

}  // namespace lucid::artifact
