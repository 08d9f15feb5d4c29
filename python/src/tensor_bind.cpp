// lucid.Tensor: the nanobind class over lucid::Tensor, its properties, autograd entry points,
// NumPy interop, and the operators of the core ops. Other families attach their methods with
// def_method from their own binder files.
#include <nanobind/ndarray.h>
#include <omp.h>

#include "bind.h"
#include "dlpack.h"
#include "lucid/autograd/engine.h"
#include "lucid/core/external_views.h"
#include "lucid/autograd/grad_mode.h"
#include "lucid/autograd/node.h"
#include "lucid/compile/trace/trace_hook.h"
#include "lucid/dispatch/autocast.h"
#include "lucid/ops/core.h"

namespace lucid::py {

int64_t to_int64(nb::handle h, const char* op, const char* arg) {
  nb::object v;
  if (PyLong_Check(h.ptr())) v = nb::borrow(h);
  else if (nb::hasattr(h, "__index__")) v = h.attr("__index__")();
  else
    throw TypeError(str(op, ": argument '", arg, "' expected an int, got ",
                        nb::cast<std::string>(nb::str(h.type().attr("__name__")))));
  int overflow = 0;
  long long r = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow)
    throw TypeError(str(op, ": argument '", arg, "' got ", nb::cast<std::string>(nb::str(v)),
                        ", which does not fit int64 (overflow when unpacking long long)"));
  return r;
}

Tensor to_tensor(nb::handle h, const char* op, const char* arg) {
  if (nb::isinstance<Tensor>(h)) return nb::cast<Tensor>(h);
  if (PyBool_Check(h.ptr())) return scalar_tensor_bool(h.ptr() == Py_True);
  if (PyLong_Check(h.ptr())) return scalar_tensor(to_int64(h, op, arg));
  if (PyFloat_Check(h.ptr())) return scalar_tensor(PyFloat_AsDouble(h.ptr()));
  // NumPy scalars and anything with __float__/__index__.
  if (nb::hasattr(h, "__index__")) return scalar_tensor(to_int64(h, op, arg));
  if (nb::hasattr(h, "__float__")) return scalar_tensor(nb::cast<double>(h.attr("__float__")()));
  throw TypeError(str(op, ": argument '", arg, "' expected a Tensor or a number, got ",
                      nb::cast<std::string>(nb::str(h.type().attr("__name__")))));
}

bool is_tensor(nb::handle h) { return nb::isinstance<Tensor>(h); }

Shape to_shape(nb::handle h, const char* op, const char* arg) {
  Shape s;
  if (PyLong_Check(h.ptr())) return {to_int64(h, op, arg)};
  if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h) || nb::hasattr(h, "__iter__")) {
    for (nb::handle e : h) {
      if (!PyLong_Check(e.ptr()) && !nb::hasattr(e, "__index__"))
        throw TypeError(str(op, ": argument '", arg, "' expected a sequence of ints, got an element of type ",
                            nb::cast<std::string>(nb::str(e.type().attr("__name__")))));
      s.push_back(to_int64(e, op, arg));
    }
    return s;
  }
  throw TypeError(str(op, ": argument '", arg, "' expected an int or a sequence of ints, got ",
                      nb::cast<std::string>(nb::str(h.type().attr("__name__")))));
}

DType to_dtype(nb::handle h, const char* op) {
  if (nb::isinstance<DType>(h)) return nb::cast<DType>(h);
  if (nb::isinstance<nb::str>(h)) return dtype_from_name(nb::cast<std::string>(h));
  // Python types: float -> default float, int -> int64, bool -> bool.
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return default_float_dtype();
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) return DType::Int64;
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) return DType::Bool;
  throw TypeError(str(op, ": argument 'dtype' expected a lucid dtype, got ",
                      nb::cast<std::string>(nb::str(h.type().attr("__name__")))));
}

