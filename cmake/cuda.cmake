# The LUCID_CUDA option: whether the CUDA backend (csrc/lucid/backends/cuda/) is built.
#   AUTO (default): on where a working nvcc, the CUDA runtime (cuda_runtime.h, libcudart_static.a)
#                   and the libraries below are all found; off otherwise, with a status line saying
#                   what was missing.
#   ON:             the same search, but anything missing stops the configure with a message.
#   OFF:            never looks for CUDA.
# Sets LUCID_CUDA_ENABLED (ON/OFF). When on, the CUDA language is enabled with SASS for sm_90a
# and PTX for compute_90 (the H200; override with -DCMAKE_CUDA_ARCHITECTURES=...), and the targets
# CUDA::cudart_static and lucid_cuda_libraries exist. The runtime is linked statically, so it
# needs no libcudart.so; the driver (libcuda.so) is loaded by the runtime at the first call.
#
# The libraries (cmake/cuda_libraries.cmake): cuBLAS + cuBLASLt, cuDNN 9 with the header-only
# cudnn-frontend, NVRTC and CCCL/CUB (header-only). The shared libraries are linked by path, with
# an RPATH to the folder each was found in, so lucid/_C of a CUDA build needs at import
# libcublasLt.so.13, libcublas.so.13, libcudnn.so.9 and libnvrtc.so.13 (the CUDA major of the
# toolkit) where the build found them, or on LD_LIBRARY_PATH; no GPU and no driver. cuDNN loads its
# sub-libraries (libcudnn_graph, _ops, _cnn, _adv, _engines_*, _heuristic) itself, from its own
# folder, when first used.
set(LUCID_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO (where nvcc and the CUDA runtime are found), ON or OFF")
set_property(CACHE LUCID_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${LUCID_CUDA}" _lucid_cuda_mode)
if(NOT _lucid_cuda_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "LUCID_CUDA must be AUTO, ON or OFF, got '${LUCID_CUDA}'")
endif()

# AUTO reports what it lacked and goes on without CUDA; ON stops there.
macro(_lucid_cuda_missing what)
  if(_lucid_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "LUCID_CUDA=ON, but ${what}. Install the CUDA toolkit (or point CMake at it "
                        "with -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCUDAToolkit_ROOT=/usr/local/cuda), "
                        "or configure with -DLUCID_CUDA=OFF.")
  endif()
  message(STATUS "LUCID_CUDA=AUTO: CUDA backend off (${what})")
  set(_lucid_cuda_ok OFF)
endmacro()

set(LUCID_CUDA_ENABLED OFF)
if(NOT _lucid_cuda_mode STREQUAL "OFF")
  set(_lucid_cuda_ok ON)
  # nvcc from -DCMAKE_CUDA_COMPILER, $CUDACXX or PATH, else the toolkit's usual homes ($CUDA_HOME,
  # $CUDA_PATH, /usr/local/cuda: the GPU machine has nvcc there but not on PATH).
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    string(REPLACE ":" ";" _lucid_path "$ENV{PATH}")
    set(_lucid_nvcc "")
    foreach(_dir ${_lucid_path} "$ENV{CUDA_HOME}" "$ENV{CUDA_PATH}" /usr/local/cuda)
      foreach(_candidate "${_dir}/nvcc" "${_dir}/bin/nvcc")
        if(NOT _lucid_nvcc AND EXISTS "${_candidate}" AND NOT IS_DIRECTORY "${_candidate}")
          set(_lucid_nvcc "${_candidate}")
        endif()
      endforeach()
    endforeach()
    if(_lucid_nvcc)
      set(ENV{CUDACXX} "${_lucid_nvcc}")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)              # sets CMAKE_CUDA_COMPILER when that nvcc compiles and links a test
  if(NOT CMAKE_CUDA_COMPILER)
    _lucid_cuda_missing("no working CUDA compiler (nvcc) was found")
  else()
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "90a-real;90-virtual")   # SASS sm_90a + PTX compute_90
    endif()
    enable_language(CUDA)
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)  # CMake 3.25 does not know nvcc's C++20 flag
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit QUIET)  # after enable_language: the toolkit of the nvcc just checked
    if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cudart_static)
      _lucid_cuda_missing("the CUDA runtime library (libcudart_static.a) was not found in ${CMAKE_CUDA_COMPILER_TOOLKIT_ROOT}")
    else()
      include(${CMAKE_CURRENT_LIST_DIR}/cuda_libraries.cmake)   # cuBLAS(Lt), cuDNN + frontend, NVRTC, CCCL
      set(_lucid_cuda_header "")
      foreach(_dir ${CUDAToolkit_INCLUDE_DIRS})
        if(EXISTS "${_dir}/cuda_runtime.h")
          set(_lucid_cuda_header "${_dir}/cuda_runtime.h")
        endif()
      endforeach()
      if(NOT _lucid_cuda_header)
        _lucid_cuda_missing("the CUDA runtime header cuda_runtime.h was not found in ${CUDAToolkit_INCLUDE_DIRS}")
      endif()
    endif()
  endif()
  if(_lucid_cuda_ok)
    set(LUCID_CUDA_ENABLED ON)
    message(STATUS "CUDA backend on: nvcc ${CMAKE_CUDA_COMPILER_VERSION} (${CMAKE_CUDA_COMPILER}), CUDA runtime "
                   "${CUDAToolkit_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
    _lucid_cuda_libraries_target()
  endif()
endif()
