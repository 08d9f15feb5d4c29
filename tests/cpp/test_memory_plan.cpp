// Memory plan tests. Small IR graphs with plans derived by hand from the rules (kinds, view
// lifetimes, escaping outputs, assigns, in-place handover, best-fit packing); and, on those and
// on random graphs, two independent checks written here without the planner's code:
//   check_plan     recomputes every lifetime and asserts that no two live values share bytes
//                  (except a legal in-place handover at its node), that outputs never live in the
//                  arena, and that the arena is at most the sum of the aligned sizes;
//   run_planned    executes the graph the way the runtime will (arena values at their offsets in
//                  one garbage-filled buffer reused across calls, fresh outputs, views made by the
//                  view op, elementwise kernels really in place) and compares with the reference
//                  interpreter, so a plan that overlaps live values gives wrong numbers.
// Plans the runtime must cope with (empty values at offset 0 of a 0-byte arena) also run on the
// real rt::Executable.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "lucid/compile/ir/interpret.h"
#include "lucid/compile/passes/passes.h"
#include "lucid/compile/runtime/executable.h"

using namespace lucid;
using ir::MemoryPlan;

namespace {

int64_t nbytes(const ir::Value& v) { return numel_of(v.shape) * static_cast<int64_t>(itemsize(v.dtype)); }

bool produced_by_view(const ir::Graph& g, int v) {
  const ir::Value& val = g.value(v);
  return val.kind == ir::ValueKind::Node && op_def(g.nodes()[val.producer].op).view != nullptr;
}

// The value whose storage v uses: walk view ops back to a non-view value.
int storage_root(const ir::Graph& g, int v) {
  while (produced_by_view(g, v)) v = g.nodes()[g.value(v).producer].inputs[0];
  return v;
}

bool elementwise(const ir::Node& n) {
  return n.op == OpId::FusedElementwise || op_def(n.op).lowering == Lowering::Elementwise;
}

// A value written straight into its assign target t: it is the last value assigned to t and is
// assigned nowhere else; no node after its producer reads t (directly or through a view), no
// output's storage is t, and its producer reads t only directly and only if elementwise.
void check_into_target(const ir::Graph& g, const MemoryPlan& p, int v) {
  ASSERT_EQ(p.target.size(), g.values().size());
  const int t = p.target[v];
  ASSERT_GE(t, 0) << "%" << v << " planned into a target, but names none";
  const ir::Value &tv = g.value(t), &vv = g.value(v);
  EXPECT_TRUE(tv.kind == ir::ValueKind::State || tv.kind == ir::ValueKind::Input) << "%" << v << " into %" << t;
  EXPECT_TRUE(tv.shape == vv.shape && tv.dtype == vv.dtype) << "%" << v << " into %" << t;
  int last_value = -1, times = 0;
  for (const ir::Assign& a : g.assigns()) {
    if (a.state == t) last_value = a.value;
    times += a.value == v;
  }
  EXPECT_EQ(last_value, v) << "%" << v << " is not the final value of %" << t;
  EXPECT_EQ(times, 1) << "%" << v << " is assigned more than once";
  const int n = vv.producer;
  for (size_t m = n + 1; m < g.nodes().size(); ++m)
    for (int in : g.nodes()[m].inputs)
      EXPECT_FALSE(in >= 0 && storage_root(g, in) == t) << "node " << m << " reads %" << t << " after %" << v
                                                        << " was written into it";
  for (int o : g.outputs()) EXPECT_NE(storage_root(g, o), t) << "an output is %" << t << " or a view of it";
  for (int in : g.nodes()[n].inputs)
    if (in >= 0 && storage_root(g, in) == t)
      EXPECT_TRUE(in == t && elementwise(g.nodes()[n])) << "%" << v << "'s producer reads %" << t
                                                        << " other than elementwise and directly";
}

void check_plan(const ir::Graph& g, const MemoryPlan& p) {
  const int nv = static_cast<int>(g.values().size()), end = static_cast<int>(g.nodes().size());
  ASSERT_EQ(p.offset.size(), static_cast<size_t>(nv));
  std::vector<bool> escapes(nv, false);
  for (int o : g.outputs()) escapes[storage_root(g, o)] = true;
  std::vector<int> arena;
  int64_t aligned_sum = 0;
  bool has_empty = false;
  for (int v = 0; v < nv; ++v) {
    const ir::Value& val = g.value(v);
    if (val.kind != ir::ValueKind::Node) EXPECT_EQ(p.offset[v], MemoryPlan::kExternal) << "%" << v;
    else if (produced_by_view(g, v)) EXPECT_EQ(p.offset[v], MemoryPlan::kAlias) << "%" << v;
    else if (p.offset[v] == MemoryPlan::kTarget) check_into_target(g, p, v);
    else if (escapes[v]) EXPECT_EQ(p.offset[v], MemoryPlan::kFresh) << "%" << v << " escapes the call";
    else {
      EXPECT_GE(p.offset[v], 0) << "%" << v << " should live in the arena";
      if (p.offset[v] < 0) continue;
      EXPECT_EQ(p.offset[v] % 64, 0) << "%" << v;
      EXPECT_LE(p.offset[v] + nbytes(val), p.arena_bytes) << "%" << v;
      arena.push_back(v);
      aligned_sum += (nbytes(val) + 63) / 64 * 64;
      has_empty |= nbytes(val) == 0;
    }
  }
  EXPECT_LE(p.arena_bytes, aligned_sum);

  // Lifetimes, recomputed: [producer, last node reading it or any view of it], end if assigned.
  std::vector<int> first(nv, 0), last(nv, 0);
  for (int v : arena) first[v] = last[v] = g.value(v).producer;
  for (int n = 0; n < end; ++n)
    for (int in : g.nodes()[n].inputs)
      if (in >= 0) last[storage_root(g, in)] = std::max(last[storage_root(g, in)], n);
  for (const ir::Assign& a : g.assigns()) last[storage_root(g, a.value)] = end;

  int handovers = 0;
  std::vector<bool> donated(nv, false);
  for (size_t i = 0; i < arena.size(); ++i)
    for (size_t j = i + 1; j < arena.size(); ++j) {
      int u = arena[i], v = arena[j];
      if (first[u] > first[v]) std::swap(u, v);
      bool same_time = first[v] <= last[u];
      bool same_bytes = p.offset[u] < p.offset[v] + nbytes(g.value(v)) && p.offset[v] < p.offset[u] + nbytes(g.value(u));
      if (!same_time || !same_bytes) continue;
      // Legal only as an in-place handover: u dies at v's elementwise producer, which reads u
      // directly and through no view, and u has v's shape and dtype.
      const ir::Node& n = g.nodes()[first[v]];
      bool reads_u = false, reads_u_view = false;
      for (int in : n.inputs) {
        reads_u |= in == u;
        reads_u_view |= in != u && in >= 0 && storage_root(g, in) == u;
      }
      bool legal = p.offset[u] == p.offset[v] && last[u] == first[v] && elementwise(n) && reads_u && !reads_u_view &&
                   g.value(u).shape == g.value(v).shape && g.value(u).dtype == g.value(v).dtype && !donated[u];
      EXPECT_TRUE(legal) << "%" << u << " [" << first[u] << "," << last[u] << "] and %" << v << " [" << first[v] << ","
                         << last[v] << "] share bytes at offsets " << p.offset[u] << " and " << p.offset[v];
      donated[u] = true;
      ++handovers;
    }
  if (!has_empty) {
    EXPECT_EQ(p.in_place, handovers);  // an empty handover overlaps no bytes
  }
}

Tensor random_tensor(const ir::Value& v, std::mt19937& rng) {
  Tensor t = Tensor::empty(v.shape, v.dtype);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  float* d = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = u(rng);
  return t;
}

// A contiguous tensor at `off` bytes inside the arena.
Tensor arena_tensor(const std::shared_ptr<Storage>& arena, int64_t off, const ir::Value& v) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::wrap(static_cast<char*>(arena->data) + off, static_cast<size_t>(nbytes(v)), arena);
  impl->shape = v.shape;
  impl->strides = contiguous_strides(v.shape);
  impl->dtype = v.dtype;
  return Tensor(impl);
}

