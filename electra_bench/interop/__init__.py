"""Interop with transformers: our encoder and heads under its names (`hf_names`), loading its BERT/ELECTRA
encoders (`hf_import`, stage 3 with training: evaluation reads it), and exporting our checkpoints
(`export`, stage 5 with reporting: the model card reads the run's scores and provenance)."""
