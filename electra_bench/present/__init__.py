"""What people read and take away: the Table 1 report (`report.py`), the Table 5 and generator-sweep tables,
the engine commands' tables, the figures (`plots.py`), TensorBoard curves, the paper's points, and a
checkpoint exported as a transformers folder with its model card (`export.py`)."""
