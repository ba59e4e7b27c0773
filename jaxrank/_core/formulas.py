"""Metric formulas on the rank core, exact in expectation over the orders of tied scores.

Each formula reads a :class:`~jaxrank._core.ranks.Ranks` and returns ``(value, empty)`` per list.
With ``ties="average"`` a relevant item in a tie group ``[lo, hi]`` of size ``g = hi - lo + 1``
holding ``r_g`` relevant items sits at each position of the group with probability ``1/g``, and each
other relevant item of its group is ahead of it with probability ``(y - 1)/(g - 1)`` when it sits at
the group's ``y``-th position. Sums over a group's positions use prefix tables kept as float32
(high, low) pairs, so differences keep float64-like accuracy deep in long lists. These are the
McSherry & Najork (ECIR 2008) tie-aware values; other policies collapse every group to exact
positions first, after which the same formulas reduce to the textbook ones.

Values are float32, or float64 when JAX's x64 mode is on (the trec_eval-compatible path turns
it on, so its 4-decimal output rounds the way trec_eval's double arithmetic does).

The same code runs on NumPy: each formula takes its array namespace ``xp`` from its Ranks'
arrays (:func:`jaxrank._core.xp.ops_of`), so Ranks of NumPy arrays give float64 NumPy values on
the host without importing JAX, and Ranks of JAX arrays (or tracers under ``jit``) the values
above. This module imports no JAX.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import numpy as np

from jaxrank._core.positions import positions
from jaxrank._core.rankform import Ranks
from jaxrank._core.xp import ops_named, ops_of

if TYPE_CHECKING:
  import jax

EMPTY = ("zero", "skip", "nan")
GAINS = ("linear", "exp2")
AP_DENOMINATORS = ("all", "min_k", "retrieved")
PRECISION_DENOMINATORS = ("k", "min_k_n")


def log2_discount(rank: jax.Array) -> jax.Array:
  r"""The standard DCG discount :math:`1/\log_2(1 + \mathrm{rank})` (trec_eval, sklearn, Rax).

  Example:
    >>> import jaxrank
    >>> float(jaxrank.log2_discount(3.0))
    0.5
  """
  return 1.0 / ops_of(rank).log2(1.0 + rank)


def _reciprocal(rank):
  return 1.0 / rank


@dataclasses.dataclass(frozen=True)
class Options:
  """The formula options, hashable so they can be static under ``jit``. Built by
  :func:`jaxrank._core.options.make_options`, where each option and its default is declared."""

  threshold: float
  gain: str | Callable
  discount: Callable | None
  ties: str
  empty: str
  ap_denominator: str
  precision_denominator: str
  beta: float
  persistence: float
  max_grade: float
  graded: bool

  @property
  def discount_fn(self) -> Callable:
    return log2_discount if self.discount is None else self.discount

  def gain_of(self, grades: jax.Array) -> jax.Array:
    """The gain of each grade in the metrics' float dtype (+inf beyond its range)."""
    xp = ops_of(grades)
    grades = grades.astype(xp.float)
    if self.gain == "linear":
      return grades
    if self.gain == "exp2":
      return xp.exp2(grades) - 1.0
    return xp.asarray(cast(Callable, self.gain)(grades), xp.float)  # a gain function


def relative_gains(grades: jax.Array, reference: jax.Array, o: Options) -> jax.Array:
  r"""Gains of the positive ``grades`` over the largest gain among each list's ``reference``.

  .. math:: \tilde g(y) = \mathrm{gain}(y) / \max_{j} \mathrm{gain}(y_j) \in [0, 1]

  NDCG is a ratio of two sums of gains, so dividing every gain by the list's largest one leaves
  it unchanged while no sum can overflow, even where a gain itself does (``gain="exp2"`` of a
  grade of 128 or more, linear grades near float32's largest value). ``2^y - 1`` over
  ``2^M - 1`` is computed as ``2^{y - M} (1 - 2^{-y}) / (1 - 2^{-M})``. An infinite largest gain
  (only a callable gain, or a non-finite grade under ``jit``) counts each infinite gain as 1 and
  every finite one as 0, the limit of the ratio. Non-positive grades get 0.
  """
  xp = ops_of(grades)
  positive = grades > 0
  if o.gain == "exp2":
    y = grades.astype(xp.float)
    top = xp.max(xp.where(reference > 0, reference, 0.0), axis=-1, keepdims=True,
                  initial=0.0)
    top = xp.where(top > 0, top, 1.0).astype(xp.float)
    ln2 = np.log(2.0)
    value = xp.exp2(y - top) * (xp.expm1(-y * ln2) / xp.expm1(-top * ln2))
    return xp.where(positive, xp.where(y >= top, 1.0, value), 0.0)
  gains = o.gain_of(grades)
  top = xp.max(xp.where(reference > 0, o.gain_of(reference), -xp.inf), axis=-1,
                keepdims=True, initial=-xp.inf)
  ok = (top > 0) & (top < xp.inf)  # gains that are not positive (a callable's) stay as they are
  value = xp.where(gains >= top, 1.0, _divide_exactly(gains, xp.where(ok, top, 1.0)))
  value = xp.where(top == xp.inf, (gains == xp.inf).astype(value.dtype), value)
  return xp.where(positive, xp.where(ok | (top == xp.inf), value, gains), 0.0)


