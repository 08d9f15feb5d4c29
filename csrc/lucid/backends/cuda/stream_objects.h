// The objects behind lucid.cuda.Stream and lucid.cuda.Event (torch.cuda's), over stream.h's
// per-thread current stream.
//
// A stream is a value (StreamRef: device and the cudaStream_t as an integer); 0 is the legacy
// default stream. Streams that lucid creates (lucid.cuda.Stream()) come from a per-device,
// per-priority pool of 32 non-blocking streams handed out round-robin and never destroyed, as
// torch's: a stream may be the current stream, or the stream a cached block belongs to
// (cuda_allocator.cu), after the Python object is gone. A foreign stream (torch's
// ExternalStream, a DLPack consumer's) is a StreamRef of its handle; lucid does not own it.
//
// An Event owns its cudaEvent_t, created at its first record on the recording stream's device
// (torch's lazy creation); before that, query() is true and synchronize() and wait() do nothing.
//
// One interface, two definitions (as device_info.h): stream_objects.cu in a CUDA build,
// ../no_cuda/stream_objects.cpp (raising "no CUDA backend") in a CPU-only one; no CUDA header
// here, so the bindings compile the same in both builds.
#pragma once
#include <cstdint>
#include <utility>

namespace lucid::cuda {

struct StreamRef {
  int device = 0;
  uintptr_t handle = 0;  // the cudaStream_t; 0: the legacy default stream
};

// {least, greatest} stream priority of the device (cudaDeviceGetStreamPriorityRange: {0, -5} on
// an H200; a lower number is a higher priority).
std::pair<int, int> stream_priority_range(int device);
// A stream of the pool of `priority` (clamped to the range) of `device`.
StreamRef pooled_stream(int device, int priority);
int stream_priority(const StreamRef& s);

// This thread's current stream of `device`, and setting it (a StreamRef of another device sets
// that device's current stream).
StreamRef current_stream_ref(int device);
void set_current_stream_ref(const StreamRef& s);

bool stream_query(const StreamRef& s);         // true when all its queued work has finished
void stream_synchronize(const StreamRef& s);   // blocks the host until it has
// Orders `waiter`'s later work after `producer`'s work queued so far (an event recorded on
// producer, waited on by waiter); nothing when they are the same stream.
void stream_wait_stream(const StreamRef& waiter, const StreamRef& producer);

class Event {
 public:
  explicit Event(bool enable_timing = false, bool blocking = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const StreamRef& s);      // on another device than an earlier record: error
  void wait(const StreamRef& s) const;  // s's later work waits for the recorded work
  bool query() const;
  void synchronize() const;
  // Milliseconds from this event to `end`; both recorded, with enable_timing.
  float elapsed_time(const Event& end) const;

  bool recorded() const { return handle_ != 0; }
  int device() const { return device_; }
  uintptr_t handle() const { return handle_; }  // the cudaEvent_t; 0 before the first record

 private:
  bool timing_;
  bool blocking_;
  int device_ = -1;
  uintptr_t handle_ = 0;
};

}  // namespace lucid::cuda
