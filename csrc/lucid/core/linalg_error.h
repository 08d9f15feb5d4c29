// LinAlgError: a numerical failure of a linalg routine (a singular matrix, a matrix that is not
// positive-definite, no convergence). Python's lucid.linalg.LinAlgError, a RuntimeError subclass
// as torch.linalg.LinAlgError; the bindings register it (python/src/linalg_decomp_bind.cpp).
#pragma once
#include "lucid/core/error.h"

namespace lucid {

struct LinAlgError : Error { using Error::Error; };

}  // namespace lucid
