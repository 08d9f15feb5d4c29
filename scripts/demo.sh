#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs the main demo (examples/demo.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 examples/demo.py
