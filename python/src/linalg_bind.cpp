// Bindings of the linalg family: matrix products (lucid.matmul/mm/bmm/mv/dot/addmm, Tensor
// @ and .matmul), and the functional conv/pool/linear entry points that
// python/lucid/_ops_linalg.py wraps with torch.nn.functional signatures.
#include "bind.h"
#include "lucid/backends/cpu/dnnl_conv.h"
#include "lucid/backends/cpu/dnnl_matmul.h"
#include "lucid/backends/cpu/packed_weights.h"
#include "lucid/ops/linalg.h"
#include "lucid/ops/matmul_precision.h"

namespace lucid::py {

namespace {

Tensor opt_tensor(nb::handle h, const char* op, const char* arg) {
  if (h.is_none()) return Tensor();
  if (!is_tensor(h))
    throw TypeError(str(op, ": argument '", arg, "' expected a Tensor or None, got ",
                        nb::cast<std::string>(nb::str(h.type().attr("__name__")))));
  return nb::cast<Tensor>(h);
}

Tensor as_tensor_arg(nb::handle h, const char* op, const char* arg) {
  if (!is_tensor(h))
    throw TypeError(str(op, ": argument '", arg, "' expected a Tensor, got ",
                        nb::cast<std::string>(nb::str(h.type().attr("__name__")))));
  return nb::cast<Tensor>(h);
}

// An int or a sequence of `n` ints (torch's _pair/_single).
IntList int_tuple(nb::handle h, int n, const char* op, const char* arg) {
  if (PyLong_Check(h.ptr()) || (nb::hasattr(h, "__index__") && !nb::isinstance<nb::str>(h) && !nb::hasattr(h, "__len__")))
    return IntList(n, to_int64(h, op, arg));
  IntList v = to_shape(h, op, arg);
  if (static_cast<int>(v.size()) == 1 && n > 1) return IntList(n, v[0]);
  LUCID_CHECK(static_cast<int>(v.size()) == n, ValueError, op, ": argument '", arg, "' expected an int or ", n,
              " ints, got ", v.size());
  return v;
}

// Adaptive pooling output_size: an int or 2 entries, None keeping that input size (-> 0).
IntList adaptive_size(nb::handle output_size, const char* op) {
  IntList o(2, 0);
  if (PyLong_Check(output_size.ptr())) {
    o = IntList(2, to_int64(output_size, op, "output_size"));
    LUCID_CHECK(o[0] > 0, ValueError, op, ": argument 'output_size' expected positive sizes, got ", o[0]);
    return o;
  }
  size_t n = nb::len(output_size);
  LUCID_CHECK(n == 2, ValueError, op, ": argument 'output_size' expected an int or 2 values, got ", n);
  for (size_t i = 0; i < 2; ++i) {
    nb::handle e = output_size[i];
    o[i] = e.is_none() ? 0 : to_int64(e, op, "output_size");
    LUCID_CHECK(e.is_none() || o[i] > 0, ValueError, op, ": argument 'output_size' expected positive sizes or None, got ",
                o[i]);
  }
  return o;
}

}  // namespace

LUCID_BINDER(linalg) {
  m.def("matmul", [](nb::handle a, nb::handle b) {
    return matmul(as_tensor_arg(a, "matmul", "input"), as_tensor_arg(b, "matmul", "other"));
  }, nb::arg("input"), nb::arg("other"));
  m.def("mm", [](const Tensor& a, const Tensor& b) { return mm(a, b); }, nb::arg("input"), nb::arg("mat2"));
  m.def("bmm", [](const Tensor& a, const Tensor& b) { return bmm(a, b); }, nb::arg("input"), nb::arg("mat2"));
  m.def("mv", [](const Tensor& a, const Tensor& v) { return mv(a, v); }, nb::arg("input"), nb::arg("vec"));
  m.def("dot", [](const Tensor& a, const Tensor& b) { return dot(a, b); }, nb::arg("input"), nb::arg("tensor"));
  m.def("addmm", [](const Tensor& bias, const Tensor& a, const Tensor& b, double beta, double alpha) {
    return addmm(bias, a, b, beta, alpha);
  }, nb::arg("input"), nb::arg("mat1"), nb::arg("mat2"), nb::kw_only(), nb::arg("beta") = 1.0, nb::arg("alpha") = 1.0);
  m.def("_linear", [](const Tensor& x, const Tensor& w, nb::handle b) {
    return linear(x, w, opt_tensor(b, "linear", "bias"));
  }, nb::arg("input"), nb::arg("weight"), nb::arg("bias").none() = nb::none());
  m.def("_linear_fused", [](const Tensor& x, const Tensor& w, nb::handle b, nb::handle residual,
                            const std::string& act, bool residual_first) {
    return linear_fused(x, w, opt_tensor(b, "linear_fused", "bias"), opt_tensor(residual, "linear_fused", "residual"),
                        act, residual_first);
  }, nb::arg("input"), nb::arg("weight"), nb::arg("bias").none() = nb::none(), nb::arg("residual").none() = nb::none(),
     nb::arg("activation") = "none", nb::arg("residual_first") = false);
  m.def("_matmul_cache_size", &cpu::matmul_cache_size);
  // lucid.set_float32_matmul_precision / backends.cuda.matmul.allow_tf32 (validated in Python).
  m.def("_set_float32_matmul_precision", [](const std::string& p) {
    set_float32_matmul_precision(p == "high" ? MatmulPrecision::High : p == "medium" ? MatmulPrecision::Medium
                                                                                      : MatmulPrecision::Highest);
  });
  m.def("_get_float32_matmul_precision", [] {
    MatmulPrecision p = float32_matmul_precision();
    return std::string(p == MatmulPrecision::High ? "high" : p == MatmulPrecision::Medium ? "medium" : "highest");
  });
  m.def("_weight_pack_stats", [] {
    cpu::WeightPackStats st = cpu::weight_pack_stats();
    nb::dict d;
    d["entries"] = st.entries;
    d["packed"] = st.packed;
    d["bytes"] = st.bytes;
    d["limit"] = st.limit;
    d["hits"] = st.hits;
    d["packs"] = st.packs;
    return d;
  });
  m.def("_weight_pack_set_limit", &cpu::weight_pack_set_limit, nb::arg("bytes"));
  m.def("_weight_pack_clear", &cpu::weight_pack_clear);

  def_method(m, "matmul", [](const Tensor& a, nb::handle b) { return matmul(a, as_tensor_arg(b, "matmul", "other")); },
             nb::arg("other"));
  def_method(m, "__matmul__", [](const Tensor& a, nb::handle b) -> nb::object {
    if (!is_tensor(b)) return nb::borrow(Py_NotImplemented);
    return nb::cast(matmul(a, nb::cast<Tensor>(b)));
  }, nb::arg("other"));
  def_method(m, "__rmatmul__", [](const Tensor& a, nb::handle b) -> nb::object {
    if (!is_tensor(b)) return nb::borrow(Py_NotImplemented);
    return nb::cast(matmul(nb::cast<Tensor>(b), a));
  }, nb::arg("other"));
  def_method(m, "mm", [](const Tensor& a, const Tensor& b) { return mm(a, b); }, nb::arg("mat2"));
  def_method(m, "bmm", [](const Tensor& a, const Tensor& b) { return bmm(a, b); }, nb::arg("mat2"));
  def_method(m, "mv", [](const Tensor& a, const Tensor& b) { return mv(a, b); }, nb::arg("vec"));
  def_method(m, "dot", [](const Tensor& a, const Tensor& b) { return dot(a, b); }, nb::arg("tensor"));
  def_method(m, "addmm", [](const Tensor& bias, const Tensor& a, const Tensor& b, double beta, double alpha) {
    return addmm(bias, a, b, beta, alpha);
  }, nb::arg("mat1"), nb::arg("mat2"), nb::kw_only(), nb::arg("beta") = 1.0, nb::arg("alpha") = 1.0);

  // ---- convolutions ----
  m.def("_conv", [](int nsp, const Tensor& x, const Tensor& w, nb::handle b, nb::handle stride, nb::handle padding,
                    nb::handle dilation, int64_t groups) {
    const char* op = nsp == 1 ? "conv1d" : "conv2d";
    std::string mode;
    IntList pad(nsp, 0);
    if (nb::isinstance<nb::str>(padding)) {
      mode = nb::cast<std::string>(padding);
      LUCID_CHECK(mode == "same" || mode == "valid", ValueError, op,
                  ": argument 'padding' expected 'same', 'valid' or ints, got '", mode, "'");
    } else {
      pad = int_tuple(padding, nsp, op, "padding");
    }
    return conv_nd(nsp, x, w, opt_tensor(b, op, "bias"), int_tuple(stride, nsp, op, "stride"), pad, mode,
                   int_tuple(dilation, nsp, op, "dilation"), groups);
  }, nb::arg("nsp"), nb::arg("input"), nb::arg("weight"), nb::arg("bias").none(), nb::arg("stride"), nb::arg("padding"),
     nb::arg("dilation"), nb::arg("groups"));
  m.def("_conv_fused", [](const Tensor& x, const Tensor& w, nb::handle b, nb::handle residual, nb::handle stride,
                          nb::handle padding, nb::handle dilation, int64_t groups, const std::string& act,
                          bool residual_first) {
    int nsp = static_cast<int>(w.ndim()) - 2;
    LUCID_CHECK(nsp == 1 || nsp == 2, ValueError, "conv_fused: argument 'weight' expected 3 or 4 dims, got ", w.ndim());
    const char* op = "conv_fused";
    ConvOptions o;
    o.stride = int_tuple(stride, nsp, op, "stride");
    o.padding_l = o.padding_r = int_tuple(padding, nsp, op, "padding");
    o.dilation = int_tuple(dilation, nsp, op, "dilation");
    o.groups = groups;
    return conv_fused(x, w, opt_tensor(b, op, "bias"), opt_tensor(residual, op, "residual"), o, act, residual_first);
  }, nb::arg("input"), nb::arg("weight"), nb::arg("bias").none() = nb::none(), nb::arg("residual").none() = nb::none(),
     nb::arg("stride") = 1, nb::arg("padding") = 0, nb::arg("dilation") = 1, nb::arg("groups") = 1,
     nb::arg("activation") = "none", nb::arg("residual_first") = false);
  m.def("_conv_cache_size", &cpu::conv_cache_size);
  m.def("_conv_transpose", [](int nsp, const Tensor& x, const Tensor& w, nb::handle b, nb::handle stride,
                              nb::handle padding, nb::handle output_padding, int64_t groups, nb::handle dilation) {
    const char* op = nsp == 1 ? "conv_transpose1d" : "conv_transpose2d";
    return conv_transpose_nd(nsp, x, w, opt_tensor(b, op, "bias"), int_tuple(stride, nsp, op, "stride"),
                             int_tuple(padding, nsp, op, "padding"), int_tuple(output_padding, nsp, op, "output_padding"),
                             groups, int_tuple(dilation, nsp, op, "dilation"));
  }, nb::arg("nsp"), nb::arg("input"), nb::arg("weight"), nb::arg("bias").none(), nb::arg("stride"), nb::arg("padding"),
     nb::arg("output_padding"), nb::arg("groups"), nb::arg("dilation"));

  // ---- pooling ----
  m.def("_max_pool2d", [](const Tensor& x, nb::handle kernel, nb::handle stride, nb::handle padding,
                          nb::handle dilation, bool ceil_mode) {
    const char* op = "max_pool2d";
    IntList k = int_tuple(kernel, 2, op, "kernel_size");
    IntList s = stride.is_none() || (nb::hasattr(stride, "__len__") && nb::len(stride) == 0) ? k : int_tuple(stride, 2, op, "stride");
    auto r = max_pool2d_with_indices(x, k, s, int_tuple(padding, 2, op, "padding"), int_tuple(dilation, 2, op, "dilation"),
                                     ceil_mode);
    return nb::make_tuple(r.first, r.second);
  }, nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride").none(), nb::arg("padding"), nb::arg("dilation"),
     nb::arg("ceil_mode"));
  m.def("_avg_pool2d", [](const Tensor& x, nb::handle kernel, nb::handle stride, nb::handle padding, bool ceil_mode,
                          bool count_include_pad, nb::handle divisor_override) {
    const char* op = "avg_pool2d";
    IntList k = int_tuple(kernel, 2, op, "kernel_size");
    IntList s = stride.is_none() || (nb::hasattr(stride, "__len__") && nb::len(stride) == 0) ? k : int_tuple(stride, 2, op, "stride");
    int64_t div = divisor_override.is_none() ? 0 : to_int64(divisor_override, op, "divisor_override");
    LUCID_CHECK(divisor_override.is_none() || div != 0, ValueError, op, ": argument 'divisor_override' must be non-zero");
    return avg_pool2d(x, k, s, int_tuple(padding, 2, op, "padding"), ceil_mode, count_include_pad, div);
  }, nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride").none(), nb::arg("padding"), nb::arg("ceil_mode"),
     nb::arg("count_include_pad"), nb::arg("divisor_override").none());
  m.def("_adaptive_avg_pool2d", [](const Tensor& x, nb::handle output_size) {
    return adaptive_avg_pool2d(x, adaptive_size(output_size, "adaptive_avg_pool2d"));
  });
  m.def("_unfold", [](const Tensor& x, nb::handle k, nb::handle d, nb::handle p, nb::handle s) {
    const char* op = "unfold";
    return unfold(x, int_tuple(k, 2, op, "kernel_size"), int_tuple(d, 2, op, "dilation"), int_tuple(p, 2, op, "padding"),
                  int_tuple(s, 2, op, "stride"));
  });
  m.def("_fold", [](const Tensor& x, nb::handle os, nb::handle k, nb::handle d, nb::handle p, nb::handle s) {
    const char* op = "fold";
    return fold(x, int_tuple(os, 2, op, "output_size"), int_tuple(k, 2, op, "kernel_size"), int_tuple(d, 2, op, "dilation"),
                int_tuple(p, 2, op, "padding"), int_tuple(s, 2, op, "stride"));
  });
  m.def("_adaptive_max_pool2d", [](const Tensor& x, nb::handle output_size) {
    auto r = adaptive_max_pool2d(x, adaptive_size(output_size, "adaptive_max_pool2d"));
    return nb::make_tuple(r.first, r.second);
  });
}

}  // namespace lucid::py
