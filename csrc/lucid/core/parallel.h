// parallel_for over [begin, end) with OpenMP (libgomp, the one runtime shared with oneDNN).
// Ranges below the grain run on the calling thread: small ops never open a parallel region.
// kParallelGrain was measured with bench/parallel_threshold.py (see docs/architecture.md).
#pragma once
#include <algorithm>
#include <cstdint>
#include <omp.h>

namespace lucid {

constexpr int64_t kParallelGrain = 32768;

template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  int64_t n = end - begin;
  if (n <= 0) return;
  if (n <= grain || omp_in_parallel() || omp_get_max_threads() == 1) {
    f(begin, end);
    return;
  }
  int64_t nthreads = std::min<int64_t>(omp_get_max_threads(), (n + grain - 1) / grain);
#pragma omp parallel num_threads(nthreads)
  {
    int64_t tid = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t b = begin + tid * chunk, e = std::min(end, b + chunk);
    if (b < e) f(b, e);
  }
}

}  // namespace lucid
