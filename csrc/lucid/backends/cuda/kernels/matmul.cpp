// CUDA kernels of the matrix-product ops (records in ops/linalg_ops.cpp): Matmul, Addmm, Linear
// and LinearFused, computing what the CPU's (backends/cpu/kernels/matmul.cpp) compute.
//
// Floating dtypes run on cuBLASLt (cublaslt.h). lucid's row-major out[M, N] is cuBLASLt's
// column-major out^T[N, M] = b^T a^T, so b is cuBLASLt's A and a its B; an operand stored
// row-major (unit column stride) is read as it is, one stored column-major (a transposed view,
// Linear's weight) with the transpose flag, so neither is copied. Only an operand that is neither
// (both strides > 1, negative strides) is made contiguous first. Batch dims broadcast with
// stride 0; the batch dims of a, b and out are merged where their strides allow, the innermost
// merged dim is cuBLASLt's strided batch and any outer ones loop on the host; when b is one
// matrix for the whole batch and a's rows are evenly strided, the batch folds into the rows of a
// single GEMM. Integer dtypes run on the integer GEMM (int_gemm.h) with the CPU's int64 math.
//
// Epilogues: Linear's bias is cuBLASLt's BIAS epilogue (an exact addition). Every activation
// (ReLU, both GELUs), the residual and a strided bias run in gemm_epilogue.h's pass with
// lucid's own functors (cuBLASLt's GELU is its own approximation of the tanh form; its ReLU
// is max(x, 0), which loses NaN). Addmm with beta != 0 pre-fills out with the broadcast input
// and lets cuBLASLt compute alpha * a @ b + beta * out.
// k = 0 launches no GEMM: the product is zeros (alpha * 0, as the CPU's loop) and the epilogue
// pass writes the rest.
#include <algorithm>
#include <vector>

#include "lucid/backends/cuda/cublaslt.h"
#include "lucid/backends/cuda/gemm_epilogue.h"
#include "lucid/backends/cuda/int_gemm.h"
#include "lucid/backends/cuda/stream.h"
#include "lucid/ops/fused_activation.h"
#include "lucid/ops/linalg_geometry.h"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

