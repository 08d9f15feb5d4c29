"""The device-neutral scalar functors (csrc/lucid/ops/scalar_functors.h) compile with nvcc.

scripts/check_cuda_headers.sh compiles tests/cuda/neutral_headers.cu for sm_90 (-c only, no GPU
needed); that translation unit must instantiate every functor the header defines.
"""
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(ROOT, "csrc", "lucid", "ops", "scalar_functors.h")
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
    with open(TU) as f:
        tu = f.read()
    assert len(functors) > 80
    missing = [name for name in functors if f"<sm::{name}>" not in tu]
    assert not missing, f"tests/cuda/neutral_headers.cu does not instantiate: {missing}"


@pytest.mark.skipif(_nvcc() is None, reason="nvcc not found (PATH or /usr/local/cuda/bin): CUDA header check skipped")
def test_neutral_headers_compile_with_nvcc():
    env = dict(os.environ, NVCC=_nvcc())
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "check_cuda_headers.sh")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "check_cuda_headers: ok" in r.stdout