def _divide_exactly(x: jax.Array, y: jax.Array) -> jax.Array:
  """``x / y`` for positive finite ``y``, also near the float's largest value.

  XLA turns a division by a broadcast value into a multiplication by its reciprocal, and
  ``1 / 3e38`` is a float32 subnormal that the CPU flushes to 0. Both are first scaled by
  ``2^-e`` (``y = m 2^e``), in two normal steps, so the divisor is in ``[0.5, 1)``.
  """
  xp = ops_of(x)
  _, e = xp.frexp(y)
  half = e // 2
  def unit(v):
    return v * xp.exp2(-half.astype(v.dtype)) * xp.exp2((half - e).astype(v.dtype))
  return unit(x) / unit(y)


# ----------------------------------------------------------------------------------------------
# Shared pieces.


@functools.lru_cache(maxsize=64)
def _prefix_table(fn: Callable, size: int, namespace: str) -> tuple[np.ndarray, np.ndarray]:
  """F[p] = sum_{q <= p} fn(q) for p in 0..size, as a float32 (high, low) pair."""
  xp = ops_named(namespace)
  ranks = np.arange(1, size + 1, dtype=np.float64)
  with xp.ensure_compile_time_eval():
    # log2_discount takes the namespace of its argument: given the formulas' one, its log2 runs
    # in that namespace's float (under JAX as it always has). Other functions (_reciprocal, a
    # user's discount) get the float64 NumPy ranks, as they always have.
    if fn is log2_discount:
      ranks = xp.asarray(ranks)
    values = np.asarray(fn(ranks), dtype=np.float64)
  total = np.concatenate([[0.0], np.cumsum(values)])
  high = total.astype(np.float32)
  return high, (total - high.astype(np.float64)).astype(np.float32)


def _window_sum(fn, size, a, b):
  """sum_{p = a + 1}^{b} fn(p), with 0 <= a <= b <= size."""
  xp = ops_of(a)
  # The namespace (and JAX's x64 mode) is part of the table's cache key: ``fn`` runs in the
  # mode's precision, and a table first built without x64 held float32 values that x64 kernels
  # then reused (5e-9 errors).
  high, low = _prefix_table(fn, size, xp.name)
  high, low = xp.asarray(high, xp.float), xp.asarray(low, xp.float)
  return (high[b] - high[a]) + (low[b] - low[a])


def _window(lo, hi, cap):
  """Positions of each group inside the top ``cap``: (a, b] with count m = b - a >= 0."""
  xp = ops_of(lo)
  a = xp.minimum(lo - 1, cap)
  b = xp.minimum(hi, cap)
  return a, b, (b - a)


def relevant(r: Ranks, o: Options) -> jax.Array:
  """The slots whose grade reaches the relevance threshold."""
  return (r.grades >= o.threshold) & (r.grades > 0)


def _cap(r: Ranks, k: int | None) -> int:
  return r.size if k is None else min(k, r.size)


def _expected_hits(lo, hi, rel, cap):
  """Expected number of relevant items within the top ``cap`` (``cap`` may be per list)."""
  xp = ops_of(lo)
  _, _, m = _window(lo, hi, cap)
  # m.astype: int32 / int32 is float32 even in x64 mode (recall 0.9 read 0.8999999761581421)
  return xp.sum(xp.where(rel, m.astype(xp.float) / (hi - lo + 1), 0.0), axis=-1)


def _searchsorted(sorted_, queries, side):
  """Row-wise ``searchsorted`` over any leading dimensions, as floats."""
  xp = ops_of(sorted_)
  return xp.searchsorted_rows(sorted_, queries, side).astype(xp.float)


_SMALL_CAP = 32  # cutoffs up to which _group_counts counts positions by comparing


def _group_counts(lo, rel, size=None, cap=None):
  """Per slot: relevant items in strictly earlier groups, and relevant items in its own group.

  One sort of the relevant slots' ranks per list and two binary searches: O(m log m), where a
  pairwise comparison of slots would cost O(m^2). With nearly as many slots as positions
  (``size``: the lists' length, so ``lo <= size + 1``; one slot per item under ``jit`` without
  ``max_relevant``) a histogram of the positions instead: O(m + size), 10x cheaper than the
  sort on CPU at 1,000 slots of 1,000 items.

  ``cap``: only slots with ``lo <= cap`` are read (a metric at a cutoff). For a small ``cap``
  the histogram counts positions ``1..cap`` only, by ``m x cap`` compares instead of a scatter:
  exact for those slots (every earlier group starts at or before ``cap``), no sort (``AP@10`` on
  4,000 x 96 slots: 8 ms to 3 ms on a 2-core CPU). Later slots share the last bin, so their
  counts are finite but not theirs: a formula must not read them.
  """
  xp = ops_of(lo)
  m = lo.shape[-1]
  compare = cap is not None and cap <= _SMALL_CAP and cap < m
  top = cap if compare else size  # positions 1..top get a bin each; later ones share one
  if top is not None and (compare or 4 * m >= top + 2):
    at = xp.clip(lo, 0, top + 1)
    if compare:
      hist = xp.sum((at[..., :, None] == xp.arange(top + 2, dtype=at.dtype)) & rel[..., :, None],
                    axis=-2, dtype=xp.int32)
    else:
      rows = math.prod(lo.shape[:-1])
      hist = xp.scatter_add(xp.zeros((rows, top + 2), xp.int32),
                            (xp.arange(rows)[:, None], at.reshape(rows, m)),
                            rel.reshape(rows, m).astype(xp.int32))
      hist = hist.reshape(*lo.shape[:-1], top + 2)
    ahead = xp.cumsum(hist, axis=-1, dtype=xp.int32) - hist  # in strictly earlier positions
    return (xp.take_along_axis(ahead, at, axis=-1).astype(xp.float),
            xp.take_along_axis(hist, at, axis=-1).astype(xp.float))
  ranks = xp.sort(xp.where(rel, lo, xp.iinfo(xp.int32).max), axis=-1)
  before = _searchsorted(ranks, lo, "left")
  return before, _searchsorted(ranks, lo, "right") - before