Tensor copy_of(const Tensor& t) {
  Tensor c = t.contiguous_data(), r = Tensor::empty(t.shape(), t.dtype());
  if (t.numel() > 0) std::memcpy(r.data_ptr(), c.data_ptr(), static_cast<size_t>(t.numel()) * itemsize(t.dtype()));
  return r;
}

// Runs g with the plan: the runtime's memory behaviour, with eager kernels for the compute.
TensorList run_planned(const ir::Graph& g, const MemoryPlan& p, const std::shared_ptr<Storage>& arena,
                       const TensorList& inputs, const TensorList& states, TensorList* new_states) {
  std::memset(arena->data, 0xff, arena->nbytes);  // NaN garbage: a value read before written shows
  // The runtime writes kTarget values into the fed tensors: feed copies, so the caller's stay as they were.
  std::vector<Tensor> v(g.values().size());
  TensorList fed_states;
  for (size_t i = 0; i < inputs.size(); ++i) v[g.inputs()[i]] = copy_of(inputs[i]);
  for (size_t i = 0; i < states.size(); ++i) fed_states.push_back(v[g.states()[i]] = copy_of(states[i]));
  for (int id : g.consts()) v[id] = g.const_data(g.value(id).slot);
  for (const ir::Node& n : g.nodes()) {
    TensorList ins, outs;
    for (int in : n.inputs) ins.push_back(in < 0 ? Tensor() : v[in]);
    const OpDef& def = op_def(n.op);
    if (def.view) {
      outs = def.view(ins, n.attrs);
    } else {
      for (int o : n.outputs)
        outs.push_back(p.offset[o] >= 0                       ? arena_tensor(arena, p.offset[o], g.value(o))
                       : p.offset[o] == MemoryPlan::kTarget ? v[p.target[o]]
                                                             : Tensor::empty(g.value(o).shape, g.value(o).dtype));
      if (n.body) {
        TensorList r = ir::interpret(*n.body, ins, {});
        for (size_t k = 0; k < r.size(); ++k)
          if (r[k].numel() > 0) std::memcpy(outs[k].data_ptr(), r[k].contiguous_data().data_ptr(), nbytes(g.value(n.outputs[k])));
      } else {
        def.kernel(DeviceType::CPU)(ins, outs, n.attrs);
      }
    }
    for (size_t k = 0; k < outs.size(); ++k) v[n.outputs[k]] = outs[k];
  }
  *new_states = fed_states;
  for (const ir::Assign& a : g.assigns()) (*new_states)[g.value(a.state).slot] = copy_of(v[a.value]);
  TensorList r;
  for (int id : g.outputs()) r.push_back(v[id]);
  return r;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor x = a.contiguous_data(), y = b.contiguous_data();
  if (a.dtype() != DType::Float32) return std::memcmp(x.data_ptr(), y.data_ptr(), itemsize(a.dtype()) * a.numel()) == 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    float p = x.data<float>()[i], q = y.data<float>()[i];
    if (!(std::fabs(p - q) <= 1e-5f * std::max(1.0f, std::fabs(q)))) return false;
  }
  return true;
}

