// The per-device allocator interface (core/allocator.h) and the memory statistics over it
// (core/storage.h): the CPU allocator's counters (allocate, free, peak, cached, empty_cache), the
// table by device type (a stand-in allocator for CUDA, the error for a device type without one),
// a CPU tensor made during static initialisation; and copy_values (dispatch.h), the
// backend-neutral copy, against cpu::copy_into on strided, broadcast and converting copies.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "lucid/backends/cpu/loops.h"
#include "lucid/core/allocator.h"
#include "lucid/core/storage.h"
#include "lucid/dispatch/dispatch.h"

using namespace lucid;

namespace {

// Made while static initialisers run: its storage comes from cpu_allocator(), constructed on
// first use, whichever translation unit is initialised first.
const Tensor g_static_tensor = Tensor::empty({1000}, DType::Float32);

constexpr size_t k4MiB = size_t{4} << 20;  // a size class of its own on the CPU

bool cpu_cache_enabled() {
  const char* e = std::getenv("LUCID_CPU_CACHE_MB");
  return !e || std::atol(e) > 0;
}

// Host memory standing in for a device's: per-index counters, no caching.
class CountingAllocator final : public Allocator {
 public:
  Allocation allocate(size_t nbytes, int index) override {
    void* p = std::malloc(nbytes == 0 ? 1 : nbytes);
    Counters& c = counters_[index];
    c.allocated += static_cast<int64_t>(nbytes);
    c.peak = std::max(c.peak, c.allocated);
    ++c.calls;
    return {p, std::shared_ptr<void>(p, [this, index, nbytes](void* q) {
              counters_[index].allocated -= static_cast<int64_t>(nbytes);
              std::free(q);
            })};
  }
  MemoryStats stats(int index) const override {
    auto it = counters_.find(index);
    MemoryStats s;
    if (it != counters_.end()) s.allocated = it->second.allocated, s.peak = it->second.peak;
    s.cached = 7;  // so a test sees it is this allocator answering
    return s;
  }
  void reset_peak(int index) override { counters_[index].peak = counters_[index].allocated; }
  int64_t empty_cache(int index) override {
    ++counters_[index].empties;
    return 0;
  }
  struct Counters {
    int64_t allocated = 0, peak = 0;
    int calls = 0, empties = 0;
  };
  std::map<int, Counters> counters_;
};

// Installs a stand-in as CUDA's allocator for one test and puts back what was there.
struct ScopedAllocator {
  DeviceType type;
  Allocator* previous;
  ScopedAllocator(DeviceType t, Allocator* a) : type(t), previous(set_allocator(t, a)) {}
  ~ScopedAllocator() { set_allocator(type, previous); }
};

std::vector<unsigned char> bytes_of(const Tensor& t) {
  Tensor c = t.contiguous_data();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  return {p, p + c.numel() * static_cast<int64_t>(itemsize(c.dtype()))};
}

Tensor iota(const Shape& shape, DType dt) {
  Tensor t = Tensor::empty(shape, DType::Float64);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = (i % 7 == 0) ? 0.0 : 0.75 * static_cast<double>(i);
  if (dt == DType::Float64) return t;
  Tensor r = Tensor::empty(shape, dt);
  cpu::copy_into(r, t);
  return r;
}

}  // namespace

TEST(CpuAllocator, StaticInitialisationAllocates) {
  EXPECT_NE(g_static_tensor.data_ptr(), nullptr);
  EXPECT_TRUE(g_static_tensor.device().is_cpu());
}

TEST(CpuAllocator, CountsAllocationsFreesAndThePeak) {
  reset_peak_memory_stats();
  const int64_t before = memory_allocated();
  EXPECT_EQ(max_memory_allocated(), before);
  EXPECT_EQ(memory_allocated(Device{}), before);  // the CPU is the default device
  {
    auto s = Storage::allocate(k4MiB);
    EXPECT_TRUE(s->device.is_cpu());
    EXPECT_EQ(s->owner.get(), s->data);  // dnnl_matmul's packable_storage relies on it
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s->data) % 64, 0u);
    EXPECT_EQ(memory_allocated() - before, static_cast<int64_t>(k4MiB));
    EXPECT_EQ(cpu_allocator().stats(0).allocated, memory_allocated());
    auto t = Storage::allocate(4'000'000);  // rounded up to the 4 MiB class
    EXPECT_EQ(memory_allocated() - before, static_cast<int64_t>(2 * k4MiB));
  }
  EXPECT_EQ(memory_allocated(), before);
  EXPECT_EQ(max_memory_allocated(), before + static_cast<int64_t>(2 * k4MiB));
  reset_peak_memory_stats(Device{});
  EXPECT_EQ(max_memory_allocated(), before);
}

TEST(CpuAllocator, FreedBuffersAreCachedAndEmptyCacheFreesThem) {
  empty_cache();
  EXPECT_EQ(memory_cached(), 0);
  void* first = nullptr;
  {
    auto s = Storage::allocate(k4MiB);
    first = s->data;
  }
  if (!cpu_cache_enabled()) {  // LUCID_CPU_CACHE_MB=0 (scripts/sanitize.sh): nothing is kept
    EXPECT_EQ(memory_cached(), 0);
    return;
  }
  EXPECT_EQ(memory_cached(), static_cast<int64_t>(k4MiB));
  EXPECT_EQ(cpu_allocator().stats(0).cached, static_cast<int64_t>(k4MiB));
  {
    auto s = Storage::allocate(k4MiB - 100);  // the same class: the same buffer, out of the cache
    EXPECT_EQ(s->data, first);
    EXPECT_EQ(memory_cached(), 0);
  }
  EXPECT_EQ(empty_cache(Device{}), static_cast<int64_t>(k4MiB));
  EXPECT_EQ(memory_cached(), 0);
}