def _first_hit(lo, hi, rel, cap, size, f=None):
  """E[f(rank of the first relevant item)] restricted to ranks <= cap (``f=None``: f = 1).

  In the first tie group holding a relevant item (size g, r relevant), the first relevant item is at
  the group's y-th position with P(y) = C(g - y, r - 1) / C(g, r): P(1) = r/g and
  P(y + 1) = P(y) (g - y - r + 1) / (g - y). The loop runs over the longest such group in the
  batch, cut at ``cap``; without ties that is a single step. With one slot per list (link
  prediction) the rank is uniform on lo..hi and the sum has a closed form: no loop.
  """
  xp = ops_of(lo)
  if rel.shape[-1] == 1:
    a, b, m = _window(lo[..., 0], hi[..., 0], cap)
    total = m.astype(xp.float) if f is None else _window_sum(f, size, a, b)
    return xp.where(rel[..., 0], total / (hi - lo + 1)[..., 0].astype(xp.float), 0.0)
  f = f or (lambda p: xp.ones_like(p))
  first = xp.min(xp.where(rel, lo, size + 1), axis=-1, initial=size + 1)
  in_first = rel & (lo == first[..., None])
  r = xp.sum(in_first, axis=-1).astype(xp.float)
  g = xp.max(xp.where(in_first, hi - lo + 1, 1), axis=-1, initial=1).astype(xp.float)
  steps = xp.where(r > 0, xp.minimum(g - r + 1, (cap - first + 1).astype(xp.float)), 0.0)
  steps = xp.maximum(steps, 0.0)

  def body(state):
    y, p, acc = state
    acc = acc + xp.where(y <= steps, p * f((first - 1).astype(xp.float) + y), 0.0)
    p = p * (g - y - r + 1) / xp.maximum(g - y, 1.0)
    return y + 1, p, acc

  init = (xp.float(1.0), xp.where(r > 0, r / g, 0.0), xp.zeros(first.shape, xp.float))
  _, _, acc = xp.while_loop(lambda s: s[0] <= xp.max(steps, initial=0.0), body, init)
  return acc


# ----------------------------------------------------------------------------------------------
# The metrics. Each returns (value, empty) for every list.


def precision(r, k, o):
  xp = ops_of(r.lo)
  lo, hi = positions(r, o.ties)
  rel = relevant(r, o)
  hits = _expected_hits(lo, hi, rel, _cap(r, k))
  return hits / xp.maximum(precision_denominator(r, k, o), 1), ~xp.any(rel, axis=-1)


def precision_denominator(r: Ranks, k: int | None, o: Options) -> jax.Array:
  """P@k's denominator per list: k, min(k, n), or n without k."""
  xp = ops_of(r.lo)
  if k is None:
    return r.num_items.astype(xp.float)
  if o.precision_denominator == "k":
    # Behind a barrier: XLA rewrites x / 10 as x * 0.1, one ulp off (3 / 10 -> 0.30000000000000004).
    return xp.optimization_barrier(xp.full(r.shape, k, xp.float))
  return xp.minimum(_cap(r, k), r.num_items).astype(xp.float)


def recall(r, k, o):
  xp = ops_of(r.lo)
  lo, hi = positions(r, o.ties)
  rel = relevant(r, o)
  nrel = xp.sum(rel, axis=-1)
  return _expected_hits(lo, hi, rel, _cap(r, k)) / xp.maximum(nrel, 1), nrel == 0


def fbeta(r, k, o):
  # F = (1 + b^2) P R / (b^2 P + R) = (1 + b^2) hits / (b^2 R + D) = hits / (w R + (1 - w) D)
  # with w = b^2 / (1 + b^2) in [0, 1]: linear in hits, so the expectation over tie orders is
  # exact, and finite for every beta (w = 1 for beta = inf: recall; w -> 0: precision).
  xp = ops_of(r.lo)
  lo, hi = positions(r, o.ties)
  rel = relevant(r, o)
  nrel = xp.sum(rel, axis=-1)
  hits = _expected_hits(lo, hi, rel, _cap(r, k))
  b2 = o.beta * o.beta  # a float product overflows to inf (never raises, unlike **)
  w, rest = (1.0, 0.0) if b2 == math.inf else (b2 / (1.0 + b2), 1.0 / (1.0 + b2))
  denom = w * nrel + rest * precision_denominator(r, k, o)
  return hits / xp.where(denom > 0, denom, 1.0), nrel == 0


