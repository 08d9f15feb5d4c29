"""save_compiled: a compiled model, function or training step as one file that runs without the
model's Python code (the C++ side: csrc/lucid/compile/export/artifact.h; loading: _loaded.py).

save_compiled writes every cached signature of a CompiledModule or FusedStep: the optimised
programs, the bound tensors by name (state_dict keys, `optimizer.state.<i>.<key>`), the gradient
wiring, and, as JSON, what the Python side needs to rebuild a call: the nesting of the
arguments and of the result, the grad mode and the training flag of each signature, and for a
step its optimizer's param_groups and the hyper-parameter tests its trace relied on.

The JSON encoding of Python values (`_value_spec` in _compiled.py, `_hyper_value` here) is
decoded by `_value` and `_hyper` below, which _loaded.py shares.
"""
import json
import os

import lucid
from lucid import _C
from lucid._C import Tensor
from lucid.compile._compiled import CompiledModule
from lucid.compile._fused import FusedStep

__all__ = ["save_compiled", "ArtifactError"]

ArtifactError = _C.ArtifactError


# ---------------------------------------------------------------------------------------- save
def _qualified_names(roots):
    """impl id -> (name, role, weight) of every tensor the given (prefix, module) roots hold:
    parameters and persistent buffers are weights (state_dict keys), non-persistent buffers and
    plain tensor attributes are not. The first name of a shared tensor wins (its other names are
    aliases)."""
    names, aliases = {}, {}
    for root_prefix, root in roots:
        for mod_name, m in root.named_modules(remove_duplicate=False):
            prefix = root_prefix + (mod_name + "." if mod_name else "")
            d = m.__dict__
            nonpersistent = d.get("_non_persistent_buffers_set", set())
            items = [(k, v, "parameter", True) for k, v in d.get("_parameters", {}).items()]
            items += [(k, v, "buffer", k not in nonpersistent) for k, v in d.get("_buffers", {}).items()]
            items += [(k, v, "attribute", False) for k, v in d.items() if isinstance(v, Tensor)]
            for k, v, role, weight in items:
                if v is None:
                    continue
                i = _C._impl_id(v)
                if i in names:
                    if names[i][0] != prefix + k and names[i][2] and weight:
                        aliases.setdefault(names[i][0], []).append(prefix + k)
                    continue
                names[i] = (prefix + k, role, weight)
    return names, aliases


def _function_roots(fn):
    """(variable name + '.', module) for the modules a compiled function reaches through its
    closure and globals (as CompiledModule._watch_captured finds them)."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    roots = []
    for name, c in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            v = c.cell_contents
        except ValueError:
            continue
        if isinstance(v, lucid.nn.Module):
            roots.append((name + ".", v))
    g = getattr(fn, "__globals__", {})
    roots += [(n + ".", g[n]) for n in code.co_names if isinstance(g.get(n), lucid.nn.Module)]
    return roots


def _captured_tensor_names(fn):
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    out = {}
    if code is None:
        return out
    for name, c in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            v = c.cell_contents
        except ValueError:
            continue
        if isinstance(v, Tensor):
            out.setdefault(_C._impl_id(v), name)
    g = getattr(fn, "__globals__", {})
    for n in code.co_names:
        if isinstance(g.get(n), Tensor):
            out.setdefault(_C._impl_id(g[n]), n)
    return out


class _Table:
    """The artifact's tensor table: one row per distinct bound tensor."""

    def __init__(self, names):
        self.names = names
        self.rows, self.index = [], {}

    def add(self, t, fallback):
        i = _C._impl_id(t)
        if i not in self.index:
            name, role, weight = self.names.get(i) or (fallback, "captured", False)
            self.index[i] = len(self.rows)
            self.rows.append((name, t, role, t.requires_grad, weight))
        return self.index[i]


def _root_training(cm):
    """The training flag a loaded artifact starts in: the first watched module's (the model, or
    the first module a function reaches), as each entry records it (CompiledModule._trace)."""
    return cm._watched[0].training if cm._watched else None


