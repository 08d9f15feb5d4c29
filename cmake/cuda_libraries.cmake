# The CUDA backend's libraries, found for cmake/cuda.cmake once the toolkit is: cuBLAS + cuBLASLt,
# cuDNN 9 and its header-only C++ API cudnn-frontend, NVRTC, and CCCL/CUB (header-only).
#
# Where each is looked for, first match wins:
#   1. an explicit -D of its cache variable (the path itself, which skips the search):
#        LUCID_CUBLAS_INCLUDE_DIR (cublasLt.h), LUCID_CUBLASLT_LIBRARY, LUCID_CUBLAS_LIBRARY,
#        LUCID_CUDNN_INCLUDE_DIR (cudnn.h), LUCID_CUDNN_LIBRARY,
#        LUCID_CUDNN_FRONTEND_INCLUDE_DIR (cudnn_frontend.h),
#        LUCID_NVRTC_INCLUDE_DIR (nvrtc.h), LUCID_NVRTC_LIBRARY, LUCID_CCCL_INCLUDE_DIR (cub/version.cuh);
#      or a prefix in CMAKE_PREFIX_PATH;
#   2. NVIDIA's PyPI wheels installed for the Python that builds lucid (Python_EXECUTABLE, else
#      python3 on PATH): asked with importlib.metadata where the files of nvidia-cublas,
#      nvidia-cudnn-cu13, nvidia-cudnn-frontend, nvidia-cuda-nvrtc and nvidia-cuda-cccl lie, so any
#      site-packages and any wheel layout works (scripts/setup.sh installs them on the development
#      machine and in CI). CCCL is the exception: the toolkit's own copy comes first, since nvcc
#      puts it on its include path anyway;
#   3. the CUDA toolkit of the nvcc in use (cuBLAS, NVRTC, CCCL), then the system's paths (cuDNN
#      in /usr/include/x86_64-linux-gnu and /usr/lib/x86_64-linux-gnu on the GPU machine).
# Wheels before the toolkit: where the building Python holds torch (the GPU machine), lucid then
# links the very files torch loads. Two different builds of one soname (libcublasLt.so.13, say)
# cannot both be loaded into a process: whichever comes first serves both, so an older toolkit copy
# loaded by lucid could starve torch of symbols it needs, and the other way round.
#
# Each library's version is read from its headers (cuBLAS's CUBLAS_VER_*, cuDNN's
# cudnn_version.h, cudnn_frontend_version.h, CUB_VERSION) or, for NVRTC, whose header has none,
# from its wheel or the toolkit; a status line reports each version and where it was found.
# Anything missing goes to _lucid_cuda_missing (AUTO: CUDA off with a status line; ON: stop).
# Defines _lucid_cuda_libraries_target(), which cmake/cuda.cmake calls when the backend is on: it
# makes the INTERFACE target lucid_cuda_libraries (include dirs, the shared libraries by path, and
# LUCID_CUDA_FOUND_* definitions with what was found, for backends/cuda/libraries.cpp and its tests).

set(_lucid_python "${Python_EXECUTABLE}")
if(NOT _lucid_python)
  find_program(_lucid_python_found NAMES python3 python)
  set(_lucid_python "${_lucid_python_found}")
endif()

# One line "relative path|distribution|version|root" per wanted file a wheel holds: root is the
# folder to add to the include or library path, where the file is root/relative path.
set(_lucid_cuda_major ${CUDAToolkit_VERSION_MAJOR})
set(_lucid_wanted "cublasLt.h,cudnn.h,cudnn_frontend.h,nvrtc.h,cub/version.cuh,libcublasLt.so.${_lucid_cuda_major},libcublas.so.${_lucid_cuda_major},libcudnn.so.9,libnvrtc.so.${_lucid_cuda_major}")
set(_lucid_wheels "")
if(_lucid_python)
  execute_process(
    COMMAND "${_lucid_python}" -c "
import importlib.metadata as md, sys
wanted = sys.argv[1].split(',')
for name in ('nvidia-cublas', 'nvidia-cudnn-cu13', 'nvidia-cudnn-frontend', 'nvidia-cuda-nvrtc', 'nvidia-cuda-cccl'):
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        continue
    for f in dist.files or []:
        for w in wanted:
            if str(f).replace(chr(92), '/').endswith('/' + w) or str(f) == w:
                full = str(dist.locate_file(f)).replace(chr(92), '/')
                print(w + '|' + name + '|' + dist.version + '|' + full[:len(full) - len(w)].rstrip('/'))
" "${_lucid_wanted}"
    OUTPUT_VARIABLE _lucid_wheel_out ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _lucid_wheel_rc)
  if(_lucid_wheel_rc EQUAL 0)
    string(REPLACE "\n" ";" _lucid_wheels "${_lucid_wheel_out}")
  endif()
