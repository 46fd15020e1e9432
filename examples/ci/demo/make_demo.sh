#!/usr/bin/env bash
# The README's CI history demo: five records through the recipe's steps (examples/ci/regression.sh), into
# examples/ci/demo/ (history.jsonl, summary-regression.md, summary.md, trend.csv) and docs/img/ci-history-demo.png.
# What is measured and what is simulated (README, "Regression history in CI"):
#   326eda2     measured: the committed quick run (tests/fixtures/runs), run at commit 326eda2 on 2026-12-03
#   sim-01      SIMULATED: a copy of 326eda2's record under a made-up commit id
#   <HEAD>      measured: a real compare --quick run by the recipe at this checkout's commit
#   broken-mlm  measured, deliberately broken: a real compare --quick with the masked-LM loss (MLM's and
#               RTD's generator's) on shuffled labels
#   sim-02      SIMULATED: "the fix", a copy of 326eda2's record under a made-up commit id
# Two real quick compares: about 10 minutes on 2 idle cores.
set -euo pipefail
cd "$(dirname "$0")/../../.."
WORK="${DEMO_WORK:-$(mktemp -d)}"
DEMO=examples/ci/demo
FIXTURE=tests/fixtures/runs/compare-tiny-quick-dcf2017d
read -r -a EB <<< "${ELECTRA_BENCH:-electra-bench}"
export ELECTRA_BENCH="${EB[*]}" EB_STORE="$DEMO/history.jsonl" EB_OUT="$WORK/out" EB_RESULTS="$WORK/results"
export EB_PLOT_URL="docs/img/ci-history-demo.png"  # relative to the README, which shows the summaries
rm -f "$EB_STORE"

"${EB[@]}" history add "$FIXTURE" --store "$EB_STORE" \
    --note "measured: the committed quick run, made at 326eda2 on 2026-12-03"
"${EB[@]}" history add "$FIXTURE" --store "$EB_STORE" --commit sim-01 --date 2026-12-03T15:00:00+00:00 \
    --note "SIMULATED: a copy of 326eda2's record under a made-up commit id"
EB_NOTE="measured: compare --quick by the recipe at this commit" bash examples/ci/regression.sh
"${ELECTRA_BENCH_PYTHON:-python}" "$DEMO/broken_mlm_run.py" "$EB_RESULTS"
rc=0
EB_RUN="$EB_RESULTS/broken-mlm" EB_COMMIT=broken-mlm \
    EB_NOTE="measured, deliberately broken: compare --quick with the masked-LM loss (MLM's and RTD's generator's) on shuffled labels" \
    bash examples/ci/regression.sh || rc=$?
[ "$rc" -eq 1 ] || { echo "error: the broken run should fail the check (exit 1), got $rc" >&2; exit 1; }
cp "$EB_OUT/summary.md" "$DEMO/summary-regression.md"
"${EB[@]}" history add "$FIXTURE" --store "$EB_STORE" --commit sim-02 --date "$(date -u +%Y-%m-%dT%H:%M:%S+00:00)" \
    --note "SIMULATED: the fix, a copy of 326eda2's record under a made-up commit id"
EB_RUN="$FIXTURE" EB_COMMIT=sim-02 bash examples/ci/regression.sh  # already recorded: renders only
cp "$EB_OUT/summary.md" "$DEMO/summary.md"
cp "$EB_OUT/trend.csv" "$DEMO/trend.csv"
cp "$EB_OUT/history.png" docs/img/ci-history-demo.png
echo "demo written: $DEMO/ and docs/img/ci-history-demo.png (work files in $WORK)"
