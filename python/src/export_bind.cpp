// Bindings of compiled artifacts (csrc/lucid/compile/export/artifact.h): _save_artifact and
// _Artifact, the C++ half of lucid.compile.save_compiled / load_compiled
// (python/lucid/compile/_export.py, which builds the Python description of the call, and
// _loaded.py, which rebuilds calls from it).
#include <nanobind/stl/map.h>

#include "bind.h"
#include "compile_types.h"
#include "lucid/compile/export/artifact.h"

namespace lucid::py {

namespace {

std::shared_ptr<const rt::Executable> exe_of(nb::handle h) {
  return h.is_none() ? nullptr : nb::cast<PyExecutable&>(h).exe;
}

nb::object exe_obj(const std::shared_ptr<const rt::Executable>& e) {
  return e ? nb::cast(PyExecutable{e}) : nb::none();
}

artifact::EntryRecord entry_from(nb::handle d) {
  artifact::EntryRecord e;
  e.forward = exe_of(d["forward"]);
  e.backward = exe_of(d["backward"]);
  e.states = nb::cast<std::vector<int>>(d["states"]);
  e.grad = nb::cast<bool>(d["grad"]);
  e.precomputed = nb::cast<bool>(d["precomputed"]);
  e.n_out = nb::cast<int>(d["n_out"]);
  e.grad_outs = nb::cast<std::vector<int>>(d["grad_outs"]);
  e.wrt_inputs = nb::cast<std::vector<int>>(d["wrt_inputs"]);
  e.wrt_states = nb::cast<std::vector<int>>(d["wrt_states"]);
  e.wrt_used = nb::cast<std::vector<bool>>(d["wrt_used"]);
  e.input_names = nb::cast<std::vector<std::string>>(d["input_names"]);
  for (nb::handle p : d["defaults"]) e.defaults.emplace_back(nb::cast<int>(p[0]), nb::cast<Tensor>(p[1]));
  e.python = nb::cast<std::string>(d["python"]);
  return e;
}

}  // namespace

nb::dict entry_record_dict(const artifact::EntryRecord& e) {
  nb::dict d;
  d["forward"] = exe_obj(e.forward);
  d["backward"] = exe_obj(e.backward);
  d["states"] = e.states;
  d["grad"] = e.grad;
  d["precomputed"] = e.precomputed;
  d["n_out"] = e.n_out;
  d["grad_outs"] = e.grad_outs;
  d["wrt_inputs"] = e.wrt_inputs;
  d["wrt_states"] = e.wrt_states;
  d["wrt_used"] = e.wrt_used;
  d["input_names"] = e.input_names;
  nb::list defaults;
  for (const auto& [i, t] : e.defaults) defaults.append(nb::make_tuple(i, t));
  d["defaults"] = defaults;
  d["python"] = e.python;
  return d;
}

LUCID_BINDER(export) {
  // tensors: [(name, Tensor, role, requires_grad, weight)]; entries: dicts (see entry_from).
  m.def("_save_artifact", [](const std::string& path, const std::string& kind, nb::list tensors, nb::list entries,
                             bool weights, const std::string& python) {
    artifact::SaveRequest req;
    req.kind = kind;
    req.weights = weights;
    req.python = python;
    for (nb::handle t : tensors)
      req.tensors.push_back({nb::cast<std::string>(t[0]), nb::cast<Tensor>(t[1]), nb::cast<std::string>(t[2]),
                             nb::cast<bool>(t[3]), nb::cast<bool>(t[4])});
    for (nb::handle e : entries) req.entries.push_back(entry_from(e));
    nb::gil_scoped_release nogil;
    artifact::save(path, req);
  });

  // The container's checksum of some bytes (tests edit headers and blobs and re-checksum them).
  m.def("_artifact_checksum", [](nb::bytes b) { return artifact::checksum_hex(b.c_str(), b.size()); });

  nb::class_<artifact::Artifact>(m, "_Artifact")
      .def_static("load", [](const std::string& path, nb::object weights) {
        artifact::LoadOptions o;
        if (!weights.is_none()) {
          o.has_weights = true;
          for (auto [k, v] : nb::cast<nb::dict>(weights)) o.weights[nb::cast<std::string>(k)] = nb::cast<Tensor>(v);
        }
        nb::gil_scoped_release nogil;
        return artifact::Artifact::load(path, o);
      }, nb::arg("path"), nb::arg("weights").none() = nb::none())
      .def_prop_ro("kind", &artifact::Artifact::kind)
      .def_prop_ro("python", &artifact::Artifact::python)
      .def_prop_ro("stamp", [](const artifact::Artifact& a) { return a.stamp().dump(); })
      .def_prop_ro("file_bytes", &artifact::Artifact::file_bytes)
      .def_prop_ro("signatures", &artifact::Artifact::signatures)
      .def("tensors", [](artifact::Artifact& a) {
        nb::list l;
        for (const artifact::NamedTensor& t : a.tensors()) l.append(nb::make_tuple(t.name, t.value, t.role, t.requires_grad, t.weight));
        return l;
      })
      .def("entries", [](const artifact::Artifact& a) {
        nb::list l;
        for (const artifact::EntryRecord& e : a.entries()) l.append(entry_record_dict(e));
        return l;
      })
      .def("run", [](artifact::Artifact& a, std::vector<Tensor> inputs) {
        nb::gil_scoped_release nogil;
        return a.run(inputs);
      });
}

}  // namespace lucid::py
