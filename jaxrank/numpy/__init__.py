"""``jaxrank.numpy``: the same metrics and options, for NumPy arrays, Python lists and dicts.

Three entry points, one per input shape, all returning NumPy arrays (one value per list), Python
floats (``reduce="mean"``), or, where the input was keyed by user/query, ``{key: value}`` dicts:

* :func:`evaluate` -- scores and labels, as arrays ``[..., n]`` or ragged lists of lists;
* :func:`evaluate_ranked` -- a ranked list of item ids per user, and per user the relevant ids
  (a list or set, grade 1) or a ``{id: grade}`` dict; lists, 2-D arrays padded with ``-1``
  (NumPy or JAX, e.g. :func:`jaxrank.top_k_ids`' output) or ``{user: ...}`` dicts;
* :func:`evaluate_run` -- pytrec_eval-style ``{qid: {docid: score}}`` and ``{qid: {docid:
  grade}}`` dicts (or :class:`jaxrank.io.Run`/:class:`jaxrank.io.Qrels`), trec_eval's way: ties
  broken by doc id descending, measures by jaxrank or trec_eval names (``"P_10"``, ``"bpref"``).

Metric names and options are those of :func:`jaxrank.evaluate`; values are float64. Inputs are
checked eagerly here, with one-line messages naming the argument, the list, user or query and the
value. Scored lists with few relevant items go to the rank core's counting kernel; lists with
many get their ranks on the host in O(n log r); ranked ids go straight to the rank core. Lists
are padded on the host in calls of few shapes (every dimension a power of two), so a stream of
differently sized batches compiles a handful of times and one long list costs what it costs
alone; padding never changes a result.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np
from numpy.typing import ArrayLike

from jaxrank import io
from jaxrank._core import checks as _checks
from jaxrank._trec import chunked as _chunked
from jaxrank._core import compute as _compute
from jaxrank._host import ranker as _hostrank
from jaxrank._core import irnames as _irnames
from jaxrank._trec import irnames as _runnames
from jaxrank._core import options as _options
from jaxrank._core import forms as _forms
from jaxrank._core import metrics as _metrics
from jaxrank._core import ranks as _ranks
from jaxrank._trec import evaluate as _trec

__all__ = ["DEFAULT_METRICS", "evaluate", "evaluate_ranked", "evaluate_run"]

DEFAULT_METRICS = _compute.DEFAULT_METRICS
_Result = dict[str, Any]


def _make_options(ties: str, **kw):
  return _compute.make_options(ties="first" if ties in _trec.ORDERED else ties, **kw)


def _metric_specs(metrics) -> tuple[list[str], tuple]:
  if isinstance(metrics, str):
    metrics = [metrics]
  metrics = list(metrics)
  if not metrics:
    raise ValueError("metrics must name at least one metric, got an empty list")
  return metrics, tuple(_metrics.parse_metric(m) for m in metrics)


def _check_reduce(reduce):
  if reduce not in (None, "mean"):
    raise ValueError(f"reduce must be None or 'mean', got {reduce!r}")


def _reduce(values: np.ndarray, reduce, empty: str):
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


def _describe(value: Any) -> str:
  """A value and its type for an error message, cut short."""
  text = repr(value)
  text = text if len(text) <= 60 else text[:57] + "..."
  kind = type(value).__name__
  if isinstance(value, int) and not isinstance(value, bool) and not (
      -2**63 <= value < 2**64):
    kind = "an int beyond 64 bits"
  return f"{text} ({kind})"


def _is_number(value: Any) -> bool:
  return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
      value, (bool, np.bool_))


def _is_array(x: Any) -> bool:
  """NumPy and JAX arrays (anything with ``__array__`` that is not a list or tuple)."""
  return hasattr(x, "__array__") and not isinstance(x, (list, tuple, str, bytes))


# ----------------------------------------------------------------------------------------------
# Padded calls of few shapes, and the two ways to the ranks of the relevant items.
#
# The counting kernel compares every item of a list with each of its relevant items: O(n r),
# fastest while r is small. Lists with more than _KERNEL_MAX_SLOTS relevant items get their ranks
# on the host instead, in O(n log r) (measured on a 2-core CPU: equal cost near 1,000 relevant
# items in a list of 10^5 to 10^6 items). Either way the metrics then run on the rank core.

_KERNEL_MAX_SLOTS = 1024
_ITEMS_PER_CALL = 1 << 22  # padded items of one kernel call (the memory bound of a call)
_MIN_ITEMS_PER_CALL = 1 << 12  # small calls are padded up to this: few distinct shapes


def _pow2(x: np.ndarray, minimum: int) -> np.ndarray:
  """Elementwise :func:`jaxrank._host.ranker.bucket`: the next power of two >= ``max(x, minimum)``."""
  x = np.maximum(np.asarray(x, np.int64), minimum)
  return np.left_shift(1, np.frexp(x - 1)[1]).astype(np.int64)


def _batches(width: np.ndarray, slots: np.ndarray, *, budget: int, floor: int):
  """Lists grouped into padded calls of few distinct shapes.

  ``width[i]`` and ``slots[i]`` are list ``i``'s padded numbers of items and of relevant slots
  (powers of two); its work is ``width * slots`` and its memory ``max(width, slots)``. All lists
  form one group, padded to the largest shape, unless that would more than quadruple the work
  and cost more than ``2**26`` element steps (some 50 ms); then each shape is a group. A group
  is cut into calls of at most ``budget`` padded elements whose rows are a power of two, at
  least ``floor`` elements and at most a quarter padding where the floor allows: one long list
  is one row, while a stream of small batches compiles a handful of shapes.

  Returns ``(order, calls)``: the lists in call order and ``(start, stop, rows, width, slots)``
  for each call, over ``order``.
  """
  n = width.size
  work = width * slots
  padded = n * int(width.max()) * int(slots.max())
  if padded <= max(4 * int(work.sum()), 1 << 26):
    order, bounds = np.arange(n), np.array([0, n])
  else:
    key = (width << 32) | slots
    order = np.argsort(key, kind="stable")
    bounds = np.r_[0, np.flatnonzero(np.diff(key[order])) + 1, n]
  calls = []
  for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
    group = order[a:b]
    largest = int(np.maximum(width[group], slots[group]).max())
    most, least = max(1, budget // largest), max(1, floor // largest)
    lo = a
    while lo < b:
      rows = min(most, _hostrank.bucket(b - lo, least))
      if rows // 2 >= least and b - lo <= rows * 3 // 4:  # > 1/4 padding: a half call first
        rows //= 2
      hi = min(b, lo + rows)
      w, s = int(width[order[lo:hi]].max()), int(slots[order[lo:hi]].max())
      calls.append((lo, hi, rows, w, s))
      lo = hi
  return order, calls


def _in_call_order(order: np.ndarray, lists: np.ndarray, *columns: np.ndarray):
  """Renumbers lists by their place in ``order`` and sorts the items by it (stable)."""
  rank = np.empty(order.size, np.int64)
  rank[order] = np.arange(order.size)
  renumbered = rank[lists]
  if renumbered.size and np.any(renumbered[1:] < renumbered[:-1]):
    perm = np.argsort(renumbered, kind="stable")
    return (renumbered[perm], *(c[perm] for c in columns))
  return (renumbered, *columns)


def _kernel_keys(s: np.ndarray) -> np.ndarray:
  """Order keys for the kernel: float32 or float64 scores as they are, else dense ranks.

  Float32 where that is exact (half the memory), float64 otherwise; subnormals get dense ranks
  (XLA may flush them to zero), as do integers beyond 2**24. NaN ranks last. Dense ranks are
  float32 while below 2**24 (exact), so they share compilations with float32 scores.
  """
  if s.dtype.kind == "f":
    with np.errstate(over="ignore"):
      s32 = s.astype(np.float32)
    tiny = (s32 != 0) & (np.abs(s32) < np.finfo(np.float32).tiny)
    if np.array_equal(s32, s, equal_nan=True) and not tiny.any():
      return s32
    if not np.any((s != 0) & (np.abs(s) < np.finfo(np.float64).tiny)):
      return s  # float64 keys (the kernel runs in x64 mode): no host sort
    nan = np.isnan(s)
    uniq, inverse = np.unique(np.where(nan, -np.inf, s), return_inverse=True)
    ranks = np.where(nan, -1, inverse.reshape(-1))
  elif s.size == 0 or (s.min() >= -2**24 and s.max() <= 2**24):
    return s.astype(np.float32)
  else:
    uniq, inverse = np.unique(s, return_inverse=True)
    ranks = inverse.reshape(-1)
  return ranks.astype(np.float32 if uniq.size < 2**24 else np.int32)


def _kernel_values(length, lists, pos, s, rel, grade, *, specs, options, ties):
  """Metrics of lists with few relevant items, ranked by the counting kernel.

  Items are ``(lists, pos, s)`` (position ``pos`` in list order); ``rel`` marks the relevant
  ones, of grade ``grade``. ``ties="first"`` breaks ties by position.
  """
  n = length.size
  m = np.bincount(lists[rel], minlength=n)
  order, calls = _batches(_pow2(length, 16), _pow2(m, 8), budget=_ITEMS_PER_CALL,
                          floor=_MIN_ITEMS_PER_CALL)
  lists, pos, keys, rel, grade = _in_call_order(order, lists, pos, _kernel_keys(s), rel, grade)
  first = np.searchsorted(lists, np.arange(n + 1))
  rel_list, rel_pos, rel_grade = lists[rel], pos[rel], grade[rel]
  rel_first = np.searchsorted(rel_list, np.arange(n + 1))
  out = [np.empty(n) for _ in specs]
  for lo, hi, rows, width, slots in calls:
    a, b = first[lo], first[hi]
    k = np.zeros((rows, width), keys.dtype)
    valid = np.zeros((rows, width), bool)
    k[lists[a:b] - lo, pos[a:b]] = keys[a:b]
    valid[lists[a:b] - lo, pos[a:b]] = True
    a, b = rel_first[lo], rel_first[hi]
    row, col = rel_list[a:b] - lo, np.arange(a, b) - rel_first[rel_list[a:b]]
    ids = np.full((rows, slots), -1, np.int32)
    grades = np.zeros((rows, slots), np.float32)
    ids[row, col], grades[row, col] = rel_pos[a:b], rel_grade[a:b]
    with jax.enable_x64(True):  # float64 formulas
      values = _count_kernel(k, valid, ids, grades, specs=specs, options=options,
                             ties="first" if ties == "first" else "average")
      for acc, v in zip(out, values):
        acc[order[lo:hi]] = np.asarray(v, np.float64)[:hi - lo]
  return out


@functools.partial(jax.jit, static_argnames=("specs", "options", "ties"))
def _count_kernel(keys, valid, ids, grades, *, specs, options, ties):
  """The metrics of padded lists in the sparse form, one compiled call per shape."""
  ranks = _forms.from_sparse(keys, ids, grades, valid, ties=ties, method="count")
  return _compute.compute(ranks, None, specs, options)


def _host_ranks(lists, s, rel, grade, ties: str) -> tuple[np.ndarray, np.ndarray]:
  r"""The ranks ``(lo, hi)`` of the relevant items, on the host in O(n log r).

  Items are ``(lists, s)``, grouped by list in input order. With ``V`` the distinct relevant
  scores, each item gets the code of its place among ``V`` (NaN lowest, then below, equal to or
  between them), so :math:`lo - 1 = |\{j: s_j > s_i\}|` and :math:`hi = |\{j: s_j \ge s_i\}|`
  are sums of one histogram over (list, code) pairs: dense when it is small, else over the
  relevant pairs only. ``ties`` other than ``"average"`` resolve each tie group as the kernel
  and :func:`jaxrank._core.formulas.positions` do (input order; or relevant items first, higher
  grades first; or last, lower grades first), returning ``lo == hi``.
  """
  at = np.flatnonzero(rel)
  if at.size == 0:
    return np.zeros(0, np.int64), np.zeros(0, np.int64)
  n_lists = int(lists[-1]) + 1
  nan = np.isnan(s) if s.dtype.kind == "f" else np.zeros(s.size, bool)
  values = np.unique(s[at[~nan[at]]])
  i = np.searchsorted(values, s)
  equal = values[np.minimum(i, max(values.size - 1, 0))] == s if values.size else nan & False
  width = 2 * values.size + 2
  pair = lists * width + np.where(nan, 0, 2 * i + equal + 1)
  if n_lists * width <= 2 * s.size + (1 << 16):  # a dense histogram over (list, code)
    hist = np.bincount(pair, minlength=n_lists * width)
    at_or_above = np.cumsum(hist.reshape(n_lists, width)[:, ::-1], axis=1)[:, ::-1]
    ge = at_or_above.reshape(-1)[pair[at]]
    gt = ge - hist[pair[at]]
    group, n_groups = pair, n_lists * width
    tied = np.bincount(pair[at], minlength=n_groups)[pair] > 0
  else:  # bins over the relevant pairs: an item is above pair p iff p < its pair
    pairs = np.unique(pair[at])
    group = np.searchsorted(pairs, pair)  # relevant pairs below each item's pair
    n_groups = pairs.size
    tied = pairs[np.minimum(group, n_groups - 1)] == pair
    bins = n_groups + n_lists + 1  # one bin per (list, index): lists never share a bin
    above = np.cumsum(np.bincount(group + lists, minlength=bins))
    at_or_above = np.cumsum(np.bincount(group + tied + lists, minlength=bins))
    rl = lists[at]
    end = np.searchsorted(pairs, (rl + 1) * width) + rl
    gt = above[end] - above[group[at] + rl]
    ge = at_or_above[end] - at_or_above[group[at] + rl]
  if ties == "average":
    return gt + 1, ge
  if ties == "first":  # tied items ahead: those of the same group earlier in input order
    ahead = np.zeros(s.size, np.int64)
    ahead[tied] = _hostrank.within_group(group[tied], n_groups)
    pos = gt + 1 + ahead[at]
    return pos, pos
  j = group[at]
  order = np.lexsort((-at if ties == "pessimistic" else at, -grade[at], j))
  k = np.empty(at.size, np.int64)
  k[order] = np.arange(at.size) - np.searchsorted(j[order], j[order])
  pos = gt + 1 + k if ties == "optimistic" else ge - k
  return pos, pos


def _slot_values(num_items, slot_list, lo, hi, grade, *, resolved: bool, specs, options):
  """Metrics of lists from the ranks of their relevant items (``lo <= 0``: not retrieved), by
  the trec path's scorer (:func:`jaxrank._host.ranker.score_ranks`: canonical slot order, float64)."""
  num_items = np.asarray(num_items, np.int64)
  return list(_hostrank.score_ranks(num_items.size, num_items, num_items, slot_list,
                                np.maximum(lo, 0), np.maximum(hi, 0), grade, specs, options,
                                resolved=resolved))


