"""Measured API coverage: which names PyTorch users call does lucid have?

    python3 scripts/api_coverage.py            # needs torch installed; writes the files below
    python3 scripts/api_coverage.py --check    # core list only (no torch needed); exit 1 on a regression

It enumerates the public names of the installed torch, namespace by namespace (NAMESPACES), drops
the ones no port of a model would call (EXCLUDE, each pattern with its reason: see
docs/api_coverage.md), and asks lucid for each (hasattr on the lucid counterpart). It writes

- docs/api_coverage.json: every name with its namespace, kind and whether lucid has it;
- docs/api_coverage.md: per-namespace coverage of the full and the core list, and what is missing;
- python/lucid/_torch_api.json: the torch names by namespace and kind. lucid's module-level
  __getattr__ (lucid/_missing.py) reads it so that `lucid.log10` on a build without log10 says
  "a PyTorch function that lucid does not implement yet" rather than "did you mean log1p?".

The core list (scripts/api_core_names.txt) is what torchvision's classification models, GPT-2
and BERT implementations and the official PyTorch tutorials call; it is written by hand, one
"namespace name" per line. scripts/api_core_allowed_missing.txt lists the core names lucid lacks
today: tests/python/test_api_coverage.py fails when a core name lucid has goes missing (the
missing list must stay a subset of the allowed list, which only shrinks).
"""
import argparse
import importlib
import json
import os
import re
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE_FILE = os.path.join(ROOT, "scripts", "api_core_names.txt")
ALLOWED_MISSING_FILE = os.path.join(ROOT, "scripts", "api_core_allowed_missing.txt")
NAMES_FILE = os.path.join(ROOT, "python", "lucid", "_torch_api.json")
JSON_OUT = os.path.join(ROOT, "docs", "api_coverage.json")
MD_OUT = os.path.join(ROOT, "docs", "api_coverage.md")

# namespace key -> (torch module path, lucid module path). "Tensor" is the Tensor class.
NAMESPACES = {
    "torch": ("torch", "lucid"),
    "Tensor": ("torch.Tensor", "lucid.Tensor"),
    "nn": ("torch.nn", "lucid.nn"),
    "nn.functional": ("torch.nn.functional", "lucid.nn.functional"),
    "nn.init": ("torch.nn.init", "lucid.nn.init"),
    "nn.utils": ("torch.nn.utils", "lucid.nn.utils"),
    "nn.utils.rnn": ("torch.nn.utils.rnn", "lucid.nn.utils.rnn"),
    "optim": ("torch.optim", "lucid.optim"),
    "optim.lr_scheduler": ("torch.optim.lr_scheduler", "lucid.optim.lr_scheduler"),
    "utils.data": ("torch.utils.data", "lucid.utils.data"),
    "autograd": ("torch.autograd", "lucid.autograd"),
    "linalg": ("torch.linalg", "lucid.linalg"),
}

