"""The host paths' padding and batching: calls of few distinct shapes, each of bounded memory.

Padding policy. Every dimension a host path pads is a power of two (:func:`pow2`, elementwise
:func:`pow2_array`), so a stream of differently sized batches compiles a handful of times; padding
never changes a value. One dimension is the rank core's own: the number of relevant *slots* of
a list in the core's forms steps by at most 1.5x (:func:`jaxrank._core.ranks.bucket`: 1, 2, 3,
4, 6, 8, 12, ...), because the kernels' work is linear in the slots, so the smaller steps are
worth their few extra shapes. The counting kernel's slots (:func:`shape_calls`) are powers of
two, as its items are: it groups lists by their padded shape.

Batching. Lists are cut into calls in three ways, by what the caller needs:

* :func:`row_calls`: rows of one width, consecutive; each call padded to a power of two rows;
* :func:`shape_calls`: lists of many padded shapes (the counting kernel's items x slots), one
  group when padding everything to the largest shape costs little, else grouped by shape; each
  group is cut by :func:`row_calls`. The lists come back in call order: the caller puts the
  values back by index;
* :func:`blocks`: consecutive lists, each block's padded size (lists times its largest list)
  within a budget, in input order with no sort. The TREC path scores its queries so (in
  trec_eval's order, the blocks' values concatenated), and reuses a block's padded shape from
  chunk to chunk of a big run (:func:`jaxrank._host.scoring.score_ranks`); grouping its queries
  by shape instead would change which queries share a padded call, and with it the last bit of
  a few float sums (see :mod:`jaxrank._trec.chunked`).

The budgets below bound one call's padded elements; all are powers of two.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

# Padded [lists, slots] elements of one call of the slot scorer (score_ranks), and padded
# [queries, ranks] grades of one block of the TREC path's host calculations.
ELEMENTS = 1 << 20
# Padded items of one call of the counting kernel or of the dense kernel (its memory bound).
ITEMS_PER_CALL = 1 << 22
# Small batches are padded up to this many elements: few distinct shapes.
MIN_ELEMENTS = 1 << 12
# Lists (rows) of one call at most.
MAX_ROWS = 1 << 16


def pow2(n: int, minimum: int = 1) -> int:
  """The next power of two >= ``max(n, minimum)``: few distinct shapes, few compilations.

  Example:
    >>> from jaxrank._host import batches
    >>> batches.pow2(5), batches.pow2(0), batches.pow2(3, 16)
    (8, 1, 16)
  """
  return 1 << (max(int(n), int(minimum), 1) - 1).bit_length()


def pow2_array(x: np.ndarray, minimum: int) -> np.ndarray:
  """Elementwise :func:`pow2`: the next power of two >= ``max(x, minimum)`` (int64).

  Example:
    >>> import numpy as np
    >>> from jaxrank._host import batches
    >>> batches.pow2_array(np.array([0, 5, 17]), 8).tolist()
    [8, 8, 32]
  """
  x = np.maximum(np.asarray(x, np.int64), minimum)
  return np.left_shift(1, np.frexp(x - 1)[1]).astype(np.int64)


def row_calls(n: int, most: int, least: int = 1) -> Iterator[tuple[int, int, int]]:
  """``(start, stop, rows)`` of consecutive calls over ``n`` rows of one width: at most
  ``most`` rows each (rounded up to a power of two), each padded to ``rows``, a power of two
  (>= ``least``) with at most a quarter of padding where ``least`` allows (else a half call
  first).

  Example:
    >>> from jaxrank._host import batches
    >>> list(batches.row_calls(11, 8))
    [(0, 8, 8), (8, 10, 2), (10, 11, 1)]
  """
  start = 0
  while start < n:
    rows = min(pow2(n - start, least), pow2(most))
    if rows // 2 >= least and n - start <= rows * 3 // 4:
      rows //= 2
    yield start, min(n, start + rows), rows
    start += rows


def shape_calls(width: np.ndarray, slots: np.ndarray, *, budget: int, floor: int):
  """Lists grouped into padded calls of few distinct shapes.

  ``width[i]`` and ``slots[i]`` are list ``i``'s padded numbers of items and of relevant slots
  (powers of two, as ``budget`` and ``floor`` are); its work is ``width * slots`` and its memory
  ``max(width, slots)``. All lists form one group, padded to the largest shape, unless that
  would more than quadruple the work and cost more than ``2**26`` element steps (some 50 ms);
  then each shape is a group. A group is cut by :func:`row_calls` into calls of at most
  ``budget`` padded elements whose rows are a power of two, at least ``floor`` elements and at
  most a quarter padding where the floor allows: one long list is one row, while a stream of
  small batches compiles a handful of shapes.

  Returns ``(order, calls)``: the lists in call order and ``(start, stop, rows, width, slots)``
  for each call, over ``order``.

  Example:
    >>> import numpy as np
    >>> from jaxrank._host import batches
    >>> order, calls = batches.shape_calls(np.array([16, 16, 64]), np.array([8, 8, 8]),
    ...                                    budget=1 << 22, floor=1 << 12)
    >>> order.tolist(), calls  # one call, 64 rows: the floor's 4,096 elements
    ([0, 1, 2], [(0, 3, 64, 64, 8)])
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
    for lo, hi, rows in row_calls(b - a, max(1, budget // largest),
                                  max(1, floor // largest)):
      lo, hi = a + lo, a + hi
      w, s = int(width[order[lo:hi]].max()), int(slots[order[lo:hi]].max())
      calls.append((lo, hi, rows, w, s))
  return order, calls


def blocks(sizes: np.ndarray, budget: int, most: int) -> Iterator[tuple[int, int]]:
  """Consecutive ``(start, stop)`` blocks of lists whose padded size, the number of lists times
  the largest of their ``sizes``, stays within ``budget`` (a larger list gets a block of its
  own), with at most ``most`` lists each; in input order (see the module docstring for why the
  TREC path batches so).

  Example:
    >>> import numpy as np
    >>> from jaxrank._host import batches
    >>> list(batches.blocks(np.array([2, 2, 9, 1]), 8, 10))
    [(0, 2), (2, 3), (3, 4)]
  """
  start, n = 0, sizes.size
  while start < n:
    cap = min(n, start + most)
    cost = np.arange(1, cap - start + 1) * np.maximum.accumulate(sizes[start:cap])
    stop = start + max(1, int(np.searchsorted(cost, budget, "right")))
    yield start, stop
    start = stop
