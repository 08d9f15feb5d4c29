// Convolution kernels: oneDNN primitives (float32/bfloat16), float32 compute for float16, and
// im2col + GEMM for float64. See dnnl_conv.h.
#include "lucid/backends/cpu/dnnl_conv.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "lucid/backends/cpu/dnnl_common.h"
#include "lucid/backends/cpu/loops.h"
#include "lucid/backends/cpu/packed_weights.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/blocked_layout.h"

namespace lucid::cpu {

namespace {
using namespace dnnl_util;
using dnnl::memory;

enum class Kind : int64_t { Fwd = 1, BwdData, BwdWeights, Deconv };

// A cached primitive with, for each of its two inputs and one output, the user (plain) and
// primitive descriptors and the reorder between them when they differ.
struct ConvEntry {
  dnnl::primitive prim;
  int arg[3];
  memory::desc user[3], impl[3];
  std::optional<dnnl::reorder> reorder[3];
  std::optional<dnnl::reorder> dst_in;  // user -> impl for the output, when a Sum post-op reads it
  bool has_bias = false;
  // The caller's scratchpad (scratchpad_mode::user, a per-thread buffer): oneDNN's default
  // library scratchpad is shared by concurrent executions of one primitive, which gave wrong
  // results when several threads ran the same convolution.
  memory::desc scratch;
};

LruCache<ConvEntry>& conv_cache() {
  static LruCache<ConvEntry> c(128);
  return c;
}

memory::dims to_dims(const IntList& v) { return memory::dims(v.begin(), v.end()); }

// Weight descriptor as oneDNN wants it ([G,] OC/G, IC/G, k...) over PyTorch's memory layout.
// conv weight: [OC, IC/G, k...] contiguous; deconv weight: [IC, OC/G, k...] contiguous.
memory::desc weight_desc(const Shape& ws, int64_t G, bool deconv, memory::data_type dt) {
  int64_t nsp = static_cast<int64_t>(ws.size()) - 2, ks = 1;
  for (int64_t i = 0; i < nsp; ++i) ks *= ws[2 + i];
  int64_t OCg, ICg;
  memory::dims st_oc, st_ic;
  if (!deconv) { OCg = ws[0] / G; ICg = ws[1]; }
  else { ICg = ws[0] / G; OCg = ws[1]; }
  int64_t s_oc = deconv ? ks : ICg * ks, s_ic = deconv ? OCg * ks : ks, s_g = OCg * ICg * ks;
  memory::dims dims, strides;
  if (G > 1) { dims.push_back(G); strides.push_back(s_g); }
  dims.push_back(OCg); strides.push_back(s_oc);
  dims.push_back(ICg); strides.push_back(s_ic);
  Strides sp = contiguous_strides(Shape(ws.begin() + 2, ws.end()));
  for (int64_t i = 0; i < nsp; ++i) { dims.push_back(ws[2 + i]); strides.push_back(sp[i]); }
  return memory::desc(dims, dt, strides);
}

// LUCID_CONV_LAYOUT (read once): see get_entry.
const std::string& conv_layout() {
  static const std::string layout = [] {
    const char* e = std::getenv("LUCID_CONV_LAYOUT");
    return std::string(e ? e : "blocked");
  }();
  return layout;
}

// Builds (or fetches) the primitive for one convolution call. Shapes: a = src/diff_dst,
// b = weights/src, c = output, per `kind`.
std::shared_ptr<ConvEntry> get_entry(Kind kind, const Shape& xs, const Shape& ws, const Shape& ys, bool bias,
                                     const ConvParams& p, DType t, const std::vector<MatmulPostOp>& post = {}) {
  Key k;
  k.add(static_cast<int64_t>(kind)).add(static_cast<int64_t>(t)).add(xs).add(ws).add(ys).add(bias);
  for (auto& po : post) k.add(po.kind).addf(po.scale);
  k.add(p.stride).add(p.dilation).add(p.pad_l).add(p.pad_r).add(p.groups).add(p.in_block).add(p.out_block);
  return conv_cache().get(k, [&]() -> std::shared_ptr<ConvEntry> {
    auto dt = to_dnnl(t);
    memory::dims strides = to_dims(p.stride), pl = to_dims(p.pad_l), pr = to_dims(p.pad_r), dil;
    for (int64_t d : p.dilation) dil.push_back(d - 1);
    bool deconv = kind == Kind::Deconv;
    memory::desc x_user = plain_desc(xs, t), y_user = plain_desc(ys, t);
    // Activations the layout pass keeps blocked ([N, C/b, H, W, b] tensors): nChw16c for b = 16,
    // nhwc for b = C (where C is 16 both are the same layout).
    auto user_blocked = [&](const memory::desc& md, int64_t b, int64_t c) {
      LUCID_CHECK(xs.size() == 4 && (b == 16 || b == 8 || b == c), Error,
                  "conv: channel-blocked layouts need a 2-D convolution with block 16, 8 or the channel count ", c,
                  ", got block ", b);
      return memory::desc(md.dims(), to_dnnl(t), b == 16 ? memory::format_tag::nChw16c
                                                 : b == 8 ? memory::format_tag::nChw8c : memory::format_tag::nhwc);
    };
    if (p.in_block) x_user = user_blocked(x_user, p.in_block, xs[1]);
    if (p.out_block) y_user = user_blocked(y_user, p.out_block, ys[1]);
    memory::desc w_user = weight_desc(ws, p.groups, deconv, dt);
    auto any = [&](const memory::desc& md) { return memory::desc(md.dims(), dt, memory::format_tag::any); };
    memory::desc xa = any(x_user), wa = any(w_user), ya = any(y_user);
    // Activation layout (LUCID_CONV_LAYOUT, a tuning knob): "blocked" (default: the layout of
    // conv_activation_layout, nChw16c (nChw8c on AVX2) for a tensor whose channels are a multiple
    // of the block, or nhwc for bfloat16 on AMX, with cheap reorders from NCHW and oneDNN's fastest kernels; oneDNN's
    // choice for the others, e.g. the 3-channel input of a first layer, which its kernels read
    // plain), "any" (oneDNN's choice throughout) or "plain".
    const std::string& layout = conv_layout();
    int64_t nsp_dims = static_cast<int64_t>(xs.size()) - 2;
    if (layout == "plain") {
      xa = x_user;
      ya = y_user;
    } else if (layout == "blocked" && conv_activation_layout(t) == ConvLayout::ChannelsLast) {
      auto tag = nsp_dims == 1 ? memory::format_tag::nwc : memory::format_tag::nhwc;
      xa = memory::desc(x_user.dims(), dt, tag);
      ya = memory::desc(y_user.dims(), dt, tag);
    } else if (layout == "blocked" && conv_layout_block(conv_activation_layout(t)) > 0) {
      const int64_t b = conv_layout_block(conv_activation_layout(t));
      auto tag = b == 16 ? (nsp_dims == 1 ? memory::format_tag::nCw16c : memory::format_tag::nChw16c)
                         : (nsp_dims == 1 ? memory::format_tag::nCw8c : memory::format_tag::nChw8c);
      if (xs[1] % b == 0) xa = memory::desc(x_user.dims(), dt, tag);
      if (ys[1] % b == 0) ya = memory::desc(y_user.dims(), dt, tag);
    }
    memory::desc b_md = bias ? memory::desc({ys[1]}, dt, memory::format_tag::a) : memory::desc();
    auto e = std::make_shared<ConvEntry>();
    e->has_bias = bias;
    try {
      if (kind == Kind::Deconv) {
        dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                            xa, wa, b_md, ya, strides, dil, pl, pr);
        dnnl::primitive_attr sattr;
        sattr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        dnnl::deconvolution_forward::primitive_desc pd(d, sattr, engine());
        e->prim = dnnl::deconvolution_forward(pd);
        e->scratch = pd.scratchpad_desc();
        e->arg[0] = DNNL_ARG_SRC; e->arg[1] = DNNL_ARG_WEIGHTS; e->arg[2] = DNNL_ARG_DST;
        e->user[0] = x_user; e->user[1] = w_user; e->user[2] = y_user;
        e->impl[0] = pd.src_desc(); e->impl[1] = pd.weights_desc(); e->impl[2] = pd.dst_desc();
      } else if (kind == Kind::Fwd) {
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                          xa, wa, b_md, ya, strides, dil, pl, pr);
        dnnl::convolution_forward::primitive_desc pd(d, post_op_attr(post), engine());
        e->prim = dnnl::convolution_forward(pd);
        e->scratch = pd.scratchpad_desc();
        e->arg[0] = DNNL_ARG_SRC; e->arg[1] = DNNL_ARG_WEIGHTS; e->arg[2] = DNNL_ARG_DST;
        e->user[0] = x_user; e->user[1] = w_user; e->user[2] = y_user;
        e->impl[0] = pd.src_desc(); e->impl[1] = pd.weights_desc(); e->impl[2] = pd.dst_desc();
      } else {
        dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                           xa, wa, ya, strides, dil, pl, pr);
        dnnl::convolution_forward::primitive_desc fpd(fd, engine());
        if (kind == Kind::BwdData) {
          dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, xa, wa, ya, strides, dil, pl, pr);
          dnnl::primitive_attr sattr;
          sattr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
          dnnl::convolution_backward_data::primitive_desc pd(d, sattr, engine(), fpd);
          e->prim = dnnl::convolution_backward_data(pd);
          e->scratch = pd.scratchpad_desc();
          e->arg[0] = DNNL_ARG_DIFF_DST; e->arg[1] = DNNL_ARG_WEIGHTS; e->arg[2] = DNNL_ARG_DIFF_SRC;
          e->user[0] = y_user; e->user[1] = w_user; e->user[2] = x_user;
          e->impl[0] = pd.diff_dst_desc(); e->impl[1] = pd.weights_desc(); e->impl[2] = pd.diff_src_desc();
        } else {
          dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, xa, wa, ya, strides, dil, pl, pr);
          dnnl::primitive_attr sattr;
          sattr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
          dnnl::convolution_backward_weights::primitive_desc pd(d, sattr, engine(), fpd);
          e->prim = dnnl::convolution_backward_weights(pd);
          e->scratch = pd.scratchpad_desc();
          e->arg[0] = DNNL_ARG_DIFF_DST; e->arg[1] = DNNL_ARG_SRC; e->arg[2] = DNNL_ARG_DIFF_WEIGHTS;
          e->user[0] = y_user; e->user[1] = x_user; e->user[2] = w_user;
          e->impl[0] = pd.diff_dst_desc(); e->impl[1] = pd.src_desc(); e->impl[2] = pd.diff_weights_desc();
        }
      }
      for (int i = 0; i < 3; ++i) {
        if (e->user[i] == e->impl[i]) continue;
        if (i < 2) e->reorder[i] = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), e->user[i], engine(), e->impl[i]));
        else e->reorder[i] = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), e->impl[i], engine(), e->user[i]));
      }
      bool sum = false;
      for (auto& op : post) sum = sum || op.kind == MatmulPostOp::Sum;
      if (sum && e->reorder[2])
        e->dst_in = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), e->user[2], engine(), e->impl[2]));
    } catch (const dnnl::error&) {
      return nullptr;
    }
    return e;
  });
}

