"""Porting harness: each program in tests/porting/programs/ is written once against `torch` and run
twice, under PyTorch and under lucid after an automatic import swap, and the results must agree.

The swap (`swap_imports`) rewrites the program's import statements only: `import torch` becomes
`import lucid as torch`, `import torch.nn as nn` becomes `import lucid.nn as nn`, `from torch.x
import y` becomes `from lucid.x import y`. Every other line, `torch.` references included, is run
as written. That is exactly the edit the issue allows a user ("change the imports"); an alias in
sys.modules would also work, but it would hide a lucid submodule that can't be imported by its own
name, and it would leak into anything else imported while the program runs.

Deterministic mode, the same for both runs:
- float64 default dtype (torch.set_default_dtype / lucid.set_default_dtype), so that the
  frameworks' different summation orders (MKL vs oneDNN) stay far below the 1e-5 tolerance over
  a few training steps; programs make float tensors in the default dtype;
- one thread in both frameworks (a fixed reduction order; and on a small shared machine torch's
  spinning worker threads make these tiny programs tens of times slower);
- identical initial weights: the program's `build()` makes the model, and the harness copies the
  torch model's initial state_dict into the lucid one (so the key names must match as well);
- data and every random choice (augmentation, shuffling, dropout masks are avoided) come from
  NumPy generators seeded inside the program, never from the framework's RNG.

A program defines `build() -> nn.Module` and `main(model) -> dict` of results (floats, lists,
NumPy arrays), and reads the global `COMPILE`, which the harness sets: None (eager), "compile"
(the program wraps its model with torch.compile) or "fused" (it trains with
torch.compile.fused_step, a lucid name: only set for lucid runs). PyTorch runs eagerly only
(torch.compile is minutes of Inductor work on two cores); lucid's compiled runs are compared
with the same PyTorch reference.

Run `python3 tests/porting/porting_harness.py` for a table of every program in every mode, PENDING ones
included.
"""
import contextlib
import importlib
import os
import re
import sys
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS_DIR = os.path.join(HERE, "programs")
PROGRAMS = sorted(f[:-3] for f in os.listdir(PROGRAMS_DIR) if f.endswith(".py") and not f.startswith("_"))
MODES = [None, "compile", "fused"]
RTOL = 1e-5

# (program, mode) pairs whose lucid run fails today, with the missing feature. Other branches are
# adding these features; the lead empties this dict after merging them (test_porting.py runs the
# torch side of every program regardless, and `python3 tests/porting/porting_harness.py` runs all).
PENDING = {("amp_scaler", "fused"): "fused_step(..., grad_scaler=) (issue 16)"}

# Programs whose compiled modes must fall back for part of the run, with the reason they must give.
# dann's hooks read values on the host (`.item()` in a forward hook and a backward hook), which no
# compiled call can replay (torch.compile graph-breaks there too): while they are installed its
# calls run eagerly with that reason; once they are removed the calls compile and hit the cache.
EXPECTED_FALLBACK = {"dann": "read a tensor's value on the host"}

_IMPORT = re.compile(r"^(\s*)import\s+torch(\.[\w.]+)?(\s+as\s+\w+)?\s*$")
_FROM = re.compile(r"^(\s*)from\s+torch(\.[\w.]+)?\s+import\s+")


def swap_imports(src):
    """The program's source with its torch imports turned into lucid imports (nothing else)."""
    out = []
    for line in src.splitlines(keepends=True):
        body = line.rstrip("\n")
        m = _IMPORT.match(body)
        if m:
            indent, sub, alias = m.group(1), m.group(2) or "", m.group(3)
            if not sub and not alias:
                alias = " as torch"
            elif sub and not alias:  # `import torch.nn` binds `torch`; keep that name bound to lucid
                body = f"{indent}import lucid{sub}; import lucid as torch"
                out.append(body + "\n")
                continue
            out.append(f"{indent}import lucid{sub}{alias}\n")
            continue
        m = _FROM.match(body)
        if m:
            out.append(_FROM.sub(lambda g: f"{g.group(1)}from lucid{g.group(2) or ''} import ", body, count=1) + "\n")
            continue
        out.append(line)
    return "".join(out)


