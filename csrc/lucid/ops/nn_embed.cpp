// Embedding (row gather) with its scatter-add backward, and 4-D Interpolate (nearest,
// nearest-exact, bilinear, bicubic) with its adjoint. Each backward op is linear in the gradient and its
// VJP is the forward op again, so both pairs differentiate to any order. Source indices and
// interpolation weights follow PyTorch's CPU kernels (float index math for float inputs).
#include <cmath>
#include <cstring>
#include <vector>

#include "lucid/core/parallel.h"
#include "lucid/ops/core.h"
#include "lucid/ops/nn.h"
#include "lucid/ops/nn_util.h"

namespace lucid {

namespace {

Tensor checked_indices(const Tensor& idx, int64_t num, const char* op) {
  Tensor i64 = nnutil::contig_as(idx, DType::Int64);
  const int64_t* p = i64.data<int64_t>();
  for (int64_t i = 0; i < i64.numel(); ++i)
    LUCID_CHECK(p[i] >= 0 && p[i] < num, IndexError, op, ": index ", p[i], " is out of range for ", num,
                " embeddings (valid indices are 0..", num - 1, ")");
  return i64;
}

}  // namespace

// ---- Embedding: inputs (weight, indices); attrs padding_idx (-1: none), zero_padding -------
LUCID_REGISTER_OP(Embedding, "padding_idx:int, zero_padding:bool?", [] {
  OpDef d;
  d.num_inputs = 2;
  d.nondiff_inputs = {1};
  d.infer = [](const TensorList& in, const Attrs&) {
    const Tensor &w = in[0], &idx = in[1];
    LUCID_CHECK(w.ndim() == 2, ValueError, "embedding: argument 'weight' expected a 2-D tensor, got shape ", shape_str(w.shape()));
    LUCID_CHECK(is_integral(idx.dtype()), TypeError, "embedding: argument 'indices' expected an integer tensor (int64 or int32), got ",
                dtype_name(idx.dtype()));
    Shape s = idx.shape();
    s.push_back(w.shape()[1]);
    return std::vector<TensorMeta>{{s, w.dtype()}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    Tensor w = in[0].contiguous_data();
    int64_t V = w.shape()[0], D = w.shape()[1];
    Tensor idx = checked_indices(in[1], V, "embedding");
    int64_t pad = a.i("padding_idx"), n = idx.numel();
    bool zero_pad = a.b("zero_padding", false);
    size_t row = static_cast<size_t>(D) * itemsize(w.dtype());
    const int64_t* ip = idx.data<int64_t>();
    const char* src = static_cast<const char*>(w.data_ptr());
    char* dst = static_cast<char*>(out[0].data_ptr());
    parallel_for(0, n, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(D, 1)), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if (zero_pad && ip[i] == pad) std::memset(dst + i * row, 0, row);
        else std::memcpy(dst + i * row, src + ip[i] * row, row);
      }
    });
  };
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    Attrs a{{"num_weights", c.input_meta[0].shape[0]}, {"padding_idx", c.attrs.i("padding_idx")}};
    return TensorList{dispatch1(OpId::EmbeddingBackward, {c.grads[0], c.inputs[1]}, a), Tensor()};
  };
  return d;
}());

// ---- EmbeddingBackward: inputs (grad, indices) -> (num_weights, D), rows scatter-added ----
LUCID_REGISTER_OP(EmbeddingBackward, "num_weights:int, padding_idx:int", [] {
  OpDef d;
  d.num_inputs = 2;
  d.nondiff_inputs = {1};
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor &g = in[0], &idx = in[1];
    nnutil::check_floating(g, "embedding_backward", "grad");
    LUCID_CHECK(g.ndim() == idx.ndim() + 1, ValueError, "embedding_backward: grad shape ", shape_str(g.shape()),
                " does not match indices shape ", shape_str(idx.shape()));
    return std::vector<TensorMeta>{{{a.i("num_weights"), g.shape().back()}, g.dtype()}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    int64_t V = a.i("num_weights"), pad = a.i("padding_idx");
    Tensor g = in[0].contiguous_data();
    Tensor idx = checked_indices(in[1], V, "embedding_backward");
    int64_t D = g.shape().back(), n = idx.numel();
    const int64_t* ip = idx.data<int64_t>();
    LUCID_DISPATCH_FLOATING(g.dtype(), "embedding_backward", [&] {
      using C = compute_t<scalar_t>;
      std::vector<C> acc(static_cast<size_t>(V * D), C(0));
      const scalar_t* gp = g.data<scalar_t>();
      // Columns are independent: split them across threads (no write conflicts).
      parallel_for(0, D, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)), [&](int64_t cb, int64_t ce) {
        for (int64_t i = 0; i < n; ++i) {
          if (ip[i] == pad) continue;
          C* dst = acc.data() + ip[i] * D;
          const scalar_t* src = gp + i * D;
          for (int64_t j = cb; j < ce; ++j) dst[j] += static_cast<C>(src[j]);
        }
      });
      scalar_t* o = out[0].data<scalar_t>();
      for (int64_t k = 0; k < V * D; ++k) o[k] = static_cast<scalar_t>(acc[k]);
    });
  };
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    Attrs a{{"padding_idx", c.attrs.i("padding_idx")}, {"zero_padding", true}};
    return TensorList{dispatch1(OpId::Embedding, {c.grads[0], c.inputs[1]}, a), Tensor()};
  };
  return d;
}());

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx) {
  return dispatch1(OpId::Embedding, {weight, indices}, {{"padding_idx", padding_idx}, {"zero_padding", false}});
}