nb::dlpack::dtype dl_dtype(DType t) {
  switch (t) {
    case DType::Bool: return nb::dtype<bool>();
    case DType::UInt8: return nb::dtype<uint8_t>();
    case DType::Int8: return nb::dtype<int8_t>();
    case DType::Int32: return nb::dtype<int32_t>();
    case DType::Int64: return nb::dtype<int64_t>();
    case DType::Float16: return {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case DType::Float32: return nb::dtype<float>();
    case DType::Float64: return nb::dtype<double>();
    case DType::BFloat16: return {static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
  }
  return nb::dtype<float>();
}

DType from_dl_dtype(nb::dlpack::dtype d, const char* op) {
  using C = nb::dlpack::dtype_code;
  auto code = static_cast<C>(d.code);
  if (d.lanes == 1) {
    if (code == C::Bool) return DType::Bool;
    if (code == C::Float && d.bits == 16) return DType::Float16;
    if (code == C::Float && d.bits == 32) return DType::Float32;
    if (code == C::Float && d.bits == 64) return DType::Float64;
    if (code == C::Bfloat && d.bits == 16) return DType::BFloat16;
    if (code == C::Int && d.bits == 8) return DType::Int8;
    if (code == C::Int && d.bits == 32) return DType::Int32;
    if (code == C::Int && d.bits == 64) return DType::Int64;
    if (code == C::UInt && d.bits == 8) return DType::UInt8;
  }
  throw TypeError(str(op, ": unsupported array dtype (code ", int(d.code), ", bits ", int(d.bits),
                      "); supported: bool, uint8, int8, int32, int64, float16, bfloat16, float32, float64"));
}

static void note_host_read(const Tensor& t, const char* what) {
  if (TraceHook* h = current_trace_hook()) h->on_host_read(t, what);
}

using NpArray = nb::ndarray<nb::numpy>;

static NpArray to_numpy(const Tensor& t) {
  note_host_read(t, "numpy");
  LUCID_CHECK(t.device().is_cpu(), TypeError, "numpy: can't convert ", t.device().str(),
              " device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.");
  LUCID_CHECK(t.dtype() != DType::BFloat16, TypeError, "numpy: NumPy has no bfloat16; call .float() first");
  LUCID_CHECK(!t.requires_grad(), Error, "numpy: can't call numpy() on a Tensor that requires grad; use tensor.detach().numpy()");
  // The array can write the storage behind lucid's back (no version bump): caches derived from
  // its contents must not trust its version while the array lives (core/external_views.h).
  struct Export {
    Tensor t;
    explicit Export(const Tensor& x) : t(x) { external_view_begin(t.impl()->storage.get()); }
    ~Export() { external_view_end(t.impl()->storage.get()); }
  };
  auto* keep = new Export(t);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Export*>(p); });
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  for (size_t d = 0; d < strides.size(); ++d)  // never stepped over, and stride * itemsize may not fit
    if (t.shape()[d] <= 1) strides[d] = 0;
  return NpArray(t.data_ptr(), t.ndim(), shape.data(), owner, strides.data(), dl_dtype(t.dtype()));
}

static Tensor from_numpy(nb::ndarray<nb::device::cpu> a) {
  DType dt = from_dl_dtype(a.dtype(), "from_numpy");
  Shape shape(a.ndim());
  Strides strides(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) {
    shape[i] = static_cast<int64_t>(a.shape(i));
    strides[i] = a.stride(i);
  }
  int64_t lo = 0, hi = 0;
  for (size_t i = 0; i < a.ndim(); ++i) {
    if (shape[i] == 0) { lo = hi = 0; break; }
    LUCID_CHECK(strides[i] >= 0, ValueError, "from_numpy: arrays with negative strides are not supported; use np.ascontiguousarray");
    hi += (shape[i] - 1) * strides[i];
  }
  (void)lo;
  nb::object holder = nb::find(a);  // keeps the producer alive
  auto* h = new nb::object(holder);
  std::shared_ptr<void> owner(h, [](void* p) {
    nb::gil_scoped_acquire g;
    delete static_cast<nb::object*>(p);
  });
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::wrap(a.data(), static_cast<size_t>(hi + 1) * itemsize(dt), std::move(owner));
  impl->shape = shape;
  impl->strides = strides;
  impl->dtype = dt;
  return Tensor(std::move(impl));
}

static nb::object node_or_none(const std::shared_ptr<Node>& n) {
  if (!n) return nb::none();
  return nb::cast(n);
}

