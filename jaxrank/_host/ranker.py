"""Host-side (NumPy) steps shared by the TREC path and the NumPy face: grouping, tie
resolution, and scoring the ranks of relevant items with the rank core.

Both doors hold flat columns (a list index per item, ids or scores, grades) and need the same
few steps: each element's place within its list, the first repeated ``(list, item)`` pair, exact
positions inside tie groups, and the metrics of lists from the rank bounds of their relevant
items (:func:`score_ranks`: padded chunks, few compiled shapes, float64 like trec_eval).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank._core import compute as _compute
from jaxrank._host import executables as _executables
from jaxrank._core import ranks as _ranks
from jaxrank._core import table as _table


def bucket(n: int, minimum: int = 1) -> int:
  """The next power of two >= ``max(n, minimum)``: few distinct shapes, few compilations."""
  return 1 << (max(int(n), int(minimum), 1) - 1).bit_length()


# Padded [lists, slots] elements per kernel call: bounds the memory of a chunk whatever the number
# of relevant documents of its lists; small batches are padded up to it (few distinct shapes).
ELEMENTS = 1 << 20
MIN_ELEMENTS = 1 << 12


@functools.partial(jax.jit, static_argnames=("specs", "options", "size", "resolved"))
def _kernel(lo, hi, grades, num_items, judged=None, *, specs, options, size, resolved):
  ranks = _ranks.Ranks(lo=lo, hi=hi, grades=grades, num_items=num_items,
                       overflow=jnp.zeros(num_items.shape, bool), size=size,
                       resolved=resolved,
                       judged=None if judged is None else _ranks.Judgments(*judged))
  return _compute.compute_ranks(ranks, specs=specs, options=options)


def _padded_slots(lists, first, base, lo, hi, values, rows, nslots, size, dtype):
  """``[rows, nslots]`` lo, hi and values of slots of lists ``base, base + 1, ...`` (the slots'
  ``lists``, each list's first slot at ``first``), unused and unranked (lo == 0) slots at
  ``size + 1``, in canonical order."""
  r = lists - base
  c = first[base] + np.arange(lists.size) - first[lists]
  p_lo = np.full((rows, nslots), size + 1, np.int32)
  p_hi = np.full((rows, nslots), size + 1, np.int32)
  p_values = np.zeros((rows, nslots), np.float32)
  ranked = lo > 0
  p_lo[r, c] = np.where(ranked, lo, size + 1)
  p_hi[r, c] = np.where(ranked, hi, size + 1)
  p_values[r, c] = values
  p_lo, p_hi, p_values = canonical_slots(p_lo, p_hi, p_values)
  return p_lo, p_hi, p_values.astype(dtype)


def _by_list(n_lists: int, lists: np.ndarray, *columns: np.ndarray):
  """``(lists, *columns)`` grouped by list (a stable sort, skipped when already grouped), each
  list's count, and the index of its first element."""
  if lists.size and np.any(lists[1:] < lists[:-1]):
    order = np.argsort(lists, kind="stable")
    lists, columns = lists[order], tuple(c[order] for c in columns)
  counts = np.bincount(lists, minlength=n_lists)
  return (lists, *columns), counts, np.concatenate([[0], np.cumsum(counts)])


def needs_judgments(specs: tuple) -> bool:
  """Whether a metric of ``specs`` (``(name, k)`` pairs) reads judged non-relevant items."""
  return any(_table.reads_judgments(name) for name, _ in specs if name in _table.METRICS)


def spans(sizes: np.ndarray, budget: int, most: int):
  """Consecutive ``(start, stop)`` blocks of lists whose padded size, the number of lists times
  the largest of their ``sizes``, stays within ``budget`` (a larger list gets a block of its
  own), with at most ``most`` lists each."""
  start, n = 0, sizes.size
  while start < n:
    cap = min(n, start + most)
    cost = np.arange(1, cap - start + 1) * np.maximum.accumulate(sizes[start:cap])
    stop = start + max(1, int(np.searchsorted(cost, budget, "right")))
    yield start, stop
    start = stop


def row_calls(n: int, most: int, least: int = 1):
  """``(start, stop, rows)`` of consecutive calls over ``n`` rows: at most ``most`` rows each,
  each padded to ``rows``, a power of two (>= ``least``) with at most a third of padding."""
  start = 0
  while start < n:
    rows = min(bucket(n - start, least), bucket(most))
    if rows // 2 >= least and n - start <= rows * 3 // 4:
      rows //= 2
    yield start, min(n, start + rows), rows
    start += rows


def resolve_ties(rel_list: np.ndarray, lo: np.ndarray, hi: np.ndarray, grade: np.ndarray,
                 policy: str) -> np.ndarray:
  """Exact positions of relevant items in their tie groups ``[lo, hi]`` under ``policy``:
  ``"optimistic"`` puts them first (higher grades first), ``"pessimistic"`` last (higher grades
  last). Items that are not ranked (``lo == 0``) stay unranked. O(m log m) on the host."""
  sign = -1 if policy == "optimistic" else 1
  order = np.lexsort((sign * grade, lo, rel_list))
  lists, g_lo, g_hi = rel_list[order], lo[order], hi[order]
  start = np.ones(lists.size, bool)
  start[1:] = (lists[1:] != lists[:-1]) | (g_lo[1:] != g_lo[:-1])
  group = np.cumsum(start) - 1
  first = np.flatnonzero(start)
  index = np.arange(lists.size) - first[group]  # rank within the group's relevant items
  size = np.bincount(group, minlength=first.size)[group]
  at = g_lo + index if policy == "optimistic" else g_hi - (size - 1 - index)
  out = np.empty(lo.size, np.int64)
  out[order] = np.where(g_lo > 0, at, 0)
  return out


def score_ranks(n_lists: int, length: np.ndarray, num_items: np.ndarray, rel_list: np.ndarray,
                rel_lo: np.ndarray, rel_hi: np.ndarray, rel_grade: np.ndarray, specs: tuple,
                options, *, resolved: bool, chunk: int = 1 << 16,
                progress: Callable[[int, int], None] | None = None,
                judged: tuple | None = None,
                shapes: list | None = None) -> tuple[np.ndarray, ...]:
  """Core metrics of ``n_lists`` lists from the rank bounds of their relevant items.

  List ``i`` ranks ``num_items[i]`` items in a catalog of ``length[i]``; each relevant item
  ``(rel_list, rel_lo, rel_hi, rel_grade)`` sits somewhere in ranks ``[lo, hi]`` (``lo == hi``
  when ``resolved``; ``lo == 0``: not ranked). ``options.ties`` optimistic or pessimistic is
  applied here. Lists are scored in chunks of at most ``chunk`` lists and about
  :data:`ELEMENTS` padded slots, every dimension padded to a power of two (few compilations);
  each list's slots are in a canonical order (by rank, then grade), so a value depends on the
  data only, not on the order of the input lines. The kernel runs in JAX's x64 mode, so values
  are float64 like trec_eval's.

  ``judged``: ``(list, lo, hi, kind)`` of the judged items that are not relevant slots
  (:class:`jaxrank._core.ranks.Judgments` kinds ``ZERO``/``POOLED``; ``lo == 0``: not ranked), for
  the metrics that read them (:func:`needs_judgments`); without it no such item exists.

  ``shapes``: the padded shapes of earlier calls (a list this call adds to), for a caller that
  scores a run a chunk at a time: a batch that fits one of them, within :data:`REUSE` times its
  own padded size, is padded to it, so the kernel is traced and loaded once, not per chunk.
  """
  rel_lo, rel_hi = np.asarray(rel_lo, np.int64), np.asarray(rel_hi, np.int64)
  if judged is not None:
    (j_list, j_lo, j_hi, j_kind), j_slots, j_first = _by_list(
        n_lists, *(np.asarray(x) for x in judged))
  if not resolved and judged is None and options.ties in ("optimistic", "pessimistic"):
    rel_lo = rel_hi = resolve_ties(rel_list, rel_lo, rel_hi, rel_grade, options.ties)
    resolved = True
  if resolved:  # positions are final: one compilation serves every tie policy
    options = dataclasses.replace(options, ties="first")
  (rel_list, rel_lo, rel_hi, rel_grade), slots, rel_first = _by_list(
      n_lists, rel_list, rel_lo, rel_hi, rel_grade)
  outs: list[list[np.ndarray]] = [[] for _ in specs]
  width = slots if judged is None else slots + j_slots
  for lo_list, hi_list in spans(np.maximum(width, 8), ELEMENTS, chunk):
    rows = hi_list - lo_list
    nslots = _ranks.bucket(max(int(slots[lo_list:hi_list].max()), 8))
    nb = bucket(rows, max(1, MIN_ELEMENTS // nslots))
    size = bucket(int(length[lo_list:hi_list].max()), 16)
    a, b = rel_first[lo_list], rel_first[hi_list]
    zslots = 0
    if judged is not None:
      zslots = _ranks.bucket(max(int(j_slots[lo_list:hi_list].max()), 1))
    if shapes is not None:
      nb, nslots, zslots = _reused(shapes, (nb, nslots, zslots, size))
    lo, hi, grades = _padded_slots(rel_list[a:b], rel_first, lo_list, rel_lo[a:b], rel_hi[a:b],
                                   rel_grade[a:b], nb, nslots, size, np.float32)
    extra = None
    if judged is not None:
      a, b = j_first[lo_list], j_first[hi_list]
      extra = _padded_slots(j_list[a:b], j_first, lo_list, j_lo[a:b], j_hi[a:b], j_kind[a:b],
                            nb, zslots, size, np.int8)
    items = np.zeros(nb, np.int32)
    items[:rows] = num_items[lo_list:hi_list]
    with jax.enable_x64(True):  # float64 formulas: means print as trec_eval's doubles do
      out = _executables.call(_kernel, lo, hi, grades, items, extra, specs=specs,
                              options=options, size=size,
                    resolved=resolved)
      for acc, v in zip(outs, out):
        acc.append(np.asarray(v, np.float64)[:rows])
    if progress is not None:
      progress(hi_list, n_lists)
  if n_lists == 0:
    return tuple(np.zeros(0) for _ in specs)
  return tuple(np.concatenate(acc) for acc in outs)


REUSE = 4  # a batch is padded to an earlier shape up to this many times its own padded size


def _reused(shapes: list, need: tuple[int, int, int, int]) -> tuple[int, int, int]:
  """``(rows, slots, judged slots)`` for a batch that needs ``need`` (the same and its
  ``size``): the smallest of ``shapes`` (earlier ``(rows, slots, judged slots, size)``) that
  holds it within :data:`REUSE` times its elements, else ``need`` itself, added to ``shapes``."""
  rows, slots, zslots, size = need
  fits = [s for s in shapes if s[3] == size and s[0] >= rows and s[1] >= slots and s[2] >= zslots
          and s[0] * (s[1] + s[2]) <= REUSE * rows * (slots + zslots)]
  if fits:
    return min(fits, key=lambda s: s[0] * (s[1] + s[2]))[:3]
  shapes.append(need)
  return need[:3]


def canonical_slots(lo: np.ndarray, hi: np.ndarray, grades: np.ndarray):
  """Each list's slots ``[lists, slots]`` sorted by rank, then grade (unused slots hold a rank
  past every valid one), so sums over slots do not depend on the input order. Slots of one list
  with equal ``lo`` share a tie group, hence ``hi``: ``(lo, grade)`` orders them completely, and
  packs into one int64 key (non-negative float32 grades order as their bits)."""
  key = (lo.astype(np.int64) << 32) | grades.view(np.uint32).astype(np.int64)
  order = np.argsort(key, axis=-1)
  return tuple(np.take_along_axis(x, order, axis=-1) for x in (lo, hi, grades))


def order_within(group: np.ndarray, key: np.ndarray, n_groups: int, *,
                 stable: bool = True) -> np.ndarray:
  """The permutation sorting int ``key`` within each group, ``group`` ascending; equal keys keep
  their input order when ``stable`` (else any order, about twice as fast).

  Row by row on a padded ``[groups, longest]`` block when that is at most about twice the data
  (many small sorts: ~15x faster than one sort of everything), else one global sort.
  """
  sizes = np.bincount(group, minlength=n_groups)
  width = int(sizes.max(initial=0))
  if n_groups * width > 2 * group.size + 4096:
    return np.lexsort((key, group))  # (stable)
  starts = np.cumsum(sizes) - sizes
  if group.size == n_groups * width:  # every group the same size: no padding
    order = np.argsort(key.reshape(n_groups, width), axis=-1,
                       kind="stable" if stable else "quicksort")
    return (starts[:, None] + order).reshape(-1)
  col = np.arange(group.size) - starts[group]
  block = np.full((n_groups, width), np.iinfo(np.int64).max, np.int64)
  block[group, col] = key
  order = np.argsort(block, axis=-1, kind="stable" if stable else "quicksort")
  return (starts[:, None] + order)[np.arange(width) < sizes[:, None]]


def first_duplicate(group: np.ndarray, item: np.ndarray, n_items: int) -> tuple[int, int] | None:
  """The smallest ``(group, item)`` pair that occurs twice, or None (int codes, items < n_items)."""
  if group.size and np.all(group[1:] >= group[:-1]):  # grouped: sort within groups (faster)
    order = order_within(group, item, int(group[-1]) + 1, stable=False)
    g, i = group[order], item[order]
    dup = np.flatnonzero((i[1:] == i[:-1]) & (g[1:] == g[:-1]))
    return None if dup.size == 0 else (int(g[dup[0]]), int(i[dup[0]]))
  n_items = max(n_items, 1)
  key = np.sort(group.astype(np.int64) * n_items + item)
  dup = np.flatnonzero(key[1:] == key[:-1])
  return None if dup.size == 0 else divmod(int(key[dup[0]]), n_items)


def within_group(group: np.ndarray, n_groups: int) -> np.ndarray:
  """Each element's 0-based index among the elements of its group, in input order (the groups
  need not come sorted)."""
  order = np.argsort(group, kind="stable")
  counts = np.bincount(group, minlength=n_groups)
  out = np.empty(group.size, np.int64)
  out[order] = np.arange(group.size) - (np.cumsum(counts) - counts)[group[order]]
  return out