# Names dropped from the full list, with the reason (docs/api_coverage.md prints this table).
# Everything else public (no leading underscore) and callable counts, deprecated-but-present
# aliases included where torch documents them without a deprecation (e.g. Tensor.type).
EXCLUDE = [
    (r"(^q_|quantiz|^dequantize$|^int_repr$|^qscheme$|choose_qparams|fake_quant|fbgemm)", "quantization"),
    (r"(sparse|_coo|_csr|_csc|_bsr|_bsc|^coalesce$|^is_coalesced$|^indices$|^values$|^crow_indices$|^col_indices$|"
     r"^ccol_indices$|^row_indices$|^to_dense$|^dense_dim$|^smm$|^dsmm$|^hsmm$|^hspmm$|^saddmm$|^spmm$|^sspaddmm$)",
     "sparse tensors (no sparse layout in lucid)"),
    (r"(^view_as_real|^view_as_complex|^complex$|^polar$|^conj|^resolve_conj$|^resolve_neg$|^is_conj$|^is_neg$|"
     r"^is_complex$|^real$|^imag$|^angle$|^adjoint$|^H$|^mH$|^sgn_?$|^cfloat$|^cdouble$|^chalf$|^isreal$)",
     "complex numbers (no complex dtype in lucid)"),
    (r"(^cudnn|^miopen|^mkldnn|^to_mkldnn$|^is_mkldnn$|^native_|^is_vulkan|^ipu$|^xpu$|^mtia$|^is_ipu$|^is_xpu$|"
     r"^is_mtia$|^is_maia$|^is_meta$|^is_xla$|^is_mps$|_ipu_|_xla_|_ipu$|_xla$|^record_stream$|^pin_memory$|"
     r"^is_pinned$|^get_device_module$|^is_distributed$)", "backend-specific kernels and devices"),
    (r"(_copy$|^unsafe_|_backward|^batch_norm_(elemt|stats|gather|update|backward)|^slice_inverse$|"
     r"^nonzero_static$|^hash_tensor$|^thread_safe_generator$|^alias_copy$)",
     "functionalisation / autograd / distributed internals exposed in torch.*"),
    (r"(^sym_|^Sym|^fork$|^wait$|^parse_ir$|^parse_schema$|^parse_type_comment$|^merge_type_from_type_comment$|"
     r"^import_ir_module|^unify_type_list$|^typename$|^vmap$|^cond$|^autocast_(in|de)crement_nesting$|"
     r"^module_load$|^compiled_with_cxx11_abi$|^segment_reduce$|^as_subclass$|^is_inference$|^reinforce$|^volatile$|^output_nr$|^dim_order$|^from_file$)",
     "TorchScript, torch.compile and functorch internals"),
    (r"(Storage$|^storage$|^storage_type$|^untyped_storage$|^share_memory_$|^is_shared$|^is_set_to$|^set_$|"
     r"^map_$|^map2_$|^apply_$|^new$|^resize$|^name$|^names$|^refine_names$|^align_to$|^align_as$|^rename_?$|"
     r"^has_names$|^is_nested$|^to_padded_tensor$)", "storages, named and nested tensors, CPU-only legacy methods"),
    (r"^(symeig|eig|lstsq|solve|chain_matmul)$", "torch.* and Tensor methods that raise 'removed, use torch.linalg'",
     ("torch", "Tensor")),
    (r"(^(Bool|Byte|Char|Short|Int|Long|Float|Double|Half|BFloat16)Tensor$)", "legacy typed-tensor constructors"),
]
# torch.* classes that count (the rest of torch.__all__'s classes are TorchScript's C++ types).
TORCH_CLASSES = {"Tensor", "Size", "Generator", "device", "dtype", "finfo", "iinfo", "no_grad", "enable_grad",
                 "inference_mode", "set_grad_enabled", "autocast", "GradScaler", "memory_format", "layout"}
# Module attributes that are imports, notes or types, not API (torch.nn.functional imports math etc.);
# not applied to torch.* and Tensor, whose candidates are torch.__all__ and the class's own.
NOT_API = {"Callable", "Optional", "Tensor", "DType", "TYPE_CHECKING", "Literal", "ParamSpec", "TypeVar", "Any",
           "Union", "List", "Tuple", "Iterable", "Iterator", "Sequence", "Generic", "overload", "warnings", "math",
           "torch", "np", "importlib", "dataclasses", "handle_torch_function", "has_torch_function",
           "has_torch_function_unary", "has_torch_function_variadic", "boolean_dispatch", "assert_int_or_pair",
           "BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "ScalingType", "SwizzleType",
           "GRID_SAMPLE_INTERPOLATION_MODES", "GRID_SAMPLE_PADDING_MODES", "common_notes",
           "reproducibility_notes", "sparse_support_notes", "tf32_notes", "factory_kwargs", "Optimizer_",
           "LinAlgError", "Variable", "NestedIOFunction", "variable", "grad_mode", "DFIterDataPipe", "DataChunk",
           "IterDataPipe", "MapDataPipe", "functional_datapipe", "guaranteed_datapipes_determinism",
           "non_deterministic", "argument_validation", "runtime_validation", "runtime_validation_disabled",
           "swap_in_optimizer_params_and_state", "enforce_grad_layout_policy", "set_multithreading_enabled"}


# Submodules listed (kind "module") so that `lucid.linalg` or `lucid.nn.utils.rnn`, while missing,
# says it is a PyTorch module lucid lacks; they are not counted in the coverage numbers.
SUBMODULES = {"torch": ["linalg", "fft", "special", "distributions", "amp", "autograd", "nn", "optim", "utils",
                        "cuda", "backends", "jit", "hub", "onnx", "sparse", "distributed", "profiler", "testing",
                        "func", "fx", "export", "mps", "ao", "quantization", "random", "compiler"],
              "nn": ["functional", "init", "utils", "parameter", "modules", "attention"],
              "nn.utils": ["rnn", "parametrize", "parametrizations", "prune", "stateless", "fusion"],
              "optim": ["lr_scheduler", "swa_utils"], "utils": ["data", "checkpoint", "tensorboard"],
              "autograd": ["functional", "forward_ad", "graph", "profiler"]}


def excluded(name, ns):
    """The reason `name` of namespace `ns` is dropped from the full list, or None."""
    if name.startswith("_") or (name in NOT_API and ns not in ("torch", "Tensor")):
        return "private or not API"
    for pat, why, *where in EXCLUDE:
        if re.search(pat, name) and (not where or ns in where[0]):
            return why
    return None


def _resolve(path):
    if path.endswith(".Tensor"):
        return getattr(importlib.import_module(path[:-len(".Tensor")]), "Tensor")
    try:
        return importlib.import_module(path)
    except ImportError:
        return None


