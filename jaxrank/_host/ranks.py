"""The host ranker: ranks of items on the host (NumPy), for the TREC path and the NumPy door.

One way to order scores (:func:`order_keys`: int64 keys from the bits, equal scores equal keys,
NaN lowest), one way to resolve ties (:func:`resolve_ties` for the optimistic and pessimistic
policies, input order with :func:`within_group` for ``"first"``), and two ways to find ranks,
because the two doors need different things from them:

* :func:`ranked_order` puts every document of every query in rank order (a sort within each
  query; ``ties="trec"`` compares the doc ids of tied documents only): the TREC path needs the
  whole order, for ``-M`` and for the measures that count over ranked prefixes (bpref, infAP,
  relstring, ...); :func:`tie_bounds` then gives each document its tie group's rank bounds;
* :func:`relevant_ranks` finds the rank bounds of the relevant items only, in O(n log r)
  without sorting the lists: the NumPy door's lists with many relevant items need nothing else.

:func:`order_within` (sorts within groups), :func:`first_duplicate` and :func:`within_group` are
the grouping steps both use. The device-side order keys of the rank core are
:func:`jaxrank._core.ranks.sort_keys` (the same order, computed by XLA).
"""

from __future__ import annotations

import numpy as np

def order_keys(score: np.ndarray, float32: bool) -> np.ndarray:
  """int64 keys with the scores' order (equal scores equal keys, ``-0.0 == 0.0``), NaN below
  everything; from the bits, no sort. Integers (of any width, unsigned too) keep their exact
  order; floats compare as float64.

  ``float32``: compare the scores as float32, as pytrec_eval does (C's cast: beyond float32's
  range a score becomes +-inf, with no warning).

  Example:
    >>> import numpy as np
    >>> from jaxrank._host import ranks
    >>> keys = ranks.order_keys(np.array([0.5, -0.0, 0.0, np.nan, -np.inf]), False)
    >>> np.argsort(-keys, kind="stable").tolist(), bool(keys[1] == keys[2])
    ([0, 1, 2, 4, 3], True)
  """
  if score.dtype.kind in "iub":
    if score.dtype == np.uint64:
      return (score ^ np.uint64(1 << 63)).view(np.int64)
    return score.astype(np.int64)
  with np.errstate(over="ignore"):
    s: np.ndarray = score.astype(np.float32) if float32 else score.astype(np.float64, copy=False)
  s = s + 0.0  # a new array: -0.0 becomes +0.0, which it equals
  bits = s.view(np.int32).astype(np.int64) if float32 else s.view(np.int64)
  # Negative floats' bits order backwards: flipping their magnitude bits makes the integer
  # order the float order (in place, on arrays of this function's own).
  keys = bits >> 63
  keys &= np.int64(np.iinfo(np.int32 if float32 else np.int64).max)
  keys ^= bits
  nan = np.isnan(s)
  if nan.any():
    keys[nan] = np.iinfo(np.int64).min + 1  # below -inf's key; -keys cannot overflow
  return keys


def ranked_order(rq: np.ndarray, keys: np.ndarray, rdoc: np.ndarray, rv, nq: int, *,
                 ties: str, uncoded: int | None = None) -> np.ndarray:
  """The permutation putting each query's documents in rank order: query, then key descending,
  then doc id descending in byte order (``ties="trec"``), or input order (``"first"``; the
  tie-aware policies need no order among equal scores).

  Queries are grouped by a stable sort (fast on the usual query-grouped input), documents
  sorted within each query (many small sorts), and only documents that tie get their ids
  compared: a run without ties never orders its ids. ``uncoded``: the code of the documents the
  reader did not code (:func:`jaxrank.io.iter_judged_run_chunks`), none of which ties.
  """
  if rq.size and np.all(rq[1:] >= rq[:-1]):  # already grouped in query order (the usual file)
    q = rq  # the queries in rank order: a permutation within groups keeps them
    order = order_within(q, -keys, nq, stable=ties == "first")
  else:
    by_query = np.argsort(rq, kind="stable")
    q = rq[by_query]
    order = by_query[order_within(q, -keys[by_query], nq, stable=ties == "first")]
  if ties != "trec" or order.size < 2:
    return order
  k = keys[order]
  same = (q[1:] == q[:-1]) & (k[1:] == k[:-1])
  if not same.any():
    return order
  tied = np.zeros(order.size, bool)
  tied[1:] |= same
  tied[:-1] |= same
  at = np.flatnonzero(tied)
  # Tie group of each tied document: a number per run of ties, counted over the tied rows only.
  group = np.cumsum(np.r_[True, ~same[at[1:] - 1]]) if at.size else at
  if uncoded is not None and (rdoc[order[at]] == uncoded).any():
    raise RuntimeError("jaxrank internal error: a document the reader did not code ties; "
                       "please report it (--chunk-lines 0 evaluates the run without that "
                       "reader)")
  docs, inverse = np.unique(rdoc[order[at]], return_inverse=True)
  rank = np.empty(docs.size, np.int64)  # byte order (strcmp) of just the tied ids
  rank[np.searchsorted(docs, rv.argsort(docs))] = np.arange(docs.size)
  order[at] = order[at][np.lexsort((-rank[inverse.reshape(-1)], group))]
  return order


