# The GPU machine's session run (sourced, not executed: .device/build.sh exports PYTHONPATH), from
# the repository root there, with .device carried (the device tool's build.sh, the cudnn-frontend
# headers in .device/cudnn_frontend/include, and the deps prepared by ../shared/device/prepare.sh):
#   source scripts/device_run.sh                       build + C++ tests + the whole Python suite
#   K="cuda or record_stream" source scripts/device_run.sh    only the CUDA halves (-k K)
#   PROFILE=1 ATTN=1 EAGER=1 TEST_S=...                the profile / attention / eager benchmarks too
#   ONLY="train step" QUICK=                           cuda_eager.py --only ONLY, without --quick (QUICK set empty)
#   NOTEST=1                                           build and benchmarks only (no C++ or Python tests)
#   NORM=1                                             bench/cuda_norm.py too; EAGER_S: cuda_eager's time limit (240 s)
# Logs and JSON go to $OUT; the summaries are printed. Results are recorded in tests/cuda_results.md.
export LUCID_DEVICE_BUILD=$PWD/build/cuda1 LUCID_CMAKE_ARGS="-DLUCID_CUDA=ON -DLUCID_BUILD_TESTS=ON -DOPENBLAS_LIB=/tmp/lucid-deps/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so -DLUCID_CUDNN_FRONTEND_INCLUDE_DIR=$PWD/.device/cudnn_frontend/include"
source .device/build.sh > $OUT/build.log 2>&1 || { tail -60 $OUT/build.log; return 1; }
export LD_LIBRARY_PATH=/tmp/lucid-deps/usr/lib/x86_64-linux-gnu/openblas-openmp:$LD_LIBRARY_PATH
if [ -z "$NOTEST" ]; then
$LUCID_DEVICE_BUILD/lucid_cpp_tests --gtest_brief=1 > $OUT/cpp.log 2>&1; tail -3 $OUT/cpp.log; grep FAILED $OUT/cpp.log | head
K=${K:-}
timeout ${TEST_S:-230} python3 -m pytest tests/python tests/porting -q -W ignore -p no:cacheprovider -n 16 -rf ${K:+-k "$K"} > $OUT/pytest.log 2>&1; echo "pytest rc $?"; grep -E "^FAILED|^ERROR" $OUT/pytest.log | cut -c1-200 | head -40; tail -1 $OUT/pytest.log
fi
if [ -n "$PROFILE" ]; then timeout 120 python3 bench/cuda_profile_step.py --top 40 --json $OUT/profile.json > $OUT/profile.log 2>&1; grep -E "^==|^--|^  .* -> " $OUT/profile.log | cut -c1-200; fi
if [ -n "$ATTN" ]; then timeout 80 python3 bench/cuda_attention.py --json $OUT/attn.json > $OUT/attn.log 2>&1; tail -12 $OUT/attn.log; fi
if [ -n "$NORM" ]; then timeout 120 python3 bench/cuda_norm.py > $OUT/norm.log 2>&1; tail -14 $OUT/norm.log; fi
if [ -n "$EAGER" ]; then timeout ${EAGER_S:-240} python3 bench/cuda_eager.py ${QUICK---quick} ${ONLY:+--only "$ONLY"} --json $OUT/cuda_eager.json > $OUT/eager.log 2>&1; tail -24 $OUT/eager.log; fi
