// Python bindings of the reduce family: lucid.mean/var/std/prod/logsumexp/cumsum/cumprod/amax/amin/
// max/min/argmax/argmin/all/any and the matching lucid.Tensor methods. `dim` accepts None, an int
// or a sequence of ints; max/min with a dim return a (values, indices) named tuple.
#include "bind.h"
#include "lucid/ops/reduce.h"

namespace lucid::py {

namespace {

IntList dims_arg(nb::handle dim, const char* op) {
  if (dim.is_none()) return {};
  return to_shape(dim, op, "dim");
}

std::optional<DType> opt_dtype(nb::handle d, const char* op) {
  if (d.is_none()) return std::nullopt;
  return to_dtype(d, op);
}

int64_t int_dim(nb::handle dim, const char* op) {
  LUCID_CHECK(PyLong_Check(dim.ptr()) || nb::hasattr(dim, "__index__"), TypeError, op,
              ": argument 'dim' expected an int, got ", nb::cast<std::string>(nb::str(dim.type().attr("__name__"))));
  return to_int64(dim, op, "dim");
}

// var/std: torch accepts (dim, unbiased, keepdim), a bool in place of dim (unbiased), or
// correction=; the default is the unbiased estimate.
Tensor var_std(bool is_std, const Tensor& x, nb::handle dim, nb::handle unbiased, bool keepdim, nb::handle correction) {
  const char* op = is_std ? "std" : "var";
  double corr = 1.0;
  if (PyBool_Check(dim.ptr())) {
    corr = dim.ptr() == Py_True ? 1.0 : 0.0;
    dim = nb::none();
  }
  if (!unbiased.is_none()) corr = nb::cast<bool>(unbiased) ? 1.0 : 0.0;
  if (!correction.is_none()) {
    LUCID_CHECK(unbiased.is_none(), TypeError, op, ": pass either 'unbiased' or 'correction', not both");
    corr = nb::cast<double>(correction);
  }
  IntList dims = dims_arg(dim, op);
  return is_std ? std_(x, dims, corr, keepdim) : var(x, dims, corr, keepdim);
}

nb::handle g_max_result, g_min_result;  // owned by the module attributes _max_result/_min_result

nb::object max_min(bool is_max, const Tensor& x, nb::handle dim, bool keepdim) {
  const char* op = is_max ? "max" : "min";
  if (dim.is_none()) return nb::cast(is_max ? amax(x, {}, false) : amin(x, {}, false));
  if (is_tensor(dim)) {
    // torch.max(input, other): the elementwise maximum.
    nb::module_ lucid_mod = nb::module_::import_("lucid");
    const char* fn = is_max ? "maximum" : "minimum";
    LUCID_CHECK(nb::hasattr(lucid_mod, fn), NotImplementedError, op, "(input, other): lucid.", fn,
                " is not available in this build");
    return lucid_mod.attr(fn)(nb::cast(x), dim);
  }
  auto [v, i] = is_max ? max_dim(x, int_dim(dim, op), keepdim) : min_dim(x, int_dim(dim, op), keepdim);
  return (is_max ? g_max_result : g_min_result)(nb::cast(v), nb::cast(i));
}

std::optional<int64_t> opt_dim(nb::handle dim, const char* op) {
  if (dim.is_none()) return std::nullopt;
  return int_dim(dim, op);
}

}  // namespace

LUCID_BINDER(reduce) {
  nb::object namedtuple = nb::module_::import_("collections").attr("namedtuple");
  m.attr("_max_result") = namedtuple("max", nb::make_tuple("values", "indices"), nb::arg("module") = "lucid.return_types");
  m.attr("_min_result") = namedtuple("min", nb::make_tuple("values", "indices"), nb::arg("module") = "lucid.return_types");
  nb::object mt = m.attr("_max_result"), nt = m.attr("_min_result");
  g_max_result = mt;
  g_min_result = nt;

  auto mean_f = [](const Tensor& x, nb::handle dim, bool keepdim, nb::handle dtype) {
    return mean(x, dims_arg(dim, "mean"), keepdim, opt_dtype(dtype, "mean"));
  };
  m.def("mean", mean_f, nb::arg("input"), nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false,
        nb::arg("dtype").none() = nb::none());
  def_method(m, "mean", mean_f, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false,
             nb::arg("dtype").none() = nb::none());

  auto var_f = [](const Tensor& x, nb::handle dim, nb::handle unbiased, bool keepdim, nb::handle correction) {
    return var_std(false, x, dim, unbiased, keepdim, correction);
  };
  auto std_f = [](const Tensor& x, nb::handle dim, nb::handle unbiased, bool keepdim, nb::handle correction) {
    return var_std(true, x, dim, unbiased, keepdim, correction);
  };
  m.def("var", var_f, nb::arg("input"), nb::arg("dim").none() = nb::none(), nb::arg("unbiased").none() = nb::none(),
        nb::arg("keepdim") = false, nb::arg("correction").none() = nb::none());
  def_method(m, "var", var_f, nb::arg("dim").none() = nb::none(), nb::arg("unbiased").none() = nb::none(),
             nb::arg("keepdim") = false, nb::arg("correction").none() = nb::none());
  m.def("std", std_f, nb::arg("input"), nb::arg("dim").none() = nb::none(), nb::arg("unbiased").none() = nb::none(),
        nb::arg("keepdim") = false, nb::arg("correction").none() = nb::none());
  def_method(m, "std", std_f, nb::arg("dim").none() = nb::none(), nb::arg("unbiased").none() = nb::none(),
             nb::arg("keepdim") = false, nb::arg("correction").none() = nb::none());

  // var_mean / std_mean: (var or std, mean) over the same dims.
  auto var_mean_f = [](const Tensor& x, nb::handle dim, nb::handle unbiased, bool keepdim, nb::handle correction) {
    Tensor v = var_std(false, x, dim, unbiased, keepdim, correction);
    return nb::make_tuple(v, mean(x, dims_arg(PyBool_Check(dim.ptr()) ? nb::none() : dim, "var_mean"), keepdim));
  };
  auto std_mean_f = [](const Tensor& x, nb::handle dim, nb::handle unbiased, bool keepdim, nb::handle correction) {
    Tensor v = var_std(true, x, dim, unbiased, keepdim, correction);
    return nb::make_tuple(v, mean(x, dims_arg(PyBool_Check(dim.ptr()) ? nb::none() : dim, "std_mean"), keepdim));
  };
  m.def("var_mean", var_mean_f, nb::arg("input"), nb::arg("dim").none() = nb::none(), nb::arg("unbiased").none() = nb::none(),
        nb::arg("keepdim") = false, nb::arg("correction").none() = nb::none());
  m.def("std_mean", std_mean_f, nb::arg("input"), nb::arg("dim").none() = nb::none(), nb::arg("unbiased").none() = nb::none(),
        nb::arg("keepdim") = false, nb::arg("correction").none() = nb::none());

  auto prod_f = [](const Tensor& x, nb::handle dim, bool keepdim, nb::handle dtype) {
    return prod(x, dims_arg(dim, "prod"), keepdim, opt_dtype(dtype, "prod"));
  };
  m.def("prod", prod_f, nb::arg("input"), nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false,
        nb::arg("dtype").none() = nb::none());
  def_method(m, "prod", prod_f, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false,
             nb::arg("dtype").none() = nb::none());

  auto lse_f = [](const Tensor& x, nb::handle dim, bool keepdim) {
    LUCID_CHECK(!dim.is_none(), TypeError, "logsumexp: argument 'dim' is required");
    return logsumexp(x, dims_arg(dim, "logsumexp"), keepdim);
  };
  m.def("logsumexp", lse_f, nb::arg("input"), nb::arg("dim"), nb::arg("keepdim") = false);
  def_method(m, "logsumexp", lse_f, nb::arg("dim"), nb::arg("keepdim") = false);

  auto cumsum_f = [](const Tensor& x, nb::handle dim, nb::handle dtype) {
    return cumsum(x, int_dim(dim, "cumsum"), opt_dtype(dtype, "cumsum"));
  };
  m.def("cumsum", cumsum_f, nb::arg("input"), nb::arg("dim"), nb::arg("dtype").none() = nb::none());
  def_method(m, "cumsum", cumsum_f, nb::arg("dim"), nb::arg("dtype").none() = nb::none());
  auto cumprod_f = [](const Tensor& x, nb::handle dim, nb::handle dtype) {
    return cumprod(x, int_dim(dim, "cumprod"), opt_dtype(dtype, "cumprod"));
  };
  m.def("cumprod", cumprod_f, nb::arg("input"), nb::arg("dim"), nb::kw_only(), nb::arg("dtype").none() = nb::none());
  def_method(m, "cumprod", cumprod_f, nb::arg("dim"), nb::kw_only(), nb::arg("dtype").none() = nb::none());
  auto scan_inplace = [](bool is_prod, nb::handle self, nb::handle dim, nb::handle dtype) {
    const char* op = is_prod ? "cumprod_" : "cumsum_";
    Tensor x = nb::cast<Tensor>(self);
    if (is_prod) cumprod_(x, int_dim(dim, op), opt_dtype(dtype, op));
    else cumsum_(x, int_dim(dim, op), opt_dtype(dtype, op));
    return nb::borrow<nb::object>(self);
  };
  def_method(m, "cumsum_", [scan_inplace](nb::handle self, nb::handle dim, nb::handle dtype) {
    return scan_inplace(false, self, dim, dtype);
  }, nb::arg("dim"), nb::kw_only(), nb::arg("dtype").none() = nb::none());
  def_method(m, "cumprod_", [scan_inplace](nb::handle self, nb::handle dim, nb::handle dtype) {
    return scan_inplace(true, self, dim, dtype);
  }, nb::arg("dim"), nb::kw_only(), nb::arg("dtype").none() = nb::none());

  auto amax_f = [](const Tensor& x, nb::handle dim, bool keepdim) { return amax(x, dims_arg(dim, "amax"), keepdim); };
  auto amin_f = [](const Tensor& x, nb::handle dim, bool keepdim) { return amin(x, dims_arg(dim, "amin"), keepdim); };
  m.def("amax", amax_f, nb::arg("input"), nb::arg("dim").none() = nb::tuple(), nb::arg("keepdim") = false);
  def_method(m, "amax", amax_f, nb::arg("dim").none() = nb::tuple(), nb::arg("keepdim") = false);
  m.def("amin", amin_f, nb::arg("input"), nb::arg("dim").none() = nb::tuple(), nb::arg("keepdim") = false);
  def_method(m, "amin", amin_f, nb::arg("dim").none() = nb::tuple(), nb::arg("keepdim") = false);

  auto max_f = [](const Tensor& x, nb::handle dim, bool keepdim) { return max_min(true, x, dim, keepdim); };
  auto min_f = [](const Tensor& x, nb::handle dim, bool keepdim) { return max_min(false, x, dim, keepdim); };
  m.def("max", max_f, nb::arg("input"), nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_method(m, "max", max_f, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  m.def("min", min_f, nb::arg("input"), nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_method(m, "min", min_f, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);

  auto argmax_f = [](const Tensor& x, nb::handle dim, bool keepdim) { return argmax(x, opt_dim(dim, "argmax"), keepdim); };
  auto argmin_f = [](const Tensor& x, nb::handle dim, bool keepdim) { return argmin(x, opt_dim(dim, "argmin"), keepdim); };
  m.def("argmax", argmax_f, nb::arg("input"), nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_method(m, "argmax", argmax_f, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  m.def("argmin", argmin_f, nb::arg("input"), nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_method(m, "argmin", argmin_f, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);

  auto all_f = [](const Tensor& x, nb::handle dim, bool keepdim) { return all(x, dims_arg(dim, "all"), keepdim); };
  auto any_f = [](const Tensor& x, nb::handle dim, bool keepdim) { return any(x, dims_arg(dim, "any"), keepdim); };
  m.def("all", all_f, nb::arg("input"), nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_method(m, "all", all_f, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  m.def("any", any_f, nb::arg("input"), nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_method(m, "any", any_f, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
}

}  // namespace lucid::py
