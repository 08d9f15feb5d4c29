// lucid.backends.cudnn's switches (python/lucid/backends/cudnn.py): read and set the process-wide
// flags of lucid/backends/cudnn_flags.h by name. The same bindings serve the CUDA build (whose
// convolutions read the flags) and the CPU-only one (which keeps them, as torch's CPU build has
// torch.backends.cudnn).
#include "bind.h"
#include "lucid/backends/cudnn_flags.h"

namespace lucid::py {

namespace {

std::atomic<bool>& cudnn_flag(const std::string& name) {
  CudnnFlags& f = cudnn_flags();
  if (name == "allow_tf32") return f.allow_tf32;
  if (name == "benchmark") return f.benchmark;
  if (name == "deterministic") return f.deterministic;
  if (name == "deterministic_algorithms") return f.deterministic_algorithms;
  throw ValueError(str("lucid.backends.cudnn: no flag '", name, "'"));
}

}  // namespace

LUCID_BINDER(cudnn) {
  m.def("_cudnn_flag", [](const std::string& name) { return cudnn_flag(name).load(); }, nb::arg("name"),
        "A lucid.backends.cudnn flag: allow_tf32, benchmark, deterministic or deterministic_algorithms.");
  m.def("_cudnn_set_flag", [](const std::string& name, bool value) { cudnn_flag(name).store(value); },
        nb::arg("name"), nb::arg("value"), "Sets a lucid.backends.cudnn flag.");
}

}  // namespace lucid::py
