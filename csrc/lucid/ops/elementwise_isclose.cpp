// isclose / allclose: composites of elementwise ops (no OpDef of their own, so a trace records
// their parts and the compiler fuses them). PyTorch's rule: a == b, or (equal_nan and both NaN),
// or |a - b| <= atol + rtol * |b| with a finite difference; integer and bool inputs are compared
// in the default float dtype past the exact equality test, as PyTorch does (so uint8 differences
// never wrap). Errors are RuntimeError, as PyTorch's.
#include "lucid/compile/trace/trace_hook.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/reduce.h"

namespace lucid {

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  LUCID_CHECK(a.dtype() == b.dtype(), Error, "isclose: expected 'input' and 'other' to have the same dtype, got ",
              dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  LUCID_CHECK(rtol >= 0, Error, "isclose: argument 'rtol' must be greater than or equal to zero, got ", rtol);
  LUCID_CHECK(atol >= 0, Error, "isclose: argument 'atol' must be greater than or equal to zero, got ", atol);
  Tensor close = eq(a, b);
  if (equal_nan && is_floating(a.dtype())) close = logical_or(close, logical_and(isnan(a), isnan(b)));
  if (rtol == 0 && atol == 0) return close;
  Tensor x = is_floating(a.dtype()) ? a : cast(a, default_float_dtype());
  Tensor y = is_floating(b.dtype()) ? b : cast(b, default_float_dtype());
  Tensor allowed = add(abs(mul(y, scalar_tensor(rtol))), scalar_tensor(atol));
  Tensor actual = abs(sub(x, y));
  Tensor finite = logical_not(logical_or(isnan(actual), isinf(actual)));
  return logical_or(close, logical_and(finite, le(actual, allowed)));
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  Tensor r = all(isclose(a, b, rtol, atol, equal_nan));
  // A Python bool: its value steers host control flow, so a trace cannot record it.
  if (TraceHook* h = current_trace_hook()) h->on_host_read(r, "allclose");
  return *host_copy(r).data<bool>();
}

}  // namespace lucid
