// dnnl_matmul: oneDNN matmul primitives for float32/bfloat16 (float16 when oneDNN has a kernel),
// a blocked C++ GEMM for float64/integers and as the fallback, and the packed-weights cache for
// small-M products (packed_weights.h). See dnnl_matmul.h.
#include "lucid/backends/cpu/dnnl_matmul.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "lucid/backends/cpu/dnnl_common.h"
#include "lucid/backends/cpu/loops.h"
#include "lucid/backends/cpu/packed_weights.h"
#include "lucid/core/external_views.h"
#include "lucid/core/parallel.h"

namespace lucid::cpu {

namespace {
using namespace dnnl_util;

struct Geometry {
  Shape dims;
  Strides strides;
};

// Makes the strides of an r x c matrix BLAS-like: row-major (sc == 1, sr >= c) or column-major
// (sr == 1, sc >= r); size-1 dims get a canonical stride. False when neither fits (copy needed).
bool normalize_matrix(int64_t r, int64_t c, int64_t& sr, int64_t& sc) {
  if ((sc == 1 || c == 1) && (r == 1 || sr >= c)) {
    sc = 1;
    if (r == 1) sr = c;
    return true;
  }
  if ((sr == 1 || r == 1) && (c == 1 || sc >= r)) {
    sr = 1;
    if (c == 1) sc = r;
    return true;
  }
  return false;
}

// Strides for size-1 dims: the extent of everything inside them (oneDNN wants sane values).
void fix_unit_strides(Geometry& g) {
  int64_t nd = static_cast<int64_t>(g.dims.size());
  for (int64_t d = nd - 3; d >= 0; --d) {
    if (g.dims[d] != 1) continue;
    int64_t ext = 1;
    for (int64_t j = d + 1; j < nd; ++j) ext = std::max(ext, (g.dims[j] - 1) * g.strides[j] + 1);
    g.strides[d] = ext;
  }
}

struct MatmulPrim {
  dnnl::matmul prim;
  dnnl::memory::desc src, wei, dst, bias;
  dnnl::memory::desc scratch;  // user scratchpad (size 0 when none)
};

// Scratchpads are the caller's (scratchpad_mode::user), one buffer per thread: oneDNN's default
// library scratchpad may be shared by concurrent executions of one primitive, which gave wrong
// results when several threads ran the same compiled model (packed-weight primitives use one).
void* matmul_scratch(size_t bytes) {
  thread_local std::vector<char> buf;
  if (buf.size() < bytes + 64) buf.resize(bytes + 64);
  uintptr_t p = reinterpret_cast<uintptr_t>(buf.data());
  return reinterpret_cast<void*>((p + 63) & ~uintptr_t(63));
}

LruCache<MatmulPrim>& prim_cache() {
  static LruCache<MatmulPrim> c(256);
  return c;
}

dnnl::algorithm eltwise_alg(MatmulPostOp::Kind k) {
  switch (k) {
    case MatmulPostOp::Gelu: return dnnl::algorithm::eltwise_gelu_erf;
    case MatmulPostOp::GeluTanh: return dnnl::algorithm::eltwise_gelu_tanh;
    default: return dnnl::algorithm::undef;
  }
}

}  // namespace

}  // namespace lucid::cpu

dnnl::primitive_attr lucid::dnnl_util::post_op_attr(const std::vector<cpu::MatmulPostOp>& post) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::post_ops po;
  for (const cpu::MatmulPostOp& p : post) {
    if (p.kind == cpu::MatmulPostOp::Sum) po.append_sum(static_cast<float>(p.scale));
    else po.append_eltwise(1.f, cpu::eltwise_alg(p.kind), 0.f, 0.f);
  }
  attr.set_post_ops(po);
  return attr;
}

