// The compatibility stamp (see stamp.h).
#include "lucid/compile/export/stamp.h"

#include "lucid/backends/cuda/libraries.h"

#include <sleef.h>

#include <oneapi/dnnl/dnnl.h>

#ifndef LUCID_VERSION
#define LUCID_VERSION "unknown"
#endif

extern "C" char* openblas_get_config(void);

namespace lucid::artifact {

namespace {

struct IsaFeature {
  const char* name;
  bool compiled;
  bool (*present)();
};

// __builtin_cpu_supports takes a literal: one lambda per feature.
const std::vector<IsaFeature>& isa_table() {
  static const std::vector<IsaFeature> t = {
#ifdef __AVX2__
      {"avx2", true, [] { return __builtin_cpu_supports("avx2") != 0; }},
#endif
#ifdef __FMA__
      {"fma", true, [] { return __builtin_cpu_supports("fma") != 0; }},
#endif
#ifdef __F16C__
      {"f16c", true, [] { return __builtin_cpu_supports("f16c") != 0; }},
#endif
#ifdef __AVX512F__
      {"avx512f", true, [] { return __builtin_cpu_supports("avx512f") != 0; }},
#endif
      {"sse4.2", true, [] { return __builtin_cpu_supports("sse4.2") != 0; }},
  };
  return t;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::vector<std::string> required_isa() {
  std::vector<std::string> v;
  for (const IsaFeature& f : isa_table()) v.push_back(f.name);
  return v;
}

json make_stamp(const std::set<std::string>& devices) {
  const dnnl_version_t* dv = dnnl_version();
  const char* blas = openblas_get_config();
  json libraries = {{"onednn", str(dv->major, ".", dv->minor, ".", dv->patch)},
                    {"sleef", str(SLEEF_VERSION_MAJOR, ".", SLEEF_VERSION_MINOR, ".", SLEEF_VERSION_PATCHLEVEL)},
                    {"openblas", blas ? blas : "unknown"}};
  for (const cuda::Library& lib : cuda::libraries()) libraries[lib.name] = lib.version;  // CUDA builds only
  return {
      {"format_version", kFormatVersion},
      {"lucid_version", LUCID_VERSION},
      {"op_registry_hash", hex64(op_registry_hash())},
      {"isa", required_isa()},
      {"libraries", libraries},
      {"devices", std::vector<std::string>(devices.begin(), devices.end())},
  };
}

json op_table(const std::set<OpId>& ops) {
  json t = json::object();
  for (OpId id : ops) t[op_name(id)] = op_attr_schema(id);
  return t;
}

void check_compatible(const json& header, const std::string& path) {
  const json& stamp = field(header, "stamp", "header");
  int64_t fv = int_field(stamp, "format_version", "stamp", 0, INT32_MAX);
  std::string saved_by = stamp.contains("lucid_version") && stamp["lucid_version"].is_string()
                             ? stamp["lucid_version"].get<std::string>() : "unknown";
  LUCID_CHECK(fv == kFormatVersion, ArtifactError, "artifact: '", path, "' has format version ", fv,
              (fv > kFormatVersion ? " (saved by a newer lucid, " : " (saved by an older lucid, "), saved_by,
              "); this lucid (", LUCID_VERSION, ") reads version ", kFormatVersion);
  const json& isa = field(stamp, "isa", "stamp");
  LUCID_CHECK(isa.is_array(), ArtifactError, "artifact: corrupt header: stamp.isa is not a list");
  for (const json& f : isa) {
    LUCID_CHECK(f.is_string(), ArtifactError, "artifact: corrupt header: stamp.isa holds a non-string");
    std::string name = f.get<std::string>();
    bool known = false;
    for (const IsaFeature& t : isa_table())
      if (name == t.name) {
        known = true;
        LUCID_CHECK(t.present(), ArtifactError, "artifact: '", path, "' needs the ", name,
                    " instruction set, which this CPU lacks");
      }
    LUCID_CHECK(known, ArtifactError, "artifact: '", path, "' needs the ", name,
                " instruction set, which this build of lucid does not use or check");
  }
  const json& devices = field(stamp, "devices", "stamp");
  LUCID_CHECK(devices.is_array(), ArtifactError, "artifact: corrupt header: stamp.devices is not a list");
  for (const json& d : devices)
    LUCID_CHECK(d.is_string() && d.get<std::string>() == "cpu", ArtifactError, "artifact: '", path,
                "' holds code for device ", d.dump(), ", which this build of lucid can't run (it runs: cpu)");
  const json& ops = field(header, "ops", "header");
  LUCID_CHECK(ops.is_object(), ArtifactError, "artifact: corrupt header: 'ops' is not an object");
  for (auto it = ops.begin(); it != ops.end(); ++it) {
    OpId id;
    try {
      id = op_from_name(it.key());
    } catch (const Error&) {
      throw ArtifactError(str("artifact: '", path, "' uses op '", it.key(), "', unknown to this lucid (", LUCID_VERSION,
                              "; the file was saved by ", saved_by, ")"));
    }
    LUCID_CHECK(it.value().is_string(), ArtifactError, "artifact: corrupt header: ops.", it.key(), " is not a string");
    std::string now = op_attr_schema(id);
    LUCID_CHECK(it.value().get<std::string>() == now, ArtifactError, "artifact: '", path, "': the attribute schema of op ",
                it.key(), " changed: saved '", it.value().get<std::string>(), "', this lucid has '", now,
                "'; save the artifact again with this lucid");
  }
}

}  // namespace lucid::artifact
