// The process-wide lucid.backends.cudnn switches (cudnn_flags.h).
#include "lucid/backends/cudnn_flags.h"

namespace lucid {

CudnnFlags& cudnn_flags() {
  static CudnnFlags flags;
  return flags;
}

}  // namespace lucid
