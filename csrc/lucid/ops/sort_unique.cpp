// torch.unique and torch.unique_consecutive. Their output sizes depend on the data, so they are
// not ops of the registry (no OpDef: `infer` could not give a shape): they read the input on the
// host, which makes a trace fall back to eager, as `nonzero` does. With dim=None the flattened
// elements are grouped; with a dim, the slices along it (compared element by element,
// lexicographically ordered for unique). unique always returns sorted values (PyTorch's CPU
// unique does so for sorted=False too); NaN never equals anything, so each NaN is its own value.
// The outputs carry no autograd history (PyTorch has no derivative for unique).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "lucid/compile/trace/trace_hook.h"
#include "lucid/ops/movement.h"
#include "lucid/ops/reduce_util.h"
#include "lucid/ops/sort.h"

namespace lucid {

namespace {

// x as a contiguous [rows, width] block of compute values (rows: the flat elements with
// dim=None, else the slices along dim), plus the row order and group boundaries.
template <class C>
struct Grouping {
  std::vector<C> v;
  int64_t rows = 0, width = 1;
  bool row_less(int64_t a, int64_t b) const {  // lexicographic, NaN as the largest value
    for (int64_t k = 0; k < width; ++k) {
      C x = v[a * width + k], y = v[b * width + k];
      if (x == y) continue;
      if (is_nan_v(x) || is_nan_v(y)) {
        if (is_nan_v(x) && is_nan_v(y)) continue;
        return is_nan_v(y);
      }
      return x < y;
    }
    return false;
  }
  bool row_equal(int64_t a, int64_t b) const {
    for (int64_t k = 0; k < width; ++k)
      if (!(v[a * width + k] == v[b * width + k])) return false;
    return true;
  }
};

// The rows of x along `dim` (moved to the front), detached: unique has no gradient.
Tensor rows_view(const Tensor& x, std::optional<int64_t> dim, const char* op) {
  Tensor d = x.detach();
  if (!dim) return reshape(d, {-1});
  LUCID_CHECK(x.ndim() > 0, IndexError, op, ": argument 'dim' given as ", *dim, " but the tensor has no dimensions");
  int64_t w = wrap_dim(*dim, x.ndim(), op);
  for (int64_t i = 0; i < x.ndim(); ++i)
    LUCID_CHECK(i == w || x.shape()[i] != 0, Error, op, ": there are 0 sized dimensions that are not argument 'dim' (",
                *dim, "), so the slices along dim are empty and cannot be compared, got shape ", shape_str(x.shape()));
  return movedim(d, {w}, {0});
}

// Groups the rows in `order` (consecutive equal rows form a group) and builds the outputs.
template <class C>
UniqueResult finish(const Grouping<C>& G, const std::vector<int64_t>& order, const Tensor& x,
                    std::optional<int64_t> dim, bool want_inverse, bool want_counts, const char* op) {
  std::vector<int64_t> firsts, counts;
  std::vector<int64_t> inverse(G.rows);
  for (int64_t p = 0; p < G.rows; ++p) {
    if (p == 0 || !G.row_equal(order[p - 1], order[p])) {
      firsts.push_back(order[p]);
      counts.push_back(0);
    }
    ++counts.back();
    inverse[order[p]] = static_cast<int64_t>(firsts.size()) - 1;
  }
  int64_t u = static_cast<int64_t>(firsts.size());
  Tensor sel = Tensor::empty({u}, DType::Int64);
  std::copy(firsts.begin(), firsts.end(), sel.data<int64_t>());
  sel = on_device(sel, x.device());
  UniqueResult r;
  Tensor d = x.detach();
  if (dim) r.values = index_select(d, wrap_dim(*dim, x.ndim(), op), sel);
  else r.values = index_select(reshape(d, {-1}), 0, sel);
  if (want_inverse) {
    Shape s = dim ? Shape{G.rows} : x.shape();
    r.inverse = Tensor::empty(s, DType::Int64);
    std::copy(inverse.begin(), inverse.end(), r.inverse.data<int64_t>());
    r.inverse = on_device(r.inverse, x.device());
  }
  if (want_counts) {
    r.counts = Tensor::empty({u}, DType::Int64);
    std::copy(counts.begin(), counts.end(), r.counts.data<int64_t>());
    r.counts = on_device(r.counts, x.device());
  }
  return r;
}

UniqueResult run_unique(const Tensor& x, bool want_inverse, bool want_counts, std::optional<int64_t> dim, bool sort_rows,
                        const char* op) {
  if (TraceHook* h = current_trace_hook()) h->on_host_read(x, op);
  Tensor rv = host_copy(rows_view(x, dim, op));
  UniqueResult out;
  LUCID_DISPATCH_ALL(x.dtype(), op, [&] {
    using C = compute_t<scalar_t>;
    Grouping<C> G;
    G.rows = rv.ndim() == 0 ? 1 : rv.shape()[0];
    G.width = G.rows == 0 ? 1 : rv.numel() / G.rows;
    const scalar_t* p = rv.data<scalar_t>();
    G.v.resize(rv.numel());
    for (int64_t i = 0; i < rv.numel(); ++i) G.v[i] = static_cast<C>(p[i]);
    std::vector<int64_t> order(G.rows);
    std::iota(order.begin(), order.end(), 0);
    if (sort_rows && G.width == 1) {  // elements: sort (value, index) pairs directly, NaN last
      std::vector<std::pair<C, int64_t>> kv(G.rows);
      for (int64_t i = 0; i < G.rows; ++i) kv[i] = {G.v[i], i};
      std::sort(kv.begin(), kv.end(), [](const auto& a, const auto& b) {
        return a.first < b.first || (!is_nan_v(a.first) && is_nan_v(b.first));
      });
      for (int64_t i = 0; i < G.rows; ++i) order[i] = kv[i].second;
    } else if (sort_rows) {
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return G.row_less(a, b); });
    }
    out = finish(G, order, x, dim, want_inverse, want_counts, op);
  });
  return out;
}

}  // namespace

UniqueResult unique(const Tensor& x, bool return_inverse, bool return_counts, std::optional<int64_t> dim) {
  return run_unique(x, return_inverse, return_counts, dim, true, "unique");
}

UniqueResult unique_consecutive(const Tensor& x, bool return_inverse, bool return_counts, std::optional<int64_t> dim) {
  return run_unique(x, return_inverse, return_counts, dim, false, "unique_consecutive");
}

}  // namespace lucid
