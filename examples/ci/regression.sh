#!/usr/bin/env bash
# The regression recipe for any CI: the quick compare, checked against the committed baseline, appended to
# the history store, rendered as a plot and a Markdown summary; exits like `electra-bench check`.
#
#   bash examples/ci/regression.sh           # after `make install && . .venv/bin/activate`
#   make ci-regression                       # the same, with the project's venv
#
# Settings (environment variables; defaults in brackets):
#   EB_RESULTS   where the quick compare's run directory goes              [results]
#   EB_RUN       an existing compare run to use instead of running one     [run $EB_RESULTS/ci-quick]
#   EB_BASELINE  the committed baseline                                    [results/baselines/compare-quick.json]
#   EB_STORE     the history store; keep it between CI runs (cache, artifact or a branch)
#                                                                          [ci-history/history.jsonl]
#   EB_OUT       what to publish: check.txt, report.txt, history.png/svg, summary.md, trend.csv/json,
#                and the run's scores.jsonl (scripts/slurm_ci.sh compares another engine's run with it)
#                                                                          [ci-out]
#   EB_PLOT_URL  where the published plot will be, for summary.md's link  [history.png]
#   EB_NOTE      a note kept with this commit's record                     [none]
#   EB_COMMIT    the commit id to record (a checkout without git)          [the run's provenance, CI's variables, git]
#   ELECTRA_BENCH  the command                                             [electra-bench]
#
# Exit status: 0 within tolerance, 1 on a regression (after everything is written, so the plot and the
# summary of the failing commit are there to publish), 2 when the run cannot be compared with the
# baseline (bad input or another config: nothing is appended then).
set -euo pipefail

read -r -a EB <<< "${ELECTRA_BENCH:-electra-bench}"
RESULTS="${EB_RESULTS:-results}"
BASELINE="${EB_BASELINE:-results/baselines/compare-quick.json}"
STORE="${EB_STORE:-ci-history/history.jsonl}"
OUT="${EB_OUT:-ci-out}"
RUN="${EB_RUN:-}"
mkdir -p "$OUT"

# 1. the quick compare (2e12 FLOPs per objective, 2 pre-training x 2 evaluation seeds; a few minutes on 2 cores)
if [ -z "$RUN" ]; then
    RUN="$RESULTS/ci-quick"
    "${EB[@]}" compare --quick --results "$RESULTS" --run-id ci-quick --quiet > "$OUT/report.txt"
fi

cp "$RUN/scores.jsonl" "$OUT/scores.jsonl"

# 2. the check against the committed baseline: its exit status is the job's
rc=0
"${EB[@]}" check "$RUN" --baseline "$BASELINE" > "$OUT/check.txt" || rc=$?
cat "$OUT/check.txt"
if [ "$rc" -ge 2 ]; then
    echo "error: $RUN could not be checked against $BASELINE (exit $rc); nothing appended to $STORE" >&2
    exit "$rc"
fi

# 3. this commit's record, then the trend: plot, Markdown for the job page / PR comment, CSV and JSON
"${EB[@]}" history add "$RUN" --store "$STORE" ${EB_NOTE:+--note "$EB_NOTE"} ${EB_COMMIT:+--commit "$EB_COMMIT"}
"${EB[@]}" history plot --store "$STORE" --baseline "$BASELINE" --out "$OUT" > /dev/null
"${EB[@]}" history show --store "$STORE" --baseline "$BASELINE" --format md \
    --plot-url "${EB_PLOT_URL:-history.png}" > "$OUT/summary.md"
"${EB[@]}" history show --store "$STORE" --baseline "$BASELINE" --format csv > "$OUT/trend.csv"
"${EB[@]}" history show --store "$STORE" --baseline "$BASELINE" --format json > "$OUT/trend.json"
echo "$(head -n 1 "$OUT/summary.md" | sed 's/^### //'); published in $OUT/ (summary.md, history.png, trend.csv)"
exit "$rc"
