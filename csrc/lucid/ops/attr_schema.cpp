// Attribute schemas: parsing, canonical text, conformance check and the registry hash
// (see attr_schema.h).
#include "lucid/ops/attr_schema.h"

#include <algorithm>
#include <cctype>
#include <type_traits>

namespace lucid {

static const char* const kAttrTypeNames[] = {"int", "float", "bool", "ints", "dtype", "str"};

const char* attr_type_name(AttrType t) { return kAttrTypeNames[static_cast<int>(t)]; }

static std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

static bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::vector<AttrSpec> parse_attr_schema(const char* op, const std::string& text) {
  std::vector<AttrSpec> specs;
  if (trim(text).empty()) return specs;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string entry = trim(text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    pos = comma == std::string::npos ? text.size() + 1 : comma + 1;
    size_t colon = entry.find(':');
    LUCID_CHECK(colon != std::string::npos, ValueError, "op ", op, ": attribute schema entry '", entry,
                "' is not of the form name:type or name:type?");
    AttrSpec s;
    s.name = trim(entry.substr(0, colon));
    std::string type = trim(entry.substr(colon + 1));
    if (!type.empty() && type.back() == '?') {
      s.optional = true;
      type = trim(type.substr(0, type.size() - 1));
    }
    LUCID_CHECK(is_identifier(s.name), ValueError, "op ", op, ": attribute schema entry '", entry,
                "' has no valid name");
    auto t = std::find(std::begin(kAttrTypeNames), std::end(kAttrTypeNames), type);
    LUCID_CHECK(t != std::end(kAttrTypeNames), ValueError, "op ", op, ": attribute '", s.name, "' has type '", type,
                "'; expected one of int, float, bool, ints, dtype, str");
    s.type = static_cast<AttrType>(t - std::begin(kAttrTypeNames));
    for (const AttrSpec& o : specs)
      LUCID_CHECK(o.name != s.name, ValueError, "op ", op, ": attribute '", s.name, "' is declared twice");
    specs.push_back(std::move(s));
  }
  return specs;
}

std::string format_attr_schema(const std::vector<AttrSpec>& specs) {
  std::string out;
  for (const AttrSpec& s : specs) {
    if (!out.empty()) out += ", ";
    out += s.name + ":" + attr_type_name(s.type) + (s.optional ? "?" : "");
  }
  return out;
}

// The AttrType of a value, by the index of its AttrValue alternative (same order).
static_assert(std::is_same_v<std::variant_alternative_t<1, AttrValue>, double> &&
              std::is_same_v<std::variant_alternative_t<3, AttrValue>, IntList> &&
              std::is_same_v<std::variant_alternative_t<5, AttrValue>, std::string>);
static AttrType value_type(const AttrValue& v) { return static_cast<AttrType>(v.index()); }

void check_attrs(const char* op, const std::vector<AttrSpec>& specs, const Attrs& attrs) {
  for (const auto& [k, v] : attrs.items()) {
    auto s = std::find_if(specs.begin(), specs.end(), [&](const AttrSpec& x) { return x.name == k; });
    LUCID_CHECK(s != specs.end(), ValueError, "op ", op, ": unknown attribute '", k, "' (the op takes ",
                specs.empty() ? std::string("no attributes") : format_attr_schema(specs), ")");
    AttrType got = value_type(v);
    bool ok = got == s->type || (s->type == AttrType::Float && got == AttrType::Int);
    LUCID_CHECK(ok, TypeError, "op ", op, ": attribute '", k, "': expected ", attr_type_name(s->type), ", got ",
                attr_type_name(got));
  }
  for (const AttrSpec& s : specs)
    LUCID_CHECK(s.optional || attrs.has(s.name), ValueError, "op ", op, ": missing required attribute '", s.name,
                "' (", attr_type_name(s.type), ")");
}

uint64_t attr_schema_hash(std::vector<std::pair<std::string, std::string>> op_schemas) {
  std::sort(op_schemas.begin(), op_schemas.end());
  uint64_t h = 1469598103934665603ULL;  // FNV-1a, 64 bit
  auto bytes = [&](const std::string& s) {
    for (unsigned char c : s) { h ^= c; h *= 1099511628211ULL; }
    h *= 1099511628211ULL;  // then a NUL byte (XOR with 0): ("ab", "c") hashes apart from ("a", "bc")
  };
  for (const auto& [name, schema] : op_schemas) {
    bytes(name);
    bytes(schema);
  }
  return h;
}

}  // namespace lucid
