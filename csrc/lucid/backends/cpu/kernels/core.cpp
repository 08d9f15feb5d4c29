// CPU kernels of the core ops (records in ops/core_*.cpp): Copy (the converting strided copy
// behind cast, clone and copy_), Fill, and the core reductions Sum and SumTo, which run the reduce
// family's row-reduction driver (reduce_sum_into). AsStridedScatter's is ops/movement_plan.h's,
// registered with the movement kernels (movement.cpp).
#include "lucid/backends/cpu/reduce_loops.h"
#include "lucid/backends/cpu/strided_copy.h"
#include "lucid/ops/core.h"

namespace lucid::cpu {

namespace {

void copy_kernel(const TensorList& in, const TensorList& out, const Attrs&) { copy_into(out[0], in[0]); }

void fill_kernel(const TensorList&, const TensorList& out, const Attrs& a) { fill(out[0], a.f("value")); }

void sum_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  reduce_sum_into(in[0], reduce_attr_dims(a, in[0].ndim(), "sum"), out[0]);
}

// The broadcast dims of x relative to the target shape (sum_to_dims); the shared row-reduction
// driver does the summing.
void sum_to_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  const Tensor& x = in[0];
  IntList dims = sum_to_dims(x.shape(), out[0].shape());
  if (dims.empty()) {
    copy_into(out[0], x);
    return;
  }
  reduce_sum_into(x, dims, out[0]);
}

}  // namespace

LUCID_REGISTER_KERNEL(Copy, CPU, copy_kernel);
LUCID_REGISTER_KERNEL(ToDevice, CPU, copy_kernel);  // cpu -> cpu (another device's kernel handles transfers)
LUCID_REGISTER_KERNEL(Fill, CPU, fill_kernel);
LUCID_REGISTER_KERNEL(Sum, CPU, sum_kernel);
LUCID_REGISTER_KERNEL(SumTo, CPU, sum_to_kernel);

}  // namespace lucid::cpu