def r_precision(r, k, o):
  xp = ops_of(r.lo)
  lo, hi = positions(r, o.ties)
  rel = relevant(r, o)
  nrel = xp.sum(rel, axis=-1, dtype=xp.int32)
  cut = nrel if k is None else xp.minimum(nrel, min(k, r.lo.shape[-1]))  # nrel <= slots
  # positions beyond the list do not exist: unranked slots (size + 1) are never within R
  hits = _expected_hits(lo, hi, rel, xp.minimum(cut, r.size)[..., None])
  return hits / xp.maximum(cut, 1), nrel == 0


def hit_rate(r, k, o):
  xp = ops_of(r.lo)
  lo, hi = positions(r, o.ties)
  rel = relevant(r, o)
  value = _first_hit(lo, hi, rel, _cap(r, k), r.size)
  return value, ~xp.any(rel, axis=-1)


def reciprocal_rank(r, k, o):
  xp = ops_of(r.lo)
  lo, hi = positions(r, o.ties)
  rel = relevant(r, o)
  value = _first_hit(lo, hi, rel, _cap(r, k), r.size, _reciprocal)
  return value, ~xp.any(rel, axis=-1)


def average_precision(r, k, o):
  xp = ops_of(r.lo)
  lo, hi = positions(r, o.ties)
  rel = relevant(r, o)
  cap = _cap(r, k)
  before, same = _group_counts(lo, rel, r.size, cap)  # slots beyond cap add 0 (m = dh = 0)
  a, b, m = _window(lo, hi, cap)
  g = (hi - lo + 1).astype(xp.float)
  # sum over the group's positions p in (a, b] of (1 + before + (same-1)(p-lo)/(g-1)) / p
  dh = _window_sum(_reciprocal, r.size, a, b)
  tied = ((1 + before) * dh + (same - 1) / xp.maximum(g - 1, 1) * (m - lo * dh)) / g
  exact = xp.where(lo <= cap, (1 + before) / lo, 0.0)
  total = xp.sum(xp.where(rel, xp.where(g == 1, exact, tied), 0.0), axis=-1)
  nrel = xp.sum(rel, axis=-1)
  if o.ap_denominator == "all":
    denom = nrel.astype(xp.float)
  elif o.ap_denominator == "min_k":
    denom = nrel if k is None else xp.minimum(nrel, min(k, r.lo.shape[-1]))  # nrel <= slots
    denom = denom.astype(xp.float)
  else:
    denom = _expected_hits(lo, hi, rel, cap)
  return xp.where(denom > 0, total / xp.where(denom > 0, denom, 1), 0.0), nrel == 0


def average_recall(r, k, o):
  xp = ops_of(r.lo)
  lo, hi = positions(r, o.ties)
  rel = relevant(r, o)
  cap = _cap(r, k)
  before, same = _group_counts(lo, rel, r.size, cap)  # slots beyond cap add 0 (m = 0)
  _, _, m = _window(lo, hi, cap)
  g = (hi - lo + 1).astype(xp.float)
  # sum over positions in the window of (1 + relevant ahead), each divided by R, averaged over R
  mass = ((1 + before) * m + (same - 1) / xp.maximum(g - 1, 1) * m * (m - 1) / 2) / g
  nrel = xp.sum(rel, axis=-1).astype(xp.float)
  total = xp.sum(xp.where(rel, mass, 0.0), axis=-1)
  return total / xp.maximum(nrel, 1) ** 2, nrel == 0


def dcg(r, k, o):
  xp = ops_of(r.lo)
  return _dcg(r, k, o, o.gain_of(r.grades)), ~xp.any(r.grades > 0, axis=-1)


def _dcg(r, k, o, gains):
  """sum of gains x (expected) discount over each list's slots; ``gains`` per slot."""
  xp = ops_of(r.lo)
  lo, hi = positions(r, o.ties)
  cap = _cap(r, k)
  disc = o.discount_fn
  gains = xp.where(r.grades > 0, gains, 0.0)
  a, b, _ = _window(lo, hi, cap)
  g = hi - lo + 1
  exact = xp.where(lo <= cap, disc(lo.astype(xp.float)), 0.0)
  weight = xp.where(g == 1, exact, _window_sum(disc, r.size, a, b) / g)
  return xp.sum(xp.where(weight > 0, gains * weight, 0.0), axis=-1)  # inf x 0 is no gain


def ideal_dcg(r: Ranks, k: int | None, o: Options, relative: bool = False) -> jax.Array:
  """DCG of the grades sorted in decreasing order (every positive grade of the list).

  ``relative=True`` uses :func:`relative_gains` (the ideal DCG over the list's largest gain).
  """
  xp = ops_of(r.lo)
  m = r.grades.shape[-1]
  # cut at k only: a ranked-ids list may hold fewer items (size) than relevant ones (m)
  cap = m if k is None else min(k, m)
  if xp.device_count() == 1:
    # A float32 top_k of the cap largest (the grades are >= 0 and not NaN: the top_k's bit order
    # is their value order). On CPU 10x faster than the sort below with one slot per item
    # (10,000 x 1,000, k = 10: 26 vs 269 ms, most of a jitted ndcg without max_relevant).
    best = xp.top_k(r.grades, cap)
  else:
    # GSPMD gathers a top_k's operand across devices when the lists are sharded (it does not
    # for a sort): one single-operand int32 sort (non-negative floats sort like their bits).
    bits = xp.sort(xp.bitcast(r.grades, xp.int32), axis=-1)
    best = xp.bitcast(bits[..., ::-1][..., :cap], xp.float32)  # grades' dtype
  gains = relative_gains(best, r.grades, o) if relative else o.gain_of(best)
  disc = o.discount_fn(xp.arange(1, cap + 1, dtype=xp.float))
  return xp.sum(xp.where(best > 0, gains * disc, 0.0), axis=-1)


