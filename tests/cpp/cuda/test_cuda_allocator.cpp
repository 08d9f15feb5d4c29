// The CUDA caching allocator (backends/cuda/cuda_allocator.cu) on the GPU: size rounding, block
// splitting and the merging of free neighbours, the separate small and large pools, blocks kept
// per stream, blocks used on another stream (record_stream), the counters, empty_cache, recovery
// from an out-of-memory request, and concurrent use. Skipped without a device. Each test starts
// from an emptied cache and reads counter deltas, so the tests do not depend on their order.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <thread>
#include <vector>

#include "lucid/backends/cuda/cuda_allocator.h"
#include "lucid/backends/cuda/device_info.h"
#include "lucid/backends/cuda/stream.h"
#include "lucid/backends/cuda/stream_objects.h"
#include "lucid/core/allocator.h"
#include "lucid/core/memory_error.h"
#include "held_stream.h"

using namespace lucid;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

class CudaAllocator : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    alloc_ = &allocator_for(Device{DeviceType::CUDA, 0}, "test");
    alloc_->empty_cache(0);
    base_ = cuda::allocator_stats(0);
  }
  cuda::AllocatorStats delta() const {
    cuda::AllocatorStats s = cuda::allocator_stats(0), d;
    d.allocated = s.allocated - base_.allocated;
    d.reserved = s.reserved - base_.reserved;
    d.num_device_alloc = s.num_device_alloc - base_.num_device_alloc;
    d.num_device_free = s.num_device_free - base_.num_device_free;
    d.num_ooms = s.num_ooms - base_.num_ooms;
    d.segments = s.segments - base_.segments;
    return d;
  }
  Allocator* alloc_ = nullptr;
  cuda::AllocatorStats base_;
};

// Sets the current stream of device 0 for a scope.
struct StreamScope {
  explicit StreamScope(cudaStream_t s) : prev(cuda::set_current_stream(0, s)) {}
  ~StreamScope() { cuda::set_current_stream(0, prev); }
  cudaStream_t prev;
};

cudaStream_t pooled() { return reinterpret_cast<cudaStream_t>(cuda::pooled_stream(0, 0).handle); }

}  // namespace

TEST_F(CudaAllocator, RoundsTo512AndSmallRequestsShareA2MiBSegment) {
  Allocation a = alloc_->allocate(1, 0);
  EXPECT_EQ(delta().allocated, 512);
  EXPECT_EQ(delta().reserved, static_cast<int64_t>(2 * kMiB));
  Allocation b = alloc_->allocate(1000, 0);  // 1024 bytes, split from the same segment
  EXPECT_EQ(delta().allocated, 512 + 1024);
  EXPECT_EQ(delta().num_device_alloc, 1);
  EXPECT_EQ(static_cast<char*>(b.data), static_cast<char*>(a.data) + 512);
  Allocation zero = alloc_->allocate(0, 0);  // a valid, distinct pointer
  EXPECT_NE(zero.data, nullptr);
  EXPECT_NE(zero.data, a.data);
  EXPECT_NE(zero.data, b.data);
  a = {};
  b = {};
  zero = {};
  EXPECT_EQ(delta().allocated, 0);
  EXPECT_EQ(delta().reserved, static_cast<int64_t>(2 * kMiB));  // kept for reuse
  EXPECT_GE(alloc_->stats(0).cached, static_cast<int64_t>(2 * kMiB));
}

TEST_F(CudaAllocator, FreedNeighboursMergeBackIntoTheWholeSegment) {
  Allocation a = alloc_->allocate(4096, 0);
  Allocation b = alloc_->allocate(4096, 0);
  Allocation c = alloc_->allocate(4096, 0);
  void* start = a.data;
  b = {};  // a hole between two blocks in use
  a = {};  // merges with the hole after it
  c = {};  // merges with both sides: the segment is one free block again
  Allocation whole = alloc_->allocate(kMiB, 0);  // the largest small request fits only a whole segment
  EXPECT_EQ(whole.data, start);
  EXPECT_EQ(delta().num_device_alloc, 1);
  whole = {};
  EXPECT_EQ(alloc_->empty_cache(0), static_cast<int64_t>(2 * kMiB));  // merged: freeable as one segment
  EXPECT_EQ(delta().reserved, 0);
  EXPECT_EQ(delta().num_device_free, 1);
}

