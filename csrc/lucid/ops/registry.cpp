// The op registry: an array indexed by OpId, filled by each family's static registrars (which parse
// each op's attribute schema) and by the backends' kernel registrars, with the schema checks and
// the registry hash over it.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "lucid/ops/op_def.h"

namespace lucid {

static const char* const kOpNames[] = {
#define LUCID_OP(name) #name,
#include "lucid/ops/op_list.def"
#undef LUCID_OP
};

static std::array<OpDef, kNumOps>& table() {
  static std::array<OpDef, kNumOps> t;
  return t;
}

const char* op_name(OpId id) { return kOpNames[static_cast<int>(id)]; }

OpId op_from_name(const std::string& name) {
  for (int i = 0; i < kNumOps; ++i)
    if (name == kOpNames[i]) return static_cast<OpId>(i);
  throw ValueError(str("op: unknown op name '", name, "'"));
}

const OpDef& op_def(OpId id) { return table()[static_cast<int>(id)]; }
bool op_registered(OpId id) { return table()[static_cast<int>(id)].name != nullptr; }

// Python names that are not the snake_case of the OpId name.
static const char* api_name_override(const char* n) {
  static const std::pair<const char*, const char*> table[] = {
      {"IsNan", "isnan"}, {"IsInf", "isinf"}, {"LogSigmoid", "logsigmoid"}, {"LogSumExp", "logsumexp"},
      {"RandInt", "randint"}, {"RandPerm", "randperm"}, {"MaxDim", "max"}, {"MinDim", "min"},
      {"IndexGather", "index"}, {"IndexPut", "index_put_"}, {"Conv", "conv"}};
  for (auto& [k, v] : table)
    if (std::string(k) == n) return v;
  return nullptr;
}

static const char* snake_name(int i) {
  static std::array<std::string, kNumOps> names;
  std::string& out = names[i];
  if (const char* o = api_name_override(kOpNames[i])) return o;
  if (out.empty()) {
    const char* n = kOpNames[i];
    for (size_t k = 0; n[k]; ++k) {
      char c = n[k];
      if (c >= 'A' && c <= 'Z') {
        if (k > 0) out.push_back('_');
        out.push_back(static_cast<char>(c - 'A' + 'a'));
      } else {
        out.push_back(c);
      }
    }
  }
  return out.c_str();
}

static const OpDef& declared_def(OpId id) {
  const OpDef& def = op_def(id);
  LUCID_CHECK(def.name, ValueError, "op ", op_name(id), ": op is declared but has no definition in this build");
  return def;
}

void check_attrs(OpId id, const Attrs& attrs) {
  const OpDef& def = declared_def(id);
  check_attrs(def.name, def.attr_specs, attrs);
}

std::string op_attr_schema(OpId id) { return format_attr_schema(declared_def(id).attr_specs); }

uint64_t op_registry_hash() {
  std::vector<std::pair<std::string, std::string>> ops;
  for (int i = 0; i < kNumOps; ++i)
    if (op_registered(static_cast<OpId>(i))) ops.emplace_back(kOpNames[i], op_attr_schema(static_cast<OpId>(i)));
  return attr_schema_hash(std::move(ops));
}

OpRegistrar::OpRegistrar(OpId id, const char* attr_schema, OpDef def) {
  def.name = kOpNames[static_cast<int>(id)];
  def.api_name = snake_name(static_cast<int>(id));
  def.attr_schema = attr_schema;
  def.attr_specs = parse_attr_schema(def.name, attr_schema);
  OpDef& slot = table()[static_cast<int>(id)];
  for (int d = 0; d < kNumDeviceTypes; ++d) {
    if (def.kernels[d]) {  // the record is device-neutral: kernels come from backends/<device>/
      std::fprintf(stderr, "lucid: the op record of %s sets a kernel; register it with LUCID_REGISTER_KERNEL\n", def.name);
      std::abort();
    }
    def.kernels[d] = slot.kernels[d];  // kernels whose registrars ran first
  }
  slot = std::move(def);
}

KernelRegistrar::KernelRegistrar(OpId id, DeviceType device, KernelFn fn) {
  KernelFn& k = table()[static_cast<int>(id)].kernels[static_cast<int>(device)];
  if (k || !fn) {  // a build defect, found at load time before any call could pick the wrong kernel
    std::fprintf(stderr, "lucid: %s kernel for %s registered %s\n", Device{device, 0}.str().c_str(),
                 kOpNames[static_cast<int>(id)], fn ? "twice" : "as null");
    std::abort();
  }
  k = fn;
}

}  // namespace lucid
