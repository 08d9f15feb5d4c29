"""Shared benchmark helpers: robust timing (median of repeats), table printing, JSON output,
and a report of which BLAS/OpenMP kernels the peers loaded."""
import json
import importlib
import os
import platform
import statistics
import time


def cold_inductor_cache():
    """torch.compile's first call measured cold, as lucid's: a fresh inductor cache directory for this
    run, removed at exit (unless TORCHINDUCTOR_CACHE_DIR is set). Call before torch is imported."""
    if "TORCHINDUCTOR_CACHE_DIR" in os.environ:
        return
    import atexit
    import shutil
    import tempfile
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="lucid_bench_inductor_")
    atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], True)


def timeit(fn, *, min_time=0.2, repeats=7, warmup=3):
    """Median seconds per call of fn(), auto-scaling the inner loop to about min_time/repeats."""
    for _ in range(warmup):
        fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time / repeats or n >= 1 << 20:
            break
        n *= 2
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t0) / n)
    return statistics.median(samples)


def timeit_interleaved(fns, *, rounds=15, burst=0.04, warmup=5):
    """Median seconds per call of each fn in `fns` ({name: fn}), measured in `rounds` rounds that
    each time every fn for a burst of about `burst` seconds, in an order rotated every round. A
    slow phase of the machine, or another runtime's threads still spinning after the previous
    fn, then hits every column alike instead of whichever ran at that moment."""
    names = list(fns)
    n = {}
    for k in names:
        for _ in range(warmup):
            fns[k]()
        reps = 1
        while True:
            t0 = time.perf_counter()
            for _ in range(reps):
                fns[k]()
            if time.perf_counter() - t0 >= burst / 2 or reps >= 1 << 20:
                break
            reps *= 2
        n[k] = reps
    samples = {k: [] for k in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            fn, reps = fns[k], n[k]
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            samples[k].append((time.perf_counter() - t0) / reps)
    return {k: statistics.median(v) for k, v in samples.items()}


def import_jax(threads, *names):
    """Imports jax.numpy and the modules `names` (optax, the jax twins) after the thread count is
    known: XLA reads its flags at import, and threads == 1 makes it single-threaded. jax is
    optional: returns (modules, "") or (None, the reason they are missing)."""
    if threads == 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1").strip()
    try:
        return [importlib.import_module(n) for n in ("jax", "jax.numpy") + names], ""
    except ImportError as e:
        return None, f"jax not installed ({e}); pip install -r bench/requirements.txt"


def environment():
    info = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}
    try:
        import threadpoolctl
        info["threadpools"] = [{k: p.get(k) for k in ("internal_api", "version", "threading_layer", "architecture", "num_threads")}
                               for p in threadpoolctl.threadpool_info()]
    except Exception:  # noqa: BLE001
        pass
    return info


def print_table(title, header, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("| " + " | ".join(str(h).ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |")


def write_json(name, payload):
    out_dir = os.path.join(os.path.dirname(__file__), "results")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{name}.json")
    payload = dict(payload, environment=environment())
    with open(path, "w") as f:
        json.dump(payload, f, indent=2)
    print(f"\nwrote {path}")
    return path


# Table cells for measured times: a float is seconds; "n/a" (no twin) or an error string otherwise.
def is_time(v):
    return isinstance(v, float)


def fmt_ms(v):
    return f"{v * 1e3:.3f}" if is_time(v) else "n/a" if v == "n/a" else "error"


def fmt_ratio(num, den):
    return f"{num / den:.2f}x" if is_time(num) and is_time(den) else "n/a"