def ndcg(r, k, o):
  # Gains over the list's largest gain: the same ratio, and no sum overflows (relative_gains).
  xp = ops_of(r.lo)
  ideal = ideal_dcg(r, k, o, relative=True)
  value = _dcg(r, k, o, relative_gains(r.grades, r.grades, o)) / xp.where(ideal > 0, ideal, 1.0)
  return xp.clip(value, 0.0, 1.0), ~(ideal > 0)


def mean_rank(r, k, o):
  xp = ops_of(r.lo)
  lo, hi = positions(r, o.ties)
  rel = relevant(r, o)
  # k + 1 as a float: any k (a huge one too) without int32 overflow
  censor = (r.num_items + 1 if k is None else xp.full(r.shape, float(k) + 1.0)).astype(xp.float)
  c = censor[..., None]
  lo_f, hi_f = lo.astype(xp.float), hi.astype(xp.float)
  top = xp.minimum(hi_f, c - 1)
  below = xp.where(top >= lo_f, (lo_f + top) * (top - lo_f + 1) / 2, 0.0)
  beyond = c * xp.maximum(hi_f - xp.maximum(lo_f, c) + 1, 0.0)
  expected = (below + beyond) / (hi_f - lo_f + 1)
  expected = xp.where(lo > r.size, c, expected)  # unranked: censored, whatever k is
  nrel = xp.sum(rel, axis=-1)
  return xp.sum(xp.where(rel, expected, 0.0), axis=-1) / xp.maximum(nrel, 1), nrel == 0


def err(r, k, o):
  # ERR = sum_i R_i / rank_i prod_{j ahead of i} (1 - R_j), R = (2^y - 1) / 2^max_grade: the
  # cascade of Chapelle et al. (2009). Relevant slots in strictly earlier tie groups are ahead
  # for sure (A below); inside a group the order is uniform, handled exactly by _err_groups.
  xp = ops_of(r.lo)
  lo, hi = positions(r, o.ties)
  cap = _cap(r, k)
  rel = (r.grades > 0) & (lo <= r.size)
  y = r.grades.astype(xp.float)
  stop = xp.clip(xp.exp2(y - o.max_grade) - xp.exp2(-o.max_grade), 0.0, 1.0)
  stop = xp.where(rel, stop, 0.0)
  keep = 1.0 - stop
  # A_i = prod of keep over relevant slots of earlier groups: one sort by rank, a cumprod.
  key = xp.where(rel, lo, xp.iinfo(xp.int32).max)
  sorted_key, sorted_keep = xp.sort_together((key, keep), num_keys=1)
  ahead = xp.concatenate([xp.ones_like(sorted_keep[..., :1]),
                           xp.cumprod(sorted_keep, axis=-1)[..., :-1]], axis=-1)
  first = _searchsorted(sorted_key, lo, "left").astype(xp.int32)
  same = (_searchsorted(sorted_key, lo, "right") - first).astype(xp.float)
  a_prod = xp.take_along_axis(ahead, xp.minimum(first, ahead.shape[-1] - 1), axis=-1)
  g = (hi - lo + 1).astype(xp.float)

  def alone(_):  # every group holds at most one relevant slot: the mean of 1/p over its window
    a, b, _ = _window(lo, hi, cap)
    w = xp.where(g == 1, xp.where(lo <= cap, 1.0 / lo.astype(xp.float), 0.0),
                  _window_sum(_reciprocal, r.size, a, b) / g)
    return xp.sum(xp.where(rel, stop * a_prod * w, 0.0), axis=-1)

  def grouped(_):
    return _err_groups(lo, g, rel, keep, a_prod, same, cap)

  value = xp.cond(xp.any(rel & (same >= 2)), grouped, alone, None)
  return value, ~xp.any(r.grades > 0, axis=-1)


