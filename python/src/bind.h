// Shared helpers for the nanobind glue: each python/src/*.cpp registers a binder function with
// LUCID_BINDER(name) { ... } and module.cpp runs them all, so families never edit a shared file.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/function.h>

#include "lucid/core/tensor.h"
#include "lucid/dispatch/dispatch.h"
#include "lucid/ops/op_def.h"

namespace nb = nanobind;

namespace lucid::py {

using BinderFn = void (*)(nb::module_&);
struct BinderRegistrar {
  BinderRegistrar(const char* name, BinderFn fn, int order = 100);
};
void run_binders(nb::module_& m);

#define LUCID_BINDER(name)                                                                   \
  static void lucid_bind_##name(nb::module_& m);                                            \
  static ::lucid::py::BinderRegistrar lucid_binder_reg_##name(#name, &lucid_bind_##name);   \
  static void lucid_bind_##name(nb::module_& m)

// The C++ error in flight as its Python exception (lucid::ValueError -> _C.ArgumentError, a
// ValueError and RuntimeError; TypeError, IndexError, NotImplementedError; OutOfMemoryError ->
// lucid.OutOfMemoryError, a RuntimeError; other lucid::Error ->
// RuntimeError). False, with nothing set, for an exception that is not a lucid::Error.
bool set_python_error(const std::exception_ptr& p);
PyObject* argument_error_type();
PyObject* linalg_error_type();
PyObject* dtype_error_type();
PyObject* artifact_error_type();
PyObject* out_of_memory_error_type();

// Python int (or __index__) to int64; TypeError naming op, argument and value when it does not fit.
int64_t to_int64(nb::handle h, const char* op, const char* arg);
// Python operand to tensor: Tensor as is; bool/int/float as a 0-d wrapped number.
Tensor to_tensor(nb::handle h, const char* op, const char* arg);
bool is_tensor(nb::handle h);
// Python int or sequence of ints (or torch-style *sizes) to a Shape.
Shape to_shape(nb::handle h, const char* op, const char* arg);
DType to_dtype(nb::handle h, const char* op);

// Attach a method to lucid.Tensor from any binder (after the class exists).
template <class F, class... Extra>
void def_method(nb::module_& m, const char* name, F&& f, const Extra&... extra) {
  nb::handle cls = nb::type<Tensor>();
  nb::object fn = nb::cpp_function(std::forward<F>(f), nb::name(name), nb::is_method(), nb::scope(cls), extra...);
  nb::setattr(cls, name, fn);
  (void)m;
}

}  // namespace lucid::py
