"""``jaxrank.numpy.evaluate``: scored lists, as arrays ``[..., n]`` or ragged lists of lists.

The input is checked and flattened here (one message per problem, naming the list and the
item); the metrics come from :mod:`jaxrank._host.kernels`: arrays whose scores float keys hold
exactly go straight through the dense kernel, anything else is flattened to ``(list, position,
score, label)`` columns for the counting kernel or the host ranker.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core import options as _options
from jaxrank._core.names import DEFAULT_METRICS
from jaxrank._host import kernels
from jaxrank.numpy import _inputs
from jaxrank.numpy._inputs import Result as _Result


def _numeric(name: str, arr: np.ndarray) -> np.ndarray:
  """A numeric array as float64, or int64/uint64 for integers (compared exactly)."""
  if arr.dtype.kind in "fb":
    return arr.astype(np.float64) if arr.dtype.kind == "f" else arr.astype(np.int64)
  if arr.dtype.kind in "iu":
    return arr.astype(np.uint64 if arr.dtype == np.uint64 else np.int64)
  if arr.dtype.kind == "O":
    flat = arr.reshape(-1)
    bad = next((i for i, v in enumerate(flat) if not _inputs.is_number(v) or not (
        -2**63 <= v < 2**64 if isinstance(v, int) else True)), None)
    if bad is None:  # numbers NumPy keeps as objects (e.g. fractions): compared as float64
      return arr.astype(np.float64)
    where = tuple(int(w) for w in np.unravel_index(bad, arr.shape)) if arr.ndim > 1 else bad
    raise TypeError(f"{name} must hold numbers, got {_inputs.describe(flat[bad])} at index {where}")
  raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}"
                  f"{' (strings are not parsed)' if arr.dtype.kind in 'US' else ''}")


def _rows(name: str, x: Any) -> list[np.ndarray]:
  if not isinstance(x, Sequence) or isinstance(x, (str, bytes)):
    raise TypeError(f"{name} must be an array or a list of lists, got {type(x).__name__}")
  rows = []
  for i, row in enumerate(x):
    if isinstance(row, (str, bytes, Mapping)) or not (
        isinstance(row, Sequence) or _inputs.is_array(row)):
      raise TypeError(f"{name}[{i}] must be a list of numbers, got {_inputs.describe(row)}")
    try:
      arr = np.asarray(row)
    except (TypeError, ValueError):
      arr = np.asarray(row, dtype=object)
    if arr.ndim != 1:
      raise ValueError(f"{name}[{i}] must be a flat list of numbers, got shape {arr.shape}")
    rows.append(_numeric(f"{name}[{i}]", arr))
  return rows


def _dense_flat(scores, labels, where):
  s = np.asarray(scores)
  if s.ndim < 1:
    raise ValueError(f"scores must have at least 1 dimension, got shape {s.shape}")
  s = _numeric("scores", s)
  try:
    lab = np.asarray(labels)
  except (TypeError, ValueError):
    lab = np.asarray(labels, dtype=object)
  if lab.shape != s.shape:
    raise ValueError(f"labels must have the shape of scores {s.shape}, got {lab.shape}")
  lab = _numeric("labels", lab).astype(np.float64)
  lead = s.shape[:-1]
  n, rows = s.shape[-1], math.prod(lead)
  if where is None:  # every item: no masks to build or apply
    pos = np.tile(np.arange(n), rows)
    return lead, np.repeat(np.arange(rows), n), pos, pos, s.reshape(-1), lab.reshape(-1)
  valid = np.asarray(where)
  if valid.shape != s.shape or valid.dtype != bool:
    raise ValueError(f"where must be a bool array of the shape of scores {s.shape}, got "
                     f"{valid.dtype} {valid.shape}")
  valid = valid.reshape(rows, n)
  lists, index = np.nonzero(valid)
  pos = (np.cumsum(valid, axis=1) - 1)[valid]
  return lead, lists, pos, index, s.reshape(rows, n)[valid], lab.reshape(rows, n)[valid]


def _as_flat(scores, labels, where):
  """(lead shape, list index, item position, column, score, label) of the valid items."""
  if scores is None or labels is None:
    name = "scores" if scores is None else "labels"
    raise TypeError(f"{name} must be an array or a list of lists, got None")
  dense: bool | int = _inputs.is_array(scores)  # int: the probe's size below, read as truth
  if not dense and isinstance(scores, (list, tuple)):
    try:
      probe = np.asarray(scores)  # [] is no lists (ragged), [0.5, 0.1] one list
      dense = probe.ndim >= 2 or probe.ndim == 1 and probe.size and probe.dtype != object
    except (TypeError, ValueError):  # ragged
      dense = False
  if dense:
    return _dense_flat(scores, labels, where)
  if where is not None:
    raise ValueError("where is only for array input; ragged lists need no padding mask")
  srows, lrows = _rows("scores", scores), _rows("labels", labels)
  if len(srows) != len(lrows):
    raise ValueError(f"scores has {len(srows)} lists but labels has {len(lrows)}")
  for i, (a, b) in enumerate(zip(srows, lrows)):
    if a.size != b.size:
      raise ValueError(f"list {i}: scores has {a.size} items but labels has {b.size}")
  sizes = np.array([r.size for r in srows], np.int64)
  lists = np.repeat(np.arange(len(srows)), sizes)
  pos = np.arange(lists.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
  def cat(rows):
    return np.concatenate(rows) if rows else np.zeros(0)

  return (len(srows),), lists, pos, pos, cat(srows), cat(lrows).astype(np.float64)


def _rectangular_values(scores, labels, where, *, specs, options):
  """Metrics of ``[..., n]`` NumPy/JAX arrays of float or int scores whose order float32 or
  float64 keys hold exactly, straight through the dense kernel (no flattening); None sends any
  other input (lists, objects, huge ints, subnormals, bad labels...) to the general path."""
  if not (_inputs.is_array(scores) and _inputs.is_array(labels) and np.ndim(scores) >= 1
          and np.shape(labels) == np.shape(scores) and np.size(scores)):
    return None
  s, y = np.asarray(scores), np.asarray(labels)
  if s.dtype.kind not in "fiu" or y.dtype.kind not in "fiub" or s.dtype.itemsize > 8:
    return None
  valid = None
  if where is not None:
    valid = np.asarray(where)
    if valid.shape != s.shape or valid.dtype != bool:
      return None
  n = s.shape[-1]
  s, y = s.reshape(-1, n), y.reshape(-1, n)
  if s.dtype.kind == "f":
    if _any_subnormal(s):  # XLA may flush them
      return None
  elif s.dtype.itemsize > 2:  # ints: exact as float64 below 2**53, as float32 below 2**24
    if s.min() < -2**53 or s.max() > 2**53:
      return None
    s = s.astype(np.float32 if s.min() >= -2**24 and s.max() <= 2**24 else np.float64)
  if y.dtype.kind == "f" and not np.all((y >= 0) & (y <= _checks.MAX_GRADE)):
    return None  # (NaN too) the general path names the list and the item
  if y.dtype.kind in "iu" and (y.min() < 0 or y.max() > _checks.MAX_GRADE):
    return None
  return kernels.dense_values(s, y, None if valid is None else valid.reshape(-1, n), specs=specs,
                              options=options)


def _any_subnormal(x: np.ndarray, step: int = 1 << 16) -> bool:
  """Whether the float array ``x`` holds a subnormal number: in blocks that stay in the cache
  (7 against 24 ms for the whole array at once, 10,000 x 1,000 float32)."""
  tiny = np.finfo(x.dtype).tiny
  flat = x.reshape(-1)
  magnitude = np.empty(min(step, flat.size), x.dtype)
  for i in range(0, flat.size, step):
    a = np.abs(flat[i:i + step], out=magnitude[:min(step, flat.size - i)])
    if np.count_nonzero(a < tiny) != np.count_nonzero(a == 0):
      return True
  return False


def _check_grades(lead, lists, index, grades, what: str) -> None:
  bad = np.flatnonzero(np.isnan(grades) | (grades < 0) | (grades > _checks.MAX_GRADE))
  if bad.size:
    i = bad[0]
    where = int(lists[i]) if len(lead) <= 1 else tuple(
        int(v) for v in np.unravel_index(int(lists[i]), lead))
    raise ValueError(f"{what}: list {where}, item {int(index[i])}: grades must be >= 0 "
                     f"(0 = not relevant), finite and at most {_checks.MAX_GRADE:g} (float32), not "
                     f"NaN; got {grades[i]:g}")


@_options.takes(_options.FACE_OPTIONS, first=("ties",))
def evaluate(scores: ArrayLike | Sequence[Sequence[float]],
             labels: ArrayLike | Sequence[Sequence[float]],
             metrics: Sequence[str] | str = DEFAULT_METRICS, *, where: ArrayLike | None = None,
             reduce: str | None = None, **options: Any) -> _Result:
  """Metrics of scored lists: arrays ``[..., n]`` or ragged lists of lists of numbers.

  Same names and options as :func:`jaxrank.evaluate`; ``where`` masks padding of array input.
  Scores are compared on the host exactly as given (floats as float64, integers of any width
  exactly), whereas :func:`jaxrank.evaluate` compares them in the array's dtype: two scores
  closer than float32's resolution tie there (float32 input) but not here. Values are float64.
  ``ties="trec"`` needs doc ids: use :func:`jaxrank.numpy.evaluate_run`.

  Cost: O(n) per list and relevant item while a list has few relevant items (up to 1,024; the
  counting kernel), O(n log r) beyond (ranks found on the host), never quadratic in the number
  ``r`` of relevant items; one long list costs what it costs alone.

  Returns:
    ``{metric: values}``: NumPy arrays of the leading shape (one value per list), or Python
    floats with ``reduce="mean"``.

  Example:
    >>> from jaxrank import numpy as jrn
    >>> out = jrn.evaluate([[0.9, 0.8, 0.1], [0.2, 0.7]], [[0, 1, 1], [1, 0]], ["map", "mrr"])
    >>> {k: v.round(4).tolist() for k, v in out.items()}
    {'map': [0.5833, 0.5], 'mrr': [0.5, 0.5]}
  """
  _inputs.check_reduce(reduce)
  ties, empty = options["ties"], options["empty"]
  if ties not in ("average", "optimistic", "pessimistic", "first"):
    hint = " (the doc-id order needs doc ids: use evaluate_run)" if ties == "trec" else ""
    raise ValueError("ties must be one of ['average', 'optimistic', 'pessimistic', 'first'] for "
                     f"scores and labels, got {ties!r}{hint}")
  names, specs = _inputs.metric_specs(metrics)
  options = _inputs.make_options(**options)
  values = _rectangular_values(scores, labels, where, specs=specs, options=options)
  if values is not None:
    lead = np.shape(scores)[:-1]
    return {name: _inputs.reduced(v.reshape(lead), reduce, empty) for name, v in zip(names, values)}
  lead, lists, pos, index, s, y = _as_flat(scores, labels, where)
  _check_grades(lead, lists, index, y, "labels")
  values = kernels.scored_values(math.prod(lead), lists, pos, s, y, specs=specs, options=options,
                          ties=ties)
  return {name: _inputs.reduced(v.reshape(lead), reduce, empty) for name, v in zip(names, values)}
