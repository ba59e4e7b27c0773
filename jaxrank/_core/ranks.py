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

This module makes ``Ranks`` a pytree and holds the order keys and the input helpers every form
shares. The ranks are built by :mod:`jaxrank._core.dense` (:func:`jaxrank.from_dense`, and the
metric functions' split of it) and :mod:`jaxrank._core.forms` (sparse ids, ranked ids,
candidates), which count the items around each slot with :mod:`jaxrank._core.counting`, or only
up to the largest cutoff with :mod:`jaxrank._core.cut`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jaxrank._core import checks as _checks
# Re-exported for the layers above. TIES is the dense tie policies of the rank core; not to be
# confused with jaxrank.linkpred.TIES (link prediction's, "realistic" included) or the run tie
# orders of jaxrank._trec ("trec" included).
from jaxrank._core.rankform import (POOLED, TIES, UNUSED, ZERO, Judgments, Ranks,  # noqa: F401
                                    bucket)

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
  common: type  # a scalar type (object: Python ints)
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
  dtypes: list[np.dtype | None] = [a.dtype for a in arrays]  # the fold's None: no common dtype
  common = functools.reduce(exact_common_dtype, dtypes)
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
  x64 = jax.enable_x64.value
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
# Shared by the builders of every input form.


def sparse_grades(relevant_ids: jax.Array, relevant_grades: ArrayLike | None) -> jax.Array:
  """Checked float32 grades of the relevant ids (1 when ``relevant_grades`` is None)."""
  if relevant_grades is None:
    return jnp.ones(relevant_ids.shape, jnp.float32)
  g = _checks.as_array("relevant_grades", relevant_grades, kinds="fib", wide_ints="float")
  _checks.check_same_shape("relevant_grades", g, "relevant_ids", relevant_ids.shape)
  _checks.check_labels("relevant_grades", g)
  return jnp.maximum(g.astype(jnp.float32), 0.0)
