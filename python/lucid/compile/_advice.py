"""What to change so that a signature compiles: one concrete suggestion per kind of fallback
reason (the reasons are written by the tracer, csrc/lucid/compile/trace/tracer.cpp, and by
_compiled.py). Used by the fallback warning, CompileError and lucid.compile.diagnose."""
import re

__all__ = ["advice", "ADVICE"]

# (pattern matched against the reason, suggestion), first match wins.
ADVICE = [
    (r"^(float|int|bool|__index__|format)\(\) read",
     "keep the value a tensor: replace the Python branch or number with tensor ops (lucid.where, clamp, a mask "
     "multiply), or do the conversion outside the compiled function (log the loss after the step, not inside it)"),
    (r"^(item|numpy|tolist|pickle)\(\) read",
     "don't read tensor values inside the compiled function: return the tensor and call .item()/.numpy()/.tolist() "
     "on the result outside it, or replace data-dependent Python control flow with tensor ops (lucid.where)"),
    (r"^nonzero\(\) read",
     "the output shape depends on the data (nonzero, a boolean-mask index): use a fixed-shape form instead, "
     "e.g. lucid.where(mask, x, 0) or x * mask, or do the selection outside the compiled function"),
    (r"reseeded during the trace",
     "call lucid.manual_seed outside the compiled function; inside it, random ops draw fresh numbers each call"),
    (r"generator other than lucid's default",
     "draw from lucid's default generator inside compiled code (drop generator=; seed with lucid.manual_seed)"),
    (r"in-place write through a view",
     "write out of place (y = x.clone() and write into y, or build the result with lucid.cat/where), or take the "
     "view of a contiguous tensor (x.contiguous())"),
    (r"^an in-place write to .* overlaps",
     "don't pass views of one tensor as separate arguments when one is written in place: pass the base tensor "
     "and take the views inside, or .clone() one of them"),
    (r"has forward hooks",
     "remove the forward hooks (handle.remove()) before compiling, or move what they do into forward"),
    (r"is assigned during the trace",
     "keep Python state out of forward: hold counters and flags in a tensor buffer updated in place "
     "(self.steps.add_(1)), or update the attribute outside the compiled call"),
    (r"is rebound during the trace",
     "update the tensor in place with the same shape and dtype (self.s.copy_(new), self.s.mul_(m)) instead of "
     "rebinding the attribute to a new tensor"),
    (r"^the function returned a",
     "return tensors, Python scalars/strings/None, or tuples/lists/dicts/dataclasses of them"),
    (r"output that requires grad is an argument or a bound tensor",
     "return a tensor the function computes (x.clone(), x * 1) rather than an argument or a parameter itself"),
    (r"^make_step: the step function must return one scalar loss",
     "return a single floating-point loss with one element (reduce it: loss.mean() or loss.sum())"),
    (r"no (CPU|CUDA) kernel in this build", "this op has no kernel in this build: rebuild with its backend library"),
    (r"^\w*Error: ",
     "an op could not be compiled (the error above): compile the parts around it separately, and report the op "
     "(lucid.compile.diagnose(fn, *inputs) lists the ops of the trace)"),
]


def advice(reason):
    """The suggestion for a fallback `reason` (a generic one for a reason no pattern knows)."""
    for pat, text in ADVICE:
        if re.search(pat, reason):
            return text
    return "run lucid.compile.diagnose(fn, *inputs) to see which ops the trace recorded and where it stopped"
