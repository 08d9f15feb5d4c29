// ArtifactError: a saved artifact or compile-cache file that can't be used, with the cause named
// (truncated, corrupt, wrong format version, unknown op or changed attribute schema, a CPU
// without an instruction set the build needs, weights whose names, shapes or dtypes don't match,
// a path that can't be written). The bindings turn it into lucid.compile.ArtifactError, a
// RuntimeError (python/src/module.cpp).
#pragma once
#include "lucid/core/error.h"

namespace lucid {

struct ArtifactError : Error { using Error::Error; };

}  // namespace lucid
