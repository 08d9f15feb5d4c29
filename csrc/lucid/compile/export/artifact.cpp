// Compiled artifacts (see artifact.h): the header layout, saving, and the checked load.
//
// Header (JSON, inside the container):
//   {"format": "lucid.compiled", "kind", "stamp", "ops": {name: schema},
//    "tensors":  [{"name", "dtype", "shape", "role", "requires_grad", "weight", "blob": i | null}],
//    "programs": [{"device": "cpu", "ir": blob, "consts": [{"blob", "dtype", "shape"}]}],
//    "entries":  [{"forward": p, "backward": p | null, "states": [tensor index per state slot],
//                  "grad", "precomputed", "n_out", "grad_outs", "wrt_inputs", "wrt_states",
//                  "wrt_used", "input_names", "defaults": [{"input", "blob", "dtype", "shape"}],
//                  "python": {...}}],
//    "python": {...}, "blobs": [...]}
#include "lucid/compile/export/artifact.h"

#include <cstring>
#include <deque>
#include <set>
#include <sstream>

#include "lucid/compile/export/program_io.h"
#include "lucid/compile/export/stamp.h"
#include "lucid/compile/runtime/cache.h"
#include "lucid/compile/runtime/compiled_entry.h"
#include "lucid/core/shape.h"

namespace lucid::artifact {

namespace {

std::vector<int> int_list(const json& obj, const char* key, const std::string& where, int64_t hi) {
  const json& v = field(obj, key, where.c_str());
  LUCID_CHECK(v.is_array(), ArtifactError, "artifact: corrupt header: ", where, ".", key, " is not a list");
  std::vector<int> out;
  for (const json& x : v) {
    LUCID_CHECK(x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() < hi, ArtifactError,
                "artifact: corrupt header: ", where, ".", key, " holds ", x.dump(), ", expected an index below ", hi);
    out.push_back(x.get<int>());
  }
  return out;
}

bool bool_field(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where.c_str());
  LUCID_CHECK(v.is_boolean(), ArtifactError, "artifact: corrupt header: ", where, ".", key, " is not a boolean");
  return v.get<bool>();
}

std::string types_str(const TensorList& ts) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < ts.size(); ++i) os << (i ? ", " : "") << dtype_name(ts[i].dtype()) << shape_str(ts[i].shape());
  os << ")";
  return os.str();
}

// Entry e's wiring checked against its programs and the tensor table, so that running it can
// only index what exists (the executables check every feed's type at each run).
void check_entry(const EntryRecord& e, const std::vector<NamedTensor>& tensors, const std::string& where) {
  const ir::Graph& fg = e.forward->graph();
  LUCID_CHECK(e.states.size() == fg.states().size(), ArtifactError, "artifact: corrupt: ", where, " binds ",
              e.states.size(), " tensors, its program reads ", fg.states().size());
  for (size_t s = 0; s < e.states.size(); ++s) {
    const Tensor& t = tensors[e.states[s]].value;
    const ir::Value& v = fg.value(fg.states()[s]);
    LUCID_CHECK(t.shape() == v.shape && t.dtype() == v.dtype, ArtifactError, "artifact: ", where, ": tensor '",
                tensors[e.states[s]].name, "' is ", dtype_name(t.dtype()), shape_str(t.shape()), ", the program expects ",
                dtype_name(v.dtype), shape_str(v.shape));
  }
  const int n_in = static_cast<int>(fg.inputs().size()), n_fout = static_cast<int>(fg.outputs().size());
  LUCID_CHECK(e.input_names.size() == static_cast<size_t>(n_in), ArtifactError, "artifact: corrupt: ", where, " names ",
              e.input_names.size(), " inputs, its program has ", n_in);
  for (const auto& [i, t] : e.defaults) {
    const ir::Value& v = fg.value(fg.inputs()[i]);
    LUCID_CHECK(t.shape() == v.shape && t.dtype() == v.dtype, ArtifactError, "artifact: corrupt: ", where,
                " default of input ", i, " has the wrong type");
  }
  LUCID_CHECK(e.grad || (!e.backward && e.n_out == n_fout), ArtifactError, "artifact: corrupt: ", where,
              " has ", e.n_out, " outputs, its program ", n_fout);
}

