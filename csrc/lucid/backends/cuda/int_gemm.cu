// The CUDA integer GEMM (see int_gemm.h).
#include "lucid/backends/cuda/int_gemm.h"

#include <algorithm>

#include "lucid/backends/cuda/stream.h"

namespace lucid::cuda {

namespace {

constexpr int kTile = 16;

template <class T> struct Params {
  const T* a;
  const T* b;
  const T* bias;
  T* out;
  int64_t M, N, K, batch0;
  int64_t sar, sac, sab, sbr, sbc, sbb, bias_stride;
  int64_t alpha, beta;
  bool alpha_one, beta_sum;
};

template <class T> __global__ void int_gemm_kernel(Params<T> p) {
  __shared__ int64_t as[kTile][kTile + 1];
  __shared__ int64_t bs[kTile][kTile + 1];
  const int64_t bz = p.batch0 + blockIdx.z;
  const int tx = threadIdx.x, ty = threadIdx.y;
  // Rows on grid.x (up to 2^31 - 1 tiles), columns on grid.y (up to 65535 tiles).
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kTile + ty, col = static_cast<int64_t>(blockIdx.y) * kTile + tx;
  const T* A = p.a + bz * p.sab;
  const T* B = p.b + bz * p.sbb;
  int64_t acc = 0;
  for (int64_t k0 = 0; k0 < p.K; k0 += kTile) {
    const int64_t ka = k0 + tx, kb = k0 + ty;
    as[ty][tx] = (row < p.M && ka < p.K) ? static_cast<int64_t>(A[row * p.sar + ka * p.sac]) : 0;
    bs[ty][tx] = (kb < p.K && col < p.N) ? static_cast<int64_t>(B[kb * p.sbr + col * p.sbc]) : 0;
    __syncthreads();
    for (int j = 0; j < kTile; ++j)  // unsigned arithmetic: int64 products wrap, as the CPU's
      acc = static_cast<int64_t>(static_cast<uint64_t>(acc) +
                                 static_cast<uint64_t>(as[ty][j]) * static_cast<uint64_t>(bs[j][tx]));
    __syncthreads();
  }
  if (row >= p.M || col >= p.N) return;
  int64_t v = p.alpha_one ? acc : static_cast<int64_t>(static_cast<uint64_t>(p.alpha) * static_cast<uint64_t>(acc));
  if (p.bias) v = static_cast<int64_t>(static_cast<uint64_t>(v) + static_cast<uint64_t>(p.bias[col * p.bias_stride]));
  T* o = p.out + bz * p.M * p.N + row * p.N + col;
  if (p.beta_sum)
    v = static_cast<int64_t>(static_cast<uint64_t>(v) +
                             static_cast<uint64_t>(p.beta) * static_cast<uint64_t>(static_cast<int64_t>(*o)));
  *o = static_cast<T>(v);
}

template <class T>
void run(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out, const IntGemm& g) {
  Params<T> p{};
  p.a = static_cast<const T*>(a.data_ptr()) + g.a_off;
  p.b = static_cast<const T*>(b.data_ptr()) + g.b_off;
  p.out = static_cast<T*>(out.data_ptr()) + g.out_off;
  if (bias.defined()) {
    p.bias = static_cast<const T*>(bias.data_ptr());
    p.bias_stride = bias.strides()[0];
  }
  p.M = g.M, p.N = g.N, p.K = g.K;
  p.sar = g.sar, p.sac = g.sac, p.sab = g.sab, p.sbr = g.sbr, p.sbc = g.sbc, p.sbb = g.sbb;
  // The CPU's casts (static_cast<int64_t> of the double attributes).
  p.alpha = static_cast<int64_t>(g.alpha), p.beta = static_cast<int64_t>(g.beta);
  p.alpha_one = g.alpha == 1.0, p.beta_sum = g.beta_sum;
  const int64_t gx = (g.M + kTile - 1) / kTile, gy = (g.N + kTile - 1) / kTile;
  LUCID_CHECK(gx < (int64_t(1) << 31) && gy <= 65535, Error, "matmul: integer product of ", g.M, " x ", g.N,
              " is too large for the CUDA integer GEMM (at most ", 65535 * kTile, " columns)");
  cudaStream_t s = current_stream(out.device());
  for (int64_t b0 = 0; b0 < g.batch; b0 += 65535) {
    p.batch0 = b0;
    dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(std::min<int64_t>(65535, g.batch - b0)));
    int_gemm_kernel<T><<<grid, dim3(kTile, kTile), 0, s>>>(p);
    check_launch("int_gemm");
  }
}

}  // namespace

void int_gemm(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out, const IntGemm& g) {
  if (g.M == 0 || g.N == 0 || g.batch == 0) return;
  switch (out.dtype()) {
    case DType::Int64: run<int64_t>(a, b, bias, out, g); return;
    case DType::Int32: run<int32_t>(a, b, bias, out, g); return;
    case DType::Int8: run<int8_t>(a, b, bias, out, g); return;
    case DType::UInt8: run<uint8_t>(a, b, bias, out, g); return;
    default: throw TypeError(str("matmul: dtype ", dtype_name(out.dtype()), " is not supported"));
  }
}

}  // namespace lucid::cuda
