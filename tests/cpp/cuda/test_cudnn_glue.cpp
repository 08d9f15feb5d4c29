// The cuDNN glue of the CUDA backend (built only with LUCID_CUDA), the parts that need no GPU:
// check_cudnn turns a failed status into a lucid::Error naming the call and carrying cuDNN's own
// status name, and the lucid.backends.cudnn flags default as torch.backends.cudnn's (allow_tf32 on).
#include <gtest/gtest.h>

#include <string>

#include "lucid/backends/cuda/cudnn_handle.h"
#include "lucid/backends/cudnn_flags.h"
#include "lucid/core/error.h"

using namespace lucid;

TEST(CudnnGlue, FailedStatusIsAnErrorWithCudnnsText) {
  EXPECT_NO_THROW(cuda::check_cudnn(CUDNN_STATUS_SUCCESS, "cudnnCreate"));
  try {
    cuda::check_cudnn(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream");
    FAIL() << "no exception";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cudnnSetStream"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CUDNN_STATUS_BAD_PARAM"), std::string::npos) << msg;
  }
}

TEST(CudnnGlue, FlagsDefaultAsTorch) {
  CudnnFlags fresh;
  EXPECT_TRUE(fresh.allow_tf32.load());
  EXPECT_FALSE(fresh.benchmark.load());
  EXPECT_FALSE(fresh.deterministic.load());
  EXPECT_FALSE(fresh.deterministic_algorithms.load());
}
