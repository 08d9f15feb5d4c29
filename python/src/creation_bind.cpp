// Python bindings of the creation family: factories (zeros, ones, full, empty, arange, linspace,
// eye, *_like), random factories (rand, randn, randint, normal, bernoulli) and in-place fills
// (normal_, uniform_, bernoulli_), plus lucid.Generator and the default generator's functions.
// Factories take sizes as *ints or one sequence and the keywords dtype, device (the factory
// device for the call; *_like default to the input's device), requires_grad, and generator for
// random ones.
#include <cstring>

#include "bind.h"
#include "lucid/backends/cuda/pinned_memory.h"
#include "lucid/core/generator.h"
#include "lucid/ops/creation.h"

namespace lucid::py {

namespace {

std::string py_type_name(nb::handle h) { return nb::cast<std::string>(nb::str(h.type().attr("__name__"))); }

double scalar_value(const Tensor& x) {
  double v = 0;
  const Tensor t = host_copy(x);
  LUCID_CHECK(t.numel() == 1, ValueError, "a Tensor with ", t.numel(), " elements cannot be converted to a scalar");
  LUCID_DISPATCH_ALL(t.dtype(), "item", [&] { v = static_cast<double>(static_cast<compute_t<scalar_t>>(*t.data<scalar_t>())); });
  return v;
}

// A Python number or one-element tensor: (value, is floating).
std::pair<double, bool> number(nb::handle h, const char* op, const char* arg) {
  Tensor t = to_tensor(h, op, arg);
  return {scalar_value(t), is_floating(t.dtype())};
}

struct Opts {
  std::optional<DType> dtype;
  bool requires_grad = false;
  Generator* gen = nullptr;
  nb::object size;  // the 'size' keyword, when given
  // device=: the factory device while the Opts live (the call's extent), see core/device.h.
  std::unique_ptr<FactoryDeviceScope> device;
  bool pin_memory = false;  // pin_memory=True: the CPU result is copied into pinned memory
};

Opts parse_kwargs(const nb::kwargs& kw, const char* op, bool allow_gen, bool allow_size) {
  Opts o;
  for (auto [k, v] : kw) {
    std::string key = nb::cast<std::string>(k);
    if (key == "dtype") {
      if (!v.is_none()) o.dtype = to_dtype(v, op);
    } else if (key == "device") {
      if (!v.is_none()) {
        std::string spec = PyLong_Check(v.ptr()) ? str("cuda:", nb::cast<int64_t>(v)) : nb::cast<std::string>(nb::str(v));
        Device d = parse_device(spec);
        check_available(d, spec);
        o.device = std::make_unique<FactoryDeviceScope>(d);
      }
    } else if (key == "requires_grad") {
      o.requires_grad = nb::cast<bool>(v);
    } else if (key == "generator" && allow_gen) {
      if (!v.is_none()) o.gen = nb::cast<Generator*>(v);
    } else if (key == "size" && allow_size) {
      o.size = nb::borrow(v);
    } else if (key == "pin_memory") {
      o.pin_memory = nb::cast<bool>(v);
    } else if (key == "layout" || key == "memory_format") {
      // Accepted for signature compatibility; lucid has one (strided, pageable) layout.
    } else {
      throw TypeError(str(op, "() got an unexpected keyword argument '", key, "'"));
    }
  }
  return o;
}

// Sizes from positional args[start:] (*ints or one sequence) or the 'size' keyword.
Shape checked_size(Shape s, const char* op) {
  for (int64_t d : s)
    LUCID_CHECK(d >= 0, ValueError, op, ": argument 'size' expected non-negative sizes, got ", shape_str(s));
  return s;
}

Shape shape_from(const nb::args& args, size_t start, const Opts& o, const char* op) {
  if (o.size.is_valid()) {
    LUCID_CHECK(args.size() == start, TypeError, op, "(): 'size' given both positionally and as a keyword");
    return checked_size(to_shape(o.size, op, "size"), op);
  }
  if (args.size() == start + 1 && !PyLong_Check(args[start].ptr())) return checked_size(to_shape(args[start], op, "size"), op);
  nb::list l;
  for (size_t i = start; i < args.size(); ++i) l.append(args[i]);
  return checked_size(to_shape(l, op, "size"), op);
}

Tensor finish(Tensor t, const Opts& o) {
  if (o.pin_memory) {
    LUCID_CHECK(t.device().is_cpu(), Error, "pin_memory: only CPU tensors can be pinned, got one on ", t.device().str());
    t = cuda::pin_memory(t);
  }
  if (o.requires_grad) t.set_requires_grad(true);
  return t;
}

DType float_dtype(const Opts& o, const char* op) {
  DType t = o.dtype.value_or(default_float_dtype());
  LUCID_CHECK(is_floating(t), TypeError, op, ": expected a floating point dtype, got ", dtype_name(t));
  return t;
}

// dtype of full(): from the fill value unless given (bool -> bool, int -> int64, float -> default).
DType fill_dtype(nb::handle value, const Opts& o, const char* op) {
  if (o.dtype) return *o.dtype;
  Tensor v = to_tensor(value, op, "fill_value");
  if (v.impl()->is_wrapped_number && v.dtype() == DType::Float64) return default_float_dtype();
  return v.dtype();
}

Tensor arange_f(const nb::args& args, const nb::kwargs& kw) {
  nb::kwargs rest;
  nb::object start, end, step;
  for (auto [k, v] : kw) {
    std::string key = nb::cast<std::string>(k);
    if (key == "start") start = nb::borrow(v);
    else if (key == "end") end = nb::borrow(v);
    else if (key == "step") step = nb::borrow(v);
    else rest[k] = v;
  }
  std::vector<nb::object> pos;
  for (nb::handle a : args) pos.push_back(nb::borrow(a));
  LUCID_CHECK(pos.size() <= 3, TypeError, "arange() takes at most 3 positional arguments, got ", pos.size());
  if (pos.size() == 1 && !end.is_valid() && !start.is_valid()) { end = pos[0]; pos.clear(); }
  if (pos.size() >= 1) start = pos[0];
  if (pos.size() >= 2) end = pos[1];
  if (pos.size() == 3) step = pos[2];
  if (!end.is_valid() && start.is_valid()) { end = start; start = nb::object(); }
  LUCID_CHECK(end.is_valid(), TypeError, "arange() missing required argument 'end'");
  Opts o = parse_kwargs(rest, "arange", false, false);
  auto [s, sf] = start.is_valid() ? number(start, "arange", "start") : std::pair<double, bool>{0.0, false};
  auto [e, ef] = number(end, "arange", "end");
  auto [st, stf] = step.is_valid() ? number(step, "arange", "step") : std::pair<double, bool>{1.0, false};
  DType dt = o.dtype.value_or(sf || ef || stf ? default_float_dtype() : DType::Int64);
  return finish(arange(s, e, st, dt), o);
}

Tensor randint_f(const nb::args& args, const nb::kwargs& kw) {
  nb::kwargs rest;
  nb::object low, high;
  for (auto [k, v] : kw) {
    std::string key = nb::cast<std::string>(k);
    if (key == "low") low = nb::borrow(v);
    else if (key == "high") high = nb::borrow(v);
    else rest[k] = v;
  }
  Opts o = parse_kwargs(rest, "randint", true, true);
  size_t used = 0;
  // randint(high, size) or randint(low, high, size).
  size_t nums = 0;
  for (size_t i = 0; i < args.size() && i < 2; ++i)
    if (PyLong_Check(args[i].ptr()) || (is_tensor(args[i]) && nb::cast<Tensor>(args[i]).ndim() == 0)) ++nums;
    else break;
  if (!o.size.is_valid() && nums == args.size() && nums > 0) --nums;  // the last positional is the size
  if (nums == 2) { low = nb::borrow(args[0]); high = nb::borrow(args[1]); used = 2; }
  else if (nums == 1) {
    if (high.is_valid()) low = nb::borrow(args[0]);
    else high = nb::borrow(args[0]);
    used = 1;
  }
  LUCID_CHECK(high.is_valid(), TypeError, "randint() missing required argument 'high'");
  int64_t lo = low.is_valid() ? to_int64(low, "randint", "low") : 0, hi = to_int64(high, "randint", "high");
  Shape shape = shape_from(args, used, o, "randint");
  return finish(randint(lo, hi, shape, o.dtype.value_or(DType::Int64), o.gen), o);
}

// The factory device of a call made from a tensor (x.new_*, bernoulli(x, p), normal(tensor, ...)):
// x's device unless device= says otherwise, as torch's.
struct OnDeviceOf {
  std::optional<FactoryDeviceScope> scope;
  OnDeviceOf(const Tensor& x, const Opts& o) {
    if (!o.device) scope.emplace(x.device());
  }
};

Tensor like(const Tensor& x, const Opts& o, double fill, int kind, const char* op) {
  DType dt = o.dtype.value_or(x.dtype());
  std::optional<FactoryDeviceScope> on_x;  // *_like: on x's device unless device= says otherwise
  if (!o.device) on_x.emplace(x.device());
  if (kind == 0) return finish(full(x.shape(), fill, dt), o);
  if (kind == 1) return finish(empty(x.shape(), dt), o);
  LUCID_CHECK(is_floating(dt), TypeError, op, ": expected a floating point dtype, got ", dtype_name(dt));
  return finish(kind == 2 ? rand(x.shape(), dt, o.gen) : randn(x.shape(), dt, o.gen), o);
}

Tensor state_tensor(const Generator& g) {
  Tensor t = Tensor::empty({16}, DType::UInt8);
  uint64_t s = g.initial_seed(), off = g.offset();
  std::memcpy(t.data<uint8_t>(), &s, 8);
  std::memcpy(t.data<uint8_t>() + 8, &off, 8);
  return t;
}

void set_state_tensor(Generator& g, const Tensor& t) {
  LUCID_CHECK(t.dtype() == DType::UInt8 && t.numel() == 16, TypeError,
              "set_state: expected a uint8 tensor of 16 elements (from get_state()), got dtype ", dtype_name(t.dtype()),
              " with ", t.numel(), " elements");
  Tensor c = host_copy(t);
  uint64_t s, off;
  std::memcpy(&s, c.data<uint8_t>(), 8);
  std::memcpy(&off, c.data<uint8_t>() + 8, 8);
  g.set_state(s, off);
}

uint64_t seed_arg(nb::handle h) {
  LUCID_CHECK(PyLong_Check(h.ptr()) || nb::hasattr(h, "__index__"), TypeError, "manual_seed: expected an int, got ", py_type_name(h));
  nb::object i = h.attr("__index__")();
  return PyLong_AsUnsignedLongLongMask(i.ptr());  // negative seeds wrap modulo 2**64, as in PyTorch
}

}  // namespace

LUCID_BINDER(creation) {
  // ---- generators ----
  nb::class_<Generator>(m, "Generator")
      .def("__init__", [](Generator* g, nb::handle device) {
        if (!device.is_none()) {
          std::string spec = nb::cast<std::string>(nb::str(device));
          check_available(parse_device(spec), spec);
        }
        new (g) Generator();
      }, nb::arg("device").none() = "cpu")
      .def("manual_seed", [](Generator& g, nb::handle s) -> Generator& { g.manual_seed(seed_arg(s)); return g; },
           nb::rv_policy::reference)
      .def("seed", &Generator::seed)
      .def("initial_seed", &Generator::initial_seed)
      .def("get_state", &state_tensor)
      .def("set_state", [](Generator& g, const Tensor& t) -> Generator& { set_state_tensor(g, t); return g; },
           nb::rv_policy::reference)
      .def_prop_ro("device", [](const Generator&) { return "cpu"; })
      .def_prop_ro("_offset", &Generator::offset);
  m.attr("default_generator") = nb::cast(default_generator());
  m.def("manual_seed", [](nb::handle s) { default_generator()->manual_seed(seed_arg(s)); return default_generator(); });
  m.def("seed", [] { return default_generator()->seed(); });
  m.def("initial_seed", [] { return default_generator()->initial_seed(); });
  m.def("get_rng_state", [] { return state_tensor(*default_generator()); });
  m.def("set_rng_state", [](const Tensor& t) { set_state_tensor(*default_generator(), t); }, nb::arg("new_state"));

  // ---- deterministic factories ----
  m.def("zeros", [](nb::args a, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "zeros", false, true);
    return finish(full(shape_from(a, 0, o, "zeros"), 0.0, o.dtype.value_or(default_float_dtype())), o);
  });
  m.def("ones", [](nb::args a, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "ones", false, true);
    return finish(full(shape_from(a, 0, o, "ones"), 1.0, o.dtype.value_or(default_float_dtype())), o);
  });
  // lucid.empty / lucid.full (the core module has simpler versions under these names).
  m.def("_empty_factory", [](nb::args a, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "empty", false, true);
    return finish(empty(shape_from(a, 0, o, "empty"), o.dtype.value_or(default_float_dtype())), o);
  });
  m.def("_full_factory", [](nb::handle size, nb::handle value, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "full", false, false);
    return finish(full(checked_size(to_shape(size, "full", "size"), "full"), number(value, "full", "fill_value").first, fill_dtype(value, o, "full")), o);
  }, nb::arg("size"), nb::arg("fill_value"), nb::arg("kwargs"));
  m.def("arange", &arange_f);
  m.def("linspace", [](nb::handle start, nb::handle end, nb::handle steps, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "linspace", false, false);
    return finish(linspace(number(start, "linspace", "start").first, number(end, "linspace", "end").first,
                           to_int64(steps, "linspace", "steps"), o.dtype.value_or(default_float_dtype())), o);
  }, nb::arg("start"), nb::arg("end"), nb::arg("steps"), nb::arg("kwargs"));
  m.def("eye", [](nb::handle n, nb::handle mm, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "eye", false, false);
    int64_t nn = to_int64(n, "eye", "n");
    int64_t m2 = mm.is_none() ? nn : to_int64(mm, "eye", "m");
    return finish(eye(nn, m2, o.dtype.value_or(default_float_dtype())), o);
  }, nb::arg("n"), nb::arg("m").none() = nb::none(), nb::arg("kwargs"));

  m.def("zeros_like", [](const Tensor& x, nb::kwargs kw) { return like(x, parse_kwargs(kw, "zeros_like", false, false), 0.0, 0, "zeros_like"); },
        nb::arg("input"), nb::arg("kwargs"));
  m.def("ones_like", [](const Tensor& x, nb::kwargs kw) { return like(x, parse_kwargs(kw, "ones_like", false, false), 1.0, 0, "ones_like"); },
        nb::arg("input"), nb::arg("kwargs"));
  m.def("empty_like", [](const Tensor& x, nb::kwargs kw) { return like(x, parse_kwargs(kw, "empty_like", false, false), 0.0, 1, "empty_like"); },
        nb::arg("input"), nb::arg("kwargs"));
  m.def("full_like", [](const Tensor& x, nb::handle v, nb::kwargs kw) {
    return like(x, parse_kwargs(kw, "full_like", false, false), number(v, "full_like", "fill_value").first, 0, "full_like");
  }, nb::arg("input"), nb::arg("fill_value"), nb::arg("kwargs"));
  m.def("rand_like", [](const Tensor& x, nb::kwargs kw) { return like(x, parse_kwargs(kw, "rand_like", true, false), 0.0, 2, "rand_like"); },
        nb::arg("input"), nb::arg("kwargs"));
  m.def("randn_like", [](const Tensor& x, nb::kwargs kw) { return like(x, parse_kwargs(kw, "randn_like", true, false), 0.0, 3, "randn_like"); },
        nb::arg("input"), nb::arg("kwargs"));

  // ---- random factories ----
  m.def("rand", [](nb::args a, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "rand", true, true);
    return finish(rand(shape_from(a, 0, o, "rand"), float_dtype(o, "rand"), o.gen), o);
  });
  m.def("randn", [](nb::args a, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "randn", true, true);
    return finish(randn(shape_from(a, 0, o, "randn"), float_dtype(o, "randn"), o.gen), o);
  });
  m.def("randint", &randint_f);
  m.def("randperm", [](nb::handle n, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "randperm", true, false);
    return finish(randperm(to_int64(n, "randperm", "n"), o.dtype.value_or(DType::Int64), o.gen), o);
  }, nb::arg("n"), nb::arg("kwargs"));
  m.def("randint_like", [](const Tensor& x, nb::handle low, nb::handle high, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "randint_like", true, false);
    int64_t lo = 0, hi;
    if (high.is_none()) hi = to_int64(low, "randint_like", "high");
    else { lo = to_int64(low, "randint_like", "low"); hi = to_int64(high, "randint_like", "high"); }
    return finish(randint(lo, hi, x.shape(), o.dtype.value_or(x.dtype()), o.gen), o);
  }, nb::arg("input"), nb::arg("low"), nb::arg("high").none() = nb::none(), nb::arg("kwargs"));
  m.def("normal", [](nb::handle mean, nb::handle std, nb::handle size, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "normal", true, false);
    if (!is_tensor(mean) && !is_tensor(std)) {
      LUCID_CHECK(!size.is_none(), TypeError, "normal(mean: float, std: float): argument 'size' is required");
      Tensor t = empty(checked_size(to_shape(size, "normal", "size"), "normal"), float_dtype(o, "normal"));
      normal_(t, number(mean, "normal", "mean").first, number(std, "normal", "std").first, o.gen);
      return finish(t, o);
    }
    // Tensor mean and/or std: mean + std * N(0, 1) over the broadcast shape.
    Tensor mt = to_tensor(mean, "normal", "mean"), st = to_tensor(std, "normal", "std");
    Shape s = broadcast_shapes(mt.shape(), st.shape(), "normal");
    DType dt = o.dtype.value_or(result_type({mt, st}));
    LUCID_CHECK(is_floating(dt), TypeError, "normal: expected floating point mean/std, got ", dtype_name(dt));
    OnDeviceOf on_arg(is_tensor(mean) ? mt : st, o);
    Tensor z = randn(s, dt, o.gen);
    return finish(add(mt.detach(), mul(st.detach(), z)), o);
  }, nb::arg("mean"), nb::arg("std"), nb::arg("size").none() = nb::none(), nb::arg("kwargs"));
  m.def("bernoulli", [](const Tensor& x, nb::handle p, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "bernoulli", true, false);
    if (p.is_none()) return bernoulli(x, o.gen);
    OnDeviceOf on_x(x, o);
    return bernoulli(x.shape(), number(p, "bernoulli", "p").first, x.dtype(), o.gen);
  }, nb::arg("input"), nb::arg("p").none() = nb::none(), nb::arg("kwargs"));

  // ---- Tensor methods ----
  auto gen_of = [](nb::handle g) -> Generator* { return g.is_none() ? nullptr : nb::cast<Generator*>(g); };
  auto multinomial_f = [gen_of](const Tensor& x, nb::handle n, bool replacement, nb::handle g) {
    return multinomial(x, to_int64(n, "multinomial", "num_samples"), replacement, gen_of(g));
  };
  m.def("multinomial", multinomial_f, nb::arg("input"), nb::arg("num_samples"), nb::arg("replacement") = false,
        nb::kw_only(), nb::arg("generator").none() = nb::none());
  def_method(m, "multinomial", multinomial_f, nb::arg("num_samples"), nb::arg("replacement") = false, nb::kw_only(),
             nb::arg("generator").none() = nb::none());
  def_method(m, "normal_", [gen_of](Tensor& x, double mean, double std, nb::handle g) {
    normal_(x, mean, std, gen_of(g));
    return x;
  }, nb::arg("mean") = 0.0, nb::arg("std") = 1.0, nb::arg("generator").none() = nb::none());
  def_method(m, "uniform_", [gen_of](Tensor& x, double a, double b, nb::handle g) {
    uniform_(x, a, b, gen_of(g));
    return x;
  }, nb::arg("from") = 0.0, nb::arg("to") = 1.0, nb::arg("generator").none() = nb::none());
  def_method(m, "bernoulli_", [gen_of](Tensor& x, nb::handle p, nb::handle g) {
    if (is_tensor(p)) bernoulli_(x, nb::cast<Tensor>(p), gen_of(g));
    else bernoulli_(x, number(p, "bernoulli_", "p").first, gen_of(g));
    return x;
  }, nb::arg("p") = 0.5, nb::arg("generator").none() = nb::none());
  def_method(m, "new_zeros", [](const Tensor& x, nb::args a, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "new_zeros", false, true);
    OnDeviceOf on_x(x, o);
    return finish(full(shape_from(a, 0, o, "new_zeros"), 0.0, o.dtype.value_or(x.dtype())), o);
  });
  def_method(m, "new_ones", [](const Tensor& x, nb::args a, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "new_ones", false, true);
    OnDeviceOf on_x(x, o);
    return finish(full(shape_from(a, 0, o, "new_ones"), 1.0, o.dtype.value_or(x.dtype())), o);
  });
  def_method(m, "new_empty", [](const Tensor& x, nb::args a, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "new_empty", false, true);
    OnDeviceOf on_x(x, o);
    return finish(empty(shape_from(a, 0, o, "new_empty"), o.dtype.value_or(x.dtype())), o);
  });
  def_method(m, "new_full", [](const Tensor& x, nb::handle size, nb::handle v, nb::kwargs kw) {
    Opts o = parse_kwargs(kw, "new_full", false, false);
    OnDeviceOf on_x(x, o);
    return finish(full(to_shape(size, "new_full", "size"), number(v, "new_full", "fill_value").first, o.dtype.value_or(x.dtype())), o);
  }, nb::arg("size"), nb::arg("fill_value"), nb::arg("kwargs"));
}

}  // namespace lucid::py
