"""CompiledModule: a model or function compiled per call signature.

The cached path is C++ (`_C._CompiledCore.__call__`): it hashes the call signature, finds the
entry and runs its executable with the GIL released. This file is the slow path and the
bookkeeping around it: tracing a new signature, the fallback policy, keeping bound state in step
with the module (mode switches, replaced parameters), and the introspection API
(cache_info, timing, ir, clear_cache).
"""
import contextlib
import dataclasses
import logging
import os
import threading
import time
import warnings

import lucid
from lucid import _C
from lucid._C import Tensor
from lucid.amp.autocast_mode import _state as _autocast_state
from lucid.autograd import _tensor_hooks
from lucid.compile._advice import advice
from lucid.compile._errors import CompileError, CompileWarning
from lucid.compile._source import user_stacklevel
from lucid.nn.modules import module as _module_mod

__all__ = ["CompiledModule"]

log = logging.getLogger("lucid.compile")
if os.environ.get("LUCID_COMPILE_VERBOSE", "") not in ("", "0"):
    log.setLevel(logging.INFO)
    if not log.handlers:
        _h = logging.StreamHandler()
        _h.setFormatter(logging.Formatter("[lucid.compile] %(message)s"))
        log.addHandler(_h)

_OUT_SINGLE, _OUT_TUPLE, _OUT_UNFLATTEN = 0, 1, 2


def _flatten_output(out):
    """(leaves, out_kind, unflatten) for the function's result; raises TypeError if unsupported."""
    if isinstance(out, Tensor):
        return [out], _OUT_SINGLE, None
    if type(out) is tuple and all(isinstance(o, Tensor) for o in out):
        return list(out), _OUT_TUPLE, None
    leaves = []

    def spec(o, depth=0):
        if depth > 32:
            raise TypeError("output nested deeper than 32 levels")
        if isinstance(o, Tensor):
            leaves.append(o)
            return ("T", len(leaves) - 1)
        if isinstance(o, tuple) and hasattr(o, "_fields"):
            return ("N", type(o), [spec(v, depth + 1) for v in o])
        if isinstance(o, (tuple, list)):
            return ("S", type(o), [spec(v, depth + 1) for v in o])
        if isinstance(o, dict):
            return ("D", type(o), [(k, spec(v, depth + 1)) for k, v in o.items()])
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return ("C", type(o), [(f.name, spec(getattr(o, f.name), depth + 1)) for f in dataclasses.fields(o)])
        if o is None or isinstance(o, (bool, int, float, str)):
            return ("V", o)
        raise TypeError(f"the function returned a {type(o).__name__}; compiled outputs are tensors, Python "
                        "scalars/strings/None and tuples/lists/dicts/dataclasses of them")

    s = spec(out)

    def build(sp, ts):
        kind = sp[0]
        if kind == "T":
            return ts[sp[1]]
        if kind == "V":
            return sp[1]
        if kind == "N":
            return sp[1](*[build(c, ts) for c in sp[2]])
        if kind == "S":
            return sp[1](build(c, ts) for c in sp[2])
        if kind == "D":
            return sp[1]((k, build(c, ts)) for k, c in sp[2])
        return sp[1](**{k: build(c, ts) for k, c in sp[2]})

    return leaves, _OUT_UNFLATTEN, lambda ts: build(s, ts)


def _value_spec(v):
    """A Python value of a call or result as JSON (floats by repr: nan and inf survive)."""
    if v is None:
        return ["none"]
    if type(v) is bool:
        return ["bool", v]
    if type(v) is int:
        return ["int", str(v)]
    if type(v) is float:
        return ["float", repr(v)]
    if type(v) is str:
        return ["str", v]
    return None


