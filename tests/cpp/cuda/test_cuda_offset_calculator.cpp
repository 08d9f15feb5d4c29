// The host-side geometry of the CUDA backend's offset calculator (backends/cuda/offset_calculator.cuh),
// checked without a GPU: the 32-bit fast divider against plain division, make_geometry's
// broadcasting, coalescing and path flags, strided_geometry's element strides (negative ones
// included), and OffsetCalculator's offsets (the same code the device runs) against offsets
// computed from each operand's own strides.
#include <gtest/gtest.h>

#include <random>

#include "lucid/backends/cuda/offset_calculator.cuh"

using namespace lucid;
using cuda::Geometry;
using cuda::IntDivider;
using cuda::OffsetCalculator;

TEST(CudaIntDivider, MatchesDivisionOverTheThirtyTwoBitRange) {
  std::mt19937_64 rng(7);
  std::vector<uint32_t> divisors;
  for (uint32_t d = 1; d <= 1100; ++d) divisors.push_back(d);
  for (uint32_t d : {1u << 31, (1u << 31) - 1, (1u << 30) + 1, 1162261467u, 65536u, 65537u, 999999937u}) divisors.push_back(d);
  for (int i = 0; i < 200; ++i) divisors.push_back(static_cast<uint32_t>(rng() % (1u << 31)) + 1);
  for (uint32_t d : divisors) {
    IntDivider<uint32_t> div(d);
    std::vector<uint32_t> ns = {0, 1, d - 1, d, d + 1, 2 * d - 1, 0x7fffffffu, 0x7ffffffeu};
    for (int i = 0; i < 300; ++i) ns.push_back(static_cast<uint32_t>(rng() % 0x80000000u));
    for (uint32_t n : ns) {
      if (n > 0x7fffffffu) continue;
      ASSERT_EQ(div.div(n), n / d) << "n=" << n << " d=" << d;
    }
  }
}

// A view with the given geometry over a CPU buffer large enough for it (elements of `dt`).
static Tensor view_of(const Tensor& base, Shape shape, Strides strides, int64_t offset = 0) {
  return Tensor::make_view(base, std::move(shape), std::move(strides), offset);
}

TEST(CudaGeometry, BroadcastsCoalescesAndFlagsTheContiguousPath) {
  Tensor out = Tensor::empty({4, 5, 6}, DType::Float32);
  Tensor same = Tensor::empty({4, 5, 6}, DType::Float32);
  const Tensor* ops[] = {&out, &same, nullptr};  // the last a host scalar
  Geometry g = cuda::make_geometry(ops, 3, "t");
  EXPECT_EQ(g.ndim, 1);
  EXPECT_EQ(g.sizes[0], 120);
  EXPECT_EQ(g.strides[0][0], 4);
  EXPECT_EQ(g.strides[0][1], 4);
  EXPECT_EQ(g.strides[0][2], 0);
  EXPECT_TRUE(g.contiguous);
  EXPECT_TRUE(g.fits_32bit);

  Tensor bias = Tensor::empty({6}, DType::Float64);  // broadcast along the two outer dims
  const Tensor* ops2[] = {&out, &bias};
  g = cuda::make_geometry(ops2, 2, "t");
  EXPECT_FALSE(g.contiguous);
  ASSERT_EQ(g.ndim, 2);
  EXPECT_EQ(g.sizes[0], 6);
  EXPECT_EQ(g.sizes[1], 20);
  EXPECT_EQ(g.strides[0][1], 8);
  EXPECT_EQ(g.strides[1][1], 0);
  EXPECT_EQ(g.strides[1][0], 24);

  Tensor zero = Tensor::empty({0, 3}, DType::Float32);
  const Tensor* ops3[] = {&zero, &zero};
  g = cuda::make_geometry(ops3, 2, "t");
  EXPECT_EQ(g.numel, 0);

  Tensor scalar_out = Tensor::empty({}, DType::Int8);
  const Tensor* ops4[] = {&scalar_out, nullptr};
  g = cuda::make_geometry(ops4, 2, "t");
  EXPECT_EQ(g.ndim, 0);
  EXPECT_EQ(g.numel, 1);
  EXPECT_TRUE(g.contiguous);

  Tensor bad = Tensor::empty({5}, DType::Float32);
  const Tensor* ops5[] = {&out, &bad};
  EXPECT_THROW(cuda::make_geometry(ops5, 2, "t"), Error);
}

TEST(CudaGeometry, LargeRangesLeaveTheThirtyTwoBitPath) {
  Tensor one = Tensor::empty({1}, DType::UInt8);
  Tensor big = view_of(one, {(int64_t{1} << 31) + 8}, {0});
  const Tensor* ops[] = {&big, &one};
  Geometry g = cuda::make_geometry(ops, 2, "t");
  EXPECT_FALSE(g.fits_32bit);
  // Few elements, but a byte offset past 2^31 (a strided view over a big storage, never read here).
  Tensor wide = view_of(one, {3}, {int64_t{1} << 30}, 0);
  Tensor small = Tensor::empty({3}, DType::UInt8);
  const Tensor* ops2[] = {&small, &wide};
  g = cuda::make_geometry(ops2, 2, "t");
  EXPECT_FALSE(g.fits_32bit);
  Tensor fits = view_of(one, {2}, {int64_t{1} << 30}, 0);
  Tensor small2 = Tensor::empty({2}, DType::UInt8);
  const Tensor* ops3[] = {&small2, &fits};
  g = cuda::make_geometry(ops3, 2, "t");
  EXPECT_TRUE(g.fits_32bit);
}

