// Compiled artifacts: what lucid.compile.save_compiled writes and load_compiled (Python) or
// lucid::artifact::Artifact::load (C++, no Python) reads. One file holds every saved signature
// of a compiled model, function or training step:
//   - programs: each optimised graph as IR text (ops by name, typed attributes, never pointers)
//     plus its constants as blobs, for a device ("cpu"; the CUDA backend adds device code);
//   - entries: per signature, its forward program (and the backward of a grad entry), the
//     bound state it reads and writes by name, the gradient wiring, and the Python side's
//     description of the call (argument and result nesting) as opaque JSON;
//   - tensors: the bound state (parameters, buffers, optimizer state) by name, optionally
//     with their data as 64-byte-aligned blobs that load without a copy;
//   - the stamp (stamp.h) and the attribute schema of every op used.
// The side-effect plan is part of each program: assigns to state (BatchNorm statistics,
// optimizer state, parameters) and the random draws per call (rng_draws).
//
// Loading is safe on untrusted files: no code runs, every size is bounded by the file, every
// program is parsed, verified (ir::verify) and type-checked (ir::check_types) before an
// executable is built from it (passes are not re-run; planning is). Any problem raises
// ArtifactError naming the cause.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lucid/compile/export/container.h"
#include "lucid/compile/runtime/executable.h"

namespace lucid::rt {
class CompiledEntry;
}

namespace lucid::artifact {

// A bound tensor by name. role: "parameter", "buffer", "optimizer", "captured"... (free text the
// Python side uses); requires_grad is restored on load.
struct NamedTensor {
  std::string name;
  Tensor value;
  std::string role;
  bool requires_grad = false;
  // Part of the saved object's weights (its state_dict): stored only when saving with weights,
  // and what LoadOptions::weights must supply. Other bound tensors (non-persistent buffers,
  // tensors a function captures) are always stored.
  bool weight = true;
};

// One saved signature.
struct EntryRecord {
  std::shared_ptr<const rt::Executable> forward;   // required
  std::shared_ptr<const rt::Executable> backward;  // grad entries of a compiled forward; else null
  std::vector<int> states;  // per forward state slot: index into the tensor table
  // Gradient wiring (see rt's compiled entries): n_out user outputs, then saved values or, with
  // precomputed (make_step), the gradients for a unit grad output.
  bool grad = false, precomputed = false;
  int n_out = 0;
  std::vector<int> grad_outs, wrt_inputs, wrt_states;
  std::vector<bool> wrt_used;
  std::vector<std::string> input_names;  // per forward input (for the C++ runner and messages)
  std::vector<std::pair<int, Tensor>> defaults;  // inputs the caller may omit (a step's hyper-parameters)
  std::string python;  // JSON text: the Python side's call description (opaque here)
};

struct SaveRequest {
  std::string kind;  // "compiled_module" or "fused_step"
  std::vector<NamedTensor> tensors;
  std::vector<EntryRecord> entries;
  bool weights = true;  // store the tensors' data (else names, shapes and dtypes only)
  std::string python;   // JSON text: the Python side's description of the object
};

// Writes the artifact atomically (container.h); raises ArtifactError with the reason.
void save(const std::string& path, const SaveRequest& req);

struct LoadOptions {
  // Replaces the stored weights (or supplies them for an artifact saved without): every weight
  // tensor's name must be given, with its shape and dtype; other names are an error.
  std::map<std::string, Tensor> weights;
  bool has_weights = false;
};

class Artifact {
 public:
  Artifact();
  ~Artifact();
  Artifact(const Artifact&) = delete;
  Artifact& operator=(const Artifact&) = delete;
  static std::shared_ptr<Artifact> load(const std::string& path, const LoadOptions& opts = {});

  const std::string& kind() const { return kind_; }
  const std::string& python() const { return python_; }  // the object's description (JSON text)
  const json& stamp() const;
  uint64_t file_bytes() const;
  // The bound state, shared by every entry (a training step updates it in place).
  std::vector<NamedTensor>& tensors() { return tensors_; }
  const std::vector<EntryRecord>& entries() const { return entries_; }
  // Runs the first entry whose inputs match `inputs` (dtype and shape; trailing inputs with
  // defaults may be omitted) and returns its n_out outputs (all outputs of a non-grad entry);
  // under grad mode a grad entry's outputs carry its backward, as in Python.
  // Raises ArtifactError listing the saved signatures when none matches.
  TensorList run(const TensorList& inputs);
  std::string signatures() const;  // one line per entry: its input types

 private:
  std::shared_ptr<const Container> file_;
  std::string kind_, python_;
  std::vector<NamedTensor> tensors_;
  std::vector<EntryRecord> entries_;
  std::vector<std::unique_ptr<rt::CompiledEntry>> compiled_;  // per entry: what runs it
};

}  // namespace lucid::artifact
