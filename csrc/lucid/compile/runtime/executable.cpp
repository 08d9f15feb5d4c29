// Executable: a program and the executor of its device (see executable.h).
#include "lucid/compile/runtime/executable.h"

namespace lucid::rt {

Executable::Executable(ir::Graph g, ir::MemoryPlan plan)
    : program_(std::make_shared<const Program>(std::move(g), std::move(plan))) {
  const Device d = program_->device();
  ExecutorFactory make = executor_factory(d.type);
  LUCID_CHECK(make, NotImplementedError, "lucid.compile: no executor runs compiled programs on ", d.str(),
              " (that backend is not built)");
  executor_ = make(program_);
}

}  // namespace lucid::rt
