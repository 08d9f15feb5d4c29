// C++ API of the sort family (sort_ops.cpp, sort_unique.cpp), named like the Python API:
// sort/argsort/topk/median/nanmedian (kernels over rows of one dim, NaN ordered as the largest
// value, as PyTorch) and unique/unique_consecutive (data-dependent sizes, computed on the host).
#pragma once
#include <cstdint>
#include <optional>

#include "lucid/ops/core.h"

namespace lucid {

// (values, indices) along dim.
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);
// Lower median of every element (a 0-d tensor); nanmedian ignores NaN.
Tensor median(const Tensor& x, bool ignore_nan = false);
std::pair<Tensor, Tensor> median_dim(const Tensor& x, int64_t dim, bool keepdim = false, bool ignore_nan = false);

// torch.unique / torch.unique_consecutive: (values, inverse, counts); inverse and counts are
// computed only when asked for (undefined otherwise). Not recordable by a trace (the sizes
// depend on the data): a compiled function using them falls back to eager.
struct UniqueResult {
  Tensor values, inverse, counts;
};
UniqueResult unique(const Tensor& x, bool return_inverse, bool return_counts, std::optional<int64_t> dim);
UniqueResult unique_consecutive(const Tensor& x, bool return_inverse, bool return_counts, std::optional<int64_t> dim);

}  // namespace lucid
