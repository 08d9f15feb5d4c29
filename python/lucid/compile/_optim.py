"""compile_optimizer: an optimizer whose step() runs as one cached executable.

The optimizer's own step() is traced (every optimizer in lucid.optim updates parameters and
state with in-place tensor ops, which become assigns of the graph). What is read at run time:

- gradients: each parameter's current `.grad` is an input (zero_grad may replace the tensor);
- hyper-parameters: every number in param_groups (lr, momentum, betas, eps, ...) is fed as a 0-d
  float64 input at every call, so a scheduler or `group['lr'] = x` takes effect without a
  recompile. While tracing, a number is a `_Hyper` tensor; when the optimizer's Python code
  branches on it (`if momentum != 0`) the test's outcome joins the signature (OneCycleLR's
  changing momentum keeps `momentum != 0` true: no recompile), and a float() conversion makes
  the value itself part of the signature;
- parameters and optimizer state (exp_avg, momentum_buffer, step): bound state, updated in place.

The structure (which parameters have a grad, which state entries exist, non-numeric options such
as amsgrad or nesterov) is the signature. A step that changes the structure (the first step
creating the state lazily) runs eagerly, exactly as the eager optimizer would.
"""
import contextlib
import numbers

import lucid
from lucid import _C
from lucid._C import Tensor
from lucid.compile._compiled import CompiledModule
from lucid.optim.lbfgs import LBFGS
from lucid.optim.optimizer import _closure_loss

__all__ = ["compile_optimizer", "CompiledOptimizer"]


_TESTS = {
    "eq": lambda v, o: v == o, "ne": lambda v, o: v != o, "lt": lambda v, o: v < o,
    "le": lambda v, o: v <= o, "gt": lambda v, o: v > o, "ge": lambda v, o: v >= o,
    "bool": lambda v, o: bool(v),
}


class _Hyper(Tensor):
    """A numeric hyper-parameter during a trace: a 0-d float64 graph input in arithmetic. Python
    control flow on it is recorded: a comparison or bool() becomes a test whose outcome joins the
    signature (`momentum != 0`), a float()/int() conversion makes the value itself part of it."""

    def __init__(self, t, value, name, tests):
        Tensor.__init__(self, t)
        self._value = value
        self._name = name
        self._tests = tests

    def _test(self, op, other=None):
        self._tests.setdefault(self._name, set()).add((op, other))
        return self._value if op == "value" else _TESTS[op](self._value, other)

    def __bool__(self):
        return self._test("bool")

    def __float__(self):
        return float(self._test("value"))

    def __int__(self):
        return int(self._test("value"))

    def __index__(self):
        return int(self._test("value"))

    def __eq__(self, other):
        return self._test("eq", other)

    def __ne__(self, other):
        return self._test("ne", other)

    def __lt__(self, other):
        return self._test("lt", other)

    def __le__(self, other):
        return self._test("le", other)

    def __gt__(self, other):
        return self._test("gt", other)

    def __ge__(self, other):
        return self._test("ge", other)

    __hash__ = object.__hash__


def hyper_input(inputs, name, v):
    """The 0-d float64 input carrying hyper-parameter `name` (inputs: name -> [tensor, value]):
    one tensor per name, refilled in place only when the value changed (a scheduler step), so a
    call allocates nothing. Shared by CompiledOptimizer and a loaded step (_export.py)."""
    t = inputs.get(name)
    if t is None:
        t = inputs[name] = [lucid.tensor(float(v), dtype=lucid.float64), v]
    elif t[1] != v:
        with lucid.no_grad():
            t[0].fill_(float(v))
        t[1] = v
    return t[0]


def _is_number(v):
    t = type(v)
    if t is float or t is int:  # the common case, without the ABC check
        return True
    return t is not bool and isinstance(v, numbers.Real)


