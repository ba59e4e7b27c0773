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
  ``jit`` with too small a ``max_relevant``); every metric of such a list is NaN.
* ``size`` (static int): the largest possible rank, i.e. the padded list length.

Scores are compared through an order-preserving integer key (:func:`sort_keys`): every dtype
ranks by its exact value (subnormal floats and 64-bit integers included), NaN scores rank below
every number (``-inf`` included) and tie with each other, ``-0.0 == 0.0``, and padded items
(``where=False``) are not ranked at all. Without JAX's x64 mode, JAX stores float64 input as
float32 (values equal in float32 tie) and cannot hold 64-bit integers: integer scores beyond
int32 are then replaced on the host by their dense ranks (same order), see :func:`as_scores`.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jaxrank import _checks

TIES = ("average", "optimistic", "pessimistic", "first")
METHODS = ("auto", "count", "sort")


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["lo", "hi", "grades", "num_items", "overflow"],
    meta_fields=["size", "resolved"],
)
@dataclasses.dataclass(frozen=True)
class Ranks:
  """Ranks of the relevant items of a batch of lists (see the module docstring).

  ``resolved`` is True when ties were already broken at construction (``ties="first"`` or an input
  form without scores), so ``lo == hi`` everywhere. Build one with :func:`from_dense`,
  :func:`from_sparse`, :func:`from_ranked_ids` or :func:`from_candidates`; every metric and
  :func:`jaxrank.evaluate` accept it in place of ``(scores, labels)``.

  Example (the two relevant items tie for ranks 2-3):
    >>> import jaxrank
    >>> r = jaxrank.from_dense([[0.9, 0.8, 0.8, 0.1]], [[0, 2, 1, 0]])
    >>> r.lo.tolist(), r.hi.tolist(), r.grades.tolist(), r.shape
    ([[2, 2]], [[3, 3]], [[2.0, 1.0]], (1,))
    >>> float(jaxrank.reciprocal_rank(r)[0])
    0.5
  """

  lo: jax.Array
  hi: jax.Array
  grades: jax.Array
  num_items: jax.Array
  overflow: jax.Array
  size: int
  resolved: bool = False

  @property
  def shape(self) -> tuple[int, ...]:
    """The leading (batch) shape: the shape of every per-list metric."""
    return tuple(self.num_items.shape)


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
      low, high = (int(v) for v in jax.device_get((jnp.min(a), jnp.max(a))))
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
# Public constructors, one per input form.