// ---- Interpolate ----------------------------------------------------------------------------
namespace {

enum Mode { kNearest, kNearestExact, kBilinear, kBicubic };

int parse_mode(const std::string& m) {
  if (m == "nearest") return kNearest;
  if (m == "nearest-exact") return kNearestExact;
  if (m == "bilinear") return kBilinear;
  if (m == "bicubic") return kBicubic;
  throw NotImplementedError(str("interpolate: mode '", m, "' is not supported (supported: nearest, nearest-exact, bilinear, bicubic)"));
}

// Per output index along one dim: n source indices and their weights (n = 1, 2 or 4).
template <class C>
struct Taps {
  int n = 1;
  std::vector<int64_t> idx;  // [out * n]
  std::vector<C> w;          // [out * n]
};

template <class C>
Taps<C> make_taps(int64_t in, int64_t out, int mode, bool align, double scale) {
  Taps<C> t;
  t.n = mode == kBicubic ? 4 : (mode == kBilinear ? 2 : 1);
  t.idx.resize(out * t.n);
  t.w.resize(out * t.n);
  if (mode == kNearest || mode == kNearestExact) {
    float s = scale > 0 ? static_cast<float>(1.0 / scale) : static_cast<float>(in) / static_cast<float>(out);
    for (int64_t o = 0; o < out; ++o) {
      int64_t src;
      if (mode == kNearest) {
        if (out == in) src = o;
        else if (out == 2 * in) src = o >> 1;
        else src = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
      } else {
        src = std::min(static_cast<int64_t>(std::floor((static_cast<float>(o) + 0.5f) * s)), in - 1);
      }
      t.idx[o] = src;
      t.w[o] = C(1);
    }
    return t;
  }
  C s;
  if (align) s = out > 1 ? static_cast<C>(in - 1) / static_cast<C>(out - 1) : C(0);
  else s = scale > 0 ? static_cast<C>(1.0 / scale) : static_cast<C>(in) / static_cast<C>(out);
  for (int64_t o = 0; o < out; ++o) {
    C real = align ? s * static_cast<C>(o) : s * (static_cast<C>(o) + C(0.5)) - C(0.5);
    if (mode == kBilinear) {
      if (!align && real < 0) real = 0;
      int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
      C l = std::min(std::max(real - static_cast<C>(i0), C(0)), C(1));
      t.idx[2 * o] = i0;
      t.idx[2 * o + 1] = i0 + (i0 < in - 1 ? 1 : 0);
      t.w[2 * o] = C(1) - l;
      t.w[2 * o + 1] = l;
    } else {
      // Cubic convolution (A = -0.75) over 4 clamped neighbours.
      int64_t i0 = static_cast<int64_t>(std::floor(real));
      C x = real - static_cast<C>(i0);
      const C A = C(-0.75);
      auto c1 = [&](C v) { return ((A + 2) * v - (A + 3)) * v * v + 1; };
      auto c2 = [&](C v) { return ((A * v - 5 * A) * v + 8 * A) * v - 4 * A; };
      C cw[4] = {c2(x + 1), c1(x), c1(1 - x), c2(2 - x)};
      for (int k = 0; k < 4; ++k) {
        t.idx[4 * o + k] = std::min(std::max(i0 - 1 + k, int64_t{0}), in - 1);
        t.w[4 * o + k] = cw[k];
      }
    }
  }
  return t;
}

// Forward (Adjoint=false): small[N,C,H,W] -> big[N,C,OH,OW]; adjoint: big grad -> small grad.
template <class T, bool Adjoint>
void interp_run(const T* src, T* dst, int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW, const Attrs& a) {
  using C = compute_t<T>;
  int mode = parse_mode(a.s("mode"));
  bool align = a.b("align_corners");
  Taps<C> th = make_taps<C>(H, OH, mode, align, a.f("scale_h")), tw = make_taps<C>(W, OW, mode, align, a.f("scale_w"));
  const int nh = th.n, nw = tw.n;
  parallel_for(0, planes, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(OH * OW, 1)), [&](int64_t b, int64_t e) {
    std::vector<C> acc(Adjoint ? H * W : 0);
    for (int64_t p = b; p < e; ++p) {
      if constexpr (!Adjoint) {
        const T* x = src + p * H * W;
        T* y = dst + p * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            C v = 0;
            for (int i = 0; i < nh; ++i) {
              const T* row = x + th.idx[oh * nh + i] * W;
              C rv = 0;
              for (int j = 0; j < nw; ++j) rv += tw.w[ow * nw + j] * static_cast<C>(row[tw.idx[ow * nw + j]]);
              v += th.w[oh * nh + i] * rv;
            }
            y[oh * OW + ow] = static_cast<T>(v);
          }
      } else {
        const T* g = src + p * OH * OW;
        std::fill(acc.begin(), acc.end(), C(0));
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            C gv = static_cast<C>(g[oh * OW + ow]);
            for (int i = 0; i < nh; ++i) {
              C* row = acc.data() + th.idx[oh * nh + i] * W;
              C gh = th.w[oh * nh + i] * gv;
              for (int j = 0; j < nw; ++j) row[tw.idx[ow * nw + j]] += tw.w[ow * nw + j] * gh;
            }
          }
        T* y = dst + p * H * W;
        for (int64_t k = 0; k < H * W; ++k) y[k] = static_cast<T>(acc[k]);
      }
    }
  });
}

