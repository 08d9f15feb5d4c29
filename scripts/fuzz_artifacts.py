"""Runs the artifact mutation fuzzer (tests/python/artifact_fuzz.py) at scale: 20,000 cases by
default, and prints the outcome per mutation kind. CI runs 500 of the same cases
(tests/python/test_compile_export_fuzz.py); this is the long run whose result docs/compile.md
records.

    PYTHONPATH=python python3 scripts/fuzz_artifacts.py [N] [--seed S]
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
import artifact_fuzz  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("n", nargs="?", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        tally = artifact_fuzz.run(a.n, d, seed=a.seed, log=lambda s: print(s, flush=True))
    print(json.dumps({"cases": a.n, "seed": a.seed, "seconds": round(time.time() - t0, 1), "outcomes": tally}, indent=1))


if __name__ == "__main__":
    main()
