// lucid.compile's C++ side: the tracer and graph handles, the executable cache, and
// _CompiledCore, the base class of lucid.compile.CompiledModule. Its __call__ is the cached
// fast path: it hashes the call's signature (tensor shapes/dtypes/requires_grad/layout/aliasing,
// Python values, nesting, grad mode, the module-mode id the Python side maintains), finds the
// entry, checks the bound state still has its traced shapes, releases the GIL and runs the
// executable. Anything else (first call of a signature, a changed module, unsupported argument
// types, nested tracing) goes to the Python slow path, `self._slow_call(args, kwargs, key)`.
// Only the Python parts live here (the walk over Python arguments, guards, output structure,
// the Python objects of bound state); running an entry and its autograd wiring is
// rt::CompiledEntry (csrc/lucid/compile/runtime/compiled_entry.h), the key mixer rt::CallKey.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "bind.h"
#include "compile_types.h"
#include "lucid/autograd/grad_mode.h"
#include "lucid/compile/export/disk_cache.h"
#include "lucid/compile/ir/interpret.h"
#include "lucid/compile/runtime/cache.h"
#include "lucid/compile/runtime/call_key.h"
#include "lucid/compile/runtime/compiled_entry.h"
#include "lucid/compile/trace/tracer.h"
#include "lucid/core/mem_overlap.h"
#include "lucid/dispatch/autocast.h"

namespace lucid::py {

namespace {

// Bumped by every change that may alter what a traced module computes: train()/eval(),
// assigning or replacing parameters, buffers or submodules, Module._apply (to(), half()...).
std::atomic<uint64_t> g_epoch{1};

struct PyTracer {
  std::unique_ptr<Tracer> tr = std::make_unique<Tracer>();
  TraceHook* prev = nullptr;
  bool active = false;
  void start() {
    LUCID_CHECK(!active, Error, "lucid.compile: this tracer is already recording");
    prev = current_trace_hook();
    set_trace_hook(tr.get());
    active = true;
  }
  void stop() {
    if (!active) return;
    set_trace_hook(prev);
    active = false;
  }
};

// ---- call signature ------------------------------------------------------------------------
using rt::overlap_code;

struct SigWalk {
  rt::CallKey s;
  TensorList flat;
  std::vector<nb::handle> handles;  // the Python object of each flat tensor (borrowed from the args)
  std::vector<nb::handle> guards;  // non-primitive hashable values: compared with == on a hit
  bool unsupported = false;
  std::string why;

  void tensor(const Tensor& t) {
    s.mix(1);
    s.mix(static_cast<uint64_t>(t.dtype()));
    s.mix(static_cast<uint64_t>(t.device().type) << 16 | static_cast<uint16_t>(t.device().index));
    s.mix(t.shape().size());
    for (int64_t d : t.shape()) s.mix(static_cast<uint64_t>(d));
    s.mix(t.requires_grad() ? 1 : 0);
    s.mix(t.is_contiguous() ? 1 : 0);
    // Aliasing between arguments changes what a traced graph means (the same tensor passed
    // twice is one value in the trace; a write to one of two overlapping views must be seen
    // by the other): which earlier argument it is, or shares memory with, is part of the key.
    for (size_t j = 0; j < flat.size(); ++j) {
      if (flat[j].impl() == t.impl()) { s.mix(1000 + j); break; }
      if (flat[j].impl()->storage == t.impl()->storage) s.mix(overlap_code(flat[j], t) * 1000000 + j);
    }
    flat.push_back(t);
  }

