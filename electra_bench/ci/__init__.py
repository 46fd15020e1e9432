"""Beside the flow, for CI: a run checked against a committed baseline (`regression.py`) and the history of
CI runs over commits (`history_store.py`, `history_trend.py`, `history_plot.py`)."""