def _scored_values(n_lists, lists, pos, s, y, *, specs, options, ties):
  """Metrics of scored lists: the kernel for lists with few relevant items, else host ranks."""
  length = np.bincount(lists, minlength=n_lists)
  rel = y > 0
  many = np.bincount(lists[rel], minlength=n_lists) > _KERNEL_MAX_SLOTS
  out = [np.zeros(n_lists) for _ in specs]
  for part, on_host in ((~many, False), (many, True)):
    if not part.any():
      continue
    item = part[lists]
    sub = (lists, pos, s, rel, y) if part.all() else (
        (np.cumsum(part) - 1)[lists[item]], pos[item], s[item], rel[item], y[item])
    if on_host:
      lo, hi = _host_ranks(sub[0], sub[2], sub[3], sub[4], ties)
      values = _slot_values(length[part], sub[0][sub[3]], lo, hi, sub[4][sub[3]],
                            resolved=ties != "average", specs=specs, options=options)
    else:
      values = _kernel_values(length[part], *sub, specs=specs, options=options, ties=ties)
    for acc, v in zip(out, values):
      acc[part] = v
  return out


# ----------------------------------------------------------------------------------------------
# Scores and labels.



def _numeric(name: str, arr: np.ndarray) -> np.ndarray:
  """A numeric array as float64, or int64/uint64 for integers (compared exactly)."""
  if arr.dtype.kind in "fb":
    return arr.astype(np.float64) if arr.dtype.kind == "f" else arr.astype(np.int64)
  if arr.dtype.kind in "iu":
    return arr.astype(np.uint64 if arr.dtype == np.uint64 else np.int64)
  if arr.dtype.kind == "O":
    flat = arr.reshape(-1)
    bad = next((i for i, v in enumerate(flat) if not _is_number(v) or not (
        -2**63 <= v < 2**64 if isinstance(v, int) else True)), None)
    if bad is None:  # numbers NumPy keeps as objects (e.g. fractions): compared as float64
      return arr.astype(np.float64)
    where = np.unravel_index(bad, arr.shape) if arr.ndim > 1 else bad
    if arr.ndim > 1:
      where = tuple(int(w) for w in where)
    raise TypeError(f"{name} must hold numbers, got {_describe(flat[bad])} at index {where}")
  raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}"
                  f"{' (strings are not parsed)' if arr.dtype.kind in 'US' else ''}")


