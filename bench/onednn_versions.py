"""Newer oneDNN for Lucid? (issue 13 item 3). Builds bench/onednn_versions/onednn_shapes.cpp against
every oneDNN it can find, runs the builds interleaved (rounds rotate the order), and prints one
table of Lucid's model-zoo convolutions and GEMMs in f32 and bf16 per version, with the ratios
2.6/3.x (>1: 3.x faster) and the implementation each primitive picked.

  2.6   Debian's libdnnl-dev (/usr/include/oneapi/dnnl, libdnnl.so.2, GNU OpenMP).
  3.2   PyPI onednn-cpu-gomp + onednn-devel-cpu-gomp 2023.2.0 (GNU OpenMP): unpacked with
        `pip download` + unzip into --prefix32 (default /tmp/onednn32) when missing.
  3.13  PyPI onednn + onednn-devel 2026.1.0 (SYCL CPU runtime; pulls ~620 MB of wheels, ~3.9 GB
        unpacked): used only if already unpacked in --prefix313 (or with --fetch-313).
A build is "adoptable" only if its process loads no OpenMP runtime other than libgomp (Lucid's):
checked statically (ldd) and at run time (LD_DEBUG=files: libraries dlopen'ed, e.g. by libtbb).
Unadoptable builds are reported and skipped unless --include-unadoptable.

Threads: OMP_NUM_THREADS=--threads for OpenMP builds. A TBB/SYCL build ignores it, so it runs
under `taskset -c 0..threads-1` (with --pin every build does, for a like-for-like comparison).
Times are the min over rounds of each run's min (the median column is the median of the per-run
medians); compare ratios, not absolute times (this box is shared).

    python3 bench/onednn_versions.py [--threads 1] [--rounds 5] [--filter SUBSTR] [--pin]
                                     [--fetch-313] [--include-unadoptable]
Writes bench/results/onednn_versions.json (onednn_versions_t<N>.json for --threads N > 1).
"""
import argparse
import glob
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from _common import print_table, write_json  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "onednn_versions", "onednn_shapes.cpp")
BIN_DIR = os.path.join(HERE, "results", "onednn_bin")
PKGS32 = ["onednn-cpu-gomp==2023.2.0", "onednn-devel-cpu-gomp==2023.2.0"]
PKGS313 = ["onednn==2026.1.0", "onednn-devel==2026.1.0"]
FOREIGN_OMP = re.compile(r"lib(iomp5|omp|iompstubs5)\.so")


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def unpack(prefix, pkgs, deps):
    """pip download the wheels and unzip them; the wheels' data/ trees (lib/, include/) are merged
    into prefix, which is how pip would lay them out under --prefix."""
    print(f"fetching {' '.join(pkgs)} into {prefix} ...", flush=True)
    with tempfile.TemporaryDirectory() as whl:
        r = sh([sys.executable, "-m", "pip", "download", "-q", "-d", whl] + ([] if deps else ["--no-deps"]) + pkgs)
        if r.returncode != 0:
            return f"pip download failed: {r.stderr.strip().splitlines()[-1:]}"
        os.makedirs(prefix, exist_ok=True)
        for w in glob.glob(os.path.join(whl, "*.whl")):
            sh(["unzip", "-q", "-o", w, "-d", prefix])
    for d in glob.glob(os.path.join(prefix, "*.data", "data")):
        shutil.copytree(d, prefix, dirs_exist_ok=True, symlinks=True)
    return None


def header_version(inc):
    f = os.path.join(inc, "oneapi", "dnnl", "dnnl_version.h")
    if not os.path.exists(f):
        return None
    txt = open(f).read()
    return ".".join(re.search(rf"DNNL_VERSION_{k}\s+(\d+)", txt).group(1) for k in ("MAJOR", "MINOR", "PATCH"))


def discover(args):
    libs, skipped = [], []
    # name, include dir, lib dir (None: system), extra env, fetch spec
    cands = [("2.6", "/usr/include", None, {}, None),
             ("3.2", f"{args.prefix32}/include", f"{args.prefix32}/lib", {}, (PKGS32, False)),
             ("3.13", f"{args.prefix313}/include", f"{args.prefix313}/lib",
              # the SYCL CPU device is the bundled Intel OpenCL CPU runtime; its .icd file points
              # into the build machine's tree, so name the library directly
              {"OCL_ICD_FILENAMES": f"{args.prefix313}/lib/libintelocl.so"}, (PKGS313, True))]
    for name, inc, lib, env, fetch in cands:
        so = os.path.join(lib, "libdnnl.so") if lib else "/usr/lib/x86_64-linux-gnu/libdnnl.so"
        if fetch and not os.path.exists(so):
            if name == "3.13" and not args.fetch_313:
                skipped.append((name, f"not unpacked in {args.prefix313} (pass --fetch-313: ~620 MB download)"))
                continue
            err = unpack(os.path.dirname(lib), *fetch)
            if err:
                skipped.append((name, err))
                continue
        hv = header_version(inc)
        if not os.path.exists(so) or hv is None:
            skipped.append((name, f"no library ({so}) or no headers ({inc}/oneapi/dnnl)"))
            continue
        libs.append(dict(name=name, inc=inc, lib=lib, so=os.path.realpath(so), env=env, header_version=hv))
    return libs, skipped


