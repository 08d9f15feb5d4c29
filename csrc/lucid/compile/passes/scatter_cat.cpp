// Sums of slice-scatters into zeros become one Cat. The backward of split/chunk/unbind (and of any
// set of slices of one tensor) gives each slice's gradient as SliceScatter(zeros, g_i, range_i)
// and autograd adds them up: every term writes and reads a full-size tensor that is zero outside
// its slice. When the ranges are disjoint slices of one dimension (step 1) that together cover
// it, the sum is exactly Cat(g_1, g_2, ...) in range order: one write instead of k full
// SliceScatters and k - 1 adds (the packed q/k/v in-projection's gradient in attention).
//
// Matched: SliceScatter(Z, g) with Z an Expand of an all-zero constant (or such a constant),
// one dim, step 1, 0 <= start < end <= size, g of the slice's exact shape and Z's dtype; an Add
// of two such sets over the same shape, dtype and dim with disjoint ranges is a set again (its
// result's dtype and shape unchanged). An Add whose set covers the whole dim is replaced by Cat;
// partial sums, unless used elsewhere, are then dead and go with DCE.
//
// Exactness: g + 0 is g for every float but -0.0 (which the sum turns into +0.0, the Cat keeps),
// as for x + 0 in simplify. The Cat is a new node, so a sum the caller sees (a gradient output)
// may be replaced too: it still gets a tensor of its own.
#include <algorithm>
#include <optional>

#include "lucid/compile/passes/passes.h"

namespace lucid::ir {

namespace {

bool zero_base(const Graph& g, int id) {
  if (constant_equal_to(g, id, 0)) return true;
  const Value& v = g.value(id);
  if (v.kind != ValueKind::Node) return false;
  const Node& n = g.nodes()[v.producer];
  return n.op == OpId::Expand && !n.body && constant_equal_to(g, n.inputs.at(0), 0);
}

// A sum of slice-scatters into zeros: pieces (start, end, source value) along dim.
struct ScatterSet {
  int64_t dim;
  std::vector<std::tuple<int64_t, int64_t, int>> pieces;
};

std::optional<ScatterSet> as_single(const Graph& g, const Node& n) {
  if (n.body || n.op != OpId::SliceScatter || n.inputs.size() != 2 || !zero_base(g, n.inputs[0])) return std::nullopt;
  const IntList &dims = n.attrs.ints("dims"), &starts = n.attrs.ints("starts"), &ends = n.attrs.ints("ends"),
                &steps = n.attrs.ints("steps");
  if (dims.size() != 1 || steps.size() != 1 || steps[0] != 1 || starts.size() != 1 || ends.size() != 1) return std::nullopt;
  const Value &out = g.value(n.outputs[0]), &src = g.value(n.inputs[1]);
  const int64_t nd = static_cast<int64_t>(out.shape.size()), d = dims[0] < 0 ? dims[0] + nd : dims[0];
  if (d < 0 || d >= nd || starts[0] < 0 || ends[0] > out.shape[d] || starts[0] >= ends[0]) return std::nullopt;
  Shape region = out.shape;
  region[d] = ends[0] - starts[0];
  if (src.shape != region || src.dtype != out.dtype) return std::nullopt;
  return ScatterSet{d, {{starts[0], ends[0], n.inputs[1]}}};
}

}  // namespace

Graph scatter_sums_to_cat(const Graph& g) {
  std::vector<std::optional<ScatterSet>> set(g.values().size());
  Rewriter r(g);
  for (const Node& n : g.nodes()) {
    if (n.outputs.size() == 1) {
      const int o = n.outputs[0];
      if (auto s = as_single(g, n)) {
        set[o] = std::move(s);
      } else if (!n.body && n.op == OpId::Add && n.inputs.size() == 2 && n.inputs[0] >= 0 && n.inputs[1] >= 0 &&
                 set[n.inputs[0]] && set[n.inputs[1]]) {
        const ScatterSet &a = *set[n.inputs[0]], &b = *set[n.inputs[1]];
        const Value &va = g.value(n.inputs[0]), &vb = g.value(n.inputs[1]), &vo = g.value(o);
        if (a.dim == b.dim && va.shape == vb.shape && va.shape == vo.shape && va.dtype == vb.dtype && va.dtype == vo.dtype) {
          ScatterSet u{a.dim, a.pieces};
          u.pieces.insert(u.pieces.end(), b.pieces.begin(), b.pieces.end());
          std::sort(u.pieces.begin(), u.pieces.end());
          bool disjoint = true;
          for (size_t i = 1; i < u.pieces.size(); ++i) disjoint = disjoint && std::get<1>(u.pieces[i - 1]) <= std::get<0>(u.pieces[i]);
          if (disjoint) {
            bool covers = std::get<0>(u.pieces.front()) == 0 && std::get<1>(u.pieces.back()) == vo.shape[u.dim];
            for (size_t i = 1; covers && i < u.pieces.size(); ++i)
              covers = std::get<1>(u.pieces[i - 1]) == std::get<0>(u.pieces[i]);
            if (covers) {
              std::vector<int> srcs;
              for (const auto& p : u.pieces) srcs.push_back(r.map(std::get<2>(p)));
              int c = r.add(OpId::Cat, srcs, Attrs{{"dim", u.dim}}, {vo.meta()})[0];
              r.set(o, c);
              continue;
            }
            set[o] = std::move(u);
          }
        }
      }
    }
    r.copy(n);
  }
  return r.finish();
}

}  // namespace lucid::ir