endif()

# _lucid_wheel_root(<file> <out var>): the wheel folder holding <file>, or empty.
function(_lucid_wheel_root file out)
  set(root "")
  foreach(line ${_lucid_wheels})
    string(REPLACE "|" ";" parts "${line}")
    list(GET parts 0 w)
    if(w STREQUAL file AND NOT root)
      list(GET parts 3 root)
    endif()
  endforeach()
  set(${out} "${root}" PARENT_SCOPE)
endfunction()

# _lucid_wheel_of(<file> <path> <out var>): "wheel <distribution> <version>" when <path> (the
# file itself, or the folder it was found in) is a wheel's copy of <file>. Wheels share folders
# (nvidia/cu13/ holds cuBLAS and NVRTC), so the file decides.
function(_lucid_wheel_of file path out)
  set(r "")
  foreach(line ${_lucid_wheels})
    string(REPLACE "|" ";" parts "${line}")
    list(GET parts 0 w)
    list(GET parts 3 root)
    if(NOT r AND w STREQUAL file AND (path STREQUAL "${root}/${w}" OR path STREQUAL root))
      list(GET parts 1 dist)
      list(GET parts 2 ver)
      set(r "wheel ${dist} ${ver}")
    endif()
  endforeach()
  set(${out} "${r}" PARENT_SCOPE)
endfunction()

# _lucid_cuda_header(<var> <file> <toolkit first?>) / _lucid_cuda_library(<var> <file>): find_path /
# find_library with the wheel folder and the toolkit as hints (an explicit -D of <var> wins).
function(_lucid_cuda_header var file toolkit_first)
  _lucid_wheel_root("${file}" wheel)
  set(toolkit ${CUDAToolkit_INCLUDE_DIRS})
  list(TRANSFORM toolkit APPEND "/cccl" OUTPUT_VARIABLE toolkit_cccl)
  if(toolkit_first)
    find_path(${var} "${file}" HINTS ${toolkit} ${toolkit_cccl} ${wheel})
  else()
    find_path(${var} "${file}" HINTS ${wheel} ${toolkit} ${toolkit_cccl})
  endif()
endfunction()
function(_lucid_cuda_library var file)
  _lucid_wheel_root("${file}" wheel)
  string(REGEX REPLACE "^lib([^.]+)\\.so.*$" "\\1" plain "${file}")
  find_library(${var} NAMES "${file}" ${plain} HINTS ${wheel} ${CUDAToolkit_LIBRARY_DIR})
endfunction()

_lucid_cuda_header(LUCID_CUBLAS_INCLUDE_DIR cublasLt.h FALSE)
_lucid_cuda_library(LUCID_CUBLASLT_LIBRARY libcublasLt.so.${_lucid_cuda_major})
_lucid_cuda_library(LUCID_CUBLAS_LIBRARY libcublas.so.${_lucid_cuda_major})
_lucid_cuda_header(LUCID_CUDNN_INCLUDE_DIR cudnn.h FALSE)
_lucid_cuda_library(LUCID_CUDNN_LIBRARY libcudnn.so.9)
_lucid_cuda_header(LUCID_CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h FALSE)
_lucid_cuda_header(LUCID_NVRTC_INCLUDE_DIR nvrtc.h FALSE)
_lucid_cuda_library(LUCID_NVRTC_LIBRARY libnvrtc.so.${_lucid_cuda_major})
_lucid_cuda_header(LUCID_CCCL_INCLUDE_DIR cub/version.cuh TRUE)

set(_lucid_cuda_wheel_hint "pip install the wheels scripts/setup.sh pins (nvidia-cublas, nvidia-cudnn-cu13, nvidia-cudnn-frontend, nvidia-cuda-nvrtc)")
set(_lucid_cuda_lib_missing "")
foreach(pair "LUCID_CUBLAS_INCLUDE_DIR:cuBLAS headers (cublasLt.h)"
             "LUCID_CUBLASLT_LIBRARY:cuBLASLt (libcublasLt.so.${_lucid_cuda_major})"
             "LUCID_CUBLAS_LIBRARY:cuBLAS (libcublas.so.${_lucid_cuda_major})"
             "LUCID_CUDNN_INCLUDE_DIR:cuDNN headers (cudnn.h)"
             "LUCID_CUDNN_LIBRARY:cuDNN 9 (libcudnn.so.9)"
             "LUCID_CUDNN_FRONTEND_INCLUDE_DIR:cudnn-frontend (cudnn_frontend.h)"
             "LUCID_NVRTC_INCLUDE_DIR:NVRTC headers (nvrtc.h)"
             "LUCID_NVRTC_LIBRARY:NVRTC (libnvrtc.so.${_lucid_cuda_major})"
             "LUCID_CCCL_INCLUDE_DIR:CCCL/CUB headers (cub/version.cuh)")
  string(FIND "${pair}" ":" colon)
  string(SUBSTRING "${pair}" 0 ${colon} var)
  math(EXPR colon "${colon} + 1")
  string(SUBSTRING "${pair}" ${colon} -1 what)
  if(NOT ${var})
    list(APPEND _lucid_cuda_lib_missing "${what}")
  endif()
