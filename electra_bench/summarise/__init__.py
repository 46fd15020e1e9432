"""From a run's stored scores to summary.json: per-checkpoint points and the headline (`summary.py`), the
statistics (the Multi-Bootstrap: `bootstrap.py`, `confidence.py`), the learning flags (`learning.py`),
reference points (`references.py`, `reference_spec.py`) and the summary's typed records (`records.py`)."""
