"""Soft (differentiable) ranks and metrics: soft rank and sort operators and the soft metrics
built on the rank core's formulas."""