def _rows(name: str, x: Any) -> list[np.ndarray]:
  if not isinstance(x, Sequence) or isinstance(x, (str, bytes)):
    raise TypeError(f"{name} must be an array or a list of lists, got {type(x).__name__}")
  rows = []
  for i, row in enumerate(x):
    if isinstance(row, (str, bytes, Mapping)) or not (
        isinstance(row, Sequence) or _is_array(row)):
      raise TypeError(f"{name}[{i}] must be a list of numbers, got {_describe(row)}")
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
  dense = _is_array(scores)
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
  cat = (lambda rows: np.concatenate(rows) if rows else np.zeros(0))
  return (len(srows),), lists, pos, pos, cat(srows), cat(lrows).astype(np.float64)


def _rectangular_values(scores, labels, where, *, specs, options):
  """Metrics of ``[..., n]`` NumPy/JAX arrays of float or int scores whose order float32 or
  float64 keys hold exactly, straight through the dense kernel (no flattening); None sends any
  other input (lists, objects, huge ints, subnormals, bad labels...) to the general path."""
  if not (_is_array(scores) and _is_array(labels) and np.ndim(scores) >= 1
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
    tiny = np.finfo(s.dtype).tiny
    if np.any((s != 0) & (np.abs(s) < tiny)):  # subnormals: XLA may flush them
      return None
  elif s.dtype.itemsize > 2:  # ints: exact as float64 below 2**53, as float32 below 2**24
    if s.min() < -2**53 or s.max() > 2**53:
      return None
    s = s.astype(np.float32 if s.min() >= -2**24 and s.max() <= 2**24 else np.float64)
  if y.dtype.kind == "f" and not np.all((y >= 0) & (y <= _checks.MAX_GRADE)):
    return None  # (NaN too) the general path names the list and the item
  if y.dtype.kind in "iu" and (y.min() < 0 or y.max() > _checks.MAX_GRADE):
    return None
  positive = y > 0 if valid is None else (y > 0) & valid.reshape(-1, n)
  most = int(np.count_nonzero(positive, axis=-1).max())
  if most > _KERNEL_MAX_SLOTS:  # many relevant items: host ranks in O(n log r) are faster
    return None
  m = _ranks.bucket(max(most, 8), n)
  rows = s.shape[0]
  outs: list[list[np.ndarray]] = [[] for _ in specs]
  for a, b, size in _hostrank.row_calls(rows, max(1, _ITEMS_PER_CALL // max(n, m * 32))):
    pad = ((0, size - (b - a)), (0, 0))
    # Padding rows (no relevant item) are cut from the output: without `where` no mask is
    # needed, and unmasked float32 lists take the rank core's fastest cut path.
    mask = None if valid is None else np.pad(valid.reshape(-1, n)[a:b], pad)
    with jax.enable_x64(True):  # float64 formulas, as on every NumPy path
      values = _dense_kernel(np.pad(s[a:b], pad), np.pad(y[a:b], pad), mask,
                             specs=specs, options=options, m=min(m, n))
      for acc, v in zip(outs, values):
        acc.append(np.asarray(v, np.float64)[:b - a])
  return [np.concatenate(acc) for acc in outs]


@functools.partial(jax.jit, static_argnames=("specs", "options", "m"))
def _dense_kernel(scores, labels, valid, *, specs, options, m):
  """The metrics of padded dense lists (padding rows hold no relevant item and are cut from the
  output; ``valid`` is None or the mask, False on padding rows), one compiled call per shape:
  the rank core's dense entry point (ranks and formulas fused, cut at the largest cutoff)."""
  return _compute.compute(scores, labels, specs, options, where=valid, max_relevant=m)


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
  ``ties="trec"`` needs doc ids: use :func:`evaluate_run`.

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
  _check_reduce(reduce)
  ties, empty = options["ties"], options["empty"]
  if ties not in ("average", "optimistic", "pessimistic", "first"):
    hint = " (the doc-id order needs doc ids: use evaluate_run)" if ties == "trec" else ""
    raise ValueError("ties must be one of ['average', 'optimistic', 'pessimistic', 'first'] for "
                     f"scores and labels, got {ties!r}{hint}")
  names, specs = _metric_specs(metrics)
  options = _make_options(**options)
  values = _rectangular_values(scores, labels, where, specs=specs, options=options)
  if values is not None:
    lead = np.shape(scores)[:-1]
    return {name: _reduce(v.reshape(lead), reduce, empty) for name, v in zip(names, values)}
  lead, lists, pos, index, s, y = _as_flat(scores, labels, where)
  _check_grades(lead, lists, index, y, "labels")
  values = _scored_values(math.prod(lead), lists, pos, s, y, specs=specs, options=options,
                          ties=ties)
  return {name: _reduce(v.reshape(lead), reduce, empty) for name, v in zip(names, values)}


# ----------------------------------------------------------------------------------------------
# Ranked ids and relevant ids.


def _label(keys, i):
  return f"user {keys[i]!r}" if keys is not None else f"user {i}"


def _some(keys) -> str:
  keys = list(keys)
  if not keys:
    return "none"
  return ", ".join(repr(k) for k in keys[:3]) + (f" and {len(keys) - 3} more"
                                                 if len(keys) > 3 else "")


def _table(name: str, x: Any) -> np.ndarray | list:
  """One side of the input without keys: a 2-D array, or a list with an entry per user."""
  if _is_array(x):
    arr = np.asarray(x)
    if arr.ndim == 2:
      return arr
    if arr.ndim == 1 and arr.dtype == object:
      return list(arr)
    raise ValueError(f"{name} as an array must be 2-D (users x items, padded with -1), got "
                     f"shape {arr.shape}")
  if isinstance(x, (str, bytes)) or not isinstance(x, Sequence):
    raise TypeError(f"{name} must be a list with one entry per user, a 2-D array of ids "
                    f"padded with -1, or a dict keyed by user; got {type(x).__name__}")
  return list(x)


def _users(recommended, relevant, relevant_grades):
  """(keys or None, recommended table, relevant table, grades table), aligned user by user."""
  keyed = isinstance(recommended, Mapping) or isinstance(relevant, Mapping)
  if keyed:
    if not (isinstance(recommended, Mapping) and isinstance(relevant, Mapping)):
      raise TypeError("recommended and relevant must both be dicts keyed by user, or both "
                      "lists or arrays; got "
                      f"{type(recommended).__name__} and {type(relevant).__name__}")
    if relevant_grades is not None:
      raise TypeError("relevant_grades is for relevant ids given as a list or array; with "
                      "dicts give the grades as {id: grade}")
    keys = list(dict.fromkeys(itertools.chain(recommended, relevant)))
    if not keys:
      raise ValueError("recommended and relevant hold no users: nothing to evaluate")
    if recommended.keys().isdisjoint(relevant.keys()):
      raise ValueError(f"recommended and relevant share no user: recommended has "
                       f"{_some(recommended)}; relevant has {_some(relevant)}")
    return keys, [recommended.get(k, ()) for k in keys], [relevant.get(k, ()) for k in keys], None
  rec, rel = _table("recommended", recommended), _table("relevant", relevant)
  if len(rec) != len(rel):
    raise ValueError(f"recommended has {len(rec)} users but relevant has {len(rel)}")
  if len(rec) == 0:
    raise ValueError("recommended and relevant hold no users: nothing to evaluate")
  grades = None
  if relevant_grades is not None:
    if isinstance(rel, np.ndarray):
      grades = np.asarray(relevant_grades)
      if grades.shape != rel.shape:
        raise ValueError(f"relevant_grades must have the shape of relevant {rel.shape}, got "
                         f"{grades.shape}")
    else:
      grades = _table("relevant_grades", relevant_grades)
      if len(grades) != len(rel):
        raise ValueError(f"relevant has {len(rel)} users but relevant_grades has "
                         f"{len(grades)}")
  return None, rec, rel, grades


def _row_values(what: str, label: str, row: Any, ordered: bool) -> list:
  allowed = (Sequence,) if ordered else (Sequence, set, frozenset)
  if isinstance(row, (str, bytes)) or not (isinstance(row, allowed) or _is_array(row)):
    kind = "a list of ids, best first" if ordered else "a list/set of ids or a dict {id: grade}"
    raise TypeError(f"{what} for {label} must be {kind}, got {_describe(row)}")
  if _is_array(row):
    arr = np.asarray(row)
    if arr.ndim != 1:
      raise ValueError(f"{what} for {label} must be a flat list of ids, got shape {arr.shape}")
    return arr.tolist()
  return list(row)


@dataclasses.dataclass
class _Side:
  """One side's ids, flat: ``user`` (int64), ``ids`` (int64 array or list of str), ``kind``
  (``"int"``, ``"str"`` or None without ids) and, for the relevant side, ``grades``."""

  user: np.ndarray
  ids: Any
  kind: str | None
  grades: np.ndarray | None = None


def _user_at(sizes, at: int) -> int:
  """The user of the ``at``-th id, with ``sizes`` ids per user."""
  return int(np.searchsorted(np.cumsum(sizes), at, side="right"))


def _id_kind(what: str, keys, sizes, values: list) -> str | None:
  """``"int"`` or ``"str"`` for ids all of one kind (None without ids); else a one-line error."""
  types = set(map(type, values))
  if not types:
    return None
  if all(issubclass(t, str) for t in types):
    return "str"
  if all(issubclass(t, (int, np.integer)) and not issubclass(t, (bool, np.bool_))
         for t in types):
    return "int"
  strings = isinstance(values[0], str)
  for at, v in enumerate(values):
    label = _label(keys, _user_at(sizes, at))
    if not (isinstance(v, str) or _is_number(v) and isinstance(v, (int, np.integer))):
      raise TypeError(f"{what} for {label}: item ids must be ints >= 0 or strings, got "
                      f"{_describe(v)}")
    if isinstance(v, str) != strings:
      raise TypeError(f"{what} for {label}: item ids must all be ints or all be strings, got "
                      f"{_describe(v)} after {_describe(values[0])}")
  raise AssertionError("unreachable")  # pragma: no cover


def _ints(what, keys, sizes, values: list) -> np.ndarray:
  try:
    return np.array(values, dtype=np.int64)
  except OverflowError:
    at = next(i for i, v in enumerate(values) if not -2**63 <= v < 2**63)
    raise ValueError(f"{what} for {_label(keys, _user_at(sizes, at))}: int item ids must be in "
                     f"[0, 2**63), got {values[at]}") from None


def _rows_of_ids(what: str, keys, table: list, ordered: bool, grades_table):
  """Per-user rows chained: (ids per user, ids, grades) with grades 1 unless given."""
  sizes, values, grades = [], [], []
  for i, row in enumerate(table):
    label = _label(keys, i)
    if not ordered and isinstance(row, Mapping):
      if grades_table is not None:
        raise TypeError(f"relevant_grades is for ids given as lists; relevant for {label} is "
                        f"a dict {{id: grade}}")
      values.extend(row)
      grades.extend(row.values())
      sizes.append(len(row))
      continue
    items = _row_values(what, label, row, ordered)
    if grades_table is not None:
      if isinstance(row, (set, frozenset)):
        raise TypeError(f"relevant for {label} is a set (no order) but relevant_grades gives "
                        f"grades by position: give a list")
      g = _row_values("relevant_grades", label, grades_table[i], True)
      if len(g) != len(items):
        raise ValueError(f"relevant for {label} has {len(items)} ids but relevant_grades has "
                         f"{len(g)} grades")
      grades.extend(g)
    elif not ordered:
      grades.extend([1] * len(items))
    values.extend(items)
    sizes.append(len(items))
  return sizes, values, grades


def _int_rows(table, ordered: bool, grades_table):
  """``(sizes, ids, grades)`` without a loop per user when every row is a list or tuple of
  Python ints (or, on the relevant side, every row a set of ints or a dict ``{int id:
  number}``); None sends the table to the general path, which names the user and the id of
  anything wrong."""
  if grades_table is not None or not isinstance(table, list):
    return None
  kinds = set(map(type, table))
  plain = {list, tuple} if ordered else {list, tuple, set, frozenset}
  grades = None
  if not kinds <= plain:
    if ordered or not kinds <= {dict, tuple} or not all(type(r) is dict or not r for r in table):
      return None
    grades = list(itertools.chain.from_iterable(r.values() for r in table if r))
    if not set(map(type, grades)) <= {int, float}:
      return None
  flat = list(itertools.chain.from_iterable(table))
  if not set(map(type, flat)) <= {int}:
    return None
  try:
    ids = np.array(flat, np.int64)
  except OverflowError:
    return None
  try:
    grades = None if grades is None else np.array(grades, np.float64)
  except OverflowError:
    return None
  return np.fromiter(map(len, table), np.int64, count=len(table)), ids, grades


def _flat_ids(what: str, keys, table, ordered: bool, grades_table=None) -> _Side:
  """Flattens one side: ids checked to be all ints or all strings; ``-1`` padding dropped."""
  if isinstance(table, np.ndarray):
    if table.dtype.kind in "iu":
      if table.dtype == np.uint64 and table.size and table.max() >= 2**63:
        at = np.argwhere(table >= 2**63)[0]
        raise ValueError(f"{what} for {_label(keys, int(at[0]))}: int item ids must be in "
                         f"[0, 2**63), got {table[tuple(at)]}")
      arr = table.astype(np.int64)
      keep = arr != -1
      user = np.nonzero(keep)[0]
      g = None if ordered else np.ones(user.size) if grades_table is None else _grade_array(
          keys, user, arr[keep], grades_table[keep])
      return _check_ids(what, keys, _Side(user, arr[keep], "int", g))
    if table.dtype.kind not in "UO":
      raise TypeError(f"{what} must hold int or string ids, got an array of dtype "
                      f"{table.dtype}")
    table = table.tolist()
  fast = _int_rows(table, ordered, grades_table)
  if fast is not None:
    sizes, ids, grades = fast
    keep = ids != -1
    user = np.repeat(np.arange(len(table)), sizes)[keep]
    g = None if ordered else (np.ones(user.size) if grades is None else
                              _grade_array(keys, user, ids[keep], grades[keep]))
    return _check_ids(what, keys, _Side(user, ids[keep], "int", g))
  sizes, values, grades = _rows_of_ids(what, keys, table, ordered, grades_table)
  user = np.repeat(np.arange(len(table)), sizes)
  kind = _id_kind(what, keys, sizes, values)
  ids, keep = values, None
  if kind == "int":
    ids = _ints(what, keys, sizes, values)
    keep = ids != -1
  g = None if ordered else _grade_values(keys, user, ids, grades, keep)
  if keep is not None:
    user, ids = user[keep], ids[keep]
  return _check_ids(what, keys, _Side(user, ids, kind, g))


def _check_ids(what, keys, side: _Side) -> _Side:
  if side.kind != "int":
    return side
  negative = np.flatnonzero(side.ids < 0)
  if negative.size:
    at = negative[0]
    raise ValueError(f"{what} for {_label(keys, int(side.user[at]))}: item ids must be >= 0 "
                     f"(-1 is padding), got {side.ids[at]}")
  return side


def _grade_values(keys, user, ids, grades: list, keep) -> np.ndarray:
  """Grades of the relevant ids (``keep``: those not padding): numbers >= 0 that float32 holds
  (not bools, NaN or infinite)."""
  types = set(map(type, grades))
  bad = None
  if not all(issubclass(t, (int, float, np.integer, np.floating))
             and not issubclass(t, (bool, np.bool_)) for t in types):
    bad = next(i for i, g in enumerate(grades) if not _is_number(g))
  else:
    try:
      values = np.array(grades, dtype=np.float64).reshape(-1)
    except OverflowError:
      bad = next(i for i, g in enumerate(grades) if abs(g) > 1e308)
  if bad is not None:
    item = ids[bad].item() if isinstance(ids[bad], np.generic) else ids[bad]
    raise ValueError(f"relevant for {_label(keys, int(user[bad]))}: the grade of item "
                     f"{item!r} must be a number >= 0, got {_describe(grades[bad])}")
  if keep is None:
    return _grade_array(keys, user, ids, values)
  return _grade_array(keys, user[keep], ids[keep], values[keep])


def _grade_array(keys, user, ids, grades) -> np.ndarray:
  grades = np.asarray(grades)
  if grades.dtype.kind not in "biuf":
    raise TypeError(f"relevant_grades must be numeric, got dtype {grades.dtype}")
  grades = grades.astype(np.float64)
  bad = np.flatnonzero(np.isnan(grades) | (grades < 0) | (grades > _checks.MAX_GRADE))
  if bad.size:
    i = bad[0]
    item = ids[i].item() if isinstance(ids[i], np.generic) else ids[i]
    raise ValueError(f"relevant for {_label(keys, int(user[i]))}: the grade of item "
                     f"{item!r} must be a number >= 0 and at most {_checks.MAX_GRADE:g} (float32), "
                     f"got {float(grades[i])!r}")
  return grades


def _codes(rec: _Side, rel: _Side) -> tuple[np.ndarray, np.ndarray, Callable[[int], Any]]:
  """Integer codes of the ids of both sides (equal ids equal codes) and code -> id."""
  if rec.kind is not None and rel.kind is not None and rec.kind != rel.kind:
    raise TypeError(f"item ids must all be ints or all be strings, got {rec.kind} ids in "
                    f"recommended and {rel.kind} ids in relevant")
  if "str" in (rec.kind, rel.kind):
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index))
                         for v in itertools.chain(rec.ids, rel.ids)), np.int64,
                        count=len(rec.ids) + len(rel.ids))
    return codes, len(index), lambda c: list(index)[c]
  both = np.concatenate([np.asarray(rec.ids, np.int64), np.asarray(rel.ids, np.int64)])
  most = int(both.max(initial=-1))
  if most < 2**31:  # small ids are their own codes: no sort
    return both, most + 1, lambda c: c
  uniq, inverse = np.unique(both, return_inverse=True)
  return inverse.reshape(-1), uniq.size, lambda c: uniq[c].item()


