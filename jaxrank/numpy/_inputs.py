"""Input handling shared by :mod:`jaxrank.numpy`'s entry points: metric names and options,
``reduce``, and the checks and one-line descriptions of values in error messages."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from jaxrank._core import names as _names
from jaxrank._core import options as _options
from jaxrank._trec import table as _trec

Result = dict[str, Any]  # {metric: values} (arrays, {key: float} dicts or floats)


def make_options(ties: str, **kw):
  """The rank core's options; trec_eval's ordered policies (``trec``) read as ``first``."""
  return _options.make_options(ties="first" if ties in _trec.ORDERED else ties, **kw)


def metric_names(metrics) -> list[str]:
  """One name or a non-empty sequence of names, as a list."""
  metrics = [metrics] if isinstance(metrics, str) else list(metrics)
  if not metrics:
    raise ValueError("metrics must name at least one metric, got an empty list")
  return metrics


def metric_specs(metrics) -> tuple[list[str], tuple]:
  """``(names, specs)`` of one name or a non-empty list of jaxrank's metric names."""
  metrics = metric_names(metrics)
  return metrics, tuple(_names.parse_metric(m) for m in metrics)


def check_reduce(reduce):
  """``reduce`` is None or ``"mean"``."""
  if reduce not in (None, "mean"):
    raise ValueError(f"reduce must be None or 'mean', got {reduce!r}")


def reduced(values: np.ndarray, reduce, empty: str):
  """``values`` as they are, or their mean (``reduce="mean"``; NaN skipped lists with
  ``empty="skip"``)."""
  if reduce is None:
    return values
  if values.dtype.kind not in "biuf":
    raise ValueError("reduce='mean' cannot average a measure whose values are not numbers "
                     "(relstring): ask for it with reduce=None")
  if values.size == 0:
    raise ValueError("reduce='mean' has nothing to average: the input holds no lists")
  if empty == "skip":  # NaN marks the skipped lists; none left gives NaN, without a warning
    kept = values[~np.isnan(values)]
    return float(np.mean(kept)) if kept.size else math.nan
  return float(np.mean(values))


def describe(value: Any) -> str:
  """A value and its type for an error message, cut short."""
  text = repr(value)
  text = text if len(text) <= 60 else text[:57] + "..."
  kind = type(value).__name__
  if isinstance(value, int) and not isinstance(value, bool) and not (
      -2**63 <= value < 2**64):
    kind = "an int beyond 64 bits"
  return f"{text} ({kind})"


def is_number(value: Any) -> bool:
  """An int or float (NumPy's too), not a bool."""
  return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
      value, (bool, np.bool_))


def is_array(x: Any) -> bool:
  """NumPy and JAX arrays (anything with ``__array__`` that is not a list or tuple)."""
  return hasattr(x, "__array__") and not isinstance(x, (list, tuple, str, bytes))


def keyed(keys, values: np.ndarray, reduce, empty):
  """Values reduced, or as ``{key: float}`` for input keyed by user or query."""
  if reduce is not None:
    return reduced(values, reduce, empty)
  return values if keys is None else dict(zip(keys, values.tolist()))
