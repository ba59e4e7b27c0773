"""The rank core: the ranks of each list's relevant items, built once and read by every metric.

Every metric in jaxrank is a function of where the relevant items sit in the ranking. ``Ranks``
holds exactly that, for any number of leading batch dimensions ``...`` and ``m`` slots per list:

* ``lo[..., m]``, ``hi[..., m]`` (int32): the optimistic and pessimistic 1-based rank of each
  slot's item. With tied scores the item may land anywhere in ``[lo, hi]`` (its tie group); without
  ties ``lo == hi``. ``lo = 1 + #{valid items scored strictly higher}``,
  ``hi = #{valid items scored higher or equal}``. Slots whose item was not ranked (padding slots, a
  relevant id absent from a ranked list) hold ``size + 1``.
* ``grades[..., m]`` (float32): the relevance grade of each slot's item; 0 marks an unused slot.
* ``num_items[...]`` (int32): how many valid items the list ranks (``n`` in the docs).
* ``overflow[...]`` (bool): the list had more relevant items than slots (only possible under
  ``jit`` with too small a ``max_relevant``); every metric of such a list is NaN, a NaN that
  every mean keeps (``empty="skip"`` too, which drops only empty lists' NaN).
* ``size`` (static int): the largest possible rank, i.e. the padded list length.
* ``judged`` (optional :class:`Judgments`): the items that are not relevant slots but carry a
  judgment, for the metrics that tell judged from unjudged items (``bpref``, ``infap``,
  ``judged``). ``None`` means every ranked item is judged (the dense form without ``judged=``,
  where a label is a judgment): those metrics then derive what they need from ``lo``/``hi``
  alone, and no other metric reads it, so the other metrics pay nothing.

Judged and unjudged items. Each item is of one of four kinds, as in trec_eval's
``form_res_rels``: a *graded* judgment (grade > 0: a relevant slot), a judgment of grade 0
(*judged non-relevant*), *in the pool but unjudged* (trec_eval's negative judgment; only infAP
tells it apart) or *not judged* at all (absent from the qrels). How each form says it:

* dense: ``judged=None`` (default, every call before these metrics) makes every valid item
  judged, and labels must be >= 0 as always. ``judged=[..., n]`` bool is the qrels membership:
  False items are not judged (their label is ignored, they are not relevant for any metric);
  a True item's label is its judgment, and a *negative* label (allowed only with ``judged``)
  marks it in the pool but unjudged (trec_eval, and the NumPy face's qrels ``-1``).
* sparse and ranked ids: the listed ids are the judged ones; a grade of 0 is a judged
  non-relevant id (it was dropped before; every other metric still ignores it); ids not listed
  are not judged. These forms have no "in the pool but unjudged" kind (grades stay >= 0).

Scores are compared through an order-preserving integer key (:func:`sort_keys`): every dtype
ranks by its exact value (subnormal floats and 64-bit integers included), NaN scores rank below
every number (``-inf`` included) and tie with each other, ``-0.0 == 0.0``, and padded items
(``where=False``) are not ranked at all. Without JAX's x64 mode, JAX stores float64 input as
float32 (values equal in float32 tie) and cannot hold 64-bit integers: integer scores beyond
int32 are then replaced on the host by their dense ranks (same order), see :func:`as_scores`.
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
from jaxrank._core.rankform import POOLED, TIES, UNUSED, ZERO, Judgments, Ranks  # noqa: F401

METHODS = ("auto", "count", "sort")

# Ranks and Judgments are defined without JAX (jaxrank._core.rankform: the formulas also read
# them on NumPy arrays); here they become pytrees, so they pass through jit, vmap and shard_map.
jax.tree_util.register_dataclass(Judgments, data_fields=["lo", "hi", "kind"], meta_fields=[])
jax.tree_util.register_dataclass(
    Ranks, data_fields=["lo", "hi", "grades", "num_items", "overflow", "judged"],
    meta_fields=["size", "resolved"])


# ----------------------------------------------------------------------------------------------
# Order-preserving integer keys.


def key_dtype(dtype) -> tuple[np.dtype, bool]:
  """The order keys' dtype for a score dtype, and whether it is *full*.

  A full key dtype (scores of 32 or 64 bit integers) uses every key value, so the padding key
  (its minimum) can also be a valid item's key: the kernels then mask padding explicitly.
  """
  dtype = np.dtype(dtype)
  wide = dtype.itemsize == 8
  idt = np.dtype(np.int64 if wide else np.int32)
  full = (not jnp.issubdtype(dtype, jnp.floating)) and dtype.itemsize >= 4
  return idt, full


def padding_key(dtype) -> int:
  """The key of padding items: the key dtype's minimum, or one above it for full keys.

  With full keys a valid item may hold either value anyway, so the kernels correct for padding
  whatever its key; XLA's CPU code for the compare-and-count is 2x slower when padding holds
  the int minimum of a full-range key (measured on 2,000 x 1,000 int32 scores), hence + 1.
  """
  idt, full = key_dtype(dtype)
  return int(np.iinfo(idt).min) + (1 if full else 0)


def sort_keys(scores: jax.Array, valid: jax.Array | None) -> jax.Array:
  """Maps scores to integers with the same order; NaN just above padding, padding at the bottom.

  Float scores are keyed by their bits alone (sign and magnitude, no float arithmetic, which
  XLA may run with subnormals flushed to zero), so every subnormal ranks by its value, ``-0.0``
  ties with ``0.0`` and every NaN ties with every other NaN. Integers of any width keep their
  exact order (unsigned ones are shifted by half their range); 32/64-bit ones use every key, so
  padding (:func:`padding_key`) can meet a valid key and the kernels correct for it.
  """
  x = scores
  idt, _ = key_dtype(x.dtype)
  lo_ = int(np.iinfo(idt).min)
  if jnp.issubdtype(x.dtype, jnp.floating):
    width = x.dtype.itemsize * 8
    sdt = np.dtype(f"int{width}")
    bits = lax.bitcast_convert_type(x, sdt)
    magnitude = (bits & np.array(np.iinfo(sdt).max, sdt)).astype(idt)
    keys = jnp.where(bits < 0, -magnitude, magnitude)  # -0.0 and +0.0 both map to 0
    keys = jnp.where(jnp.isnan(x), np.array(lo_ + 1, idt), keys)
  elif jnp.issubdtype(x.dtype, jnp.unsignedinteger) and x.dtype.itemsize >= 4:
    sign = np.array(1 << (x.dtype.itemsize * 8 - 1), x.dtype)
    keys = lax.bitcast_convert_type(x ^ sign, idt)
  else:
    keys = x.astype(idt)
  if valid is not None:
    keys = jnp.where(valid, keys, np.array(padding_key(x.dtype), idt))
  return keys


def _dense_order(arrays: list[np.ndarray]) -> list[np.ndarray]:
  """int32 ranks of the values of all ``arrays`` together (equal values equal ranks, NaN -1)."""
  floats = any(not np.issubdtype(a.dtype, np.integer) for a in arrays)
  if floats:
    common = np.float64  # every float and int compares as its float64 value
  elif all(a.dtype.kind == "i" or a.size == 0 or a.max() <= np.iinfo(np.int64).max
           for a in arrays):
    common = np.int64
  elif all(a.dtype.kind == "u" or a.size == 0 or a.min() >= 0 for a in arrays):
    common = np.uint64
  else:
    common = object  # int64 negatives with uint64 beyond int64: exact Python ints
  flat = np.concatenate([a.astype(common).reshape(-1) for a in arrays])
  nan = np.isnan(flat) if floats else np.zeros(flat.shape, bool)
  _, inverse = np.unique(np.where(nan, -np.inf, flat) if floats else flat, return_inverse=True)
  ranks = np.where(nan, -1, inverse.reshape(-1)).astype(np.int32)
  splits = np.cumsum([a.size for a in arrays])[:-1]
  return [part.reshape(a.shape) for part, a in zip(np.split(ranks, splits), arrays)]


def as_scores(*named: tuple[str, ArrayLike, int]) -> list[jax.Array]:
  """Validated score arrays ``(name, value, min_ndim)`` that are compared with each other.

  They come back in one dtype that holds every value exactly (e.g. ``uint8`` and ``int8`` scores
  as ``int16``). When no device dtype does (64-bit integers beyond int32 without x64 mode, which
  JAX would wrap, or ``int32`` against ``float32`` without x64), concrete values are replaced by
  their joint dense ranks on the host, which have the same order; traced ones raise.
  """
  host = [(name, x if isinstance(x, jax.Array) else _checks.as_numpy(name, x), nd)
          for name, x, nd in named]
  if any(isinstance(x, np.ndarray) and _checks.wraps_in_jax(x) for _, x, _ in host):
    return _ranked_on_host(host)
  arrays = [_checks.as_array(name, x, kinds="fi", min_ndim=nd) for name, x, nd in host]
  common = functools.reduce(exact_common_dtype, [a.dtype for a in arrays])
  if common is None:
    common = _float_holding_values(arrays)
  if common is None:
    return _ranked_on_host(host)
  return [a if a.dtype == common else a.astype(common) for a in arrays]


def _float_holding_values(arrays: list[jax.Array]) -> np.dtype | None:
  """The float dtype of the float scores when every integer score's value fits its mantissa.

  ``int32`` positives against ``float32`` candidates (a list of Python ints, say) have no exact
  common dtype without x64, but their values nearly always fit float32 exactly (``|v| <= 2**24``):
  then a cast keeps the order and the device path, instead of ranking everything on the host.
  """
  floats = [a.dtype for a in arrays if jnp.issubdtype(a.dtype, jnp.floating)]
  if not floats or not all(_checks.is_concrete(a) for a in arrays):
    return None
  f = np.dtype(functools.reduce(jnp.promote_types, floats))
  limit = 2 ** _precision_bits(f)
  for a in arrays:
    if not jnp.issubdtype(a.dtype, jnp.floating) and a.size:
      low, high = (int(v) for v in _checks.host_values(lambda x: (jnp.min(x), jnp.max(x)), a))
      if low < -limit or high > limit:
        return None
  return f


def _ranked_on_host(named):
  traced = [name for name, x, _ in named if not _checks.is_concrete(x)]
  if traced:
    dtypes = ", ".join(f"{name} {np.asarray(x).dtype if isinstance(x, np.ndarray) else x.dtype}"
                       for name, x, _ in named)
    raise TypeError(f"{' and '.join(n for n, _, _ in named)} have no common device dtype that "
                    f"holds every value exactly ({dtypes}) and {traced[0]} is traced: cast them "
                    f"to one dtype (or turn on JAX's x64 mode)")
  for name, x, _ in named:  # dtype kinds and shapes, before the values are replaced
    if not isinstance(x, jax.Array):
      _checks.as_array(name, x, kinds="fi", wide_ints="float")
  ranks = _dense_order([np.asarray(x) for _, x, _ in named])
  return [_checks.as_array(name, r, kinds="fi", min_ndim=nd)
          for (name, _, nd), r in zip(named, ranks)]


def _precision_bits(dtype) -> int:
  """Bits of integer magnitude a dtype holds exactly (float: mantissa bits + 1)."""
  if jnp.issubdtype(dtype, jnp.floating):
    return jnp.finfo(dtype).nmant + 1
  info = jnp.iinfo(dtype)
  return info.bits - (1 if info.min < 0 else 0)


def exact_common_dtype(a, b) -> np.dtype | None:
  """The narrowest device dtype that holds every value of dtypes ``a`` and ``b`` exactly.

  ``None`` when there is none (e.g. ``int32`` with ``float32`` when JAX's x64 mode is off).
  """
  if a is None or b is None:
    return None
  a, b = np.dtype(a), np.dtype(b)
  if a == b:
    return a
  x64 = jax.config.jax_enable_x64
  fa, fb = (bool(jnp.issubdtype(t, jnp.floating)) for t in (a, b))
  if fa and fb:
    return np.dtype(jnp.promote_types(a, b))
  if not fa and not fb:
    t = np.promote_types(a, b)
    return t if t.kind in "iu" and (x64 or t.itemsize <= 4) else None
  f, i = (a, b) if fa else (b, a)
  for t in (f, np.dtype(np.float32), np.dtype(np.float64)):
    if (t.itemsize >= f.itemsize and np.dtype(jnp.promote_types(f, t)) == t
        and _precision_bits(t) >= _precision_bits(i) and (x64 or t.itemsize <= 4)):
      return t
  return None


# ----------------------------------------------------------------------------------------------
# Counting kernels: for each slot key, how many valid items score higher / higher-or-equal.


def _item_keys(items):
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
  """Whether padding needs correcting: full keys (see :func:`key_dtype`) and a mask."""
  return len(items) > 1 and key_dtype(items[0].dtype)[1]


def _counts_by_compare(items, slot_keys):
  """O(n) per slot: #{items above} and #{items at or above} each slot key."""
  q = slot_keys[..., :, None]

  def above(chunk, _):
    key = _item_keys(chunk)
    return key > q, key >= q

  gt, ge = sum_over_items(above, items)
  above_, at_ = _padding_counted(items, slot_keys)
  return gt - above_, ge - at_


def _padding_counted(items, slot_keys):
  """Padding items counted (above, at or above) each slot, to subtract.

  Padding holds :func:`padding_key`: below every valid key for floats and narrow ints (nothing
  to subtract); with full keys it can be above or at a slot holding the two smallest keys.
  """
  if not _masks_padding(items):
    return 0, 0
  valid = items[1]
  padding = (valid.shape[-1] - jnp.sum(valid, axis=-1, dtype=jnp.int32))[..., None]
  key = padding_key(items[0].dtype)
  return (jnp.where(slot_keys < key, padding, 0), jnp.where(slot_keys <= key, padding, 0))


def _counts_by_sort(items, slot_keys):
  """One single-operand sort per list, then binary search of each slot key (fast on CPU)."""
  keys = _item_keys(items)
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


def _first_counts(items, slot_keys, slot_index, tie_key, slot_tie):
  """Items strictly ahead of each slot when ties go to the larger ``tie_key``, then lower index."""
  q, qi = slot_keys[..., :, None], slot_index[..., :, None]
  qt = None if tie_key is None else slot_tie[..., :, None]

  masked = _masks_padding(items)

  def ahead(chunk, idx):
    key = _item_keys(chunk[:len(items)])
    earlier = idx < qi
    if tie_key is not None:
      earlier = (chunk[-1] > qt) | ((chunk[-1] == qt) & earlier)
    ahead_ = (key > q) | ((key == q) & earlier)
    # with full keys padding can sit above or at a slot's key: only the mask tells it apart
    return (ahead_ & chunk[1] if masked else ahead_,)

  extra = () if tie_key is None else (tie_key,)
  (count,) = sum_over_items(ahead, items + extra)
  return count


def _slot_ranks(scores, valid, slot_ok, slot_index, *, ties, method, tie_key=None, size):
  """lo/hi of the items at ``slot_index``; unused slots get ``size + 1``."""
  items = (scores,) if valid is None else (scores, valid)
  take = functools.partial(jnp.take_along_axis, indices=slot_index, axis=-1)
  slot_keys = _item_keys(tuple(take(x) for x in items))
  if ties == "first":
    slot_tie = None if tie_key is None else take(tie_key)
    lo = hi = _first_counts(items, slot_keys, slot_index, tie_key, slot_tie) + 1
  else:
    counts = _counts_by_sort if _choose_method(method, slot_keys.shape[-1]) == "sort" else (
        _counts_by_compare)
    gt, ge = counts(items, slot_keys)
    lo, hi = gt + 1, ge
  out = jnp.int32(size + 1)
  return jnp.where(slot_ok, lo, out), jnp.where(slot_ok, hi, out)


# ----------------------------------------------------------------------------------------------
# The cut path: ranks exact only where they can reach the top ``cut`` (internal to the metrics).

# Score dtypes whose every value float32 holds exactly, so one float32 ``top_k`` finds each list's
# cut-th largest score (XLA's CPU ``top_k`` is fast on float32 only; on other dtypes it sorts).
_CUT_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float16, jnp.bfloat16, np.bool_,
                                              np.int8, np.int16, np.uint8, np.uint16))
