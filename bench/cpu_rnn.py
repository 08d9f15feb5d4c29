"""LSTM / GRU on the CPU at the lstm_classifier's shapes (nn.LSTM(16, 64, batch_first), 50 steps,
batch 1 and 32, and the GRU twin): lucid compiled and eager against torch eager and ONNX Runtime
(forward), and a training step (forward + backward) against torch eager. Interleaved rounds,
peers in one process (bench/_common.py). Run it once on this branch and once with an older build
on PYTHONPATH (the per-step composite) to compare the two: the JSON records which build ran.

    PYTHONPATH=python python3 bench/cpu_rnn.py [--threads N] [--rounds R]
"""
import argparse
import contextlib
import io
import os
import sys
import tempfile
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import fmt_ms, fmt_ratio, print_table, timeit_interleaved, write_json  # noqa: E402

import torch  # noqa: E402

import lucid  # noqa: E402
import lucid.nn as nn  # noqa: E402
import lucid.nn.functional as F  # noqa: E402

STEPS, FEATURES, HIDDEN, CLASSES = 50, 16, 64, 10


def twins(mode):
    class Lucid(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(nn, mode)(FEATURES, HIDDEN, batch_first=True)
            self.fc = nn.Linear(HIDDEN, CLASSES)

        def forward(self, x):
            return self.fc(self.rnn(x)[0][:, -1])

    class Torch(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(torch.nn, mode)(FEATURES, HIDDEN, batch_first=True)
            self.fc = torch.nn.Linear(HIDDEN, CLASSES)

        def forward(self, x):
            return self.fc(self.rnn(x)[0][:, -1])

    torch.manual_seed(0)
    tm, lm = Torch().eval(), Lucid().eval()
    lm.load_state_dict({k: lucid.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, lm


def onnx_session(tm, x, threads, tmp_dir, name):
    import onnxruntime as ort
    path = os.path.join(tmp_dir, f"{name}.onnx")
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(tm, (x,), path, dynamo=True, verbose=False)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: x.numpy()}
    return lambda: sess.run(None, feed)


def bench(mode, batch, threads, rounds, tmp_dir):
    tm, lm = twins(mode)
    x = np.random.default_rng(0).standard_normal((batch, STEPS, FEATURES)).astype(np.float32)
    tx, lx = torch.from_numpy(x), lucid.tensor(x)
    y = np.random.default_rng(1).integers(0, CLASSES, (batch,))
    ty, ly = torch.from_numpy(y), lucid.tensor(y)
    compiled = lucid.compile(lm)
    with torch.no_grad():
        want = tm(tx).numpy()
    err = float(np.abs(compiled(lx).detach().numpy() - want).max())
    fwd = {"lucid compiled": lambda: compiled(lx), "lucid eager": lambda: lm(lx)}
    try:
        fwd["onnxruntime"] = onnx_session(tm, tx, threads, tmp_dir, f"{mode}_b{batch}")
    except Exception as e:  # noqa: BLE001 - a missing peer is a cell, not a failed run
        print(f"onnxruntime unavailable: {e}")

    def torch_fwd():
        with torch.no_grad():
            return tm(tx)
    fwd["torch eager"] = torch_fwd
    step = lucid.compile.make_step(lm, F.cross_entropy)
    lm.train()
    tm.train()

    def lucid_train():
        step(lx, ly).backward()

    def lucid_eager_train():
        F.cross_entropy(lm(lx), ly).backward()

    def torch_train():
        torch.nn.functional.cross_entropy(tm(tx), ty).backward()
    train = {"lucid compiled": lucid_train, "lucid eager": lucid_eager_train, "torch eager": torch_train}
    return {"forward": timeit_interleaved(fwd, rounds=rounds), "train": timeit_interleaved(train, rounds=rounds),
            "max_abs_err_vs_torch": err}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    results = {}
    with tempfile.TemporaryDirectory() as tmp_dir:
        for mode in ("LSTM", "GRU"):
            for batch in (1, 32):
                results[f"{mode}_b{batch}"] = bench(mode, batch, args.threads, args.rounds, tmp_dir)
    cols = ["lucid compiled", "lucid eager", "torch eager", "onnxruntime"]
    rows = []
    for key, r in results.items():
        f = r["forward"]
        rows.append([key, *(fmt_ms(f.get(c, "n/a")) for c in cols),
                     fmt_ratio(f.get("onnxruntime", "n/a"), f["lucid compiled"]),
                     fmt_ratio(f["torch eager"], f["lucid compiled"]), f"{r['max_abs_err_vs_torch']:.1e}"])
    print_table(f"forward, ms ({STEPS} steps, {FEATURES} features, hidden {HIDDEN}, {args.threads} threads)",
                ["model", *cols, "vs onnxruntime", "vs torch", "max err"], rows)
    rows = [[key, *(fmt_ms(r["train"][c]) for c in cols[:3]), fmt_ratio(r["train"]["torch eager"], r["train"]["lucid compiled"])]
            for key, r in results.items()]
    print_table("training step (forward + backward), ms", ["model", *cols[:3], "vs torch"], rows)
    write_json("cpu_rnn", {"lucid_path": os.path.dirname(lucid.__file__), "threads": args.threads, "results": results})


if __name__ == "__main__":
    main()
