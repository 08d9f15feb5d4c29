"""The extension lucid._C exports PyInit__C alone, so lucid and torch import in either order.

Exported, _C's other symbols (among them a static libstdc++ copy where the compiler has no shared
one, as on the GPU machine) interposed the shared libraries _C loads, and `import lucid; import
torch` aborted with "free(): invalid pointer" in torch's import. CMakeLists.txt gives _C a version
script.
"""
import os
import shutil
import subprocess
import sys

import pytest

import lucid
from lucid import _C

_PYTHON_DIR = os.path.dirname(os.path.dirname(lucid.__file__))


@pytest.mark.skipif(shutil.which("nm") is None, reason="no nm (binutils) to read the symbol table")
def test_only_the_module_init_is_exported():
    out = subprocess.run(["nm", "-D", "--defined-only", _C.__file__], capture_output=True, text=True, check=True)
    names = [line.split()[-1] for line in out.stdout.splitlines() if line.strip()]
    assert names == ["PyInit__C"]


@pytest.mark.parametrize("order", [("lucid", "torch"), ("torch", "lucid")])
def test_imports_with_torch_in_either_order(order):
    pytest.importorskip("torch")
    code = "import {}; import {}; print('ok')".format(*order)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [_PYTHON_DIR, os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
