// The Python handles of compiler objects shared by the compile and export bindings: an IR graph
// (_C._Graph) and an executable (_C._Executable), each a shared, immutable C++ object; and the
// dict form of an artifact entry.
#pragma once
#include <memory>

#include <nanobind/nanobind.h>

#include "lucid/compile/export/artifact.h"
#include "lucid/compile/ir/graph.h"
#include "lucid/compile/runtime/executable.h"

namespace lucid::py {

struct PyGraph {
  std::shared_ptr<const ir::Graph> g;
};

struct PyExecutable {
  std::shared_ptr<const rt::Executable> exe;
};

// An artifact entry as the dict save_compiled / load_compiled exchange (export_bind.cpp); the
// compile binding's _entry_record builds its dicts with it too, so the field names live once.
nanobind::dict entry_record_dict(const artifact::EntryRecord& e);

}  // namespace lucid::py
