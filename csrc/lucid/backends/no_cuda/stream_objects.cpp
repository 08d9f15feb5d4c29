// The CPU-only build's definition of lucid/backends/cuda/stream_objects.h: no CUDA backend, so
// every stream and event call raises, naming the call. CMake builds either this file or
// backends/cuda/, never both.
#include "lucid/backends/cuda/stream_objects.h"

#include "lucid/backends/cuda/device_info.h"
#include "lucid/core/error.h"

namespace lucid::cuda {

namespace {
[[noreturn]] void no_backend(const char* what) {
  throw Error(str("cuda ", what, ": no CUDA device is available: ", unavailable_reason()));
}
}  // namespace

std::pair<int, int> stream_priority_range(int) { no_backend("stream_priority_range"); }
StreamRef pooled_stream(int, int) { no_backend("Stream"); }
int stream_priority(const StreamRef&) { no_backend("Stream.priority"); }
StreamRef current_stream_ref(int) { no_backend("current_stream"); }
void set_current_stream_ref(const StreamRef&) { no_backend("set_stream"); }
bool stream_query(const StreamRef&) { no_backend("Stream.query"); }
void stream_synchronize(const StreamRef&) { no_backend("Stream.synchronize"); }
void stream_wait_stream(const StreamRef&, const StreamRef&) { no_backend("Stream.wait_stream"); }

Event::Event(bool enable_timing, bool blocking) : timing_(enable_timing), blocking_(blocking) { no_backend("Event"); }
Event::~Event() = default;
void Event::record(const StreamRef&) { no_backend("Event.record"); }
void Event::wait(const StreamRef&) const { no_backend("Event.wait"); }
bool Event::query() const { no_backend("Event.query"); }
void Event::synchronize() const { no_backend("Event.synchronize"); }
float Event::elapsed_time(const Event&) const { no_backend("Event.elapsed_time"); }

}  // namespace lucid::cuda