TEST(AllocatorTable, RoutesStorageAndStatisticsByDevice) {
  CountingAllocator fake;
  ScopedAllocator scope(DeviceType::CUDA, &fake);
  const Device cuda1{DeviceType::CUDA, 1};
  const int64_t cpu_before = memory_allocated();
  {
    auto s = Storage::allocate(1000, cuda1);
    EXPECT_EQ(s->device, cuda1);
    EXPECT_EQ(s->nbytes, 1000u);
    EXPECT_EQ(fake.counters_[1].calls, 1);
    EXPECT_EQ(memory_allocated(cuda1), 1000);
    EXPECT_EQ(memory_allocated(Device{DeviceType::CUDA, 0}), 0);  // per index
    EXPECT_EQ(memory_allocated(), cpu_before);                    // the CPU's counters are apart
  }
  EXPECT_EQ(memory_allocated(cuda1), 0);
  EXPECT_EQ(max_memory_allocated(cuda1), 1000);
  reset_peak_memory_stats(cuda1);
  EXPECT_EQ(max_memory_allocated(cuda1), 0);
  EXPECT_EQ(memory_cached(cuda1), 7);  // the allocator's own, no CPU derived caches
  EXPECT_EQ(empty_cache(cuda1), 0);
  EXPECT_EQ(fake.counters_[1].empties, 1);
}

TEST(AllocatorTable, BufferReturnsToItsAllocatorAfterTheTableChanges) {
  CountingAllocator fake;
  std::shared_ptr<Storage> s;
  {
    ScopedAllocator scope(DeviceType::CUDA, &fake);
    s = Storage::allocate(64, Device{DeviceType::CUDA, 0});
  }
  EXPECT_EQ(fake.counters_[0].allocated, 64);
  s.reset();
  EXPECT_EQ(fake.counters_[0].allocated, 0);
}

TEST(AllocatorTable, DeviceTypeWithoutAllocatorRaises) {
  ScopedAllocator none(DeviceType::CUDA, nullptr);
  const Device cuda{DeviceType::CUDA, 0};
  try {
    memory_allocated(cuda);
    FAIL() << "expected NotImplementedError";
  } catch (const NotImplementedError& e) {
    EXPECT_STREQ(e.what(), "memory_allocated: device 'cuda:0' has no memory allocator in this build of lucid "
                           "(no CUDA allocator is built yet)");
  }
  EXPECT_THROW(max_memory_allocated(cuda), NotImplementedError);
  EXPECT_THROW(reset_peak_memory_stats(cuda), NotImplementedError);
  EXPECT_THROW(memory_cached(cuda), NotImplementedError);
  EXPECT_THROW(empty_cache(cuda), NotImplementedError);
  EXPECT_THROW(Storage::allocate(16, cuda), NotImplementedError);
  EXPECT_THROW(set_allocator(DeviceType::CPU, nullptr), Error);  // the CPU's is fixed
}

// copy_values must be cpu::copy_into on the CPU: compare bytes for each kind of copy.
TEST(CopyValues, MatchesCpuCopyIntoOnTheCpu) {
  const DType dtypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                          DType::Int64,   DType::Int32,   DType::UInt8,   DType::Bool};
  for (DType from : dtypes)
    for (DType to : dtypes) {
      Tensor src = iota({4, 6}, from);
      // Strided source (the transpose), broadcast source (a row expanded), strided destination.
      Tensor srcT = Tensor::make_view(src, {6, 4}, {1, 6}, 0);
      Tensor row = Tensor::make_view(src, {3, 6}, {0, 1}, 6);
      struct Case { Tensor src; Shape dst_shape; bool strided_dst; };
      for (const Case& c : {Case{src, {4, 6}, false}, Case{srcT, {6, 4}, false}, Case{row, {3, 6}, false},
                            Case{src, {4, 6}, true}}) {
        Tensor a, b;
        if (c.strided_dst) {
          Tensor ba = Tensor::empty({6, 4}, to), bb = Tensor::empty({6, 4}, to);
          std::memset(ba.data_ptr(), 0, 24 * itemsize(to));
          std::memset(bb.data_ptr(), 0, 24 * itemsize(to));
          a = Tensor::make_view(ba, {4, 6}, {1, 4}, 0);
          b = Tensor::make_view(bb, {4, 6}, {1, 4}, 0);
        } else {
          a = Tensor::empty(c.dst_shape, to);
          b = Tensor::empty(c.dst_shape, to);
        }
        cpu::copy_into(a, c.src);
        copy_values(b, c.src);
        EXPECT_EQ(bytes_of(a), bytes_of(b)) << dtype_name(from) << " -> " << dtype_name(to);
      }
    }
}

TEST(CopyValues, RoutesByTheDestinationsDevice) {
  // A CUDA build's Copy kernel would run on this fake tensor's host memory
  // (tests/python/test_cuda_elementwise.py covers the copies between devices).
  if (op_def(OpId::Copy).kernel(DeviceType::CUDA)) GTEST_SKIP() << "the CUDA backend has a Copy kernel";
  CountingAllocator fake;
  ScopedAllocator scope(DeviceType::CUDA, &fake);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate(16, Device{DeviceType::CUDA, 0});
  impl->shape = {4};
  impl->strides = {1};
  Tensor dst(std::move(impl));
  try {
    copy_values(dst, Tensor::empty({4}, DType::Float32));
    FAIL() << "expected NotImplementedError";
  } catch (const NotImplementedError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("copy: not implemented on cuda:0", 0), 0u) << e.what();
  }
}