namespace {

// A matrix in BLAS terms: row-major (unit column stride) or column-major (unit row stride), with
// its leading dimension.
struct BlasLayout {
  bool row_major = true;
  int64_t ld = 1;
};

// The layout of an r x c matrix with strides (sr, sc); false when it is neither (copy needed).
// Size-1 dims get a canonical stride.
bool blas_layout(int64_t r, int64_t c, int64_t sr, int64_t sc, BlasLayout& L) {
  const int64_t rr = std::max<int64_t>(r, 1), cc = std::max<int64_t>(c, 1);
  if ((sc == 1 || c == 1) && (r == 1 || sr >= cc)) {
    L = {true, r == 1 ? cc : sr};
    return true;
  }
  if ((sr == 1 || r == 1) && (c == 1 || sc >= rr)) {
    L = {false, c == 1 ? rr : sc};
    return true;
  }
  return false;
}

// Stride of operand t (batch dims right-aligned to the full batch of nb dims) along batch dim d;
// 0 where t lacks the dim or has size 1 there (broadcast).
int64_t batch_stride(const Tensor& t, int64_t nb, int64_t d) {
  const int64_t td = d - (nb - (t.ndim() - 2));
  return (td < 0 || t.shape()[td] == 1) ? 0 : t.strides()[td];
}

bool operand_ok(const Tensor& t, int64_t nb, BlasLayout& L) {
  for (int64_t d = 0; d < nb; ++d)
    if (batch_stride(t, nb, d) < 0) return false;
  const int64_t nd = t.ndim();
  return blas_layout(t.shape()[nd - 2], t.shape()[nd - 1], t.strides()[nd - 2], t.strides()[nd - 1], L);
}

// One merged batch dim: its size and the element strides of a, b and out along it.
struct BatchDim {
  int64_t size, sa, sb, so;
};

// The full batch's dims of size > 1, merged where all three strides allow, outermost first.
std::vector<BatchDim> merged_batch(const Shape& batch, const Tensor& a, const Tensor& b, int64_t M, int64_t N) {
  const int64_t nb = static_cast<int64_t>(batch.size());
  std::vector<BatchDim> inner_first;
  int64_t so = M * N;
  for (int64_t d = nb - 1; d >= 0; --d) {
    const int64_t size = batch[d];
    BatchDim cur{size, batch_stride(a, nb, d), batch_stride(b, nb, d), so};
    so *= size;
    if (size == 1) continue;
    if (!inner_first.empty()) {
      BatchDim& in = inner_first.back();
      if (cur.sa == in.sa * in.size && cur.sb == in.sb * in.size && cur.so == in.so * in.size) {
        in.size *= size;
        continue;
      }
    }
    inner_first.push_back(cur);
  }
  return {inner_first.rbegin(), inner_first.rend()};
}

// What a GEMM computes: out = alpha * a @ b [+ beta * out_before] [+ bias], then `rest` (the
// epilogue pass: what cuBLASLt or the integer GEMM does not absorb), run over `epi_out` (the op's
// output tensor, out's memory in the op's own shape, against which a residual broadcasts).
struct GemmCall {
  double alpha = 1.0, beta = 0.0;  // beta != 0: out holds the values to add (Addmm's input)
  Tensor bias;                     // undefined or 1-D [N]
  GemmEpilogue rest;               // residual / activation (its bias field is filled here)
};

void int_product(const Tensor& a, const Tensor& b, const Tensor& out, const Shape& batch, const GemmCall& c) {
  const int64_t M = a.shape()[a.ndim() - 2], K = a.shape().back(), N = b.shape().back();
  std::vector<BatchDim> dims = merged_batch(batch, a, b, M, N);
  IntGemm g;
  g.M = M, g.N = N, g.K = K;
  g.sar = a.strides()[a.ndim() - 2], g.sac = a.strides().back();
  g.sbr = b.strides()[b.ndim() - 2], g.sbc = b.strides().back();
  g.alpha = c.alpha, g.beta = c.beta, g.beta_sum = c.beta != 0.0;
  const BatchDim inner = dims.empty() ? BatchDim{1, 0, 0, M * N} : dims.back();
  g.batch = inner.size, g.sab = inner.sa, g.sbb = inner.sb;
  const size_t nouter = dims.empty() ? 0 : dims.size() - 1;
  int64_t outer = 1;
  for (size_t i = 0; i < nouter; ++i) outer *= dims[i].size;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rem = o;
    g.a_off = g.b_off = g.out_off = 0;
    for (size_t i = nouter; i-- > 0;) {
      const int64_t idx = rem % dims[i].size;
      rem /= dims[i].size;
      g.a_off += idx * dims[i].sa, g.b_off += idx * dims[i].sb, g.out_off += idx * dims[i].so;
    }
    int_gemm(a, b, c.bias, out, g);
  }
}

