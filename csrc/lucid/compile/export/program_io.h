// Programs inside a container (container.h): how an optimised graph is written (its IR text as a
// blob, its constants' payloads as exact blobs, since the text holds only a rounded value of
// 1-element constants) and read back checked. Shared by compiled artifacts (artifact.cpp) and the
// persistent compile cache (disk_cache.cpp), so both store programs one way.
//
// A program's JSON: {"device": "cpu", "ir": blob, "consts": [{"blob", "dtype", "shape"}]}.
#pragma once
#include <deque>
#include <set>
#include <string>

#include "lucid/compile/export/container.h"
#include "lucid/compile/ir/graph.h"

namespace lucid::artifact {

json shape_json(const Shape& s);

// A new contiguous tensor holding t's values, owning its memory: artifact loading copies the
// weights it is given (as load_state_dict copies: a loaded training step never updates the
// caller's tensors); the compile cache copies constants out of the mapped file.
Tensor fresh_copy(const Tensor& t);

// What a writer keeps alive until the container is written (ContainerWriter borrows blob data).
struct Keep {
  std::deque<std::string> texts;
  std::deque<Tensor> tensors;
};

// t's data as a blob: its index.
size_t add_tensor_blob(ContainerWriter& w, Keep& keep, const Tensor& t);
// t as {"blob", "dtype", "shape"}.
json tensor_blob_json(ContainerWriter& w, Keep& keep, const Tensor& t);
// The tensor a {"blob", "dtype", "shape"} object describes (a view of the mapped file); raises
// ArtifactError when the blob doesn't hold exactly that many bytes.
Tensor read_tensor_blob(const Container& f, const json& j, const std::string& where);

// Adds g's text and constants as blobs and returns the program's JSON; adds the ops g uses
// (FusedElementwise bodies included) to `ops`, for the file's op table (stamp.h's op_table).
json write_program(ContainerWriter& w, Keep& keep, const ir::Graph& g, std::set<OpId>& ops);
// The program `prog` of file f, parsed, its ops checked against header["ops"] (which
// check_compatible matched against this build) and type-checked (ir::check_types); raises
// ArtifactError naming the cause. copy_consts: constants own their memory instead of viewing the
// mapping (the compile cache's programs must not depend on a file another process may replace).
ir::Graph read_program(const Container& f, const json& header, const json& prog, const std::string& where,
                       bool copy_consts = false);

}  // namespace lucid::artifact
