// Programs inside a container (see program_io.h).
#include "lucid/compile/export/program_io.h"

#include "lucid/compile/runtime/executor.h"

#include <cstring>

namespace lucid::artifact {

namespace {

void collect_ops(const ir::Graph& g, std::set<OpId>& ops) {
  for (const ir::Node& n : g.nodes()) {
    ops.insert(n.op);
    if (n.body) collect_ops(*n.body, ops);
  }
}

// Every op a program uses must be in the file's op table, which check_compatible() matched
// against this build's registry.
void check_ops_listed(const ir::Graph& g, const json& ops, const std::string& where) {
  for (const ir::Node& n : g.nodes()) {
    LUCID_CHECK(ops.contains(op_name(n.op)), ArtifactError, "artifact: corrupt: ", where, " uses op ", op_name(n.op),
                ", missing from the file's op table");
    if (n.body) check_ops_listed(*n.body, ops, where);
  }
}

}  // namespace

json shape_json(const Shape& s) { return json(std::vector<int64_t>(s.begin(), s.end())); }

Tensor fresh_copy(const Tensor& t) {
  Tensor c = t.contiguous_data();
  Tensor out = Tensor::empty(c.shape(), c.dtype());
  if (c.numel()) std::memcpy(out.data_ptr(), c.data_ptr(), static_cast<size_t>(c.numel()) * itemsize(c.dtype()));
  return out;
}

size_t add_tensor_blob(ContainerWriter& w, Keep& keep, const Tensor& t) {
  keep.tensors.push_back(t.contiguous_data());
  const Tensor& c = keep.tensors.back();
  return w.add_blob(c.numel() ? c.data_ptr() : nullptr, static_cast<size_t>(c.numel()) * itemsize(c.dtype()));
}

json tensor_blob_json(ContainerWriter& w, Keep& keep, const Tensor& t) {
  return {{"blob", add_tensor_blob(w, keep, t)}, {"dtype", dtype_name(t.dtype())}, {"shape", shape_json(t.shape())}};
}

Tensor read_tensor_blob(const Container& f, const json& j, const std::string& where) {
  int64_t blob = int_field(j, "blob", where.c_str(), 0, static_cast<int64_t>(f.num_blobs()) - 1);
  return f.tensor(static_cast<size_t>(blob), shape_field(j, "shape", where.c_str()), dtype_field(j, "dtype", where.c_str()),
                  where);
}

json write_program(ContainerWriter& w, Keep& keep, const ir::Graph& g, std::set<OpId>& ops) {
  collect_ops(g, ops);
  keep.texts.push_back(ir::print(g));
  const std::string& text = keep.texts.back();
  json consts = json::array();
  for (int id : g.consts()) consts.push_back(tensor_blob_json(w, keep, g.const_data(g.value(id).slot)));
  // The backend whose code the program holds: its values' device type (the IR text names each
  // value's device; a program runs on one).
  std::string device = "cpu";
  for (const ir::Value& v : g.values())
    if (!v.device.is_cpu()) device = "cuda";
  return {{"device", device}, {"ir", w.add_blob(text.data(), text.size())}, {"consts", consts}};
}

ir::Graph read_program(const Container& f, const json& header, const json& prog, const std::string& where,
                       bool copy_consts) {
  std::string device = str_field(prog, "device", where.c_str());
  // A program's constants are host tensors and its IR text names each value's device, so any
  // device with an executor in this build runs it (the persistent compile cache stores CUDA ones).
  const bool runnable = device == "cpu" || (device == "cuda" && rt::executor_factory(DeviceType::CUDA));
  LUCID_CHECK(runnable, ArtifactError, "artifact: ", where, " is for device '", device,
              "', which this build of lucid can't run");
  int64_t ir_blob = int_field(prog, "ir", where.c_str(), 0, static_cast<int64_t>(f.num_blobs()) - 1);
  const json& cj = field(prog, "consts", where.c_str());
  LUCID_CHECK(cj.is_array(), ArtifactError, "artifact: corrupt header: ", where, ".consts is not a list");
  std::vector<Tensor> consts;
  for (size_t k = 0; k < cj.size(); ++k) {
    Tensor c = read_tensor_blob(f, cj[k], str(where, " constant ", k));
    consts.push_back(copy_consts ? fresh_copy(c) : c);
  }
  ir::Graph g;
  try {
    g = ir::parse(f.text(static_cast<size_t>(ir_blob)), &consts);
    check_ops_listed(g, field(header, "ops", "header"), where);
    ir::check_types(g);
  } catch (const ArtifactError&) {
    throw;
  } catch (const std::exception& e) {
    throw ArtifactError(str("artifact: '", f.path(), "' is corrupt: ", where, ": ", e.what()));
  }
  return g;
}

}  // namespace lucid::artifact
