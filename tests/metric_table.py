"""The tests' view of the metric table: metric names and the options each metric takes."""

from jaxrank._core import metrics as _metrics
from jaxrank._core import table as _table

NAMES = list(_table.NAMES)
# Metrics whose larger values are better (mean_rank is a rank; rbp_residual an uncertainty).
HIGHER_IS_BETTER = [name for name in NAMES if name not in ("mean_rank", "rbp_residual")]


# Metrics that read judged non-relevant items (bpref, infap, judged): in the sparse and ranked-ids
# forms only the listed ids are judged, so their references need the unlisted items marked.
JUDGMENT = [name for name in NAMES if "judged" in _table.METRICS[name].options]


def options_for(name: str, options: dict) -> dict:
  """The subset of ``options`` that metric ``name`` takes (its signature's options; ``k`` only
  for metrics with a cutoff)."""
  taken = _metrics.accepted(_table.METRICS[name])
  if not _table.METRICS[name].cutoff:
    taken = [key for key in taken if key != "k"]
  return {key: value for key, value in options.items() if key in taken}


def name_at(name: str, k) -> str:
  """``evaluate``'s name of metric ``name`` at cutoff ``k`` (no ``@k`` for a metric without
  cutoffs, whose value does not depend on k)."""
  return name if k is None or not _table.METRICS[name].cutoff else f"{name}@{k}"
