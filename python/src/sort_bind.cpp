// Python bindings of the sort family: lucid.sort/argsort/msort/topk/median/nanmedian/unique/
// unique_consecutive and the matching lucid.Tensor methods, with torch's signatures. Results
// that torch returns as torch.return_types.* are named tuples of lucid.return_types (fields
// values and indices; they unpack as tuples); unique returns a tensor or a plain tuple, as torch.
#include "bind.h"
#include "lucid/ops/sort.h"

namespace lucid::py {

namespace {

// Owned by the module attributes _sort_result, _topk_result, _median_result, _nanmedian_result.
nb::handle g_sort_result, g_topk_result, g_median_result, g_nanmedian_result;

nb::object pair_of(nb::handle type, const std::pair<Tensor, Tensor>& r) { return type(nb::cast(r.first), nb::cast(r.second)); }

nb::object sort_f(const Tensor& x, int64_t dim, bool descending, bool stable) {
  return pair_of(g_sort_result, sort(x, dim, descending, stable));
}

nb::object topk_f(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  return pair_of(g_topk_result, topk(x, k, dim, largest, sorted));
}

nb::object median_f(bool ignore_nan, const Tensor& x, nb::handle dim, bool keepdim) {
  const char* op = ignore_nan ? "nanmedian" : "median";
  if (dim.is_none()) return nb::cast(median(x, ignore_nan));
  return pair_of(ignore_nan ? g_nanmedian_result : g_median_result,
                 median_dim(x, to_int64(dim, op, "dim"), keepdim, ignore_nan));
}

std::optional<int64_t> opt_dim(nb::handle dim, const char* op) {
  if (dim.is_none()) return std::nullopt;
  return to_int64(dim, op, "dim");
}

// A tensor when neither extra output is asked for, else (values[, inverse][, counts]).
nb::object unique_result(const UniqueResult& r, bool inverse, bool counts) {
  if (!inverse && !counts) return nb::cast(r.values);
  nb::list out;
  out.append(nb::cast(r.values));
  if (inverse) out.append(nb::cast(r.inverse));
  if (counts) out.append(nb::cast(r.counts));
  return nb::tuple(out);
}

nb::object unique_f(const Tensor& x, bool /*sorted: CPU unique always sorts, as torch's*/, bool inverse, bool counts,
                    nb::handle dim) {
  return unique_result(unique(x, inverse, counts, opt_dim(dim, "unique")), inverse, counts);
}

nb::object unique_consecutive_f(const Tensor& x, bool inverse, bool counts, nb::handle dim) {
  return unique_result(unique_consecutive(x, inverse, counts, opt_dim(dim, "unique_consecutive")), inverse, counts);
}

}  // namespace

LUCID_BINDER(sort) {
  nb::object namedtuple = nb::module_::import_("collections").attr("namedtuple");
  nb::object fields = nb::make_tuple("values", "indices");
  auto result_type = [&](const char* attr, const char* name, nb::handle& slot) {
    m.attr(attr) = namedtuple(name, fields, nb::arg("module") = "lucid.return_types");
    slot = m.attr(attr);
  };
  result_type("_sort_result", "sort", g_sort_result);
  result_type("_topk_result", "topk", g_topk_result);
  result_type("_median_result", "median", g_median_result);
  result_type("_nanmedian_result", "nanmedian", g_nanmedian_result);

  m.def("sort", &sort_f, nb::arg("input"), nb::arg("dim") = -1, nb::arg("descending") = false, nb::kw_only(),
        nb::arg("stable") = false);
  def_method(m, "sort", &sort_f, nb::arg("dim") = -1, nb::arg("descending") = false, nb::kw_only(),
             nb::arg("stable") = false);
  auto argsort_f = [](const Tensor& x, int64_t dim, bool descending, bool stable) { return argsort(x, dim, descending, stable); };
  m.def("argsort", argsort_f, nb::arg("input"), nb::arg("dim") = -1, nb::arg("descending") = false, nb::arg("stable") = false);
  def_method(m, "argsort", argsort_f, nb::arg("dim") = -1, nb::arg("descending") = false, nb::arg("stable") = false);
  auto msort_f = [](const Tensor& x) { return sort(x, 0).first; };
  m.def("msort", msort_f, nb::arg("input"));
  def_method(m, "msort", msort_f);

  m.def("topk", &topk_f, nb::arg("input"), nb::arg("k"), nb::arg("dim") = -1, nb::arg("largest") = true,
        nb::arg("sorted") = true);
  def_method(m, "topk", &topk_f, nb::arg("k"), nb::arg("dim") = -1, nb::arg("largest") = true, nb::arg("sorted") = true);

  auto med = [](const Tensor& x, nb::handle dim, bool keepdim) { return median_f(false, x, dim, keepdim); };
  auto nanmed = [](const Tensor& x, nb::handle dim, bool keepdim) { return median_f(true, x, dim, keepdim); };
  m.def("median", med, nb::arg("input"), nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_method(m, "median", med, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  m.def("nanmedian", nanmed, nb::arg("input"), nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);
  def_method(m, "nanmedian", nanmed, nb::arg("dim").none() = nb::none(), nb::arg("keepdim") = false);

  m.def("unique", &unique_f, nb::arg("input"), nb::arg("sorted") = true, nb::arg("return_inverse") = false,
        nb::arg("return_counts") = false, nb::arg("dim").none() = nb::none());
  def_method(m, "unique", &unique_f, nb::arg("sorted") = true, nb::arg("return_inverse") = false,
             nb::arg("return_counts") = false, nb::arg("dim").none() = nb::none());
  m.def("unique_consecutive", &unique_consecutive_f, nb::arg("input"), nb::arg("return_inverse") = false,
        nb::arg("return_counts") = false, nb::arg("dim").none() = nb::none());
  def_method(m, "unique_consecutive", &unique_consecutive_f, nb::arg("return_inverse") = false,
             nb::arg("return_counts") = false, nb::arg("dim").none() = nb::none());
}

}  // namespace lucid::py
