// OutOfMemoryError: a device allocator could not get the memory it was asked for, even after
// releasing its caches (the CUDA caching allocator, the pinned host allocator). Python's
// lucid.OutOfMemoryError, a RuntimeError subclass as torch.OutOfMemoryError; the bindings
// register it (python/src/module.cpp). Its own header, as linalg_error.h, so that adding it did
// not touch every file of the engine.
#pragma once
#include "lucid/core/error.h"

namespace lucid {

struct OutOfMemoryError : Error { using Error::Error; };

}  // namespace lucid
