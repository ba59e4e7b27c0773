"""Ranks of dense input: per-item scores and labels (:func:`from_dense`), and its internal forms.

The metric functions and :func:`jaxrank.evaluate` split :func:`from_dense`'s work in two:
:func:`dense_arguments` does every eager step (:func:`dense_inputs`: input checks;
:func:`dense_static`: the one host transfer that checks the labels and counts the relevant
slots, whether the cut path applies) and :func:`ranks_of_dense` is the jitted kernel, so the
ranks and the formulas run in one jitted call. :func:`relevant_slots` finds each list's relevant
items; the slots are ranked by :mod:`jaxrank._core.counting` or, cut at the largest cutoff, by
:mod:`jaxrank._core.cut`.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core.counting import check_ties_args, slot_ranks
from jaxrank._core.cut import cut_applies, cut_slot_ranks
from jaxrank._core.ranks import POOLED, UNUSED, ZERO, Judgments, Ranks, as_scores, bucket


def from_dense(scores: ArrayLike, labels: ArrayLike, where: ArrayLike | None = None, *,
               ties: str = "average", tie_key: ArrayLike | None = None,
               max_relevant: int | None = None, method: str = "auto",
               judged: ArrayLike | None = None) -> Ranks:
  r"""Builds :class:`Ranks` from dense per-item scores and graded labels.

  Items with ``labels > 0`` (and ``where`` True) are the relevant slots; ``lo``/``hi`` are
  :math:`1 + |\{j: s_j > s_i\}|` and :math:`|\{j: s_j \ge s_i\}|` over valid items ``j``.

  Args:
    scores: ``[..., n]`` scores of any float or int dtype, ordered by their exact value (see
      :func:`jaxrank._core.ranks.sort_keys`); higher ranks first. NaN ranks last.
    labels: ``[..., n]`` grades (0 = not relevant), int, float or bool; finite, >= 0 and at most
      float32's largest value (3.4e38), checked when concrete (under ``jit`` a NaN or infinite
      grade is not caught).
    where: optional ``[..., n]`` bool; False items are padding and are not ranked.
    ties: ``"first"`` breaks ties here (by larger ``tie_key``, then earlier index), so ``lo ==
      hi``; any other value keeps the tie bounds and lets each metric apply its ``ties`` policy.
    tie_key: optional ``[..., n]`` secondary key for ``ties="first"`` (larger first), e.g. a doc
      id order to reproduce trec_eval.
    max_relevant: number of relevant slots per list. ``None`` computes it from concrete labels
      (rounded up so few distinct values compile); under ``jit`` it falls back to ``n``, so pass
      it there for speed (the metric functions, :func:`jaxrank.evaluate` and
      :class:`jaxrank.MetricState`, which return values rather than these slots, use 64 slots
      where no list has more relevant items: :data:`TRACED_SLOTS`). A traced list with more
      relevant items than slots yields NaN metrics.
    method: ``"auto"``, ``"count"`` (compare every slot with every item) or ``"sort"`` (sort each
      list once, then binary-search); the result never depends on it.
    judged: optional ``[..., n]`` bool, which items carry a judgment (are in the qrels); see
      :mod:`jaxrank._core.ranks`. ``None``: every valid item is judged. With it, False items are
      not judged (not relevant for any metric, their label ignored) and a negative label marks a
      judged item as in the pool but unjudged; the result then holds :class:`Judgments`.

  Returns:
    The :class:`Ranks` of the relevant items.

  Example:
    >>> import jaxrank
    >>> r = jaxrank.from_dense([[0.1, 0.9, 0.9]], [[1, 1, 0]])
    >>> r.lo.tolist(), r.hi.tolist()
    ([[3, 1]], [[3, 2]])
    >>> j = jaxrank.from_dense([[0.1, 0.9, 0.5, 0.3]], [[1, 0, -1, 0]],
    ...                        judged=[[True, True, True, False]]).judged
    >>> j.lo.tolist(), j.kind.tolist()  # item 1 judged 0, item 2 in the pool; item 3 not judged
    ([[1, 2]], [[1, 2]])
  """
  return dense_ranks(scores, labels, where, ties=ties, tie_key=tie_key,
                     max_relevant=max_relevant, method=method, cut=None, judged=judged)


def dense_ranks(scores: ArrayLike, labels: ArrayLike, where: ArrayLike | None = None, *,
                ties: str, tie_key: ArrayLike | None, max_relevant: int | None, method: str,
                cut: int | None, judged: ArrayLike | None = None) -> Ranks:
  """:func:`from_dense` for the metric functions, with a cut: internal, never returned to users.

  With ``cut`` (every requested metric has a cutoff, the largest is ``cut``) the ranks are exact
  only for slots that can reach the top ``cut``; the others read as unranked (``size + 1``),
  which gives every metric at a cutoff ``k <= cut`` its exact value, with ``cut`` compares per
  slot instead of ``n`` (:func:`jaxrank._core.cut.cut_slot_ranks`). ``cut=None``, or arguments where
  :func:`jaxrank._core.cut.cut_applies` is False, build the exact :func:`from_dense` ranks.
  """
  arrays, static = dense_arguments(scores, labels, where, ties=ties, tie_key=tie_key,
                                   max_relevant=max_relevant, method=method, cut=cut,
                                   judged=judged)
  return ranks_of_dense(*arrays, **static)


def dense_arguments(scores: ArrayLike, labels: ArrayLike, where: ArrayLike | None = None, *,
                    ties: str, tie_key: ArrayLike | None, max_relevant: int | None,
                    method: str, cut: int | None,
                    judged: ArrayLike | None = None) -> tuple[tuple, dict]:
  """The checked ``(arrays, static options)`` of :func:`ranks_of_dense` (see :func:`dense_ranks`).

  All eager work happens here (:func:`dense_inputs`, then :func:`dense_static`), so a caller can
  run :func:`ranks_of_dense` and the metric formulas in one jitted call.
  """
  arrays = dense_inputs(scores, labels, where, ties=ties, tie_key=tie_key, method=method,
                        judged=judged)
  return arrays, dense_static(arrays, ties=ties, max_relevant=max_relevant, method=method,
                              cut=cut)


def dense_inputs(scores: ArrayLike, labels: ArrayLike, where: ArrayLike | None = None, *,
                 ties: str, tie_key: ArrayLike | None, method: str,
                 judged: ArrayLike | None = None) -> tuple:
  """``(scores, labels, valid, tie_key, judged)`` as checked JAX arrays: types and shapes only
  (the labels' values are :func:`dense_static`'s)."""
  (scores,) = as_scores(("scores", scores, 1))
  labels = _checks.as_array("labels", labels, kinds="fib", wide_ints="float")
  _checks.check_same_shape("labels", labels, "scores", scores.shape)
  valid = _checks.as_where(where, scores.shape)
  tie_key = check_ties_args(ties, method, tie_key, scores.shape)
  if judged is not None:
    judged = _checks.as_array("judged", judged, kinds="b")
    _checks.check_same_shape("judged", judged, "scores", scores.shape)
  return scores, labels, valid, tie_key, judged


def dense_static(arrays: tuple, *, ties: str, max_relevant: int | None, method: str,
                 cut: int | None) -> dict:
  """The static options of :func:`ranks_of_dense` for :func:`dense_inputs`' ``arrays``: the one
  host transfer that checks concrete labels and counts the relevant slots, and whether the cut
  path applies."""
  scores, labels, valid, tie_key, judged = arrays
  if judged is not None:
    m, z, checked = judged_slot_count(labels, valid, judged, max_relevant)
    # the cut path ranks relevant slots only: judged items need exact ranks
    return dict(ties=ties, m=m, method=method, cut=None, checked=checked, z=z)
  m, checked = slot_count(labels, valid, max_relevant)
  if not cut_applies(scores.dtype, scores.shape[-1], cut, m, ties=ties, tie_key=tie_key,
                     method=method, masked=valid is not None):
    cut = None
  return dict(ties=ties, m=m, method=method, cut=cut, checked=checked)


def judged_slot_count(labels: jax.Array, valid: jax.Array | None, judged: jax.Array,
                      max_relevant: int | None) -> tuple[int, int, bool]:
  """:func:`slot_count` with a ``judged`` mask: relevant slots, judged-item slots, checked.

  Negative labels are allowed (in the pool, unjudged); NaN and huge ones are still errors.
  Under tracing there are ``max_relevant`` (or ``n``) relevant slots and ``n`` judged slots.
  """
  n = labels.shape[-1]
  if not all(_checks.is_concrete(x) for x in (labels, valid, judged) if x is not None):
    return (n if max_relevant is None else min(_checks.check_k(max_relevant, "max_relevant"), n),
            n, False)
  most, extra, nan, huge = (int(v) for v in _checks.host_values(_judged_summary, labels, valid,
                                                                 judged))
  _checks.raise_label_error("labels", labels, bool(nan), False, bool(huge))
  if max_relevant is None:
    return bucket(most, n), bucket(extra, n), True
  max_relevant = _checks.check_k(max_relevant, "max_relevant")
  if most > max_relevant:
    raise ValueError(f"max_relevant={max_relevant} is smaller than the largest number of "
                     f"relevant items in a list ({most})")
  return min(max_relevant, n), bucket(extra, n), True


def _judged_masks(labels, valid, judged):
  """(positive, judged items that are not positive) of dense input with a ``judged`` mask."""
  ok = judged if valid is None else judged & valid
  grades = labels.astype(jnp.float32)
  return ok & (grades > 0), ok & ~(grades > 0)


@jax.jit
def _judged_summary(labels, valid, judged):
  """[most positives, most other judged items in a list, any NaN, any huge] (one transfer)."""
  positive, other = _judged_masks(labels, valid, judged)
  nan, _, huge = _checks.label_summary(labels)
  return jnp.stack([jnp.max(jnp.sum(positive, axis=-1, dtype=jnp.int32), initial=0),
                    jnp.max(jnp.sum(other, axis=-1, dtype=jnp.int32), initial=0),
                    nan.astype(jnp.int32), huge.astype(jnp.int32)])


def slot_count(labels: jax.Array, valid: jax.Array | None,
               max_relevant: int | None) -> tuple[int, bool]:
  """The number of relevant slots per list, and whether the labels were checked on the host.

  With concrete labels one host transfer checks them (no NaN, negative or huge grade) and counts
  the most positives in a list (rounded up by :func:`jaxrank._core.ranks.bucket`, so few slot
  counts compile); no list then has more positives than slots. Under tracing the slot count is
  ``max_relevant`` or the list length.
  """
  n = labels.shape[-1]
  most = None
  if _checks.is_concrete(labels) and (valid is None or _checks.is_concrete(valid)):
    most, *bad = _summary(labels, valid)
    _checks.raise_label_error("labels", labels, *(bool(v) for v in bad))
  if max_relevant is None:
    return (n if most is None else bucket(most, n)), most is not None
  max_relevant = _checks.check_k(max_relevant, "max_relevant")
  if most is not None and most > max_relevant:
    raise ValueError(f"max_relevant={max_relevant} is smaller than the largest number of "
                     f"relevant items in a list ({most})")
  return min(max_relevant, n), most is not None


# Under jit without max_relevant the most relevant items of a list are unknown at trace time,
# and one slot per item is always enough but costly: 1,000 x 1,000 lists, five metrics, on a
# 2-core CPU, a jitted MetricState.update took ~300 ms against ~10 ms with max_relevant=16.
# The metric values (not a returned Ranks, whose slot count is its shape) are then computed with
# TRACED_SLOTS slots when no list has more relevant items, and with one per item otherwise: both
# are compiled, and a lax.cond on the lists' count picks one at run time.
TRACED_SLOTS = 64


def traced_slots(scores: jax.Array, valid: jax.Array | None, tie_key: jax.Array | None, *,
                 ties: str, method: str, cut: int | None, max_relevant: int | None,
                 static: dict) -> tuple[int, int | None] | None:
  """``(slots, cut)`` of the cheaper rank core for labels traced without ``max_relevant`` (see
  :data:`TRACED_SLOTS`), or ``None`` where :func:`dense_arguments`' ``static`` is used alone:
  labels counted on the host, ``max_relevant`` given, a ``judged`` mask, or short lists.

  Example:
    >>> import jax.numpy as jnp
    >>> from jaxrank._core import dense as _dense
    >>> s = jnp.zeros((2, 1000))
    >>> _dense.traced_slots(s, None, None, ties="average", method="auto", cut=10,
    ...                     max_relevant=None, static={"checked": False})
    (64, 10)
  """
  n = scores.shape[-1]
  if static["checked"] or max_relevant is not None or "z" in static or n <= 2 * TRACED_SLOTS:
    return None
  m = TRACED_SLOTS
  if not cut_applies(scores.dtype, n, cut, m, ties=ties, tie_key=tie_key, method=method,
                     masked=valid is not None):
    cut = None
  return m, cut


def positive_count(labels: jax.Array, valid: jax.Array | None) -> jax.Array:
  """The number of relevant (positive, valid) items of each list, int32 ``[...]``."""
  return jnp.sum(_grades(labels, valid)[1], axis=-1, dtype=jnp.int32)


def dense_positives(labels: jax.Array, valid: jax.Array | None,
                    max_relevant: int | None) -> tuple[jax.Array, jax.Array, int]:
  """Checked grades (float32), the positive mask, and the number of relevant slots per list
  (:func:`slot_count`)."""
  m, _ = slot_count(labels, valid, max_relevant)
  grades, positive = jax.jit(_grades)(labels, valid)
  return grades, positive, m


def _grades(labels, valid):
  """float32 grades (negative ones, only possible under tracing, as 0) and the positive mask."""
  grades = jnp.maximum(labels.astype(jnp.float32), 0.0)
  return grades, grades > 0 if valid is None else (grades > 0) & valid


def checks_on_host(labels: jax.Array, valid: jax.Array | None) -> bool:
  """Whether :func:`slot_count` checks these concrete labels with NumPy (integer, boolean,
  float32 or float64 labels on one CPU device): then it runs beside a computation XLA is
  already running."""
  devices = labels.devices()
  return ((labels.dtype.kind in "biu" or labels.dtype in (np.float32, np.float64))
          and len(devices) == 1 and next(iter(devices)).platform == "cpu"
          and (valid is None or valid.devices() == devices))


# float64 grades at most this round to 0.0 as float32 (the kernel's grades): not relevant.
_ROUNDS_TO_ZERO = np.float64(2.0**-150)


def _summary(labels: jax.Array, valid: jax.Array | None) -> list[int]:
  """:func:`_label_summary`'s values as ints: on the host where :func:`checks_on_host` (NumPy
  reads the labels in place, in a few passes over blocks that stay in the cache: 1.1 ms at
  4,000 x 1,000 int32, where XLA's multi-output reduction took 4 ms for int32 and 11.5 for
  float32), else on the device (one transfer)."""
  if checks_on_host(labels, valid):
    y = np.asarray(labels).reshape(math.prod(labels.shape[:-1]), labels.shape[-1])
    v = None if valid is None else np.asarray(valid).reshape(y.shape)
    # A narrow accumulator where the row length allows: half the time of int64 (1 vs 2 ms).
    wide = np.uint16 if y.shape[-1] < 2**16 else np.int64
    signed, floating = y.dtype.kind in "if", y.dtype.kind == "f"
    zero = _ROUNDS_TO_ZERO if y.dtype == np.float64 else y.dtype.type(0)
    most, nan, negative, huge = 0, False, False, False
    # Rows in blocks of about 64K labels, so the later looks (the sign, NaN and size) read them
    # from the cache: 1.65 -> 1.1 ms at 4,000 x 1,000 int32.
    step = max(1, 2**16 // max(y.shape[-1], 1))
    for i in range(0, y.shape[0], step):
      part = y[i:i + step]
      positive = part > zero  # a float32 subnormal counts: XLA may or may not flush it
      if v is not None:
        positive &= v[i:i + step]
      most = max(most, int(positive.view(np.uint8).sum(-1, dtype=wide).max(initial=0)))
      if signed and part.size:
        low = part.min()  # NaN if any label is NaN (and so is the largest)
        negative = negative or bool(low < 0)
        if floating:
          high = part.max()
          nan = nan or bool(np.isnan(high))
          huge = huge or bool(high > _checks.MAX_GRADE)
    return [most, int(nan), int(negative), int(huge)]
  return [int(v) for v in _checks.host_values(_label_summary, labels, valid)]  # one transfer


@jax.jit
def _label_summary(labels, valid):
  """[most positives in a list, *label_summary] as one int32 array (one fused pass, one
  transfer)."""
  _, positive = _grades(labels, valid)
  most = jnp.max(jnp.sum(positive, axis=-1, dtype=jnp.int32), initial=0)
  return jnp.stack([most, *(flag.astype(jnp.int32) for flag in _checks.label_summary(labels))])


@functools.partial(jax.jit, static_argnames=("ties", "m", "method", "cut", "checked", "z"))
def ranks_of_dense(scores, labels, valid, tie_key, judged=None, *, ties, m, method, cut,
                   checked, z=0):
  """The jitted core of :func:`dense_ranks` on the arguments of :func:`dense_arguments`."""
  n = scores.shape[-1]
  num_items = (jnp.full(scores.shape[:-1], n, jnp.int32) if valid is None
               else jnp.sum(valid, axis=-1, dtype=jnp.int32))
  if judged is not None:
    return _judged_ranks_of_dense(scores, labels, valid, tie_key, judged, num_items, ties=ties,
                                  m=m, z=z, method=method, checked=checked)
  _, positive = _grades(labels, valid)
  slot_index, slot_ok = relevant_slots(positive, m)
  slot_labels = (labels if slot_index.shape[-1] == n  # one slot per item: no gather
                 else jnp.take_along_axis(labels, slot_index, axis=-1))
  slot_grades = jnp.maximum(slot_labels.astype(jnp.float32), 0.0)
  slot_grades = jnp.where(slot_ok, slot_grades, 0.0)
  if cut is None:
    lo, hi = slot_ranks(scores, valid, slot_ok, slot_index, ties=ties, method=method,
                         tie_key=tie_key, size=n)
  else:
    lo, hi = cut_slot_ranks(scores, valid, num_items, slot_ok, slot_index, ties=ties, cut=cut,
                             size=n)
  # labels checked on the host: no list has more positives than slots
  overflow = (jnp.zeros(num_items.shape, bool) if checked
              else jnp.sum(positive, axis=-1, dtype=jnp.int32) > m)
  return Ranks(lo=lo, hi=hi, grades=slot_grades, num_items=num_items, overflow=overflow,
               size=n, resolved=ties == "first")


def _judged_ranks_of_dense(scores, labels, valid, tie_key, judged, num_items, *, ties, m, z,
                           method, checked):
  """:func:`ranks_of_dense` with a ``judged`` mask: the relevant slots and the :class:`Judgments`
  slots (judged items of grade 0 or in the pool) ranked by one counting pass over the items."""
  n = scores.shape[-1]
  positive, other = _judged_masks(labels, valid, judged)
  slot_index, slot_ok = relevant_slots(positive, m)
  extra_index, extra_ok = relevant_slots(other, z)
  index = jnp.concatenate([slot_index, extra_index], axis=-1)
  lo, hi = slot_ranks(scores, valid, jnp.concatenate([slot_ok, extra_ok], axis=-1), index,
                       ties=ties, method=method, tie_key=tie_key, size=n)
  slot_grades = jnp.take_along_axis(labels, slot_index, axis=-1).astype(jnp.float32)
  slot_grades = jnp.where(slot_ok, jnp.maximum(slot_grades, 0.0), 0.0)
  extra_labels = jnp.take_along_axis(labels, extra_index, axis=-1).astype(jnp.float32)
  kind = jnp.where(extra_ok, jnp.where(extra_labels < 0, POOLED, ZERO), UNUSED).astype(jnp.int8)
  overflow = (jnp.zeros(num_items.shape, bool) if checked
              else (jnp.sum(positive, axis=-1, dtype=jnp.int32) > m)
              | (jnp.sum(other, axis=-1, dtype=jnp.int32) > z))
  m_ = slot_index.shape[-1]
  return Ranks(lo=lo[..., :m_], hi=hi[..., :m_], grades=slot_grades, num_items=num_items,
               overflow=overflow, size=n, resolved=ties == "first",
               judged=Judgments(lo=lo[..., m_:], hi=hi[..., m_:], kind=kind))


def relevant_slots(positive: jax.Array, m: int) -> tuple[jax.Array, jax.Array]:
  """Item index of each of ``m`` slots per list and whether the slot holds a positive item.

  Slot ``s`` holds the ``(s + 1)``-th positive item in index order. Each block of 32 items
  becomes one uint32 bit mask (one pass over the list); a slot finds its block from the
  running count of set bits, then its item inside the block by a 5-step binary search on
  ``population_count`` of the mask's low bits. O(n + m x n / 32) per list: on CPU 2.5x faster
  than a ``top_k`` of ``m`` over the item indices (1,000 x 1,000, m = 96: 1.0 ms against 2.5).
  """
  n = positive.shape[-1]
  if m >= n:
    return jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32), positive.shape), positive
  lead = positive.shape[:-1]
  width = 32
  blocks = -(-n // width)
  p = jnp.pad(positive, [(0, 0)] * len(lead) + [(0, blocks * width - n)])
  bit = jnp.left_shift(jnp.uint32(1), jnp.arange(width, dtype=jnp.uint32))
  mask = jnp.sum(jnp.where(p.reshape(*lead, blocks, width), bit, jnp.uint32(0)), axis=-1,
                 dtype=jnp.uint32)  # distinct bits: the sum is the bitwise or
  totals = lax.population_count(mask).astype(jnp.int32)
  ends = jnp.cumsum(totals, axis=-1, dtype=jnp.int32)  # positives up to each block's end
  s = jnp.arange(m, dtype=jnp.int32)
  if blocks <= 64:
    block = jnp.sum(ends[..., None, :] <= s[:, None], axis=-1, dtype=jnp.int32)
  else:
    rows = math.prod(lead)
    block = jax.vmap(functools.partial(jnp.searchsorted, side="right"))(
        ends.reshape(rows, blocks), jnp.broadcast_to(s, (rows, m))).astype(jnp.int32)
    block = block.reshape(*lead, m)
  slot_ok = block < blocks
  block = jnp.minimum(block, blocks - 1)
  rank = s - jnp.take_along_axis(ends - totals, block, axis=-1)  # 0-based inside the block
  bits = jnp.take_along_axis(mask, block, axis=-1)
  offset = jnp.zeros_like(rank)  # the largest offset with at most `rank` set bits below it
  for step in (16, 8, 4, 2, 1):
    low = jnp.left_shift(jnp.uint32(1), (offset + step).astype(jnp.uint32)) - jnp.uint32(1)
    below = lax.population_count(bits & low).astype(jnp.int32)
    offset = jnp.where(below <= rank, offset + step, offset)
  return jnp.minimum(block * width + offset, n - 1), slot_ok