def _compiled_keys(cm, signatures):
    keys = [k for k in cm._keys() if k in cm._info and cm._info[k]["reason"] is None]
    if signatures != "all":
        wanted = [signatures] if isinstance(signatures, str) else list(signatures)
        by_descr = {cm._info[k]["descr"]: k for k in keys}
        missing = [w for w in wanted if w not in by_descr]
        if missing:
            raise ArtifactError(f"save_compiled: no compiled signature {missing[0]!r}; compiled: {sorted(by_descr)}")
        keys = [by_descr[w] for w in wanted]
    if not keys:
        fell = sorted(cm.cache_info()["eager_only"].items())
        why = (" (signatures that ran eagerly can't be saved: "
               + "; ".join(f"{d}: {r}" for d, r in fell[:3]) + ")") if fell else ""
        raise ArtifactError(f"save_compiled: {cm._name} has no compiled signature to save; call it first{why}")
    return sorted(keys, key=lambda k: cm._info[k]["order"])


def _input_names(call):
    """A readable path per flat tensor of a call spec (args[0], args[1][2], kwargs['mask'])."""
    out = []

    def walk(sp, path):
        (kind, v), = sp.items()
        if kind == "T":
            out.append(path)
        elif kind in ("tuple", "list"):
            for i, c in enumerate(v):
                walk(c, f"{path}[{i}]")
        elif kind == "dict":
            for k, c in v:
                walk(k, f"{path}.key")
                walk(c, f"{path}[{_value(k['V'])!r}]" if "V" in k else f"{path}.value")

    walk(call["args"], "args")
    if call["kwargs"] is not None:
        walk(call["kwargs"], "kwargs")
    return out


def _entries(cm, keys, table, extra=None):
    entries = []
    for key in keys:
        info = cm._info[key]
        for what in ("call", "out"):
            if isinstance(info[what], str):
                raise ArtifactError(f"save_compiled: can't save {cm._name} {info['descr']}: {info[what]}")
        rec = cm._entry_record(key)
        states = [table.add(t, f"captured.{len(table.rows)}") for t in rec.pop("states")]
        rec.pop("out_kind")
        py = {"descr": info["descr"], "call": info["call"], "out": info["out"], "grad_enabled": info["grad_enabled"],
              "autocast": info.get("autocast", {}), "training": info["training"]}
        input_names, defaults = _input_names(info["call"]), []
        if extra is not None:
            more = extra(key)
            defaults = more.pop("defaults")
            for i, n in defaults:
                input_names[i] = n
            defaults = [(i, copt_value) for (i, _), copt_value in zip(defaults, more.pop("default_values"))]
            py.update(more)
        entries.append(dict(rec, states=states, input_names=input_names, defaults=defaults, python=json.dumps(py)))
    return entries


def save_compiled(target, path, *, signatures="all", weights=True):
    """Writes `target` (a CompiledModule, from lucid.compile, or a FusedStep, from fused_step)
    to `path` as one artifact: every cached signature (or those named by `signatures`: cache_info()
    keys), the bound tensors by name, and their values unless weights=False. Returns True, or
    raises ArtifactError with the reason; the file is written atomically, so a failed save leaves
    an existing file as it was."""
    path = os.fspath(path)
    if isinstance(target, FusedStep):
        return _save_step(target, path, signatures, weights)
    if not isinstance(target, CompiledModule):
        raise TypeError(f"save_compiled: expected a CompiledModule (lucid.compile(...)) or a FusedStep "
                        f"(fused_step(...)), got {type(target).__name__}")
    cm = target
    with cm._lock:
        keys = _compiled_keys(cm, signatures)
        model = cm.model
        if isinstance(model, lucid.nn.Module):
            names, aliases = _qualified_names([("", model)])
        else:
            names, aliases = _qualified_names(_function_roots(model))
            for i, n in _captured_tensor_names(model).items():
                names.setdefault(i, (n, "captured", False))
        table = _Table(names)
        entries = _entries(cm, keys, table)
        # every weight of the model, bound or not, so that state_dict() and weights= see them all
        if isinstance(model, lucid.nn.Module):
            for k, v in model.state_dict(keep_vars=True).items():
                table.add(v, k)
        top = {"name": cm._name, "aliases": aliases, "training": _root_training(cm)}
        _C._save_artifact(path, "compiled_module", table.rows, entries, bool(weights), json.dumps(top))
    return True


def _hyper_value(v):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return ["v", v]
    if isinstance(v, (int, float)):
        return ["n", repr(v) if isinstance(v, float) else int(v), type(v).__name__]
    if isinstance(v, tuple):
        return ["t", [_hyper_value(x) for x in v]]
    raise TypeError(type(v).__name__)


