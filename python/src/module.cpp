// The _C extension module: exception translation, then every registered binder in order.
// lucid::ValueError (a bad argument or shape) becomes _C.ArgumentError, a subclass of both
// ValueError and RuntimeError: torch raises RuntimeError for shape errors, and code written for
// lucid catches ValueError. lucid::TypeError (a tensor of the wrong dtype, e.g. int32 class
// targets) becomes _C.DTypeError, a TypeError and a RuntimeError, for the same reason (torch:
// "expected scalar type Long but found Int" is a RuntimeError). lucid::LinAlgError (a singular or non-positive-definite matrix)
// becomes _C.LinAlgError, a RuntimeError as torch.linalg.LinAlgError; lucid::ArtifactError becomes
// _C.ArtifactError (lucid.compile.ArtifactError), a RuntimeError. One translation,
// set_python_error, serves ordinary calls and the compiled call path alike.
#include "bind.h"
#include "lucid/core/linalg_error.h"
#include "lucid/core/memory_error.h"
#include "lucid/compile/export/artifact_error.h"

#include <algorithm>
#include <cstring>
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

namespace {
// A Python exception class deriving from `base` and RuntimeError (torch raises RuntimeError for
// what lucid also reports as a ValueError or TypeError).
PyObject* runtime_error_also(const char* name, const char* doc, PyObject* base) {
  PyObject* bases = PyTuple_Pack(2, base, PyExc_RuntimeError);
  PyObject* t = PyErr_NewExceptionWithDoc(name, doc, bases, nullptr);
  Py_DECREF(bases);
  return t;
}
}  // namespace

PyObject* argument_error_type() {
  static PyObject* type = runtime_error_also(
      "lucid.ArgumentError",
      "A bad argument or shape (op, argument, expected, got). Both a ValueError and a RuntimeError, the type torch "
      "raises for shape errors.",
      PyExc_ValueError);
  return type;
}

PyObject* dtype_error_type() {
  static PyObject* type = runtime_error_also(
      "lucid.DTypeError",
      "A tensor of the wrong dtype (or an argument of the wrong type). Both a TypeError and a RuntimeError, the type "
      "torch raises for dtype mismatches.",
      PyExc_TypeError);
  return type;
}

PyObject* linalg_error_type() {
  static PyObject* type = PyErr_NewExceptionWithDoc(
      "lucid.linalg.LinAlgError",
      "A numerical failure of a linalg routine (singular matrix, not positive-definite, no convergence); a "
      "RuntimeError, as torch.linalg.LinAlgError.",
      PyExc_RuntimeError, nullptr);
  return type;
}

PyObject* artifact_error_type() {
  static PyObject* type = PyErr_NewExceptionWithDoc(
      "lucid.compile.ArtifactError",
      "A saved artifact or compile-cache file that can't be used, with the cause (truncated, corrupt, wrong "
      "version, unknown op or changed attribute schema, missing instruction set, wrong weights, unwritable path).",
      PyExc_RuntimeError, nullptr);
  return type;
}

PyObject* out_of_memory_error_type() {
  static PyObject* type = PyErr_NewExceptionWithDoc(
      "lucid.OutOfMemoryError",
      "A device allocator could not get the memory asked for, even after freeing its cache (torch.OutOfMemoryError); "
      "the message gives the request, the device, lucid's allocated and reserved bytes and the device's free and total.",
      PyExc_RuntimeError, nullptr);
  return type;
}

namespace {
// A message may quote bytes of a file (an artifact's damaged IR text): decoded with
// backslashreplace, so a non-UTF-8 byte never turns the error into a UnicodeDecodeError.
void set_error(PyObject* type, const char* msg) {
  PyObject* s = PyUnicode_DecodeUTF8(msg, static_cast<Py_ssize_t>(std::strlen(msg)), "backslashreplace");
  if (!s) return;  // the decode error is set
  PyErr_SetObject(type, s);
  Py_DECREF(s);
}
}  // namespace

bool set_python_error(const std::exception_ptr& p) {
  try {
    std::rethrow_exception(p);
  } catch (const lucid::TypeError& e) {
    set_error(dtype_error_type(), e.what());
  } catch (const lucid::ValueError& e) {
    set_error(argument_error_type(), e.what());
  } catch (const lucid::IndexError& e) {
    set_error(PyExc_IndexError, e.what());
  } catch (const lucid::NotImplementedError& e) {
    set_error(PyExc_NotImplementedError, e.what());
  } catch (const lucid::LinAlgError& e) {
    set_error(linalg_error_type(), e.what());
  } catch (const lucid::ArtifactError& e) {
    set_error(artifact_error_type(), e.what());
  } catch (const lucid::OutOfMemoryError& e) {
    set_error(out_of_memory_error_type(), e.what());
  } catch (const lucid::Error& e) {
    set_error(PyExc_RuntimeError, e.what());
  } catch (...) {
    return false;
  }
  return true;
}

}  // namespace lucid::py

NB_MODULE(_C, m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    if (!lucid::py::set_python_error(p)) std::rethrow_exception(p);  // nanobind's own translators
  });
  m.attr("ArgumentError") = nb::handle(lucid::py::argument_error_type());
  m.attr("LinAlgError") = nb::handle(lucid::py::linalg_error_type());
  m.attr("DTypeError") = nb::handle(lucid::py::dtype_error_type());
  m.attr("ArtifactError") = nb::handle(lucid::py::artifact_error_type());
  m.attr("OutOfMemoryError") = nb::handle(lucid::py::out_of_memory_error_type());
  lucid::py::run_binders(m);
}
