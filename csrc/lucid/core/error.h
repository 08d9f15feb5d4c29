// Error types of the engine. They carry no Python dependency; the bindings translate each one
// to the Python exception of the same name. Messages name the op, the argument, what was
// expected and what was given.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace lucid {

struct Error : std::runtime_error { using std::runtime_error::runtime_error; };
struct TypeError : Error { using Error::Error; };
struct ValueError : Error { using Error::Error; };
struct IndexError : Error { using Error::Error; };
struct NotImplementedError : Error { using Error::Error; };

template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

}  // namespace lucid

// LUCID_CHECK(cond, ValueError, "op: argument 'x' expected ..., got ", v)
#define LUCID_CHECK(cond, Kind, ...)                                 \
  do {                                                               \
    if (!(cond)) throw ::lucid::Kind(::lucid::str(__VA_ARGS__));     \
  } while (0)