// Two planned calls sharing one arena, each compared with the reference interpreter; the first
// call's results are compared after the second ran, so an output left in the arena is caught.
// Returns whether everything matched.
bool planned_matches_reference(const ir::Graph& g, const MemoryPlan& p, uint32_t seed) {
  std::mt19937 rng(seed);
  auto arena = Storage::allocate(static_cast<size_t>(std::max<int64_t>(p.arena_bytes, 1)));
  std::vector<TensorList> got(2), want(2), got_states(2), want_states(2);
  for (int call = 0; call < 2; ++call) {
    TensorList ins, sts;
    for (int id : g.inputs()) ins.push_back(random_tensor(g.value(id), rng));
    for (int id : g.states()) sts.push_back(random_tensor(g.value(id), rng));
    want[call] = ir::interpret(g, ins, sts, &want_states[call]);
    got[call] = run_planned(g, p, arena, ins, sts, &got_states[call]);
  }
  bool ok = true;
  for (int call = 0; call < 2; ++call) {
    for (size_t k = 0; k < want[call].size(); ++k) ok &= same_tensor(got[call][k], want[call][k]);
    for (size_t k = 0; k < want_states[call].size(); ++k) ok &= same_tensor(got_states[call][k], want_states[call][k]);
  }
  return ok;
}

// Plans the graph and runs both independent checks on it; returns the plan's text.
std::string plan_and_check(const ir::Graph& g) {
  MemoryPlan p = ir::plan_memory(g);
  check_plan(g, p);
  EXPECT_TRUE(planned_matches_reference(g, p, 7)) << ir::print(g) << p.str(g);
  return p.str(g);
}

std::string plan_and_check(const std::string& text) { return plan_and_check(ir::parse(text)); }

std::shared_ptr<const ir::Graph> add_mul_body(const ir::Value& like) {
  auto b = std::make_shared<ir::Graph>();
  TensorMeta m{like.shape, like.dtype};
  int x = b->add_input(m.shape, m.dtype), y = b->add_input(m.shape, m.dtype);
  int s = b->add_node(OpId::Add, {x, y}, {}, {m})[0];
  int p = b->add_node(OpId::Mul, {s, y}, {}, {m})[0];
  b->set_outputs({s, p});
  return b;
}

}  // namespace

// A float32[4,4] is 64 bytes throughout, one alignment unit.