_NAN_KEY = int(np.iinfo(np.int32).min) + 1  # sort_keys of a float32 NaN
_NEG_INF_KEY = -0x7F800000  # sort_keys of float32 -inf


def cut_applies(dtype, n: int, cut: int | None, slots: int, *, ties: str, tie_key,
                method: str, masked: bool = True) -> bool:
  """Whether :func:`dense_ranks` takes the cut path for these (static) arguments.

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


def _cut_slot_ranks(scores, valid, num_items, slot_ok, slot_index, *, ties, cut, size):
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
  in_top = jnp.sum(top_keys == bound, axis=-1, dtype=jnp.int32)[..., None]
  straddle = values[..., cut] == values[..., cut - 1]
  tied = lax.cond(jnp.any(straddle), lambda: jnp.sum(
      sort_keys(scores, None) == bound, axis=-1, dtype=jnp.int32)[..., None], lambda: in_top)
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
  keys = _item_keys(items)
  if slot_index.shape[-1] == scores.shape[-1]:  # one slot per item (relevant_slots, m >= n)
    slot_keys = keys
  else:
    slot_keys = _item_keys(tuple(jnp.take_along_axis(x, slot_index, axis=-1) for x in items))
  # float32 image of the keys, increasing; +-0.0 both +0.0 (tied keys tie); NaN, padding -inf
  bits = jnp.where(keys < 0, (-keys) | np.int32(np.iinfo(np.int32).min), keys)
  values = jnp.where(keys > _NAN_KEY, lax.bitcast_convert_type(bits, jnp.float32), -jnp.inf)
  # Behind a barrier: XLA's CPU backend turns a top_k whose values are sliced into a full sort
  # (40x slower at 1,000 x 1,000, k = 10). The barrier takes the two outputs, not the top_k
  # itself: XLA's TopkDecomposer crashes on a top_k whose user is a barrier (multi-device CPU).
  top, top_index = lax.top_k(values, cut)
  top, top_index = lax.optimization_barrier((top, top_index))
  reach = (top[..., -1] > -jnp.inf)[..., None]  # the list has cut items above -inf
  q = slot_keys
  out = jnp.int32(size + 1)
  if ties == "first":
    hit = top_index[..., None, :] == slot_index[..., :, None]
    rank = jnp.sum(jnp.where(hit, jnp.arange(1, cut + 1, dtype=jnp.int32), 0), axis=-1)
    rank = jnp.where(jnp.any(hit, axis=-1) & slot_ok, rank, out)
    unsure = jnp.any(slot_ok & (q <= _NEG_INF_KEY) & ~reach)
    rank = lax.cond(unsure, lambda: jnp.where(
        slot_ok, _first_counts(items, q, slot_index, None, None) + 1, out), lambda: rank)
    return rank, rank
  top_keys = _item_keys(tuple(jnp.take_along_axis(x, top_index, axis=-1) for x in items))
  bound = jnp.where(reach, top_keys[..., -1:], np.int32(_NEG_INF_KEY))
  above = jnp.sum(top_keys[..., None, :] > q[..., :, None], axis=-1, dtype=jnp.int32)
  at = jnp.sum(top_keys[..., None, :] >= q[..., :, None], axis=-1, dtype=jnp.int32)
  # one pass over each list: its items keyed T, and its NaN items (keyed below -inf)
  tied = jnp.sum(keys == bound, axis=-1, dtype=jnp.int32)[..., None]
  n = num_items[..., None]
  if jnp.issubdtype(scores.dtype, jnp.floating):
    nan = n - jnp.sum(keys == _NAN_KEY, axis=-1, dtype=jnp.int32)[..., None]
  else:
    nan = n  # no NaN: with reach False no slot is keyed below T
  gt = jnp.where(q >= bound, above, nan)
  ge = jnp.where(q > bound, at, jnp.where(q == bound, above + tied, n))
  ok = slot_ok & ~((q < bound) & reach)
  return jnp.where(ok, gt + 1, out), jnp.where(ok, ge, out)


# ----------------------------------------------------------------------------------------------
# Public constructors, one per input form.


def bucket(count: int, cap: int | None = None) -> int:
  """Rounds a count up to 1, 2, 3, 4, 6, 8, 12, 16, 24, ... (at most 1.5x), capped at ``cap``.

  Few distinct slot counts means few compilations for a stream of differently sized inputs
  (the rank core's slots here, and the host paths' slots: :mod:`jaxrank._host.batches`).
  """
  b = 1
  while b < count:
    b = b + max(1, b // 2) if b & (b - 1) == 0 else b * 4 // 3
  return max(1, b if cap is None else min(b, cap))


def _check_ties_args(ties, method, tie_key, shape):
  _checks.check_choice("ties", ties, TIES)
  _checks.check_choice("method", method, METHODS)
  if tie_key is not None:
    (tie_key,) = as_scores(("tie_key", tie_key, 0))
    _checks.check_same_shape("tie_key", tie_key, "scores", shape)
    if ties != "first":
      raise ValueError(f"tie_key is only used with ties='first', got ties={ties!r}")
    tie_key = sort_keys(tie_key, None)
  return tie_key


def from_dense(scores: ArrayLike, labels: ArrayLike, where: ArrayLike | None = None, *,
               ties: str = "average", tie_key: ArrayLike | None = None,
               max_relevant: int | None = None, method: str = "auto",
               judged: ArrayLike | None = None) -> Ranks:
  r"""Builds :class:`Ranks` from dense per-item scores and graded labels.

  Items with ``labels > 0`` (and ``where`` True) are the relevant slots; ``lo``/``hi`` are
  :math:`1 + |\{j: s_j > s_i\}|` and :math:`|\{j: s_j \ge s_i\}|` over valid items ``j``.

  Args:
    scores: ``[..., n]`` scores of any float or int dtype, ordered by their exact value (see
      :func:`sort_keys`); higher ranks first. NaN ranks last.
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
    judged: optional ``[..., n]`` bool, which items carry a judgment (are in the qrels); see the
      module docstring. ``None``: every valid item is judged. With it, False items are not
      judged (not relevant for any metric, their label ignored) and a negative label marks a
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
  slot instead of ``n`` (:func:`_cut_slot_ranks`). ``cut=None``, or arguments where
  :func:`cut_applies` is False, build the exact :func:`from_dense` ranks.
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

  All eager work happens here (input checks, the one host transfer of the label check and slot
  count), so a caller can run :func:`ranks_of_dense` and the metric formulas in one jitted call.
  """
  (scores,) = as_scores(("scores", scores, 1))
  labels = _checks.as_array("labels", labels, kinds="fib", wide_ints="float")
  _checks.check_same_shape("labels", labels, "scores", scores.shape)
  valid = _checks.as_where(where, scores.shape)
  tie_key = _check_ties_args(ties, method, tie_key, scores.shape)
  if judged is not None:
    judged = _checks.as_array("judged", judged, kinds="b")
    _checks.check_same_shape("judged", judged, "scores", scores.shape)
    m, z, checked = judged_slot_count(labels, valid, judged, max_relevant)
    # the cut path ranks relevant slots only: judged items need exact ranks
    return ((scores, labels, valid, tie_key, judged),
            dict(ties=ties, m=m, method=method, cut=None, checked=checked, z=z))
  m, checked = slot_count(labels, valid, max_relevant)
  if not cut_applies(scores.dtype, scores.shape[-1], cut, m, ties=ties, tie_key=tie_key,
                     method=method, masked=valid is not None):
    cut = None
  return ((scores, labels, valid, tie_key, None),
          dict(ties=ties, m=m, method=method, cut=cut, checked=checked))


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
  the most positives in a list (rounded up by :func:`_bucket`, so few slot counts compile); no
  list then has more positives than slots. Under tracing the slot count is ``max_relevant`` or
  the list length.
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
    >>> from jaxrank._core import ranks as _ranks
    >>> s = jnp.zeros((2, 1000))
    >>> _ranks.traced_slots(s, None, None, ties="average", method="auto", cut=10,
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


def _summary(labels: jax.Array, valid: jax.Array | None) -> list[int]:
  """:func:`_label_summary`'s values as ints: on the host for integer or boolean labels of one
  CPU device (NumPy reads them in place, and its two passes cost a quarter of XLA's
  multi-output reduction: 5 vs 20 ms at 10,000 x 1,000), else on the device (one transfer)."""
  devices = labels.devices()
  if (labels.dtype.kind in "biu" and len(devices) == 1 and next(iter(devices)).platform == "cpu"
      and (valid is None or valid.devices() == devices)):
    y = np.asarray(labels)
    positive = y > 0
    if valid is not None:
      positive &= np.asarray(valid)
    most = int(positive.view(np.uint8).sum(-1, dtype=np.int64).max(initial=0))
    negative = y.dtype.kind == "i" and y.size and int(y.min()) < 0
    return [most, 0, int(bool(negative)), 0]
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
    lo, hi = _slot_ranks(scores, valid, slot_ok, slot_index, ties=ties, method=method,
                         tie_key=tie_key, size=n)
  else:
    lo, hi = _cut_slot_ranks(scores, valid, num_items, slot_ok, slot_index, ties=ties, cut=cut,
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
  lo, hi = _slot_ranks(scores, valid, jnp.concatenate([slot_ok, extra_ok], axis=-1), index,
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


def sparse_grades(relevant_ids: jax.Array, relevant_grades: ArrayLike | None) -> jax.Array:
  """Checked float32 grades of the relevant ids (1 when ``relevant_grades`` is None)."""
  if relevant_grades is None:
    return jnp.ones(relevant_ids.shape, jnp.float32)
  g = _checks.as_array("relevant_grades", relevant_grades, kinds="fib", wide_ints="float")
  _checks.check_same_shape("relevant_grades", g, "relevant_ids", relevant_ids.shape)
  _checks.check_labels("relevant_grades", g)
  return jnp.maximum(g.astype(jnp.float32), 0.0)


def from_sparse(scores: ArrayLike, relevant_ids: ArrayLike,
                relevant_grades: ArrayLike | None = None, where: ArrayLike | None = None, *,
                ties: str = "average", tie_key: ArrayLike | None = None,
                method: str = "auto") -> Ranks:
  r"""Builds :class:`Ranks` from scores over a catalog and the ids of the relevant items.

  Memory is O(lists x (relevant + n)): no ``[lists, relevant, n]`` array is formed.

  Args:
    scores: ``[..., n]`` scores of every catalog item.
    relevant_ids: ``[..., r]`` int ids in ``[0, n)`` of the relevant items; ``-1`` pads.
    relevant_grades: optional ``[..., r]`` grades (default 1); a grade of 0 marks a judged
      non-relevant id (read only by ``bpref``, ``infap`` and ``judged``; ids not listed are not
      judged).
    where: optional ``[..., n]`` bool of rankable items (e.g. filtered-out items False). A
      relevant item with ``where=False`` counts as relevant but is never retrieved.
    ties, tie_key: as in :func:`from_dense`.
    method: ``"auto"`` (= ``"count"``: O(lists x relevant) temporary memory whatever the catalog
      size) or ``"sort"`` (sorts a copy of the scores; faster on CPU with many relevant ids).

  Example:
    >>> import jaxrank
    >>> r = jaxrank.from_sparse([[0.3, 0.9, 0.1, 0.5]], [[3, -1]])
    >>> r.lo.tolist(), r.grades.tolist()
    ([[2, 5]], [[1.0, 0.0]])
  """
  (scores,) = as_scores(("scores", scores, 1))
  ids = _checks.as_array("relevant_ids", relevant_ids, kinds="i")
  _checks.check_leading("relevant_ids", ids, "scores", scores.shape[:-1])
  _checks.check_ids("relevant_ids", ids, scores.shape[-1], "the number of scores")
  grades = sparse_grades(ids, relevant_grades)
  valid = _checks.as_where(where, scores.shape)
  tie_key = _check_ties_args(ties, method, tie_key, scores.shape)
  return _from_sparse(scores, ids, grades, valid, tie_key, ties=ties, method=method)


@functools.partial(jax.jit, static_argnames=("ties", "method"))
def _from_sparse(scores, ids, grades, valid, tie_key, *, ties, method):
  n = scores.shape[-1]
  num_items = (jnp.full(scores.shape[:-1], n, jnp.int32) if valid is None
               else jnp.sum(valid, axis=-1, dtype=jnp.int32))
  listed = ids >= 0
  used = listed & (grades > 0)
  safe = jnp.clip(ids, 0, n - 1).astype(jnp.int32)
  # every listed id is ranked, grade 0 too (the judged non-relevant ones, see Judgments): the
  # same counting pass, the same cost as before (each slot was counted, then masked)
  ranked = listed if valid is None else listed & jnp.take_along_axis(valid, safe, axis=-1)
  # "auto" keeps the sparse form's memory at O(lists x (relevant + chunk)): no sorted copy.
  method = "count" if method == "auto" else method
  lo, hi = _slot_ranks(scores, valid, ranked, safe, ties=ties, method=method, tie_key=tie_key,
                       size=n)
  return _listed_ranks(lo, hi, grades, listed, num_items, size=n, resolved=ties == "first")


def _listed_ranks(lo, hi, grades, listed, num_items, *, size, resolved):
  """The :class:`Ranks` of listed ids ranked at ``lo``/``hi``: positive grades are the relevant
  slots, grade 0 the judged non-relevant ones (:class:`Judgments`)."""
  used = listed & (grades > 0)
  zero = listed & ~(grades > 0)
  out = jnp.int32(size + 1)
  return Ranks(lo=jnp.where(used, lo, out), hi=jnp.where(used, hi, out),
               grades=jnp.where(used, grades, 0.0), num_items=num_items,
               overflow=jnp.zeros(num_items.shape, bool), size=size, resolved=resolved,
               judged=Judgments(lo=jnp.where(zero, lo, out), hi=jnp.where(zero, hi, out),
                                kind=jnp.where(zero, ZERO, UNUSED).astype(jnp.int8)))


def from_ranked_ids(ranked_ids: ArrayLike, relevant_ids: ArrayLike,
                    relevant_grades: ArrayLike | None = None) -> Ranks:
  """Builds :class:`Ranks` from ranked lists of item ids (no scores, so no ties).

  The rank of an item is 1 + the number of non-padding entries before it. Relevant items that do
  not appear are not retrieved: they count as relevant (recall and ideal DCG see them) and
  contribute nothing else, as in trec_eval.

  Args:
    ranked_ids: ``[..., k]`` int ids, best first; ``-1`` pads (anywhere). Ids must not repeat.
    relevant_ids: ``[..., r]`` int ids of the relevant items, ``-1`` pads; no repeats.
    relevant_grades: optional ``[..., r]`` grades (default 1); a grade of 0 marks a judged
      non-relevant id, as in :func:`from_sparse`.

  Example:
    >>> import jaxrank
    >>> r = jaxrank.from_ranked_ids([[7, 3, 5]], [[5, 9]])
    >>> r.lo.tolist(), int(r.num_items[0])
    ([[3, 4]], 3)
  """
  ranked = _checks.as_array("ranked_ids", ranked_ids, kinds="i", min_ndim=1)
  ids = _checks.as_array("relevant_ids", relevant_ids, kinds="i")
  _checks.check_leading("relevant_ids", ids, "ranked_ids", ranked.shape[:-1])
  _checks.check_ids("ranked_ids", ranked, np.iinfo(np.int64).max, "any id")
  _checks.check_ids("relevant_ids", ids, np.iinfo(np.int64).max, "any id")
  grades = sparse_grades(ids, relevant_grades)
  return _from_ranked_ids(ranked, ids, grades)


@jax.jit
def _from_ranked_ids(ranked, ids, grades):
  k = ranked.shape[-1]
  valid = ranked >= 0
  position = jnp.cumsum(valid, axis=-1, dtype=jnp.int32)  # 1-based rank at each entry
  listed = ids >= 0
  match = (ranked[..., None, :] == ids[..., :, None]) & valid[..., None, :]
  rank = jnp.max(jnp.where(match, position[..., None, :], 0), axis=-1, initial=0)
  rank = jnp.where(listed & (rank > 0), rank, k + 1)
  return _listed_ranks(rank, rank, grades, listed, jnp.sum(valid, axis=-1, dtype=jnp.int32),
                       size=k, resolved=True)


def from_candidates(positive_scores: ArrayLike, candidate_scores: ArrayLike,
                    candidate_mask: ArrayLike | None = None, *, ties: str = "average") -> Ranks:
  r"""Builds :class:`Ranks` for one positive scored against candidates (link prediction).

  The positive's rank among itself and the valid candidates is ``lo = 1 + #{c > s}`` and
  ``hi = 1 + #{c >= s}``; ``ties="first"`` ranks the positive before tied candidates (PyKEEN's
  optimistic rank; use ``ties="pessimistic"`` or ``"average"`` in the metric for the others).

  Args:
    positive_scores: ``[...]`` score of each positive.
    candidate_scores: ``[..., c]`` scores of its candidates (negatives).
    candidate_mask: optional ``[..., c]`` bool, False drops a candidate (the filtered setting).
    ties: ``"first"`` resolves ties at construction; anything else keeps the bounds.

  Example:
    >>> import jaxrank
    >>> r = jaxrank.from_candidates([0.5], [[0.9, 0.5, 0.1]])
    >>> r.lo.tolist(), r.hi.tolist()
    ([[2]], [[3]])
  """
  pos, cand = as_scores(("positive_scores", positive_scores, 0),
                        ("candidate_scores", candidate_scores, 1))
  _checks.check_leading("candidate_scores", cand, "positive_scores", pos.shape)
  mask = None
  if candidate_mask is not None:
    mask = _checks.as_array("candidate_mask", candidate_mask, kinds="b")
    _checks.check_same_shape("candidate_mask", mask, "candidate_scores", cand.shape)
  _checks.check_choice("ties", ties, TIES)
  return _from_candidates(pos, cand, mask, ties=ties)


@functools.partial(jax.jit, static_argnames=("ties",))
def _from_candidates(pos, cand, mask, *, ties):
  c = cand.shape[-1]
  items = (cand,) if mask is None else (cand, mask)  # one dtype (as_scores)
  gt, ge = _counts_by_compare(items, sort_keys(pos[..., None], None))
  lo = gt + 1
  hi = lo if ties == "first" else ge + 1
  num_items = 1 + (jnp.full(pos.shape, c, jnp.int32) if mask is None
                   else jnp.sum(mask, axis=-1, dtype=jnp.int32))
  return Ranks(lo=lo, hi=hi, grades=jnp.ones(lo.shape, jnp.float32), num_items=num_items,
               overflow=jnp.zeros(pos.shape, bool), size=c + 1, resolved=ties == "first")
