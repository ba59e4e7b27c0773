"""The cut path: ranks exact only where they can reach the top ``cut`` (internal to the metrics).

When every requested metric has a cutoff, the largest one ``cut`` bounds what the ranks must
say: a slot that cannot reach the top ``cut`` reads as unranked (``size + 1``), which gives every
metric at a cutoff ``k <= cut`` its exact value. One ``top_k`` per list then replaces ``n``
compares per slot by ``cut`` (:func:`cut_slot_ranks`); :func:`cut_applies` says when that pays.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxrank._core.counting import first_counts, item_keys, sum_over_items
from jaxrank._core.ranks import sort_keys

# Score dtypes whose every value float32 holds exactly, so one float32 ``top_k`` finds each list's
# cut-th largest score (XLA's CPU ``top_k`` is fast on float32 only; on other dtypes it sorts).
_CUT_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float16, jnp.bfloat16, np.bool_,
                                              np.int8, np.int16, np.uint8, np.uint16))
_NAN_KEY = int(np.iinfo(np.int32).min) + 1  # sort_keys of a float32 NaN
_NEG_INF_KEY = -0x7F800000  # sort_keys of float32 -inf


def cut_applies(dtype, n: int, cut: int | None, slots: int, *, ties: str, tie_key,
                method: str, masked: bool = True) -> bool:
  """Whether :func:`jaxrank._core.dense.dense_ranks` takes the cut path for these (static)
  arguments.

  Only for ``method="auto"``, a ``cut`` shorter than the list, a score dtype that float32 holds
  exactly, no ``tie_key`` (whose order one ``top_k`` cannot follow), and enough slots per list
  that counting (``slots x n`` compares) costs more than the ``top_k``. Measured on a 2-core CPU
  (cut 10, bench/RESULTS.md): unmasked float32 scores with averaged ties, whose cut path is one
  ``top_k`` of the scores (:func:`_cut_slot_ranks_plain`), broke even near ``slots x n = 64,000``
  (64 slots of 1,000 items, 8 of 10,000); the keyed path (a mask, other dtypes, other tie
  policies) near 128 slots, ``ties="first"`` (whose count is 1.5x slower) near 48. Under ``jit``
  without ``max_relevant`` (one slot per item) it is always taken. On accelerators, where
  counting is bandwidth-bound and ``top_k`` is not (on an H100 a ``top_k`` cost about as much as
  counting 100-200 slots, DESIGN.md), it is taken from 256 slots; that threshold is not measured
  yet.
  """
  if jax.default_backend() != "cpu":
    enough = slots >= 256
  elif ties == "first":
    enough = slots >= 48
  elif not masked and np.dtype(dtype) == np.float32:
    enough = slots >= 8 and slots * n >= 64_000
  else:
    enough = slots >= 128
  return (cut is not None and cut < n and method == "auto" and tie_key is None and enough
          and np.dtype(dtype) in _CUT_DTYPES)


def raw_top_k_unsure(values: jax.Array) -> jax.Array:
  """Whether ``lax.top_k`` of float32 scores as they are may disagree with the rank core's order,
  given its top ``values``: XLA's CPU top_k orders float32 by their bits, which is the value
  order except -0.0 below 0.0 and NaN above inf (or below -inf), so the top k is exact unless a
  zero or NaN reaches it (a flushed subnormal compares equal to 0 here)."""
  return jnp.any(jnp.isnan(values) | (values == 0))


def cut_slot_ranks(scores, valid, num_items, slot_ok, slot_index, *, ties, cut, size):
  """lo/hi of each slot whose item can reach the top ``cut``; the others get ``size + 1``.

  Unmasked float32 scores with averaged ties take :func:`_cut_slot_ranks_plain` (one ``top_k``
  of the scores as they are, no pass over the list) unless a NaN, a zero or ``-inf`` reaches
  their top ``cut + 1``; everything else takes :func:`_cut_slot_ranks_keyed`.
  """
  keyed = functools.partial(_cut_slot_ranks_keyed, scores, valid, num_items, slot_ok,
                            slot_index, ties=ties, cut=cut, size=size)
  if ties == "first" or valid is not None or scores.dtype != jnp.float32:
    return keyed()
  # With no zero, NaN or -inf among a list's top cut + 1 values, its top cut is exact
  # (raw_top_k_unsure) and every list has cut items above -inf.
  values, top_index = lax.top_k(scores, cut + 1)
  values, top_index = lax.optimization_barrier((values, top_index))  # see the keyed path
  suspect = raw_top_k_unsure(values) | jnp.any(values == -jnp.inf)
  return lax.cond(suspect, keyed, lambda: _cut_slot_ranks_plain(
      scores, values, top_index, slot_ok, slot_index, cut=cut, size=size))


def _cut_slot_ranks_plain(scores, values, top_index, slot_ok, slot_index, *, cut, size):
  """The cut path from the top ``cut + 1`` float32 ``values`` (items ``top_index``) of lists
  without NaN, zero or -inf there: T is the cut-th value, a slot scored above T counts the top
  values above / at or above it, a slot scored T adds the items scored T beyond the top cut,
  which exist only if the (cut + 1)-th value is T (then one pass over the lists that need it
  counts them), and a slot scored below T is unranked. One slot per item takes
  :func:`_cut_item_ranks`."""
  top = values[..., :cut]
  top_keys = sort_keys(top, None)
  bound = top_keys[..., -1:]
  straddle = values[..., cut] == values[..., cut - 1]
  tied, _ = _at_bound((scores,), top_keys, bound, straddle, nans=False)
  out = jnp.int32(size + 1)
  if slot_index.shape[-1] == scores.shape[-1]:  # one slot per item (relevant_slots, m >= n)
    return _cut_item_ranks(scores, top_keys, top_index[..., :cut], bound, tied, slot_ok, out)
  q = sort_keys(jnp.take_along_axis(scores, slot_index, axis=-1), None)
  above = jnp.sum(top_keys[..., None, :] > q[..., :, None], axis=-1, dtype=jnp.int32)
  at = jnp.sum(top_keys[..., None, :] >= q[..., :, None], axis=-1, dtype=jnp.int32)
  ge = jnp.where(q == bound, above + tied, at)
  ok = slot_ok & (q >= bound)
  return jnp.where(ok, above + 1, out), jnp.where(ok, ge, out)


def _cut_item_ranks(scores, top_keys, top_index, bound, tied, slot_ok, out):
  """:func:`_cut_slot_ranks_plain` with one slot per item (under ``jit`` without
  ``max_relevant``), in O(n + cut^2) per list instead of O(n x cut): an item keyed above the
  bound T is one of the top ``cut`` (its counts come from the top keys alone and are scattered
  to it), an item keyed T has lo = (top keys above T) + 1 and hi = that + (items keyed T), and
  an item keyed below T is unranked."""
  q = sort_keys(scores, None)
  above_t = jnp.sum(top_keys > bound, axis=-1, dtype=jnp.int32)[..., None]
  lo = jnp.where(q == bound, above_t + 1, out)
  hi = jnp.where(q == bound, above_t + tied, out)
  above = jnp.sum(top_keys[..., None, :] > top_keys[..., :, None], axis=-1, dtype=jnp.int32)
  at = jnp.sum(top_keys[..., None, :] >= top_keys[..., :, None], axis=-1, dtype=jnp.int32)
  lead = scores.shape[:-1]
  rows = jnp.arange(math.prod(lead), dtype=jnp.int32)[:, None]
  flat_index = top_index.reshape(-1, top_index.shape[-1])

  def put(into, values):
    flat = into.reshape(-1, into.shape[-1]).at[rows, flat_index].set(
        values.reshape(flat_index.shape), unique_indices=True, indices_are_sorted=False)
    return flat.reshape(into.shape)

  lo = put(lo, above + 1)
  hi = put(hi, jnp.where(top_keys == bound, above + tied, at))
  return jnp.where(slot_ok, lo, out), jnp.where(slot_ok, hi, out)


def _at_bound(items, top_keys, bound, needed, *, nans: bool):
  """``(tied, nan)``, int32 ``[..., 1]``: each list's items keyed ``bound`` (T, its cut-th key)
  and, with ``nans``, its NaN items (else 0).

  Only where ``needed`` (a tie group at T straddling the cut, a list short of cut items above
  -inf) does this pass over whole lists; otherwise the group at T ends within the top cut keys
  ``top_keys``, which count it, and there is no NaN count to take. The pass keys the items
  again, 32 at a time (:func:`jaxrank._core.counting.sum_over_items`), so the kernel holds no
  ``[..., n]`` array for it: XLA's CPU backend sizes one scratch buffer for every branch, and
  glibc maps one over 32 MiB afresh, page by page, on every call.
  """
  def counted():
    def at(chunk, _):
      keys = item_keys(chunk)
      return (keys == bound[..., None],) + ((keys == _NAN_KEY,) if nans else ())

    counts = sum_over_items(at, items)
    return counts[0], counts[1] if nans else jnp.zeros_like(counts[0])

  def within():
    tied = jnp.sum(top_keys == bound, axis=-1, dtype=jnp.int32)[..., None]
    return tied, jnp.zeros_like(tied)

  return lax.cond(jnp.any(needed), counted, within)


def _cut_slot_ranks_keyed(scores, valid, num_items, slot_ok, slot_index, *, ties, cut, size):
  r"""lo/hi of each slot whose item can reach the top ``cut``; the others get ``size + 1``.

  With :math:`T` the ``cut``-th largest key of a list (one ``top_k`` of the float32 scores), every
  item keyed above :math:`T` is among those ``cut`` top items, so a slot keyed :math:`q > T`
  counts the items above / at or above it among them (``cut`` compares, not ``n``); a slot keyed
  :math:`T` (a tie group straddling the cut) adds the list's count of items keyed :math:`T` (one
  pass per list, not per slot); a slot keyed below :math:`T` has :math:`lo > cut` and is marked
  unranked, which every formula at a cutoff ``k <= cut`` reads as "below the top k" (its value
  there is the same for every rank beyond k). NaN scores and padding become ``-inf`` for the
  ``top_k``: a list with fewer than ``cut`` items above ``-inf`` has :math:`T = -\infty` and
  slots keyed ``-inf`` or NaN get exact counts from the list's counts of those keys.

  ``ties="first"`` reads each slot's rank as its position in the ``top_k`` (which puts the lower
  index first among equal values); a relevant NaN or ``-inf`` item in a list with fewer than
  ``cut`` items above ``-inf`` sends the batch to the full count (one ``lax.cond``).
  """
  w = scores.astype(jnp.float32)  # exact for the cut dtypes, and in the same order
  items = (w,) if valid is None else (w, valid)
  keys = item_keys(items)
  if slot_index.shape[-1] == scores.shape[-1]:  # one slot per item (relevant_slots, m >= n)
    slot_keys = keys
  else:
    slot_keys = item_keys(tuple(jnp.take_along_axis(x, slot_index, axis=-1) for x in items))
  # float32 image of the keys, increasing; +-0.0 both +0.0 (tied keys tie); NaN, padding -inf
  bits = jnp.where(keys < 0, (-keys) | np.int32(np.iinfo(np.int32).min), keys)
  values = jnp.where(keys > _NAN_KEY, lax.bitcast_convert_type(bits, jnp.float32), -jnp.inf)
  # Behind a barrier: XLA's CPU backend turns a top_k whose values are sliced into a full sort
  # (40x slower at 1,000 x 1,000, k = 10). The barrier takes the two outputs, not the top_k
  # itself: XLA's TopkDecomposer crashes on a top_k whose user is a barrier (multi-device CPU).
  # One more than cut: the (cut + 1)-th key tells whether the tie group at T straddles the cut.
  top, top_index = lax.top_k(values, cut if ties == "first" else cut + 1)
  top, top_index = lax.optimization_barrier((top, top_index))
  reach = (top[..., cut - 1] > -jnp.inf)[..., None]  # the list has cut items above -inf
  q = slot_keys
  out = jnp.int32(size + 1)
  if ties == "first":
    hit = top_index[..., None, :] == slot_index[..., :, None]
    rank = jnp.sum(jnp.where(hit, jnp.arange(1, cut + 1, dtype=jnp.int32), 0), axis=-1)
    rank = jnp.where(jnp.any(hit, axis=-1) & slot_ok, rank, out)
    unsure = jnp.any(slot_ok & (q <= _NEG_INF_KEY) & ~reach)
    rank = lax.cond(unsure, lambda: jnp.where(
        slot_ok, first_counts(items, q, slot_index, None, None) + 1, out), lambda: rank)
    return rank, rank
  all_keys = item_keys(tuple(jnp.take_along_axis(x, top_index, axis=-1) for x in items))
  top_keys = all_keys[..., :cut]
  bound = jnp.where(reach, top_keys[..., -1:], np.int32(_NEG_INF_KEY))
  above = jnp.sum(top_keys[..., None, :] > q[..., :, None], axis=-1, dtype=jnp.int32)
  at = jnp.sum(top_keys[..., None, :] >= q[..., :, None], axis=-1, dtype=jnp.int32)
  # A list with fewer than cut items above -inf needs the pass for its NaN items (other dtypes
  # hold none: with reach False no slot is keyed below T).
  straddle = all_keys[..., cut] == all_keys[..., cut - 1]
  tied, nans = _at_bound(items, top_keys, bound, straddle | ~reach[..., 0],
                         nans=jnp.issubdtype(scores.dtype, jnp.floating))
  n = num_items[..., None]
  nan = n - nans
  gt = jnp.where(q >= bound, above, nan)
  ge = jnp.where(q > bound, at, jnp.where(q == bound, above + tied, n))
  ok = slot_ok & ~((q < bound) & reach)
  return jnp.where(ok, gt + 1, out), jnp.where(ok, ge, out)
