"""lucid.compile.diagnose: trace a function once and report which ops it uses, which of them
have a VJP, where gradients stop, and what would make compile fall back to eager."""
import collections
import dataclasses

from lucid import _C
from lucid._C import Tensor
from lucid.compile._advice import advice
from lucid.compile._compiled import _recording

__all__ = ["diagnose", "DiagnosisReport", "OpInfo"]


@dataclasses.dataclass(frozen=True)
class OpInfo:
    name: str
    count: int
    sample_shape: tuple
    sample_dtype: str


@dataclasses.dataclass
class DiagnosisReport:
    total_ops: int
    registered: list        # op names with a VJP (gradients flow through them)
    grad_sinks: list        # op names explicitly non-differentiable (gradients stop there by design)
    uncovered: list         # OpInfo for every op with no VJP
    not_lowered: list       # reasons the compiled path would fall back to eager
    recommendation: str
    suggestions: list = dataclasses.field(default_factory=list)  # what to change, one per reason in not_lowered

    def __str__(self):
        lines = [f"lucid.compile.diagnose: {self.total_ops} ops traced",
                 f"  with a VJP ({len(self.registered)}): {', '.join(self.registered) or '-'}",
                 f"  gradient sinks ({len(self.grad_sinks)}): {', '.join(self.grad_sinks) or '-'}"]
        if self.uncovered:
            lines.append(f"  without a VJP ({len(self.uncovered)}):")
            for o in self.uncovered:
                lines.append(f"    {o.name} x{o.count}  e.g. {o.sample_dtype}{list(o.sample_shape)}")
        else:
            lines.append("  without a VJP: none")
        if self.not_lowered:
            lines.append("  would run eagerly:")
            for r, fix in zip(self.not_lowered, self.suggestions):
                lines += [f"    {r}", f"      to compile it: {fix}"]
        else:
            lines.append("  would run eagerly: nothing (every op lowers)")
        lines.append(f"  recommendation: {self.recommendation}")
        return "\n".join(lines)


def _tensors(obj, out, depth=0):
    if depth > 32:
        return
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            _tensors(o, out, depth + 1)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors(o, out, depth + 1)


def diagnose(fn, *example_inputs):
    """Trace `fn(*example_inputs)` once (eagerly) and report on the ops it dispatched."""
    flat = []
    _tensors(example_inputs, flat)
    tr = _C._Tracer()
    for t in flat:
        tr.add_input(t)
    with _recording(tr):
        out = fn(*example_inputs)
    leaves = []
    _tensors(out, leaves)
    tr.set_outputs(leaves)
    registry = {o["name"]: o for o in _C._op_registry()}
    counts = collections.Counter()
    sample, devices = {}, {}
    for name, shape, dtype, device in tr.graph.nodes():
        counts[name] += 1
        sample.setdefault(name, (tuple(shape), dtype))
        devices.setdefault(name, set()).add(device.split(":")[0])  # "cuda:0" -> "cuda"
    registered, sinks, uncovered, not_lowered = [], [], [], []
    for name in counts:
        info = registry.get(name, {})
        if info.get("vjp"):
            registered.append(name)
        else:
            uncovered.append(OpInfo(name, counts[name], *sample[name]))
            if not info.get("differentiable", True):
                sinks.append(name)
        for device in sorted(devices[name]):
            if not info.get("kernels", {}).get(device):
                not_lowered.append(f"{name}: no {device.upper()} kernel in this build")
    if not tr.ok:
        not_lowered.append(tr.reason)
    missing = [o.name for o in uncovered if o.name not in sinks]
    suggestions = [advice(r) for r in not_lowered]
    if not_lowered:
        rec_text = "this signature would run eagerly: " + "; ".join(
            f"{r}. To compile it: {fix}" for r, fix in zip(not_lowered, suggestions))
    elif missing:
        rec_text = f"compiles; backward would fail through {', '.join(missing)} (no VJP)"
    else:
        rec_text = "compiles as one executable" + (
            f"; gradients stop at {', '.join(sinks)} by design" if sinks else "")
    return DiagnosisReport(sum(counts.values()), sorted(registered), sorted(sinks),
                           sorted(uncovered, key=lambda o: o.name), not_lowered, rec_text, suggestions)
