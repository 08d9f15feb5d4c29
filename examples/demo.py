"""Main demo: train the README's MLP and a small CNN eagerly on synthetic data (the loss falls),
then run each trained model eagerly and through lucid.compile: the outputs are equal and the
measured speed-up is printed; and trains the MLP with lucid.compile.fused_step (forward, loss,
backward and Adam update in one executable) next to the same eager steps, printing both times;
then saves the compiled CNN with save_compiled and runs it from the file (load_compiled, and the
C++ runner build/release/run_artifact)."""
import time

import numpy as np

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim as optim


def synthetic_digits(n, rng):
    """Ten 28x28 blob classes: learnable, deterministic, no download."""
    centers = rng.uniform(6, 22, size=(10, 2))
    yy, xx = np.mgrid[0:28, 0:28]
    labels = rng.integers(0, 10, n)
    jitter = rng.normal(0, 1.0, size=(n, 2))
    c = centers[labels] + jitter
    imgs = np.exp(-((yy[None] - c[:, 0, None, None]) ** 2 + (xx[None] - c[:, 1, None, None]) ** 2) / 8.0)
    imgs += rng.normal(0, 0.1, size=imgs.shape)
    return imgs.astype(np.float32)[:, None], labels.astype(np.int64)


def train(name, model, x, y, steps=60, batch=64, lr=1e-3):
    opt = optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(1)
    print(f"\n{name}: {sum(p.numel() for p in model.parameters())} parameters")
    t0 = time.perf_counter()
    for step in range(steps + 1):
        idx = rng.integers(0, len(y), batch)
        xb, yb = lucid.tensor(x[idx]), lucid.tensor(y[idx])
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"  step {step:3d}  loss {loss.item():.4f}")
    dt = (time.perf_counter() - t0) / (steps + 1)
    with lucid.no_grad():
        acc = (model(lucid.tensor(x[:512])).argmax(dim=1) == lucid.tensor(y[:512])).float().mean().item()
    print(f"  {dt*1e3:.2f} ms/step, train accuracy {acc:.2%}")


def train_fused_vs_eager(x, y, steps=60, batch=64):
    """The same MLP trained twice from the same weights: eager steps, then lucid.compile.fused_step."""
    lucid.manual_seed(1)
    eager = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    fused = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    fused.load_state_dict(eager.state_dict())
    opt_e, opt_f = optim.Adam(eager.parameters(), lr=1e-3), optim.Adam(fused.parameters(), lr=1e-3)
    step = lucid.compile.fused_step(fused, F.cross_entropy, opt_f)
    rng = np.random.default_rng(2)
    batches = [rng.integers(0, len(y), batch) for _ in range(steps)]
    times = {"eager": [], "fused": []}
    for idx in batches:
        xb, yb = lucid.tensor(x[idx]), lucid.tensor(y[idx])
        t0 = time.perf_counter()
        opt_e.zero_grad()
        loss_e = F.cross_entropy(eager(xb), yb)
        loss_e.backward()
        opt_e.step()
        times["eager"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        loss_f = step(xb, yb)
        times["fused"].append(time.perf_counter() - t0)
    te, tf = (float(np.median(times[k][10:])) for k in ("eager", "fused"))
    diff = max(((p - q).abs().max() / q.abs().max()).item() for p, q in zip(fused.parameters(), eager.parameters()))
    print(f"\nfused_step, MLP 784-256-10 batch {batch} Adam, {steps} steps: eager {te*1e3:.3f} ms/step, "
          f"fused {tf*1e3:.3f} ms/step -> {te / tf:.2f}x; final loss eager {loss_e.item():.4f} fused "
          f"{loss_f.item():.4f}; parameters differ by {diff:.1e} (relative)")


def bench(fn, x, reps=200):
    fn(x)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn(x)
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def compare_compiled(name, model, x):
    model.eval()
    compiled = lucid.compile(model)
    with lucid.no_grad():
        t0 = time.perf_counter()
        compiled(x)  # first call: traces and compiles
        first_ms = (time.perf_counter() - t0) * 1e3
        eager_out, comp_out = model(x), compiled(x)
        err = ((eager_out - comp_out).abs().max() / eager_out.abs().max()).item()
        t_eager, t_comp = bench(model, x), bench(compiled, x)
    info = compiled.cache_info()
    print(f"\n{name}, batch {x.shape[0]}: eager {t_eager*1e6:.1f} us, compiled {t_comp*1e6:.1f} us "
          f"-> {t_eager / t_comp:.2f}x; max relative difference {err:.1e}; first call {first_ms:.1f} ms; "
          f"cache: {info['entries']} entry, {info['hits']} hits, eager-only {len(info['eager_only'])}")


def save_and_load(model, x):
    """save_compiled / load_compiled: the compiled CNN as one file, run with no model code, from
    Python and (if built) from the C++ runner."""
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    cm = lucid.compile(model.eval())
    with lucid.no_grad():
        cm(x)
        ref = cm(x)
        path = os.path.join(tempfile.mkdtemp(), "cnn.lucid")
        lucid.compile.save_compiled(cm, path)
        t0 = time.perf_counter()
        loaded = lucid.compile.load_compiled(path)
        load_ms = (time.perf_counter() - t0) * 1e3
        same = bool((loaded(x) == ref).all().item())
    print(f"\nsave_compiled: {os.path.getsize(path) / 1024:.0f} KiB with weights; load_compiled {load_ms:.1f} ms "
          f"(no trace); loaded output bit-identical to the compiled call: {same}; signatures {loaded.signatures}")
    runner = os.path.join(os.path.dirname(__file__), "..", "build", "release", "run_artifact")
    if os.path.exists(runner):
        out = subprocess.run([runner, path], capture_output=True, text=True).stdout.strip().splitlines()
        print("C++ runner (no Python):", out[0] if out else "no output")


def main():
    lucid.manual_seed(0)
    rng = np.random.default_rng(0)
    x, y = synthetic_digits(4096, rng)

    mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    train("MLP 784-256-10", mlp, x, y)

    cnn = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
        nn.Flatten(), nn.Linear(32 * 16, 10))
    train("small CNN", cnn, x, y, steps=40, lr=3e-3)

    train_fused_vs_eager(x, y)

    print("\nlucid.compile: the same trained models, eager vs compiled (inference, lucid.no_grad())")
    for batch in (1, 32):
        xb = lucid.tensor(x[:batch])
        compare_compiled("MLP 784-256-10", mlp, xb)
        compare_compiled("small CNN", cnn, xb)
    save_and_load(cnn, lucid.tensor(x[:8]))


if __name__ == "__main__":
    main()