// Per-thread reusable buffers for the reordered (blocked) operands, so a call does not allocate
// and page-fault fresh megabytes each time. Slots 0-2: the two inputs and the output.
void* scratch(int slot, size_t bytes) {
  thread_local std::vector<char> bufs[4];
  std::vector<char>& b = bufs[slot];
  if (b.size() < bytes + 64) b.resize(bytes + 64);
  uintptr_t p = reinterpret_cast<uintptr_t>(b.data());
  return reinterpret_cast<void*>((p + 63) & ~uintptr_t(63));
}

// The weights of entry e (input 1) reordered into its layout, from the packed-weights cache
// (packed_weights.h): null when w's storage can't be trusted, on a first sighting, or off.
std::shared_ptr<void> packed_conv_weights(const ConvEntry& e, const Tensor& w) {
  if (!weight_pack_enabled()) return nullptr;
  Key k;
  k.add(2);  // a convolution's weights (a GEMM's B keys on 1)
  k.add(reinterpret_cast<intptr_t>(w.impl()->storage.get())).add(w.offset() * static_cast<int64_t>(itemsize(w.dtype())));
  k.add(static_cast<int64_t>(w.dtype())).add(e.user[1].dims());
  if (!add_layout(k, e.user[1]) || !add_layout(k, e.impl[1])) return nullptr;
  return packed_weight(k, w.impl()->storage, e.impl[1].get_size(),
                       [&] { return reorder_copy(e.user[1], w.data_ptr(), e.impl[1]); });
}