TEST_F(CudaAllocator, LargeRequestsUseTheLargePool) {
  Allocation small = alloc_->allocate(kMiB, 0);
  Allocation mid = alloc_->allocate(kMiB + 1, 0);  // large pool: a 20 MiB segment, split
  EXPECT_EQ(delta().reserved, static_cast<int64_t>(2 * kMiB + 20 * kMiB));
  Allocation mid2 = alloc_->allocate(3 * kMiB, 0);  // the rest of that segment
  EXPECT_EQ(delta().num_device_alloc, 2);
  Allocation fits = alloc_->allocate(11 * kMiB, 0);  // best fit: what is left of the 20 MiB segment
  EXPECT_EQ(delta().num_device_alloc, 2);
  Allocation big = alloc_->allocate(17 * kMiB, 0);  // fits no free block: a segment rounded to 2 MiB
  EXPECT_EQ(delta().reserved, static_cast<int64_t>(2 * kMiB + 20 * kMiB + 18 * kMiB));
  // A large block's rest of 1 MiB or less is not split off: the block keeps (and counts) it.
  EXPECT_EQ(delta().allocated, static_cast<int64_t>(kMiB + (kMiB + 512) + 3 * kMiB + 11 * kMiB + 18 * kMiB));
}

TEST_F(CudaAllocator, BlocksAreReusedOnlyOnTheirOwnStream) {
  void* first = nullptr;
  {
    Allocation a = alloc_->allocate(8192, 0);  // on the legacy default stream
    first = a.data;
  }
  cudaStream_t s = pooled();
  {
    StreamScope scope(s);
    Allocation b = alloc_->allocate(8192, 0);  // the default stream's free block is not taken
    EXPECT_NE(b.data, first);
    EXPECT_EQ(delta().num_device_alloc, 2);
    void* on_s = b.data;
    {
      StreamScope back(nullptr);
      b = {};  // freed while another stream is current: still goes back to s's blocks
    }
    Allocation c = alloc_->allocate(8192, 0);
    EXPECT_EQ(c.data, on_s);
  }
  Allocation d = alloc_->allocate(8192, 0);  // the default stream again: its own block
  EXPECT_EQ(d.data, first);
  EXPECT_EQ(delta().num_device_alloc, 2);
}

TEST_F(CudaAllocator, ABlockUsedOnAnotherStreamWaitsForThatStreamBeforeReuse) {
  cudaStream_t side = pooled();
  Allocation a = alloc_->allocate(4096, 0);  // on the legacy default stream
  void* const pa = a.data;
  const int64_t segments_made = cuda::allocator_stats(0).num_device_alloc;
  {
    test::HeldStream held(side);  // side's work queued from here on stays pending
    cuda::record_stream(pa, 0, reinterpret_cast<uintptr_t>(side));
    cuda::record_stream(pa, 0, 0);  // the block's own stream: nothing to track
    a = {};                         // freed while side has not passed the free: pending
    cuda::AllocatorStats s = cuda::allocator_stats(0);
    EXPECT_EQ(s.allocated - base_.allocated, 0);  // no tensor holds it
    EXPECT_EQ(s.active_bytes - base_.active_bytes, 4096);
    EXPECT_EQ(s.active_blocks - base_.active_blocks, 1);
    Allocation b = alloc_->allocate(4096, 0);
    EXPECT_NE(b.data, pa);
    EXPECT_EQ(cuda::allocator_stats(0).num_device_alloc, segments_made);  // b: the rest of a's segment
    held.release();
    ASSERT_EQ(cudaStreamSynchronize(side), cudaSuccess);
    Allocation c = alloc_->allocate(4096, 0);  // the pending block is free again
    EXPECT_EQ(c.data, pa);
  }
  cuda::AllocatorStats s = cuda::allocator_stats(0);
  EXPECT_EQ(s.active_bytes, s.allocated);
  EXPECT_EQ(s.active_blocks, base_.active_blocks);
  // An address the allocator did not hand out is not tracked (nor an error).
  int host = 0;
  cuda::record_stream(&host, 0, reinterpret_cast<uintptr_t>(side));
}