def _kind(obj):
    return "class" if isinstance(obj, type) else "function"


def torch_names():
    """{namespace: {name: kind}} from the installed torch, filtered as documented above."""
    import torch  # noqa: F401  (a measurement dependency only)
    out = {}
    for ns, (tpath, _) in NAMESPACES.items():
        mod = _resolve(tpath)
        if ns == "torch":  # torch.__all__, plus the few public Python functions it omits (unique, set_grad_enabled)
            cands = [n for n in dir(mod) if n in torch.__all__ or n in TORCH_CLASSES or (getattr(getattr(mod, n), "__module__", None) or
                                                                     "").split(".")[:2] in (["torch"], ["torch", "functional"])]
        elif ns == "Tensor":
            cands = dir(mod)
        else:
            cands = getattr(mod, "__all__", None) or dir(mod)
        names = {}
        for n in cands:
            if excluded(n, ns):
                continue
            obj = getattr(mod, n, None)
            if ns == "Tensor":
                names[n] = "method" if callable(obj) else "attribute"
                continue
            if obj is None or isinstance(obj, types.ModuleType) or not callable(obj):
                continue
            if isinstance(obj, type) and issubclass(obj, BaseException) and n != "OutOfMemoryError":
                continue
            if ns == "torch" and isinstance(obj, type) and n not in TORCH_CLASSES:
                continue
            if ns == "nn" and not (isinstance(obj, type) and (issubclass(obj, torch.nn.Module) or
                                                             issubclass(obj, torch.Tensor))):
                continue
            if ns == "optim" and not (isinstance(obj, type) and issubclass(obj, torch.optim.Optimizer)):
                continue
            if ns == "optim.lr_scheduler" and getattr(obj, "__module__", "") != tpath:
                continue
            if ns == "nn.init" and not n.endswith("_") and n != "calculate_gain" and n + "_" in dir(mod):
                continue  # the deprecated non-underscore aliases (torch.nn.init.normal)
            names[n] = _kind(obj)
        out[ns] = dict(sorted(names.items()))
    for ns, subs in SUBMODULES.items():
        mod = _resolve(NAMESPACES[ns][0] if ns in NAMESPACES else "torch." + ns)
        out.setdefault(ns, {}).update({n: "module" for n in subs if isinstance(getattr(mod, n, None), types.ModuleType)})
    return out


def lucid_has(ns, name):
    obj = _resolve(NAMESPACES[ns][1] if ns in NAMESPACES else "lucid." + ns)
    return obj is not None and hasattr(obj, name)


def core_names():
    """[(namespace, name)] of the core list, in file order."""
    out = []
    with open(CORE_FILE) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                ns, name = line.split()
                if ns not in NAMESPACES:
                    raise ValueError(f"{CORE_FILE}: unknown namespace {ns!r} in line {line!r}")
                out.append((ns, name))
    return out


def allowed_missing():
    with open(ALLOWED_MISSING_FILE) as f:
        return {tuple(l.split()) for l in (x.split("#", 1)[0].strip() for x in f) if l}


def core_check():
    """(present, missing): the core names lucid has and lacks. Needs no torch."""
    present, missing = [], []
    for ns, name in core_names():
        (present if lucid_has(ns, name) else missing).append((ns, name))
    return present, missing


def _pct(a, b):
    return 100.0 * a / b if b else 100.0


def report(names):
    core = core_names()
    rows = {ns: {n: {"kind": k, "lucid": lucid_has(ns, n)} for n, k in d.items() if k != "module"}
            for ns, d in names.items() if ns in NAMESPACES}
    core_rows = [(ns, n, lucid_has(ns, n)) for ns, n in core]
    summary = {}
    for ns in NAMESPACES:
        full = rows.get(ns, {})
        c = [r for r in core_rows if r[0] == ns]
        summary[ns] = {"full": len(full), "full_have": sum(v["lucid"] for v in full.values()),
                       "core": len(c), "core_have": sum(r[2] for r in c)}
    tot = {k: sum(s[k] for s in summary.values()) for k in ("full", "full_have", "core", "core_have")}
    # also without the in-place variants (`abs_`, `Tensor.add_`): most of them follow their op
    outplace = [v["lucid"] for ns, d in rows.items() for n, v in d.items() if not n.endswith("_") or ns == "nn.init"]
    tot["outplace"], tot["outplace_have"] = len(outplace), sum(outplace)
    return rows, core_rows, summary, tot


