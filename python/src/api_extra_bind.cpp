// Small engine entry points the Python composites of lucid/_ops_math.py and friends need:
// `_wrapped_scalar(x)` turns a Python number into the 0-d wrapped-number tensor the bindings make
// for number operands, so a composite given two numbers (or a number first) promotes as torch does.
#include "bind.h"

namespace lucid::py {

LUCID_BINDER(api_extra) {
  m.def("_wrapped_scalar", [](nb::handle h) { return to_tensor(h, "scalar", "value"); }, nb::arg("value"));
}

}  // namespace lucid::py