@_options.takes(_options.FACE_OPTIONS, skip=("ties",))  # ranked ids have no ties
def evaluate_ranked(recommended: Sequence[Sequence] | ArrayLike | Mapping[Any, Sequence],
                    relevant: Sequence[Any] | ArrayLike | Mapping[Any, Any],
                    metrics: Sequence[str] | str = DEFAULT_METRICS, *,
                    relevant_grades: Sequence[Sequence[float]] | ArrayLike | None = None,
                    reduce: str | None = None, **options: Any) -> _Result:
  """Metrics of ranked item-id lists (no scores, so no ties) against relevant ids.

  The rank of a recommended item is 1 + the number of ids before it in its user's list; a
  relevant id that was not recommended counts as relevant and never retrieved (recall and the
  ideal DCG see it), as in trec_eval.

  Args:
    recommended: per user, the recommended item ids, best first: a list of lists (or of
      arrays), a 2-D NumPy or JAX array (e.g. the output of :func:`jaxrank.top_k_ids`), or a
      dict ``{user: [ids]}``. Ids are of one kind: ints in ``[0, 2**63)`` or strings (compared
      exactly: ``'a\\x00'`` is not ``'a'``); an int id ``-1`` is padding (as everywhere in
      jaxrank) and skipped, so NumPy rows padded with -1 work.
    relevant: per user, the relevant ids: a list or set (grade 1) or a dict ``{id: grade}``; a
      2-D array padded with -1; or a dict keyed by user (then ``recommended`` is one too).
    relevant_grades: optional grades of the relevant ids given as lists or an array, of the
      same shape as ``relevant`` (default 1); grades are numbers >= 0 (0 = not relevant).
    metrics, reduce, options: as in :func:`evaluate`.

  Returns:
    ``{metric: values}``: one value per user (an array, or ``{user: float}`` for dict input), or
    floats with ``reduce="mean"``. Dict input evaluates every user of either dict, in order of
    first appearance; a user without relevant items gets the ``empty`` policy. Dicts that share
    no user, or an input without users, raise a ``ValueError``.

  Example:
    >>> from jaxrank import numpy as jrn
    >>> out = jrn.evaluate_ranked({"ann": ["a", "b", "c"]}, {"ann": {"c": 2, "z": 1}},
    ...                           ["mrr", "recall@3"])
    >>> out
    {'mrr': {'ann': 0.3333333333333333}, 'recall@3': {'ann': 0.5}}
    >>> import numpy as np
    >>> out = jrn.evaluate_ranked(np.array([[4, 2, -1], [7, 5, 6]]), np.array([[2], [6]]),
    ...                           ["recall@2", "ndcg"], relevant_grades=np.array([[1], [3]]))
    >>> {k: v.round(4).tolist() for k, v in out.items()}
    {'recall@2': [1.0, 0.0], 'ndcg': [0.6309, 0.5]}
  """
  _check_reduce(reduce)
  names, specs = _metric_specs(metrics)
  empty = options["empty"]
  options = _make_options("first", **options)
  keys, rec_table, rel_table, grades_table = _users(recommended, relevant, relevant_grades)
  values = _array_ranked_values(*_as_id_arrays(rec_table, rel_table, grades_table),
                                 specs=specs, options=options)
  if values is not None:
    return {name: _keyed(keys, v, reduce, empty) for name, v in zip(names, values)}
  n = len(rec_table)
  rec = _flat_ids("recommended", keys, rec_table, True)
  rel = _flat_ids("relevant", keys, rel_table, False, grades_table)
  codes, n_codes, id_of = _codes(rec, rel)
  rec_code, rel_code = codes[:rec.user.size], codes[rec.user.size:]
  sorted_sides = []
  for side, code, what in ((rec, rec_code, "recommended"), (rel, rel_code, "relevant")):
    order = _hostrank.order_within(side.user, code, n)
    user, code = side.user[order], code[order]
    dup = np.flatnonzero((code[1:] == code[:-1]) & (user[1:] == user[:-1]))
    if dup.size:
      raise ValueError(f"{what} for {_label(keys, int(user[dup[0]]))} repeats item "
                       f"{id_of(int(code[dup[0]]))!r}")
    sorted_sides.append((order, user, code))
  (order, user, code), _ = sorted_sides
  sizes = np.bincount(rec.user, minlength=n)
  # The rank of each relevant id: its position + 1 if recommended, else 0 (not retrieved).
  # Recommended ids sorted within users, users ascending: (user, code) keys are sorted.
  pos = (np.arange(rec.user.size) - (np.cumsum(sizes) - sizes)[rec.user])[order]
  d = max(n_codes, 1)
  rec_key, rel_key = user * d + code, rel.user * d + rel_code
  at = np.minimum(np.searchsorted(rec_key, rel_key), max(rec_key.size - 1, 0))
  found = rec_key[at] == rel_key if rec_key.size else np.zeros(rel_key.size, bool)
  rank = np.where(found, pos[at] + 1 if rec_key.size else 0, 0)
  positive = rel.grades > 0
  values = _slot_values(sizes, rel.user[positive], rank[positive], rank[positive],
                        rel.grades[positive], resolved=True, specs=specs, options=options)
  return {name: _keyed(keys, v, reduce, empty) for name, v in zip(names, values)}


