"""Experiments that put the stages together: `compare` (both objectives, one budget, every checkpoint
scored, one report)."""