class CompiledOptimizer:
    """Wraps an optimizer; `step()` runs compiled. param_groups, state, state_dict,
    load_state_dict, zero_grad, add_param_group are the wrapped optimizer's."""

    def __init__(self, opt, *, strict=False):
        if isinstance(opt, LBFGS):
            raise NotImplementedError(
                "compile_optimizer: LBFGS is not supported: its line search evaluates the closure a "
                "data-dependent number of times, which one executable can't express")
        if not isinstance(opt, lucid.optim.Optimizer):
            raise TypeError(f"compile_optimizer: expected a lucid.optim.Optimizer, got {type(opt).__name__}")
        self.opt = opt
        self._tests = {}        # hyper-parameter name -> {(test, operand)} seen in Python control flow
        self._hyper_inputs = {}  # hyper-parameter name -> [0-d float64 tensor, the value it holds]
        self._settled = set()   # structures whose step leaves the structure unchanged
        self._states_seen = []  # every opt.state dict keyed so far (kept alive: their ids stay unique)
        self._sig_ids, self._sigs = {}, []  # (structure, outcomes, names, baked) <-> small int
        self._hyper_memo = None  # (hypers, number of tests, hyper args) of the last call
        self._cm = CompiledModule(self._traced_step, strict=strict)

    # the wrapped optimizer's API
    param_groups = property(lambda self: self.opt.param_groups)
    state = property(lambda self: self.opt.state)
    defaults = property(lambda self: self.opt.defaults)

    def zero_grad(self, set_to_none=True):
        self.opt.zero_grad(set_to_none)

    def state_dict(self):
        return self.opt.state_dict()

    def load_state_dict(self, state_dict):
        self.opt.load_state_dict(state_dict)
        self._cm.clear_cache()

    def add_param_group(self, group):
        self.opt.add_param_group(group)

    def cache_info(self):
        return self._cm.cache_info()

    def clear_cache(self):
        self._cm.clear_cache()

    def __repr__(self):
        return f"CompiledOptimizer({self.opt!r})"

    # signature pieces
    def _params(self):
        return [p for g in self.opt.param_groups for p in g["params"]]

    def _scan(self):
        """One pass over param_groups: every numeric hyper-parameter as ((group, key, index), value)
        in a fixed order (index: position in a tuple such as betas, else None), and the other
        options as (group, key, value)."""
        hypers, other = [], []
        for gi, g in enumerate(self.opt.param_groups):
            for k in sorted(g):
                if k == "params":
                    continue
                v = g[k]
                if _is_number(v):
                    hypers.append(((gi, k, None), v))
                elif isinstance(v, tuple) and v and all(map(_is_number, v)):
                    hypers.extend(((gi, k, j), x) for j, x in enumerate(v))
                else:
                    other.append((gi, k, v))
        return hypers, tuple(other)

    def _signature(self, params, grads_made=False):
        """(structure, hyper-parameter args) of a call. The structure: which state dict, group
        sizes, which parameters have a grad (or, when the step makes the grads itself as
        fused_step does, which require grad), each parameter's state keys, the non-numeric
        options. Hyper args: see _hyper_args."""
        opt = self.opt
        state = opt.state
        if all(id(s) != id(state) for s in self._states_seen):
            self._states_seen.append(state)
        hypers, other = self._scan()
        keys, requires_grad, has_grad = _C._param_structure(params, state)
        struct = (id(state), tuple([len(g["params"]) for g in opt.param_groups]),
                  requires_grad if grads_made else has_grad, keys, other)
        # The hyper args change only with a hyper-parameter's value or a newly recorded test.
        n_tests, memo = self._n_tests(), self._hyper_memo
        if memo is None or memo[1] != n_tests or memo[0] != hypers:
            memo = self._hyper_memo = (hypers, n_tests, self._hyper_args(hypers))
        return struct, memo[2]

    def _signature_id(self, struct, outcomes, names, baked):
        """A small int standing for (structure, test outcomes, names, baked): compiled calls are
        keyed by it, cheap to hash, instead of by the nested tuples themselves."""
        sig = (struct, outcomes, names, baked)
        sid = self._sig_ids.get(sig)
        if sid is None:
            sid = self._sig_ids[sig] = len(self._sigs)
            self._sigs.append(sig)
        return sid

    def _hyper_args(self, hypers):
        """(values, outcomes, names, baked): the hyper-parameter part of a compiled call, from
        _scan's hypers."""
        names = tuple(n for n, _ in hypers)
        tests = self._tests
        baked = {n for n, t in tests.items() if any(op == "value" for op, _ in t)}
        values = [self._hyper_tensor(n, v) for n, v in hypers if n not in baked]
        outcomes = tuple((n, op, o, v if op == "value" else _TESTS[op](v, o))
                         for n, v in hypers if n in tests for op, o in sorted(tests[n], key=repr))
        return values, outcomes, names, tuple(sorted(baked, key=repr))

    def _hyper_tensor(self, name, v):
        return hyper_input(self._hyper_inputs, name, v)

    def _n_tests(self):
        return sum(len(t) for t in self._tests.values())

    def step(self, closure=None):
        loss = _closure_loss(closure)
        params = self._params()
        struct, (values, outcomes, names, baked) = self._signature(params)
        if struct not in self._settled:  # e.g. the first step creates the state: eager
            type(self.opt).step(self.opt)
            if self._signature(params)[0] == struct:
                self._settled.add(struct)
            return loss
        grads = [p.grad for p in params]
        n_tests = self._n_tests()
        with lucid.no_grad():  # the update is not differentiated (as in the eager step)
            self._cm(grads, values, self._signature_id(struct, outcomes, names, baked))
        if self._n_tests() != n_tests:
            # This trace met new control flow on a hyper-parameter: its entry is keyed without
            # that test's outcome; drop it so the next call keys on it.
            self._cm.clear_cache()
        return loss

    def _traced_step(self, grads, values, sid):
        """Runs the optimizer's step with tensor hyper-parameters (while tracing, or eagerly on a
        fallback). The grads are the parameters' own .grad tensors (inputs of the graph); sid
        names the structure and hyper-parameter names (_signature_id)."""
        names, baked = self._sigs[sid][2:]
        with self._substituted(values, names, baked):
            type(self.opt).step(self.opt)
        return None

    @contextlib.contextmanager
    def _substituted(self, values, names, baked):
        """param_groups' numbers replaced by _Hyper tensors (the graph inputs `values`)."""
        opt = self.opt
        it = iter(values)
        saved = []
        try:
            for name in names:
                gi, k, j = name
                g = opt.param_groups[gi]
                if name in baked:
                    continue
                v = g[k] if j is None else g[k][j]
                h = _Hyper(next(it), v, name, self._tests)
                saved.append((g, k, g[k]))
                if j is None:
                    g[k] = h
                else:
                    cur = list(g[k])
                    cur[j] = h
                    g[k] = tuple(cur)
            yield
        finally:
            for g, k, v in reversed(saved):
                g[k] = v


def compile_optimizer(opt, *, strict=False):
    """Returns an optimizer whose step() runs as one cached executable (see CompiledOptimizer)."""
    return CompiledOptimizer(opt, strict=strict)
