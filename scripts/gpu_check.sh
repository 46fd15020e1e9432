#!/usr/bin/env bash
# The GPU check (docs/performance.md, "GPU check"): bench_train small/base in bf16 eager and compiled, bf16-vs-fp32
# loss parity of 80-step pretrain runs, and a 2-process torchrun when 2 GPUs exist; under 10 minutes on one
# modern NVIDIA GPU. Installs nothing: run it where the project is installed (make install).
#   bash scripts/gpu_check.sh                         # -> results/gpu_check/gpu_check.{json,md}
#   bash scripts/gpu_check.sh --dry-run --out /tmp/x  # the same commands on CPU at tiny shapes (CI runs this)
#   PYTHON=.venv/bin/python bash scripts/gpu_check.sh # the interpreter (default: python)
# Exit status: 0 when every section passed, 1 when one failed or ran over its time cap (the files say which).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
export MPLBACKEND="${MPLBACKEND:-Agg}"
exec "$PY" scripts/gpu_check.py --python "$PY" "$@"