TEST(MemoryPlan, ElementwiseChainRunsInPlace) {
  EXPECT_EQ(plan_and_check("graph(%0: float32[4,4] input) {\n"
                           "  %1 = Neg(%0) : float32[4,4]\n"
                           "  %2 = Tanh(%1) : float32[4,4]\n"
                           "  %3 = Neg(%2) : float32[4,4]\n"
                           "  %4 = Tanh(%3) : float32[4,4]\n"
                           "  return (%4)\n"
                           "}\n"),
            "%1 arena[0,64)\n%2 arena[0,64)\n%3 arena[0,64)\n%4 fresh\narena_bytes=64 in_place=2 to_target=0\n");
}

TEST(MemoryPlan, KernelChainAlternatesTwoBuffers) {
  // A matmul's output must not alias its input: each value overlaps its neighbours only.
  EXPECT_EQ(plan_and_check("graph(%0: float32[4,4] input) {\n"
                           "  %1 = Matmul(%0, %0) : float32[4,4]\n"
                           "  %2 = Matmul(%1, %1) : float32[4,4]\n"
                           "  %3 = Matmul(%2, %2) : float32[4,4]\n"
                           "  %4 = Matmul(%3, %3) : float32[4,4]\n"
                           "  return (%4)\n"
                           "}\n"),
            "%1 arena[0,64)\n%2 arena[64,128)\n%3 arena[0,64)\n%4 fresh\narena_bytes=128 in_place=0 to_target=0\n");
}

TEST(MemoryPlan, BinaryOpTakesItsFirstDyingInput) {
  EXPECT_EQ(plan_and_check("graph(%0: float32[4,4] input) {\n"
                           "  %1 = Matmul(%0, %0) : float32[4,4]\n"
                           "  %2 = Exp(%0) : float32[4,4]\n"
                           "  %3 = Add(%1, %2) : float32[4,4]\n"
                           "  %4 = Matmul(%3, %3) : float32[4,4]\n"
                           "  return (%4)\n"
                           "}\n"),
            "%1 arena[0,64)\n%2 arena[64,128)\n%3 arena[0,64)\n%4 fresh\narena_bytes=128 in_place=1 to_target=0\n");
}

TEST(MemoryPlan, ViewsKeepTheirBaseAlive) {
  // %1 is last read through %2 at node 4, so it overlaps %3 and %5; alias inputs are never
  // taken over in place (%5 gets its own buffer).
  EXPECT_EQ(plan_and_check("graph(%0: float32[4,4] input) {\n"
                           "  %1 = Neg(%0) : float32[4,4]\n"
                           "  %2 = Reshape(%1) {shape=[16]} : float32[16]\n"
                           "  %3 = Matmul(%0, %0) : float32[4,4]\n"
                           "  %4 = Reshape(%3) {shape=[16]} : float32[16]\n"
                           "  %5 = Add(%2, %4) : float32[16]\n"
                           "  %6 = Neg(%5) : float32[16]\n"
                           "  return (%6)\n"
                           "}\n"),
            "%1 arena[0,64)\n%2 alias\n%3 arena[64,128)\n%4 alias\n%5 arena[128,192)\n%6 fresh\n"
            "arena_bytes=192 in_place=0 to_target=0\n");
}

TEST(MemoryPlan, OutputViewsMakeTheirBaseFresh) {
  EXPECT_EQ(plan_and_check("graph(%0: float32[4,4] input) {\n"
                           "  %1 = Matmul(%0, %0) : float32[4,4]\n"
                           "  %2 = Reshape(%1) {shape=[16]} : float32[16]\n"
                           "  %3 = Slice(%2) {dims=[0], starts=[2], ends=[10], steps=[1]} : float32[8]\n"
                           "  %4 = Neg(%0) : float32[4,4]\n"
                           "  %5 = Permute(%4) {dims=[1,0]} : float32[4,4]\n"
                           "  %6 = Permute(%0) {dims=[1,0]} : float32[4,4]\n"
                           "  return (%3, %5, %6)\n"
                           "}\n"),
            "%1 fresh\n%2 alias\n%3 alias\n%4 fresh\n%5 alias\n%6 alias\narena_bytes=0 in_place=0 to_target=0\n");
}