  void walk(nb::handle o, int depth) {
    if (unsupported) return;
    PyObject* p = o.ptr();
    if (depth > 32) { unsupported = true; why = "arguments nested deeper than 32 levels"; return; }
    if (nb::isinstance<Tensor>(o)) {
      tensor(nb::cast<const Tensor&>(o));
      handles.push_back(o);
      return;
    }
    if (p == Py_None) { s.mix(2); return; }
    if (PyBool_Check(p)) { s.mix(3); s.mix(p == Py_True); return; }
    if (PyLong_CheckExact(p)) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
      s.mix(4);
      if (overflow) { s.mix(static_cast<uint64_t>(PyObject_Hash(p))); guards.push_back(o); }
      else s.mix(static_cast<uint64_t>(v));
      return;
    }
    if (PyFloat_CheckExact(p)) {
      double v = PyFloat_AS_DOUBLE(p);
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      s.mix(5);
      s.mix(bits);
      return;
    }
    if (PyUnicode_CheckExact(p)) { s.mix(6); s.mix(static_cast<uint64_t>(PyObject_Hash(p))); guards.push_back(o); return; }
    if (PyTuple_Check(p) || PyList_Check(p)) {
      s.mix(PyTuple_Check(p) ? 7 : 8);
      s.mix(reinterpret_cast<uintptr_t>(Py_TYPE(p)));  // namedtuples differ from tuples
      // A subclass may name structure its tensors hold (PackedSequence: its batch sizes), keyed by value.
      if (!PyTuple_CheckExact(p) && !PyList_CheckExact(p) &&
          nb::hasattr(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(p))), "__lucid_compile_key__"))
        walk(o.attr("__lucid_compile_key__")(), depth + 1);
      Py_ssize_t n = PySequence_Fast_GET_SIZE(p);
      s.mix(static_cast<uint64_t>(n));
      for (Py_ssize_t i = 0; i < n; ++i) walk(PySequence_Fast_GET_ITEM(p, i), depth + 1);
      return;
    }
    if (PyDict_Check(p)) {
      s.mix(9);
      s.mix(static_cast<uint64_t>(PyDict_Size(p)));
      PyObject *k, *v;
      Py_ssize_t pos = 0;
      while (PyDict_Next(p, &pos, &k, &v)) {
        walk(k, depth + 1);
        walk(v, depth + 1);
      }
      return;
    }
    nb::handle tp(reinterpret_cast<PyObject*>(Py_TYPE(p)));
    if (nb::hasattr(tp, "__dataclass_fields__")) {
      s.mix(10);
      s.mix(reinterpret_cast<uintptr_t>(Py_TYPE(p)));
      nb::object fields = nb::getattr(tp, "__dataclass_fields__");
      for (nb::handle name : fields) {
        walk(name, depth + 1);
        walk(nb::getattr(o, name), depth + 1);
      }
      return;
    }
    Py_hash_t hv = PyObject_Hash(p);
    if (hv == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      unsupported = true;
      why = str("an argument of type '", Py_TYPE(p)->tp_name,
                "' is not hashable; lucid.compile keys calls by the values of non-tensor arguments "
                "(pass tensors, or hashable Python values)");
      return;
    }
    s.mix(11);
    s.mix(reinterpret_cast<uintptr_t>(Py_TYPE(p)));
    s.mix(static_cast<uint64_t>(hv));
    guards.push_back(o);
  }
};

// A Python value the traced code reads besides its arguments: a global of the compiled function
// or of a watched module's forward (a dict and a name), or a closure cell (the cell, no name).
struct Captured {
  nb::object where, name;
};

// None, bool, int, float, str, or a tuple of them: keyed by value.
bool is_primitive(PyObject* v, int depth) {
  if (v == Py_None || PyBool_Check(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v) || PyUnicode_CheckExact(v))
    return true;
  if (!PyTuple_CheckExact(v) || depth > 4) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); ++i)
    if (!is_primitive(PyTuple_GET_ITEM(v, i), depth + 1)) return false;
  return true;
}

SigWalk signature(nb::handle args, nb::handle kwargs, int64_t mode, const std::vector<Captured>& captured) {
  SigWalk w;
  w.walk(args, 0);
  // Their current values are keyed like arguments: a changed global re-keys, as in torch.compile.
  for (const Captured& c : captured) {
    PyObject* v = c.name.is_none() ? PyCell_GET(c.where.ptr()) : PyDict_GetItemWithError(c.where.ptr(), c.name.ptr());
    if (!v) {
      PyErr_Clear();
      w.s.mix(0xDE1E7EDULL);  // unbound or deleted
      continue;
    }
    if (is_primitive(v, 0)) {
      w.walk(v, 1);
    } else {  // rebound to another kind of object: keyed by identity (the trace saw a primitive)
      w.s.mix(reinterpret_cast<uintptr_t>(Py_TYPE(v)));
      w.s.mix(reinterpret_cast<uintptr_t>(v));
    }
  }
  // No keyword arguments (a null dict from tp_call, or {}) hash alike.
  if (kwargs.is_valid() && PyDict_Check(kwargs.ptr()) && PyDict_Size(kwargs.ptr()) > 0) w.walk(kwargs, 0);
  w.s.mix(GradMode::is_enabled() ? 0x51 : 0x50);
  w.s.mix(autocast_key());  // a trace made under one autocast state never serves another
  w.s.mix(static_cast<uint64_t>(mode));
  return w;
}

// ---- compiled entries ----------------------------------------------------------------------
enum OutKind : int { kOutSingle = 0, kOutTuple = 1, kOutUnflatten = 2 };

// A cached signature: the compiled call (absent for an eager-only entry) and what only Python
// needs to answer the call with it.
struct Entry {
  std::optional<rt::CompiledEntry> compiled;  // empty for an eager-only entry
  TensorList eager_states;  // an eager-only entry's bound tensors: they key aliasing (mix_state_aliasing)
  nb::list state_objs;  // the Python objects of the bound tensors (Parameters...), returned as themselves
  int out_kind = kOutSingle;
  nb::object unflatten;  // kOutUnflatten: callable(list of tensors) -> result
  nb::object guards;     // tuple of non-primitive argument values (compared with ==)
  uint64_t hits = 0, tick = 0;

  bool eager_only() const { return !compiled; }
  const TensorList& states() const { return compiled ? compiled->states() : eager_states; }
};