// Runs entry e on plain buffers: in0, in1 (the weights, read from tensor `w` when defined, which
// may come prepacked) and out; reorders into and out of the primitive's layouts where they differ.
bool run_entry(const std::shared_ptr<ConvEntry>& e, const void* in0, const void* in1, void* out, const void* bias,
               const Tensor& w = Tensor()) {
  if (!e) return false;
  dnnl::stream& s = stream();
  std::unordered_map<int, memory> args;
  const void* ins[2] = {in0, in1};
  std::shared_ptr<void> packed = w.defined() && e->reorder[1] ? packed_conv_weights(*e, w) : nullptr;
  for (int i = 0; i < 2; ++i) {
    memory um = mem(e->user[i], ins[i]);
    if (i == 1 && packed) {
      args.emplace(e->arg[i], mem(e->impl[i], packed.get()));
    } else if (e->reorder[i]) {
      memory pm = mem(e->impl[i], scratch(i, e->impl[i].get_size()));
      e->reorder[i]->execute(s, um, pm);
      args.emplace(e->arg[i], pm);
    } else {
      args.emplace(e->arg[i], um);
    }
  }
  memory uo = mem(e->user[2], out);
  memory po = e->reorder[2] ? mem(e->impl[2], scratch(2, e->impl[2].get_size())) : uo;
  if (e->dst_in) e->dst_in->execute(s, uo, po);  // the residual a Sum post-op accumulates onto
  args.emplace(e->arg[2], po);
  if (size_t sb = e->scratch.get_size()) args.emplace(DNNL_ARG_SCRATCHPAD, mem(e->scratch, scratch(3, sb)));
  if (e->has_bias) args.emplace(DNNL_ARG_BIAS, mem(memory::desc({e->user[2].dims()[1]}, e->user[2].data_type(),
                                                                 memory::format_tag::a), bias));
  e->prim.execute(s, args);
  if (e->reorder[2]) e->reorder[2]->execute(s, po, uo);
  s.wait();
  return true;
}

