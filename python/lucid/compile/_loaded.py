"""load_compiled: an artifact written by save_compiled (_export.py) as a callable object, with no
model code. A LoadedModule is a CompiledModule's twin: the same C++ fast path
(_C._CompiledCore), keyed by the same signature code, with every saved entry inserted at load
(an example call rebuilt from the saved description computes each key in this process). A
LoadedStep is a FusedStep's twin, which trains: parameters and optimizer state update in place.
Loading runs no trace; the C++ side (csrc/lucid/compile/export/artifact.h) parses, checks and
plans each program, and this file checks the Python description. A call whose signature was not
saved raises ArtifactError listing the saved ones.
"""
import collections
import json
import os

import lucid
from lucid import _C
from lucid._C import Tensor
from lucid.amp.autocast_mode import _restored as _autocast_restored
from lucid.compile._compiled import _OUT_SINGLE, _OUT_TUPLE, _OUT_UNFLATTEN
from lucid.compile._export import ArtifactError, _hyper, _value
from lucid.compile._optim import _TESTS, hyper_input

__all__ = ["load_compiled", "LoadedModule", "LoadedStep"]


def _exemplar(spec):
    """A call with the saved structure: fresh tensors of the saved dtype, shape, requires_grad and
    contiguity, so the signature code computes the saved signature's key in this process."""
    (kind, v), = spec.items()
    if kind == "T":
        dtype, shape, rg, contiguous = v
        dt = getattr(lucid, dtype)
        if not isinstance(dt, lucid.dtype):
            raise TypeError(f"{dtype!r} is not a dtype")
        # empty: the pages of a large exemplar are never touched
        if contiguous:
            t = lucid.empty(shape, dtype=dt)
        else:  # the same shape, not contiguous: every other element of a longer last dim
            t = lucid.empty(list(shape[:-1]) + [shape[-1] * 2 if shape else 2], dtype=dt)[..., ::2]
        return t.requires_grad_(rg) if rg else t
    if kind == "V":
        return _value(v)
    if kind == "tuple":
        return tuple(_exemplar(c) for c in v)
    if kind == "list":
        return [_exemplar(c) for c in v]
    if kind == "dict":
        return {_exemplar(k): _exemplar(c) for k, c in v}
    raise ArtifactError(f"load_compiled: corrupt artifact: unknown call spec {kind!r}")


def _check_out_spec(spec, n_out, depth=0):
    """Raises unless spec is a result structure over output indices below n_out."""
    if not isinstance(spec, dict) or len(spec) != 1 or depth > 64:
        raise TypeError("a result node is not a one-key object")
    (k, x), = spec.items()
    if k == "T":
        if type(x) is not int or not 0 <= x < n_out:
            raise ValueError(f"result tensor index {x!r} of {n_out}")
    elif k == "V":
        _value(x)
    elif k in ("tuple", "list"):
        for c in x:
            _check_out_spec(c, n_out, depth + 1)
    elif k == "dict":
        for key, c in x:
            _value(key)
            _check_out_spec(c, n_out, depth + 1)
    elif k == "namedtuple":
        name, fields, items = x
        collections.namedtuple(name, fields)
        if len(fields) != len(items):
            raise ValueError("namedtuple fields and items differ in number")
        for c in items:
            _check_out_spec(c, n_out, depth + 1)
    else:
        raise ValueError(f"unknown result node {k!r}")


def _builder(spec, n_out):
    """(out_kind, unflatten) rebuilding the saved result structure from the flat outputs."""
    _check_out_spec(spec, n_out)
    (kind, v), = spec.items()
    if kind == "T":
        return _OUT_SINGLE, None
    if kind == "tuple" and all("T" in c for c in v):
        return _OUT_TUPLE, None
    types = {}

    def build(sp, ts):
        (k, x), = sp.items()
        if k == "T":
            return ts[x]
        if k == "V":
            return _value(x)
        if k == "tuple":
            return tuple(build(c, ts) for c in x)
        if k == "list":
            return [build(c, ts) for c in x]
        if k == "dict":
            return {_value(key): build(c, ts) for key, c in x}
        if k == "namedtuple":
            name, fields, items = x
            cls = types.get((name, tuple(fields)))
            if cls is None:
                cls = types[(name, tuple(fields))] = collections.namedtuple(name, fields)
            return cls(*[build(c, ts) for c in items])
        raise ArtifactError(f"load_compiled: corrupt artifact: unknown result spec {k!r}")

    return _OUT_UNFLATTEN, lambda ts: build(spec, ts)


def _not_saved(*args, **kwargs):
    raise ArtifactError("load_compiled: this signature was not saved")