class CompiledCore {
 public:
  explicit CompiledCore(nb::object fn) : fn_(std::move(fn)) {}
  virtual ~CompiledCore() {
    entries_.clear();
    rt::trim_executable_cache();  // arenas of executables only this core ran
  }

  // args: a tuple; kwargs: a dict or null (CPython's tp_call convention).
  nb::object call(nb::handle args, nb::handle kwargs) {
    ++n_calls_;
    if (current_trace_hook() || epoch_seen_ != g_epoch.load(std::memory_order_relaxed)) return slow(args, kwargs, nb::none());
    SigWalk w = signature(args, kwargs, mode_, captured_);
    if (w.unsupported) return slow(args, kwargs, nb::none());
    mix_state_aliasing(w, nullptr);
    auto it = entries_.find(w.s.h);
    if (it == entries_.end()) return slow(args, kwargs, nb::int_(w.s.h));
    std::shared_ptr<Entry> e = it->second;
    if (!guards_match(*e, w)) return slow(args, kwargs, nb::int_(w.s.h));
    if (e->eager_only()) {
      ++hits_;
      ++e->hits;
      e->tick = ++tick_;
      PyObject* r = PyObject_Call(fn_.ptr(), args.ptr(), kwargs.ptr());
      if (!r) throw nb::python_error();
      return nb::steal(r);
    }
    if (!e->compiled->states_valid()) return slow(args, kwargs, nb::int_(w.s.h));
    ++hits_;
    ++e->hits;
    e->tick = ++tick_;
    return run_entry(*e, w.flat, &w.handles);
  }

  // Python slow-path helpers.
  // (args tuple, kwargs dict) -> (key, flat tensors, guards): the same signature as the fast path.
  // states: bound tensors of a trace about to be inserted, keyed as if already watched.
  nb::object key_of(nb::handle args, nb::handle kwargs, nb::object states) {
    SigWalk w = signature(args, kwargs, mode_, captured_);
    if (w.unsupported) throw TypeError(str("lucid.compile: ", w.why));
    TensorList extra;
    if (!states.is_none())
      for (nb::handle t : states) extra.push_back(nb::cast<Tensor>(t));
    mix_state_aliasing(w, &extra);
    nb::list flat;
    for (nb::handle h : w.handles) flat.append(h);
    nb::list guards;
    for (nb::handle g : w.guards) guards.append(g);
    return nb::make_tuple(nb::int_(w.s.h), flat, nb::tuple(guards));
  }

  void insert(uint64_t key, nb::object exe, nb::list states, int out_kind, nb::object unflatten, nb::object guards,
              bool eager_only) {
    auto e = python_entry(states, out_kind, std::move(unflatten), std::move(guards));
    if (eager_only) e->eager_states = tensors_of(states);
    else e->compiled.emplace(nb::cast<PyExecutable&>(exe).exe, tensors_of(states));
    add(key, std::move(e));
  }

  // Grad entries (traced under grad mode with something requiring grad): `fwd` returns n_out
  // outputs then the saved values and `bwd` computes the gradients; or bwd is None (make_step):
  // `fwd` also returned the gradients, for a unit grad output (see rt::CompiledEntry).
  void insert_grad(uint64_t key, nb::object fwd, nb::object bwd, nb::list states, int out_kind, nb::object unflatten,
                   nb::object guards, int n_out, std::vector<int> grad_outs, std::vector<int> wrt_inputs,
                   std::vector<int> wrt_states, std::vector<bool> wrt_used) {
    auto e = python_entry(states, out_kind, std::move(unflatten), std::move(guards));
    std::shared_ptr<const rt::Executable> b;
    if (!bwd.is_none()) b = nb::cast<PyExecutable&>(bwd).exe;
    e->compiled.emplace(nb::cast<PyExecutable&>(fwd).exe, std::move(b), tensors_of(states),
                        rt::GradSpec{n_out, std::move(grad_outs), std::move(wrt_inputs), std::move(wrt_states),
                                     std::move(wrt_used)});
    add(key, std::move(e));
  }