// y += scale * r (same shape, contiguous), in the compute type: a residual added after the
// primitive, rounded as the unfused add.
void add_scaled(const Tensor& y, const Tensor& r, double scale) {
  LUCID_DISPATCH_FLOATING(y.dtype(), "conv", [&] {
    using C = compute_t<scalar_t>;
    scalar_t* yp = y.data<scalar_t>();
    const scalar_t* rp = r.data<scalar_t>();
    parallel_for(0, y.numel(), kParallelGrain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        yp[i] = static_cast<scalar_t>(static_cast<C>(yp[i]) + static_cast<C>(scale) * static_cast<C>(rp[i]));
    });
  });
}

// ---- pointwise convolutions as one GEMM ------------------------------------------------------
// A 1x1 convolution with stride 1, no padding and one group is, per image, y[n] = W x[n] with x[n]
// viewed as an [IC, H*W] matrix: one oneDNN matmul over the plain NCHW buffers, the weights
// broadcast over the batch and the bias over the columns. The blocked convolution instead
// reorders x and y into and out of nChw16c around the call, which costs more than the product
// itself for the pointwise layers of MobileNet and EfficientNet (measured on one core: 24->144
// channels at 56x56 0.29 ms as a blocked convolution, torch's GEMM path 0.14 ms).
struct PointwiseEntry {
  dnnl::matmul prim;
  memory::desc w, x, y, scratch;
};

LruCache<PointwiseEntry>& pointwise_cache() {
  static LruCache<PointwiseEntry> c(64);
  return c;
}

bool is_pointwise(const Shape& ws, const ConvParams& p) {
  for (size_t i = 2; i < ws.size(); ++i)
    if (ws[i] != 1) return false;
  for (size_t i = 0; i < p.stride.size(); ++i)
    if (p.stride[i] != 1 || p.dilation[i] != 1 || p.pad_l[i] != 0 || p.pad_r[i] != 0) return false;
  return p.groups == 1;
}