// cuBLASLt calls for a (strided-batched) product; epi is the epilogue cuBLASLt adds. False when
// cuBLASLt has no algorithm with that epilogue (nothing was queued).
bool lt_product(const Tensor& a, const BlasLayout& la, const Tensor& b, const BlasLayout& lb, const Tensor& out,
                const Shape& batch, const GemmCall& c, LtEpilogue epi) {
  const int64_t M = a.shape()[a.ndim() - 2], K = a.shape().back(), N = b.shape().back();
  std::vector<BatchDim> dims = merged_batch(batch, a, b, M, N);
  const size_t isz = itemsize(out.dtype());
  LtGemm g;
  g.dtype = out.dtype();
  g.m = N, g.n = M, g.k = K;
  g.trans_a = !lb.row_major, g.lda = lb.ld;  // cuBLASLt's A is lucid's b
  g.trans_b = !la.row_major, g.ldb = la.ld;  // and its B is lucid's a
  g.ldd = N;
  g.alpha = c.alpha, g.beta = c.beta;
  g.epilogue = epi;
  g.bias = epi == LtEpilogue::None ? nullptr : c.bias.data_ptr();
  const char* pa = static_cast<const char*>(a.data_ptr());
  const char* pb = static_cast<const char*>(b.data_ptr());
  char* po = static_cast<char*>(out.data_ptr());
  // b is one matrix for the whole batch and a's batch steps evenly over its rows: one GEMM.
  if (dims.size() == 1 && dims[0].sb == 0 && la.row_major && dims[0].sa == M * la.ld) {
    g.n = M * dims[0].size;
    g.a = pb, g.b = pa, g.d = po;
    return lt_matmul(g, out.device());
  }
  const BatchDim inner = dims.empty() ? BatchDim{1, 0, 0, M * N} : dims.back();
  g.batch = inner.size, g.stride_a = inner.sb, g.stride_b = inner.sa, g.stride_d = inner.so;
  const size_t nouter = dims.empty() ? 0 : dims.size() - 1;
  int64_t outer = 1;
  for (size_t i = 0; i < nouter; ++i) outer *= dims[i].size;
  // Host-looped parts may differ in pointer alignment, so in plan and algorithm: no cuBLASLt
  // epilogue there (the epilogue pass adds the bias), so no part can lack one.
  if (outer > 1 && epi != LtEpilogue::None) return false;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rem = o, oa = 0, ob = 0, oo = 0;
    for (size_t i = nouter; i-- > 0;) {
      const int64_t idx = rem % dims[i].size;
      rem /= dims[i].size;
      oa += idx * dims[i].sa, ob += idx * dims[i].sb, oo += idx * dims[i].so;
    }
    g.a = pb + ob * isz, g.b = pa + oa * isz, g.d = po + oo * isz;
    if (!lt_matmul(g, out.device())) {
      LUCID_CHECK(o == 0, Error, "matmul: cuBLASLt found no algorithm for part of a batched ", dtype_name(g.dtype),
                  " product");
      return false;
    }
  }
  return true;
}

// out (contiguous batch + [M, N]) = the product of a [..., M, K] and b [..., K, N] as c says,
// then c.rest over epi_out.
void gemm(const Tensor& a0, const Tensor& b0, const Tensor& out, const GemmCall& c0, const Tensor& epi_out) {
  if (out.numel() == 0) return;
  LUCID_CHECK(out.is_contiguous(), Error, "matmul: the CUDA kernels write a contiguous output");
  GemmCall c = c0;
  const DType dt = out.dtype();
  const int64_t K = a0.shape().back();
  const Shape batch(out.shape().begin(), out.shape().end() - 2);
  if (is_integral(dt)) {
    int_product(a0, b0, out, batch, c);
    gemm_epilogue(epi_out, c.rest);
    return;
  }
  LUCID_CHECK(lt_supports(dt), TypeError, "matmul: dtype ", dtype_name(dt), " is not supported");
  if (K == 0) {  // no GEMM: alpha * 0 (+ beta * out, Addmm's own k = 0 path), then the epilogue
    LUCID_CHECK(c.beta == 0.0, Error, "matmul: k = 0 with beta");
    c.rest.base_from_out = false;
    c.rest.base = c.alpha == 1.0 ? 0.0 : c.alpha * 0.0;
    c.rest.bias = c.bias;
    gemm_epilogue(epi_out, c.rest);
    return;
  }
  const int64_t nb = static_cast<int64_t>(batch.size());
  Tensor a = a0, b = b0;
  BlasLayout la, lb;
  if (!operand_ok(a, nb, la)) {
    a = a0.contiguous_data();
    operand_ok(a, nb, la);
  }
  if (!operand_ok(b, nb, lb)) {
    b = b0.contiguous_data();
    operand_ok(b, nb, lb);
  }
  const int64_t N = b.shape().back();
  // cuBLASLt's bias must be packed (and is read with vector loads: 16-byte aligned, as the
  // allocator's blocks are); gelu_tanh joins it unless the residual comes first.
  LtEpilogue epi = LtEpilogue::None;
  if (c.bias.defined() && (c.bias.strides()[0] == 1 || N == 1) &&
      reinterpret_cast<uintptr_t>(c.bias.data_ptr()) % 16 == 0) {
    epi = LtEpilogue::Bias;
    // gelu_tanh stays in gemm_epilogue's pass: cuBLASLt's GELU epilogue is its own approximation
    // of the tanh form (measured on the H200: 2e-5 relative error in float32, 2e-9 in float64,
    // against the op's functor), so it is not the op's definition.
  }
  if (epi != LtEpilogue::None && !lt_product(a, la, b, lb, out, batch, c, epi)) epi = LtEpilogue::None;
  if (epi == LtEpilogue::None) {
    if (!lt_product(a, la, b, lb, out, batch, c, LtEpilogue::None)) {
      // No algorithm for these leading dims or batch strides: once more from contiguous copies.
      a = a.contiguous_data(), b = b.contiguous_data();
      operand_ok(a, nb, la), operand_ok(b, nb, lb);
      LUCID_CHECK(lt_product(a, la, b, lb, out, batch, c, LtEpilogue::None), Error,
                  "matmul: cuBLASLt found no algorithm for a ", dtype_name(dt), " product of ", shape_str(a.shape()),
                  " and ", shape_str(b.shape()));
    }
    c.rest.bias = c.bias;
  }
  gemm_epilogue(epi_out, c.rest);
}

