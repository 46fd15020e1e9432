"""electra-bench: MLM (BERT) vs RTD (ELECTRA) at equal pre-training compute."""

__version__ = "0.1.0"