def _bucket(count: int, cap: int) -> int:
  """Rounds a slot count up to 1, 2, 3, 4, 6, 8, 12, 16, 24, ... (at most 1.5x), capped at ``cap``.

  Few distinct slot counts means few compilations for a stream of differently sized inputs.
  """
  b = 1
  while b < count:
    b = b + max(1, b // 2) if b & (b - 1) == 0 else b * 4 // 3
  return max(1, min(b, cap))


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
               max_relevant: int | None = None, method: str = "auto") -> Ranks:
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
      it there for speed. A traced list with more relevant items than slots yields NaN metrics.
    method: ``"auto"``, ``"count"`` (compare every slot with every item) or ``"sort"`` (sort each
      list once, then binary-search); the result never depends on it.

  Returns:
    The :class:`Ranks` of the relevant items.

  Example:
    >>> import jaxrank
    >>> r = jaxrank.from_dense([[0.1, 0.9, 0.9]], [[1, 1, 0]])
    >>> r.lo.tolist(), r.hi.tolist()
    ([[3, 1]], [[3, 2]])
  """
  (scores,) = as_scores(("scores", scores, 1))
  labels = _checks.as_array("labels", labels, kinds="fib", wide_ints="float")
  _checks.check_same_shape("labels", labels, "scores", scores.shape)
  valid = _checks.as_where(where, scores.shape)
  tie_key = _check_ties_args(ties, method, tie_key, scores.shape)
  grades, positive, max_relevant = dense_positives(labels, valid, max_relevant)
  return _from_dense(scores, grades, valid, positive, tie_key, ties=ties, m=max_relevant,
                     method=method)


def dense_positives(labels: jax.Array, valid: jax.Array | None,
                    max_relevant: int | None) -> tuple[jax.Array, jax.Array, int]:
  """Checked grades (float32), the positive mask, and the number of relevant slots per list.

  With concrete labels one host transfer checks them (no NaN, negative or huge grade) and counts
  the most positives in a list (rounded up by :func:`_bucket`, so few slot counts compile); under
  tracing the slot count is ``max_relevant`` or the list length.
  """
  n = labels.shape[-1]
  grades, positive, summary = _positives(labels, valid)
  most = None
  if _checks.is_concrete(summary[0]):
    most, *bad = (int(v) for v in jax.device_get(summary))
    _checks.raise_label_error("labels", labels, *(bool(v) for v in bad))
  if max_relevant is None:
    return grades, positive, n if most is None else _bucket(most, n)
  max_relevant = _checks.check_k(max_relevant, "max_relevant")
  if most is not None and most > max_relevant:
    raise ValueError(f"max_relevant={max_relevant} is smaller than the largest number of "
                     f"relevant items in a list ({most})")
  return grades, positive, min(max_relevant, n)


@jax.jit
def _positives(labels, valid):
  """Grades, the positive mask, and (most positives in a list, *label_summary)."""
  grades = jnp.maximum(labels.astype(jnp.float32), 0.0)
  positive = grades > 0 if valid is None else (grades > 0) & valid
  most = jnp.max(jnp.sum(positive, axis=-1, dtype=jnp.int32), initial=0)
  return grades, positive, (most, *_checks.label_summary(labels))


@functools.partial(jax.jit, static_argnames=("ties", "m", "method"))
def _from_dense(scores, grades, valid, positive, tie_key, *, ties, m, method):
  n = scores.shape[-1]
  num_items = (jnp.full(scores.shape[:-1], n, jnp.int32) if valid is None
               else jnp.sum(valid, axis=-1, dtype=jnp.int32))
  count = jnp.sum(positive, axis=-1, dtype=jnp.int32)
  slot_index, slot_ok = relevant_slots(positive, m)
  slot_grades = jnp.where(slot_ok, jnp.take_along_axis(grades, slot_index, axis=-1), 0.0)
  lo, hi = _slot_ranks(scores, valid, slot_ok, slot_index, ties=ties, method=method,
                       tie_key=tie_key, size=n)
  return Ranks(lo=lo, hi=hi, grades=slot_grades, num_items=num_items, overflow=count > m,
               size=n, resolved=ties == "first")


def relevant_slots(positive: jax.Array, m: int) -> tuple[jax.Array, jax.Array]:
  """Item index of each of ``m`` slots per list and whether the slot holds a positive item."""
  n = positive.shape[-1]
  if m >= n:
    return jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32), positive.shape), positive
  # The first m positive positions, found by a top-k over (-index) of the positive items.
  order = jnp.where(positive, -jnp.arange(n, dtype=jnp.float32), -jnp.inf)
  top, slot_index = lax.top_k(order, m)
  return slot_index, top > -jnp.inf


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
    relevant_grades: optional ``[..., r]`` grades (default 1); a grade of 0 drops the slot.
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
  used = (ids >= 0) & (grades > 0)
  safe = jnp.clip(ids, 0, n - 1).astype(jnp.int32)
  ranked = used if valid is None else used & jnp.take_along_axis(valid, safe, axis=-1)
  # "auto" keeps the sparse form's memory at O(lists x (relevant + chunk)): no sorted copy.
  method = "count" if method == "auto" else method
  lo, hi = _slot_ranks(scores, valid, ranked, safe, ties=ties, method=method, tie_key=tie_key,
                       size=n)
  return Ranks(lo=lo, hi=hi, grades=jnp.where(used, grades, 0.0), num_items=num_items,
               overflow=jnp.zeros(num_items.shape, bool), size=n, resolved=ties == "first")


def from_ranked_ids(ranked_ids: ArrayLike, relevant_ids: ArrayLike,
                    relevant_grades: ArrayLike | None = None) -> Ranks:
  """Builds :class:`Ranks` from ranked lists of item ids (no scores, so no ties).

  The rank of an item is 1 + the number of non-padding entries before it. Relevant items that do
  not appear are not retrieved: they count as relevant (recall and ideal DCG see them) and
  contribute nothing else, as in trec_eval.

  Args:
    ranked_ids: ``[..., k]`` int ids, best first; ``-1`` pads (anywhere). Ids must not repeat.
    relevant_ids: ``[..., r]`` int ids of the relevant items, ``-1`` pads; no repeats.
    relevant_grades: optional ``[..., r]`` grades (default 1).

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
  used = (ids >= 0) & (grades > 0)
  match = (ranked[..., None, :] == ids[..., :, None]) & valid[..., None, :]
  rank = jnp.max(jnp.where(match, position[..., None, :], 0), axis=-1, initial=0)
  rank = jnp.where(used & (rank > 0), rank, k + 1)
  return Ranks(lo=rank, hi=rank, grades=jnp.where(used, grades, 0.0),
               num_items=jnp.sum(valid, axis=-1, dtype=jnp.int32),
               overflow=jnp.zeros(ranked.shape[:-1], bool), size=k, resolved=True)


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
