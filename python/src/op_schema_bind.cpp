// Op attribute schemas for Python: `_op_attr_schema(name)` is the canonical schema text of one op
// ("dim:int, keepdim:bool"), `_op_registry_hash()` the stable hash over every op's name and
// schema that saved artifacts carry as their op-registry stamp (ops/attr_schema.h).
#include "bind.h"

namespace lucid::py {

LUCID_BINDER(op_schema) {
  m.def("_op_attr_schema", [](const std::string& name) { return op_attr_schema(op_from_name(name)); }, nb::arg("name"));
  m.def("_op_registry_hash", [] { return op_registry_hash(); });
}

}  // namespace lucid::py