// y = post_ops(W x + b) as a matmul; false when oneDNN has no implementation. oneDNN 2.6 runs a
// per-row bias ([1, OC, 1]) only in its reference matmul (380 ms for the 24->144 layer above), so
// the bias goes in through a Sum post-op instead: y is pre-filled with b, then y = W x + 1 * y,
// rounded once, as the convolution primitive adds its bias. A residual (a leading Sum post-op:
// y holds it on entry) is then added in a second step, as the convolution primitive and the
// unfused conv-then-add chain round it: (W x + b) + residual, bit for bit the eager chain.
bool pointwise_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y,
                       const std::vector<MatmulPostOp>& post0) {
  const int64_t N = x.shape()[0], IC = x.shape()[1], OC = y.shape()[1], HW = x.numel() / std::max<int64_t>(1, N * IC);
  const DType t = y.dtype();
  const bool residual = !post0.empty() && post0[0].kind == MatmulPostOp::Sum;
  for (size_t i = residual ? 1 : 0; i < post0.size(); ++i)
    if (post0[i].kind == MatmulPostOp::Sum) return false;  // only a leading Sum is expressible here
  if (residual && post0.size() > 1) return false;  // an activation post-op after the residual
  std::vector<MatmulPostOp> post(residual ? post0.begin() + 1 : post0.begin(), post0.end());
  if (b.defined()) post.insert(post.begin(), MatmulPostOp{MatmulPostOp::Sum, 1.0});
  Key k;
  k.add(N).add(IC).add(OC).add(HW).add(static_cast<int64_t>(t));
  for (auto& po : post) k.add(po.kind).addf(po.scale);
  auto e = pointwise_cache().get(k, [&]() -> std::shared_ptr<PointwiseEntry> {
    try {
      auto d = std::make_shared<PointwiseEntry>();
      d->w = strided_desc({1, OC, IC}, {OC * IC, IC, 1}, t);
      d->x = strided_desc({N, IC, HW}, {IC * HW, HW, 1}, t);
      d->y = strided_desc({N, OC, HW}, {OC * HW, HW, 1}, t);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(d->w, d->x, d->y), post_op_attr(post), engine());
      d->prim = dnnl::matmul(pd);
      d->scratch = pd.scratchpad_desc();
      return d;
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
  if (!e) return false;
  Tensor res;
  if (residual) {
    res = Tensor::empty(y.shape(), t);
    copy_into(res, y);
  }
  if (b.defined()) {
    LUCID_DISPATCH_FLOATING(t, "conv", [&] {
      scalar_t* yp = y.data<scalar_t>();
      const scalar_t* bp = b.data<scalar_t>();
      parallel_for(0, N * OC, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, HW)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) std::fill(yp + r * HW, yp + (r + 1) * HW, bp[r % OC]);
      });
    });
  }
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mem(e->w, w.data_ptr())},
                                       {DNNL_ARG_WEIGHTS, mem(e->x, x.data_ptr())},
                                       {DNNL_ARG_DST, mem(e->y, y.data_ptr())}};
  if (size_t sb = e->scratch.get_size()) args.emplace(DNNL_ARG_SCRATCHPAD, mem(e->scratch, scratch(3, sb)));
  e->prim.execute(stream(), args);
  stream().wait();
  if (residual) add_scaled(y, res, post0[0].scale);
  return true;
}

// ---- float64: im2col + GEMM (1-D convs run as 2-D with H = 1) ------------------------------
struct Geo2 {
  int64_t N, C, H, W, OC, OH, OW, KH, KW, G, sh, sw, dh, dw, ph, pw;
};

Geo2 geo2(const Shape& xs, const Shape& ws, const Shape& ys, const ConvParams& p, bool deconv_w) {
  bool one = xs.size() == 3;
  Geo2 g{};
  g.N = xs[0]; g.C = xs[1]; g.H = one ? 1 : xs[2]; g.W = xs.back();
  g.OC = ys[1]; g.OH = one ? 1 : ys[2]; g.OW = ys.back();
  g.KH = one ? 1 : ws[2]; g.KW = ws.back();
  g.G = p.groups;
  g.sh = one ? 1 : p.stride[0]; g.sw = p.stride.back();
  g.dh = one ? 1 : p.dilation[0]; g.dw = p.dilation.back();
  g.ph = one ? 0 : p.pad_l[0]; g.pw = p.pad_l.back();
  (void)deconv_w;
  return g;
}

// im2col / col2im for one image and one group: row (ic, kh, kw) of col holds, for every output
// position, the input value that kernel tap reads (0 in the padding).
void im2col(const double* x, double* col, const Geo2& g, int64_t ICg) {
  const int64_t KK = g.KH * g.KW, P = g.OH * g.OW;
  parallel_for(0, ICg * KK, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(P, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t ic = r / KK, kh = (r % KK) / g.KW, kw = r % g.KW;
      const double* xp = x + ic * g.H * g.W;
      double* cp = col + r * P;
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        int64_t ih = oh * g.sh - g.ph + kh * g.dh;
        double* row = cp + oh * g.OW;
        if (ih < 0 || ih >= g.H) {
          std::fill(row, row + g.OW, 0.0);
          continue;
        }
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          int64_t iw = ow * g.sw - g.pw + kw * g.dw;
          row[ow] = (iw >= 0 && iw < g.W) ? xp[ih * g.W + iw] : 0.0;
        }
      }
    }
  });
}