def tie_bounds(lists: np.ndarray, keys: np.ndarray,
               pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """The 1-based rank bounds ``(lo, hi)`` of each item's tie group, for items in rank order
  (:func:`ranked_order`): ``lists`` grouped, ``keys`` descending within each, ``pos`` the
  0-based position within the list. Tied items are contiguous there.

  Example:
    >>> import numpy as np
    >>> from jaxrank._host import ranks
    >>> lo, hi = ranks.tie_bounds(np.array([0, 0, 0, 1]), np.array([5, 3, 3, 3]),
    ...                           np.array([0, 1, 2, 0]))
    >>> lo.tolist(), hi.tolist()
    ([1, 2, 2, 1], [1, 3, 3, 1])
  """
  start = np.ones(lists.size, bool)
  start[1:] = (lists[1:] != lists[:-1]) | (keys[1:] != keys[:-1])
  group = np.cumsum(start) - 1
  first = np.flatnonzero(start)
  last = np.r_[first[1:], lists.size][:first.size] - 1  # (no row: no group)
  return pos[first][group] + 1, pos[last][group] + 1


def relevant_ranks(lists: np.ndarray, keys: np.ndarray, rel: np.ndarray, grade: np.ndarray,
                   ties: str) -> tuple[np.ndarray, np.ndarray]:
  r"""The ranks ``(lo, hi)`` of the relevant items, on the host in O(n log r).

  Items are ``(lists, keys)`` (:func:`order_keys`), grouped by list in input order; ``rel``
  marks the relevant ones, of grade ``grade``. With ``V`` the distinct keys of relevant items,
  each item gets the code of its place among ``V`` (below, equal to or between them), so
  :math:`lo - 1 = |\{j: s_j > s_i\}|` and :math:`hi = |\{j: s_j \ge s_i\}|` are sums of one
  histogram over (list, code) pairs: dense when it is small, else over the relevant pairs
  only. ``ties`` other than ``"average"`` resolve each tie group as the kernel and
  :func:`jaxrank._core.positions.positions` do (input order, by :func:`within_group`; or, by
  :func:`resolve_ties`, relevant items first, higher grades first; or last, lower grades
  first), returning ``lo == hi``.

  Example:
    >>> import numpy as np
    >>> from jaxrank._host import ranks
    >>> keys = np.array([3, 5, 3, 1])  # one list; items 0, 2 and 3 relevant
    >>> rel, grade = np.array([True, False, True, True]), np.array([1, 0, 2, 1])
    >>> [r.tolist() for r in ranks.relevant_ranks(np.zeros(4, int), keys, rel, grade, "average")]
    [[2, 2, 4], [3, 3, 4]]
    >>> ranks.relevant_ranks(np.zeros(4, int), keys, rel, grade, "optimistic")[0].tolist()
    [3, 2, 4]
  """
  at = np.flatnonzero(rel)
  if at.size == 0:
    return np.zeros(0, np.int64), np.zeros(0, np.int64)
  n_lists = int(lists[-1]) + 1
  values = np.unique(keys[at])
  i = np.searchsorted(values, keys)
  equal = values[np.minimum(i, values.size - 1)] == keys
  width = 2 * values.size + 1
  pair = lists * width + 2 * i + equal
  if n_lists * width <= 2 * keys.size + (1 << 16):  # a dense histogram over (list, code)
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
    ahead = np.zeros(keys.size, np.int64)
    ahead[tied] = within_group(group[tied], n_groups)
    pos = gt + 1 + ahead[at]
    return pos, pos
  pos = resolve_ties(lists[at], gt + 1, ge, grade[at], ties)
  return pos, pos


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


def order_within(group: np.ndarray, key: np.ndarray, n_groups: int, *,
                 stable: bool = True) -> np.ndarray:
  """The permutation sorting int ``key`` within each group, ``group`` ascending; equal keys keep
  their input order when ``stable`` (else any order, about twice as fast).

  Keys already in order within their groups (a run file written in rank order, the usual one)
  give the identity after one pass. Else row by row on a padded ``[groups, longest]`` block when
  that is at most about twice the data (many small sorts: ~15x faster than one sort of
  everything), else one global sort.
  """
  if not ((key[1:] < key[:-1]) & (group[1:] == group[:-1])).any():
    return np.arange(group.size)
  sizes = np.bincount(group, minlength=n_groups)
  width = int(sizes.max(initial=0))
  if n_groups * width > 2 * group.size + 4096:
    return np.lexsort((key, group))  # (stable)
  starts = np.cumsum(sizes) - sizes
  if group.size == n_groups * width:  # every group the same size: no padding
    order = np.argsort(key.reshape(n_groups, width), axis=-1,
                       kind="stable" if stable else "quicksort")
    order += starts[:, None]  # in place: no second array of every row
    return order.reshape(-1)
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
