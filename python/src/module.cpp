// The _C extension module: exception translation, then every registered binder in order.
#include "bind.h"

#include <algorithm>
#include <vector>

namespace lucid::py {

namespace {
struct BinderEntry {
  const char* name;
  BinderFn fn;
  int order;
};
std::vector<BinderEntry>& binders() {
  static std::vector<BinderEntry> v;
  return v;
}
}  // namespace

BinderRegistrar::BinderRegistrar(const char* name, BinderFn fn, int order) { binders().push_back({name, fn, order}); }

void run_binders(nb::module_& m) {
  auto& v = binders();
  std::stable_sort(v.begin(), v.end(), [](const BinderEntry& a, const BinderEntry& b) {
    return a.order != b.order ? a.order < b.order : std::string(a.name) < std::string(b.name);
  });
  for (auto& b : v) b.fn(m);
}

}  // namespace lucid::py

NB_MODULE(_C, m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const lucid::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const lucid::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const lucid::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const lucid::NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const lucid::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  lucid::py::run_binders(m);
}