class LoadedModule(_C._CompiledCore):
    """A compiled model or function loaded from an artifact: `loaded(*args)` runs a saved
    signature through the same cached path as a CompiledModule. `.signatures`, `.state_dict()`,
    `.load_state_dict()`, `.ir()`, `cache_info()`, `.train()` / `.eval()` (which saved signatures
    apply), `.parameters()`."""

    def __init__(self, art, path):
        super().__init__(_not_saved)
        self.path = path
        self._art = art
        top = json.loads(art.python)
        self._name = top.get("name", "artifact")
        self._tensors = {}  # name -> the Python tensor (a Parameter for parameters)
        self._rows = []
        objs = []
        for name, t, role, rg, weight in art.tensors():
            obj = lucid.nn.Parameter(t, requires_grad=rg) if role == "parameter" else (t.requires_grad_(rg) if rg else t)
            self._tensors[name] = obj
            self._rows.append((name, role, weight))
            objs.append(obj)
        self._aliases = top.get("aliases", {})
        self.training = bool(top.get("training"))
        self._descr, self._order, self._entries = {}, [], []
        self._capacity = max(64, len(art.entries()))
        for e in art.entries():
            py = json.loads(e["python"])
            mode = 1 if py.get("training") else 0
            args = _exemplar(py["call"]["args"])
            kwargs = _exemplar(py["call"]["kwargs"]) if py["call"]["kwargs"] is not None else {}
            self._set_mode(mode, _C._compile_epoch())
            with lucid.set_grad_enabled(py["grad_enabled"]), _autocast_restored(py.get("autocast")):
                key = self._key_of(args, kwargs)[0]
            n_out = e["n_out"] if e["grad"] else e["forward"].num_outputs
            out_kind, unflatten = _builder(py["out"], n_out)
            states = [objs[i] for i in e["states"]]
            if e["grad"]:
                self._insert_grad(key, e["forward"], e["backward"], states, out_kind, unflatten, None, e["n_out"],
                                  e["grad_outs"], e["wrt_inputs"], e["wrt_states"], e["wrt_used"])
            else:
                self._insert(key, e["forward"], states, out_kind, unflatten, None, False)
            call = py["descr"][:-len(" grad")] if py["descr"].endswith(" grad") else py["descr"]
            mode_s = "" if py.get("training") is None else ", train" if py.get("training") else ", eval"
            self._descr[key] = f"{call} ({'grad' if py['grad_enabled'] else 'no_grad'}{mode_s})"
            self._order.append(key)
            self._entries.append((key, py, e))
        self._misses = 0
        self._set_mode(1 if self.training else 0, _C._compile_epoch())

    # the call path: the C++ core runs saved signatures; this is its slow path
    def _slow_call(self, args, kwargs, key):
        self._set_mode(self._mode, _C._compile_epoch())
        key, flat, _ = self._key_of(args, kwargs)
        status = self._status(key)
        if status == "ok":
            return self._run_key(key, flat)
        self._misses += 1
        if status == "stale":
            raise ArtifactError(f"load_compiled: {self._name}: a bound tensor changed shape, dtype or "
                                "requires_grad since loading; restore it or load the artifact again")
        raise ArtifactError(f"load_compiled: {self._name} has no saved signature for this call "
                            f"({'grad' if lucid.is_grad_enabled() else 'no_grad'}, "
                            f"{'train' if self.training else 'eval'}); saved:\n  " + "\n  ".join(self.signatures))

    @property
    def signatures(self):
        return [self._descr[k] for k in self._order]

    def train(self, mode=True):
        self.training = bool(mode)
        self._set_mode(1 if mode else 0, _C._compile_epoch())
        return self

    def eval(self):
        return self.train(False)

    def state_dict(self):
        """The weights by name (parameters and persistent buffers, tied names included), as the
        tensors the loaded entries read and write."""
        out = {}
        for name, role, weight in self._rows:
            if weight:
                out[name] = self._tensors[name]
                for a in self._aliases.get(name, ()):
                    out[a] = self._tensors[name]
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies new values into the loaded tensors (no reload, no recompile). Names, shapes and
        dtypes must match (ArtifactError otherwise); strict=False ignores missing and unknown names."""
        own = self.state_dict()
        if strict:
            missing = sorted(set(own) - set(state_dict))
            unknown = sorted(set(state_dict) - set(own))
            if missing or unknown:
                raise ArtifactError(f"load_state_dict: wrong weights: missing {missing[:5]}, unknown {unknown[:5]}")
        for k, v in state_dict.items():
            if k not in own:
                continue
            t = own[k]
            if not isinstance(v, Tensor) or tuple(v.shape) != tuple(t.shape) or v.dtype != t.dtype:
                got = f"{v.dtype}{list(v.shape)}" if isinstance(v, Tensor) else type(v).__name__
                raise ArtifactError(f"load_state_dict: wrong weights: {k!r} is {got}, "
                                    f"the artifact has {t.dtype}{list(t.shape)}")
        with lucid.no_grad():
            for k, v in state_dict.items():
                if k in own:
                    own[k].copy_(v)

    def parameters(self):
        return [t for (name, role, _), t in zip(self._rows, self._tensors.values()) if role == "parameter"]

    def named_parameters(self):
        return [(name, t) for (name, role, _), t in zip(self._rows, self._tensors.values()) if role == "parameter"]

    def requires_grad_(self, requires_grad=True):
        for t in self.parameters():
            t.requires_grad_(requires_grad)
        return self

    def ir(self, key=None):
        """The optimised IR of a saved signature (key: one of .signatures; default: the last)."""
        keys = self._order if key is None else [k for k in self._order if self._descr[k] == key]
        if not keys:
            raise KeyError(f"load_compiled: no saved signature {key!r}; saved: {self.signatures}")
        return self._executable(keys[-1]).ir

    def cache_info(self):
        n = self._n_calls
        return {"entries": len(self._order), "keys": self.signatures, "eager_only": {}, "n_calls": n,
                "hits": n - self._misses, "misses": self._misses, "loaded_from": self.path}

    def __repr__(self):
        return f"LoadedModule({self._name!r} from {self.path!r}, {len(self._order)} signatures)"


class _LoadedOptimizer(lucid.optim.Optimizer):
    """The optimizer side of a LoadedStep: its param_groups (hyper-parameters a scheduler may
    change) and state are the loaded step's; step() belongs to the step itself."""

    def __init__(self, groups, defaults, kind):
        super().__init__(groups, defaults)
        self._kind = kind

    def step(self, closure=None):
        raise RuntimeError(f"a loaded {self._kind} optimizer updates inside the loaded step: call the step, "
                           "not optimizer.step()")

    def __repr__(self):
        return f"Loaded{self._kind}(...)"