def write_outputs(names):
    import torch
    with open(NAMES_FILE, "w") as f:  # first: lucid's lookups below read it
        json.dump({"torch_version": torch.__version__.split("+")[0], "names": names}, f, indent=0, sort_keys=True)
        f.write("\n")
    rows, core_rows, summary, tot = report(names)
    with open(JSON_OUT, "w") as f:
        json.dump({"torch_version": torch.__version__.split("+")[0], "summary": summary, "total": tot,
                   "names": rows, "core": [{"namespace": ns, "name": n, "lucid": h} for ns, n, h in core_rows]},
                  f, indent=1, sort_keys=True)
        f.write("\n")
    md = ["# PyTorch API coverage", "",
          "Generated by `python3 scripts/api_coverage.py` against torch "
          f"{torch.__version__.split('+')[0]}; do not edit by hand (rerun the script).", "",
          "*Full list*: the public callables of each torch namespace, less the excluded groups below. "
          "*Core list* (`scripts/api_core_names.txt`): what torchvision's classification models (ResNet, "
          "MobileNet v2/v3, ViT, EfficientNet, DenseNet), nanoGPT/minGPT and a HuggingFace-style BERT, and the "
          "official tutorials (quickstart, CIFAR-10 CNN, text classification, seq2seq with attention, "
          "Transformer language model) call. A name counts as present when `hasattr` finds it on the lucid "
          "counterpart (the name exists; its behaviour is what the op tests check).", "",
          "| namespace | full | full % | core | core % |", "|---|---|---|---|---|"]
    for ns, s in summary.items():
        md.append(f"| {ns} | {s['full_have']}/{s['full']} | {_pct(s['full_have'], s['full']):.0f}% | "
                  f"{s['core_have']}/{s['core']} | {_pct(s['core_have'], s['core']):.0f}% |")
    md.append(f"| **total** | {tot['full_have']}/{tot['full']} | **{_pct(tot['full_have'], tot['full']):.1f}%** | "
              f"{tot['core_have']}/{tot['core']} | **{_pct(tot['core_have'], tot['core']):.1f}%** |")
    md += ["", f"Without the in-place variants (names ending in `_`, except `nn.init`'s): "
           f"{tot['outplace_have']}/{tot['outplace']} ({_pct(tot['outplace_have'], tot['outplace']):.1f}%)."]
    missing_core = [f"{ns}.{n}" if ns != "Tensor" else f"Tensor.{n}" for ns, n, h in core_rows if not h]
    md += ["", f"## Missing from the core list ({len(missing_core)})", "",
           ", ".join(f"`{m}`" for m in missing_core) or "none", "",
           "## Missing from the full list, by namespace", ""]
    for ns, d in rows.items():
        miss = [n for n, v in d.items() if not v["lucid"]]
        md.append(f"- **{ns}** ({len(miss)}): " + (", ".join(f"`{n}`" for n in miss) or "none"))
    md += ["", "## What the full list leaves out", "",
           "Names starting with `_`; imports, type aliases and doc-note strings of a module; torch.* classes "
           "other than the user-facing ones (" + ", ".join(sorted(TORCH_CLASSES)) + "), since the rest of "
           "`torch.__all__`'s classes are TorchScript's C++ types; in `nn` only Module and Parameter classes; in "
           "`optim` only Optimizer classes; in `nn.init` the deprecated aliases without the trailing underscore. "
           "And these groups (regular expressions in `EXCLUDE`):", ""]
    for pat, why, *where in EXCLUDE:
        md.append(f"- {why}" + (f" (in {', '.join(where[0])})" if where else ""))
    md.append("")
    with open(MD_OUT, "w") as f:
        f.write("\n".join(md))
    return summary, tot, missing_core


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="check the core list only (no torch needed)")
    a = ap.parse_args(argv)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    if a.check:
        present, missing = core_check()
        extra = sorted(set(missing) - allowed_missing())
        print(f"core: {len(present)}/{len(present) + len(missing)} present")
        if extra:
            print("core names lucid lost (not in scripts/api_core_allowed_missing.txt):",
                  ", ".join(f"{ns} {n}" for ns, n in extra))
            return 1
        return 0
    summary, tot, missing_core = write_outputs(torch_names())
    for ns, s in summary.items():
        print(f"{ns:20s} full {s['full_have']:4d}/{s['full']:<4d} {_pct(s['full_have'], s['full']):5.1f}%   "
              f"core {s['core_have']:3d}/{s['core']:<3d} {_pct(s['core_have'], s['core']):5.1f}%")
    print(f"{'total':20s} full {tot['full_have']:4d}/{tot['full']:<4d} {_pct(tot['full_have'], tot['full']):5.1f}%   "
          f"core {tot['core_have']:3d}/{tot['core']:<3d} {_pct(tot['core_have'], tot['core']):5.1f}%")
    print(f"{'without in-place':20s} full {tot['outplace_have']:4d}/{tot['outplace']:<4d} "
          f"{_pct(tot['outplace_have'], tot['outplace']):5.1f}%")
    print("missing core names:", ", ".join(missing_core) or "none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