def _save_step(step, path, signatures, weights):
    cm, copt, opt = step._cm, step._copt, step.optimizer
    with cm._lock:
        keys = _compiled_keys(cm, signatures)
        model = step.model
        roots = [("model.", model)] if isinstance(model, lucid.nn.Module) else _function_roots(model)
        names, aliases = _qualified_names(roots)
        params = copt._params()
        pindex = {_C._impl_id(p): i for i, p in enumerate(params)}
        for i, p in enumerate(params):
            names.setdefault(_C._impl_id(p), (f"optimizer.param.{i}", "parameter", True))
            for k, v in opt.state.get(p, {}).items():
                if isinstance(v, Tensor):
                    names.setdefault(_C._impl_id(v), (f"optimizer.state.{i}.{k}", "optimizer", True))
        table = _Table(names)
        groups = []
        for g in opt.param_groups:
            try:
                groups.append({"params": [pindex[_C._impl_id(p)] for p in g["params"]],
                               "options": [[k, _hyper_value(v)] for k, v in g.items() if k != "params"]})
            except TypeError as e:
                raise ArtifactError(f"save_compiled: optimizer option of type {e} can't be saved") from None
        non_tensor_state = {}
        for i, p in enumerate(params):
            for k, v in opt.state.get(p, {}).items():
                if not isinstance(v, Tensor):
                    try:
                        non_tensor_state.setdefault(str(i), {})[k] = _hyper_value(v)
                    except TypeError:
                        raise ArtifactError(f"save_compiled: optimizer state {k!r} of type {type(v).__name__} "
                                            "can't be saved") from None

        def extra(key):
            call = cm._info[key]["call"]
            sid = int(_value(call["args"]["tuple"][2]["V"]))
            (struct, _extra_key), outcomes, hyper_names, baked = copt._sigs[sid]
            wrt = [i for i, p in enumerate(params) if struct[2][i]]
            # the hyper-parameter inputs follow the user's tensors; their saved values are defaults
            # for callers that pass only the user's inputs (the C++ runner)
            n_user = sum(1 for _ in _input_names({"args": call["args"]["tuple"][0], "kwargs": None}))
            live = [n for n in hyper_names if n not in baked]
            groups_now = opt.param_groups
            vals = [groups_now[gi][k] if j is None else groups_now[gi][k][j] for gi, k, j in live]
            return {"defaults": [(n_user + q, f"param_groups[{n[0]}][{n[1]!r}]" + ("" if n[2] is None else f"[{n[2]}]"))
                                 for q, n in enumerate(live)],
                    "default_values": [lucid.tensor(float(v), dtype=lucid.float64) for v in vals],
                    "sid": sid, "hyper_names": [list(n) for n in hyper_names], "baked": [list(n) for n in baked],
                    "outcomes": [[list(n), op, _hyper_value(o), _hyper_value(r)] for n, op, o, r in outcomes],
                    "other": [[gi, k, _hyper_value(v)] for gi, k, v in struct[4]],
                    "wrt": wrt, "user_args": len(call["args"]["tuple"][0]["tuple"])}

        entries = _entries(cm, keys, table, extra)
        for p in params:
            table.add(p, "")
            for v in opt.state.get(p, {}).values():
                if isinstance(v, Tensor):
                    table.add(v, "")
        if isinstance(model, lucid.nn.Module):
            for k, v in model.state_dict(keep_vars=True).items():
                table.add(v, "model." + k)
        extra_params = [names[_C._impl_id(p)][0] for p in step._extra_params()[0]]
        top = {"name": cm._name, "aliases": aliases, "optimizer": type(opt).__name__, "param_groups": groups,
               "params": [table.rows[table.index[_C._impl_id(p)]][0] for p in params],
               "non_tensor_state": non_tensor_state, "keep_grads": step.keep_grads, "extra_params": extra_params,
               "training": _root_training(cm)}
        _C._save_artifact(path, "fused_step", table.rows, entries, bool(weights), json.dumps(top))
    return True


# ------------------------------------------------------------------------------ value decoding
def _value(v):
    """A Python value of a call or result from its JSON form (_compiled._value_spec)."""
    kind = v[0]
    if kind == "none":
        return None
    if kind in ("bool", "str"):
        return v[1]
    if kind == "int":
        return int(v[1])
    if kind == "float":
        return float(v[1])
    raise ArtifactError(f"load_compiled: corrupt artifact: unknown value kind {kind!r}")


def _hyper(v):
    """An optimizer option from its JSON form (_hyper_value)."""
    if v[0] == "v":
        return v[1]
    if v[0] == "n":
        return float(v[1]) if v[2] == "float" else int(v[1])
    return tuple(_hyper(x) for x in v[1])