class LoadedStep:
    """A fused_step loaded from an artifact: `step(*args)` runs forward, loss, backward and the
    optimizer update of a saved signature, updating the loaded parameters and optimizer state in
    place, and returns the loss. `.optimizer` carries param_groups (lr-schedulers work on it) and
    state; `.state_dict()` is {'model': ..., 'optimizer': ...}."""

    def __init__(self, art, path):
        top = json.loads(art.python)
        self.path = path
        self._core = LoadedModule(art, path)
        t = self._core._tensors
        self._params = [t[n] for n in top["params"]]
        self._extra = [t[n] for n in top["extra_params"]]
        self.keep_grads = top["keep_grads"]
        groups, defaults = [], {}
        for g in top["param_groups"]:
            d = {k: _hyper(v) for k, v in g["options"]}
            d["params"] = [self._params[i] for i in g["params"]]
            groups.append(d)
        self.optimizer = _LoadedOptimizer(groups, defaults, top["optimizer"])
        for i, p in enumerate(self._params):
            st = {}
            prefix = f"optimizer.state.{i}."
            for n, obj in t.items():
                if n.startswith(prefix):
                    st[n[len(prefix):]] = obj
            for k, v in top["non_tensor_state"].get(str(i), {}).items():
                st[k] = _hyper(v)
            if st:
                self.optimizer.state[p] = st
        self._sigs = [(key, py) for key, py, _ in self._core._entries]
        self._hyper_inputs = {}
        for _, py in self._sigs:
            self._check_description(py)

    def _check_description(self, py):
        """The saved hyper-parameter bookkeeping of one signature refers to what exists (a corrupt
        file fails here, at load, not in a later call)."""
        for n in py["hyper_names"] + py["baked"] + [o[0] for o in py["outcomes"]]:
            gi, k, j = n
            if not isinstance(self._lookup((gi, k, j)), (int, float)):
                raise TypeError(f"hyper-parameter {n!r} is not a number")
        for o in py["outcomes"]:
            if o[1] not in _TESTS and o[1] != "value":
                raise ValueError(f"unknown test {o[1]!r}")
            _hyper(o[2]), _hyper(o[3])
        for gi, k, v in py["other"]:
            self.optimizer.param_groups[gi], _hyper(v)
        if not all(isinstance(i, int) and 0 <= i < len(self._params) for i in py["wrt"]):
            raise ValueError("a differentiated parameter index is out of range")
        if not isinstance(py["user_args"], int) or not isinstance(py["sid"], int):
            raise TypeError("user_args and sid are integers")

    def _lookup(self, name):
        gi, k, j = name
        v = self.optimizer.param_groups[gi][k]
        return v if j is None else v[j]

    def _hyper_args(self, py):
        """(values, sid) for a saved signature, or a reason it doesn't apply to the current
        param_groups (a changed option, or a hyper-parameter test with another outcome)."""
        for gi, k, v in py["other"]:
            if self.optimizer.param_groups[gi].get(k) != _hyper(v):
                return f"param_groups[{gi}][{k!r}] is {self.optimizer.param_groups[gi].get(k)!r}, saved {_hyper(v)!r}"
        for name, op, o, r in py["outcomes"]:
            v = self._lookup(name)
            now = v if op == "value" else _TESTS[op](v, _hyper(o))
            if now != _hyper(r):
                return f"the step was traced with {name[1]} {op} {_hyper(o)!r} = {_hyper(r)!r}; now {now!r}"
        baked = {tuple(n) for n in py["baked"]}
        values = [hyper_input(self._hyper_inputs, n, self._lookup(n)) for n in map(tuple, py["hyper_names"])
                  if n not in baked]
        return values, py["sid"]

    def __call__(self, *args):
        if not args:
            raise TypeError("step() needs the model's input as its first argument")
        reasons = []
        for key, py in self._sigs:
            if py["user_args"] != len(args):
                continue
            r = self._hyper_args(py)
            if isinstance(r, str):
                reasons.append(r)
                continue
            values, sid = r
            _C._set_grads(self._params, None)
            try:
                with lucid.no_grad():
                    out = self._core(args, values, sid)
            except ArtifactError as e:
                reasons.append(str(e).split(";")[0])
                continue
            wrt = [self._params[i] for i in py["wrt"]]
            if self.keep_grads:
                _C._set_grads(wrt, out[:1 + len(wrt)] if self._extra else out, 1)
            if self._extra:
                with lucid.no_grad():
                    for p, g in zip(self._extra, out[1 + len(wrt):]):
                        if g is not None:
                            p.grad = g if p.grad is None else p.grad + g
            return out[0]
        raise ArtifactError("load_compiled: no saved step signature applies to this call"
                            + (f" ({'; '.join(dict.fromkeys(reasons))})" if reasons else "")
                            + "; saved:\n  " + "\n  ".join(self.signatures))

    @property
    def signatures(self):
        return self._core.signatures

    @property
    def lr(self):
        return self.optimizer.param_groups[0]["lr"]

    @lr.setter
    def lr(self, v):
        for g in self.optimizer.param_groups:
            g["lr"] = v

    def parameters(self):
        return list(self._params)

    def state_dict(self):
        model = {n[len("model."):]: v for n, v in self._core.state_dict().items() if n.startswith("model.")}
        return {"model": model, "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state_dict):
        """{'model': ..., 'optimizer': ...} as state_dict() returns (values copied in place)."""
        self._core.load_state_dict({"model." + k: v for k, v in state_dict["model"].items()}, strict=False)
        opt = state_dict["optimizer"]
        with lucid.no_grad():
            for i, st in opt["state"].items():
                own = self.optimizer.state.get(self._params[int(i)], {})
                for k, v in st.items():
                    if isinstance(v, Tensor) and isinstance(own.get(k), Tensor):
                        own[k].copy_(v)
        for g, saved in zip(self.optimizer.param_groups, opt["param_groups"]):
            g.update({k: v for k, v in saved.items() if k != "params"})

    def ir(self, key=None):
        return self._core.ir(key)

    def cache_info(self):
        return self._core.cache_info()

    def __repr__(self):
        return f"LoadedStep({self._core._name!r} from {self.path!r}, {len(self._sigs)} signatures)"


def load_compiled(path, *, weights=None):
    """Loads an artifact written by save_compiled: a LoadedModule (from a CompiledModule) or a
    LoadedStep (from a FusedStep). weights: a dict of name -> tensor replacing the stored weights
    (required for an artifact saved with weights=False): a model's state_dict for a compiled
    module; for a step, the names its artifact lists ('model.<key>', 'optimizer.state.<i>.<key>').
    Names, shapes and dtypes must match. Raises
    ArtifactError naming the cause for any file that can't be used."""
    path = os.fspath(path)
    if weights is not None:
        if not isinstance(weights, dict) or not all(isinstance(v, Tensor) for v in weights.values()):
            raise TypeError("load_compiled: weights must be a dict of name -> Tensor (a state_dict)")
    art = _C._Artifact.load(path, weights)
    kinds = {"fused_step": LoadedStep, "compiled_module": LoadedModule}
    if art.kind not in kinds:
        raise ArtifactError(f"load_compiled: {path!r} holds a {art.kind!r}, not a compiled module or step")
    try:
        return kinds[art.kind](art, path)
    except ArtifactError:
        raise
    except Exception as e:  # noqa: BLE001  (the C++ side checked its part; this is the Python description)
        raise ArtifactError(f"load_compiled: {path!r} is corrupt: its description of the calls is invalid "
                            f"({type(e).__name__}: {e})") from None