def _call_spec(args, kwargs, flat):
    """The call's structure for save_compiled, as JSON, mirroring what _CompiledCore keys
    (python/src/compile_bind.cpp's SigWalk): tensors by dtype, shape, requires_grad and
    contiguity, Python values by value, exact tuples, lists and dicts. A reason string when the
    call holds something else (a namedtuple, a dataclass, an arbitrary hashable object) that a
    loaded artifact could not rebuild, or when arguments alias each other."""
    if len({_C._impl_id(t) for t in flat}) != len(flat):
        return "two arguments are the same tensor"

    def spec(o, depth):
        if depth > 32:
            raise TypeError("arguments nested deeper than 32 levels")
        if isinstance(o, Tensor):
            return {"T": [str(o.dtype).replace("lucid.", ""), list(o.shape), o.requires_grad, o.is_contiguous()]}
        v = _value_spec(o)
        if v is not None:
            return {"V": v}
        t = type(o)
        if t is tuple or t is list:
            return {t.__name__: [spec(x, depth + 1) for x in o]}
        if t is dict:
            return {"dict": [[spec(k, depth + 1), spec(x, depth + 1)] for k, x in o.items()]}
        raise TypeError(f"an argument of type {t.__name__}")

    try:
        return {"args": spec(tuple(args), 0), "kwargs": spec(dict(kwargs), 0) if kwargs else None}
    except TypeError as e:
        return f"the call holds {e}, which a loaded artifact can't rebuild (save calls of tensors, Python numbers, strings, None and plain tuples, lists and dicts)"


def _output_spec(out):
    """The result's structure as JSON: {"T": k} for the k-th output tensor, {"V": value},
    {"tuple"|"list": [...]}, {"dict": [[key, spec]...]}, {"namedtuple": [type name, [fields], [...]]};
    a reason string for a result a loaded artifact can't rebuild (a dataclass, other types)."""
    count = [0]

    def spec(o, depth):
        if depth > 32:
            raise TypeError("output nested deeper than 32 levels")
        if isinstance(o, Tensor):
            count[0] += 1
            return {"T": count[0] - 1}
        v = _value_spec(o)
        if v is not None:
            return {"V": v}
        t = type(o)
        if isinstance(o, tuple) and hasattr(o, "_fields"):
            return {"namedtuple": [t.__name__, list(o._fields), [spec(x, depth + 1) for x in o]]}
        if t is tuple or t is list:
            return {t.__name__: [spec(x, depth + 1) for x in o]}
        if t is dict:
            if any(_value_spec(k) is None for k in o):
                raise TypeError("a dict key that is not a Python number, string or None")
            return {"dict": [[_value_spec(k), spec(x, depth + 1)] for k, x in o.items()]}
        raise TypeError(f"a {t.__name__}")

    try:
        return spec(out, 0)
    except TypeError as e:
        return f"the result holds {e}, which a loaded artifact can't rebuild"


@contextlib.contextmanager
def _recording(tr):
    """Runs the body with tracer `tr` installed on this thread; yields the _TraceRecord of what
    the body did to modules (which it called: their training flags join the signature)."""
    local = _module_mod._call_record
    outer = local.__dict__.get("rec")
    rec = local.rec = _module_mod._TraceRecord()
    tr.start()
    try:
        yield rec
    finally:
        tr.stop()
        local.rec = outer


# Module attributes that are not Python state of the model: bookkeeping, or keyed elsewhere
# (training is a flag of its own; parameters, buffers and submodules are bound state/structure).
_NOT_GUARDED = frozenset({"training", "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set",
                          "_forward_hooks", "_forward_pre_hooks", "_compile_watched", "_forward_hooks_with_kwargs",
                          "_forward_pre_hooks_with_kwargs", "_backward_hooks", "_backward_pre_hooks"})


_PRIMITIVES = (bool, int, float, str)  # keyed by value (with None and tuples of them)


def _guard_value(v):
    """A module attribute as part of the signature: primitives by type and value, tuples of
    them element by element, other objects by identity (rebinding one re-keys; a list changed
    in place does not: see docs/compile.md)."""
    t = type(v)
    if v is None or t in _PRIMITIVES:
        return (t, v)
    if t is tuple:
        return (tuple, tuple(_guard_value(x) for x in v))
    try:
        hash(v)
    except Exception:  # unhashable (a list, an array): by identity
        return (object, id(v), t)
    return (object, v)