endforeach()

# Versions, from the headers found (what the compiler will see).
function(_lucid_header_define file name out)
  set(v "")
  if(EXISTS "${file}")
    file(STRINGS "${file}" line REGEX "^#define[ \t]+${name}[ \t]+[0-9]+")
    if(line)
      string(REGEX REPLACE "^#define[ \t]+${name}[ \t]+([0-9]+).*$" "\\1" v "${line}")
    endif()
  endif()
  set(${out} "${v}" PARENT_SCOPE)
endfunction()

if(_lucid_cuda_lib_missing)
  list(JOIN _lucid_cuda_lib_missing ", " _lucid_what)
  if(_lucid_python)
    set(_lucid_where "the Python ${_lucid_python}'s NVIDIA wheels, the CUDA toolkit (${CUDAToolkit_INCLUDE_DIRS}) or the system's paths")
  else()
    set(_lucid_where "the CUDA toolkit (${CUDAToolkit_INCLUDE_DIRS}) or the system's paths (no Python found to ask for wheels)")
  endif()
  _lucid_cuda_missing("these CUDA libraries were not found in ${_lucid_where}: ${_lucid_what}; ${_lucid_cuda_wheel_hint}, or give their paths with -DLUCID_<NAME>_INCLUDE_DIR / -DLUCID_<NAME>_LIBRARY (cmake/cuda_libraries.cmake)")
