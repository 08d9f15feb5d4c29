#include "lucid/core/shape.h"

#include <sstream>

namespace lucid {

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(str(what, ": integer multiplication overflow (", a, " * ", b, " does not fit int64)"));
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(str(what, ": integer addition overflow (", a, " + ", b, " does not fit int64)"));
  return r;
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : s) overflow |= __builtin_mul_overflow(n, d, &n);
  if (overflow) throw Error(str("numel: integer multiplication overflow for shape ", shape_str(s)));
  return n;
}

int64_t contiguous_nbytes(const Shape& s, int64_t itemsize) {
  int64_t n = itemsize;
  bool overflow = false;
  for (int64_t d : s) overflow |= __builtin_mul_overflow(n, d, &n);
  if (overflow) throw Error(str("Storage size calculation overflowed with sizes=", shape_str(s)));
  return n;
}

int64_t storage_extent(const Shape& s, const Strides& st, int64_t offset) {
  int64_t hi = offset;
  bool overflow = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 0) return 0;
    int64_t step;
    overflow |= __builtin_mul_overflow(s[i] - 1, st[i], &step);
    overflow |= __builtin_add_overflow(hi, step, &hi);
  }
  overflow |= __builtin_add_overflow(hi, int64_t{1}, &hi);
  if (overflow)
    throw Error(str("Storage size calculation overflowed with sizes=", shape_str(s), " and strides=", shape_str(st)));
  return hi;
}

Strides contiguous_strides(const Shape& s) {
  Strides st(s.size());
  int64_t acc = 1;
  bool overflow = false;
  for (int64_t i = static_cast<int64_t>(s.size()) - 1; i >= 0; --i) {
    st[i] = acc;
    overflow |= __builtin_mul_overflow(acc, s[i] > 0 ? s[i] : 1, &acc);
  }
  if (overflow) throw Error(str("Storage size calculation overflowed with sizes=", shape_str(s)));
  return st;
}

int64_t stepped_stride(int64_t stride, int64_t step, int64_t size, const char* what) {
  int64_t r;
  if (!__builtin_mul_overflow(stride, step, &r)) return r;  // as PyTorch, also for one element
  return size > 1 ? checked_mul(stride, step, what) : stride;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ValueError(str(op, ": shapes ", shape_str(a), " and ", shape_str(b),
                           " cannot be broadcast together (dim ", i, ": ", da, " vs ", db, ")"));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;
  if (dim < lo || dim > hi)
    throw IndexError(str(op, ": argument 'dim' expected a value in [", lo, ", ", hi, "], got ", dim));
  return dim < 0 ? dim + (ndim == 0 ? 1 : ndim) : dim;
}

}  // namespace lucid
