#!/usr/bin/env bash
# The SLURM engine on a real cluster, as .ci/run runs it after the tests; anyone can run it by hand (as
# root: it installs and starts a one-node cluster with scripts/slurm_cluster.sh, and stops it at the end,
# whatever happened):
#
#   bash scripts/slurm_ci.sh        # `make install` first, when the venv is not there yet
#
# 1. The cluster, with accounting. `compare --quick --engine slurm --device cpu --devices 2`, with the job
#    pretrain/mlm/seed-0 cancelled (scancel) once, after its first checkpoint: the run must finish, say that
#    it lost that job's attempt and ran it again, and store the local quick run's score rows bit for bit
#    (the CI recipe's, $EB_CI_OUT/scores.jsonl, when the caller ran it as .ci/run's `make test` does;
#    otherwise a local quick compare runs here first).
# 2. tests/test_experiments_slurm.py against that cluster, with EB_REQUIRE_SLURM=1 (no test may skip).
# 3. The cluster again without accounting, and the tests of a cancelled or unknowable job again.
#
# Settings: EB_CI_OUT, the CI recipe's output folder [none]; EB_SLURM_OUT, where this writes its runs and
# transcripts [ci-out/slurm]; EB_SLURM_DIR, the cluster's directory (scripts/slurm_cluster.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
make install  # nothing to do when .ci/run (or you) installed already
PY="$PWD/.venv/bin/python"
EB=("$PY" -m electra_bench.cli)
OUT="${EB_SLURM_OUT:-$PWD/ci-out/slurm}"
export SLURM_CONF="${EB_SLURM_DIR:-/tmp/electra-bench-slurm}/etc/slurm.conf"
JOB=pretrain/mlm/seed-0
t_start=$SECONDS
step() { echo "== slurm_ci [$((SECONDS - t_start)) s]: $*"; }

trap 'step "stopping the cluster"; bash scripts/slurm_cluster.sh down' EXIT
rm -rf "$OUT" && mkdir -p "$OUT"

step "the cluster, with accounting"
bash scripts/slurm_cluster.sh up

REF="${EB_CI_OUT:+$EB_CI_OUT/scores.jsonl}"
if [ -z "$REF" ] || [ ! -f "$REF" ]; then
    step "the local quick compare (the reference)"
    t=$SECONDS
    "${EB[@]}" compare --quick --results "$OUT/local" --run-id quick --quiet >/dev/null
    echo "local quick compare: $((SECONDS - t)) s"
    REF="$OUT/local/quick/scores.jsonl"
fi

step "compare --quick through sbatch, $JOB cancelled once after its first checkpoint"
RUN="$OUT/results/quick"
t=$SECONDS
since=$(date +%Y-%m-%dT%H:%M:%S)
"${EB[@]}" compare --quick --engine slurm --device cpu --devices 2 --results "$OUT/results" --run-id quick \
    --quiet >"$OUT/report.txt" 2>"$OUT/driver.err" &
driver=$!
ckpts="$RUN/pretrain/mlm/seed-0/checkpoints"
cancelled=""
while kill -0 "$driver" 2>/dev/null; do
    if [ -n "$(ls -A "$ckpts" 2>/dev/null)" ]; then
        cancelled=$(squeue -h --me -n "$JOB" -t RUNNING -o %i | head -n 1)
        [ -n "$cancelled" ] && scancel "$cancelled" && echo "scancel $cancelled ($JOB) at $(date +%T), after its checkpoint $(ls "$ckpts" | head -n 1)"
        break
    fi
    sleep 0.5
done
rc=0
wait "$driver" || rc=$?
wall=$((SECONDS - t))
echo "--- the driver's stderr"
cat "$OUT/driver.err"
echo "---"
[ "$rc" -eq 0 ] || { echo "error: compare --engine slurm exited $rc (stderr above)" >&2; exit 1; }
[ -n "$cancelled" ] || { echo "error: $JOB was not running after its first checkpoint: nothing was cancelled" >&2; exit 1; }
grep -q "^warning: job $JOB lost attempt 1 of 2: cluster job $cancelled ended (CANCELLED)" "$OUT/driver.err" ||
    { echo "error: the driver did not say that it lost $JOB's attempt (cluster job $cancelled)" >&2; exit 1; }
echo "sacct (JobID|JobName|State|Elapsed):"
sacct -X -n -P -o JobID,JobName,State,Elapsed -S "$since" | tee "$OUT/sacct.txt"
# every job COMPLETED but the cancelled attempt
others=$(grep -v "^$cancelled|" "$OUT/sacct.txt" | grep -vc '|COMPLETED|' || true)
grep -q "^$cancelled|$JOB|CANCELLED" "$OUT/sacct.txt" && [ "$others" -eq 0 ] ||
    { echo "error: sacct should list $cancelled CANCELLED and every other job COMPLETED" >&2; exit 1; }
"$PY" - "$REF" "$RUN/scores.jsonl" <<'EOF'
import json, sys
ref, got = (sorted(json.dumps(json.loads(line), sort_keys=True) for line in open(p)) for p in sys.argv[1:3])
if ref != got:
    sys.exit(f"error: the SLURM run's {len(got)} score rows differ from the local run's {len(ref)} ({sys.argv[1]})")
print(f"the SLURM run's {len(got)} score rows are the local run's, bit for bit ({sys.argv[1]})")
EOF
echo "compare --quick through SLURM (one job cancelled and rerun): ${wall} s"

step "tests/test_experiments_slurm.py, with accounting"
EB_REQUIRE_SLURM=1 "$PY" -m pytest -q -p no:cacheprovider tests/test_experiments_slurm.py

step "the cluster without accounting"
bash scripts/slurm_cluster.sh up --no-accounting
step "tests of a cancelled or unknowable job, without accounting"
EB_REQUIRE_SLURM=1 "$PY" -m pytest -q -s -p no:cacheprovider tests/test_experiments_slurm.py -k "cancel or cannot_be_read"
step "passed"