def _python_state(m):
    """What of module m a trace may have read besides its tensors: its training flag, its other
    attributes (m.scale, a bool choosing a branch) and its hooks."""
    d = m.__dict__
    attrs = tuple((k, _guard_value(v)) for k, v in d.items()
                  if k not in _NOT_GUARDED and not isinstance(v, (Tensor, lucid.nn.Module)))
    hooks = tuple(tuple(d.get(k, ())) for k in ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks",
                                                 "_backward_pre_hooks"))
    params = tuple(_tensor_hooks.live_hooks(p) for p in d.get("_parameters", {}).values() if p is not None)
    return (m.training, attrs, hooks, params)


def _module_writes(rec):
    """The trace's writes to modules that existed before it, one per (module, attribute):
    (module, name, value before the trace, value after)."""
    first = {}
    for m, name, old, new in rec.writes:
        k = (id(m), name)
        first[k] = (m, name, first[k][2] if k in first else old, new)
    return list(first.values())


def _describe_call(flat, args, kwargs):
    parts = []
    for t in flat:
        dt = str(t.dtype).replace("lucid.", "")
        parts.append(f"{dt}[{','.join(str(d) for d in t.shape)}]" + ("(rg)" if t.requires_grad else ""))
    other = [a for a in list(args) + list(kwargs.values())
             if a is None or isinstance(a, (bool, int, float, str))]
    s = "(" + ", ".join(parts) + ")"
    if other:
        s += " " + repr(other)[:80]
    return s


