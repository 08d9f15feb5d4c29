"""Compare two result files of the same benchmark (compile_forward.py or compile_training.py,
e.g. before and after a refactor that must not change speed), run one after the other on the
same machine.

For every model and every lucid column it prints the time before, the time after, and the
ratio after/before, both raw and normalised by torch eager's ratio in the same two runs
(torch's code did not change, so its drift is the machine's noise; the normalised ratio is the
change lucid's code made). 1.00 means unchanged; above 1 means slower after.

Usage: python3 bench/compare_results.py BEFORE.json AFTER.json [--json OUT.json]
"""
import argparse
import json
import statistics

from _common import print_table

REFERENCE = "torch eager"


def _times(models):
    return {m: {k: v for k, v in r.items() if isinstance(v, float) and not k.endswith(("err", "compile_s"))}
            for m, r in models.items()}


def compare(before, after):
    b, a = _times(before["models"]), _times(after["models"])
    rows = []
    for model in b:
        if model not in a or REFERENCE not in b[model] or REFERENCE not in a[model]:
            continue
        noise = a[model][REFERENCE] / b[model][REFERENCE]
        for col, t0 in b[model].items():
            if not col.startswith(("lucid", "compile_optimizer", "make_step", "fused_step")) or col not in a[model]:
                continue
            t1 = a[model][col]
            rows.append({"model": model, "column": col, "before_ms": t0 * 1e3, "after_ms": t1 * 1e3,
                         "after/before": t1 / t0, "normalised": t1 / t0 / noise})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--json", help="write the rows and the summary here")
    args = ap.parse_args()
    with open(args.before) as f:
        before = json.load(f)
    with open(args.after) as f:
        after = json.load(f)
    rows = compare(before, after)
    print_table(f"{args.before} -> {args.after}", ["model", "column", "before (ms)", "after (ms)", "after/before", f"normalised by {REFERENCE}"],
                [[r["model"], r["column"], f"{r['before_ms']:.3f}", f"{r['after_ms']:.3f}",
                  f"{r['after/before']:.2f}", f"{r['normalised']:.2f}"] for r in rows])
    norm = [r["normalised"] for r in rows]
    summary = {"rows": len(rows), "median_normalised": statistics.median(norm), "min": min(norm), "max": max(norm)}
    print(f"\n{len(rows)} timings; normalised after/before: median {summary['median_normalised']:.3f}, "
          f"range {summary['min']:.2f} to {summary['max']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"before": args.before, "after": args.after, "summary": summary, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
