"""Everything after pre-training and fine-tuning produce numbers.

- `metrics`: per-task metrics (scikit-learn / scipy), reported on the paper's 0-100 scale.
- `glue_score`: the GLUE score in the ELECTRA paper's convention and the leaderboard's; `suite_score`
  for other task sets.
- `results`: the run directory store (`results/<run_id>/`), scores in long format.
- `provenance`: what produced a run (code, versions, hardware, seeds, data hashes), without the hostname.
- `summary`: per checkpoint medians, the aggregate score, the compute headline and the noise verdict.
- `report`, `plots`: the paper's Table 1 layout and the score-vs-FLOPs figures.
- `regression`: compare a run with a committed baseline (the CI check) and plot history.
- `paper_points`: the paper's published points (Clark et al. 2020, Tables 1 and 2) as data.

The submodules are imported on use; importing this package is cheap.
"""
