import os
import sys

# Every op call holds its attributes to the op's declared schema (ops/attr_schema.h): the suite
# proves the schemas complete and exact. Set before lucid is imported (dispatch reads it once).
os.environ.setdefault("LUCID_CHECK_ATTRS", "1")

sys.path.insert(0, os.path.dirname(__file__))


def pytest_terminal_summary(terminalreporter):
    """On a device run: how many CUDA tests stopped at a kernel not written yet, and which ops
    (devices.pending_ok notes them on their reports; the count reaches here through xdist too)."""
    from collections import Counter

    from devices import PENDING_PROPERTY
    ops = Counter(v for rep in terminalreporter.stats.get("passed", []) if rep.when == "call"
                  for k, v in rep.user_properties if k == PENDING_PROPERTY)
    if ops:
        terminalreporter.write_sep("-", f"{sum(ops.values())} CUDA tests stopped at an op not implemented on cuda")
        terminalreporter.write_line(", ".join(f"{op} {n}" for op, n in ops.most_common()))