static double item(const Tensor& x) {
  note_host_read(x, "item");
  LUCID_CHECK(x.numel() == 1, ValueError, "item: a Tensor with ", x.numel(), " elements cannot be converted to a scalar");
  const Tensor t = host_copy(x);  // from a GPU: one device-to-host copy (waits for the device)
  double v = 0;
  LUCID_DISPATCH_ALL(t.dtype(), "item", [&] { v = static_cast<double>(static_cast<compute_t<scalar_t>>(*t.data<scalar_t>())); });
  return v;
}

static void bind_tensor(nb::module_& m) {
  nb::enum_<DType>(m, "dtype")
      .value("bool", DType::Bool)
      .value("uint8", DType::UInt8)
      .value("int8", DType::Int8)
      .value("int32", DType::Int32)
      .value("int64", DType::Int64)
      .value("float16", DType::Float16)
      .value("bfloat16", DType::BFloat16)
      .value("float32", DType::Float32)
      .value("float64", DType::Float64);
  m.def("_itemsize", [](DType t) { return itemsize(t); });
  m.def("promote_types", [](nb::handle a, nb::handle b) { return promote_types(to_dtype(a, "promote_types"), to_dtype(b, "promote_types")); });
  m.def("result_type", [](nb::handle a, nb::handle b) {
    return result_type({to_tensor(a, "result_type", "tensor1"), to_tensor(b, "result_type", "tensor2")});
  });
  m.def("get_default_dtype", &default_float_dtype);
  m.def("set_default_dtype", [](nb::handle d) { set_default_float_dtype(to_dtype(d, "set_default_dtype")); });
  m.def("set_num_threads", [](int n) {
    LUCID_CHECK(n >= 1, ValueError, "set_num_threads: expected a positive number of threads, got ", n);
    omp_set_num_threads(n);
  }, nb::arg("num_threads"));
  m.def("get_num_threads", [] { return omp_get_max_threads(); });
  m.def("_parse_device", [](const std::string& s) {  // validates a device this build can run on
    Device d = parse_device(s);
    check_available(d, s);
    return d.str();
  });
  // `with lucid.device(...)`: the thread's factory device (core/device.h), as a string.
  m.def("_factory_device", [] { return factory_device().str(); });
  m.def("_set_factory_device", [](const std::string& s) {
    Device d = parse_device(s);
    check_available(d, s);
    set_factory_device(d);
  });

  nb::class_<Node>(m, "Node")
      .def("name", &Node::name)
      .def_prop_ro("next_functions", [](const Node& n) {
        nb::list out;
        for (const Edge& e : n.next_edges) {
          if (e.fn) out.append(nb::make_tuple(nb::cast(e.fn), e.input_nr));
          else out.append(nb::make_tuple(nb::none(), 0));
        }
        return nb::tuple(out);
      })
      .def("__repr__", [](const Node& n) { return str("<", n.name(), "Backward>"); });

  nb::class_<Tensor>(m, "Tensor", nb::dynamic_attr())
      .def(nb::init<const Tensor&>())  // alias (Parameter subclasses use this)
      .def_prop_ro("shape", [](const Tensor& t) {
        nb::list l;
        for (int64_t d : t.shape()) l.append(d);
        return nb::tuple(l);
      })
      .def_prop_ro("dtype", &Tensor::dtype)
      .def_prop_ro("_device", [](const Tensor& t) { return t.device().str(); })  // "cpu", "cuda:0"
      .def("_to_device", [](const Tensor& t, const std::string& device, DType dtype, bool non_blocking) {
        return to_device(t, parse_device(device), dtype, non_blocking);
      }, nb::arg("device"), nb::arg("dtype"), nb::arg("non_blocking") = false)
      .def_prop_ro("ndim", &Tensor::ndim)
      .def_prop_ro("_version", &Tensor::version)
      .def_prop_ro("is_leaf", &Tensor::is_leaf)
      .def_prop_ro("grad_fn", [](const Tensor& t) { return node_or_none(t.grad_fn()); })
      .def_prop_ro("_is_view", [](const Tensor& t) { return t.impl()->is_view; })
      .def_prop_rw("requires_grad", &Tensor::requires_grad, [](Tensor& t, bool r) { t.set_requires_grad(r); })
      .def_prop_rw("grad", [](const Tensor& t) -> nb::object {
            Tensor g = t.grad();
            if (!g.defined()) return nb::none();
            return nb::cast(g);
          },
          [](Tensor& t, nb::handle g) {
            if (g.is_none()) t.set_grad(Tensor());
            else t.set_grad(nb::cast<Tensor>(g));
          }, nb::for_setter(nb::arg("value").none()))
      .def("numel", &Tensor::numel)
      .def("dim", &Tensor::ndim)
      .def("stride", [](const Tensor& t) {
        nb::list l;
        for (int64_t d : t.strides()) l.append(d);
        return nb::tuple(l);
      })
      .def("storage_offset", &Tensor::offset)
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); })
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("_same_storage", &Tensor::same_storage)
      .def("_is_same", [](const Tensor& a, const Tensor& b) { return a == b; })
      .def("item", [](const Tensor& x) -> nb::object {
        double v = item(x);
        if (x.dtype() == DType::Bool) return nb::bool_(v != 0);
        if (is_integral(x.dtype())) {
          const Tensor t = host_copy(x);
          int64_t iv = 0;
          LUCID_DISPATCH_ALL(t.dtype(), "item", [&] { iv = static_cast<int64_t>(static_cast<compute_t<scalar_t>>(*t.data<scalar_t>())); });
          return nb::int_(iv);
        }
        return nb::float_(v);
      })
      .def("numpy", &to_numpy)
      .def("detach", &Tensor::detach)
      .def("_set_data", &Tensor::set_data, nb::arg("src"))
      .def("detach_", [](Tensor& t) {
        if (t.impl()->autograd) { t.impl()->autograd->grad_fn.reset(); t.impl()->autograd->requires_grad = false; }
        return t;
      })
      .def("requires_grad_", [](Tensor& t, bool r) { t.set_requires_grad(r); return t; }, nb::arg("requires_grad") = true)
      .def("retain_grad", [](const Tensor& t) { autograd::retain_grad(t); })
      .def_prop_ro("retains_grad", [](const Tensor& t) { return t.impl()->autograd && t.impl()->autograd->retains_grad; })
      .def("register_hook", [](const Tensor& t, nb::callable fn) {
        auto* holder = new nb::object(fn);
        std::shared_ptr<nb::object> keep(holder, [](nb::object* p) { nb::gil_scoped_acquire g; delete p; });
        autograd::register_hook(t, [keep](const Tensor& g) {
          nb::gil_scoped_acquire gil;
          nb::object r = (*keep)(g);
          return r.is_none() ? Tensor() : nb::cast<Tensor>(r);
        });
      })
      .def("_backward", [](const Tensor& t, nb::handle gradient, bool retain_graph, bool create_graph) {
        TensorList g{gradient.is_none() ? Tensor() : nb::cast<Tensor>(gradient)};
        autograd::backward({t}, g, retain_graph, create_graph);
      }, nb::arg("gradient").none(), nb::arg("retain_graph"), nb::arg("create_graph"))
      .def("__add__", [](const Tensor& a, nb::handle b) { return add(a, to_tensor(b, "add", "other")); })
      .def("__radd__", [](const Tensor& a, nb::handle b) { return add(to_tensor(b, "add", "other"), a); })
      .def("__mul__", [](const Tensor& a, nb::handle b) { return mul(a, to_tensor(b, "mul", "other")); })
      // torch's __rmul__ is mul(self, other): the number second, where mul reads it at float
      // precision for a 16-bit self (OpDef::float_scalar_input)
      .def("__rmul__", [](const Tensor& a, nb::handle b) { return mul(a, to_tensor(b, "mul", "other")); })
      .def("__sub__", [](const Tensor& a, nb::handle b) { return sub(a, to_tensor(b, "sub", "other")); })
      .def("__rsub__", [](const Tensor& a, nb::handle b) { return sub(to_tensor(b, "sub", "other"), a); })
      .def("__truediv__", [](const Tensor& a, nb::handle b) { return div(a, to_tensor(b, "div", "other")); })
      .def("__rtruediv__", [](const Tensor& a, nb::handle b) { return div(to_tensor(b, "div", "other"), a); })
      .def("permute", [](const Tensor& t, nb::args dims) {
        IntList d = dims.size() == 1 && !PyLong_Check(dims[0].ptr()) ? to_shape(dims[0], "permute", "dims") : to_shape(dims, "permute", "dims");
        return permute(t, d);
      })
      .def("transpose", [](const Tensor& t, int64_t a, int64_t b) { return transpose(t, a, b); })
      .def("sum", [](const Tensor& t, nb::handle dim, bool keepdim, nb::handle dtype) {
        IntList dims = dim.is_none() ? IntList{} : to_shape(dim, "sum", "dim");
        if (dtype.is_none()) return sum(t, dims, keepdim);
        return dispatch1(OpId::Sum, {t}, {{"dims", dims}, {"keepdim", keepdim}, {"dtype", to_dtype(dtype, "sum")}});
      }, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false, nb::arg("dtype").none() = nb::none())
      .def("__neg__", [](const Tensor& a) { return neg(a); })
      .def("__iadd__", [](Tensor& a, nb::handle b) { dispatch_inplace(OpId::Add, a, {a, to_tensor(b, "add_", "other")}); return a; })
      .def("__imul__", [](Tensor& a, nb::handle b) { dispatch_inplace(OpId::Mul, a, {a, to_tensor(b, "mul_", "other")}); return a; })
      .def("add_", [](Tensor& a, nb::handle b) { dispatch_inplace(OpId::Add, a, {a, to_tensor(b, "add_", "other")}); return a; })
      .def("mul_", [](Tensor& a, nb::handle b) { dispatch_inplace(OpId::Mul, a, {a, to_tensor(b, "mul_", "other")}); return a; })
      .def("neg_", [](Tensor& a) { dispatch_inplace(OpId::Neg, a, {a}); return a; })
      .def("fill_", [](Tensor& a, nb::handle v) {
        Tensor s = to_tensor(v, "fill_", "value");
        fill_(a, item(s));
        return a;
      })
      .def("zero_", [](Tensor& a) { fill_(a, 0.0); return a; })
      .def("to_dtype", [](const Tensor& t, nb::handle d) {
        DType dt = to_dtype(d, "to");
        return dt == t.dtype() ? t : cast(t, dt);
      })
      .def("clone", [](const Tensor& t) { return cast(t, t.dtype()); })
      .def("contiguous", [](const Tensor& t) { return t.is_contiguous() ? t : cast(t, t.dtype()); })
      .def("expand", [](const Tensor& t, nb::args sizes) {
        Shape s = sizes.size() == 1 && !PyLong_Check(sizes[0].ptr()) ? to_shape(sizes[0], "expand", "size") : to_shape(sizes, "expand", "size");
        return expand(t, s);
      })
      .def("reshape", [](const Tensor& t, nb::args sizes) {
        Shape s = sizes.size() == 1 && !PyLong_Check(sizes[0].ptr()) ? to_shape(sizes[0], "reshape", "shape") : to_shape(sizes, "reshape", "shape");
        return reshape(t, s);
      })
      .def("_sum_to", [](const Tensor& t, nb::handle s) { return sum_to(t, to_shape(s, "sum_to", "shape")); });

  m.def("from_numpy", &from_numpy, nb::arg("array"));
  m.def("_host_read", &note_host_read);
  m.def("empty", [](nb::handle shape, nb::handle dtype) {
    return Tensor::empty(to_shape(shape, "empty", "size"), dtype.is_none() ? default_float_dtype() : to_dtype(dtype, "empty"));
  }, nb::arg("size"), nb::arg("dtype").none() = nb::none());
  m.def("full", [](nb::handle shape, nb::handle value, nb::handle dtype) {
    Tensor v = to_tensor(value, "full", "fill_value");
    DType dt = dtype.is_none() ? (v.dtype() == DType::Float64 ? default_float_dtype() : v.dtype()) : to_dtype(dtype, "full");
    return full(to_shape(shape, "full", "size"), item(v), dt);
  }, nb::arg("size"), nb::arg("fill_value"), nb::arg("dtype").none() = nb::none());
  m.def("as_strided", [](const Tensor& t, nb::handle size, nb::handle stride, int64_t offset) {
    return as_strided(t, to_shape(size, "as_strided", "size"), to_shape(stride, "as_strided", "stride"), offset);
  }, nb::arg("input"), nb::arg("size"), nb::arg("stride"), nb::arg("storage_offset") = 0);
  m.def("as_strided_scatter", [](const Tensor& t, const Tensor& src, nb::handle size, nb::handle stride, int64_t offset) {
    return as_strided_scatter(t, src, to_shape(size, "as_strided_scatter", "size"),
                              to_shape(stride, "as_strided_scatter", "stride"), offset);
  }, nb::arg("input"), nb::arg("src"), nb::arg("size"), nb::arg("stride"), nb::arg("storage_offset") = 0);
  m.def("cast", [](const Tensor& t, nb::handle d) { return cast(t, to_dtype(d, "cast")); });
  m.def("add", [](nb::handle a, nb::handle b) { return add(to_tensor(a, "add", "input"), to_tensor(b, "add", "other")); });
  m.def("mul", [](nb::handle a, nb::handle b) { return mul(to_tensor(a, "mul", "input"), to_tensor(b, "mul", "other")); });
  m.def("neg", [](const Tensor& a) { return neg(a); });
  m.def("expand", [](const Tensor& t, nb::handle s) { return expand(t, to_shape(s, "expand", "size")); });

  // Autocast state (dispatch/autocast.h); lucid/amp/autocast_mode.py validates the arguments.
  auto dev = [](const std::string& d) { return d == "cuda" ? DeviceType::CUDA : DeviceType::CPU; };
  m.def("_autocast_enabled", [dev](const std::string& d) { return autocast_enabled(dev(d)); });
  m.def("_autocast_set_enabled", [dev](const std::string& d, bool on) { set_autocast_enabled(dev(d), on); });
  m.def("_autocast_dtype", [dev](const std::string& d) { return autocast_dtype(dev(d)); });
  m.def("_autocast_set_dtype", [dev](const std::string& d, nb::handle t) {
    set_autocast_dtype(dev(d), to_dtype(t, "autocast"));
  });
  m.def("_autocast_cache_enabled", &autocast_cache_enabled);
  m.def("_autocast_set_cache_enabled", &set_autocast_cache_enabled);
  m.def("_autocast_increment_nesting", &autocast_increment_nesting);
  m.def("_autocast_decrement_nesting", &autocast_decrement_nesting);
  m.def("_autocast_clear_cache", &clear_autocast_cache);
  m.def("_autocast_cache_size", &autocast_cache_size);
  m.def("_autocast_policy", [dev](const std::string& op, const std::string& d, const std::string& pad_mode) {
    return autocast_policy(op_from_name(op), {{"mode", pad_mode}}, dev(d));
  });

  // Autograd.
  m.def("is_grad_enabled", &GradMode::is_enabled);
  m.def("_set_grad_enabled", &GradMode::set_enabled);
  m.def("_backward", [](const TensorList& roots, const std::vector<std::optional<Tensor>>& grads, bool retain, bool create) {
    TensorList g;
    for (auto& o : grads) g.push_back(o ? *o : Tensor());
    autograd::backward(roots, g, retain, create);
  });
  m.def("_grad", [](const TensorList& outputs, const TensorList& inputs, const std::vector<std::optional<Tensor>>& grads,
                    bool retain, bool create, bool allow_unused) {
    TensorList g;
    for (auto& o : grads) g.push_back(o ? *o : Tensor());
    TensorList r = autograd::grad(outputs, inputs, g, retain, create, allow_unused);
    nb::list out;
    for (const Tensor& t : r) out.append(t.defined() ? nb::cast(t) : nb::none());
    return out;
  });

  // Op registry introspection (the coverage test reads it).
  m.def("_op_registry", [] {
    nb::list out;
    for (int i = 0; i < kNumOps; ++i) {
      OpId id = static_cast<OpId>(i);
      nb::dict d;
      d["name"] = op_name(id);
      d["registered"] = op_registered(id);
      if (op_registered(id)) {
        const OpDef& def = op_def(id);
        nb::dict kernels;  // per device type: a registered kernel (a view op runs on any device)
        for (auto [t, name] : {std::pair{DeviceType::CPU, "cpu"}, std::pair{DeviceType::CUDA, "cuda"}})
          kernels[name] = def.kernel(t) != nullptr || def.view != nullptr;
        d["kernels"] = kernels;
        d["vjp"] = def.vjp != nullptr;
        d["differentiable"] = def.differentiable;
        d["lowering"] = static_cast<int>(def.lowering);
      }
      out.append(d);
    }
    return out;
  });
}

static BinderRegistrar tensor_binder("tensor", &bind_tensor, 0);

}  // namespace lucid::py