def _as_id_arrays(rec, rel, grades):
  """The tables as 2-D id arrays padded with -1 (and grades) where that is cheap: arrays as they
  are; lists and dicts of int ids whose rows are not too uneven (padding at most doubles
  them). Anything else comes back as it is, for the general path."""
  if isinstance(rec, np.ndarray) or isinstance(rel, np.ndarray) or grades is not None:
    return rec, rel, grades
  rows = _int_rows(rec, True, None), _int_rows(rel, False, None)
  if None in rows:
    return rec, rel, grades
  (rec_sizes, rec_ids, _), (rel_sizes, rel_ids, rel_grades) = rows
  padded = (_padded(rec_sizes, rec_ids, -1), _padded(rel_sizes, rel_ids, -1),
            None if rel_grades is None else _padded(rel_sizes, rel_grades, 0))
  return (rec, rel, grades) if padded[0] is None or padded[1] is None else padded


def _padded(sizes: np.ndarray, values: np.ndarray, fill) -> np.ndarray | None:
  """Rows of ``sizes[i]`` consecutive ``values`` as a 2-D array padded with ``fill``; None when
  padding would more than double the data."""
  n, width = sizes.size, int(sizes.max(initial=0))
  if values.size == n * width:
    return values.reshape(n, width)
  if n * width > 2 * values.size + 4096:
    return None
  out = np.full((n, width), fill, values.dtype)
  out[np.arange(width) < sizes[:, None]] = values
  return out