def build(L):
    os.makedirs(BIN_DIR, exist_ok=True)
    exe = os.path.join(BIN_DIR, f"onednn_shapes_{L['name']}")
    cmd = ["g++", "-O2", "-std=c++17", SRC, "-o", exe, f"-I{L['inc']}"]
    if L["lib"]:  # RPATH (not RUNPATH) so the library's own dependencies resolve there too
        cmd += [f"-L{L['lib']}", f"-Wl,--disable-new-dtags,-rpath,{L['lib']}"]
    r = sh(cmd + ["-ldnnl"])
    if r.returncode != 0:
        return None, r.stderr[-2000:]
    return exe, None


def threading(L, exe, env):
    """ldd's threading libraries of libdnnl, and the ones the process actually loads."""
    ldd = sh(["ldd", L["so"]], env=env).stdout
    static = sorted({m.group(0) for m in re.finditer(r"lib(gomp|iomp5|omp|tbb|sycl|OpenCL)[\w.]*\.so[\w.]*", ldd)})
    r = sh(["taskset", "-c", "0", exe, "lstm_b1", "0.001"], env=dict(env, LD_DEBUG="files"))
    loaded = sorted({os.path.basename(m.group(1)) for m in re.finditer(r"file=(\S+)\s+\[0\];\s+(needed|dynamically)",
                                                                      r.stderr)})
    rt = sorted({x for x in loaded if re.search(r"lib(gomp|iomp5|omp|tbb|sycl|OpenCL|intelocl)\b", x)})
    foreign = sorted({x for x in loaded if FOREIGN_OMP.search(x)})
    who = sorted({f"{os.path.basename(m.group(1))} by {os.path.basename(m.group(2))}" for m in re.finditer(
        r"file=(\S*lib(?:iomp5|omp)\.so\S*)\s+\[0\];\s+(?:needed|dynamically loaded) by (\S+)", r.stderr)})
    return dict(ldd=static, loaded_at_run=rt, foreign_openmp=foreign, foreign_loaded_by=who)