class CompiledModule(_C._CompiledCore):
    """`lucid.compile(target)`: calls `target` through cached executables, one per signature."""

    def __init__(self, target, *, dynamic=False, strict=False, _step=False, _name=None, _describe=None):
        # _name, _describe: how warnings and cache_info name the target and describe a call
        # (fused_step names the user's model and loss, and describes the step's own arguments)
        if dynamic:
            raise NotImplementedError(
                "lucid.compile(dynamic=True): a symbolic batch dimension is not implemented yet; "
                "each new batch size compiles its own executable (dynamic=False)")
        if not callable(target):
            raise TypeError(f"lucid.compile: expected an nn.Module or a callable, got {type(target).__name__}")
        super().__init__(target)
        self.model = target
        self.strict = bool(strict)
        self._step = bool(_step)  # make_step: forward, loss and backward in one executable
        self._lock = threading.RLock()
        self._watched = []        # modules whose training flags are part of the signature
        self._watched_ids = set()
        self._children = []       # per watched module: ids of its submodules when watched
        self._modes = {}          # Python state of the watched modules (_python_state) -> small int
        self._info = {}           # key -> dict(descr, reason, compile_ms, names)
        self._warned = set()
        self._misses = 0
        self._order = 0
        self._capacity = _C._executable_cache_capacity()
        self._pinned = {}         # impl id -> Tensor object the function captures (returned as itself)
        self._name = _name or (type(target).__name__ if isinstance(target, lucid.nn.Module) else
                               getattr(target, "__qualname__", None) or getattr(target, "__name__", "fn"))
        self._describe = _describe or _describe_call
        self._fell_back = {}      # descr -> reason of entries dropped by _invalidate (cache_info's eager_only)
        if isinstance(target, lucid.nn.Module):
            self._watch(target.modules())
        else:
            self._watch_captured(target)
        self._set_captured(self._captured())
        self._refresh()

    # ---------------------------------------------------------------- signature bookkeeping
    def _watch(self, mods):
        added = False
        for m in mods:
            if id(m) not in self._watched_ids:
                m.__dict__["_compile_watched"] = True  # its attribute writes bump the epoch
                self._watched_ids.add(id(m))
                self._watched.append(m)
                self._children.append(self._child_ids(m))
                added = True
        if added:
            self._set_captured(self._captured())
        return added

    def _captured(self):
        """The globals and closure cells holding primitives (numbers, strings, None, tuples of
        them) that the compiled function, or a watched module's forward, reads: their values
        join the signature (see _CompiledCore). Functions these call are not scanned: what they
        read is a constant of the trace (docs/compile.md)."""
        fns = [] if isinstance(self.model, lucid.nn.Module) else [self.model]
        fns += [type(m).forward for m in self._watched]
        items, seen, names = [], set(), set()
        for fn in fns:
            fn = getattr(fn, "__func__", fn)
            code, g = getattr(fn, "__code__", None), getattr(fn, "__globals__", None)
            if code is None or id(code) in seen:
                continue
            seen.add(id(code))
            codes = [code]
            while codes:  # nested lambdas and comprehensions read the same globals
                c = codes.pop()
                codes += [k for k in c.co_consts if hasattr(k, "co_names")]
                for n in c.co_names:
                    if n in g and _C._is_primitive(g[n]) and (id(g), n) not in names:
                        names.add((id(g), n))
                        items.append((g, n))
            for cell in fn.__closure__ or ():
                try:
                    if _C._is_primitive(cell.cell_contents):
                        items.append((cell, None))
                except ValueError:  # an empty cell
                    pass
        return items

    def _watch_captured(self, fn):
        """Modules and tensors a function reaches through its closure or globals: the modules'
        modes join the signature and their parameters re-bind like a Module target's."""
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is None:
            return
        objs = []
        for c in fn.__closure__ or ():
            try:
                objs.append(c.cell_contents)
            except ValueError:  # an empty cell
                pass
        g = getattr(fn, "__globals__", {})
        objs += [g[n] for n in code.co_names if n in g]
        self._watch(m for o in objs if isinstance(o, lucid.nn.Module) for m in o.modules())
        self._pinned.update((_C._impl_id(o), o) for o in objs if isinstance(o, Tensor))

    @staticmethod
    def _child_ids(m):
        return tuple(id(c) for c in m.__dict__.get("_modules", {}).values())

    def _restructure(self):
        """A watched module gained, lost or replaced a submodule: every entry may be stale."""
        self._clear()
        _C._trim_executable_cache()
        self._info.clear()
        self._watched, self._watched_ids, self._children = [], set(), []
        if isinstance(self.model, lucid.nn.Module):
            self._watch(self.model.modules())
        else:
            self._watch_captured(self.model)
        self._set_captured(self._captured())

    def _refresh(self):
        """Recompute the module-mode id and re-bind every entry's state to the current tensors."""
        epoch = _C._compile_epoch()
        if any(self._child_ids(m) != c for m, c in zip(self._watched, self._children)):
            self._restructure()
        flags = tuple(_python_state(m) for m in self._watched)
        mode = self._modes.setdefault(flags, len(self._modes))
        self._set_mode(mode, epoch)
        self._epoch_seen = epoch
        for key in list(self._keys()):
            info = self._info.get(key)
            if info is None or not info["names"]:
                continue
            old = self._entry_states(key)
            new, changed = [], False
            for t, name in zip(old, info["names"]):
                cur = t if name is None else self._lookup(name)
                if cur is None or not isinstance(cur, Tensor) or cur.shape != t.shape or cur.dtype != t.dtype:
                    self._drop(key)  # reshaped or removed state: recompile on the next call
                    break
                changed |= _C._impl_id(cur) != _C._impl_id(t)
                new.append(cur)
            else:
                if changed:
                    self._set_entry_states(key, new)

    def _lookup(self, name):
        widx, attr = name
        m = self._watched[widx]
        for d in (m.__dict__.get("_parameters", {}), m.__dict__.get("_buffers", {}), m.__dict__):
            if attr in d:
                return d[attr]
        return None

    def _state_names(self, states):
        """Where each bound tensor lives in a watched module, so replacing it re-binds (or None)."""
        where = {}
        for widx, m in enumerate(self._watched):
            for d in (m.__dict__.get("_parameters", {}), m.__dict__.get("_buffers", {}), m.__dict__):
                for attr, v in d.items():
                    if isinstance(v, Tensor):
                        where.setdefault(_C._impl_id(v), (widx, attr))
        return [where.get(_C._impl_id(t)) for t in states]

    def _drop(self, key):
        self._remove(key)
        self._info.pop(key, None)

    # ---------------------------------------------------------------- slow path
    def _slow_call(self, args, kwargs, key):
        fn = self._fn
        if _C._trace_active():  # called inside another trace: run eagerly so the outer trace records it
            return fn(*args, **kwargs)
        with self._lock:
            if _C._compile_epoch() != self._epoch_seen:
                self._refresh()
            key, flat, guards = self._key_of(args, kwargs)
            status = self._status(key)
            if status == "ok":
                return self._run_key(key, flat)
            if status == "eager":
                return fn(*args, **kwargs)
            if status == "stale":  # bound state changed shape, dtype or requires_grad: re-trace
                self._drop(key)
            return self._trace(args, kwargs, flat, guards)

    def _fallback(self, key, descr, reason, out, guards=None, states=()):
        # states: the trace's bound tensors, so calls whose arguments overlap them key apart
        self._insert(key, None, list(states), 0, None, guards, True)
        self._info[key] = {"descr": descr, "reason": reason, "compile_ms": 0.0, "names": None}
        name = self._name
        log.info("eager fallback for %s %s: %s", name, descr, reason)
        if self.strict:
            raise CompileError(f"lucid.compile(strict=True): {name} {descr}: {reason}. To compile it: {advice(reason)}")
        if reason not in self._warned:
            self._warned.add(reason)
            warnings.warn(f"lucid.compile: {name} {descr} runs eagerly: {reason}. To compile it: {advice(reason)}",
                          CompileWarning, stacklevel=user_stacklevel())
        return out

    def _trace(self, args, kwargs, flat, guards):
        # the entry's key is computed after the trace, with the bound tensors it found (_key_of)
        fn = self._fn
        self._misses += 1
        autocast = _autocast_state()
        descr = (self._describe(flat, args, kwargs) + "".join(f" autocast({d}={t})" for d, t in autocast.items())
                 + (" grad" if lucid.is_grad_enabled() else ""))
        t0 = time.perf_counter()
        tr = _C._Tracer()
        for t in flat:
            tr.add_input(t)
        with _recording(tr) as rec:
            out = fn(*args, **kwargs)
        called = rec.mods

        def fail(reason):  # keyed with the trace's bound tensors (see _CompiledCore._key_of)
            return self._fallback(self._key_of(args, kwargs, tr.state_feeds)[0], descr, reason, out, guards,
                                  tr.state_feeds)

        if not tr.ok:
            return fail(tr.reason)
        rebound, why = self._replay_module_writes(tr, rec)
        if why:
            return fail(why)
        try:
            leaves, out_kind, unflatten = _flatten_output(out)
        except TypeError as e:
            return fail(str(e))
        grad = None
        if lucid.is_grad_enabled():
            grad = self._trace_backward(tr, flat, leaves, self._step)
            if isinstance(grad, str):
                return fail(grad)
        if grad is None:
            tr.set_outputs(leaves)
        if not tr.ok:  # set_outputs checks the graph's writes against aliasing of what it was fed
            return fail(tr.reason)
        states = tr.state_feeds
        if self._watch(called):  # new modules: their training flags join the signature
            self._refresh()
        key, _, guards = self._key_of(args, kwargs, states)
        dump = os.environ.get("LUCID_DUMP_IR", "")
        try:
            if grad is None or self._step:
                exe, stats = _C._compile_graph(tr.graph, dump)
                bwd = None
            else:
                exe, bwd, stats = _C._compile_joint(tr.graph, len(flat), len(leaves), dump)
        except Exception as e:  # an op the compiler can't lower: eager, with the reason
            return fail(f"{type(e).__name__}: {e}")
        ms = (time.perf_counter() - t0) * 1e3
        names = self._state_names(states)
        for m, attr, old in rebound:  # the rebound slot follows the attribute, not the old tensor
            self._watch([m])
            widx = self._watched.index(m)
            names = [(widx, attr) if _C._impl_id(t) == _C._impl_id(old) else n for t, n in zip(states, names)]
        states = [self._pinned.get(_C._impl_id(t), t) if n is None else self._lookup(n)
                  for t, n in zip(states, names)]  # the Parameter objects themselves
        if grad is None:
            self._insert(key, exe, states, out_kind, unflatten, guards, False)
        else:
            grad_outs, wrt_inputs, wrt_states, used = grad
            self._insert_grad(key, exe, bwd, states, out_kind, unflatten, guards, len(leaves), grad_outs,
                              wrt_inputs, wrt_states, used)
        self._info[key] = {"descr": descr, "reason": None, "compile_ms": ms, "names": names,
                           "stats": stats, "order": self._order, "grad_enabled": lucid.is_grad_enabled(),
                           "autocast": autocast, "call": _call_spec(args, kwargs, flat), "out": _output_spec(out),
                           "training": self._watched[0].training if self._watched else None}
        self._order += 1
        if log.isEnabledFor(logging.INFO):
            log.info("compiled %s %s: nodes %d -> %d, fused groups %d, arena %d B, in-place %d, "
                     "written into state %d, %.1f ms%s",
                     type(self.model).__name__, descr, stats["nodes_before"], stats["nodes_after"],
                     stats["fused_groups"], stats["arena_bytes"], stats["in_place"], stats.get("to_target", 0), ms,
                     " (executable cache hit)" if stats["cache_hit"] else " (from the disk cache)" if stats.get("from_disk") else "")
        return out

    @staticmethod
    def _replay_module_writes(tr, rec):
        """The trace's effects on modules that cached calls must reproduce: (rebound, reason).
        A tensor attribute rebound to a tensor the trace computed, of the same shape and dtype
        (self.s = self.s + x), becomes an assign into the bound tensor; rebound lists those as
        (module, name, old tensor). Forward hooks, or any other attribute write (a counter, a
        flag, a new submodule), can't be replayed without Python: reason says which."""
        for m in rec.hooked:
            if id(m) not in rec.created:
                d = m.__dict__
                kind = "backward" if d.get("_backward_hooks") or d.get("_backward_pre_hooks") else "forward"
                return [], (f"{type(m).__name__} has {kind} hooks (Python code run at every call, whose side "
                            "effects an executable can't replay)")
        rebound = []
        for m, name, old, new in _module_writes(rec):
            where = f"{type(m).__name__}.{name}"
            if old is new:  # `self.t += 1` on a tensor: an in-place op the trace recorded, rebinding nothing
                continue
            if isinstance(old, Tensor) and isinstance(new, Tensor):
                why = tr.rebind(old, new)
                if why:
                    return [], f"{where} is rebound during the trace and can't become an update of the bound tensor: {why}"
                rebound.append((m, name, old))
                continue
            if type(old) is type(new) and _guard_value(old) == _guard_value(new):
                continue  # the same value written back
            return [], (f"{where} is assigned during the trace: Python state changed by the traced function is not "
                        "replayed by cached calls")
        return rebound, None

    @staticmethod
    def _trace_backward(tr, flat, leaves, step=False):
        """Under grad mode: extend the trace with the backward of the differentiable outputs (a
        joint graph). Returns None when nothing requires grad, a reason string when the backward
        can't be compiled, else (grad_outs, wrt_inputs, wrt_states, used). step (make_step): the
        one output is a scalar loss and its gradients are computed in the same executable, for a
        unit grad output (recorded inside the trace, so it is a folded constant)."""
        states = tr.state_feeds
        wrt_inputs = [i for i, t in enumerate(flat) if t.requires_grad]
        wrt_states = [j for j, t in enumerate(states) if t.requires_grad]
        if not wrt_inputs and not wrt_states:
            return None
        grad_outs = [k for k, o in enumerate(leaves) if o.requires_grad and o.dtype.is_floating_point]
        if not grad_outs:
            return None
        if any(not tr.is_node_value(leaves[k]) for k in grad_outs):
            return ("autograd: an output that requires grad is an argument or a bound tensor itself "
                    "(compiled backward needs outputs the graph computes)")
        if step and (len(grad_outs) != 1 or leaves[grad_outs[0]].numel() != 1):
            return "make_step: the step function must return one scalar loss that requires grad"
        if not step:
            gys = [lucid.zeros_like(leaves[k]) for k in grad_outs]  # grad-output placeholders (graph inputs)
        wrt = [flat[i] for i in wrt_inputs] + [states[j] for j in wrt_states]
        tr.start()
        try:
            if step:
                gys = [lucid.ones_like(leaves[grad_outs[0]])]
            else:
                for g in gys:
                    tr.add_input(g)
            with _tensor_hooks.speculative_backward():
                grads = lucid.autograd.grad([leaves[k] for k in grad_outs], wrt, grad_outputs=gys,
                                            retain_graph=True, allow_unused=True)
        finally:
            tr.stop()
        if not tr.ok:
            return tr.reason
        used = [g is not None for g in grads]
        tr.set_outputs(list(leaves) + [g for g in grads if g is not None])
        return grad_outs, wrt_inputs, wrt_states, used

    # ---------------------------------------------------------------- public API
    @property
    def training(self):
        return getattr(self.model, "training", False)

    def train(self, mode=True):
        self.model.train(mode)
        return self

    def eval(self):
        self.model.eval()
        return self

    def to(self, *args, **kwargs):
        self.model.to(*args, **kwargs)
        return self

    def load_state_dict(self, *args, **kwargs):
        return self.model.load_state_dict(*args, **kwargs)

    def parameters(self, *args, **kwargs):
        return self.model.parameters(*args, **kwargs)

    def named_parameters(self, *args, **kwargs):
        return self.model.named_parameters(*args, **kwargs)

    def buffers(self, *args, **kwargs):
        return self.model.buffers(*args, **kwargs)

    def state_dict(self, *args, **kwargs):
        return self.model.state_dict(*args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("__") or name in ("model", "_info", "_watched"):
            raise AttributeError(name)
        return getattr(self.__dict__["model"], name)

    def cache_info(self):
        keys = list(self._keys())
        n_calls = self._n_calls
        return {
            "entries": len(keys),
            "keys": [self._info[k]["descr"] for k in keys if k in self._info],
            "eager_only": {**self._fell_back, **{self._info[k]["descr"]: self._info[k]["reason"]
                                                 for k in keys if k in self._info and self._info[k]["reason"]}},
            # entries whose optimised programs came from the persistent compile cache (a
            # compile of an earlier process or CompiledModule), not from running the passes
            "from_disk": [self._info[k]["descr"] for k in keys
                          if k in self._info and self._info[k].get("stats", {}).get("from_disk")],
            "n_calls": n_calls,
            "hits": n_calls - self._misses,
            "misses": self._misses,
        }

    def timing(self):
        out = {}
        for k in self._keys():
            info, e = self._info.get(k), self._entry_info(k)
            if info is not None:
                out[info["descr"]] = {"compile_ms": info["compile_ms"], "last_run_ms": e["last_run_ms"],
                                      "n_hits": e["n_hits"]}
        return out

    def clear_cache(self):
        with self._lock:
            self._clear()
            self._info.clear()
            self._warned.clear()
            self._fell_back.clear()
        _C._trim_executable_cache()  # the dropped executables' arenas, if nothing else runs them

    def _invalidate(self):
        """Drop every entry, as clear_cache, when the caller's own keying changed (fused_step's
        optimizer signatures): the signatures that fell back stay in cache_info's eager_only and
        their reasons are not warned again."""
        with self._lock:
            self._fell_back.update((i["descr"], i["reason"]) for i in self._info.values() if i["reason"])
            self._clear()
            self._info.clear()
        _C._trim_executable_cache()

    def ir(self, key=None):
        """The optimised IR of one compiled entry as text (key: a cache_info() key; default: the latest)."""
        cands = [k for k in self._keys() if k in self._info and self._info[k]["reason"] is None]
        if key is not None:
            cands = [k for k in cands if self._info[k]["descr"] == key or k == key]
        if not cands:
            raise KeyError(f"lucid.compile: no compiled entry{'' if key is None else ' for ' + repr(key)}")
        k = max(cands, key=lambda c: self._info[c]["order"])
        return self._executable(k).ir

    def __repr__(self):
        return f"CompiledModule({self.model!r})"