  // "missing", "eager", "stale" (bound state changed shape or dtype) or "ok".
  std::string status(uint64_t key) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return "missing";
    if (it->second->eager_only()) return "eager";
    return it->second->compiled->states_valid() ? "ok" : "stale";
  }

  nb::object run_key(uint64_t key, nb::list flat) {
    auto it = entries_.find(key);
    LUCID_CHECK(it != entries_.end() && !it->second->eager_only(), Error,
                "lucid.compile: no compiled entry for this key");
    TensorList ts;
    std::vector<nb::handle> hs;
    for (nb::handle t : flat) {
      ts.push_back(nb::cast<Tensor>(t));
      hs.push_back(t);
    }
    std::shared_ptr<Entry> e = it->second;
    ++e->hits;
    e->tick = ++tick_;
    return run_entry(*e, ts, &hs);
  }

  nb::list entry_states(uint64_t key) {
    auto it = entries_.find(key);
    return it != entries_.end() ? it->second->state_objs : nb::list();
  }
  void set_entry_states(uint64_t key, nb::list states) {
    auto it = entries_.find(key);
    LUCID_CHECK(it != entries_.end(), Error, "lucid.compile: no entry for this key");
    Entry& e = *it->second;
    if (e.compiled) e.compiled->set_states(tensors_of(states));
    else e.eager_states = tensors_of(states);
    e.state_objs = states;
    rebuild_watched();
  }
  void remove(uint64_t key) {
    entries_.erase(key);
    rebuild_watched();
  }
  void clear() {
    entries_.clear();
    watched_.clear();
  }
  nb::list keys() {
    nb::list l;
    for (auto& [k, e] : entries_) l.append(nb::int_(k));
    return l;
  }
  nb::dict entry_info(uint64_t key) {
    nb::dict d;
    auto it = entries_.find(key);
    if (it == entries_.end()) return d;
    const Entry& e = *it->second;
    d["n_hits"] = e.hits;
    d["last_run_ms"] = e.compiled ? e.compiled->last_run_ms() : 0.0;
    d["eager_only"] = e.eager_only();
    d["arena_bytes"] = e.compiled ? e.compiled->forward()->arena_bytes() : 0;
    d["instructions"] = e.compiled ? e.compiled->forward()->num_instructions() : 0;
    return d;
  }
  // What save_compiled stores of a compiled entry: its executables, bound tensors and gradient
  // wiring (None for a missing or eager-only entry).
  nb::object entry_record(uint64_t key) {
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second->eager_only()) return nb::none();
    const Entry& e = *it->second;
    const rt::CompiledEntry& c = *e.compiled;
    const rt::GradSpec& g = c.grad_spec();
    artifact::EntryRecord r;
    r.forward = c.forward();
    r.backward = c.backward();
    r.grad = c.is_grad_entry();
    r.precomputed = c.precomputed();
    r.n_out = g.n_out;
    r.grad_outs = g.grad_outs;
    r.wrt_inputs = g.wrt_inputs;
    r.wrt_states = g.wrt_states;
    r.wrt_used = g.wrt_used;
    nb::dict d = entry_record_dict(r);  // the artifact's field names (export_bind.cpp)
    d["states"] = e.state_objs;         // the bound tensors themselves; save_compiled names them
    d["out_kind"] = e.out_kind;
    return d;
  }
  nb::object executable(uint64_t key) {
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second->eager_only()) return nb::none();
    return nb::cast(PyExecutable{it->second->compiled->forward()});
  }

  // items: (dict, name) for a global, (cell, None) for a closure cell.
  void set_captured(nb::list items) {
    std::vector<Captured> c;
    for (nb::handle it : items) c.push_back({nb::borrow(it[0]), nb::borrow(it[1])});
    captured_ = std::move(c);
  }
  void set_mode(int64_t mode, uint64_t epoch) {
    mode_ = mode;
    epoch_seen_ = epoch;
  }
  int64_t mode() const { return mode_; }
  uint64_t n_calls() const { return n_calls_; }
  uint64_t hits() const { return hits_; }
  void reset_counters() { n_calls_ = hits_ = 0; }
  size_t capacity() const { return capacity_; }
  void set_capacity(size_t n) { capacity_ = n > 0 ? n : 1; }
  nb::object fn() const { return fn_; }

  // Python GC support: the core owns Python objects (the target, output builders, guards).
  int traverse(visitproc visit, void* arg) {
    Py_VISIT(fn_.ptr());
    for (const Captured& c : captured_) {
      Py_VISIT(c.where.ptr());
      Py_VISIT(c.name.ptr());
    }
    for (auto& [k, e] : entries_) {
      Py_VISIT(e->unflatten.ptr());
      Py_VISIT(e->guards.ptr());
      Py_VISIT(e->state_objs.ptr());
    }
    return 0;
  }
  void clear_refs() {
    captured_.clear();
    entries_.clear();
    watched_.clear();
    rt::trim_executable_cache();
    fn_ = nb::object();
  }

 private:
  // An argument whose memory overlaps a bound tensor (a view of a parameter, the parameter
  // itself) means something else than one that doesn't: a write to either must be seen through
  // the other, and the graph holds them as independent values. Which bound tensor each argument
  // overlaps is part of the key, checked against every bound tensor of this core's entries
  // (`extra`: those of a trace about to be inserted), so a trace made without aliasing is never
  // served to a call with it; the tracer falls back where a write meets an overlap.
  void mix_state_aliasing(SigWalk& w, const TensorList* extra) const {
    if (watched_.empty() && (!extra || extra->empty())) return;
    auto mix_if_overlapping = [&](size_t i, const Tensor& arg, const Tensor& st) {
      if (st.impl() == arg.impl() || spans_intersect(st, arg)) {
        w.s.mix(0xA11A5ED0ULL + i);
        w.s.mix(overlap_code(st, arg));
        w.s.mix(reinterpret_cast<uintptr_t>(st.impl()));
      }
    };
    for (size_t i = 0; i < w.flat.size(); ++i) {
      const Tensor& arg = w.flat[i];
      const Storage* sp = arg.impl()->storage.get();
      auto lo = std::lower_bound(watched_.begin(), watched_.end(), sp,
                                 [](const auto& a, const Storage* p) { return a.first < p; });
      for (; lo != watched_.end() && lo->first == sp; ++lo) mix_if_overlapping(i, arg, lo->second);
      if (extra)
        for (const Tensor& st : *extra)
          if (st.impl()->storage.get() == sp &&
              !std::any_of(watched_.begin(), watched_.end(), [&](const auto& x) { return x.second.impl() == st.impl(); }))
            mix_if_overlapping(i, arg, st);
    }
  }

  // watched_: every entry's bound tensors by storage, for mix_state_aliasing's lookups.
  void rebuild_watched() {
    watched_.clear();
    for (auto& [k, e] : entries_)
      for (const Tensor& t : e->states()) watched_.emplace_back(t.impl()->storage.get(), t);
    std::sort(watched_.begin(), watched_.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second.impl() < b.second.impl();
    });
    watched_.erase(std::unique(watched_.begin(), watched_.end(),
                               [](const auto& a, const auto& b) { return a.second.impl() == b.second.impl(); }),
                   watched_.end());
  }

  // args: a tuple; kwargs: a dict or null (tp_call passes null when there are none).
  nb::object slow(nb::handle args, nb::handle kwargs, nb::object key) {
    nb::object kw = kwargs.is_valid() ? nb::borrow(kwargs) : nb::dict();
    return nb::handle(nb::find(this)).attr("_slow_call")(args, kw, key);
  }

  static bool guards_match(const Entry& e, const SigWalk& w) {
    if (w.guards.empty()) return true;
    if (!e.guards.is_valid() || e.guards.is_none() || nb::len(e.guards) != w.guards.size()) return false;
    for (size_t i = 0; i < w.guards.size(); ++i) {
      int r = PyObject_RichCompareBool(w.guards[i].ptr(), nb::tuple(e.guards)[i].ptr(), Py_EQ);
      if (r != 1) {
        if (r < 0) PyErr_Clear();
        return false;
      }
    }
    return true;
  }

  // An output that is an argument or a bound tensor comes back as that Python object (eager's
  // identity); others are new Python tensors.
  static nb::object to_python(Tensor t, const Entry& e, const TensorList& flat, const std::vector<nb::handle>* handles) {
    if (handles)
      for (size_t i = 0; i < flat.size(); ++i)
        if (flat[i].impl() == t.impl()) return nb::borrow((*handles)[i]);
    const TensorList& states = e.states();
    for (size_t j = 0; j < states.size(); ++j)
      if (states[j].impl() == t.impl()) return nb::borrow(e.state_objs[j]);
    return nb::cast(std::move(t));
  }

  // The executable runs with the GIL released; the autograd wiring (finish) runs with it held,
  // as eager ops' does.
  nb::object run_entry(Entry& e, const TensorList& flat, const std::vector<nb::handle>* handles = nullptr) {
    const rt::CompiledEntry& c = *e.compiled;
    TensorList outs;
    {
      nb::gil_scoped_release nogil;
      outs = c.run_forward(flat);
    }
    c.finish(flat, outs);
    if (e.out_kind == kOutSingle) return to_python(std::move(outs[0]), e, flat, handles);
    nb::list l;
    for (Tensor& t : outs) l.append(to_python(std::move(t), e, flat, handles));
    if (e.out_kind == kOutTuple) return nb::tuple(l);
    return e.unflatten(l);
  }

  std::shared_ptr<Entry> python_entry(nb::list states, int out_kind, nb::object unflatten, nb::object guards) {
    auto e = std::make_shared<Entry>();
    e->state_objs = states;
    e->out_kind = out_kind;
    e->unflatten = std::move(unflatten);
    e->guards = std::move(guards);
    e->tick = ++tick_;
    return e;
  }

  // Adds an entry, evicting the least recently used beyond capacity_.
  void add(uint64_t key, std::shared_ptr<Entry> e) {
    entries_[key] = std::move(e);
    while (entries_.size() > capacity_) {
      auto victim = entries_.begin();
      for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->second->tick < victim->second->tick) victim = it;
      entries_.erase(victim);
    }
    rebuild_watched();
  }

  static TensorList tensors_of(nb::list ts) {
    TensorList r;
    for (nb::handle t : ts) r.push_back(nb::cast<Tensor>(t));
    return r;
  }

  nb::object fn_;
  std::unordered_map<uint64_t, std::shared_ptr<Entry>> entries_;
  std::vector<std::pair<const Storage*, Tensor>> watched_;  // sorted by storage
  std::vector<Captured> captured_;
  uint64_t epoch_seen_ = 0, n_calls_ = 0, hits_ = 0, tick_ = 0;
  int64_t mode_ = 0;
  size_t capacity_ = 64;
};