TEST(MemoryPlan, AssignedValuesLiveToTheEnd) {
  // Without the assign %3 would take %2's buffer in place (as in ElementwiseChainRunsInPlace);
  // the assign keeps %2 live to the end, so %3 needs a buffer of its own. (%2 can't be written
  // straight into %1: the Matmul reads %1 after %2 is made.)
  EXPECT_EQ(plan_and_check("graph(%0: float32[4,4] input, %1: float32[4,4] state) {\n"
                           "  %2 = Neg(%0) : float32[4,4]\n"
                           "  %3 = Neg(%2) : float32[4,4]\n"
                           "  %4 = Matmul(%3, %1) : float32[4,4]\n"
                           "  assign %1 <- %2\n"
                           "  return (%4)\n"
                           "}\n"),
            "%2 arena[0,64)\n%3 arena[64,128)\n%4 fresh\narena_bytes=128 in_place=0 to_target=0\n");
  // The same through a view: assigning %3 keeps its base %2 to the end.
  EXPECT_EQ(plan_and_check("graph(%0: float32[4,4] input, %1: float32[4,4] state) {\n"
                           "  %2 = Neg(%0) : float32[4,4]\n"
                           "  %3 = Permute(%2) {dims=[1,0]} : float32[4,4]\n"
                           "  %4 = Neg(%2) : float32[4,4]\n"
                           "  %5 = Matmul(%4, %4) : float32[4,4]\n"
                           "  assign %1 <- %3\n"
                           "  return (%5)\n"
                           "}\n"),
            "%2 arena[0,64)\n%3 alias\n%4 arena[64,128)\n%5 fresh\narena_bytes=128 in_place=0 to_target=0\n");
}

TEST(MemoryPlan, FinalValuesGoStraightIntoTheirTargets) {
  // An optimizer-like update: the new moment %5 and parameter %7 are written into %2 and %1 by
  // their nodes. The Add reading %2 elementwise and directly may write into %2; %3 (read by the
  // Matmul after the Neg) can't take the Neg's result; the superseded first write to %2 (%4)
  // stays in the arena, and %6 (assigned to two targets) goes into neither.
  EXPECT_EQ(plan_and_check("graph(%0: float32[4,4] input, %1: float32[4,4] state, %2: float32[4,4] state, "
                           "%3: float32[4,4] state, %4: float32[4,4] state, %5: float32[4,4] state) {\n"
                           "  %6 = Mul(%0, %0) : float32[4,4]\n"
                           "  %7 = Add(%2, %6) : float32[4,4]\n"
                           "  %8 = Sub(%1, %7) : float32[4,4]\n"
                           "  %9 = Neg(%0) : float32[4,4]\n"
                           "  %10 = Matmul(%9, %3) : float32[4,4]\n"
                           "  %11 = Exp(%0) : float32[4,4]\n"
                           "  assign %2 <- %6\n"
                           "  assign %2 <- %7\n"
                           "  assign %1 <- %8\n"
                           "  assign %3 <- %9\n"
                           "  assign %4 <- %11\n"
                           "  assign %5 <- %11\n"
                           "  return (%10)\n"
                           "}\n"),
            "%6 arena[0,64)\n%7 into %2\n%8 into %1\n%9 arena[64,128)\n%10 fresh\n%11 arena[128,192)\n"
            "arena_bytes=192 in_place=0 to_target=2\n");
  // Not into the target: a non-elementwise node reading it (Matmul, %1), an elementwise node
  // reading it through a view (%2), a target with a view that is an output (%3), a target read
  // through a view by a later node (%4). %14 reads a view of %3 and goes into %5.
  EXPECT_EQ(plan_and_check("graph(%0: float32[4,4] input, %1: float32[4,4] state, %2: float32[4,4] state, "
                           "%3: float32[4,4] state, %4: float32[4,4] state, %5: float32[16] state) {\n"
                           "  %6 = Matmul(%0, %1) : float32[4,4]\n"
                           "  %7 = Permute(%2) {dims=[1,0]} : float32[4,4]\n"
                           "  %8 = Add(%7, %0) : float32[4,4]\n"
                           "  %9 = Reshape(%3) {shape=[16]} : float32[16]\n"
                           "  %10 = Neg(%0) : float32[4,4]\n"
                           "  %11 = Neg(%10) : float32[4,4]\n"
                           "  %12 = Permute(%4) {dims=[1,0]} : float32[4,4]\n"
                           "  %13 = Add(%12, %12) : float32[4,4]\n"
                           "  %14 = Exp(%9) : float32[16]\n"
                           "  assign %1 <- %6\n"
                           "  assign %2 <- %8\n"
                           "  assign %3 <- %10\n"
                           "  assign %4 <- %11\n"
                           "  assign %5 <- %14\n"
                           "  return (%9, %13)\n"
                           "}\n"),
            "%6 arena[0,64)\n%7 alias\n%8 arena[64,128)\n%9 alias\n%10 arena[128,192)\n%11 arena[192,256)\n%12 alias\n"
            "%13 fresh\n%14 into %5\narena_bytes=256 in_place=0 to_target=1\n");
}

