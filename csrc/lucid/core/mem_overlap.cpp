#include "lucid/core/mem_overlap.h"

#include <algorithm>
#include <numeric>

namespace lucid {

bool is_non_overlapping_and_dense(const Tensor& t) {
  const Shape& s = t.shape();
  const Strides& st = t.strides();
  const size_t nd = s.size();
  if (nd == 1) return s[0] < 2 || st[0] == 1;
  std::vector<size_t> perm(nd);
  std::iota(perm.begin(), perm.end(), 0);
  // By stride, size-0/1 dims last (their strides never matter).
  std::stable_sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
    if (s[a] < 2) return false;
    if (s[b] < 2) return true;
    return st[a] < st[b];
  });
  int64_t expected = 1;
  for (size_t i : perm) {
    if (s[i] < 2) return true;
    if (st[i] != expected) return false;
    expected *= s[i];
  }
  return true;
}

bool has_broadcast_dim(const Tensor& t) {
  for (size_t i = 0; i < t.shape().size(); ++i)
    if (t.strides()[i] == 0 && t.shape()[i] > 1) return true;
  return false;
}

MemOverlap has_internal_overlap(const Tensor& t) {
  if (has_broadcast_dim(t)) return MemOverlap::Yes;  // never dense
  return is_non_overlapping_and_dense(t) ? MemOverlap::No : MemOverlap::TooHard;
}

namespace {
// Byte span [begin, end) from the storage's start; end = begin for an empty tensor.
std::pair<int64_t, int64_t> byte_span(const Tensor& t) {
  const int64_t isz = static_cast<int64_t>(itemsize(t.dtype()));
  const int64_t begin = t.offset() * isz;
  const int64_t n = storage_extent(t.shape(), t.strides(), 0);  // elements spanned
  return {begin, begin + n * isz};
}
}  // namespace

MemOverlapStatus get_overlap_status(const Tensor& a, const Tensor& b) {
  if (a == b) return MemOverlapStatus::Full;
  if (a.numel() == 0 || b.numel() == 0) return MemOverlapStatus::No;
  if (!is_non_overlapping_and_dense(a) || !is_non_overlapping_and_dense(b)) return MemOverlapStatus::TooHard;
  if (!a.same_storage(b)) return MemOverlapStatus::No;
  // Dense: the span is numel elements from the first.
  const int64_t ab = a.offset() * static_cast<int64_t>(itemsize(a.dtype())),
                ae = ab + a.numel() * static_cast<int64_t>(itemsize(a.dtype()));
  const int64_t bb = b.offset() * static_cast<int64_t>(itemsize(b.dtype())),
                be = bb + b.numel() * static_cast<int64_t>(itemsize(b.dtype()));
  if (ab == bb && ae == be) return a.strides() == b.strides() ? MemOverlapStatus::Full : MemOverlapStatus::Partial;
  if (ab < be && bb < ae) return MemOverlapStatus::Partial;
  return MemOverlapStatus::No;
}

bool spans_intersect(const Tensor& a, const Tensor& b) {
  if (!a.same_storage(b) || a.numel() == 0 || b.numel() == 0) return false;
  auto [ab, ae] = byte_span(a);
  auto [bb, be] = byte_span(b);
  return ab < be && bb < ae;
}

const char* const kInternalOverlapError =
    "unsupported operation: more than one element of the written-to tensor refers to a single memory location. "
    "Please clone() the tensor before performing the operation.";
const char* const kPartialOverlapError =
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory "
    "location. Please clone() the tensor before performing the operation.";

void assert_no_internal_overlap(const Tensor& t, const char* op) {
  LUCID_CHECK(t.numel() == 0 || !has_broadcast_dim(t), Error, op, ": ", kInternalOverlapError);
}

void assert_no_partial_overlap(const Tensor& written, const Tensor& read, const char* op) {
  LUCID_CHECK(get_overlap_status(written, read) != MemOverlapStatus::Partial, Error, op, ": ", kPartialOverlapError);
}

}  // namespace lucid
