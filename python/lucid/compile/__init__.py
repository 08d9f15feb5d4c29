"""lucid.compile: record a model's forward pass once per call signature and run it as one
cached executable (C++ tracer, IR passes, memory planner, runtime); see docs/compile.md.

`lucid.compile` is both the entry point and a namespace:

    cm = lucid.compile(model)                # or @lucid.compile / @lucid.compile(strict=True)
    y = cm(x)                                # first call traces (runs eagerly), later calls are cached
    lucid.compile.CompiledModule, lucid.compile.diagnose, lucid.compile.CompileWarning, ...
"""
import contextlib
import sys
import types

from lucid import _C
from lucid.compile import _source  # noqa: F401  (installs the tracer's host-read locator)
from lucid.compile._compiled import CompiledModule
from lucid.compile._diagnose import DiagnosisReport, OpInfo, diagnose
from lucid.compile._errors import CompileError, CompileWarning
from lucid.compile._optim import CompiledOptimizer, compile_optimizer
from lucid.compile._train import compiled_step, make_step
from lucid.compile._fused import FusedStep, fused_step
from lucid.compile._export import ArtifactError, save_compiled
from lucid.compile._loaded import LoadedModule, LoadedStep, load_compiled

__all__ = ["compile", "CompiledModule", "diagnose", "DiagnosisReport", "OpInfo", "CompileWarning", "CompileError",
           "make_step", "compiled_step", "compile_optimizer", "CompiledOptimizer", "fused_step", "FusedStep", "save_compiled", "load_compiled", "ArtifactError",
           "LoadedModule", "LoadedStep"]


def compile(target=None, *, dynamic=False, strict=False):  # noqa: A001  (torch's name)
    """Compile an nn.Module or callable; usable as `compile(m)`, `@compile` or `@compile(strict=True)`."""
    if target is None:
        return lambda t: CompiledModule(t, dynamic=dynamic, strict=strict)
    return CompiledModule(target, dynamic=dynamic, strict=strict)


@contextlib.contextmanager
def _tracing():
    """Install a tracer on this thread; yields it (`.graph` prints the IR, `.state_feeds` the bound
    tensors, `.add_input(t)` marks an argument). Unstable, for debugging and tests."""
    tr = _C._Tracer()
    tr.start()
    try:
        yield tr
    finally:
        tr.stop()


class _CallableModule(types.ModuleType):
    def __call__(self, target=None, *, dynamic=False, strict=False):
        return compile(target, dynamic=dynamic, strict=strict)


sys.modules[__name__].__class__ = _CallableModule
