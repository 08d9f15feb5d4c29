"""What lucid.compile tells the user when a signature falls back (issue 10, item 12): the warning
names the user's function (a module's class, a function's name, fused_step's model and loss) and
the user's source line of the host read that was actually called; diagnose() says what to change;
a fused_step's cache_info()["eager_only"] lists every signature that fell back."""
import inspect
import re
import warnings

import pytest

import lucid
import lucid.nn as nn
from lucid.compile import CompileWarning
from lucid.compile._advice import ADVICE, advice

HOST_READS = {
    "int": lambda h: h * int(h.sum() > 0),
    "float": lambda h: h * float(h.sum()),
    "bool": lambda h: h if bool(h.sum() > 0) else -h,
    "item": lambda h: h * h.sum().item(),
    "numpy": lambda h: h * float(h.sum().detach().numpy()),
}


def _line_of(fn):
    """(file name, line number, source text) of the one-line lambda `fn`."""
    lines, start = inspect.getsourcelines(fn)
    return fn.__code__.co_filename, start, lines[0].strip()


def _caught(call):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        call()
    msgs = [x for x in w if issubclass(x.category, CompileWarning)]
    assert len(msgs) == 1, [str(x.message) for x in w]
    return msgs[0]


def _check(msg, kind, read, who):
    path, line, text = _line_of(read)
    s = str(msg.message)
    assert s.startswith(f"lucid.compile: {who} "), s
    assert f"{kind}() read a tensor's value on the host" in s, s
    assert f":{line} in <lambda>: `{text}`" in s, s
    assert "_traced" not in s and "float64[]" not in s, s  # no internals, no hyper-parameter inputs
    assert "To compile it: " in s
    assert msg.filename == __file__  # attributed to the user's call, not to lucid's internals


class Net(nn.Module):
    def __init__(self, read):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.read = read

    def forward(self, x):
        return self.read(self.lin(x))


@pytest.mark.parametrize("kind", sorted(HOST_READS))
def test_compiled_module_warning_names_the_class_and_the_host_read_line(kind):
    cm = lucid.compile(Net(HOST_READS[kind]))
    msg = _caught(lambda: cm(lucid.randn(4, 3)))
    _check(msg, kind, HOST_READS[kind], "Net")


@pytest.mark.parametrize("kind", sorted(HOST_READS))
def test_compiled_function_warning_names_the_function(kind):
    read = HOST_READS[kind]

    def my_step(x):
        return read(x * 2)
    f = lucid.compile(my_step)
    msg = _caught(lambda: f(lucid.randn(4, 3)))
    _check(msg, kind, read, "test_compiled_function_warning_names_the_function.<locals>.my_step")


@pytest.mark.parametrize("where", ["loss_fn", "forward"])
@pytest.mark.parametrize("kind", sorted(HOST_READS))
def test_fused_step_warning_names_model_and_loss_and_the_users_line(kind, where):
    read = HOST_READS[kind]
    model = Net(read if where == "forward" else (lambda h: h))
    opt = lucid.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def loss_fn(out, y):
        out = read(out) if where == "loss_fn" else out
        return ((out - y) ** 2).mean()
    step = lucid.compile.fused_step(model, loss_fn, opt)
    x, y = lucid.randn(4, 3), lucid.randn(4, 2)
    # (the first step creates the momentum buffers eagerly; the next ones trace, fall back and warn once)
    msg = _caught(lambda: [step(x, y) for _ in range(4)])
    _check(msg, kind, read, f"fused_step(Net, {loss_fn.__qualname__})")
    info = step.cache_info()
    assert list(info["eager_only"]) == ["(float32[4,3], float32[4,2])"]


def test_fused_step_eager_only_lists_every_signature_that_fell_back():
    model = nn.Linear(3, 2)
    opt = lucid.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def loss_fn(out, y):
        loss = ((out - y) ** 2).mean()
        if float(loss) > 1e9:
            raise AssertionError("unreachable")
        return loss
    step = lucid.compile.fused_step(model, loss_fn, opt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        for bs in (4, 4, 4, 5, 5, 6, 6):  # the first momentum step re-keys the optimizer's signatures
            step(lucid.randn(bs, 3), lucid.randn(bs, 2))
    eo = step.cache_info()["eager_only"]
    assert sorted(eo) == [f"(float32[{b},3], float32[{b},2])" for b in (4, 5, 6)], eo
    assert all("float() read" in r and "loss_fn" in r for r in eo.values())
    step.clear_cache()
    assert step.cache_info()["eager_only"] == {}


def test_warned_once_per_reason_after_fused_step_rekeys():
    model = nn.Linear(3, 2)
    opt = lucid.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = lucid.compile.fused_step(model, lambda o, y: ((o - y) ** 2).mean() * (1 + 0 * float(o.sum())), opt)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(5):
            step(lucid.randn(4, 3), lucid.randn(4, 2))
    assert len([x for x in w if issubclass(x.category, CompileWarning)]) == 1


@pytest.mark.parametrize("fn,shape,expect", [  # tensors are made in the test, not held by the collected items
    (lambda x: x * float(x.sum()), (3,), r"float\(\) read.*To compile it: keep the value a tensor"),
    (lambda x: x * x.sum().item(), (3,), r"item\(\) read.*To compile it: don't read tensor values"),
    (lambda x: x[x > 0].sum(), (6,), r"nonzero\(\) read.*fixed-shape form"),
])
def test_diagnose_says_what_to_change(fn, shape, expect):
    inputs = (lucid.randn(*shape),)
    rep = lucid.compile.diagnose(fn, *inputs)
    assert rep.not_lowered and len(rep.suggestions) == len(rep.not_lowered)
    assert re.search(expect, rep.recommendation), rep.recommendation
    assert "to compile it:" in str(rep)


def test_diagnose_of_a_clean_function_has_no_suggestions():
    rep = lucid.compile.diagnose(lambda x: (x * 2).sum(), lucid.randn(3))
    assert rep.not_lowered == [] and rep.suggestions == [] and "compiles as one executable" in rep.recommendation


@pytest.mark.parametrize("reason,needle", [
    ("int() read a tensor's value on the host during the trace", "keep the value a tensor"),
    ("numpy() read a tensor's value on the host during the trace", "don't read tensor values"),
    ("randn: a random op drawing from a generator other than lucid's default one", "default generator"),
    ("the default generator was reseeded during the trace (lucid.manual_seed inside the compiled function)",
     "manual_seed outside"),
    ("add_: in-place write through a view of a non-contiguous base", "out of place"),
    ("an in-place write to argument 0 of shape [3] whose memory overlaps argument 1", "views of one tensor"),
    ("Linear has forward hooks (Python code run at every call)", "forward hooks"),
    ("Net.count is assigned during the trace: Python state changed", "tensor buffer"),
    ("Net.s is rebound during the trace and can't become an update of the bound tensor: x", "in place"),
    ("the function returned a set; compiled outputs are tensors", "return tensors"),
    ("autograd: an output that requires grad is an argument or a bound tensor itself", "computes"),
    ("make_step: the step function must return one scalar loss that requires grad", "single floating-point loss"),
    ("NotImplementedError: no lowering for op Foo", "compile the parts around it"),
    ("something new", "lucid.compile.diagnose"),
])
def test_every_fallback_reason_kind_has_a_concrete_suggestion(reason, needle):
    assert needle in advice(reason)


def test_advice_patterns_are_distinct():
    assert len({p for p, _ in ADVICE}) == len(ADVICE)
