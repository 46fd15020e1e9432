"""Budgeted pre-training: plan a run from counted FLOPs, train to the budget, checkpoint, resume."""
