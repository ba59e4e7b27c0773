"""The metrics of lists from the rank bounds of their relevant items, on the rank core.

Both doors end here once the host ranker (:mod:`jaxrank._host.ranks`) has found the ranks: the
TREC path for every query, the NumPy door for lists with many relevant items and for ranked ids.
:func:`score_ranks` pads the relevant items' slots into calls of few compiled shapes
(:mod:`jaxrank._host.batches`), each list's slots in a canonical order
(:func:`canonical_slots`), and runs the rank core's formulas in float64, like trec_eval: on
NumPy for inputs of up to :data:`HOST_SLOTS` slots (JAX is not even imported: a small run costs
what the formulas cost), beyond in one compiled call per padded block
(:mod:`jaxrank._host.device`). ``JAXRANK_SCORING=numpy`` or ``=jax`` forces one or the other.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

import numpy as np

from jaxrank._core import table as _table
from jaxrank._core.rankform import Judgments, Ranks, bucket
from jaxrank._host import batches
from jaxrank._host.batches import ELEMENTS, MAX_ROWS, MIN_ELEMENTS
from jaxrank._host.ranks import resolve_ties

# Slots (relevant and judged items) up to which one call is scored on NumPy rather than by the
# compiled kernel: below, importing JAX and loading a kernel cost more than the formulas; the
# crossover measured by bench/bench_doors.py (bench/RESULTS.md).
HOST_SLOTS = 4_000_000
SCORING_ENV = "JAXRANK_SCORING"


def backend(slots: int, environ: dict | None = None) -> str:
  """``"numpy"`` or ``"jax"``: where a call of ``slots`` slots is scored (``$JAXRANK_SCORING``
  ``numpy`` / ``jax`` forces one; unset or ``auto``: NumPy up to :data:`HOST_SLOTS`).

  Example:
    >>> from jaxrank._host import scoring
    >>> scoring.backend(1_000, {}), scoring.backend(10**9, {})
    ('numpy', 'jax')
    >>> scoring.backend(10, {"JAXRANK_SCORING": "jax"})
    'jax'
  """
  chosen = (os.environ if environ is None else environ).get(SCORING_ENV, "auto").strip().lower()
  if chosen in ("numpy", "jax"):
    return chosen
  if chosen not in ("", "auto"):
    raise ValueError(f"${SCORING_ENV} must be auto, numpy or jax, got {chosen!r}")
  return "numpy" if slots <= HOST_SLOTS else "jax"


def _on_host(lo, hi, grades, num_items, judged, *, specs, options, size, resolved):
  """:func:`jaxrank._host.device.score` on NumPy: the same formulas, float64, no JAX."""
  ranks = Ranks(lo=lo, hi=hi, grades=grades, num_items=num_items,
                overflow=np.zeros(num_items.shape, bool), size=size, resolved=resolved,
                judged=None if judged is None else Judgments(*judged))
  with np.errstate(all="ignore"):  # the formulas mask inf * 0 and 0 / 0, as under jit
    out = _table.values_of(ranks, specs=specs, options=options)
  return [np.asarray(v, np.float64) for v in out]


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


def score_ranks(n_lists: int, length: np.ndarray, num_items: np.ndarray, rel_list: np.ndarray,
                rel_lo: np.ndarray, rel_hi: np.ndarray, rel_grade: np.ndarray, specs: tuple,
                options, *, resolved: bool, chunk: int = MAX_ROWS,
                progress: Callable[[int, int], None] | None = None,
                judged: tuple | None = None,
                shapes: list | None = None) -> tuple[np.ndarray, ...]:
  """Core metrics of ``n_lists`` lists from the rank bounds of their relevant items.

  List ``i`` ranks ``num_items[i]`` items in a catalog of ``length[i]``; each relevant item
  ``(rel_list, rel_lo, rel_hi, rel_grade)`` sits somewhere in ranks ``[lo, hi]`` (``lo == hi``
  when ``resolved``; ``lo == 0``: not ranked). ``options.ties`` optimistic or pessimistic is
  applied here. Lists are scored in consecutive blocks (:func:`jaxrank._host.batches.blocks`)
  of at most ``chunk`` lists and about :data:`~jaxrank._host.batches.ELEMENTS` padded slots,
  padded as :mod:`jaxrank._host.batches` says (few compilations); each list's slots are in a
  canonical order (by rank, then grade), so a value depends on the data only, not on the order
  of the input lines. Values are float64 like trec_eval's, on NumPy or from the compiled kernel
  in JAX's x64 mode (:func:`backend`).

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
  on_host = backend(int(width.sum())) == "numpy"
  if on_host:
    score = _on_host
  else:
    from jaxrank._host import device  # JAX is imported only for the compiled kernel

    score = device.score
  for lo_list, hi_list in batches.blocks(np.maximum(width, 8), ELEMENTS, chunk):
    rows = hi_list - lo_list
    nslots = bucket(max(int(slots[lo_list:hi_list].max()), 8))
    nb = rows if on_host else batches.pow2(rows, max(1, MIN_ELEMENTS // nslots))
    size = batches.pow2(int(length[lo_list:hi_list].max()), 16)
    a, b = rel_first[lo_list], rel_first[hi_list]
    zslots = 0
    if judged is not None:
      zslots = bucket(max(int(j_slots[lo_list:hi_list].max()), 1))
    if shapes is not None and not on_host:  # the same compiled shape for every chunk of a run
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
    out = score(lo, hi, grades, items, extra, specs=specs, options=options, size=size,
                resolved=resolved)
    for acc, v in zip(outs, out):
      acc.append(v[:rows])
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