TEST(MemoryPlan, LaterReaderBlocksInPlace) {
  EXPECT_EQ(plan_and_check("graph(%0: float32[4,4] input) {\n"
                           "  %1 = Neg(%0) : float32[4,4]\n"
                           "  %2 = Neg(%1) : float32[4,4]\n"
                           "  %3 = Add(%1, %2) : float32[4,4]\n"
                           "  return (%3)\n"
                           "}\n"),
            "%1 arena[0,64)\n%2 arena[64,128)\n%3 fresh\narena_bytes=128 in_place=0 to_target=0\n");
}

TEST(MemoryPlan, InPlaceNeedsTheSameShapeAndDtype) {
  // %2 (bool, 16 bytes) dies into Where's float output: no handover. %5 ([4]) and %4 ([4,4])
  // both die into the [4,4] Add: %5 is skipped for its shape, %4 is taken over.
  EXPECT_EQ(plan_and_check("graph(%0: float32[4,4] input, %1: float32[4] input) {\n"
                           "  %2 = Gt(%0, %0) : bool[4,4]\n"
                           "  %3 = Where(%2, %0, %0) : float32[4,4]\n"
                           "  %4 = Matmul(%3, %3) : float32[4,4]\n"
                           "  %5 = Neg(%1) : float32[4]\n"
                           "  %6 = Add(%5, %4) : float32[4,4]\n"
                           "  %7 = Matmul(%6, %6) : float32[4,4]\n"
                           "  return (%7)\n"
                           "}\n"),
            "%2 arena[0,16)\n%3 arena[64,128)\n%4 arena[0,64)\n%5 arena[64,80)\n%6 arena[0,64)\n%7 fresh\n"
            "arena_bytes=128 in_place=1 to_target=0\n");
}

TEST(MemoryPlan, ViewReadAtTheSameNodeBlocksInPlace) {
  // %1 dies at node 2, but node 2 also reads it transposed through %2: writing %3 over %1
  // would clobber elements %2 still has to read.
  ir::Graph g = ir::parse("graph(%0: float32[4,4] input) {\n"
                          "  %1 = Neg(%0) : float32[4,4]\n"
                          "  %2 = Permute(%1) {dims=[1,0]} : float32[4,4]\n"
                          "  %3 = Add(%1, %2) : float32[4,4]\n"
                          "  %4 = Matmul(%3, %3) : float32[4,4]\n"
                          "  return (%4)\n"
                          "}\n");
  EXPECT_EQ(plan_and_check(g), "%1 arena[0,64)\n%2 alias\n%3 arena[64,128)\n%4 fresh\narena_bytes=128 in_place=0 to_target=0\n");
  // Both checks catch the plan that would do it.
  MemoryPlan bad = ir::plan_memory(g);
  bad.offset[3] = bad.offset[1];
  bad.in_place = 1;
  EXPECT_NONFATAL_FAILURE(check_plan(g, bad), "share bytes");
  EXPECT_FALSE(planned_matches_reference(g, bad, 7));
}

TEST(MemoryPlan, FusedOutputsTakeDistinctInputs) {
  ir::Graph g;
  int x = g.add_input({4, 4}, DType::Float32);
  TensorMeta m{{4, 4}, DType::Float32};
  int a = g.add_node(OpId::Matmul, {x, x}, {}, {m})[0];
  int b = g.add_node(OpId::Exp, {x}, {}, {m})[0];
  std::vector<int> f = g.add_fused({a, b}, add_mul_body(g.value(a)), {m, m});
  g.set_outputs({g.add_node(OpId::Matmul, {f[0], f[1]}, {}, {m})[0]});
  EXPECT_EQ(plan_and_check(g),
            "%1 arena[0,64)\n%2 arena[64,128)\n%3 arena[0,64)\n%4 arena[64,128)\n%5 fresh\narena_bytes=128 in_place=2 to_target=0\n");
  // One dying input read twice gives its buffer to one output only.
  ir::Graph h;
  x = h.add_input({4, 4}, DType::Float32);
  a = h.add_node(OpId::Matmul, {x, x}, {}, {m})[0];
  f = h.add_fused({a, a}, add_mul_body(h.value(a)), {m, m});
  h.set_outputs({h.add_node(OpId::Matmul, {f[0], f[1]}, {}, {m})[0]});
  EXPECT_EQ(plan_and_check(h), "%1 arena[0,64)\n%2 arena[0,64)\n%3 arena[64,128)\n%4 fresh\narena_bytes=128 in_place=1 to_target=0\n");
}

