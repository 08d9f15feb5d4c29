"""The device-neutral scalar functors (csrc/lucid/ops/scalar_functors.h) and the elementwise
functor table (csrc/lucid/ops/list/elementwise_functors.def) compile with nvcc.

scripts/check_cuda_headers.sh compiles tests/cuda/neutral_headers.cu for sm_90 (-c only, no GPU
needed); that translation unit expands the table into a __global__ kernel per row, so every
functor the header defines must be some op's row of the table.
"""
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(ROOT, "csrc", "lucid", "ops", "scalar_functors.h")
TABLE = os.path.join(ROOT, "csrc", "lucid", "ops", "list", "elementwise_functors.def")
TU = os.path.join(ROOT, "tests", "cuda", "neutral_headers.cu")


def _nvcc():
    found = shutil.which("nvcc")
    if found:
        return found
    default = "/usr/local/cuda/bin/nvcc"
    return default if os.access(default, os.X_OK) else None


def test_every_functor_is_instantiated_in_the_cuda_check():
    with open(HEADER) as f:
        functors = re.findall(r"^struct (\w+)", f.read(), re.M)
    with open(TABLE) as f:
        rows = re.findall(r"^LUCID_EW(?:_ATTR)?\((\w+), sm::(\w+), [123], (\w+), (\w+)\)$", f.read(), re.M)
    with open(TU) as f:
        tu = f.read()
    assert len(functors) > 80
    missing = sorted(set(functors) - {functor for _, functor, _, _ in rows})
    assert not missing, f"functors without a row in elementwise_functors.def: {missing}"
    assert len({op for op, _, _, _ in rows}) == len(rows), "an op with two rows in elementwise_functors.def"
    assert all(r in ("Same", "Float", "Bool", "BoolInputs") and d in ("All", "Numeric", "Floating", "Integral")
               for _, _, r, d in rows)
    assert '#include "lucid/ops/list/elementwise_functors.def"' in tu, "neutral_headers.cu does not expand the table"


@pytest.mark.skipif(_nvcc() is None, reason="nvcc not found (PATH or /usr/local/cuda/bin): CUDA header check skipped")
def test_neutral_headers_compile_with_nvcc():
    env = dict(os.environ, NVCC=_nvcc())
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "check_cuda_headers.sh")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "check_cuda_headers: ok" in r.stdout
