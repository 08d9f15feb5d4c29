// How the CUDA executor runs FusedElementwise groups (rt::FusedRunner): each group of a program
// becomes one generated kernel (fused_source.h), all of a program's kernels one NVRTC program
// compiled once per executable for the running GPU's architecture (nvrtc_program.h: cached in the
// process and on disk), loaded as a CUDA library (cudaLibraryLoadData) and launched with
// cudaLaunchKernel on the current stream, so it is captured into the executable's CUDA graph like
// any kernel.
//
// Per call a launch binds the group's tensors: the iteration space without its size-1 dims,
// coalesced where every input allows it, each input classified as contiguous (read at the linear
// index), a scalar (one element), strided (any view, broadcast dims with stride 0: offsets from the
// coordinates), or a host 0-d tensor (its value in the arguments; while a graph is captured, a
// host value that changes per call is read from the device address graph_capture.h's
// GraphScalars gives). When no input is strided, the
// element count is a multiple of 4 and every pointer is aligned, each thread does 4 consecutive
// elements with one vector load per input and one vector store per output. An output may share an input's
// memory exactly (the memory plan's in-place reuse: each thread reads element i before writing
// it); an input overlapping an output in any other way is copied first.
//
// A group the generator refuses (fused_source.h says why), or every group when NVRTC fails or
// LUCID_CUDA_FUSED=0 is set, runs op by op: its body's nodes with their eager kernels, on each
// node's device, intermediates as fresh tensors; a group of host scalars runs on the CPU's block
// interpreter (backends/cpu/compile/fused_ew.h: one program for the group, as on the CPU) where it
// can, else op by op on the CPU. The reasons are recorded (rt::FusedKernelStats, compiled executables' `fused_kernels`).
#pragma once
#include <memory>

#include "lucid/compile/runtime/frame_executor.h"

namespace lucid::cuda {

// The runner for a program's FusedElementwise instructions: its context is the program's module
// (compiled here, before the executor is built), its build and run the module's groups.
rt::FusedRunner fused_runner(const rt::Program& program);

// The statistics of a runner's module (fused_runner's context).
rt::FusedKernelStats fused_kernel_stats(const rt::FusedRunner& runner);

}  // namespace lucid::cuda
