#!/usr/bin/env bash
# One-time setup on a fresh Debian 12 machine: system libraries, Python packages, and the build.
# Used by scripts/demo.sh and scripts/test.sh (and so by CI). Safe to run again (incremental).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PKGS="libdnnl-dev libsleef-dev libopenblas-openmp-dev nlohmann-json3-dev libxxhash-dev libgtest-dev pkg-config ninja-build g++ cmake"
missing=""
for p in $APT_PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi

PY=${PYTHON:-python3}
# torch==2.13.0 (CPU) is a test/benchmark reference only; lucid never imports it.
$PY -m pip install -q --disable-pip-version-check nanobind scikit-build-core numpy pytest hypothesis safetensors threadpoolctl "torch==2.13.0" 2>&1 \
  | grep -v -E "Running pip as the 'root' user|Location .* is ignored" || true

# The CUDA backend's libraries (cmake/cuda_libraries.cmake), where an nvcc is there to build it and
# LUCID_CMAKE_ARGS does not turn it off: NVIDIA's wheels of CUDA 13.0 Update 2 (cuda-toolkit
# 13.0.2: cuBLAS 13.1.0.3, NVRTC 13.0.88), the release of this machine's nvcc 13.0.88 and runtime
# 13.0.96; cuDNN 9.19, the one the GPU machine's torch 2.11+cu130 loads; the header-only
# cudnn-frontend (--no-deps: its dependencies are for its Python API, which lucid does not use).
# About 0.88 GB of downloads and 1.4 GB installed, once; CCCL/CUB comes with the toolkit.
if ! [[ "${LUCID_CMAKE_ARGS:-}" =~ -DLUCID_CUDA=(OFF|off) ]] \
   && { command -v nvcc >/dev/null || [ -x "${CUDACXX:-/usr/local/cuda/bin/nvcc}" ]; }; then
  $PY -m pip install -q --disable-pip-version-check --no-deps nvidia-cublas==13.1.0.3 nvidia-cuda-nvrtc==13.0.88 \
      nvidia-cudnn-cu13==9.19.0.56 nvidia-cudnn-frontend==1.32.0 2>&1 \
    | grep -v -E "Running pip as the 'root' user|Location .* is ignored" || true
fi

BUILD_DIR=${LUCID_BUILD_DIR:-build/release}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  # ccache, when installed, makes rebuilds in other checkouts (git worktrees) cheap; not required.
  mkdir -p "$BUILD_DIR"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUCID_BUILD_TESTS=ON \
        -DCMAKE_CXX_COMPILER_LAUNCHER="$(command -v ccache || true)" -DCMAKE_CUDA_COMPILER_LAUNCHER="$(command -v ccache || true)" \
        -DPython_EXECUTABLE="$(command -v $PY)" ${LUCID_CMAKE_ARGS:-} > "$BUILD_DIR/configure.log"
  # What the CUDA option decided, and which CUDA libraries it found (cmake/cuda_libraries.cmake).
  sed -n '/CUDA backend\|CUDA libraries\|^  [A-Za-z].*: \//p' "$BUILD_DIR/configure.log"
fi
cmake --build "$BUILD_DIR" -j"$(nproc)"