TEST(MemoryPlan, BestFitPacksMixedSizes) {
  // Lifetimes: %2 [0,2] 256B, %3 [1,3], %4 [2,4] 256B, %5 [3,5], %6 [4,6], %7 [5,6] (64B each
  // after alignment). The 256-byte values go first; %5 then fits the gap below %4, %6 the gap
  // between %5 and %4. 576 is the peak of live bytes (node 2: %2, %3, %4), so it is optimal.
  EXPECT_EQ(plan_and_check("graph(%0: float32[8,8] input, %1: float32[4,4] input) {\n"
                           "  %2 = Matmul(%0, %0) : float32[8,8]\n"
                           "  %3 = Matmul(%1, %1) : float32[4,4]\n"
                           "  %4 = Matmul(%2, %2) : float32[8,8]\n"
                           "  %5 = Matmul(%3, %3) : float32[4,4]\n"
                           "  %6 = Sum(%4) {dims=[0,1], keepdim=false} : float32[]\n"
                           "  %7 = Sum(%5) {dims=[0,1], keepdim=false} : float32[]\n"
                           "  %8 = Add(%6, %7) : float32[]\n"
                           "  return (%8)\n"
                           "}\n"),
            "%2 arena[0,256)\n%3 arena[512,576)\n%4 arena[256,512)\n%5 arena[0,64)\n%6 arena[64,68)\n"
            "%7 arena[128,132)\n%8 fresh\narena_bytes=576 in_place=0 to_target=0\n");
}

TEST(MemoryPlan, EmptyValues) {
  EXPECT_EQ(plan_and_check("graph(%0: float32[0,4] input) {\n"
                           "  %1 = Neg(%0) : float32[0,4]\n"
                           "  %2 = Neg(%1) : float32[0,4]\n"
                           "  %3 = Neg(%2) : float32[0,4]\n"
                           "  return (%3)\n"
                           "}\n"),
            "%1 arena[0,0)\n%2 arena[0,0)\n%3 fresh\narena_bytes=0 in_place=1 to_target=0\n");
}

TEST(MemoryPlan, EmptyValuesRunOnTheExecutable) {
  // A plan whose arena values are all empty has arena_bytes=0; the Executable made no arena then
  // and dereferenced it for those values' slots (a segfault compiling any two-op graph at batch 0).
  // Empty values in the other dims too, next to a non-empty one (a reduction over the empty dim).
  for (const char* shape : {"0,4", "3,0", "2,0,3"}) {
    std::string sh(shape), red = sh.substr(0, sh.rfind(','));
    ir::Graph g = ir::parse("graph(%0: float32[" + sh + "] input) {\n"
                            "  %1 = Neg(%0) : float32[" + sh + "]\n"
                            "  %2 = Exp(%1) : float32[" + sh + "]\n"
                            "  %3 = Sum(%2) {dims=[-1], keepdim=false} : float32[" + red + "]\n"
                            "  %4 = Neg(%3) : float32[" + red + "]\n"
                            "  return (%2, %4)\n"
                            "}\n");
    plan_and_check(g);
    rt::Executable exe(g, ir::plan_memory(g));
    Tensor x = Tensor::empty(g.value(g.inputs()[0]).shape, DType::Float32);
    for (int call = 0; call < 2; ++call) {
      TensorList got = exe.run({x}, {}), want = ir::interpret(g, {x}, {});
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        ASSERT_EQ(got[k].shape(), want[k].shape()) << shape << " output " << k;
        Tensor a = got[k].contiguous_data(), b = want[k].contiguous_data();
        EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.numel() * sizeof(float)), 0) << shape << " output " << k;
      }
    }
  }
}

