"""The API coverage report (scripts/api_coverage.py): the core names lucid has must stay present
(the missing ones must be a subset of scripts/api_core_allowed_missing.txt, which only shrinks),
the core list names real torch names, and the checked-in torch name list matches the installed torch."""
import importlib.util
import json
import os

import torch  # noqa: F401  (the script enumerates it)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("api_coverage", os.path.join(ROOT, "scripts", "api_coverage.py"))
cov = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cov)


def test_core_names_lucid_has_stay_present():
    present, missing = cov.core_check()
    lost = sorted(set(missing) - cov.allowed_missing())
    assert not lost, f"core names lucid no longer has (or new core names it lacks): {lost}"
    assert len(present) + len(missing) == len(cov.core_names())


def test_allowed_missing_only_lists_core_names():
    # a landed name must leave the allowed list (so that losing it again fails the test above)
    present, _ = cov.core_check()
    stale = sorted(cov.allowed_missing() & set(present))
    assert not stale, f"present now, remove from scripts/api_core_allowed_missing.txt: {stale}"
    assert cov.allowed_missing() <= set(cov.core_names())


def test_core_names_are_torch_names_in_the_full_list():
    names = cov.torch_names()
    for ns, n in cov.core_names():
        assert n in names[ns], f"core name {ns} {n} is not in torch's full list (typo or excluded)"


def test_checked_in_torch_names_match_installed_torch():
    with open(cov.NAMES_FILE) as f:
        data = json.load(f)
    assert data["names"] == json.loads(json.dumps(cov.torch_names())), \
        "python/lucid/_torch_api.json is stale: rerun python3 scripts/api_coverage.py"


def test_filter_drops_internal_names_and_keeps_user_ones():
    assert cov.excluded("_foo", "torch")
    assert cov.excluded("quantize_per_tensor", "torch") == "quantization"
    assert cov.excluded("view_copy", "torch")
    assert cov.excluded("to_sparse", "Tensor")
    assert cov.excluded("solve", "Tensor") and not cov.excluded("solve", "linalg")
    for ns, n in [("torch", "matmul"), ("Tensor", "storage_offset"), ("autograd", "grad"), ("torch", "Tensor")]:
        assert not cov.excluded(n, ns), (ns, n)
