"""What a run leaves behind and how it is read: the run store, the summary, reports, plots, the CI
regression check and history.

- `results`: the run directory store (`results/<run_id>/`, layout in layout.py), scores in long format.
- `provenance`: what produced a run (code, versions, hardware, seeds, data hashes), without the hostname.
- `learning`: the learning diagnostics of a run's pre-training logs, flagged against thresholds.
- `summary`: per checkpoint medians, the aggregate score, the compute headline and the noise verdict.
- `report`, `plots`, `tables`: the paper's Table 1 layout, the figures, the engine commands' tables.
- `regression`: compare a run with a committed baseline (the CI check) and plot history.
- `paper_points`: the paper's published points (Clark et al. 2020, Tables 1 and 2) as data.
"""