namespace {

// Random DAG over float32 values: elementwise ops (plain and fused), views and view chains,
// matmuls, a two-output reduction; random outputs (node values, views, inputs) and assigns.
ir::Graph random_graph(std::mt19937& rng) {
  ir::Graph g;
  std::vector<int> pool;  // float32 values an op may read
  for (int i = 0, n = 1 + static_cast<int>(rng() % 2); i < n; ++i) pool.push_back(g.add_input({4, 4}, DType::Float32));
  int state = g.add_state({4, 4}, DType::Float32);
  pool.push_back(state);
  auto meta = [&](int v) { return TensorMeta{g.value(v).shape, g.value(v).dtype}; };
  auto recent = [&](const std::vector<int>& c) {  // biased towards recent values: long chains
    size_t k = 0;
    while (k + 1 < c.size() && rng() % 2) ++k;
    return c[c.size() - 1 - k];
  };
  auto like = [&](int x, bool rows_of_cols) {  // a value of x's shape (or [x.cols, *] for matmul)
    std::vector<int> c;
    const Shape& s = g.value(x).shape;
    for (int v : pool)
      if (rows_of_cols ? g.value(v).shape.size() == 2 && g.value(v).shape[0] == s[1] : g.value(v).shape == s) c.push_back(v);
    return c.empty() ? -1 : recent(c);
  };
  auto add = [&](OpId op, std::vector<int> ins, Attrs a, std::vector<TensorMeta> outs) {
    std::vector<int> o = g.add_node(op, std::move(ins), std::move(a), outs);
    pool.push_back(o[0]);
    return o;
  };
  for (int step = 0, steps = 3 + static_cast<int>(rng() % 20); step < steps; ++step) {
    int x = recent(pool);
    Shape s = g.value(x).shape;
    switch (rng() % 10) {
      case 0: add(OpId::Neg, {x}, {}, {meta(x)}); break;
      case 1: add(OpId::Tanh, {x}, {}, {meta(x)}); break;
      case 2: add(OpId::Add, {x, like(x, false)}, {}, {meta(x)}); break;
      case 3: {  // Mul(row, x): the broadcast row comes first, so its size must stop a handover
        std::vector<int> rows;
        for (int v : pool)
          if (g.value(v).shape == Shape{s.back()} && s.size() == 2) rows.push_back(v);
        add(OpId::Mul, {rows.empty() ? x : recent(rows), x}, {}, {meta(x)});
        break;
      }
      case 4: {
        int64_t n = numel_of(s);
        Shape to = s.size() == 1 && n % 2 == 0 ? Shape{2, n / 2} : Shape{n};
        add(OpId::Reshape, {x}, {{"shape", to}}, {{to, DType::Float32}});
        break;
      }
      case 5:
        if (s.size() == 2) add(OpId::Permute, {x}, {{"dims", IntList{1, 0}}}, {{{s[1], s[0]}, DType::Float32}});
        else if (s == Shape{4}) add(OpId::Expand, {x}, {{"shape", IntList{4, 4}}}, {{{4, 4}, DType::Float32}});
        break;
      case 6:
        if (s[0] >= 2) {
          Shape to = s;
          to[0] -= 1;
          add(OpId::Slice, {x}, {{"dims", IntList{0}}, {"starts", IntList{1}}, {"ends", IntList{s[0]}}, {"steps", IntList{1}}},
              {{to, DType::Float32}});
        }
        break;
      case 7:
        if (s.size() == 2)
          if (int y = like(x, true); y >= 0)
            add(OpId::Matmul, {x, y}, {}, {{{s[0], g.value(y).shape[1]}, DType::Float32}});
        break;
      case 8:
        if (s.size() == 2)
          add(OpId::MaxDim, {x}, {{"dim", int64_t{1}}, {"keepdim", false}},
              {{{s[0]}, DType::Float32}, {{s[0]}, DType::Int64}});
        break;
      case 9: {
        std::vector<int> o = g.add_fused({x, like(x, false)}, add_mul_body(g.value(x)), {meta(x), meta(x)});
        pool.push_back(o[0]);
        pool.push_back(o[1]);
        break;
      }
    }
  }
  std::vector<int> outs;
  for (int i = 0, n = 1 + static_cast<int>(rng() % 3); i < n; ++i) outs.push_back(recent(pool));
  if (rng() % 4 == 0 && !g.nodes().empty()) outs.push_back(g.nodes()[rng() % g.nodes().size()].outputs.back());
  g.set_outputs(outs);
  if (rng() % 2)
    if (int v = like(state, false); v >= 0) g.add_assign(state, v);
  ir::verify(g);
  return g;
}

}  // namespace

TEST(MemoryPlan, RandomGraphsSatisfyTheIndependentChecks) {
  std::mt19937 rng(2024);
  int in_place = 0, to_target = 0, aliases = 0, fresh = 0, arena_values = 0;
  for (int trial = 0; trial < 400; ++trial) {
    ir::Graph g = random_graph(rng);
    MemoryPlan p = ir::plan_memory(g);
    SCOPED_TRACE(ir::print(g) + p.str(g));
    check_plan(g, p);
    EXPECT_TRUE(planned_matches_reference(g, p, static_cast<uint32_t>(trial)));
    in_place += p.in_place;
    to_target += p.to_target;
    for (int64_t off : p.offset) {
      aliases += off == MemoryPlan::kAlias;
      fresh += off == MemoryPlan::kFresh;
      arena_values += off >= 0;
    }
    if (HasFailure()) break;
  }
  std::printf("random graphs: %d arena values, %d in place, %d into targets, %d aliases, %d fresh\n", arena_values,
              in_place, to_target, aliases, fresh);
  // The generator exercises every rule.
  EXPECT_GT(in_place, 50);
  EXPECT_GT(to_target, 30);
  EXPECT_GT(aliases, 50);
  EXPECT_GT(fresh, 50);
  EXPECT_GT(arena_values, 200);
}
