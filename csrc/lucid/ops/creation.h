// C++ API of the creation family: factory functions and the random ops (Philox, see
// core/generator.h). `gen` null means the default generator.
#pragma once
#include <cstdint>
#include "lucid/core/generator.h"
#include "lucid/ops/core.h"

namespace lucid {

Tensor empty(const Shape& shape, DType dtype);
Tensor arange(double start, double end, double step, DType dtype);
Tensor linspace(double start, double end, int64_t steps, DType dtype);
Tensor eye(int64_t n, int64_t m, DType dtype);

Tensor rand(const Shape& shape, DType dtype, Generator* gen = nullptr);
Tensor randn(const Shape& shape, DType dtype, Generator* gen = nullptr);
Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Generator* gen = nullptr);
// Tensor of 0/1 draws with probability p (dropout masks).
Tensor bernoulli(const Shape& shape, double p, DType dtype, Generator* gen = nullptr);
// 0/1 draws with per-element probabilities `probs` (same shape and dtype as probs).
Tensor bernoulli(const Tensor& probs, Generator* gen = nullptr);
// A random permutation of 0..n-1.
Tensor randperm(int64_t n, DType dtype = DType::Int64, Generator* gen = nullptr);
// num_samples category indices per row of the weights `probs` (1-D or 2-D), int64.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false, Generator* gen = nullptr);
// In place 0/1 draws with per-element probabilities p (broadcast to x's shape).
const Tensor& bernoulli_(const Tensor& x, const Tensor& p, Generator* gen = nullptr);
const Tensor& uniform_(const Tensor& x, double low, double high, Generator* gen = nullptr);
const Tensor& normal_(const Tensor& x, double mean, double std, Generator* gen = nullptr);
const Tensor& bernoulli_(const Tensor& x, double p, Generator* gen = nullptr);

// Number of 32-bit draws a random op (Lowering::Random) consumes, from its attributes; the
// generator advances by this rounded up to a multiple of 4. A compiled step replaying the op
// reserves this many draws and sets the op's "offset" attribute to the reserved start.
uint64_t random_draws(OpId id, const Attrs& attrs);

}  // namespace lucid