// x (one image, one group of channels, zeroed by the caller) += col2im(col); one channel per task.
void col2im(const double* col, double* x, const Geo2& g, int64_t ICg) {
  const int64_t KK = g.KH * g.KW, P = g.OH * g.OW;
  parallel_for(0, ICg, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(KK * P, 1)), [&](int64_t c0, int64_t c1) {
    for (int64_t ic = c0; ic < c1; ++ic) {
      double* xp = x + ic * g.H * g.W;
      for (int64_t k = 0; k < KK; ++k) {
        int64_t kh = k / g.KW, kw = k % g.KW;
        const double* cp = col + (ic * KK + k) * P;
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          int64_t ih = oh * g.sh - g.ph + kh * g.dh;
          if (ih < 0 || ih >= g.H) continue;
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            int64_t iw = ow * g.sw - g.pw + kw * g.dw;
            if (iw >= 0 && iw < g.W) xp[ih * g.W + iw] += cp[oh * g.OW + ow];
          }
        }
      }
    }
  });
}

Tensor block_view(const Tensor& t, int64_t rows, int64_t cols, int64_t elem_offset, bool transposed = false) {
  if (transposed) return Tensor::make_view(t, {cols, rows}, {1, cols}, t.offset() + elem_offset);
  return Tensor::make_view(t, {rows, cols}, {cols, 1}, t.offset() + elem_offset);
}

// float64 convolutions as im2col + GEMM (cpu::dnnl_matmul's blocked loops), per image and group.
// All tensors contiguous float64.
void gemm_conv_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const Geo2& g) {
  const int64_t ICg = g.C / g.G, OCg = g.OC / g.G, KK = g.KH * g.KW, P = g.OH * g.OW;
  Tensor col = Tensor::empty({ICg * KK, P}, DType::Float64);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.G; ++grp) {
      im2col(x.data<double>() + (n * g.C + grp * ICg) * g.H * g.W, col.data<double>(), g, ICg);
      dnnl_matmul(block_view(w, OCg, ICg * KK, grp * OCg * ICg * KK), col, Tensor(), {},
                  block_view(y, OCg, P, (n * g.OC + grp * OCg) * P));
    }
  if (b.defined()) {
    double* yp = y.data<double>();
    const double* bp = b.data<double>();
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t c = 0; c < g.OC; ++c)
        for (int64_t i = 0; i < P; ++i) yp[(n * g.OC + c) * P + i] += bp[c];
  }
}

void gemm_conv_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx, const Geo2& g) {
  const int64_t ICg = g.C / g.G, OCg = g.OC / g.G, KK = g.KH * g.KW, P = g.OH * g.OW;
  Tensor col = Tensor::empty({ICg * KK, P}, DType::Float64);
  std::memset(gx.data_ptr(), 0, gx.numel() * sizeof(double));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.G; ++grp) {
      dnnl_matmul(block_view(w, OCg, ICg * KK, grp * OCg * ICg * KK, true),
                  block_view(gy, OCg, P, (n * g.OC + grp * OCg) * P), Tensor(), {}, col);
      col2im(col.data<double>(), gx.data<double>() + (n * g.C + grp * ICg) * g.H * g.W, g, ICg);
    }
}

void gemm_conv_backward_weights(const Tensor& gy, const Tensor& x, const Tensor& gw, const Geo2& g) {
  const int64_t ICg = g.C / g.G, OCg = g.OC / g.G, KK = g.KH * g.KW, P = g.OH * g.OW;
  Tensor col = Tensor::empty({ICg * KK, P}, DType::Float64);
  std::memset(gw.data_ptr(), 0, gw.numel() * sizeof(double));
  MatmulEpilogue acc;
  acc.post_ops.push_back({MatmulPostOp::Sum, 1.0});  // accumulate over the batch
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.G; ++grp) {
      im2col(x.data<double>() + (n * g.C + grp * ICg) * g.H * g.W, col.data<double>(), g, ICg);
      dnnl_matmul(block_view(gy, OCg, P, (n * g.OC + grp * OCg) * P), block_view(col, ICg * KK, P, 0, true), Tensor(),
                  acc, block_view(gw, OCg, ICg * KK, grp * OCg * ICg * KK));
    }
}

Tensor contig(const Tensor& t) { return t.defined() ? t.contiguous_data() : t; }

Tensor to_f32(const Tensor& t) {
  if (!t.defined()) return t;
  Tensor r = Tensor::empty(t.shape(), DType::Float32);
  copy_into(r, t);
  return r;
}

bool use_dnnl(DType t) { return t == DType::Float32 || t == DType::BFloat16; }

