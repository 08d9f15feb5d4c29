// TEMPORARY (replaced by the attr-schema branch): placeholder schema functions.
#include "lucid/ops/op_def.h"
namespace lucid {
std::string op_attr_schema(OpId) { return ""; }
uint64_t op_registry_hash() { return 0; }
}