namespace lucid::cpu {

namespace {

// ---- Packed weights ------------------------------------------------------------------------
// A product with few rows and a 2-D B spends most of its time in oneDNN's per-call repacking of B
// into its blocked layout (brgemm's copy_B). For those products the primitive is created with
// weights format `any` and B comes from the packed-weights cache (packed_weights.h).
constexpr int64_t kPackMaxRows = 128;  // measured: the gain fades from ~4x at 1 row to ~8% at 128

// The matmul primitive for these descriptors (cached), or null when oneDNN has no implementation.
// A and B are of dtype `in`, D and the bias of `dt` (equal, except bfloat16 products written in
// float32). `packed`: B's descriptor is format `any` (the primitive picks its layout; see PackCache).
std::shared_ptr<MatmulPrim> matmul_prim(const Geometry& A, const Geometry& B, const Tensor& bias, const Geometry& D,
                                        DType in, DType dt, const MatmulEpilogue& ep, bool packed) {
  int64_t nd = static_cast<int64_t>(D.dims.size());
  int64_t N = D.dims[nd - 1];
  Key k;
  k.add(packed ? 2 : 1).add(static_cast<int64_t>(in)).add(static_cast<int64_t>(dt)).add(A.dims).add(A.strides).add(B.dims).add(B.strides);
  k.add(D.dims).add(D.strides).add(bias.defined() ? bias.strides()[0] : -1).addf(ep.alpha);
  for (auto& p : ep.post_ops) k.add(p.kind).addf(p.scale);
  return prim_cache().get(k, [&]() -> std::shared_ptr<MatmulPrim> {
    try {
      auto amd = strided_desc(A.dims, A.strides, in);
      auto bmd = packed ? dnnl::memory::desc(dnnl::memory::dims(B.dims.begin(), B.dims.end()), to_dnnl(in),
                                             dnnl::memory::format_tag::any)
                        : strided_desc(B.dims, B.strides, in);
      auto dmd = strided_desc(D.dims, D.strides, dt);
      dnnl::primitive_attr attr = post_op_attr(ep.post_ops);
      if (ep.alpha != 1.0) attr.set_output_scales(0, {static_cast<float>(ep.alpha)});
      if (bias.defined()) {
        Shape bd(nd, 1);
        bd[nd - 1] = N;
        int64_t bs = bias.strides()[0];
        Strides bst(nd, (N - 1) * bs + 1);
        bst[nd - 1] = bs;
        auto biasmd = strided_desc(bd, bst, dt);
        dnnl::matmul::primitive_desc pdesc(dnnl::matmul::desc(amd, bmd, biasmd, dmd), attr, engine());
        return std::make_shared<MatmulPrim>(
            MatmulPrim{dnnl::matmul(pdesc), amd, pdesc.weights_desc(), dmd, biasmd, pdesc.scratchpad_desc()});
      }
      dnnl::matmul::primitive_desc pdesc(dnnl::matmul::desc(amd, bmd, dmd), attr, engine());
      return std::make_shared<MatmulPrim>(
          MatmulPrim{dnnl::matmul(pdesc), amd, pdesc.weights_desc(), dmd, {}, pdesc.scratchpad_desc()});
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
}

// The packed copy of w (read through geometry B at pb) in prim's weights layout, or null.
std::shared_ptr<void> packed_weights(const MatmulPrim& prim, const Geometry& B, const void* pb, const Tensor& w,
                                     DType dt) {
  Key k;
  k.add(1);  // a GEMM's B (a convolution's weights key on 2)
  k.add(reinterpret_cast<intptr_t>(w.impl()->storage.get())).add(w.offset() * static_cast<int64_t>(itemsize(dt)));
  k.add(static_cast<int64_t>(dt)).add(B.dims).add(B.strides);
  if (!add_layout(k, prim.wei)) return nullptr;
  return packed_weight(k, w.impl()->storage, prim.wei.get_size(),
                       [&] { return reorder_copy(strided_desc(B.dims, B.strides, dt), pb, prim.wei); });
}

// One oneDNN matmul call (A and B of dtype `in`, D of `dt`); false when oneDNN has no
// implementation for these descriptors. `wsrc`, when defined, is the tensor B is read from,
// offered for packing (2-D products only). Packing is used on AVX-512 CPUs only, where oneDNN's
// kernel for a packed B and for a plain one (with its per-call copy) sum in the same order. On
// AVX2 they do not (a 1-row 784->256 Linear came out up to 3e-8 apart between a weight's first,
// unpacked call and its packed later ones), and the plain kernel is the faster one there (26.7
// against 45 us; 1x768->3072 153 against 161 us), so every call takes it.
bool run_dnnl(const Geometry& A, const void* pa, const Geometry& B, const void* pb, const Tensor& bias,
              const Geometry& D, void* pd, DType in, DType dt, const MatmulEpilogue& ep, const Tensor& wsrc = Tensor()) {
  static const bool pack_here = has_isa(dnnl::cpu_isa::avx512_core);
  std::shared_ptr<MatmulPrim> prim;
  std::shared_ptr<void> wbuf;
  if (pack_here && wsrc.defined() && D.dims.size() == 2 && D.dims[0] <= kPackMaxRows && weight_pack_enabled() &&
      version_tracks_contents(*wsrc.impl()->storage) && (prim = matmul_prim(A, B, bias, D, in, dt, ep, true)))
    wbuf = packed_weights(*prim, B, pb, wsrc, in);
  if (!wbuf) prim = matmul_prim(A, B, bias, D, in, dt, ep, false);
  if (!prim) return false;
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, mem(prim->src, pa)},
                                              {DNNL_ARG_WEIGHTS, mem(prim->wei, wbuf ? wbuf.get() : pb)},
                                              {DNNL_ARG_DST, mem(prim->dst, pd)}};
  if (bias.defined()) args.emplace(DNNL_ARG_BIAS, mem(prim->bias, bias.data_ptr()));
  if (size_t sb = prim->scratch.get_size()) args.emplace(DNNL_ARG_SCRATCHPAD, mem(prim->scratch, matmul_scratch(sb)));
  prim->prim.execute(stream(), args);
  stream().wait();
  return true;
}

// Tries to express a as a single [B*M, K] matrix (batch dims folded into rows).
bool fold_rows(const Tensor& a, int64_t& rows, int64_t& sr) {
  int64_t nd = a.ndim();
  rows = 1;
  sr = -1;
  int64_t inner_stride = -1, inner_size = 1;
  for (int64_t d = nd - 2; d >= 0; --d) {
    int64_t s = a.shape()[d];
    if (s == 1) continue;
    if (inner_stride < 0) { sr = a.strides()[d]; }
    else if (a.strides()[d] != inner_stride * inner_size) return false;
    inner_stride = a.strides()[d];
    inner_size = s;
    rows *= s;
  }
  if (sr < 0) sr = a.shape().back();
  return true;
}

// Matrix operand geometry at rank nd (batch dims right-aligned; missing or stride-0 dims -> 1).
bool operand_geometry(const Tensor& t, const Shape& batch, Geometry& g) {
  int64_t nb = static_cast<int64_t>(batch.size()), off = nb - (t.ndim() - 2);
  g.dims.assign(nb + 2, 1);
  g.strides.assign(nb + 2, 0);
  for (int64_t d = 0; d < nb; ++d) {
    int64_t td = d - off;
    if (td < 0) continue;
    int64_t s = t.shape()[td], st = t.strides()[td];
    if (s == 1 || st == 0) continue;
    if (st < 0) return false;
    g.dims[d] = s;
    g.strides[d] = st;
  }
  int64_t r = t.shape()[t.ndim() - 2], c = t.shape().back();
  int64_t sr = t.strides()[t.ndim() - 2], sc = t.strides().back();
  if (sr < 0 || sc < 0 || !normalize_matrix(r, c, sr, sc)) return false;
  g.dims[nb] = r;
  g.dims[nb + 1] = c;
  g.strides[nb] = sr;
  g.strides[nb + 1] = sc;
  fix_unit_strides(g);
  return true;
}

// The dtype the operands are read in: out's, except bfloat16 operands of a float32 product
// (oneDNN accumulates in float32 and writes float32: attention's scores).
DType operand_dtype(const Tensor& a, const Tensor& b, DType out) {
  return out == DType::Float32 && a.dtype() == DType::BFloat16 && b.dtype() == DType::BFloat16 ? DType::BFloat16 : out;
}

bool try_dnnl(const Tensor& a, const Tensor& b, const Tensor& bias, const MatmulEpilogue& ep, const Tensor& out,
              const Shape& batch_full) {
  const DType dt = out.dtype(), in = operand_dtype(a, b, dt);
  int64_t M = a.shape()[a.ndim() - 2], K = a.shape().back(), N = b.shape().back();
  // Batch dims of size 1 are dropped everywhere (they only shift the pointer by zero).
  Shape batch;
  for (int64_t s : batch_full) if (s != 1) batch.push_back(s);
  if (batch.size() + 2 > 12) return false;
  Tensor bb = bias;
  if (bb.defined() && bb.strides()[0] <= 0 && N > 1) bb = bb.contiguous_data();
  Geometry D;
  // Fold a's batch into rows when b has no batch: one large GEMM instead of many small ones.
  int64_t bbatch = numel_of(Shape(b.shape().begin(), b.shape().end() - 2));
  int64_t rows, sr;
  if (!batch.empty() && bbatch == 1 && fold_rows(a, rows, sr)) {
    int64_t sc = a.strides().back();
    Geometry A{{rows, K}, {sr, sc}}, B;
    if (normalize_matrix(rows, K, A.strides[0], A.strides[1]) && operand_geometry(b, {}, B)) {
      D = {{rows, N}, {N, 1}};
      if (run_dnnl(A, a.data_ptr(), B, b.data_ptr(), bb, D, out.data_ptr(), in, dt, ep, b)) return true;
    }
  }
  Shape dshape = batch;
  dshape.push_back(M);
  dshape.push_back(N);
  D = {dshape, contiguous_strides(dshape)};
  Geometry A, B;
  Tensor ac = a, bc = b;
  if (!operand_geometry(ac, batch, A)) { ac = a.contiguous_data(); operand_geometry(ac, batch, A); }
  if (!operand_geometry(bc, batch, B)) { bc = b.contiguous_data(); operand_geometry(bc, batch, B); }
  // A 2-D product reading b in place may use a packed copy of b.
  const Tensor& wsrc = batch.empty() && bc.impl() == b.impl() ? b : Tensor();
  if (run_dnnl(A, ac.data_ptr(), B, bc.data_ptr(), bb, D, out.data_ptr(), in, dt, ep, wsrc)) return true;
  // Last resort: fully materialised, contiguous, batch-expanded operands.
  Shape as = batch_full, bs = batch_full, ds = batch_full;
  as.push_back(M); as.push_back(K);
  bs.push_back(K); bs.push_back(N);
  ds.push_back(M); ds.push_back(N);
  Tensor af = Tensor::empty(as, in), bf = Tensor::empty(bs, in);
  copy_into(af, a);
  copy_into(bf, b);
  if (!operand_geometry(af, batch_full, A) || !operand_geometry(bf, batch_full, B)) return false;
  D = {ds, contiguous_strides(ds)};
  return run_dnnl(A, af.data_ptr(), B, bf.data_ptr(), bb, D, out.data_ptr(), in, dt, ep);
}

// ---- Generic blocked GEMM (float64, integers, and the fallback) ----------------------------

// 32-byte (AVX2) GCC vector types of the accumulator types.
template <class A> struct Vec32;
template <> struct Vec32<double> { typedef double type __attribute__((vector_size(32))); };
template <> struct Vec32<float> { typedef float type __attribute__((vector_size(32))); };
template <> struct Vec32<int64_t> { typedef int64_t type __attribute__((vector_size(32))); };

template <class T, class Acc>
void gemm_generic(const Tensor& a, const Tensor& b, const Tensor& bias, const MatmulEpilogue& ep, const Tensor& out,
                  const Shape& batch) {
  const int64_t M = a.shape()[a.ndim() - 2], K = a.shape().back(), N = b.shape().back();
  const int64_t nb = numel_of(batch), nbd = static_cast<int64_t>(batch.size());
  // Per-batch element offsets of a and b (broadcast dims advance by 0).
  std::vector<int64_t> aoff(nb, 0), boff(nb, 0);
  auto batch_stride = [&](const Tensor& t, int64_t d) {
    int64_t td = d - (nbd - (t.ndim() - 2));
    return (td < 0 || t.shape()[td] == 1) ? int64_t(0) : t.strides()[td];
  };
  for (int64_t i = 0; i < nb; ++i) {
    int64_t r = i;
    for (int64_t d = nbd - 1; d >= 0; --d) {
      int64_t idx = r % batch[d];
      r /= batch[d];
      aoff[i] += idx * batch_stride(a, d);
      boff[i] += idx * batch_stride(b, d);
    }
  }
  const T* A = a.data<T>();
  const T* B = b.data<T>();
  T* C = out.data<T>();
  const int64_t sar = a.strides()[a.ndim() - 2], sac = a.strides().back();
  const int64_t sbr = b.strides()[b.ndim() - 2], sbc = b.strides().back();
  const T* bias_p = bias.defined() ? bias.data<T>() : nullptr;
  const int64_t sbias = bias.defined() ? bias.strides()[0] : 0;
  constexpr int64_t RB = 16, KB = 128;
  const int64_t row_blocks = (M + RB - 1) / RB, tasks = nb * row_blocks;
  const int64_t work = RB * std::max<int64_t>(N, 1) * std::max<int64_t>(K, 1);
  parallel_for(0, tasks, std::max<int64_t>(1, 2 * kParallelGrain / work), [&](int64_t t0, int64_t t1) {
    std::vector<Acc> acc(RB * N), pack(KB * N);
    for (int64_t t = t0; t < t1; ++t) {
      int64_t bi = t / row_blocks, i0 = (t % row_blocks) * RB, i1 = std::min(M, i0 + RB);
      const T* Ab = A + aoff[bi];
      const T* Bb = B + boff[bi];
      T* Cb = C + bi * M * N;
      std::fill(acc.begin(), acc.end(), Acc(0));
      for (int64_t k0 = 0; k0 < K; k0 += KB) {
        int64_t k1 = std::min(K, k0 + KB);
        for (int64_t k = k0; k < k1; ++k) {
          Acc* pr = pack.data() + (k - k0) * N;
          const T* br = Bb + k * sbr;
          for (int64_t j = 0; j < N; ++j) pr[j] = static_cast<Acc>(static_cast<compute_t<T>>(br[j * sbc]));
        }
        auto a_at = [&](int64_t i, int64_t k) { return static_cast<Acc>(static_cast<compute_t<T>>(Ab[i * sar + k * sac])); };
        int64_t i = i0;
        for (; i + 4 <= i1; i += 4) {
          // 4 x (2 vectors) register tile: per k, 4 broadcasts of A and 2 loads of packed B feed
          // 8 vector multiply-adds (GCC vector extensions; AVX2 width).
          using V = typename Vec32<Acc>::type;
          constexpr int64_t L = 32 / sizeof(Acc), NR = 2 * L;
          Acc* __restrict c0 = acc.data() + (i - i0) * N;
          int64_t j0 = 0;
          for (; j0 + NR <= N; j0 += NR) {
            V t00 = {}, t01 = {}, t10 = {}, t11 = {}, t20 = {}, t21 = {}, t30 = {}, t31 = {};
            for (int64_t k = k0; k < k1; ++k) {
              const Acc* pr = pack.data() + (k - k0) * N + j0;
              V b0, b1;
              std::memcpy(&b0, pr, sizeof(V));
              std::memcpy(&b1, pr + L, sizeof(V));
              const Acc a0 = a_at(i, k), a1 = a_at(i + 1, k), a2 = a_at(i + 2, k), a3 = a_at(i + 3, k);
              t00 += a0 * b0; t01 += a0 * b1;
              t10 += a1 * b0; t11 += a1 * b1;
              t20 += a2 * b0; t21 += a2 * b1;
              t30 += a3 * b0; t31 += a3 * b1;
            }
            auto store = [&](Acc* dst, const V& v) {
              V cur;
              std::memcpy(&cur, dst, sizeof(V));
              cur += v;
              std::memcpy(dst, &cur, sizeof(V));
            };
            store(c0 + j0, t00); store(c0 + j0 + L, t01);
            store(c0 + N + j0, t10); store(c0 + N + j0 + L, t11);
            store(c0 + 2 * N + j0, t20); store(c0 + 2 * N + j0 + L, t21);
            store(c0 + 3 * N + j0, t30); store(c0 + 3 * N + j0 + L, t31);
          }
          for (int64_t k = k0; k < k1 && j0 < N; ++k) {  // remaining columns
            const Acc a0 = a_at(i, k), a1 = a_at(i + 1, k), a2 = a_at(i + 2, k), a3 = a_at(i + 3, k);
            const Acc* __restrict pr = pack.data() + (k - k0) * N;
            for (int64_t j = j0; j < N; ++j) {
              const Acc pv = pr[j];
              c0[j] += a0 * pv;
              c0[N + j] += a1 * pv;
              c0[2 * N + j] += a2 * pv;
              c0[3 * N + j] += a3 * pv;
            }
          }
        }
        for (; i < i1; ++i) {
          Acc* __restrict cr = acc.data() + (i - i0) * N;
          for (int64_t k = k0; k < k1; ++k) {
            const Acc av = a_at(i, k);
            const Acc* __restrict pr = pack.data() + (k - k0) * N;
            for (int64_t j = 0; j < N; ++j) cr[j] += av * pr[j];
          }
        }
      }
      const Acc alpha = static_cast<Acc>(ep.alpha);
      for (int64_t i = i0; i < i1; ++i) {
        const Acc* cr = acc.data() + (i - i0) * N;
        T* orow = Cb + i * N;
        for (int64_t j = 0; j < N; ++j) {
          Acc v = ep.alpha == 1.0 ? cr[j] : alpha * cr[j];
          if (bias_p) v += static_cast<Acc>(static_cast<compute_t<T>>(bias_p[j * sbias]));
          Acc prev = ep.post_ops.empty() ? Acc(0) : static_cast<Acc>(static_cast<compute_t<T>>(orow[j]));
          if (!ep.post_ops.empty()) v = apply_post_ops<Acc>(v, ep.post_ops, prev);
          orow[j] = static_cast<T>(static_cast<compute_t<T>>(v));
        }
      }
    }
  });
}

// Whether oneDNN has a matmul kernel for this dtype on this CPU (probed once).
bool dnnl_has_matmul(DType dt) {
  auto probe = [](DType t) {
    try {
      auto md = plain_desc({16, 16}, t);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  };
  static const bool bf16 = probe(DType::BFloat16), f16 = probe(DType::Float16);
  return dt == DType::Float32 || (dt == DType::BFloat16 && bf16) || (dt == DType::Float16 && f16);
}

}  // namespace

void dnnl_matmul(const Tensor& a, const Tensor& b, const Tensor& bias, const MatmulEpilogue& ep, const Tensor& out) {
  LUCID_CHECK(a.ndim() >= 2 && b.ndim() >= 2, Error, "dnnl_matmul: operands must have at least 2 dims");
  LUCID_CHECK(!bias.defined() || ep.alpha == 1.0, Error, "dnnl_matmul: alpha must be 1 when a bias is given");
  if (out.numel() == 0) return;
  Shape batch = broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                                 Shape(b.shape().begin(), b.shape().end() - 2), "matmul");
  DType dt = out.dtype();
  const int64_t K = a.shape().back();
  // Tiny products (<= 16^3 multiply-adds) are faster in the plain loop than through a oneDNN call.
  constexpr int64_t kSmallGemm = 4096;
  if (dnnl_has_matmul(dt) && K > 0 && out.is_contiguous() && out.numel() * K > kSmallGemm &&
      try_dnnl(a, b, bias, ep, out, batch))
    return;
  if (operand_dtype(a, b, dt) != dt) {  // bfloat16 operands into float32 without oneDNN: widen them
    Tensor a32 = Tensor::empty(a.shape(), dt), b32 = Tensor::empty(b.shape(), dt);
    copy_into(a32, a);
    copy_into(b32, b);
    return dnnl_matmul(a32, b32, bias, ep, out);
  }
  switch (dt) {
    case DType::Float64: gemm_generic<double, double>(a, b, bias, ep, out, batch); return;
    case DType::Float32: gemm_generic<float, float>(a, b, bias, ep, out, batch); return;
    case DType::Int64: gemm_generic<int64_t, int64_t>(a, b, bias, ep, out, batch); return;
    case DType::Int32: gemm_generic<int32_t, int64_t>(a, b, bias, ep, out, batch); return;
    case DType::Int8: gemm_generic<int8_t, int64_t>(a, b, bias, ep, out, batch); return;
    case DType::UInt8: gemm_generic<uint8_t, int64_t>(a, b, bias, ep, out, batch); return;
    case DType::Float16: case DType::BFloat16: {
      // No oneDNN kernel for this dtype: compute in float32 (oneDNN) and round once.
      auto f32 = [](const Tensor& t) {
        if (!t.defined()) return t;
        Tensor r = Tensor::empty(t.shape(), DType::Float32);
        copy_into(r, t);
        return r;
      };
      Tensor o32 = Tensor::empty(out.shape(), DType::Float32);
      if (ep.has_sum()) copy_into(o32, out);
      dnnl_matmul(f32(a), f32(b), f32(bias), ep, o32);
      copy_into(out, o32);
      return;
    }
    default: throw TypeError(str("matmul: dtype ", dtype_name(dt), " is not supported"));
  }
}

size_t matmul_cache_size() { return prim_cache().size(); }


}  // namespace lucid::cpu
