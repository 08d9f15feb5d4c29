// The compatibility stamp of an artifact or compile-cache entry: what the saving build was and
// needed, checked when a file is read. Fatal differences raise ArtifactError naming the cause:
// the artifact format version, an op the loading build does not have or whose attribute schema
// changed, an instruction set the build's kernels require that this CPU lacks, a device this
// build can't run. Library versions (oneDNN, Sleef, OpenBLAS; in a CUDA build also the CUDA
// libraries of backends/cuda/libraries.h) and the lucid version are recorded for diagnosis (a
// newer oneDNN runs the same program).
#pragma once
#include <set>
#include <string>

#include "lucid/compile/export/container.h"
#include "lucid/ops/op_def.h"

namespace lucid::artifact {

// The format of the header's contents (entries, programs, tensors); bumped on any change.
// 2: FusedElementwise bodies may hold ops with attributes (gelu, clamp...), their Attrs in the
// body's IR text, which a version-1 reader's fused runtime can't run.
constexpr int kFormatVersion = 2;

// {"format_version", "lucid_version", "op_registry_hash", "isa": [...], "libraries": {...},
//  "devices": [...]}
json make_stamp(const std::set<std::string>& devices);
// {op name: attribute schema text} of the ops a file uses.
json op_table(const std::set<OpId>& ops);
// Raises ArtifactError when `header` (its "stamp" and "ops") can't run in this build.
void check_compatible(const json& header, const std::string& path);
// Instruction sets this build's kernels are compiled for (x86-64-v3: avx2, fma, f16c, ...).
std::vector<std::string> required_isa();

}  // namespace lucid::artifact
