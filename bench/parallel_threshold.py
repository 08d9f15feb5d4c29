"""Measures the size above which an elementwise op gains from a second thread, to set
kParallelGrain (csrc/lucid/core/parallel.h): times lucid's float32 add at OMP_NUM_THREADS=1
and =2 in subprocesses and reports the speed-up per size. Run it on a quiet machine: with the
other core busy, a parallel region waits a whole scheduler slice for its second thread.

Usage: python bench/parallel_threshold.py
"""
import json
import os
import subprocess
import sys

SIZES = [1 << k for k in range(10, 23)]
CHILD = r"""
import sys, json
sys.path.insert(0, 'python')
import lucid, numpy as np
sys.path.insert(0, 'bench')
from _common import timeit
out = {}
for n in %s:
    a = lucid.tensor(np.random.rand(n).astype(np.float32)); b = lucid.tensor(np.random.rand(n).astype(np.float32))
    out[n] = timeit(lambda: a + b, min_time=0.1, repeats=5)
print(json.dumps(out))
""" % SIZES


def run(threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True,
                       cwd=os.path.join(os.path.dirname(__file__), ".."))
    return {int(k): v for k, v in json.loads(r.stdout).items()}


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    from _common import print_table, write_json
    one, two = run(1), run(2)
    rows = [(n, f"{one[n]*1e6:.2f}", f"{two[n]*1e6:.2f}", f"{one[n]/two[n]:.2f}x") for n in SIZES]
    print_table("float32 add, lucid, 1 vs 2 OpenMP threads (grain currently 32768)",
                ["elements", "1 thread us", "2 threads us", "speed-up"], rows)
    write_json("parallel_threshold", {"one_thread_s": one, "two_threads_s": two})
