// C++ API of the reduce family (named like the Python API). `dims` empty means all dims.
// Other families' VJPs and composites may call these. (The CPU's sum loop the core Sum kernel
// calls is cpu::reduce_sum_into, backends/cpu/reduce_loops.h.)
#pragma once
#include <cstdint>
#include <optional>

#include "lucid/ops/core.h"

namespace lucid {

Tensor mean(const Tensor& x, const IntList& dims = {}, bool keepdim = false, std::optional<DType> dtype = {});
Tensor var(const Tensor& x, const IntList& dims = {}, double correction = 1.0, bool keepdim = false);
Tensor std_(const Tensor& x, const IntList& dims = {}, double correction = 1.0, bool keepdim = false);
Tensor prod(const Tensor& x, const IntList& dims = {}, bool keepdim = false, std::optional<DType> dtype = {});
Tensor logsumexp(const Tensor& x, const IntList& dims, bool keepdim = false);
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = {}, bool reverse = false);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = {});  // reduce_cumprod.cpp
// In place (reduce_cumprod.cpp): the scan computed out of place, then copied into x (x's dtype kept).
const Tensor& cumsum_(const Tensor& x, int64_t dim, std::optional<DType> dtype = {});
const Tensor& cumprod_(const Tensor& x, int64_t dim, std::optional<DType> dtype = {});
Tensor amax(const Tensor& x, const IntList& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const IntList& dims = {}, bool keepdim = false);
// (values, indices) along one dim.
std::pair<Tensor, Tensor> max_dim(const Tensor& x, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min_dim(const Tensor& x, int64_t dim, bool keepdim = false);
// dim empty: index into the flattened tensor.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false);
Tensor all(const Tensor& x, const IntList& dims = {}, bool keepdim = false);
Tensor any(const Tensor& x, const IntList& dims = {}, bool keepdim = false);
Tensor exp_sub(const Tensor& a, const Tensor& b);  // exp(a - b), broadcasting

}  // namespace lucid
