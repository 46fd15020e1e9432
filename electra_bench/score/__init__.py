"""From a pre-trained encoder to downstream scores.

- `finetune`: the protocols (full fine-tuning, linear probe, few-shot) on one task and seed.
- `scoring`: one encoder or checkpoint on a set of tasks and seeds (the `finetune` command, compare's unit).
- `metrics`: per-task metrics (scikit-learn / scipy), on the paper's 0-100 scale.
- `glue_score`: the GLUE score in the ELECTRA paper's convention and the leaderboard's; `suite_score`
  for other task sets.
"""
