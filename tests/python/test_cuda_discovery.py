"""lucid.cuda's device discovery (is_available, device_count, get_device_name/capability/properties).

Without a device (a CPU-only build, or a CUDA build on a machine with no GPU or driver) the answers
are 0 / False and a RuntimeError naming the reason; that case also runs on the GPU machine, in a
subprocess that hides the GPUs with CUDA_VISIBLE_DEVICES="" (the runtime then reports
cudaErrorNoDevice). With a device, the answers are compared with torch.cuda's on the same machine."""
import json
import os
import subprocess
import sys

import pytest
import torch

import lucid
from lucid import _C

HAS_CUDA = lucid.cuda.device_count() > 0
needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

_PYTHON_DIR = os.path.dirname(os.path.dirname(lucid.__file__))

# Run in a process that sees no GPU: each query's result or (exception type, message).
_NO_DEVICE_PROBE = r"""
import json, lucid
def run(f):
    try:
        return {"value": f()}
    except Exception as e:
        return {"error": type(e).__name__, "message": str(e), "runtime_error": isinstance(e, RuntimeError)}
print(json.dumps({
    "built": lucid._C._cuda_is_built(),
    "is_available": run(lucid.cuda.is_available),
    "device_count": run(lucid.cuda.device_count),
    "name": run(lucid.cuda.get_device_name),
    "name0": run(lambda: lucid.cuda.get_device_name(0)),
    "capability": run(lambda: lucid.cuda.get_device_capability("cuda:0")),
    "properties": run(lambda: lucid.cuda.get_device_properties(lucid.device("cuda", 0))),
}))
"""


def test_no_device_reports_zero_and_raises_runtime_error_naming_the_reason():
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join(filter(None, [_PYTHON_DIR, os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", _NO_DEVICE_PROBE], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["built"] == _C._cuda_is_built()
    assert r["is_available"] == {"value": False}
    assert r["device_count"] == {"value": 0}
    # Without CUDA support (torch's CPU build) or without a device (torch's CUDA build with no GPU)
    # torch raises before it looks at the index; lucid raises RuntimeError (torch's CUDA build's type).
    if r["built"]:
        reasons = ("cudaErrorNoDevice", "cudaErrorInsufficientDriver")  # no GPU visible / no driver on this machine
    else:
        reasons = ("this build of lucid has no CUDA backend",)
    for query in ("name", "name0", "capability", "properties"):
        e = r[query]
        assert e.get("error") == "RuntimeError" and e["runtime_error"], (query, e)
        assert "no CUDA device is available" in e["message"], (query, e)
        assert any(reason in e["message"] for reason in reasons), (query, e)
        assert e["message"].startswith("lucid.cuda.get_device_"), (query, e)


@pytest.mark.skipif(HAS_CUDA, reason="a CUDA device is present (the no-device case runs in the subprocess test)")
def test_without_a_device_in_this_process():
    assert lucid.cuda.is_available() is False
    assert lucid.cuda.device_count() == 0 == torch.cuda.device_count()
    with pytest.raises(RuntimeError, match="no CUDA device is available"):
        lucid.cuda.get_device_name(0)
    lucid.cuda.manual_seed(0)
    lucid.cuda.manual_seed_all(0)


@pytest.mark.parametrize("device, error, match", [
    ("cpu", ValueError, "expected a cuda device, but got: cpu"),
    (lucid.device("cpu"), ValueError, "expected a cuda device, but got: cpu"),
    ("tpu:0", RuntimeError, "expected one of cpu, cuda, mps"),
    (1.5, TypeError, "expected an int, a str or a lucid.device, got float"),
    (True, TypeError, "got bool"),
])
def test_bad_device_argument(device, error, match):
    # torch.cuda._utils._get_device_index gives ValueError for a CPU device, RuntimeError for a bad
    # device string; lucid also rejects what torch silently reads as "the current device".
    with pytest.raises(error, match=match):
        lucid.cuda.get_device_name(device)


@needs_cuda
def test_device_present_answers_match_torch():
    n = lucid.cuda.device_count()
    assert n >= 1 and lucid.cuda.is_available() is True
    name = lucid.cuda.get_device_name(0)
    assert isinstance(name, str) and name
    for same in (None, "cuda", "cuda:0", lucid.device("cuda", 0), 0):
        assert lucid.cuda.get_device_name(same) == name
    major, minor = lucid.cuda.get_device_capability(0)
    assert isinstance(major, int) and isinstance(minor, int) and major >= 1
    props = lucid.cuda.get_device_properties(0)
    assert props.name == name and (props.major, props.minor) == (major, minor)
    assert props.total_memory > 0 and props.multi_processor_count > 0
    if torch.cuda.is_available():  # the GPU machine's torch (a CUDA build) as the reference
        assert n == torch.cuda.device_count()
        for i in range(n):
            t = torch.cuda.get_device_properties(i)
            p = lucid.cuda.get_device_properties(i)
            assert (p.name, p.major, p.minor, p.total_memory, p.multi_processor_count) == (
                t.name, t.major, t.minor, t.total_memory, t.multi_processor_count)
            assert lucid.cuda.get_device_capability(i) == torch.cuda.get_device_capability(i)


@needs_cuda
@pytest.mark.parametrize("which", ["count", "-1", "count_str"])
def test_device_index_out_of_range_raises_assertion_error_as_torch(which):
    n = lucid.cuda.device_count()
    device = {"count": n, "-1": -1, "count_str": f"cuda:{n}"}[which]
    with pytest.raises(AssertionError, match="Invalid device id"):
        lucid.cuda.get_device_name(device)
    if torch.cuda.is_available():
        with pytest.raises(AssertionError, match="Invalid device id"):
            torch.cuda.get_device_name(device)