else()
  _lucid_header_define("${LUCID_CUBLAS_INCLUDE_DIR}/cublas_api.h" CUBLAS_VER_MAJOR _cb_major)
  _lucid_header_define("${LUCID_CUBLAS_INCLUDE_DIR}/cublas_api.h" CUBLAS_VER_MINOR _cb_minor)
  _lucid_header_define("${LUCID_CUBLAS_INCLUDE_DIR}/cublas_api.h" CUBLAS_VER_PATCH _cb_patch)
  _lucid_header_define("${LUCID_CUDNN_INCLUDE_DIR}/cudnn_version.h" CUDNN_MAJOR _dnn_major)
  _lucid_header_define("${LUCID_CUDNN_INCLUDE_DIR}/cudnn_version.h" CUDNN_MINOR _dnn_minor)
  _lucid_header_define("${LUCID_CUDNN_INCLUDE_DIR}/cudnn_version.h" CUDNN_PATCHLEVEL _dnn_patch)
  _lucid_header_define("${LUCID_CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend_version.h" CUDNN_FRONTEND_MAJOR_VERSION _fe_major)
  _lucid_header_define("${LUCID_CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend_version.h" CUDNN_FRONTEND_MINOR_VERSION _fe_minor)
  _lucid_header_define("${LUCID_CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend_version.h" CUDNN_FRONTEND_PATCH_VERSION _fe_patch)
  _lucid_header_define("${LUCID_CCCL_INCLUDE_DIR}/cub/version.cuh" CUB_VERSION _cub)
  # NVRTC's header has no version: its wheel's, else the toolkit's (NVRTC ships with it).
  _lucid_wheel_of(libnvrtc.so.${_lucid_cuda_major} "${LUCID_NVRTC_LIBRARY}" _nvrtc_wheel)
  if(_nvrtc_wheel)
    string(REGEX REPLACE "^wheel [^ ]+ " "" _nvrtc_version "${_nvrtc_wheel}")
  else()
    set(_nvrtc_version "${CUDAToolkit_VERSION}")
  endif()
  if(NOT _dnn_major STREQUAL "9")
    _lucid_cuda_missing("cuDNN 9 is needed, but ${LUCID_CUDNN_INCLUDE_DIR}/cudnn_version.h is version '${_dnn_major}.${_dnn_minor}'")
  elseif(NOT _cb_major STREQUAL "${_lucid_cuda_major}")
    _lucid_cuda_missing("cuBLAS ${_cb_major}.${_cb_minor} (${LUCID_CUBLAS_INCLUDE_DIR}) does not match CUDA ${CUDAToolkit_VERSION}")
  elseif(NOT _fe_major)
    _lucid_cuda_missing("cudnn-frontend: no version in ${LUCID_CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend_version.h")
  elseif(NOT _cub)
    _lucid_cuda_missing("CCCL/CUB: no CUB_VERSION in ${LUCID_CCCL_INCLUDE_DIR}/cub/version.cuh")
  else()
    math(EXPR _cub_major "${_cub} / 100000")
    math(EXPR _cub_minor "${_cub} / 100 % 1000")
    math(EXPR _cub_sub "${_cub} % 100")
    set(LUCID_CUDA_LIB_VERSIONS "cuda_runtime=${CUDAToolkit_VERSION}"
        "cublas=${_cb_major}.${_cb_minor}.${_cb_patch}" "cudnn=${_dnn_major}.${_dnn_minor}.${_dnn_patch}"
        "cudnn_frontend=${_fe_major}.${_fe_minor}.${_fe_patch}" "nvrtc=${_nvrtc_version}"
        "cub=${_cub_major}.${_cub_minor}.${_cub_sub}")
    # The status lines: version and where, "(wheel nvidia-cublas 13.1.0.3)" when from a wheel.
    foreach(entry "cuBLAS + cuBLASLt ${_cb_major}.${_cb_minor}.${_cb_patch}|${LUCID_CUBLASLT_LIBRARY}|libcublasLt.so.${_lucid_cuda_major}"
                  "cuDNN ${_dnn_major}.${_dnn_minor}.${_dnn_patch}|${LUCID_CUDNN_LIBRARY}|libcudnn.so.9"
                  "cudnn-frontend ${_fe_major}.${_fe_minor}.${_fe_patch}|${LUCID_CUDNN_FRONTEND_INCLUDE_DIR}|cudnn_frontend.h"
                  "NVRTC ${_nvrtc_version}|${LUCID_NVRTC_LIBRARY}|libnvrtc.so.${_lucid_cuda_major}"
                  "CCCL/CUB ${_cub_major}.${_cub_minor}.${_cub_sub}|${LUCID_CCCL_INCLUDE_DIR}|cub/version.cuh")
      string(REPLACE "|" ";" parts "${entry}")
      list(GET parts 0 what)
      list(GET parts 1 path)
      list(GET parts 2 file)
      _lucid_wheel_of("${file}" "${path}" from)
      if(from)
        set(from ", ${from}")
      endif()
      list(APPEND _lucid_cuda_lib_report "  ${what}: ${path}${from}")
    endforeach()
  endif()
endif()

function(_lucid_cuda_libraries_target)
  list(JOIN _lucid_cuda_lib_report "\n" report)
  message(STATUS "CUDA libraries:\n${report}")
  add_library(lucid_cuda_libraries INTERFACE)
  # CCCL as a system include: its headers then warn no more than they do from nvcc's own path.
  target_include_directories(lucid_cuda_libraries INTERFACE ${LUCID_CUBLAS_INCLUDE_DIR} ${LUCID_CUDNN_INCLUDE_DIR}
                             ${LUCID_CUDNN_FRONTEND_INCLUDE_DIR} ${LUCID_NVRTC_INCLUDE_DIR})
  target_include_directories(lucid_cuda_libraries SYSTEM INTERFACE ${LUCID_CCCL_INCLUDE_DIR})
  # Linked by path: CMake records each folder in the RPATH of _C, lucid_cpp_tests and run_artifact.
  target_link_libraries(lucid_cuda_libraries INTERFACE ${LUCID_CUBLASLT_LIBRARY} ${LUCID_CUBLAS_LIBRARY}
                        ${LUCID_CUDNN_LIBRARY} ${LUCID_NVRTC_LIBRARY})
  # cudnn-frontend without its bundled nlohmann-json: it parses a third of the header time (about
  # 40 s -> 15 s of g++ for one file including cudnn_frontend.h) and lucid has its own json.
  set(defs CUDNN_FRONTEND_SKIP_JSON_LIB)
  foreach(kv ${LUCID_CUDA_LIB_VERSIONS})
    string(REPLACE "=" ";" kv "${kv}")
    list(GET kv 0 k)
    list(GET kv 1 v)
    string(TOUPPER "${k}" k)
    list(APPEND defs "LUCID_CUDA_FOUND_${k}=\"${v}\"")
  endforeach()
  target_compile_definitions(lucid_cuda_libraries INTERFACE ${defs})
endfunction()