int core_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  return nb::inst_ptr<CompiledCore>(self)->traverse(visit, arg);
}
int core_clear(PyObject* self) {
  if (nb::inst_ready(self)) nb::inst_ptr<CompiledCore>(self)->clear_refs();
  return 0;
}
// tp_call: the cached path is entered straight from CPython (no attribute lookup of __call__,
// no argument conversion); C++ errors become the same Python exceptions as elsewhere.
PyObject* core_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  try {
    return nb::inst_ptr<CompiledCore>(self)->call(args, kwargs).release().ptr();
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const Error&) {
    set_python_error(std::current_exception());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyType_Slot core_slots[] = {{Py_tp_call, reinterpret_cast<void*>(core_call)},
                            {Py_tp_traverse, reinterpret_cast<void*>(core_traverse)},
                            {Py_tp_clear, reinterpret_cast<void*>(core_clear)},
                            {0, nullptr}};

nb::list tensors_to_list(const TensorList& ts) {
  nb::list l;
  for (const Tensor& t : ts) l.append(nb::cast(t));
  return l;
}

}  // namespace

LUCID_BINDER(compile) {
  m.def("_compile_epoch", [] { return g_epoch.load(); });
  m.def("_compile_epoch_bump", [] { g_epoch.fetch_add(1); });
  m.def("_trace_active", [] { return current_trace_hook() != nullptr; });
  // fn() -> str: where a host read during a trace happened (lucid.compile._source.host_read_site)
  // (the callable is kept for the life of the process: no decref after the interpreter is gone)
  m.def("_set_host_read_locator", [](nb::object fn) {
    PyObject* f = fn.release().ptr();
    set_host_read_locator([f]() -> std::string {
      nb::gil_scoped_acquire gil;
      try {
        return nb::cast<std::string>(nb::handle(f)());
      } catch (nb::python_error& e) {
        e.discard_as_unraisable("lucid.compile host-read locator");
        return {};
      }
    });
  });
  m.def("_impl_id", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.impl()); });
  // Whether a captured global or cell value is keyed by value (see signature()).
  m.def("_is_primitive", [](nb::handle v) { return is_primitive(v.ptr(), 0); }, nb::arg("v").none());

  nb::class_<PyGraph>(m, "_Graph")
      .def("__str__", [](const PyGraph& g) { return ir::print(*g.g); })
      .def("__repr__", [](const PyGraph& g) { return ir::print(*g.g); })
      .def_prop_ro("hash", [](const PyGraph& g) { return ir::canonical_hash(*g.g); })
      .def_prop_ro("num_nodes", [](const PyGraph& g) { return g.g->nodes().size(); })
      .def_prop_ro("num_states", [](const PyGraph& g) { return g.g->states().size(); })
      .def("nodes", [](const PyGraph& g) {
        // (op name, first output shape, first output dtype, first output device) per node, for
        // diagnose(): a node runs on its result's device, with that device's kernel.
        nb::list l;
        for (const ir::Node& n : g.g->nodes()) {
          nb::list shape;
          nb::object dt = nb::none();
          std::string dev = "cpu";
          if (!n.outputs.empty()) {
            const ir::Value& v = g.g->value(n.outputs[0]);
            for (int64_t d : v.shape) shape.append(d);
            dt = nb::str(dtype_name(v.dtype));
            dev = v.device.str();
          }
          l.append(nb::make_tuple(op_name(n.op), nb::tuple(shape), dt, dev));
        }
        return l;
      })
      .def("interpret", [](const PyGraph& g, std::vector<Tensor> inputs, std::vector<Tensor> states) {
        return tensors_to_list(ir::interpret(*g.g, inputs, states));
      });
  m.def("_optimize", [](const PyGraph& g, const std::string& dump) {
    return PyGraph{std::make_shared<const ir::Graph>(ir::optimize(*g.g, dump, nullptr))};
  });
  m.def("_parse_ir", [](const std::string& text) { return PyGraph{std::make_shared<const ir::Graph>(ir::parse(text))}; });

  nb::class_<PyTracer>(m, "_Tracer")
      .def(nb::init<>())
      .def("start", &PyTracer::start)
      .def("stop", &PyTracer::stop)
      .def("add_input", [](PyTracer& t, const Tensor& x) { t.tr->add_input(x); })
      .def("set_outputs", [](PyTracer& t, std::vector<Tensor> outs) { t.tr->set_outputs(outs); })
      .def("rebind", [](PyTracer& t, const Tensor& old, const Tensor& now) { return t.tr->rebind(old, now); })
      .def_prop_ro("ok", [](const PyTracer& t) { return t.tr->ok(); })
      .def_prop_ro("reason", [](const PyTracer& t) { return t.tr->fallback_reason(); })
      .def_prop_ro("graph", [](const PyTracer& t) { return PyGraph{std::make_shared<const ir::Graph>(t.tr->graph())}; })
      .def_prop_ro("state_feeds", [](const PyTracer& t) { return tensors_to_list(t.tr->state_feeds()); })
      .def("is_node_value", [](const PyTracer& t, const Tensor& x) {
        int id = t.tr->id_of(x);
        return id >= 0 && t.tr->graph().value(id).kind == ir::ValueKind::Node;
      });

  nb::class_<PyExecutable>(m, "_Executable")
      .def("run", [](const PyExecutable& e, std::vector<Tensor> inputs, std::vector<Tensor> states) {
        TensorList outs;
        {
          nb::gil_scoped_release nogil;
          outs = e.exe->run(inputs, states);
        }
        return tensors_to_list(outs);
      })
      .def_prop_ro("ir", [](const PyExecutable& e) { return ir::print(e.exe->graph()); })
      .def_prop_ro("memory_plan", [](const PyExecutable& e) { return e.exe->plan().str(e.exe->graph()); })
      .def_prop_ro("arena_bytes", [](const PyExecutable& e) { return e.exe->arena_bytes(); })
      .def_prop_ro("num_instructions", [](const PyExecutable& e) { return e.exe->num_instructions(); })
      .def_prop_ro("num_outputs", [](const PyExecutable& e) { return e.exe->graph().outputs().size(); })
      .def_prop_ro("pooled_frames", [](const PyExecutable& e) { return e.exe->pooled_frames(); })
      .def_prop_ro("state_cache_fills", [](const PyExecutable& e) { return e.exe->state_cache_fills(); })
      .def_prop_ro("graph_replays", [](const PyExecutable& e) { return e.exe->graph_replays(); })
      .def_prop_ro("graph_fallback", [](const PyExecutable& e) { return e.exe->graph_fallback(); })
      .def_prop_ro("fused_kernels", [](const PyExecutable& e) {
        rt::FusedKernelStats f = e.exe->fused_kernels();
        nb::dict d;
        d["kernels"] = f.kernels;
        d["per_op"] = f.per_op;
        d["fallback"] = f.fallback;
        d["code"] = f.code;
        return d;
      })
      .def("_trim", [](const PyExecutable& e) { e.exe->trim(); });

  // Optimise and build (or fetch from the persistent compile cache, export/disk_cache.h, and the
  // process-wide cache). Returns (executable, stats dict); stats["from_disk"]: read from disk.
  m.def("_compile_graph", [](const PyGraph& g, const std::string& dump) {
    rt::CompileResult r = artifact::compile_graph_cached(*g.g, dump);
    nb::dict st;
    st["nodes_before"] = r.stats.nodes_before;
    st["nodes_after"] = r.stats.nodes_after;
    st["fused_groups"] = r.stats.fused_groups;
    st["arena_bytes"] = r.exe->arena_bytes();
    st["in_place"] = r.exe->plan().in_place;
    st["to_target"] = r.exe->plan().to_target;
    st["hash"] = r.hash;
    st["cache_hit"] = r.cache_hit;
    st["from_disk"] = r.from_disk;
    return nb::make_tuple(PyExecutable{r.exe}, st);
  });
  // A joint forward+backward trace: (forward executable, backward executable, stats dict).
  m.def("_compile_joint", [](const PyGraph& g, int n_fwd_inputs, int n_fwd_outputs, const std::string& dump) {
    rt::JointCompileResult r = artifact::compile_joint_cached(*g.g, n_fwd_inputs, n_fwd_outputs, dump);
    nb::dict st;
    st["nodes_before"] = r.forward.stats.nodes_before + r.backward.stats.nodes_before;
    st["nodes_after"] = r.forward.stats.nodes_after + r.backward.stats.nodes_after;
    st["fused_groups"] = r.forward.stats.fused_groups + r.backward.stats.fused_groups;
    st["arena_bytes"] = r.forward.exe->arena_bytes() + r.backward.exe->arena_bytes();
    st["in_place"] = r.forward.exe->plan().in_place + r.backward.exe->plan().in_place;
    st["to_target"] = r.forward.exe->plan().to_target + r.backward.exe->plan().to_target;
    st["hash"] = r.forward.hash;
    st["cache_hit"] = r.forward.cache_hit && r.backward.cache_hit;
    st["from_disk"] = r.forward.from_disk && r.backward.from_disk;
    st["num_saved"] = r.num_saved;
    return nb::make_tuple(PyExecutable{r.forward.exe}, PyExecutable{r.backward.exe}, st);
  });
  m.def("_executable_cache_size", &rt::executable_cache_size);
  m.def("_executable_cache_capacity", &rt::executable_cache_capacity);
  m.def("_set_executable_cache_capacity", &rt::set_executable_cache_capacity);
  m.def("_clear_executable_cache", &rt::clear_executable_cache);
  m.def("_trim_executable_cache", &rt::trim_executable_cache);
  // fused_step's .grad bookkeeping in one call: grads None clears every .grad (freeing last
  // step's gradients before this step's are made, as zero_grad(set_to_none=True) does); else
  // sets params[i].grad = grads[offset + i].
  m.def("_set_grads", [](nb::list params, nb::object grads, size_t offset) {
    const size_t n = params.size();
    LUCID_CHECK(grads.is_none() || nb::len(grads) == offset + n, ValueError, "_set_grads: ", n, " parameters, ",
                grads.is_none() ? 0 : nb::len(grads) - offset, " gradients");
    for (size_t i = 0; i < n; ++i) {
      Tensor p = nb::cast<Tensor>(params[i]);
      nb::handle g = grads.is_none() ? nb::handle() : nb::handle(grads[offset + i]);
      p.set_grad(!g.is_valid() || g.is_none() ? Tensor() : nb::cast<Tensor>(g));  // None: unused parameter
    }
  }, nb::arg("params"), nb::arg("grads").none(), nb::arg("offset") = 0);
  // An optimizer's per-parameter structure for compile_optimizer/fused_step's signature, in one
  // pass: (the keys of state[p] in order, or () when p has no state; p.requires_grad;
  // p.grad is not None) for each parameter, as three tuples.
  m.def("_param_structure", [](nb::list params, nb::dict state) {
    const size_t n = params.size();
    nb::tuple keys = nb::steal<nb::tuple>(PyTuple_New(static_cast<Py_ssize_t>(n)));
    nb::tuple rg = nb::steal<nb::tuple>(PyTuple_New(static_cast<Py_ssize_t>(n)));
    nb::tuple has = nb::steal<nb::tuple>(PyTuple_New(static_cast<Py_ssize_t>(n)));
    for (size_t i = 0; i < n; ++i) {
      nb::handle p = params[i];
      PyObject* st = PyDict_GetItemWithError(state.ptr(), p.ptr());  // borrowed; no defaultdict insert
      if (!st && PyErr_Occurred()) throw nb::python_error();
      PyObject* k = st && PyDict_Check(st) ? PySequence_Tuple(st) : PyTuple_New(0);
      if (!k) throw nb::python_error();
      PyTuple_SET_ITEM(keys.ptr(), static_cast<Py_ssize_t>(i), k);
      const Tensor& t = nb::cast<const Tensor&>(p);
      PyObject* r = t.requires_grad() ? Py_True : Py_False;
      PyObject* g = t.grad().defined() ? Py_True : Py_False;
      Py_INCREF(r);
      Py_INCREF(g);
      PyTuple_SET_ITEM(rg.ptr(), static_cast<Py_ssize_t>(i), r);
      PyTuple_SET_ITEM(has.ptr(), static_cast<Py_ssize_t>(i), g);
    }
    return nb::make_tuple(keys, rg, has);
  });

  nb::class_<CompiledCore>(m, "_CompiledCore", nb::type_slots(core_slots))
      .def(nb::init<nb::object>())
      .def("_key_of", &CompiledCore::key_of, nb::arg("args"), nb::arg("kwargs"), nb::arg("states").none() = nb::none())
      .def("_insert", &CompiledCore::insert, nb::arg("key"), nb::arg("exe").none(), nb::arg("states"),
           nb::arg("out_kind"), nb::arg("unflatten").none(), nb::arg("guards").none(), nb::arg("eager_only"))
      .def("_insert_grad", &CompiledCore::insert_grad, nb::arg("key"), nb::arg("fwd"), nb::arg("bwd").none(), nb::arg("states"),
           nb::arg("out_kind"), nb::arg("unflatten").none(), nb::arg("guards").none(), nb::arg("n_out"),
           nb::arg("grad_outs"), nb::arg("wrt_inputs"), nb::arg("wrt_states"), nb::arg("wrt_used"))
      .def("_status", &CompiledCore::status)
      .def("_run_key", &CompiledCore::run_key)
      .def("_entry_states", &CompiledCore::entry_states)
      .def("_set_entry_states", &CompiledCore::set_entry_states)
      .def("_remove", &CompiledCore::remove)
      .def("_clear", &CompiledCore::clear)
      .def("_keys", &CompiledCore::keys)
      .def("_entry_info", &CompiledCore::entry_info)
      .def("_executable", &CompiledCore::executable)
      .def("_entry_record", &CompiledCore::entry_record)
      .def("_set_mode", &CompiledCore::set_mode)
      .def("_set_captured", &CompiledCore::set_captured)
      .def_prop_ro("_mode", &CompiledCore::mode)
      .def_prop_ro("_n_calls", &CompiledCore::n_calls)
      .def_prop_ro("_hits", &CompiledCore::hits)
      .def("_reset_counters", &CompiledCore::reset_counters)
      .def_prop_rw("_capacity", &CompiledCore::capacity, &CompiledCore::set_capacity)
      .def_prop_ro("_fn", &CompiledCore::fn);
}

}  // namespace lucid::py