def verbose_info(exe, env):
    r = sh(["taskset", "-c", "0", exe, "lstm_b1", "0.001"], env=dict(env, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1"))
    info = [ln for ln in r.stdout.splitlines() if ",info," in ln and re.search(r"oneDNN v|runtime:|isa:|engine,0", ln)]
    return [re.sub(r"^onednn_verbose,(v1,)?info,", "", ln) for ln in info]


def run_once(L, exe, env, filt):
    r = sh(L["launch"] + [exe, filt], env=env)
    rows = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0:
        print(f"  {L['name']}: exit {r.returncode}: {r.stderr[-300:]}", flush=True)
    return rows


def fmt(v, nd=None):
    if v is None:
        return "-"
    return f"{v:.{nd if nd is not None else 5 if v < 0.01 else 4 if v < 1 else 3 if v < 10 else 2}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--filter", default="", help="substring of the case names to run")
    ap.add_argument("--pin", action="store_true", help="taskset every build to cores 0..threads-1")
    ap.add_argument("--prefix32", default="/tmp/onednn32")
    ap.add_argument("--prefix313", default="/tmp/onednn313")
    ap.add_argument("--fetch-313", action="store_true")
    ap.add_argument("--include-unadoptable", action="store_true")
    args = ap.parse_args()

    libs, skipped = discover(args)
    base_env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    for k in ("ONEDNN_VERBOSE", "DNNL_VERBOSE", "LD_DEBUG"):
        base_env.pop(k, None)
    cores = f"0-{args.threads - 1}" if args.threads > 1 else "0"
    ready = []
    for L in libs:
        exe, err = build(L)
        if exe is None:
            skipped.append((L["name"], f"build failed: {err}"))
            continue
        env = dict(base_env, **L["env"])
        L["threading"] = threading(L, exe, env)
        L["verbose"] = verbose_info(exe, env)
        foreign = L["threading"]["foreign_openmp"]
        L["adoptable"] = not foreign
        omp_build = any("gomp" in x for x in L["threading"]["ldd"])
        L["launch"] = ["taskset", "-c", cores] if (args.pin or not omp_build) else []
        why = "" if L["adoptable"] else f"not adoptable: loads {', '.join(L['threading']['foreign_loaded_by'] or foreign)}"
        print(f"{L['name']} (headers {L['header_version']}, {L['so']}): ldd {' '.join(L['threading']['ldd'])}; "
              f"at run time {' '.join(L['threading']['loaded_at_run'])}"
              + (f"; launched under {' '.join(L['launch'])}" if L["launch"] else "") + (f"; {why}" if why else ""))
        for ln in L["verbose"]:
            print(f"    {ln}")
        if not L["adoptable"] and not args.include_unadoptable:
            skipped.append((L["name"], why + " (pass --include-unadoptable to time it anyway)"))
            continue
        L["exe"], L["env_run"] = exe, env
        ready.append(L)
    for name, why in skipped:
        print(f"SKIPPED {name}: {why}")
    if not ready:
        sys.exit("nothing to run")

    results = {L["name"]: {} for L in ready}  # name -> (case, dtype) -> list of per-run records
    order = []
    for rnd in range(args.rounds):
        rot = ready[rnd % len(ready):] + ready[:rnd % len(ready)]
        print(f"round {rnd + 1}/{args.rounds}: {' '.join(L['name'] for L in rot)}", flush=True)
        for L in rot:
            for row in run_once(L, L["exe"], L["env_run"], args.filter):
                if "case" not in row:
                    continue
                key = (row["case"], row["dtype"])
                if key not in order:
                    order.append(key)
                results[L["name"]].setdefault(key, []).append(row)

    names = [L["name"] for L in ready]
    base = "2.6" if "2.6" in names else names[0]
    others = [n for n in names if n != base]
    header = ["case", "dtype"] + [f"{n} ms" for n in names] + [f"{base}/{n}" for n in others] + \
        [f"{n} med" for n in names] + ["impl " + " / ".join(names)]
    rows, out_cases, logs = [], [], {n: {} for n in others}
    for key in order:
        cell, rec = {}, {"case": key[0], "dtype": key[1]}
        for n in names:
            runs = [r for r in results[n].get(key, []) if "min_ms" in r]
            if runs:
                cell[n] = dict(min=min(r["min_ms"] for r in runs), med=statistics.median(r["median_ms"] for r in runs),
                               impl=runs[0]["impl"], dst=runs[0]["dst"])
            else:
                errs = [r.get("error") for r in results[n].get(key, [])]
                cell[n] = dict(min=None, med=None, impl="error: " + (errs[0] if errs else "missing"), dst=None)
            rec[n] = dict(cell[n], runs=len(runs))
        ratios = []
        for n in others:
            a, b = cell[base]["min"], cell[n]["min"]
            ratio = a / b if a and b else None
            ratios.append(fmt(ratio, 2))
            rec[f"ratio_{base}_over_{n}"] = ratio
            if ratio:
                logs[n].setdefault((key[1], "conv" if not key[0].startswith(("gemm", "vit", "gpt", "lstm")) else "gemm"),
                                   []).append(math.log(ratio))
        dst = {cell[n]["dst"] for n in names if cell[n]["dst"]}
        dtype = key[1] + (f"->{'/'.join(sorted(dst))}" if dst and dst != {key[1]} else "")
        impls = " / ".join(cell[n]["impl"] for n in names)
        rows.append([key[0], dtype] + [fmt(cell[n]["min"]) for n in names] + ratios +
                    [fmt(cell[n]["med"]) for n in names] + [impls])
        out_cases.append(rec)
    print_table(f"oneDNN versions, {args.threads} thread(s), min over {args.rounds} interleaved runs "
                f"(ratio >1: newer faster)", header, rows)
    geo = {}
    for n in others:
        for (dtyp, kind), ls in sorted(logs[n].items()):
            g = math.exp(sum(ls) / len(ls))
            geo[f"{base}/{n} {kind} {dtyp}"] = g
            print(f"geomean {base}/{n} {kind:4s} {dtyp:4s}: {g:.3f} over {len(ls)} cases")
    for name, why in skipped:
        print(f"SKIPPED {name}: {why}")

    libinfo = {L["name"]: {k: L.get(k) for k in ("header_version", "so", "threading", "verbose", "adoptable", "launch")}
               for L in libs}
    write_json(f"onednn_versions{'' if args.threads == 1 else f'_t{args.threads}'}",
               dict(threads=args.threads, rounds=args.rounds, pin=args.pin, libs=libinfo,
                    skipped=[dict(lib=n, why=w) for n, w in skipped], geomean=geo, cases=out_cases))


if __name__ == "__main__":
    main()