def _array_ranked_values(rec, rel, grades, *, specs, options) -> list[np.ndarray] | None:
  """Metrics of 2-D int id arrays (rows padded with -1) by the jitted ranked-ids kernel, rows
  in padded calls; None sends anything unusual (ids from 2**31, ids below -1, a repeated id, a
  bad grade) to the general path, whose errors name the user and the id."""
  if not (isinstance(rec, np.ndarray) and isinstance(rel, np.ndarray) and rec.dtype.kind in "iu"
          and rel.dtype.kind in "iu" and rec.shape[1] and rel.shape[1]):
    return None
  if min(rec.min(), rel.min()) < -1 or max(rec.max(), rel.max()) >= 2**31 - 1:
    return None
  rec, rel = rec.astype(np.int32), rel.astype(np.int32)
  order = np.argsort(rel, axis=-1, kind="stable")  # slots by id: a canonical order
  rel = np.take_along_axis(rel, order, axis=-1)
  if _repeats(np.sort(rec, axis=-1)) or _repeats(rel):
    return None
  if grades is None:
    grades = np.ones(rel.shape, np.float32)
  else:
    grades = np.take_along_axis(np.asarray(grades), order, axis=-1)
    if grades.dtype.kind not in "iuf" or not np.all((grades >= 0) & (grades <= _checks.MAX_GRADE)):
      return None  # (NaN fails the test too)
    grades = grades.astype(np.float32)
  users, k, r = rec.shape[0], _ranks.bucket(rec.shape[1]), _ranks.bucket(rel.shape[1])
  rec = np.pad(rec, ((0, 0), (0, k - rec.shape[1])), constant_values=-1)
  rel = np.pad(rel, ((0, 0), (0, r - rel.shape[1])), constant_values=-1)
  grades = np.pad(grades, ((0, 0), (0, r - grades.shape[1])))
  outs: list[list[np.ndarray]] = [[] for _ in specs]
  for a, b, rows in _hostrank.row_calls(users, 1 << 16):
    pad = ((0, rows - (b - a)), (0, 0))
    with jax.enable_x64(True):  # float64 formulas, as on every NumPy path
      values = _ranked_kernel(np.pad(rec[a:b], pad, constant_values=-1),
                              np.pad(rel[a:b], pad, constant_values=-1),
                              np.pad(grades[a:b], pad), specs=specs, options=options)
      for acc, v in zip(outs, values):
        acc.append(np.asarray(v, np.float64)[:b - a])
  return [np.concatenate(acc) for acc in outs]


