"""Interop with transformers, below scoring: our encoder and heads under its names (`hf_names`) and loading
its BERT/ELECTRA encoders (`hf_import`). Exporting our checkpoints as its folders is present/export.py."""