void matmul_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  DeviceGuard g(out[0].device());
  MatmulGeo geo = matmul_geo(in[0], in[1]);
  gemm(matmul_lhs_view(in[0]), matmul_rhs_view(in[1]), matmul_out_view(out[0], geo.full()), {}, out[0]);
}

void addmm_kernel(const TensorList& in, const TensorList& out, const Attrs& at) {
  DeviceGuard g(out[0].device());
  const Tensor &bias = in[0], &a = in[1], &b = in[2], &o = out[0];
  if (o.numel() == 0) return;
  const double beta = at.f("beta"), alpha = at.f("alpha");
  GemmCall c;
  c.alpha = alpha;
  if (a.shape()[1] == 0 && !is_integral(o.dtype())) {
    // No GEMM: out = alpha * 0 + beta * input (the CPU's loop: Sum post-op over a zero product).
    GemmEpilogue ep;
    ep.base_from_out = false;
    ep.base = alpha == 1.0 ? 0.0 : alpha * 0.0;
    if (beta != 0.0) ep.residual = bias, ep.residual_scale = beta;
    gemm_epilogue(o, ep);
    return;
  }
  if (beta != 0.0) {
    // out = input broadcast (-0.0 + x is x exactly), then cuBLASLt adds alpha * a @ b to beta * it.
    GemmEpilogue fill;
    fill.base_from_out = false;
    fill.base = -0.0;
    fill.residual = bias;
    gemm_epilogue(o, fill);
    c.beta = beta;
  }
  gemm(a, b, o, c, o);
}

// x @ w^T + bias with the rest of the epilogue, into out (x's leading dims kept).
void linear_product(const Tensor& x, const Tensor& w, const Tensor& bias, const GemmEpilogue& rest, const Tensor& out) {
  Tensor x2 = matmul_lhs_view(x);
  Shape full = x2.shape();
  full.back() = w.shape()[0];
  GemmCall c;
  c.bias = bias;
  c.rest = rest;
  gemm(x2, linear_weight_view(w), matmul_out_view(out, full), c, out);
}

void linear_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  DeviceGuard g(out[0].device());
  linear_product(in[0], in[1], in[2], {}, out[0]);
}

void linear_fused_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  GemmEpilogue rest;
  rest.act = fused_activation(a, "linear_fused");
  rest.residual = in[3];
  rest.residual_first = a.b("residual_first", false);
  linear_product(in[0], in[1], in[2], rest, out[0]);
}

}  // namespace

LUCID_REGISTER_KERNEL(Matmul, CUDA, matmul_kernel);
LUCID_REGISTER_KERNEL(Addmm, CUDA, addmm_kernel);
LUCID_REGISTER_KERNEL(Linear, CUDA, linear_kernel);
LUCID_REGISTER_KERNEL(LinearFused, CUDA, linear_fused_kernel);

}  // namespace lucid::cuda
