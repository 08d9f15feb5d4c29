// Grad mode: thread-local switch read by dispatch (no_grad / enable_grad / set_grad_enabled).
#pragma once

namespace lucid {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool on);
};

struct GradModeGuard {
  explicit GradModeGuard(bool on) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(on); }
  ~GradModeGuard() { GradMode::set_enabled(prev_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace lucid
