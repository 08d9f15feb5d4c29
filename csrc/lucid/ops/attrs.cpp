#include "lucid/ops/attrs.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>

namespace lucid {

static size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

size_t Attrs::hash() const {
  size_t h = items_.size();
  for (auto& [k, v] : items_) {
    h = mix(h, std::hash<std::string>{}(k));
    h = mix(h, v.index());
    std::visit([&](const auto& x) {
      using X = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<X, IntList>) {
        for (int64_t e : x) h = mix(h, std::hash<int64_t>{}(e));
      } else if constexpr (std::is_same_v<X, DType>) {
        h = mix(h, static_cast<size_t>(x));
      } else {
        h = mix(h, std::hash<X>{}(x));
      }
    }, v);
  }
  return h;
}

std::string Attrs::str() const {
  std::ostringstream os;
  os.precision(17);
  os << "{";
  bool first = true;
  for (auto& [k, v] : items_) {
    os << (first ? "" : ", ") << k << "=";
    first = false;
    std::visit([&](const auto& x) {
      using X = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<X, IntList>) {
        os << "[";
        for (size_t i = 0; i < x.size(); ++i) os << (i ? "," : "") << x[i];
        os << "]";
      } else if constexpr (std::is_same_v<X, DType>) {
        os << dtype_name(x);
      } else if constexpr (std::is_same_v<X, bool>) {
        os << (x ? "true" : "false");
      } else if constexpr (std::is_same_v<X, double>) {
        os << x << (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 1e15 ? ".0" : "");
      } else if constexpr (std::is_same_v<X, std::string>) {
        os << '"' << x << '"';
      } else {
        os << x;
      }
    }, v);
  }
  os << "}";
  return os.str();
}

}  // namespace lucid
