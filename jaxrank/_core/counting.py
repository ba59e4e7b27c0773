"""Counting kernels: how many valid items score higher, or higher or equal, than each slot.

:func:`slot_ranks` turns those counts into a slot's tie bounds ``lo``/``hi`` (see
:mod:`jaxrank._core.ranks`): by comparing every slot with every item (:func:`counts_by_compare`,
O(n) per slot, walked in chunks on CPU by :func:`sum_over_items`) or by sorting each list once and
binary-searching the slots (``method="sort"``); ``ties="first"`` counts the items strictly ahead
(:func:`first_counts`). The dense, sparse and candidate forms all rank their slots here.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

from jaxrank._core import checks as _checks
from jaxrank._core.rankform import TIES
from jaxrank._core.ranks import as_scores, key_dtype, padding_key, sort_keys

METHODS = ("auto", "count", "sort")


def item_keys(items):
  """Keys of (scores[, valid]) items, computed on the fly so no key array needs storing."""
  return sort_keys(items[0], items[1] if len(items) > 1 else None)


def sum_over_items(fn, items, *, dtype=jnp.int32, chunk=None):
  """``sum_j fn(item_j, j)`` for every slot, without a ``[..., slots, n]`` array in memory.

  ``fn(chunk, index)`` gets each item array as ``[..., 1, B]`` and the item indices ``[B]`` and
  returns a tuple of bool ``[..., slots, B]`` predicates; the result is their int32 counts
  ``[..., slots]``. Accelerators fuse the whole comparison into one reduction; XLA's CPU backend
  would materialise it, so there the items are walked in chunks of 32. A float ``dtype`` sums
  float terms instead (soft ranks); each chunk is then rematerialised in the backward pass, so
  reverse mode keeps no ``[..., slots, n]`` residual either. ``chunk`` forces a chunk size on
  every backend.
  """
  n = items[0].shape[-1]

  def counts(start, size):
    part = tuple(lax.dynamic_slice_in_dim(x, start, size, axis=-1)[..., None, :] for x in items)
    return tuple(jnp.sum(p, axis=-1, dtype=dtype)
                 for p in fn(part, start + jnp.arange(size, dtype=jnp.int32)))

  if jnp.issubdtype(dtype, jnp.floating):
    counts = jax.checkpoint(counts, static_argnums=(1,))
  if n == 0 or (chunk is None and jax.default_backend() != "cpu"):
    return counts(0, n)  # n == 0: lists without items, every count is 0
  # 32 items per step measured fastest on CPU for 100-10,000 lists x 16-96 slots; from 64 items
  # on, XLA's CPU reduction codegen is 5-10x slower per element (bench/RESULTS.md).
  chunk = min(n, 32 if chunk is None else chunk)
  full = n // chunk
  acc = counts(0, chunk)
  if full > 1:
    acc = lax.fori_loop(
        1, full, lambda i, a: tuple(x + y for x, y in zip(a, counts(i * chunk, chunk))), acc)
  if n % chunk:
    acc = tuple(x + y for x, y in zip(acc, counts(full * chunk, n % chunk)))
  return acc


def _masks_padding(items) -> bool:
  """Whether padding needs correcting: full keys (see :func:`jaxrank._core.ranks.key_dtype`) and
  a mask."""
  return len(items) > 1 and key_dtype(items[0].dtype)[1]


def counts_by_compare(items, slot_keys):
  """O(n) per slot: #{items above} and #{items at or above} each slot key."""
  q = slot_keys[..., :, None]

  def above(chunk, _):
    key = item_keys(chunk)
    return key > q, key >= q

  gt, ge = sum_over_items(above, items)
  above_, at_ = _padding_counted(items, slot_keys)
  return gt - above_, ge - at_


def _padding_counted(items, slot_keys):
  """Padding items counted (above, at or above) each slot, to subtract.

  Padding holds :func:`jaxrank._core.ranks.padding_key`: below every valid key for floats and
  narrow ints (nothing to subtract); with full keys it can be above or at a slot holding the two
  smallest keys.
  """
  if not _masks_padding(items):
    return 0, 0
  valid = items[1]
  padding = (valid.shape[-1] - jnp.sum(valid, axis=-1, dtype=jnp.int32))[..., None]
  key = padding_key(items[0].dtype)
  return (jnp.where(slot_keys < key, padding, 0), jnp.where(slot_keys <= key, padding, 0))


