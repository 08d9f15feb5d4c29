// Attrs: an op's non-tensor arguments. A small ordered list of (name, value) pairs with typed
// getters, equality and a stable hash, so the same record serves eager dispatch, autograd nodes,
// the IR printer/parser and the executable cache key.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "lucid/core/dtype.h"
#include "lucid/core/error.h"

namespace lucid {

using IntList = std::vector<int64_t>;
using AttrValue = std::variant<int64_t, double, bool, IntList, DType, std::string>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> kv) : items_(kv) {}

  Attrs& set(const std::string& k, AttrValue v) {
    for (auto& [key, val] : items_)
      if (key == k) { val = std::move(v); return *this; }
    items_.emplace_back(k, std::move(v));
    return *this;
  }
  bool has(const std::string& k) const { return find(k) != nullptr; }

  int64_t i(const std::string& k) const { return get<int64_t>(k); }
  double f(const std::string& k) const {
    const AttrValue* v = find(k);
    if (v && std::holds_alternative<int64_t>(*v)) return static_cast<double>(std::get<int64_t>(*v));
    return get<double>(k);
  }
  bool b(const std::string& k) const { return get<bool>(k); }
  const IntList& ints(const std::string& k) const { return get<IntList>(k); }
  DType dtype(const std::string& k) const { return get<DType>(k); }
  const std::string& s(const std::string& k) const { return get<std::string>(k); }

  int64_t i(const std::string& k, int64_t dflt) const { return has(k) ? i(k) : dflt; }
  double f(const std::string& k, double dflt) const { return has(k) ? f(k) : dflt; }
  bool b(const std::string& k, bool dflt) const { return has(k) ? b(k) : dflt; }

  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool operator==(const Attrs& o) const { return items_ == o.items_; }
  size_t hash() const;
  std::string str() const;  // "{k=v, ...}" as printed in the IR

 private:
  const AttrValue* find(const std::string& k) const {
    for (auto& [key, val] : items_)
      if (key == k) return &val;
    return nullptr;
  }
  template <class T>
  const T& get(const std::string& k) const {
    const AttrValue* v = find(k);
    if (!v) throw Error(::lucid::str("attrs: missing attribute '", k, "'"));
    if (!std::holds_alternative<T>(*v)) throw Error(::lucid::str("attrs: attribute '", k, "' has another type"));
    return std::get<T>(*v);
  }
  std::vector<std::pair<std::string, AttrValue>> items_;
};

}  // namespace lucid
