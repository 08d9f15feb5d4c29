"""Malformed calls raise a clear Python exception naming the op (and the argument or the
expected/given values); none crashes the interpreter. Each case runs in this process: a crash
would take the whole test run down, which is itself a failure."""
import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F


def t(*shape, dtype=None):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x = lucid.tensor(a)
    return x if dtype is None else x.to(dtype)


# (description, callable, exception type, regex the message must match)
CASES = [
    ("broadcast mismatch in add", lambda: t(3) + t(4), ValueError, r"add.*\[3\].*\[4\]"),
    ("broadcast mismatch in mul", lambda: t(2, 3) * t(3, 2), ValueError, r"mul.*broadcast"),
    ("matmul inner dims", lambda: t(2, 3) @ t(4, 5), ValueError, r"matmul.*3.*4"),
    ("matmul 0-d", lambda: lucid.matmul(t(), t(3)), ValueError, r"matmul"),
    ("bmm wrong rank", lambda: lucid.bmm(t(2, 3), t(3, 2)), ValueError, r"bmm"),
    ("linear wrong features", lambda: F.linear(t(2, 5), t(4, 6)), ValueError, r"linear"),
    ("conv2d channel mismatch", lambda: F.conv2d(t(1, 3, 8, 8), t(4, 2, 3, 3)), ValueError, r"conv2d.*channel"),
    ("conv2d wrong input rank", lambda: F.conv2d(t(3, 8), t(4, 3, 3, 3)), ValueError, r"conv2d"),
    ("conv2d groups not dividing", lambda: F.conv2d(t(1, 4, 8, 8), t(4, 2, 3, 3), groups=3), ValueError, r"conv2d.*group"),
    ("max_pool2d kernel too big", lambda: F.max_pool2d(t(1, 1, 2, 2), 5), ValueError, r"max_pool2d"),
    ("sum dim out of range", lambda: t(2, 3).sum(dim=5), IndexError, r"sum.*dim"),
    ("mean dim out of range", lambda: t(2, 3).mean(dim=-3), IndexError, r"mean.*dim"),
    ("softmax dim out of range", lambda: F.softmax(t(2, 3), dim=2), IndexError, r"softmax.*dim"),
    ("permute wrong length", lambda: t(2, 3).permute(0), ValueError, r"permute"),
    ("permute repeated dim", lambda: t(2, 3).permute(0, 0), ValueError, r"permute"),
    ("reshape wrong numel", lambda: t(2, 3).reshape(4, 2), ValueError, r"reshape.*size 6"),
    ("reshape two -1", lambda: t(2, 3).reshape(-1, -1), ValueError, r"reshape"),
    ("expand incompatible", lambda: t(2, 3).expand(4, 3), ValueError, r"expand"),
    ("getitem out of bounds", lambda: t(2, 3)[5], IndexError, r"index 5"),
    ("getitem too many indices", lambda: t(2, 3)[0, 0, 0], IndexError, r"too many indices"),
    ("index_select out of range", lambda: lucid.index_select(t(3, 2), 0, lucid.tensor([0, 7])), IndexError, r"index 7 is out of bounds"),
    ("gather wrong index dtype", lambda: lucid.gather(t(3, 2), 1, lucid.tensor([[0.5, 1.0]])), TypeError, r"gather.*index"),
    ("cat shape mismatch", lambda: lucid.cat([t(2, 3), t(2, 4)], dim=0), ValueError, r"cat"),
    ("cat empty list", lambda: lucid.cat([]), ValueError, r"cat"),
    ("stack shape mismatch", lambda: lucid.stack([t(2), t(3)]), ValueError, r"stack"),
    ("cross_entropy class out of range", lambda: F.cross_entropy(t(2, 3), lucid.tensor([0, 3])), IndexError, r"cross_entropy.*3"),
    ("cross_entropy float target shape", lambda: F.cross_entropy(t(2, 3), t(2, 4)), ValueError, r"cross_entropy"),
    ("nll_loss batch mismatch", lambda: F.nll_loss(t(2, 3), lucid.tensor([0, 1, 2])), ValueError, r"nll_loss"),
    ("mse_loss shape mismatch", lambda: F.mse_loss(t(2, 3), t(3, 2)), ValueError, r"mse_loss"),
    ("embedding index out of range", lambda: F.embedding(lucid.tensor([0, 10]), t(5, 3)), IndexError, r"embedding"),
    ("embedding float indices", lambda: F.embedding(t(2), t(5, 3)), TypeError, r"embedding"),
    ("layer_norm shape mismatch", lambda: F.layer_norm(t(2, 3), (4,)), ValueError, r"layer_norm"),
    ("batch_norm channel mismatch", lambda: F.batch_norm(t(2, 3, 4), t(5), t(5), training=False), ValueError, r"batch_norm"),
    ("exp on bool dtype unsupported", lambda: lucid.bitwise_and(t(2), t(2)), TypeError, r"bitwise_and"),
    ("requires_grad on int", lambda: lucid.tensor([1, 2]).requires_grad_(), TypeError, r"floating point"),
    ("cuda device past the last", lambda: lucid.zeros(2, device="cuda:63"), (NotImplementedError, RuntimeError),
     r"no CUDA backend|no CUDA device is available|invalid device ordinal"),
    ("unknown device", lambda: lucid.zeros(2, device="tpu"), ValueError, r"device"),
    ("unknown dtype string", lambda: lucid.zeros(2, dtype="float128"), ValueError, r"dtype"),
    ("negative size", lambda: lucid.zeros(-1, 2), ValueError, r"size"),
    ("add non-number", lambda: t(2) + "a", TypeError, r"add"),
    ("item of many elements", lambda: t(3).item(), ValueError, r"item"),
    ("in-place shape change", lambda: t(3).add_(t(2, 3)), ValueError, r"add.*shape"),
    ("in-place float into int", lambda: lucid.tensor([1, 2]).add_(1.5), TypeError, r"can't be cast"),
    ("leaf in-place with grad", lambda: t(2).requires_grad_().mul_(2), RuntimeError, r"leaf"),
    ("backward of non-scalar", lambda: (t(3).requires_grad_() * 2).backward(), RuntimeError, r"scalar"),
    ("Linear wrong input features", lambda: nn.Linear(4, 2)(t(3, 5)), ValueError, r"linear"),
    ("Conv2d wrong channels", lambda: nn.Conv2d(3, 4, 3)(t(1, 2, 8, 8)), ValueError, r"conv2d"),
    ("load_state_dict missing keys", lambda: nn.Linear(2, 2).load_state_dict({}), RuntimeError, r"[Mm]issing"),
    ("where shape mismatch", lambda: lucid.where(lucid.tensor([True, False]), t(3), t(3)), ValueError, r"where"),
    ("split bad sections", lambda: lucid.split(t(5), [2, 2]), ValueError, r"split"),
]


@pytest.mark.parametrize("desc,fn,exc,pattern", CASES, ids=[c[0] for c in CASES])
def test_malformed_call_raises_clear_error(desc, fn, exc, pattern):
    with pytest.raises(exc, match=pattern):
        fn()


def test_there_are_at_least_30_cases():
    assert len(CASES) >= 30