def _err_groups(lo, g, rel, keep, a_prod, q, cap):
  """ERR when some tie group holds q >= 2 relevant slots: exact, O(m^2) memory per list.

  In a group of g positions from ``lo`` with relevant slots of keep factors x_1..x_q, the
  relevant items come in a uniform order, independent of where the q relevant positions fall.
  The cascade stops at the l-th relevant item with probability D_l = E_{l-1} - E_l, E_l the mean
  of the products of l of the x's (a convex-combination recurrence, no binomials), and the l-th
  relevant position P_l is the l-th order statistic of q positions out of g, so the group adds
  A sum_l D_l E[1/(lo - 1 + P_l); lo - 1 + P_l <= cap].
  """
  xp = ops_of(lo)
  m = lo.shape[-1]
  idx = xp.arange(m)
  same = rel[..., :, None] & rel[..., None, :] & (lo[..., :, None] == lo[..., None, :])
  rep = rel & ~xp.any(same & (idx[None, :] < idx[:, None]), axis=-1)  # first slot of its group
  levels = xp.arange(m + 1, dtype=xp.float)

  def add(j, state):  # E over the subsets of the group's slots seen so far, slot j joins
    mean, s = state
    join = same[..., j]
    x = keep[..., j][..., None, None]
    shifted = xp.concatenate([xp.zeros_like(mean[..., :1]), mean[..., :-1]], axis=-1)
    new = (mean * (s + 1 - levels) + x * shifted * levels) / (s + 1)
    return xp.where(join[..., None], new, mean), xp.where(join[..., None], s + 1, s)

  mean0 = xp.scatter_set(xp.zeros(lo.shape + (m + 1,), xp.float), (..., 0), 1.0)
  s0 = xp.zeros(lo.shape + (1,), xp.float)
  mean, _ = xp.fori_loop(0, m, add, (mean0, s0))
  ell = levels[1:]  # l = 1..m
  qq, gg = q[..., None], g[..., None]
  stop_at = xp.where(ell <= qq, mean[..., :-1] - mean[..., 1:], 0.0)
  # P(P_l = l) = prod_{i < l} (q - i) / (g - i); then P(P_l = p + 1) / P(P_l = p) =
  # p (g - p - q + l) / ((p - l + 1) (g - p)).
  start = xp.cumprod(xp.clip((qq - ell + 1) / xp.maximum(gg - ell + 1, 1.0), 0.0, 1.0),
                      axis=-1)
  lo_f = lo.astype(xp.float)[..., None]
  last = xp.minimum(g, (cap - lo + 1).astype(xp.float))  # positions of the group counted
  steps = xp.max(xp.where(rep, last, 0.0), initial=0.0)

  def body(state):
    p, prob, acc = state
    on = (ell <= p) & (p <= gg - qq + ell) & (p <= last[..., None]) & (ell <= qq)
    acc = acc + xp.where(on, prob / (lo_f - 1 + p), 0.0)
    move = ell <= p
    ratio = p * (gg - p - qq + ell) / xp.maximum((p - ell + 1) * (gg - p), 1.0)
    prob = xp.where(move, prob * xp.maximum(ratio, 0.0), prob)
    return p + 1, prob, acc

  init = (xp.float(1.0), start, xp.zeros(start.shape, xp.float))
  _, _, acc = xp.while_loop(lambda s: s[0] <= steps, body, init)
  value = a_prod * xp.sum(stop_at * acc, axis=-1)
  return xp.sum(xp.where(rep, value, 0.0), axis=-1)


def rbp(r, k, o):
  # Written twice on purpose: trec_eval's float64 prefix counts over ordered runs are
  # jaxrank._trec.calc.rbp (trec_eval's order of operations); this formula also takes the
  # tie-aware policies. tests/core/test_judged.py holds the two equal on ordered runs (graded gains
  # are divided in float32 below: equal to ~1e-8 there, a strict xfail until they are not).
  # RBP = (1 - p) sum_i gain_i p^(rank_i - 1); a tie group spreads p^(rank - 1) evenly over its
  # window (a, b]: (1 - p) sum_{q=a+1}^{b} p^(q-1) / g = (p^a - p^b) / g. Exact by linearity.
  xp = ops_of(r.lo)
  lo, hi = positions(r, o.ties)
  a, b, _ = _window(lo, hi, _cap(r, k))
  p = o.persistence
  weight = (xp.power(p, a.astype(xp.float)) - xp.power(p, b.astype(xp.float))) / (
      hi - lo + 1).astype(xp.float)
  rel = relevant(r, o)
  if o.graded:  # grades over the list's largest grade when it is above 1 (trec_eval's rbp)
    top = xp.max(xp.where(r.grades > 0, r.grades, 0.0), axis=-1, keepdims=True, initial=0.0)
    gains = xp.where(r.grades > 0, r.grades / xp.maximum(top, 1.0), 0.0).astype(xp.float)
  else:
    gains = rel.astype(xp.float)
  value = xp.sum(xp.where(weight > 0, gains * weight, 0.0), axis=-1)
  return value, ~xp.any(rel if not o.graded else r.grades > 0, axis=-1)


def rbp_residual(r, k, o):
  # Every position beyond the evaluated depth d = min(k, n) is unknown: p^d of RBP's weight.
  xp = ops_of(r.lo)
  depth = r.num_items if k is None else xp.minimum(r.num_items, k)
  value = xp.power(o.persistence, depth.astype(xp.float))
  return value, xp.zeros(r.shape, bool)


# ----------------------------------------------------------------------------------------------
# Judgment-based metrics: they tell judged non-relevant items from unjudged ones
# (jaxrank._core.ranks.Judgments; Ranks.judged None: every ranked item is judged).


