"""bfloat16 autocast accuracy on the lucid.models zoo (issue 13, item 5): how far inference under
lucid.autocast("cpu", dtype=lucid.bfloat16) lands from float32, next to torch.autocast on the
same weights and inputs.

Each model is built as bench/cpu_models.py builds it (the torch twin under torch.manual_seed(0),
BatchNorm statistics calibrated, its state_dict loaded into the lucid model). On N random inputs
(batch --batch, --rounds seeds) it runs four forwards: lucid compiled in float32 and under
autocast, torch eager in float32 and under torch.autocast. Per model:
  - max relative error: max |bf16 - f32| / max |f32| over every output, for lucid (against lucid
    float32) and for torch (against torch float32);
  - top-1 agreement: the fraction of rows whose argmax over the last dimension is the same in bf16
    as in float32 (classifier logits; for GPT-2 the next-token logits at every position, for BERT
    the hidden state's largest feature, which says less).
Random weights and inputs: the numbers measure rounding, not a trained model's accuracy.

Usage: python bench/bf16_accuracy.py [--models a,b] [--batch 4] [--rounds 2]
Results: bench/results/bf16_accuracy.json (and a table on stdout).
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from cpu_models import build_pair, make_inputs, lucid, np, torch  # noqa: E402
from _common import environment, print_table, write_json  # noqa: E402


def _outs(out):
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return [o.detach().float().numpy() for o in outs]


def _compare(low, ref):
    err = max(float(np.abs(a.astype(np.float64) - b).max()) / max(float(np.abs(b).max()), 1e-30)
              for a, b in zip(low, ref))
    a, b = low[0].reshape(-1, low[0].shape[-1]), ref[0].reshape(-1, ref[0].shape[-1])
    agree = float(np.mean(np.argmax(a, -1) == np.argmax(b, -1)))
    return err, agree, a.shape[0]


def main():
    names_all = lucid.models.list_models()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(names_all))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2, help="input seeds per model")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    lucid.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    results = {"env": environment(), "batch": args.batch, "rounds": args.rounds, "models": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            tm, lm = build_pair(name, tmp)
            f = lucid.compile(lm)
            acc = {"lucid": [], "torch": []}
            for seed in range(args.rounds):
                xs = make_inputs(name, args.batch, seed=100 + seed)
                la, ta = [lucid.tensor(x) for x in xs], [torch.from_numpy(x) for x in xs]
                with lucid.no_grad():
                    l32 = _outs(f(*la))
                    with lucid.autocast("cpu", dtype=lucid.bfloat16):
                        l16 = _outs(f(*la))
                with torch.inference_mode():
                    t32 = _outs(tm(*ta))
                    with torch.autocast("cpu", dtype=torch.bfloat16):
                        t16 = _outs(tm(*ta))
                acc["lucid"].append(_compare(l16, l32))
                acc["torch"].append(_compare(t16, t32))
            row = {}
            for lib, vals in acc.items():
                rows = sum(v[2] for v in vals)
                row[lib] = {"max_rel_err": max(v[0] for v in vals),
                            "top1_agreement": sum(v[1] * v[2] for v in vals) / rows, "rows": rows}
            row["fell_back"] = f.cache_info()["eager_only"]
            results["models"][name] = row
            print(f"{name}: lucid {row['lucid']}, torch {row['torch']}", flush=True)
            del tm, lm, f
    print_table("bfloat16 autocast vs float32 (random weights and inputs)",
                ["model", "rows", "lucid max rel err", "torch max rel err", "lucid top-1 agree", "torch top-1 agree"],
                [(n, r["lucid"]["rows"], f"{r['lucid']['max_rel_err']:.2e}", f"{r['torch']['max_rel_err']:.2e}",
                  f"{100 * r['lucid']['top1_agreement']:.1f}%", f"{100 * r['torch']['top1_agreement']:.1f}%")
                 for n, r in results["models"].items()])
    write_json("bf16_accuracy", results)


if __name__ == "__main__":
    main()