// The runnable entry; its constructor checks the gradient wiring against the executables.
std::unique_ptr<rt::CompiledEntry> make_compiled(const EntryRecord& e, const std::vector<NamedTensor>& tensors,
                                                 const std::string& where) {
  TensorList states;
  for (int s : e.states) states.push_back(tensors[s].value);
  try {
    if (!e.grad) return std::make_unique<rt::CompiledEntry>(e.forward, std::move(states));
    rt::GradSpec g{e.n_out, e.grad_outs, e.wrt_inputs, e.wrt_states, e.wrt_used};
    return std::make_unique<rt::CompiledEntry>(e.forward, e.backward, std::move(states), std::move(g));
  } catch (const Error& ex) {
    throw ArtifactError(str("artifact: corrupt: ", where, ": ", ex.what()));
  }
}

}  // namespace

void save(const std::string& path, const SaveRequest& req) {
  LUCID_CHECK(!req.entries.empty(), ArtifactError, "save_compiled: nothing to save (no compiled signature)");
  ContainerWriter w;
  Keep keep;
  std::set<OpId> ops;
  json tensors = json::array();
  std::set<std::string> names;
  for (const NamedTensor& t : req.tensors) {
    LUCID_CHECK(names.insert(t.name).second, ArtifactError, "save_compiled: two bound tensors are named '", t.name, "'");
    json j = {{"name", t.name}, {"dtype", dtype_name(t.value.dtype())}, {"shape", shape_json(t.value.shape())},
              {"role", t.role}, {"requires_grad", t.requires_grad}, {"weight", t.weight}, {"blob", nullptr}};
    if (req.weights || !t.weight) j["blob"] = add_tensor_blob(w, keep, t.value);
    tensors.push_back(j);
  }
  json programs = json::array(), entries = json::array();
  std::map<const rt::Executable*, size_t> program_of;  // one program per executable
  auto program = [&](const std::shared_ptr<const rt::Executable>& exe) -> json {
    if (!exe) return nullptr;
    auto it = program_of.find(exe.get());
    if (it != program_of.end()) return it->second;
    const Device d = exe->program()->device();
    LUCID_CHECK(d.is_cpu(), NotImplementedError, "save_compiled: the compiled programs run on ", d.str(),
                "; saving them is not implemented yet: an artifact stores its bound tensors and defaults as host "
                "bytes without their device, and load_compiled would have to put them back on the GPU (compile a "
                "CPU copy of the model to save it)");
    programs.push_back(write_program(w, keep, exe->graph(), ops));
    return program_of[exe.get()] = programs.size() - 1;
  };
  for (const EntryRecord& e : req.entries) {
    LUCID_CHECK(e.forward, ArtifactError, "save_compiled: an entry without a program");
    for (int s : e.states)
      LUCID_CHECK(s >= 0 && s < static_cast<int>(req.tensors.size()), ArtifactError, "save_compiled: state index");
    json defaults = json::array();
    for (const auto& [i, t] : e.defaults) {
      json d = tensor_blob_json(w, keep, t);
      d["input"] = i;
      defaults.push_back(d);
    }
    json py;
    try {
      py = e.python.empty() ? json::object() : json::parse(e.python);
    } catch (const std::exception& ex) {
      throw ArtifactError(str("save_compiled: an entry's description is not JSON: ", ex.what()));
    }
    entries.push_back({{"forward", program(e.forward)}, {"backward", program(e.backward)}, {"states", e.states},
                       {"grad", e.grad}, {"precomputed", e.precomputed},
                       {"n_out", e.grad ? e.n_out : static_cast<int>(e.forward->graph().outputs().size())}, {"grad_outs", e.grad_outs},
                       {"wrt_inputs", e.wrt_inputs}, {"wrt_states", e.wrt_states}, {"wrt_used", e.wrt_used},
                       {"input_names", e.input_names}, {"defaults", defaults}, {"python", py}});
  }
  json header = {{"format", "lucid.compiled"}, {"kind", req.kind}, {"stamp", make_stamp({"cpu"})},
                 {"ops", op_table(ops)}, {"tensors", tensors}, {"programs", programs}, {"entries", entries}};
  try {
    header["python"] = req.python.empty() ? json::object() : json::parse(req.python);
  } catch (const std::exception& ex) {
    throw ArtifactError(str("save_compiled: the object's description is not JSON: ", ex.what()));
  }
  w.write(path, std::move(header));
}

