"""lucid.cuda.library_versions(): the CUDA libraries a CUDA build links, asked without a GPU.

In a CUDA build every library reports a positive version code of its own encoding, the loaded
library shares the major release of the headers it was compiled against (a newer minor may be
loaded, e.g. torch's copy on the GPU machine), and the compiled versions are the ones CMake found
and reported at configure time (cmake/cuda_libraries.cmake). A CPU-only build raises RuntimeError
naming why, and records no CUDA library in the artifact stamp."""
import pytest

import lucid
from lucid import _C

BUILT = _C._cuda_is_built()
needs_cuda_build = pytest.mark.skipif(not BUILT, reason="this build of lucid has no CUDA backend")
NAMES = {"cuda_runtime", "cublas", "cublaslt", "cudnn", "cudnn_frontend", "nvrtc", "cub"}


def _dotted3(code):
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}"


@pytest.mark.skipif(BUILT, reason="a CUDA build: see the tests below")
def test_cpu_only_build_raises_naming_the_reason():
    with pytest.raises(RuntimeError, match="no CUDA backend"):
        lucid.cuda.library_versions()
    with pytest.raises(RuntimeError, match="no CUDA backend"):
        lucid.cuda.library_versions(compiled=True)
    assert _C._cuda_libraries() == []


@needs_cuda_build
def test_every_library_reports_a_sane_version():
    loaded = lucid.cuda.library_versions()
    compiled = lucid.cuda.library_versions(compiled=True)
    assert set(loaded) == set(compiled) == NAMES
    assert all(type(v) is int and v > 0 for v in loaded.values()), loaded
    assert 13000 <= loaded["cuda_runtime"] < 14000          # CUDA 13.x: major*1000 + minor*10
    assert 130000 <= loaded["cublas"] < 140000              # cuBLAS 13.x: major*10000 + minor*100 + patch
    assert loaded["cublaslt"] == loaded["cublas"]
    assert 90000 <= loaded["cudnn"] < 100000                # cuDNN 9.x
    assert 10000 <= loaded["cudnn_frontend"] < 20000        # cudnn-frontend 1.x
    assert loaded["nvrtc"] // 1000 == loaded["cuda_runtime"] // 1000
    assert 300000 <= loaded["cub"] < 400000                 # CCCL 3.x
    assert compiled["nvrtc"] == 0                           # nvrtc.h carries no version


@needs_cuda_build
def test_loaded_versions_share_the_compiled_major_release():
    loaded = lucid.cuda.library_versions()
    compiled = lucid.cuda.library_versions(compiled=True)
    for name, scale in (("cublas", 10000), ("cublaslt", 10000), ("cudnn", 10000)):
        assert loaded[name] // scale == compiled[name] // scale, (name, loaded[name], compiled[name])
        assert loaded[name] >= compiled[name], (name, loaded[name], compiled[name])
    for name in ("cuda_runtime", "cudnn_frontend", "cub"):    # static or header-only: the compiled one
        assert loaded[name] == compiled[name], name


@needs_cuda_build
def test_compiled_versions_are_what_cmake_found():
    libs = {lib.name: lib for lib in _C._cuda_libraries()}
    for name in ("cublas", "cublaslt", "cudnn", "cudnn_frontend"):
        assert libs[name].configured == _dotted3(libs[name].compiled), libs[name]
    cub = libs["cub"].compiled
    assert libs["cub"].configured == f"{cub // 100000}.{cub // 100 % 1000}.{cub % 100}"
    # NVRTC's version comes from its wheel or the toolkit ("13.0.88"); it starts with the loaded "13.0".
    assert libs["nvrtc"].configured.startswith(libs["nvrtc"].version + "."), libs["nvrtc"]
    assert libs["cuda_runtime"].configured.split(".")[:2] == libs["cuda_runtime"].version.split(".")
    assert libs["cudnn"].version == _dotted3(libs["cudnn"].loaded)
