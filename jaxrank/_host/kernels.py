"""The NumPy door's calls of the rank core: padded batches of few shapes, in float64.

:mod:`jaxrank.numpy` checks and flattens its input, then comes here: :func:`dense_values` for
``[lists, n]`` arrays (the rank core's dense entry point), :func:`ranked_id_values` for ranked
id arrays, :func:`scored_values` for flat scored lists and :func:`slot_values` for the ranks of
relevant items. Calls are padded as :mod:`jaxrank._host.batches` says, so a stream of
differently sized batches compiles a handful of times and one long list costs what it costs
alone; padding never changes a result. Every kernel runs in JAX's x64 mode: float64 formulas.

The counting kernel compares every item of a list with each of its relevant items: O(n r),
fastest while r is small. Lists with more than ``_KERNEL_MAX_SLOTS`` relevant items get their
ranks on the host instead (:func:`jaxrank._host.ranks.relevant_ranks`, O(n log r); measured on
a 2-core CPU: equal cost near 1,000 relevant items in a list of 10^5 to 10^6 items). Either way
the metrics then run on the rank core.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import numpy as np

from jaxrank._core import compute as _compute
from jaxrank._core import forms as _forms
from jaxrank._core import ranks as _ranks
from jaxrank._host import batches, scoring
from jaxrank._host import ranks as _hostranks

_KERNEL_MAX_SLOTS = 1024  # lists with more relevant items get their ranks on the host


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
  (XLA may flush them to zero), as do integers beyond 2**24: the ranks of the host's order keys
  (:func:`jaxrank._host.ranks.order_keys`), NaN last. Dense ranks are float32 while below 2**24
  (exact), so they share compilations with float32 scores.
  """
  if s.dtype.kind == "f":
    with np.errstate(over="ignore"):
      s32 = s.astype(np.float32)
    tiny = (s32 != 0) & (np.abs(s32) < np.finfo(np.float32).tiny)
    if np.array_equal(s32, s, equal_nan=True) and not tiny.any():
      return s32
    if not np.any((s != 0) & (np.abs(s) < np.finfo(np.float64).tiny)):
      return s  # float64 keys (the kernel runs in x64 mode): no host sort
  elif s.size == 0 or (s.min() >= -2**24 and s.max() <= 2**24):
    return s.astype(np.float32)
  uniq, inverse = np.unique(_hostranks.order_keys(s, False), return_inverse=True)
  return inverse.reshape(-1).astype(np.float32 if uniq.size < 2**24 else np.int32)


def _kernel_values(length, lists, pos, s, rel, grade, *, specs, options, ties):
  """Metrics of lists with few relevant items, ranked by the counting kernel.

  Items are ``(lists, pos, s)`` (position ``pos`` in list order); ``rel`` marks the relevant
  ones, of grade ``grade``. ``ties="first"`` breaks ties by position.
  """
  n = length.size
  m = np.bincount(lists[rel], minlength=n)
  order, calls = batches.shape_calls(batches.pow2_array(length, 16), batches.pow2_array(m, 8),
                                     budget=batches.ITEMS_PER_CALL, floor=batches.MIN_ELEMENTS)
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


def slot_values(num_items, slot_list, lo, hi, grade, *, resolved: bool, specs, options):
  """Metrics of lists from the ranks of their relevant items (``lo <= 0``: not retrieved), by
  the TREC path's scorer (:func:`jaxrank._host.scoring.score_ranks`: canonical slot order,
  float64)."""
  num_items = np.asarray(num_items, np.int64)
  return list(scoring.score_ranks(num_items.size, num_items, num_items, slot_list,
                                  np.maximum(lo, 0), np.maximum(hi, 0), grade, specs, options,
                                  resolved=resolved))


def scored_values(n_lists, lists, pos, s, y, *, specs, options, ties):
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
      keys = _hostranks.order_keys(sub[2], False)
      lo, hi = _hostranks.relevant_ranks(sub[0], keys, sub[3], sub[4], ties)
      values = slot_values(length[part], sub[0][sub[3]], lo, hi, sub[4][sub[3]],
                            resolved=ties != "average", specs=specs, options=options)
    else:
      values = _kernel_values(length[part], *sub, specs=specs, options=options, ties=ties)
    for acc, v in zip(out, values):
      acc[part] = v
  return out