// Runs f on float32 copies and writes the result back (float16, or a bfloat16 shape oneDNN lacks).
template <class F>
void via_f32(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out, F f) {
  Tensor o = Tensor::empty(out.shape(), DType::Float32);
  f(to_f32(a), to_f32(b), to_f32(bias), o);
  copy_into(out, o);
}

}  // namespace

void conv_forward(const Tensor& x0, const Tensor& w0, const Tensor& b0, const ConvParams& p, const Tensor& y,
                  const std::vector<MatmulPostOp>& post) {
  if (y.numel() == 0) return;
  Tensor x = contig(x0), w = contig(w0), b = contig(b0);
  DType t = y.dtype();
  // oneDNN's JIT convolutions take a Sum only as the first post-op (otherwise it falls back to its
  // slow reference kernel), so a trailing Sum (act(conv) + residual) runs as a separate add.
  if (post.size() >= 2 && post.back().kind == MatmulPostOp::Sum) {
    Tensor prev = Tensor::empty(y.shape(), t);
    copy_into(prev, y);
    std::vector<MatmulPostOp> head(post.begin(), post.end() - 1);
    conv_forward(x, w, b, p, y, head);
    add_scaled(y, prev, post.back().scale);
    return;
  }
  if (p.in_block || p.out_block) {  // the layout pass's blocked activations: the primitive reads and writes them as they are
    LUCID_CHECK(use_dnnl(t), Error, "conv: channel-blocked layouts need float32 or bfloat16, got ", dtype_name(t));
    const Shape xs = p.in_block ? unblocked_shape(x.shape()) : x.shape(), ys = p.out_block ? unblocked_shape(y.shape()) : y.shape();
    if (run_entry(get_entry(Kind::Fwd, xs, w.shape(), ys, b.defined(), p, t, post), x.data_ptr(), w.data_ptr(),
                  y.data_ptr(), b.defined() ? b.data_ptr() : nullptr, w))
      return;
    // No blocked primitive (a bfloat16 conv on a CPU without AVX-512): the NCHW path between
    // reorders, with y's residual (a Sum post-op reads it) carried over.
    ConvParams plain = p;
    plain.in_block = plain.out_block = 0;
    Tensor xp = x, yp = y;
    if (p.in_block) {
      xp = Tensor::empty(xs, t);
      copy_into(blocked_view_of_nchw(xp, p.in_block), x);
    }
    if (p.out_block) {
      yp = Tensor::empty(ys, t);
      bool sum = false;
      for (auto& op : post) sum = sum || op.kind == MatmulPostOp::Sum;
      if (sum) copy_into(blocked_view_of_nchw(yp, p.out_block), y);
    }
    conv_forward(xp, w, b, plain, yp, post);
    if (p.out_block) copy_into(y, blocked_view_of_nchw(yp, p.out_block));
    return;
  }
  if (use_dnnl(t) && x.numel() > 0 && is_pointwise(w.shape(), p) && pointwise_forward(x, w, b, y, post)) return;
  if (use_dnnl(t) && x.numel() > 0 &&
      run_entry(get_entry(Kind::Fwd, x.shape(), w.shape(), y.shape(), b.defined(), p, t, post), x.data_ptr(),
                w.data_ptr(), y.data_ptr(), b.defined() ? b.data_ptr() : nullptr, w))
    return;
  if (t == DType::Float64) {
    Tensor prev;
    if (!post.empty()) {  // keep the residual a Sum post-op reads
      prev = Tensor::empty(y.shape(), t);
      copy_into(prev, y);
    }
    gemm_conv_forward(x, w, b, y, geo2(x.shape(), w.shape(), y.shape(), p, false));
    if (!post.empty()) {
      double* yp = y.data<double>();
      const double* pp = prev.data<double>();
      for (int64_t i = 0; i < y.numel(); ++i) yp[i] = apply_post_ops<double>(yp[i], post, pp[i]);
    }
    return;
  }
  LUCID_CHECK(t != DType::Float32, Error, "conv: no oneDNN implementation for this configuration");
  Tensor o = Tensor::empty(y.shape(), DType::Float32);
  if (!post.empty()) copy_into(o, y);
  conv_forward(to_f32(x), to_f32(w), to_f32(b), p, o, post);
  copy_into(y, o);
}

