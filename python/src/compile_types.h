// The Python handles of compiler objects shared by the compile and export bindings: an IR graph
// (_C._Graph) and an executable (_C._Executable), each a shared, immutable C++ object.
#pragma once
#include <memory>

#include "lucid/compile/ir/graph.h"
#include "lucid/compile/runtime/executable.h"

namespace lucid::py {

struct PyGraph {
  std::shared_ptr<const ir::Graph> g;
};

struct PyExecutable {
  std::shared_ptr<const rt::Executable> exe;
};

}  // namespace lucid::py