def dense_values(s: np.ndarray, y: np.ndarray, valid: np.ndarray | None, *, specs,
                 options) -> list[np.ndarray] | None:
  """Metrics of ``[lists, n]`` scores (float keys that hold their order exactly) and labels
  (valid grades), ``valid`` None or the mask, straight through the dense kernel in padded calls;
  None when a list has more than ``_KERNEL_MAX_SLOTS`` relevant items (host ranks in
  O(n log r) are faster: :func:`scored_values`)."""
  n = s.shape[-1]
  positive = y > 0 if valid is None else (y > 0) & valid
  most = int(np.count_nonzero(positive, axis=-1).max())
  if most > _KERNEL_MAX_SLOTS:  # many relevant items: host ranks in O(n log r) are faster
    return None
  m = _ranks.bucket(max(most, 8), n)
  rows = s.shape[0]
  outs: list[list[np.ndarray]] = [[] for _ in specs]

  def read(used: int, values: Sequence[jax.Array]) -> None:
    for acc, v in zip(outs, values):
      acc.append(np.asarray(v, np.float64)[:used])

  ahead = None  # the call XLA runs while the next one is padded and dispatched: two at most
  with jax.enable_x64(True):  # float64 formulas, as on every NumPy path
    for a, b, size in batches.row_calls(rows, max(1, batches.ITEMS_PER_CALL // max(n, m * 32))):
      # Padding rows (no relevant item) are cut from the output: without `where` no mask is
      # needed, and unmasked float32 lists take the rank core's fastest cut path.
      call = (b - a, _dense_kernel(
          _padded_rows(s, a, b, size), _padded_rows(y, a, b, size),
          None if valid is None else _padded_rows(valid, a, b, size), specs=specs,
          options=options, m=min(m, n)))
      if ahead is not None:
        read(*ahead)
      ahead = call
  if ahead is not None:
    read(*ahead)
  return [np.concatenate(acc) for acc in outs]


def _padded_rows(x: np.ndarray, a: int, b: int, size: int) -> np.ndarray:
  """Rows ``a:b`` of ``x`` with zero rows after them up to ``size`` (a view when none)."""
  return x[a:b] if size == b - a else np.pad(x[a:b], ((0, size - (b - a)), (0, 0)))


@functools.partial(jax.jit, static_argnames=("specs", "options", "m"))
def _dense_kernel(scores, labels, valid, *, specs, options, m):
  """The metrics of padded dense lists (padding rows hold no relevant item and are cut from the
  output; ``valid`` is None or the mask, False on padding rows), one compiled call per shape:
  the rank core's dense entry point (ranks and formulas fused, cut at the largest cutoff)."""
  return _compute.compute(scores, labels, specs, options, where=valid, max_relevant=m)


def ranked_id_values(rec: np.ndarray, rel: np.ndarray, grades: np.ndarray, *, specs,
                     options) -> list[np.ndarray]:
  """Metrics of int32 ranked id rows ``rec`` (padded with -1) against relevant id rows ``rel``
  (sorted, padded with -1) of float32 ``grades``, by the jitted ranked-ids kernel in padded
  calls."""
  users, k, r = rec.shape[0], _ranks.bucket(rec.shape[1]), _ranks.bucket(rel.shape[1])
  rec = np.pad(rec, ((0, 0), (0, k - rec.shape[1])), constant_values=-1)
  rel = np.pad(rel, ((0, 0), (0, r - rel.shape[1])), constant_values=-1)
  grades = np.pad(grades, ((0, 0), (0, r - grades.shape[1])))
  outs: list[list[np.ndarray]] = [[] for _ in specs]
  for a, b, rows in batches.row_calls(users, batches.MAX_ROWS):
    pad = ((0, rows - (b - a)), (0, 0))
    with jax.enable_x64(True):  # float64 formulas, as on every NumPy path
      values = _ranked_kernel(np.pad(rec[a:b], pad, constant_values=-1),
                              np.pad(rel[a:b], pad, constant_values=-1),
                              np.pad(grades[a:b], pad), specs=specs, options=options)
      for acc, v in zip(outs, values):
        acc.append(np.asarray(v, np.float64)[:b - a])
  return [np.concatenate(acc) for acc in outs]


@functools.partial(jax.jit, static_argnames=("specs", "options"))
def _ranked_kernel(rec, rel, grades, *, specs, options):
  ranks = _forms.from_ranked_ids(rec, rel, grades)
  return _compute.compute_ranks(ranks, specs=specs, options=options)
