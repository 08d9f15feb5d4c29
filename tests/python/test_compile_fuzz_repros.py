"""Minimal reproducers of what the random-program fuzzer (test_compile_fuzz.py) found, each with
the cause and the fix, plus the object-identity checks of returned arguments and parameters that
the fuzzer's value comparisons can't see."""
import numpy as np

import lucid
import lucid.nn as nn
from harness import assert_close_to_eager
from lucid import _C


class _EmaBuffer(nn.Module):
    """An EMA-style buffer update whose decayed intermediate is also read by a reduction, so the
    fused group {buf*0.75, mean*0.25, add} has two outputs: the decayed buffer and the new one."""

    def __init__(self):
        super().__init__()
        self.register_buffer("buf", lucid.tensor([1.0, 2.0]))

    def forward(self, x):
        decayed = self.buf * 0.75
        self.buf.copy_(decayed + x.mean(0) * 0.25)
        return x - self.buf, decayed.sum()


def test_fused_group_with_two_outputs_reads_its_donated_input_first():
    # Found by the fuzzer. The Mean result dies at the fused group, so the memory plan gives its
    # arena buffer to the group's first output (the decayed buffer). The block interpreter copies
    # an input that shares memory with an output into a register before any write, but it
    # detected sharing by Storage identity, and arena slots are distinct Storage objects over one
    # allocation: output 0 was written over the Mean result before mean*0.25 read it. Fixed in
    # backends/cpu/compile/fused_ew.cpp (overlap compared by address). The group's second output is
    # the new buffer, written straight into the bound tensor, which the group also reads.
    eager, model = _EmaBuffer(), _EmaBuffer()
    cm = lucid.compile(model, strict=True)
    with lucid.no_grad():
        for k in range(3):
            x = lucid.tensor([[1.0, 1.0 + k]])
            got, want = cm(x), eager(x)
            for j in range(2):
                assert_close_to_eager(got[j], want[j], f"call {k} output {j}", 1e-6)
            assert_close_to_eager(model.buf, eager.buf, f"call {k} buffer", 1e-6)
    assert cm.cache_info()["hits"] == 2
    # The same graph as IR: compiled == the reference interpreter on the unoptimised graph.
    g = _C._parse_ir("""graph(%0: float32[1,2] input, %1: float32[2] state, %2: float64[] scalar=0.75, %3: float64[] scalar=0.25) {
  %4 = Mean(%0) {dims=[0], keepdim=false} : float32[2]
  %5 = Mul(%1, %2) : float32[2]
  %6 = Mul(%4, %3) : float32[2]
  %7 = Add(%5, %6) : float32[2]
  %8 = Sub(%0, %7) : float32[1,2]
  %9 = Sum(%5) {dims=[0], keepdim=false} : float32[]
  assign %1 <- %7
  return (%8, %9)
}""")
    exe, stats = _C._compile_graph(g, "")
    assert stats["in_place"] == 1 and stats["fused_groups"] == 1, stats
    assert "into %1" in exe.memory_plan, exe.memory_plan
    x = lucid.tensor([[1.0, 3.0]])
    buf_c, buf_r = lucid.tensor([1.0, 2.0]), lucid.tensor([1.0, 2.0])
    got, want = exe.run([x], [buf_c]), g.interpret([x], [buf_r])
    for k, (a, b) in enumerate(zip(got, want)):
        assert_close_to_eager(a, b, f"output {k}", 1e-6)


def test_fused_group_step_reading_one_operand_twice():
    # Found by the fuzzer: where(a > y, a, y * 0.5) with a = x + x. The block interpreter's register
    # allocator freed the register of an operand read twice by one step (x + x) twice, so two later
    # operands (Gt's bool result and its cast to float32 for Where) shared one register and the
    # cast overwrote the mask it was reading. Fixed in backends/cpu/compile/fused_ew.cpp (freed once).
    def f(x, y):
        a = x + x
        return lucid.where(a > y, a, y * 0.5)

    cm = lucid.compile(f, strict=True)
    rng = np.random.default_rng(0)
    for k in range(4):
        x, y = (lucid.tensor(rng.standard_normal((2, 5)).astype(np.float32)) for _ in range(2))
        assert_close_to_eager(cm(x, y), f(x, y), f"call {k}", 0.0)
    assert cm.cache_info()["hits"] == 3
    g = _C._parse_ir("""graph(%0: float32[2,5] input, %1: float32[2,5] input) {
  %2 = Add(%0, %0) : float32[2,5]
  %3 = Gt(%2, %1) : bool[2,5]
  %4 = Where(%3, %2, %1) : float32[2,5]
  return (%4)
}""")
    exe, stats = _C._compile_graph(g, "")
    assert stats["fused_groups"] == 1, stats
    for k in range(4):
        xs = [lucid.tensor(rng.standard_normal((2, 5)).astype(np.float32)) for _ in range(2)]
        assert_close_to_eager(exe.run(xs, [])[0], g.interpret(xs, [])[0], f"IR run {k}", 0.0)


class _ScaleArgInPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", lucid.zeros(2))

    def forward(self, x):
        x.mul_(2.0)
        self.count.add_(1.0)
        return x, self.count


def test_returned_unwritten_argument_aliases_it():
    # Unwritten arguments and buffers returned by the function come back as the same tensor
    # (docs/compile.md: "A returned argument or bound tensor is returned as itself").
    cm = lucid.compile(lambda x, y: (x, y + 1), strict=True)
    for k in range(3):
        x, y = lucid.ones(2), lucid.ones(2)
        out, _ = cm(x, y)
        out.add_(1.0)
        np.testing.assert_array_equal(x.numpy(), [2.0, 2.0], err_msg=f"call {k}")


def test_returned_argument_and_buffer_written_in_place_are_themselves():
    eager, model = _ScaleArgInPlace(), _ScaleArgInPlace()
    cm = lucid.compile(model, strict=True)
    with lucid.no_grad():
        for k in range(3):
            xe, xc = lucid.ones(2), lucid.ones(2)
            oe, ce = eager(xe)
            oc, cc = cm(xc)
            for o in (oe, oc, ce, cc):
                o.add_(10.0)
            np.testing.assert_array_equal(xc.numpy(), xe.numpy(), err_msg=f"call {k}: argument")
            np.testing.assert_array_equal(model.count.numpy(), eager.count.numpy(), err_msg=f"call {k}: buffer")


def test_returned_argument_and_parameter_are_the_same_python_objects():
    lin = nn.Linear(2, 2)
    cm = lucid.compile(lambda x: (x, lin.weight), strict=True)
    with lucid.no_grad():
        for k in range(2):
            x = lucid.ones(2)
            a, w = cm(x)
            assert a is x and w is lin.weight, f"call {k}"