void conv_backward_data(const Tensor& gy0, const Tensor& w0, const ConvParams& p, const Tensor& gx) {
  if (gx.numel() == 0) return;
  Tensor gy = contig(gy0), w = contig(w0);
  DType t = gx.dtype();
  if (gy.numel() == 0 || w.numel() == 0) {
    std::memset(gx.data_ptr(), 0, gx.numel() * itemsize(t));
    return;
  }
  if (use_dnnl(t) &&
      run_entry(get_entry(Kind::BwdData, gx.shape(), w.shape(), gy.shape(), false, p, t), gy.data_ptr(), w.data_ptr(),
                gx.data_ptr(), nullptr, w))
    return;
  if (t == DType::Float64) {
    gemm_conv_backward_data(gy, w, gx, geo2(gx.shape(), w.shape(), gy.shape(), p, false));
    return;
  }
  LUCID_CHECK(t != DType::Float32, Error, "conv_backward_input: no oneDNN implementation for this configuration");
  via_f32(gy, w, Tensor(), gx, [&](const Tensor& a, const Tensor& bb, const Tensor&, const Tensor& o) { conv_backward_data(a, bb, p, o); });
}

void conv_backward_weights(const Tensor& gy0, const Tensor& x0, const ConvParams& p, const Tensor& gw) {
  if (gw.numel() == 0) return;
  Tensor gy = contig(gy0), x = contig(x0);
  DType t = gw.dtype();
  if (gy.numel() == 0 || x.numel() == 0) {
    std::memset(gw.data_ptr(), 0, gw.numel() * itemsize(t));
    return;
  }
  if (use_dnnl(t) &&
      run_entry(get_entry(Kind::BwdWeights, x.shape(), gw.shape(), gy.shape(), false, p, t), gy.data_ptr(), x.data_ptr(),
                gw.data_ptr(), nullptr))
    return;
  if (t == DType::Float64) {
    gemm_conv_backward_weights(gy, x, gw, geo2(x.shape(), gw.shape(), gy.shape(), p, false));
    return;
  }
  LUCID_CHECK(t != DType::Float32, Error, "conv_backward_weight: no oneDNN implementation for this configuration");
  via_f32(gy, x, Tensor(), gw, [&](const Tensor& a, const Tensor& bb, const Tensor&, const Tensor& o) { conv_backward_weights(a, bb, p, o); });
}

void deconv_forward(const Tensor& x0, const Tensor& w0, const Tensor& b0, const ConvParams& p, const Tensor& y) {
  if (y.numel() == 0) return;
  Tensor x = contig(x0), w = contig(w0), b = contig(b0);
  DType t = y.dtype();
  if (use_dnnl(t) && x.numel() > 0 &&
      run_entry(get_entry(Kind::Deconv, x.shape(), w.shape(), y.shape(), b.defined(), p, t), x.data_ptr(), w.data_ptr(),
                y.data_ptr(), b.defined() ? b.data_ptr() : nullptr, w))
    return;
  if (t == DType::Float64) {
    // The adjoint of conv: backward data of a conv whose output is x and whose input is y.
    gemm_conv_backward_data(x, w, y, geo2(y.shape(), w.shape(), x.shape(), p, true));
    if (b.defined()) {
      int64_t N = y.shape()[0], C = y.shape()[1], S = y.numel() / std::max<int64_t>(1, N * C);
      double* yp = y.data<double>();
      const double* bp = b.data<double>();
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t s = 0; s < S; ++s) yp[(n * C + c) * S + s] += bp[c];
    }
    return;
  }
  LUCID_CHECK(t != DType::Float32, Error, "conv_transpose: no oneDNN implementation for this configuration");
  via_f32(x, w, b, y, [&](const Tensor& a, const Tensor& bb, const Tensor& c, const Tensor& o) { deconv_forward(a, bb, c, p, o); });
}

size_t conv_cache_size() { return conv_cache().size(); }

bool conv_residual_exact(DType t) {
  static const bool avx512 = has_isa(dnnl::cpu_isa::avx512_core);
  return t == DType::Float64 || avx512;
}

ConvLayout conv_activation_layout(DType t) {
  static const bool blocked = conv_layout() == "blocked", avx512 = has_isa(dnnl::cpu_isa::avx512_core), amx = has_amx(),
                    avx2 = has_isa(dnnl::cpu_isa::avx2);
  if (!blocked || (t != DType::Float32 && t != DType::BFloat16)) return ConvLayout::Plain;
  if (!avx512) return avx2 && t == DType::Float32 ? ConvLayout::Blocked8 : ConvLayout::Plain;
  return t == DType::BFloat16 && amx ? ConvLayout::ChannelsLast : ConvLayout::Blocked16;
}

}  // namespace lucid::cpu