Artifact::Artifact() = default;
Artifact::~Artifact() = default;

const json& Artifact::stamp() const { return file_->header()["stamp"]; }
uint64_t Artifact::file_bytes() const { return file_->file_bytes(); }

std::shared_ptr<Artifact> Artifact::load(const std::string& path, const LoadOptions& opts) {
  auto a = std::make_shared<Artifact>();
  a->file_ = Container::open(path);
  const Container& f = *a->file_;
  const json& h = f.header();
  LUCID_CHECK(h.contains("format") && h["format"] == "lucid.compiled", ArtifactError, "artifact: '", path,
              "' is a lucid container but not a compiled artifact");
  check_compatible(h, path);
  a->kind_ = str_field(h, "kind", "header");
  a->python_ = field(h, "python", "header").dump();

  const json& tj = field(h, "tensors", "header");
  LUCID_CHECK(tj.is_array(), ArtifactError, "artifact: corrupt header: 'tensors' is not a list");
  std::set<std::string> names;
  for (size_t i = 0; i < tj.size(); ++i) {
    std::string where = str("tensor ", i);
    NamedTensor t;
    t.name = str_field(tj[i], "name", where.c_str());
    LUCID_CHECK(names.insert(t.name).second, ArtifactError, "artifact: corrupt: two tensors named '", t.name, "'");
    t.role = str_field(tj[i], "role", where.c_str());
    t.requires_grad = bool_field(tj[i], "requires_grad", where);
    t.weight = bool_field(tj[i], "weight", where);
    Shape shape = shape_field(tj[i], "shape", where.c_str());
    DType dtype = dtype_field(tj[i], "dtype", where.c_str());
    where = str("tensor '", t.name, "'");
    if (opts.has_weights && t.weight) {
      auto it = opts.weights.find(t.name);
      LUCID_CHECK(it != opts.weights.end(), ArtifactError, "load_compiled: wrong weights: '", t.name,
                  "' is missing (the artifact binds ", tj.size(), " tensors)");
      const Tensor& given = it->second;
      LUCID_CHECK(given.shape() == shape && given.dtype() == dtype, ArtifactError, "load_compiled: wrong weights: '",
                  t.name, "' is ", dtype_name(given.dtype()), shape_str(given.shape()), ", the artifact expects ",
                  dtype_name(dtype), shape_str(shape));
      t.value = fresh_copy(given);
    } else {
      const json& blob = field(tj[i], "blob", where.c_str());
      LUCID_CHECK(!blob.is_null(), ArtifactError, "load_compiled: '", path,
                  "' was saved without weights (weights=False): pass weights= (a state_dict) to load it");
      Tensor v = read_tensor_blob(f, tj[i], where);
      LUCID_CHECK(v.shape() == shape && v.dtype() == dtype, ArtifactError, "artifact: corrupt: ", where);
      t.value = v;
    }
    a->tensors_.push_back(std::move(t));
  }
  if (opts.has_weights)
    for (const auto& [k, v] : opts.weights) {
      bool known = false;
      for (const NamedTensor& t : a->tensors_) known |= t.weight && t.name == k;
      LUCID_CHECK(known, ArtifactError, "load_compiled: wrong weights: '", k, "' is not a weight of the artifact");
    }

  const json& pj = field(h, "programs", "header");
  LUCID_CHECK(pj.is_array(), ArtifactError, "artifact: corrupt header: 'programs' is not a list");
  std::vector<std::shared_ptr<const rt::Executable>> programs;
  for (size_t p = 0; p < pj.size(); ++p) {
    std::string where = str("program ", p);
    ir::Graph g = read_program(f, h, pj[p], where);
    try {  // building checks what type-checking can't (a fused body's wiring)
      programs.push_back(rt::build_executable(std::move(g)).exe);
    } catch (const std::exception& e) {
      throw ArtifactError(str("artifact: '", path, "' is corrupt: ", where, ": ", e.what()));
    }
  }

  const json& ej = field(h, "entries", "header");
  LUCID_CHECK(ej.is_array() && !ej.empty(), ArtifactError, "artifact: corrupt header: 'entries' is not a non-empty list");
  const int64_t n_prog = static_cast<int64_t>(programs.size());
  for (size_t k = 0; k < ej.size(); ++k) {
    std::string where = str("entry ", k);
    const json& j = ej[k];
    EntryRecord e;
    e.forward = programs[int_field(j, "forward", where.c_str(), 0, n_prog - 1)];
    if (!field(j, "backward", where.c_str()).is_null()) e.backward = programs[int_field(j, "backward", where.c_str(), 0, n_prog - 1)];
    e.states = int_list(j, "states", where, static_cast<int64_t>(a->tensors_.size()));
    e.grad = bool_field(j, "grad", where);
    e.precomputed = bool_field(j, "precomputed", where);
    e.n_out = static_cast<int>(int_field(j, "n_out", where.c_str(), 0, 1 << 20));
    e.grad_outs = int_list(j, "grad_outs", where, 1 << 20);
    e.wrt_inputs = int_list(j, "wrt_inputs", where, 1 << 20);
    e.wrt_states = int_list(j, "wrt_states", where, 1 << 20);
    const json& used = field(j, "wrt_used", where.c_str());
    LUCID_CHECK(used.is_array(), ArtifactError, "artifact: corrupt header: ", where, ".wrt_used");
    for (const json& u : used) {
      LUCID_CHECK(u.is_boolean(), ArtifactError, "artifact: corrupt header: ", where, ".wrt_used");
      e.wrt_used.push_back(u.get<bool>());
    }
    const json& in = field(j, "input_names", where.c_str());
    LUCID_CHECK(in.is_array(), ArtifactError, "artifact: corrupt header: ", where, ".input_names");
    for (const json& s : in) {
      LUCID_CHECK(s.is_string(), ArtifactError, "artifact: corrupt header: ", where, ".input_names");
      e.input_names.push_back(s.get<std::string>());
    }
    const int64_t n_in = static_cast<int64_t>(e.forward->graph().inputs().size());
    const json& dj = field(j, "defaults", where.c_str());
    LUCID_CHECK(dj.is_array(), ArtifactError, "artifact: corrupt header: ", where, ".defaults");
    for (size_t d = 0; d < dj.size(); ++d)
      e.defaults.emplace_back(static_cast<int>(int_field(dj[d], "input", where.c_str(), 0, n_in - 1)),
                              read_tensor_blob(f, dj[d], str(where, " default ", d)));
    e.python = field(j, "python", where.c_str()).dump();
    check_entry(e, a->tensors_, where);
    a->compiled_.push_back(make_compiled(e, a->tensors_, where));
    a->entries_.push_back(std::move(e));
  }
  return a;
}

