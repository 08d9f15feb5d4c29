// Out-of-range indices on the device without a device-side assert: torch's CUDA kernels assert,
// which poisons the CUDA context for the rest of the process; lucid's check the indices in a
// kernel of their own that records one bad value (BadIndexRecord) and writes nothing else, then
// copy the record to the host and raise the CPU kernel's IndexError. Checking before the op's main
// kernel runs also means an in-place op leaves its destination untouched when it raises, as on
// the CPU.
//
// Cost: the copy back to the host synchronises the current stream once per checked op (gather,
// scatter, index, index_put, embedding, ...). cross_entropy and nll_loss's class targets, checked
// every training step, defer the verdict instead (deferred_check.h): the error comes at the
// host's next synchronisation, and the rows with a bad target are NaN until then.
#pragma once
#include <cstdint>

#include "lucid/core/tensor.h"

namespace lucid::cuda {

struct BadIndexRecord {
  unsigned long long set;  // 0 until a bad index is seen
  long long value;         // the bad index value (one of them, if several)
  long long where;         // which index tensor it came from (for multi-index ops)
};

__device__ __forceinline__ void record_bad_index(BadIndexRecord* r, int64_t value, int64_t where) {
  if (atomicCAS(&r->set, 0ull, 1ull) == 0ull) {
    r->value = value;
    r->where = where;
  }
}

// Reads an integer index element (int64, int32, int16-free lucid: also uint8 and int8) as int64.
__device__ __forceinline__ int64_t load_index(const char* p, DType t) {
  switch (t) {
    case DType::Int32: return *reinterpret_cast<const int32_t*>(p);
    case DType::UInt8: return *reinterpret_cast<const uint8_t*>(p);
    case DType::Int8: return *reinterpret_cast<const int8_t*>(p);
    default: return *reinterpret_cast<const int64_t*>(p);
  }
}

// A zeroed BadIndexRecord on `dev`, ordered on its current stream; fetch() copies it back
// (synchronising that stream) and says whether a bad index was recorded.
class BadIndexFlag {
 public:
  explicit BadIndexFlag(const Device& dev);
  BadIndexRecord* get() const { return static_cast<BadIndexRecord*>(buf_.data_ptr()); }
  bool fetch(int64_t& value, int64_t& where) const;

 private:
  Device dev_;
  Tensor buf_;
};

// A contiguous int64 copy of `index` (any strides, an integer dtype) with every value v checked
// against `size`: 0 <= v < size, or -size <= v < 0 (wrapped to v + size) when allow_negative. On
// a bad value returns false with it in `bad` (one of them, if several) and nothing else done.
bool checked_index(const Tensor& index, int64_t size, bool allow_negative, Tensor& out, int64_t& bad);

}  // namespace lucid::cuda
