"""A/B latency of two lucid builds on the compile benchmark's models, in alternating processes.

A refactor that must not change speed is checked against the commit before it: build that
commit in a worktree (`git worktree add /tmp/base REV && cd /tmp/base && bash scripts/dev_build.sh`),
then run

    python3 bench/ab_latency.py --base /tmp/base/python --models lstm,mlp --rounds 6

Each round starts one process per build (base, then this checkout's python/), in turn, and
each process times every model's compiled and eager forward call (batch 1, one thread, best of
15 timed loops after a warm-up). The table gives, per model, the best and the median over the
rounds of each build and the ratio of the bests (this build / base; above 1 is slower). Taking
the best per process and alternating processes is what makes this usable on a shared machine:
one run of one process can land in a slow mode (the CPU's other load, page placement), and the
bests of several processes don't. Writes bench/results/ab_latency.json.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

from _common import print_table, write_json

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import lucid
import compile_models as cmods
lucid.set_num_threads(1)
res = {}
for name in sys.argv[2].split(","):
    spec = cmods.MODELS[name]
    m = spec.define(lucid)
    m.eval()
    args, _ = spec.make_inputs(1)
    cm = lucid.compile(m)
    with lucid.no_grad():
        for _ in range(50):
            cm(*args)
            m(*args)
        best_c = best_e = float("inf")
        for _ in range(15):
            t = time.perf_counter()
            for _ in range(100):
                cm(*args)
            best_c = min(best_c, (time.perf_counter() - t) / 100)
            t = time.perf_counter()
            for _ in range(30):
                m(*args)
            best_e = min(best_e, (time.perf_counter() - t) / 30)
    res[name] = {"compiled": best_c, "eager": best_e}
print(json.dumps(res))
"""


def run_child(pythonpath, models):
    env = dict(os.environ, PYTHONPATH=pythonpath)
    env.pop("OPENBLAS_CORETYPE", None)
    out = subprocess.run([sys.executable, "-c", CHILD, os.path.join(ROOT, "tests", "python"), models],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the python/ folder of the base build")
    ap.add_argument("--models", default="mlp,lenet5,lstm,transformer_encoder,gpt_decoder")
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    builds = {"base": args.base, "this": os.path.join(ROOT, "python")}
    runs = {b: [] for b in builds}
    for r in range(args.rounds):
        for b, path in builds.items():
            runs[b].append(run_child(path, args.models))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    rows, record = [], {}
    for model in args.models.split(","):
        for kind in ("compiled", "eager"):
            t = {b: [run[model][kind] * 1e6 for run in runs[b]] for b in builds}
            best = {b: min(v) for b, v in t.items()}
            med = {b: statistics.median(v) for b, v in t.items()}
            rows.append([model, kind, f"{best['base']:.1f}", f"{best['this']:.1f}", f"{best['this'] / best['base']:.2f}",
                         f"{med['base']:.1f}", f"{med['this']:.1f}"])
            record[f"{model} {kind}"] = {"us": t, "best_ratio": best["this"] / best["base"]}
    print_table(f"A/B latency, {args.rounds} alternating processes per build (us, batch 1, 1 thread)",
                ["model", "call", "base best", "this best", "this/base (best)", "base median", "this median"], rows)
    write_json("ab_latency", {"base": args.base, "rounds": args.rounds, "results": record})


if __name__ == "__main__":
    main()