TensorList Artifact::run(const TensorList& given) {
  for (size_t k = 0; k < entries_.size(); ++k) {
    const EntryRecord& e = entries_[k];
    const ir::Graph& g = e.forward->graph();
    const size_t n = g.inputs().size();
    if (given.size() > n) continue;
    TensorList ins(given.begin(), given.end());
    bool ok = true;
    for (size_t i = given.size(); ok && i < n; ++i) {
      ok = false;
      for (const auto& [d, t] : e.defaults)
        if (static_cast<size_t>(d) == i) { ins.push_back(t); ok = true; }
    }
    for (size_t i = 0; ok && i < n; ++i) {
      const ir::Value& v = g.value(g.inputs()[i]);
      ok = ins[i].defined() && ins[i].shape() == v.shape && ins[i].dtype() == v.dtype;
    }
    if (ok) return compiled_[k]->run(ins);
  }
  throw ArtifactError(str("artifact: no saved signature takes inputs ", types_str(given), "; saved:\n", signatures()));
}

std::string Artifact::signatures() const {
  std::ostringstream os;
  for (const EntryRecord& e : entries_) {
    const ir::Graph& g = e.forward->graph();
    os << "  (";
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      const ir::Value& v = g.value(g.inputs()[i]);
      bool dflt = false;
      for (const auto& [k, t] : e.defaults) dflt |= static_cast<size_t>(k) == i;
      os << (i ? ", " : "") << (i < e.input_names.size() ? e.input_names[i] + ": " : "") << dtype_name(v.dtype)
         << shape_str(v.shape) << (dflt ? " = saved" : "");
    }
    os << ")\n";
  }
  return os.str();
}

}  // namespace lucid::artifact