def _repeats(rows: np.ndarray) -> bool:
  """Whether a sorted row holds an id (>= 0) twice."""
  return bool(np.any((rows[:, 1:] == rows[:, :-1]) & (rows[:, 1:] >= 0)))


@functools.partial(jax.jit, static_argnames=("specs", "options"))
def _ranked_kernel(rec, rel, grades, *, specs, options):
  ranks = _forms.from_ranked_ids(rec, rel, grades)
  return _compute.compute_ranks(ranks, specs=specs, options=options)


def _keyed(keys, values: np.ndarray, reduce, empty):
  if reduce is not None:
    return _reduce(values, reduce, empty)
  return values if keys is None else dict(zip(keys, values.tolist()))


# ----------------------------------------------------------------------------------------------
# pytrec_eval-style dicts and TREC runs.


DICT_CHUNK_ROWS = 1_000_000  # a run dict with more rows is evaluated this many rows at a time


def _dict_rows(run: Mapping) -> int:
  """The rows of a ``{qid: {docid: score}}`` dict (0 if a value is not a dict: the whole
  path's conversion names it)."""
  inner = list(run.values())
  if not all(isinstance(d, Mapping) for d in inner):
    return 0
  return sum(map(len, inner))


@_options.takes(_options.FACE_OPTIONS, skip=("ties", "threshold"))  # its own: "trec", int
def evaluate_run(run: io.Run | Mapping[str, Mapping[str, float]],
                 qrels: io.Qrels | Mapping[str, Mapping[str, int]],
                 metrics: Sequence[str] | str = ("map", "ndcg", "P_10"), *,
                 ties: str = "trec", float32: bool = False, max_docs: int | None = None,
                 complete: bool = False, reduce: str | None = None, threshold: int = 1,
                 **options: Any) -> _Result:
  """Evaluates a run against qrels the trec_eval way, from dicts or :mod:`jaxrank.io` objects.

  Args:
    run: ``{qid: {docid: score}}`` (string ids) or a :class:`jaxrank.io.Run`.
    qrels: ``{qid: {docid: grade}}`` with integer grades (``-1`` = unjudged) or a
      :class:`jaxrank.io.Qrels`.
    metrics: jaxrank names (``"ndcg@10"``, ``"mrr"``) and/or trec_eval measures, printed or
      ``-m`` style (``"P_10"``, ``"ndcg_cut.10"``, ``"bpref"``, ``"iprec_at_recall_0.50"``); a
      name that is both (``"map"``, ``"ndcg"``) is read as trec_eval's, and a trec_eval family
      with several default cutoffs needs one (``"recall_10"`` or jaxrank's ``"recall@10"``);
      and ir_measures' names (``"nDCG@10"``, ``"P(rel=2)@5"``, ``"RBP(p=0.8,rel=1)"``,
      ``"SetP"``, ``"Bpref"``, ``"NumRelRet"``) with ir_measures' conventions, including its
      provider's tie order (docs/ir-measures.md). Parameters written in a name (``rel=``,
      ``p=``, ...) override this call's options for that name.
    ties: ``"trec"`` (default; score descending, then doc id descending, as trec_eval and
      pytrec_eval), ``"first"`` (then input order), or ``"average"``/``"optimistic"``/
      ``"pessimistic"`` (exact expectation or bounds over tied orders; jaxrank metrics only).
    float32: compare scores as float32, as pytrec_eval does (default float64, as trec_eval 10).
    max_docs: keep the top ``max_docs`` of each query (trec_eval ``-M``).
    complete: also evaluate qrels queries absent from the run, as 0 (trec_eval ``-c``; its
      ``num_rel`` and ``ideal_dcg`` keep their values from the judgments, as trec_eval 10's);
      otherwise queries are those of the qrels that the run has (run queries without
      judgments are ignored).
    threshold: relevant means grade >= threshold (trec_eval ``-l``); NDCG ignores it.
    reduce: ``None`` for ``{metric: {qid: value}}``, ``"mean"`` for ``{metric: float}``.

  A run dict of more than ``DICT_CHUNK_ROWS`` (a million) rows asking trec_eval measures only
  is evaluated a million rows of whole queries at a time, as ``jaxrank evaluate`` evaluates a
  big file: only judged documents and those whose score may tie within their query get a code
  (ties go by doc id), and the chunks' values are combined in trec_eval's order. The numbers are
  the whole dict's (a few sums the kernel rounds by batch shape, ``ndcg_cut``'s, may differ in
  their last bit).

  Example:
    >>> from jaxrank import numpy as jrn
    >>> run = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}
    >>> qrels = {"q1": {"d1": 1, "d3": 2}}
    >>> out = jrn.evaluate_run(run, qrels, ["recip_rank", "P_2", "ndcg@2"])  # d2 before d1
    >>> {name: round(v["q1"], 4) for name, v in out.items()}
    {'recip_rank': 0.5, 'P_2': 0.5, 'ndcg@2': 0.2398}
  """
  _check_reduce(reduce)
  if isinstance(metrics, str):
    metrics = [metrics]
  metrics = list(metrics)
  if not metrics:
    raise ValueError("metrics must name at least one metric, got an empty list")
  unique = isinstance(run, Mapping)  # a dict cannot list a document twice for a query
  chunked = unique and _dict_rows(run) > DICT_CHUNK_ROWS
  run, qrels = (run if chunked else io.as_run(run)), io.as_qrels(qrels)
  plan: list[tuple[str, str]] = []  # (given name, key of its values in the result)
  requests: list[_trec.Request] = []
  others = []  # jaxrank's names and ir_measures' (the options written in them apply to them)
  for name in metrics:
    trec = name in _trec.MEASURES or not (_irnames.is_name(name)
                                             or _runnames.is_jaxrank_name(name))
    if not trec:
      plan.append((name, name))
      others.append(name)
      continue
    (request,) = _trec.parse_measures([name])
    printed = request.names()
    if len(printed) != 1:
      raise ValueError(f"metric {name!r} names {len(printed)} values ({', '.join(printed)}); "
                       f"ask for one, e.g. {printed[0]!r}")
    plan.append((name, printed[0]))
    requests.append(request)  # parsed once: re-parsing would merge P.1 and P.2 (first wins)
  empty = options["empty"]
  formula = _make_options(ties, threshold=threshold, **options)  # checked even when unused
  if chunked and not others:  # a big dict: a million rows at a time, combined as the CLI does
    def chunks(judged: bool) -> _trec.Result:
      return _chunked.evaluate_chunks(
          io.iter_dict_chunks(run, max_rows=DICT_CHUNK_ROWS, qrels=qrels if judged else None),
          qrels, requests, ties=ties, float32=float32, max_docs=max_docs, complete=complete,
          threshold=threshold, options=formula, unique_docs=True, uncoded=judged)
    try:  # only judged and possibly tied documents coded
      result = chunks(True)
    except io.NeedsFullRead:  # equal hashes: every document coded
      result = chunks(False)
  else:
    result = _runnames.evaluate_run(io.as_run(run), qrels, others, requests, ties=ties,
                                   threshold=threshold, given=options, float32=float32,
                                   max_docs=max_docs, complete=complete, unique_docs=unique)
  out: _Result = {}
  for name, ref in plan:
    if ref not in result.per_query:  # summary-only measures (num_q, gm_map, runid)
      out[name] = result.summary[ref]
      continue
    values = result.per_query[ref]
    out[name] = _keyed(result.qids, np.asarray(values), reduce, empty)
  return out