TEST_F(CudaAllocator, EmptyCacheReleasesASegmentWhoseBlockWasPending) {
  cudaStream_t side = pooled();
  Allocation a = alloc_->allocate(12 * kMiB, 0);  // a segment of its own (cudaMalloc before the hold)
  {
    test::HeldStream held(side);
    cuda::record_stream(a.data, 0, reinterpret_cast<uintptr_t>(side));
    a = {};
    EXPECT_EQ(delta().segments, 1);
    EXPECT_EQ(delta().allocated, 0);
  }  // side released and synchronised
  alloc_->empty_cache(0);
  EXPECT_EQ(delta().segments, 0);
  EXPECT_EQ(delta().reserved, 0);
  EXPECT_EQ(cuda::allocator_stats(0).active_bytes, cuda::allocator_stats(0).allocated);
}

TEST_F(CudaAllocator, ResetPeakRestartsFromTheCurrentValue) {
  { Allocation a = alloc_->allocate(64 * kMiB, 0); }
  EXPECT_GE(alloc_->stats(0).peak, static_cast<int64_t>(64 * kMiB));
  alloc_->reset_peak(0);
  EXPECT_EQ(alloc_->stats(0).peak, alloc_->stats(0).allocated);
  EXPECT_EQ(cuda::allocator_stats(0).peak_reserved, cuda::allocator_stats(0).reserved);
}

TEST_F(CudaAllocator, OutOfMemoryRaisesWithTheSizesAndLeavesTheDeviceUsable) {
  Allocation keep = alloc_->allocate(kMiB, 0);
  { Allocation cached = alloc_->allocate(30 * kMiB, 0); }  // cached, freed by the retry
  const size_t huge = size_t{10} << 40;  // 10 TiB
  try {
    Allocation a = alloc_->allocate(huge, 0);
    FAIL() << "10 TiB were allocated";
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("CUDA out of memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(huge)), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("free"), std::string::npos) << msg;
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(delta().num_ooms, 1);
  EXPECT_EQ(delta().reserved, static_cast<int64_t>(2 * kMiB));  // the unused 30 MiB segment was released
  Allocation after = alloc_->allocate(4 * kMiB, 0);
  EXPECT_NE(after.data, nullptr);
  EXPECT_EQ(cudaMemset(after.data, 0, 4 * kMiB), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST_F(CudaAllocator, ConcurrentAllocationsAndFreesKeepTheCountersExact) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([this, t] {
      std::vector<Allocation> held;
      for (int i = 0; i < 500; ++i) {
        held.push_back(alloc_->allocate(static_cast<size_t>(512 * (1 + (i * 7 + t) % 40)), 0));
        if (held.size() > 16) held.erase(held.begin());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(delta().allocated, 0);
  EXPECT_EQ(cuda::allocator_stats(0).active_blocks, base_.active_blocks);
}

TEST_F(CudaAllocator, AnAbsentDeviceRaises) {
  EXPECT_THROW(alloc_->allocate(16, cuda::device_count()), Error);
  EXPECT_THROW(cuda::allocator_stats(cuda::device_count()), Error);
}

TEST_F(CudaAllocator, AMemoryFractionCapsTheReservedBytes) {
  const double total = static_cast<double>(cuda::mem_get_info(0).total);
  cuda::set_memory_fraction((static_cast<double>(cuda::allocator_stats(0).reserved) + 64.0 * kMiB) / total, 0);
  Allocation a = alloc_->allocate(30 * kMiB, 0);
  try {
    Allocation b = alloc_->allocate(40 * kMiB, 0);  // 30 + 40 MiB reserved would pass the cap
    FAIL() << "the memory fraction was not enforced";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("set_per_process_memory_fraction"), std::string::npos) << e.what();
  }
  a = {};
  Allocation b = alloc_->allocate(40 * kMiB, 0);  // the retry frees the cached 30 MiB segment: it fits
  EXPECT_NE(b.data, nullptr);
  b = {};
  cuda::set_memory_fraction(1.0, 0);
  EXPECT_THROW(cuda::set_memory_fraction(1.5, 0), ValueError);
}
