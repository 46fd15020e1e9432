"""From a run's stored scores to summary.json, one module per statement: what each checkpoint scores and
the curves (`points.py`), the headline (`headline.py`), the statistics (the Multi-Bootstrap: `bootstrap.py`
over what `bootstrap_inputs.py` reads, `confidence.py`), the crossover (`crossover.py`), the verdict
(`verdict.py`), what every summary keeps (`invariants.py`), the learning flags (`learning.py`), reference
points (`references.py`, `reference_spec.py`), the readings compared (`readings.py`), built and cached in
`summary.py`, its typed records in `records.py`. The lines people read from it: present/summary_text.py."""
