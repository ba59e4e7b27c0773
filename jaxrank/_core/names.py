"""jaxrank's metric names: ``"ndcg@10"``, ``"map"``, ``"mrr@10"`` (:func:`parse_metric`), read
from the metric table's names and aliases. No JAX: the TREC path parses names without it."""

from __future__ import annotations

import re

from jaxrank._core import table as _table

# What jaxrank.evaluate, jaxrank.numpy's entry points and MetricState compute when not told.
DEFAULT_METRICS = ("ndcg@10", "map", "mrr", "precision@10", "recall@10")


def parse_metric(name: str) -> tuple[str, int | None]:
  """``"ndcg@10"`` -> ``("ndcg", 10)``; ``"map"`` -> ``("average_precision", None)``.

  Example:
    >>> import jaxrank
    >>> jaxrank.parse_metric("mrr@10")
    ('reciprocal_rank', 10)
  """
  if not isinstance(name, str):
    raise TypeError(f"metric names must be strings, got {name!r}")
  match = re.fullmatch(r"\s*([A-Za-z_][A-Za-z_0-9]*)\s*(?:@\s*(\S+))?\s*", name)
  base = match.group(1).lower() if match else ""
  base = _table.ALIASES.get(base, base)
  if match is None or base not in _table.METRICS:
    known = ", ".join(list(_table.NAMES) + sorted(_table.ALIASES))
    raise ValueError(f"unknown metric {name!r}; known names (each optionally with @k): {known}")
  cut = match.group(2)
  if cut is None:
    return base, None
  if not _table.METRICS[base].cutoff:
    raise ValueError(f"metric {name!r}: {base} takes no cutoff (as trec_eval and ir_measures)")
  if not re.fullmatch(r"[0-9]+", cut) or int(cut) <= 0:
    raise ValueError(f"metric {name!r}: the cutoff after '@' must be a positive integer, "
                     f"got {cut!r}")
  return base, int(cut)