def _counts_by_sort(items, slot_keys):
  """One single-operand sort per list, then binary search of each slot key (fast on CPU)."""
  keys = item_keys(items)
  n = keys.shape[-1]
  lead = keys.shape[:-1]
  m = slot_keys.shape[-1]
  s = lax.sort(keys.reshape(-1, n), dimension=-1)
  q = slot_keys.reshape(s.shape[0], m)

  def search(side):
    return jax.vmap(functools.partial(jnp.searchsorted, side=side))(s, q)

  above = (n - search("right")).astype(jnp.int32).reshape(*lead, m)
  at_or_above = (n - search("left")).astype(jnp.int32).reshape(*lead, m)
  above_, at_ = _padding_counted(items, slot_keys)
  return above - above_, at_or_above - at_


def _choose_method(method: str, num_slots: int) -> str:
  if method != "auto":
    return method
  # On a 2-core CPU (10,000 x 1,000 items) the chunked comparison takes 83 ms for 16 slots and
  # 460 ms for 256, one int32 sort plus binary search about 350-620 ms: sorting only pays off for
  # hundreds of slots. On accelerators the comparison is bandwidth-bound and always wins.
  return "sort" if jax.default_backend() == "cpu" and num_slots > 256 else "count"


def first_counts(items, slot_keys, slot_index, tie_key, slot_tie):
  """Items strictly ahead of each slot when ties go to the larger ``tie_key``, then lower index."""
  q, qi = slot_keys[..., :, None], slot_index[..., :, None]
  qt = None if tie_key is None else slot_tie[..., :, None]

  masked = _masks_padding(items)

  def ahead(chunk, idx):
    key = item_keys(chunk[:len(items)])
    earlier = idx < qi
    if tie_key is not None:
      earlier = (chunk[-1] > qt) | ((chunk[-1] == qt) & earlier)
    ahead_ = (key > q) | ((key == q) & earlier)
    # with full keys padding can sit above or at a slot's key: only the mask tells it apart
    return (ahead_ & chunk[1] if masked else ahead_,)

  extra = () if tie_key is None else (tie_key,)
  (count,) = sum_over_items(ahead, items + extra)
  return count


def slot_ranks(scores, valid, slot_ok, slot_index, *, ties, method, tie_key=None, size):
  """lo/hi of the items at ``slot_index``; unused slots get ``size + 1``."""
  items = (scores,) if valid is None else (scores, valid)
  take = functools.partial(jnp.take_along_axis, indices=slot_index, axis=-1)
  slot_keys = item_keys(tuple(take(x) for x in items))
  if ties == "first":
    slot_tie = None if tie_key is None else take(tie_key)
    lo = hi = first_counts(items, slot_keys, slot_index, tie_key, slot_tie) + 1
  else:
    counts = _counts_by_sort if _choose_method(method, slot_keys.shape[-1]) == "sort" else (
        counts_by_compare)
    gt, ge = counts(items, slot_keys)
    lo, hi = gt + 1, ge
  out = jnp.int32(size + 1)
  return jnp.where(slot_ok, lo, out), jnp.where(slot_ok, hi, out)


def check_ties_args(ties, method, tie_key, shape):
  """Checks ``ties``, ``method`` and ``tie_key`` (only with ``ties="first"``); returns the tie
  key's order keys (:func:`jaxrank._core.ranks.sort_keys`), or None."""
  _checks.check_choice("ties", ties, TIES)
  _checks.check_choice("method", method, METHODS)
  if tie_key is not None:
    (tie_key,) = as_scores(("tie_key", tie_key, 0))
    _checks.check_same_shape("tie_key", tie_key, "scores", shape)
    if ties != "first":
      raise ValueError(f"tie_key is only used with ties='first', got ties={ties!r}")
    tie_key = sort_keys(tie_key, None)
  return tie_key
