// CompiledEntry: one compiled call signature, ready to run from C++ with no Python. It holds the
// forward executable, the bound state tensors it reads and writes (parameters, buffers,
// optimizer state), and, for an entry traced under grad mode, the backward: either a compiled
// backward executable (a compiled forward) or gradients the forward itself returns (make_step).
// run() runs the forward and, under grad mode, gives the differentiable outputs one autograd
// node (compiled_backward.h), so loss.backward() through a compiled call works as in eager.
//
// Callers: the Python binding's _CompiledCore (python/src/compile_bind.cpp: its Entry adds the
// Python parts, i.e. the key guards, the output structure and the Python objects of the state)
// and the C++ artifact loader. Either does its own signature lookup (and counts its hits); this
// class only runs. Typical use:
//
//   rt::JointCompileResult r = rt::compile_joint(joint_graph, n_inputs, n_outputs, "");
//   rt::CompiledEntry e(r.forward.exe, r.backward.exe, {weight}, rt::GradSpec{...});
//   TensorList y = e.run({x});               // y[0].grad_fn() is a CompiledFunction node
//   autograd::backward({y[0]}, {}, false, false);  // weight.grad() filled in
//
// Thread safety: run() may be called concurrently (Executable::run is thread-safe); the
// autograd wiring writes only the call's own outputs and reads the inputs' autograd metadata,
// as an eager op does. set_states() must not race with run().
#pragma once
#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "lucid/autograd/grad_mode.h"
#include "lucid/compile/runtime/executable.h"

namespace lucid::rt {

// How a grad entry's forward results line up with the call's outputs and gradients.
struct GradSpec {
  int n_out = 0;                // the call's outputs: the forward's first n_out results. After them come
                                // the saved values (compiled backward) or the gradients (precomputed)
  std::vector<int> grad_outs;   // outputs (< n_out) that get the grad_fn, in grad-output order
  std::vector<int> wrt_inputs;  // flat input indices differentiated (each must require grad at run)
  std::vector<int> wrt_states;  // bound-state indices differentiated
  std::vector<bool> wrt_used;   // per wrt (inputs then states): has a gradient (else its edge gets none)
};

class CompiledEntry {
 public:
  // An entry without backward: fwd returns exactly the call's outputs. states: one per state of
  // fwd's graph, in its order (checked).
  CompiledEntry(std::shared_ptr<const Executable> fwd, TensorList states);
  // A grad entry. bwd non-null: a compiled backward (from compile_joint), taking the forward's
  // saved values then one gradient per grad output, with `states` as its bound state, and
  // returning one gradient per used wrt. bwd null: precomputed (make_step): the forward returns
  // n_out outputs then one gradient per used wrt for a unit gradient of its one grad output (a
  // scalar loss). Which states require grad now is recorded (state_rg) and checked by
  // states_valid(). Every index and count is checked against the executables (ValueError).
  CompiledEntry(std::shared_ptr<const Executable> fwd, std::shared_ptr<const Executable> bwd, TensorList states,
                GradSpec grad);
  CompiledEntry(const CompiledEntry&) = delete;
  CompiledEntry& operator=(const CompiledEntry&) = delete;

  // Runs the call on its flat tensor inputs (one per input of fwd's graph; shapes and dtypes are
  // checked by the executable) and returns its outputs: under grad mode a grad entry's
  // differentiable outputs carry one CompiledFunction/CompiledStep grad_fn. Writes to bound
  // state land in the state tensors. = finish(flat, run_forward(flat)).
  TensorList run(const TensorList& flat) const {
    TensorList outs = run_forward(flat);
    finish(flat, outs);
    return outs;
  }
  // run() in two steps, for a caller that must run the executable outside a lock it holds
  // around autograd (the binding releases the GIL for run_forward only):
  //   run_forward: the forward executable alone (all its results), timed into last_run_ms();
  //   finish: for a grad entry, attaches the backward node (under grad mode) and drops the
  //   results after the first n_out.
  TensorList run_forward(const TensorList& flat) const {
    auto t0 = std::chrono::steady_clock::now();
    TensorList outs = fwd_->run(flat, states_);
    last_run_ms_.store(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
                       std::memory_order_relaxed);
    return outs;
  }
  void finish(const TensorList& flat, TensorList& outs) const {
    if (!grad_entry_) return;
    if (GradMode::is_enabled()) attach_backward(flat, outs);
    outs.resize(static_cast<size_t>(grad_.n_out));
  }

  // Whether the bound tensors still match what was traced: each state's shape, dtype and device
  // (a module moved to another device re-traces rather than feeding the executable memory of
  // another device), and which require grad (that decides what the backward computes): for a grad entry, as when
  // traced; for another, none under grad mode. When false the caller re-traces or reports.
  bool states_valid() const {
    const ir::Graph& g = fwd_->graph();
    bool grad = GradMode::is_enabled();
    for (size_t i = 0; i < states_.size(); ++i) {
      const Tensor& t = states_[i];
      const ir::Value& v = g.value(g.states()[i]);
      if (t.shape() != v.shape || t.dtype() != v.dtype || t.device() != v.device) return false;
      if (grad_entry_ ? t.requires_grad() != state_rg_[i] : grad && t.requires_grad()) return false;
    }
    return true;
  }

  // Rebinds the state (a module's parameter replaced by another of the same shape): as many
  // tensors as before (checked); states_valid() checks shapes and dtypes.
  void set_states(TensorList states);

  const std::shared_ptr<const Executable>& forward() const { return fwd_; }
  const std::shared_ptr<const Executable>& backward() const { return bwd_; }  // null unless a compiled backward
  const TensorList& states() const { return states_; }
  bool is_grad_entry() const { return grad_entry_; }
  bool precomputed() const { return grad_entry_ && !bwd_; }
  // The call's output count: n_out for a grad entry, else all of the forward's results.
  int n_out() const { return grad_entry_ ? grad_.n_out : static_cast<int>(fwd_->graph().outputs().size()); }
  const GradSpec& grad_spec() const { return grad_; }
  const std::vector<bool>& state_rg() const { return state_rg_; }  // per state: requires_grad when built
  double last_run_ms() const { return last_run_ms_.load(std::memory_order_relaxed); }  // the latest run_forward

 private:
  void attach_backward(const TensorList& flat, const TensorList& outs) const;

  std::shared_ptr<const Executable> fwd_, bwd_;
  TensorList states_;
  bool grad_entry_ = false;
  GradSpec grad_;
  std::vector<bool> state_rg_;
  mutable std::atomic<double> last_run_ms_{0};  // written by concurrent runs
};

}  // namespace lucid::rt