template <bool Adjoint>
void interp_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor x = in[0].contiguous_data();
  const Shape& s = Adjoint ? out[0].shape() : x.shape();
  const IntList& sz = a.ints("size");
  int64_t planes = s[0] * s[1];
  if (x.numel() == 0 || out[0].numel() == 0) return;
  LUCID_DISPATCH_FLOATING(x.dtype(), "interpolate", [&] {
    interp_run<scalar_t, Adjoint>(x.data<scalar_t>(), out[0].data<scalar_t>(), planes, s[2], s[3], sz[0], sz[1], a);
  });
}

}  // namespace

// attrs: size [OH, OW], input_size [H, W], mode, align_corners, scale_h, scale_w (<= 0: none).
LUCID_REGISTER_OP(Interpolate, "size:ints, input_size:ints, mode:str, align_corners:bool, scale_h:float, scale_w:float", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    nnutil::check_floating(x, "interpolate", "input");
    LUCID_CHECK(x.ndim() == 4, NotImplementedError, "interpolate: only 4-D input (N, C, H, W) is supported, got shape ",
                shape_str(x.shape()));
    parse_mode(a.s("mode"));
    const IntList& sz = a.ints("size");
    LUCID_CHECK(sz.size() == 2 && sz[0] > 0 && sz[1] > 0, ValueError, "interpolate: output size must be 2 positive ints, got ",
                shape_str(sz));
    return std::vector<TensorMeta>{{{x.shape()[0], x.shape()[1], sz[0], sz[1]}, x.dtype()}};
  };
  d.cpu_kernel = interp_kernel<false>;
  d.vjp = [](const VjpContext& c) { return TensorList{dispatch1(OpId::InterpolateBackward, {c.grads[0]}, c.attrs)}; };
  return d;
}());

LUCID_REGISTER_OP(InterpolateBackward, "size:ints, input_size:ints, mode:str, align_corners:bool, scale_h:float, scale_w:float", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& g = in[0];
    const IntList& is = a.ints("input_size");
    LUCID_CHECK(g.ndim() == 4 && g.shape()[2] == a.ints("size")[0] && g.shape()[3] == a.ints("size")[1], ValueError,
                "interpolate_backward: grad shape ", shape_str(g.shape()), " does not match the output size");
    return std::vector<TensorMeta>{{{g.shape()[0], g.shape()[1], is[0], is[1]}, g.dtype()}};
  };
  d.cpu_kernel = interp_kernel<true>;
  d.vjp = [](const VjpContext& c) { return TensorList{dispatch1(OpId::Interpolate, {c.grads[0]}, c.attrs)}; };
  return d;
}());

Tensor interpolate(const Tensor& x, int64_t out_h, int64_t out_w, const std::string& mode, bool align_corners,
                   double scale_h, double scale_w) {
  LUCID_CHECK(x.ndim() == 4, NotImplementedError, "interpolate: only 4-D input (N, C, H, W) is supported, got shape ",
              shape_str(x.shape()));
  Attrs a{{"size", IntList{out_h, out_w}}, {"input_size", IntList{x.shape()[2], x.shape()[3]}}, {"mode", mode},
          {"align_corners", align_corners}, {"scale_h", scale_h}, {"scale_w", scale_w}};
  return dispatch1(OpId::Interpolate, {x}, a);
}

}  // namespace lucid
