// The row geometry of the reductions, device-neutral (host code over Tensors; every backend's
// reduce, scan and sort kernels use it). A reduction over `dims` runs on x seen as a contiguous
// [outer, r, inner] block (r = the reduced elements of one output element): when the reduced dims
// are adjacent this is x itself (no copy), otherwise the reduced dims are permuted to the end
// (inner = 1; the copy is made by x's device, contiguous_data). DimRows is the [outer, n, inner]
// view around one dim of scans and sorts. The dims a kernel reduces are read from its record's
// attributes here too (reduce_attr_dims, index_reduce_dims, sum_to_dims), so every backend
// normalises them alike.
#pragma once
#include <algorithm>
#include <cstdint>

#include "lucid/ops/attrs.h"
#include "lucid/ops/core.h"

namespace lucid {

// The reduced dims of a record with a `dims` list attribute (empty: all), normalised and sorted.
inline IntList reduce_attr_dims(const Attrs& a, int64_t ndim, const char* op) { return reduce_dims(a.ints("dims"), ndim, op); }

// The reduced dims of a record with an optional single `dim` attribute (max/min(dim),
// argmax/argmin): that dim, or every dim when it is absent.
inline IntList index_reduce_dims(const Attrs& a, int64_t ndim, const char* op) {
  return a.has("dim") ? reduce_dims({a.i("dim")}, ndim, op) : reduce_dims({}, ndim, op);
}

// SumTo's reduced dims: x's leading extra dims and the dims where the target has size 1 and x
// does not (sorted; empty when x already has the target's shape).
inline IntList sum_to_dims(const Shape& x, const Shape& target) {
  const int64_t nd = static_cast<int64_t>(x.size()), lead = nd - static_cast<int64_t>(target.size());
  IntList dims;
  for (int64_t d = 0; d < nd; ++d)
    if (d < lead || (target[d - lead] == 1 && x[d] != 1)) dims.push_back(d);
  return dims;
}

struct RowLayout {
  Tensor data;  // contiguous
  int64_t outer = 1, r = 1, inner = 1;
  IntList perm;  // permutation applied to x (empty when data is x's own layout)
};

// `dims` sorted and normalised (reduce_dims). A 0-d tensor (dims empty) is one row of one element.
inline RowLayout row_layout(const Tensor& x, const IntList& dims) {
  RowLayout L;
  if (x.ndim() == 0 || dims.empty()) {
    L.data = x.contiguous_data();
    L.outer = x.numel();
    return L;
  }
  if (dims.back() - dims.front() + 1 == static_cast<int64_t>(dims.size())) {  // adjacent dims
    L.data = x.contiguous_data();
    for (int64_t i = 0; i < x.ndim(); ++i) {
      int64_t s = x.shape()[i];
      if (i < dims.front()) L.outer *= s;
      else if (i <= dims.back()) L.r *= s;
      else L.inner *= s;
    }
    return L;
  }
  int64_t outer, inner;
  L.data = reduction_rows(x, dims, outer, inner);
  L.outer = outer;
  L.r = inner;
  L.inner = 1;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) L.perm.push_back(i);
  for (int64_t d : dims) L.perm.push_back(d);
  return L;
}

// A contiguous tensor of shape s seen as [outer, n, inner] around `dim` (a 0-d tensor is one row
// of one element): row r = (o, ., j) starts at o * n * inner + j, its elements inner apart. The
// layout of scans (cumprod) and sorts along one dim.
struct DimRows {
  int64_t outer = 1, n = 1, inner = 1;
  int64_t count() const { return outer * inner; }
  int64_t base(int64_t r) const { return (r / inner) * n * inner + r % inner; }
};

inline DimRows dim_rows(const Shape& s, int64_t dim) {
  DimRows g;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    if (i < dim) g.outer *= s[i];
    else if (i == dim) g.n = s[i];
    else g.inner *= s[i];
  }
  return g;
}

}  // namespace lucid
