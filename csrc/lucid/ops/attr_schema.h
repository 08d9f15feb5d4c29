// Attribute schemas: the declared contract of an op's non-tensor arguments. Each OpDef declares
// its attributes as text, "dim:ints, keepdim:bool, eps:float?" (name, type, '?' for optional),
// parsed once at registration. check_attrs holds an Attrs record to it, so a graph loaded from
// text or from a saved artifact with an unknown attribute, a missing one or one of another type
// is rejected before any kernel reads it; the canonical schema texts of all ops hash into the
// registry stamp that saved artifacts carry.
//
// Types: int (int64), float (double), bool, ints (list of int64), dtype, str. A float attribute
// also accepts an int value: Attrs::f() reads it as a double, call sites pass integral Python
// scalars through unchanged (fill's value keeps int64 precision), and the IR printer writes an
// int as `1` and a double as `1.0`, so both forms round-trip through text as they were made.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lucid/ops/attrs.h"

namespace lucid {

enum class AttrType : uint8_t { Int, Float, Bool, Ints, DType, Str };

const char* attr_type_name(AttrType t);  // "int", "float", ...

struct AttrSpec {
  std::string name;
  AttrType type = AttrType::Int;
  bool optional = false;
  bool operator==(const AttrSpec& o) const { return name == o.name && type == o.type && optional == o.optional; }
};

// Parses "name:type[?], ..." (empty text: no attributes). Raises ValueError naming the op on a
// malformed entry, an unknown type or a name given twice.
std::vector<AttrSpec> parse_attr_schema(const char* op, const std::string& text);
// Canonical text: "name:type[?]" in declared order, joined by ", ". parse(format(s)) == s.
std::string format_attr_schema(const std::vector<AttrSpec>& specs);
// Raises TypeError for an attribute of another type, ValueError for an unknown or a missing
// required one; messages name the op and the attribute.
void check_attrs(const char* op, const std::vector<AttrSpec>& specs, const Attrs& attrs);
// FNV-1a over (name, schema text) pairs in name order: stable across processes and builds.
uint64_t attr_schema_hash(std::vector<std::pair<std::string, std::string>> op_schemas);

}  // namespace lucid
