// CPU kernels of the core ops (records in ops/core_*.cpp): Copy (the converting strided copy
// behind cast, clone and copy_), Fill, AsStridedScatter, and the core reductions Sum and SumTo,
// which run the reduce family's row-reduction driver (reduce_sum_into).
#include "lucid/backends/cpu/reduce_loops.h"
#include "lucid/backends/cpu/strided_copy.h"
#include "lucid/ops/core.h"
#include "lucid/ops/view_util.h"

namespace lucid::cpu {

namespace {

void copy_kernel(const TensorList& in, const TensorList& out, const Attrs&) { copy_into(out[0], in[0]); }

void fill_kernel(const TensorList&, const TensorList& out, const Attrs& a) { fill(out[0], a.f("value")); }

void as_strided_scatter_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  copy_into(out[0], in[0]);
  copy_into(strided_region(out[0], a), in[1]);
}

void sum_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  reduce_sum_into(in[0], reduce_dims(a.ints("dims"), in[0].ndim(), "sum"), out[0]);
}

// The broadcast dims of x relative to the target shape: leading extra dims, and dims where the
// target has size 1 and x does not. The shared row-reduction driver does the summing.
void sum_to_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  const Tensor& x = in[0];
  const Shape& target = out[0].shape();
  int64_t lead = x.ndim() - static_cast<int64_t>(target.size());
  IntList dims;
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (d < lead || (target[d - lead] == 1 && x.shape()[d] != 1)) dims.push_back(d);
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
LUCID_REGISTER_KERNEL(AsStridedScatter, CPU, as_strided_scatter_kernel);
LUCID_REGISTER_KERNEL(Sum, CPU, sum_kernel);
LUCID_REGISTER_KERNEL(SumTo, CPU, sum_to_kernel);

}  // namespace lucid::cpu
