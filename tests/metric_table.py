"""The tests' view of the metric table: metric names and the options each metric takes."""

from jaxrank import _metrics, _table

NAMES = list(_table.NAMES)
# Metrics whose larger values are better (mean_rank is a rank; rbp_residual an uncertainty).
HIGHER_IS_BETTER = [name for name in NAMES if name not in ("mean_rank", "rbp_residual")]


def options_for(name: str, options: dict) -> dict:
  """The subset of ``options`` that metric ``name`` takes (its signature's options)."""
  taken = _metrics.accepted(_table.METRICS[name])
  return {key: value for key, value in options.items() if key in taken}