// Offsets from OffsetCalculator equal sum(index[d] * stride[d]) of each operand's own geometry.
template <class Index>
static void check_offsets(const Tensor& out, const Tensor& a, const Tensor& b) {
  const Tensor* ops[] = {&out, &a, &b};
  Geometry g = cuda::make_geometry(ops, 3, "t");
  OffsetCalculator<3, Index> oc(g);
  const Shape& shape = out.shape();
  const int nd = static_cast<int>(shape.size());
  for (int64_t linear = 0; linear < out.numel(); ++linear) {
    Index off[3];
    oc.get(static_cast<Index>(linear), off);
    int64_t rem = linear;
    std::vector<int64_t> idx(nd);
    for (int d = nd - 1; d >= 0; --d) { idx[d] = rem % shape[d]; rem /= shape[d]; }
    const Tensor* ts[] = {&out, &a, &b};
    for (int k = 0; k < 3; ++k) {
      const Tensor& t = *ts[k];
      int64_t e = 0;
      const int lead = nd - static_cast<int>(t.ndim());
      for (int d = lead; d < nd; ++d)
        if (t.shape()[d - lead] != 1) e += idx[d] * t.strides()[d - lead];
      ASSERT_EQ(static_cast<int64_t>(off[k]), e * static_cast<int64_t>(itemsize(t.dtype()))) << "linear " << linear << " operand " << k;
    }
  }
}

TEST(CudaOffsetCalculator, GivesEachOperandsOffsets) {
  Tensor base = Tensor::empty({4096}, DType::Float32);
  Tensor out = Tensor::empty({3, 4, 5}, DType::Float32);
  Tensor transposed = view_of(base, {3, 4, 5}, {1, 15, 3}, 7);      // a permuted view with an offset
  Tensor bcast = view_of(Tensor::empty({4, 1}, DType::Int64), {4, 1}, {1, 1});  // broadcast over dims 0 and 2
  check_offsets<uint32_t>(out, transposed, bcast);
  check_offsets<int64_t>(out, transposed, bcast);
  Tensor strided_out = view_of(base, {2, 3, 7}, {200, 50, 3}, 1);
  Tensor row = Tensor::empty({7}, DType::Float16);
  Tensor col = view_of(base, {2, 3, 1}, {9, 2, 1}, 3);
  check_offsets<uint32_t>(strided_out, row, col);
  check_offsets<int64_t>(strided_out, row, col);
}

// strided_geometry (the data-movement kernels' builder): element strides as given, negative and
// zero ones included, coalesced like make_geometry; offsets equal sum(index[d] * stride[d]).
template <int N, class Index>
static void check_strided(const Shape& shape, const std::array<Strides, N>& st) {
  std::array<const Strides*, N> ptrs;
  for (int k = 0; k < N; ++k) ptrs[k] = &st[k];
  Geometry g = cuda::strided_geometry<N>(shape, ptrs, "t");
  OffsetCalculator<N, Index> oc(g);
  const int nd = static_cast<int>(shape.size());
  for (int64_t linear = 0; linear < numel_of(shape); ++linear) {
    Index off[N];
    oc.get(static_cast<Index>(linear), off);
    int64_t rem = linear;
    std::vector<int64_t> idx(nd);
    for (int d = nd - 1; d >= 0; --d) { idx[d] = rem % shape[d]; rem /= shape[d]; }
    for (int k = 0; k < N; ++k) {
      int64_t e = 0;
      for (int d = 0; d < nd; ++d) e += idx[d] * st[k][d];
      ASSERT_EQ(static_cast<int64_t>(off[k]), e) << "linear " << linear << " operand " << k;
    }
  }
}

TEST(CudaStridedGeometry, CoalescesElementStridesAndFlagsThePaths) {
  Strides c3{30, 6, 1};
  Geometry g = cuda::strided_geometry<2>({4, 5, 6}, {&c3, &c3}, "t");
  EXPECT_EQ(g.ndim, 1);
  EXPECT_EQ(g.sizes[0], 120);
  EXPECT_TRUE(g.contiguous);
  EXPECT_TRUE(g.fits_32bit);
  Strides dense{6, 1}, flipped{-6, 1};
  g = cuda::strided_geometry<2>({3, 6}, {&dense, &flipped}, "t");
  EXPECT_EQ(g.ndim, 2);
  EXPECT_FALSE(g.contiguous);
  EXPECT_FALSE(g.fits_32bit);  // a negative stride takes the int64 path
  Strides one{1};
  g = cuda::strided_geometry<1>({1}, {&one}, "t");  // one element: ndim 0, a plain copy
  EXPECT_EQ(g.ndim, 0);
  EXPECT_TRUE(g.contiguous);
  Strides wide{int64_t{1} << 31};
  g = cuda::strided_geometry<1>({2}, {&wide}, "t");
  EXPECT_FALSE(g.fits_32bit);
  g = cuda::strided_geometry<1>({0, 3}, {&dense}, "t");
  EXPECT_EQ(g.numel, 0);
}

TEST(CudaStridedGeometry, GivesEachOperandsElementOffsets) {
  check_strided<2, uint32_t>({3, 4, 5}, {Strides{20, 5, 1}, Strides{1, 15, 3}});
  check_strided<2, int64_t>({3, 4, 5}, {Strides{20, 5, 1}, Strides{1, 15, 3}});
  check_strided<2, int64_t>({3, 4, 5}, {Strides{20, 5, 1}, Strides{-20, 5, -1}});  // a flip
  check_strided<3, uint32_t>({2, 3, 7}, {Strides{200, 50, 3}, Strides{0, 0, 1}, Strides{9, 2, 0}});  // broadcasts
  check_strided<1, int64_t>({5, 1, 4}, {Strides{-4, 99, 1}});
}
