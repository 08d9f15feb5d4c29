#include "lucid/core/storage.h"

#include <cstdlib>
#include <new>

namespace lucid {

std::shared_ptr<Storage> Storage::allocate(size_t nbytes) {
  auto s = std::make_shared<Storage>();
  size_t n = nbytes == 0 ? 64 : (nbytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, n);
  if (!p) throw std::bad_alloc();
  s->data = p;
  s->nbytes = nbytes;
  s->owner = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  return s;
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, std::shared_ptr<void> owner) {
  auto s = std::make_shared<Storage>();
  s->data = data;
  s->nbytes = nbytes;
  s->owner = std::move(owner);
  return s;
}

}  // namespace lucid