def _below(keys: jax.Array, mask: jax.Array, queries: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Per query: #{masked keys < query} and #{masked keys == query} (one sort, two searches)."""
  xp = ops_of(keys)
  ranks = xp.sort(xp.where(mask, keys, xp.iinfo(xp.int32).max), axis=-1)
  before = _searchsorted(ranks, queries, "left")
  return before, _searchsorted(ranks, queries, "right") - before


def judged_counts(r: Ranks, o: Options) -> dict[str, jax.Array]:
  """What the judgment-based metrics read, per relevant slot and per list (floats).

  Tie groups are told apart by ``lo`` (the raw bounds, before any tie policy). Per slot:
  ``nonrel``/``nonrel_tied``: judged non-relevant items (grade 0, or a positive grade below
  ``threshold``) in strictly earlier groups / in its own group; ``pooled``/``pooled_tied``: the
  same for items in the pool but unjudged. Per list: ``judged_nonrel`` (N, ranked or not) and
  ``num_rel`` (R, ranked or not). Without :class:`~jaxrank._core.ranks.Judgments` every ranked item
  is judged: the non-relevant items above a slot are all its items above minus the relevant ones.
  """
  xp = ops_of(r.lo)
  rel = relevant(r, o)
  ranked = r.lo <= r.size
  before, same = _group_counts(r.lo, rel & ranked)
  num_rel = xp.sum(rel, axis=-1).astype(xp.float)
  if r.judged is None:
    zeros = xp.zeros(r.lo.shape, xp.float)
    g = (r.hi - r.lo + 1).astype(xp.float)
    return dict(nonrel=(r.lo - 1).astype(xp.float) - before, nonrel_tied=g - same,
                pooled=zeros, pooled_tied=zeros, num_rel=num_rel,
                judged_nonrel=r.num_items.astype(xp.float) - xp.sum(rel & ranked, axis=-1))
  j = r.judged
  sub = (r.grades > 0) & ~rel  # judged, graded below the threshold: not relevant
  zero = j.kind == 1
  z_above, z_tied = _below(j.lo, zero & (j.lo <= r.size), r.lo)
  s_above, s_tied = _below(r.lo, sub & ranked, r.lo)
  p_above, p_tied = _below(j.lo, (j.kind == 2) & (j.lo <= r.size), r.lo)
  return dict(nonrel=z_above + s_above, nonrel_tied=z_tied + s_tied, pooled=p_above,
              pooled_tied=p_tied, num_rel=num_rel,
              judged_nonrel=(xp.sum(zero, axis=-1) + xp.sum(sub, axis=-1)).astype(xp.float))


def _no_cutoff(name: str, k: int | None) -> None:
  if k is not None:
    raise ValueError(f"{name} takes no cutoff (as trec_eval and ir_measures), got k={k}")


def bpref(r, k, o):
  # Written twice on purpose: trec_eval's float64 prefix counts over ordered runs are
  # jaxrank._trec.calc.bpref (trec_eval's order of operations); this formula also takes the
  # tie-aware policies. tests/core/test_judged.py holds the two equal on ordered runs.
  # bpref = (1/R) sum over retrieved relevant i of 1 - min(n_i, R) / min(N, R), n_i the judged
  # non-relevant items above i (trec_eval). In i's tie group of u judged non-relevant items the
  # number of them ahead of i is uniform on 0..u (average), 0 (optimistic) or u (pessimistic).
  xp = ops_of(r.lo)
  _no_cutoff("bpref", k)
  positions(r, o.ties)  # the same error for ties="first" on unresolved Ranks
  c = judged_counts(r, o)
  big_r = c["num_rel"][..., None]
  n0, u = c["nonrel"], c["nonrel_tied"]
  if r.resolved or o.ties == "first" or o.ties == "optimistic":
    capped = xp.minimum(n0, big_r)
  elif o.ties == "pessimistic":
    capped = xp.minimum(n0 + u, big_r)
  else:  # mean of min(n0 + b, R) over b = 0..u: c terms below R, the rest equal to R
    below = xp.clip(big_r - n0, 0.0, u + 1)
    capped = (below * n0 + below * (below - 1) / 2 + (u + 1 - below) * big_r) / (u + 1)
  denom = xp.minimum(c["judged_nonrel"][..., None], big_r)
  term = xp.where(denom > 0, 1.0 - capped / xp.where(denom > 0, denom, 1.0), 1.0)
  retrieved = relevant(r, o) & (r.lo <= r.size)
  total = xp.sum(xp.where(retrieved, term, 0.0), axis=-1)
  return total / xp.maximum(c["num_rel"], 1.0), c["num_rel"] == 0


INFAP_EPSILON = 1e-5  # trec_eval's INFAP_EPSILON


def infap(r, k, o):
  # Written twice on purpose: trec_eval's float64 prefix counts over ordered runs are
  # jaxrank._trec.calc.inf_ap (trec_eval's order of operations); this formula also takes the
  # tie-aware policies. tests/core/test_judged.py holds the two equal on ordered runs.
  # infAP (Yilmaz & Aslam 2006, trec_eval's m_infAP.c): for the retrieved relevant item at
  # 0-based position i with R_b relevant, N_b judged non-relevant and P_b pooled-unjudged items
  # above it, 1 / (i + 1) + i / (i + 1) (R_b + N_b + P_b) / i (R_b + eps) / (R_b + N_b + 2 eps)
  # (1 at i = 0), summed and divided by R. Optimistic / pessimistic ties put every non-relevant
  # item of the group behind / ahead of the relevant ones; "average" is exact for relevant
  # items without ties, and the list is NaN when one is tied (no closed form).
  xp = ops_of(r.lo)
  _no_cutoff("infap", k)
  c = judged_counts(r, o)
  rel = relevant(r, o)
  retrieved = rel & (r.lo <= r.size)
  pos, _ = positions(r, o.ties)  # lo == hi except under "average"
  if r.resolved or o.ties in ("average", "first"):
    rel_above, _ = _group_counts(r.lo, retrieved)
    nonrel, pooled = c["nonrel"], c["pooled"]
  else:
    rel_above, _ = _group_counts(pos, retrieved)
    ahead = o.ties == "pessimistic"
    nonrel = c["nonrel"] + (c["nonrel_tied"] if ahead else 0.0)
    pooled = c["pooled"] + (c["pooled_tied"] if ahead else 0.0)
  i = (pos - 1).astype(xp.float)
  eps = INFAP_EPSILON
  frac = (rel_above + nonrel + pooled) / xp.maximum(i, 1.0)
  term = 1.0 / (i + 1) + i / (i + 1) * frac * ((rel_above + eps) / (rel_above + nonrel + 2 * eps))
  term = xp.where(i == 0, 1.0, term)
  value = xp.sum(xp.where(retrieved, term, 0.0), axis=-1) / xp.maximum(c["num_rel"], 1.0)
  if not r.resolved and o.ties == "average":
    value = xp.where(xp.any(retrieved & (r.hi > r.lo), axis=-1), xp.nan, value)
  return value, c["num_rel"] == 0


def judged(r, k, o):
  # Judged@k (ir_measures): the share of the top min(k, n) items that carry a judgment (a qrels
  # entry of any value: graded, grade 0, or in the pool but unjudged). Optimistic / pessimistic
  # ties put a group's judged items first / last, "average" counts each in expectation.
  xp = ops_of(r.lo)
  positions(r, o.ties)  # the same error for ties="first" on unresolved Ranks
  cap = _cap(r, k)
  depth = (r.num_items if k is None else xp.minimum(r.num_items, k)).astype(xp.float)
  if r.judged is None:  # every ranked item is judged
    count = depth
  else:
    lo = xp.concatenate([r.lo, r.judged.lo], axis=-1)
    hi = xp.concatenate([r.hi, r.judged.hi], axis=-1)
    mask = xp.concatenate([r.grades > 0, r.judged.kind > 0], axis=-1) & (lo <= r.size)
    if r.resolved or o.ties in ("average", "first"):
      count = _expected_hits(lo, hi, mask, cap)
    else:  # a group's judged items fill its first (last) places; spread over its judged items
      _, same = _group_counts(lo, mask)
      first = lo if o.ties == "optimistic" else hi.astype(xp.float) - same + 1
      inside = xp.clip(cap - first + 1, 0.0, same)
      count = xp.sum(xp.where(mask, inside / xp.maximum(same, 1.0), 0.0), axis=-1)
  return count / xp.maximum(depth, 1.0), depth == 0


# An overflowed list's value (more relevant items than slots, only possible under jit with too
# small a max_relevant): a quiet NaN with a payload of its own, so a mean under empty="skip"
# that sees only the values (jaxrank.mean, as_loss) tells it from an empty list's NaN and keeps
# it. float32's bit pattern; float64's is the same NaN converted (the conversion keeps payloads).
_OVERFLOW_BITS32 = 0x7FE50000


def overflow_nan(dtype) -> np.ndarray:
  """The NaN that marks an overflowed list, as a scalar of float ``dtype``.

  Example:
    >>> import numpy as np
    >>> from jaxrank._core import formulas as _formulas
    >>> v = _formulas.overflow_nan(np.float32)
    >>> bool(np.isnan(v)), hex(v.view(np.uint32))
    (True, '0x7fe50000')
  """
  return np.array(_OVERFLOW_BITS32, np.uint32).view(np.float32).astype(dtype)


def overflowed(values: jax.Array) -> jax.Array:
  """Which values are :func:`overflow_nan` (an overflowed list's), not any other NaN.

  Only float32 and float64 hold the mark (the metrics' dtypes); other dtypes give all False.
  Selecting, slicing, stacking and float32 -> float64 conversion keep it; arithmetic on a NaN may
  not.

  Example:
    >>> import numpy as np
    >>> from jaxrank._core import formulas as _formulas
    >>> _formulas.overflowed(np.array([1.0, np.nan, _formulas.overflow_nan(np.float64)])).tolist()
    [False, False, True]
  """
  xp = ops_of(values)
  values = xp.asarray(values)
  bits = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}.get(
      np.dtype(values.dtype))
  if bits is None:
    return xp.zeros(values.shape, bool)
  mark = overflow_nan(values.dtype).view(bits)
  return xp.bitcast(values, bits) == mark


def finish(value: jax.Array, empty: jax.Array, r: Ranks, o: Options) -> jax.Array:
  """Applies the empty-list policy and marks overflowed lists with :func:`overflow_nan`."""
  xp = ops_of(r.lo)
  value = value.astype(xp.float)
  if o.empty == "zero":
    value = xp.where(empty, 0.0, value)
  else:
    value = xp.where(empty, xp.nan, value)
  return xp.where(r.overflow, overflow_nan(value.dtype), value)
