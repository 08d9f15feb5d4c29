#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs the whole test suite: C++ (GoogleTest) and
# Python (pytest, lucid against PyTorch). Usage: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${LUCID_BUILD_DIR:-build/release}
"$BUILD_DIR/lucid_cpp_tests" --gtest_brief=1
set +e
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 -m pytest tests/python tests/porting -q -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi
exit "$rc"