def _load(name, framework, mode):
    path = os.path.join(PROGRAMS_DIR, name + ".py")
    with open(path) as f:
        src = f.read()
    if framework == "lucid":
        src = swap_imports(src)
    ns = {"__name__": f"porting_{name}_{framework}", "__file__": path}
    exec(compile(src, path, "exec"), ns)  # noqa: S102  (the harness's own test programs)
    ns["COMPILE"] = mode
    return ns


def _to_numpy(v):
    if isinstance(v, dict):
        return {k: _to_numpy(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return np.asarray([_to_numpy(x) for x in v])
    if hasattr(v, "detach"):
        return np.asarray(v.detach().numpy())
    return np.asarray(v)


@contextlib.contextmanager
def _compiled_objects(framework, mode):
    """Collects the CompiledModules a lucid run in a compiled mode creates (fused_step makes one
    too), so that check() can tell that the compiled path did run."""
    made = []
    if framework != "lucid" or mode is None:
        yield made
        return
    from lucid.compile import _compiled
    cls = _compiled.CompiledModule
    init = cls.__init__

    def recording(self, *a, **k):
        init(self, *a, **k)
        made.append(self)
    cls.__init__ = recording
    try:
        yield made
    finally:
        cls.__init__ = init


def run(name, framework, mode=None, init_state=None):
    """Run program `name` under "torch" or "lucid"; returns (results, initial state as NumPy).
    A lucid run in a compiled mode must have run compiled code (cache hits) and fallen back
    nowhere: a program that silently ran eagerly would match eager for the wrong reason."""
    fw = importlib.import_module(framework)
    old, old_threads = fw.get_default_dtype(), fw.get_num_threads()
    fw.set_default_dtype(fw.float64)
    fw.set_num_threads(1)
    try:
        ns = _load(name, framework, mode)
        model = ns["build"]()
        if init_state is not None:
            model.load_state_dict({k: fw.tensor(v) for k, v in init_state.items()})
        state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
        with _compiled_objects(framework, mode) as made:
            results = _to_numpy(ns["main"](model))
        if framework == "lucid" and mode is not None:
            assert made, f"{name} ({mode}): the program made no compiled model or step"
            infos = [cm.cache_info() for cm in made]
            fell = {k: v for i in infos for k, v in i["eager_only"].items()
                    if EXPECTED_FALLBACK.get(name) is None or EXPECTED_FALLBACK[name] not in v}
            assert not fell, f"{name} ({mode}): signatures ran eagerly: {fell}"
            assert sum(i["hits"] for i in infos) > 0, f"{name} ({mode}): no compiled call was served from the cache"
        return results, state
    finally:
        fw.set_default_dtype(old)
        fw.set_num_threads(old_threads)


def compare(want, got, path="result"):
    """Raise AssertionError naming the first result that differs beyond RTOL."""
    if isinstance(want, dict):
        assert set(want) == set(got), f"{path}: keys {sorted(want)} vs {sorted(got)}"
        for k in want:
            compare(want[k], got[k], f"{path}[{k!r}]")
        return
    want, got = np.asarray(want), np.asarray(got)
    assert want.shape == got.shape, f"{path}: shape {want.shape} vs {got.shape}"
    if want.dtype.kind in "biu":
        assert np.array_equal(want, got), f"{path}: {want} vs {got}"
        return
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=RTOL, atol=RTOL * 1e-3,
                               err_msg=path)


_reference = {}


def torch_reference(name):
    """(results, initial state) of the PyTorch run, computed once per program."""
    if name not in _reference:
        _reference[name] = run(name, "torch")
    return _reference[name]


def check(name, mode):
    """Run `name` under lucid in `mode` from torch's initial weights and compare with PyTorch."""
    want, state = torch_reference(name)
    got, _ = run(name, "lucid", mode, init_state=state)
    compare(want, got)


def _main():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
    width = max(len(p) for p in PROGRAMS)
    for name in PROGRAMS:
        for mode in MODES:
            try:
                check(name, mode)
                status = "ok"
            except Exception as e:  # a report of every failure, not a test
                tb = traceback.extract_tb(e.__traceback__)[-1]
                status = f"FAIL {type(e).__name__}: {str(e).splitlines()[0][:150]} ({os.path.basename(tb.filename)}:{tb.lineno})"
            pend = " [PENDING]" if (name, mode) in PENDING else ""
            print(f"{name:{width}s}  {str(mode):8s} {status}{pend}")


if __name__ == "__main__":
    _main()
