"""Beyond-accuracy recommender metrics (the ones Evidently documents), as jit-compiled kernels.

Every function reads the recommended ids ``ranked_ids [..., k]`` (best first, ``-1`` pads anywhere;
:func:`top_k_ids` turns scores into them) plus what the metric needs: item embeddings, training
popularity per item (:func:`item_popularity`), users' relevant or history ids (``-1`` pads).
Per-list metrics return ``[...]`` with NaN where the list has nothing to measure (average them
with ``jaxrank.mean(values, empty="skip")``); catalog-level metrics return a scalar. All run in
O(lists x k x d) or O(lists x k + catalog): no user-pair or item-pair matrix is ever formed.

Where Evidently's code differs from its documentation the default follows the documentation and
an option reproduces the dashboard (``normalize="evidently"``, ``unseen="skip"``,
``over="recommended"``, ``pooled=True``); see each docstring.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core import cut as _cut
from jaxrank._core import ranks as _ranks

__all__ = [
    "average_recommendation_popularity", "coverage", "gini", "intra_list_diversity",
    "item_bias", "item_popularity", "novelty", "personalization", "recommendation_counts",
    "score_entropy", "serendipity", "top_k_ids", "user_bias",
]

# ----------------------------------------------------------------------------------------------
# Inputs.


def _ids(name: str, ids: ArrayLike, num_items: int, min_ndim: int = 1) -> jax.Array:
  ids = _checks.as_array(name, ids, kinds="i", min_ndim=min_ndim)
  _checks.check_ids(name, ids, num_items, "the number of items")
  return ids


def _positive_int(value: Any, name: str) -> int:
  """``value`` as an int, which must be a positive int (not None)."""
  if value is None:
    raise TypeError(f"{name} must be a positive int, got None")
  checked = _checks.check_k(value, name)
  assert checked is not None  # check_k returns None only for None
  return checked


def _num_items(num_items: Any) -> int:
  return _positive_int(num_items, "num_items")


def _embeddings(item_embeddings: ArrayLike) -> jax.Array:
  e = _checks.as_array("item_embeddings", item_embeddings, kinds="fi")
  if e.ndim != 2:
    raise ValueError(f"item_embeddings must have shape (num_items, d), got {tuple(e.shape)}")
  return e


def _popularity(item_popularity: ArrayLike) -> jax.Array:
  p = _checks.as_array("item_popularity", item_popularity, kinds="fi", wide_ints="float")
  if p.ndim != 1:
    raise ValueError(f"item_popularity must have shape (num_items,), got {tuple(p.shape)}")
  if _checks.is_concrete(p) and any(_checks.host_values(_checks.label_summary, p)):
    values = np.asarray(p).astype(np.float64)
    i = int(np.argwhere(np.isnan(values) | (values < 0) | (values > _checks.MAX_GRADE))[0][0])
    raise ValueError(f"item_popularity must be counts >= 0 (training users or interactions "
                     f"per item), got {values[i]:g} at item {i}")
  return p


def top_k_ids(scores: ArrayLike, k: int, *, where: ArrayLike | None = None) -> jax.Array:
  """The ids of the k best-scored items of each list (``-1`` where fewer than k are valid).

  Scores of every float and integer dtype are ordered by their exact value (as the rank core
  orders them); NaN scores come after every number, padding (``where=False``) after NaN, and
  equal scores in index order.

  Example:
    >>> import jaxrank
    >>> jaxrank.top_k_ids([[0.1, 0.9, 0.5]], 2).tolist()
    [[1, 2]]
  """
  (scores,) = _ranks.as_scores(("scores", scores, 1))
  k = _positive_int(k, "k")
  if k > scores.shape[-1]:
    raise ValueError(f"k must be <= the number of items {scores.shape[-1]}, got {k}")
  valid = _checks.as_where(where, scores.shape)
  return _top_k_ids(scores, valid, k=k)


@functools.partial(jax.jit, static_argnames=("k",))
def _top_k_ids(scores: jax.Array, valid: jax.Array | None, *, k: int) -> jax.Array:
  # XLA's CPU top_k is fast on float32 alone (other dtypes become a full sort, ~100x slower):
  # the CPU gets its own kernel, other backends the top k of the rank core's order keys.
  ids = lax.platform_dependent(
      scores, valid, cpu=functools.partial(_top_k_cpu, k=k),
      default=functools.partial(_top_k_of_keys, k=k, select=_top_k_of_ints))
  if valid is None:
    return ids
  return jnp.where(jnp.take_along_axis(valid, ids, axis=-1), ids, -1)


def _top_k_of_ints(keys: jax.Array, k: int) -> jax.Array:
  return lax.top_k(keys, k)[1].astype(jnp.int32)


def _top_k_of_bits(keys: jax.Array, k: int) -> jax.Array:
  """``lax.top_k`` of int32 keys run as XLA's CPU top_k of float32 bit patterns.

  That kernel compares float32 by their bits as a total order (``-NaN < -inf < ... < -0.0 <
  0.0 < ... < inf < NaN``, the int32 order after flipping the magnitude bits of negatives),
  equal bits in index order. Key ``x`` is stored as the bits of that rank: ``x`` itself when
  ``x >= 0``, ``x ^ 0x7fffffff`` below, so every int32 key keeps its order, NaN patterns included.
  """
  bits = keys ^ ((keys >> 31) & np.int32(0x7FFFFFFF))
  return lax.top_k(lax.bitcast_convert_type(bits, jnp.float32), k)[1]


def _top_k_of_keys(scores: jax.Array, valid: jax.Array | None, *, k: int,
                   select: Callable[[jax.Array, int], jax.Array]) -> jax.Array:
  """The top k by the rank core's order keys: NaN below -inf, padding below NaN, ties by index.

  ``select(keys, k)`` is a top k of integer keys. A full-key dtype (32/64-bit integers) whose
  valid items hold a key at or below padding's is sorted instead, and only then.
  """
  keys = _ranks.sort_keys(scores, valid)
  if valid is None or not _ranks.key_dtype(scores.dtype)[1]:
    return select(keys, k)

  def by_sort(_: None) -> jax.Array:  # (valid first, key descending, index); ~key reverses an integer order
    index = lax.broadcasted_iota(jnp.int32, keys.shape, keys.ndim - 1)
    return lax.sort((~valid, ~keys, index), dimension=-1, num_keys=3)[2][..., :k]

  # Full keys: a valid item may hold a key at or below padding's (int32's two smallest values,
  # uint32's 0 and 1), where the top k would rank padding first.
  clash = jnp.any(valid & (keys <= _ranks.padding_key(scores.dtype))) & jnp.any(~valid)
  return lax.cond(clash, by_sort, lambda _: select(keys, k), None)


def _top_k_cpu(scores: jax.Array, valid: jax.Array | None, *, k: int) -> jax.Array:
  """XLA's CPU top_k: float32 bits in total order, ties in index order (see _top_k_of_bits)."""
  if _ranks.key_dtype(scores.dtype)[0] != np.int32:  # 64-bit scores (x64 mode)
    return _top_k_wide_cpu(scores, valid, k=k)
  exact = functools.partial(_top_k_of_keys, k=k, select=_top_k_of_bits)
  if scores.dtype != jnp.float32 or valid is not None:
    return exact(scores, valid)
  # float32 as it is: the bits' total order is the value order except that -0.0 sorts below
  # 0.0 and NaN above inf (or below -inf). When no zero and no NaN reach the top k, no item left
  # out is one of them either where it matters, and the top k is exact; else the keys' top k.
  # (Under a user's vmap the cond becomes a select, which runs both.)
  values, ids = lax.top_k(scores, k)
  return lax.cond(_cut.raw_top_k_unsure(values), lambda: exact(scores, valid), lambda: ids)


def _top_k_wide_cpu(scores: jax.Array, valid: jax.Array | None, *, k: int) -> jax.Array:
  """64-bit scores on the CPU: the top k of int64 keys, which XLA runs as a full sort.

  64-bit integers whose valid values all lie in [-2**24, 2**24] (NumPy's default int64 under x64
  mode, say) are float32 values exactly: their top k is float32's, padding at -inf.
  """
  exact = functools.partial(_top_k_of_keys, k=k, select=_top_k_of_ints)
  if not jnp.issubdtype(scores.dtype, jnp.integer):
    return exact(scores, valid)
  limit = np.array(2**24, scores.dtype)
  small = scores <= limit
  if jnp.issubdtype(scores.dtype, jnp.signedinteger):
    small &= scores >= -limit
  if valid is not None:
    small |= ~valid

  def by_float32() -> jax.Array:
    values = scores.astype(jnp.float32)
    if valid is not None:
      values = jnp.where(valid, values, -np.inf)
    return lax.top_k(values, k)[1]

  return lax.cond(jnp.all(small), by_float32, lambda: exact(scores, valid))


def recommendation_counts(ranked_ids: ArrayLike, *, num_items: int) -> jax.Array:
  """How many lists recommend each item: ``[num_items]`` int32 (the input of ARP-like plots).

  Example:
    >>> import jaxrank
    >>> jaxrank.recommendation_counts([[0, 2], [2, -1]], num_items=3).tolist()
    [1, 0, 2]
  """
  num_items = _num_items(num_items)
  return _counts(_ids("ranked_ids", ranked_ids, num_items), num_items=num_items)


@functools.partial(jax.jit, static_argnames=("num_items",))
def _counts(ids: jax.Array, *, num_items: int) -> jax.Array:
  flat = ids.reshape(-1)
  return jnp.bincount(jnp.where(flat >= 0, flat, num_items), length=num_items + 1)[:num_items]


def item_popularity(train_user_ids: ArrayLike, train_item_ids: ArrayLike, *, num_items: int,
                    distinct_users: bool = True) -> jax.Array:
  r"""Training popularity :math:`\phi(i)` of every item from (user, item) interaction pairs.

  ``distinct_users=True`` counts distinct users per item (Evidently's ``TrainStats``:
  ``groupby(item).user.nunique()``, used by its novelty, ARP and coverage); ``False`` counts
  interactions (the "times rated" of Evidently's ARP documentation). Pairs with an id of ``-1``
  are ignored.

  Returns:
    ``[num_items]`` int32 counts.

  Example:
    >>> import jaxrank
    >>> jaxrank.item_popularity([0, 0, 1, 2, 2], [1, 1, 1, 0, 1], num_items=3).tolist()
    [1, 3, 0]
  """
  num_items = _num_items(num_items)
  users = _checks.as_array("train_user_ids", train_user_ids, kinds="i", min_ndim=1).reshape(-1)
  items = _checks.as_array("train_item_ids", train_item_ids, kinds="i", min_ndim=1).reshape(-1)
  if users.size != items.size:
    raise ValueError(f"train_user_ids and train_item_ids must hold as many ids, got "
                     f"{users.size} and {items.size}")
  _checks.check_ids("train_item_ids", items[:, None], num_items, "the number of items")
  return _popularity_kernel(users, items, num_items=num_items,
                            distinct=bool(distinct_users))


@functools.partial(jax.jit, static_argnames=("num_items", "distinct"))
def _popularity_kernel(users: jax.Array, items: jax.Array, *, num_items: int,
                       distinct: bool) -> jax.Array:
  ok = (users >= 0) & (items >= 0)
  if distinct:
    # Sort the pairs by (item, user) and keep the first of each run of equal pairs.
    key_i = jnp.where(ok, items, num_items).astype(jnp.int32)
    key_u = users.astype(jnp.int32)
    key_i, key_u = lax.sort((key_i, key_u), num_keys=2)
    new = jnp.concatenate([jnp.ones(1, bool),
                           (key_i[1:] != key_i[:-1]) | (key_u[1:] != key_u[:-1])])
    items, ok = key_i, new & (key_i < num_items)
  return jnp.bincount(jnp.where(ok, items, num_items), length=num_items + 1)[:num_items]


def _nan_where(undefined: jax.Array, value: jax.Array) -> jax.Array:
  return jnp.where(undefined, jnp.nan, value).astype(jnp.float32)


def _unit(e: jax.Array) -> jax.Array:
  """Rows scaled to unit length; zero rows stay zero (cosine 0, as scikit-learn's cosine)."""
  e = e.astype(jnp.float32)
  norm = jnp.linalg.norm(e, axis=-1, keepdims=True)
  return e / jnp.where(norm > 0, norm, 1.0)


def _sum_rows(unit: jax.Array, ids: jax.Array) -> tuple[jax.Array, jax.Array]:
  """sum over the valid ids of each list of their unit rows ([..., d]) and of their squared norms.

  A ``fori_loop`` over the k columns, one row gather each: no [..., k, d] array is materialised,
  and on CPU it ran 3.5x faster than gathering all k columns at once (200,000 lists, d = 64).
  """
  k = ids.shape[-1]
  flat = ids.reshape(-1, k)
  sq = jnp.sum(unit * unit, axis=-1)

  def column(j: jax.Array,
             acc: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
    col = lax.dynamic_index_in_dim(flat, j, axis=1, keepdims=False)
    ok = col >= 0  # -1 clips to row 0 and is masked out
    rows = jnp.take(unit, col, axis=0, mode="clip")
    return (acc[0] + jnp.where(ok[:, None], rows, 0.0),
            acc[1] + jnp.where(ok, jnp.take(sq, col, mode="clip"), 0.0))

  init = (jnp.zeros((flat.shape[0], unit.shape[-1]), jnp.float32),
          jnp.zeros(flat.shape[0], jnp.float32))
  total, norms = lax.fori_loop(0, k, column, init)
  return total.reshape(*ids.shape[:-1], -1), norms.reshape(ids.shape[:-1])


def _column_dots(unit: jax.Array, ids: jax.Array, vectors: jax.Array) -> jax.Array:
  """``unit[ids[..., j]] . vectors[...]`` for every column j, one row gather per column."""
  k = ids.shape[-1]
  flat, vec = ids.reshape(-1, k), vectors.reshape(-1, vectors.shape[-1])

  def column(j: jax.Array, out: jax.Array) -> jax.Array:
    col = lax.dynamic_index_in_dim(flat, j, axis=1, keepdims=False)
    dot = jnp.sum(jnp.take(unit, col, axis=0, mode="clip") * vec, axis=-1)
    return lax.dynamic_update_index_in_dim(out, dot, j, axis=1)

  out = lax.fori_loop(0, k, column, jnp.zeros(flat.shape, jnp.float32))
  return out.reshape(ids.shape)


# ----------------------------------------------------------------------------------------------
# Per-list metrics.

DIVERSITY_NORMALIZE = ("pairs", "evidently")


def intra_list_diversity(ranked_ids: ArrayLike, item_embeddings: ArrayLike, *,
                         normalize: str = "pairs") -> jax.Array:
  r"""Intra-list diversity: the mean pairwise cosine distance of the items of each list.

  .. math:: \mathrm{ILD}(L) = \frac{2}{|L|(|L|-1)} \sum_{i < j \in L} (1 - \cos(e_i, e_j))
     \in [0, 2]

  Computed without the k x k Gram matrix: with unit rows :math:`\hat e`,
  :math:`\sum_{i<j} \cos = (\lVert \sum_i \hat e_i \rVert^2 - \sum_i \lVert \hat e_i \rVert^2)/2`,
  so a list costs O(k d). Zero embeddings have cosine 0 with everything (scikit-learn's cosine
  distance). Lists with fewer than 2 items are NaN.

  ``normalize="evidently"`` divides the pair sum by :math:`|L|` instead of the number of pairs, as
  Evidently's ``DiversityMetric`` code does (its docs say mean over pairs); that value lies in
  :math:`[0, |L| - 1]`, is 0 for one item and NaN only for an empty list.

  Args:
    ranked_ids: ``[..., k]`` recommended ids, ``-1`` pads.
    item_embeddings: ``[num_items, d]`` item features or embeddings.
    normalize: ``"pairs"`` (default, documented) or ``"evidently"``.

  Example:
    >>> import jaxrank
    >>> e = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    >>> round(float(jaxrank.intra_list_diversity([[0, 1, -1]], e)[0]), 4)
    1.0
  """
  e = _embeddings(item_embeddings)
  ids = _ids("ranked_ids", ranked_ids, e.shape[0])
  _checks.check_choice("normalize", normalize, DIVERSITY_NORMALIZE)
  return _diversity(ids, e, normalize=normalize)


@functools.partial(jax.jit, static_argnames=("normalize",))
def _diversity(ids: jax.Array, e: jax.Array, *, normalize: str) -> jax.Array:
  total, norms = _sum_rows(_unit(e), ids)
  n = jnp.sum(ids >= 0, axis=-1).astype(jnp.float32)
  cos_sum = (jnp.sum(total * total, axis=-1) - norms) / 2
  pairs = n * (n - 1) / 2
  dist = jnp.maximum(pairs - cos_sum, 0.0)
  if normalize == "pairs":
    return _nan_where(n < 2, dist / jnp.maximum(pairs, 1.0))
  return _nan_where(n < 1, dist / jnp.maximum(n, 1.0))


UNSEEN = ("skip", "max")


def novelty(ranked_ids: ArrayLike, item_popularity: ArrayLike, num_users: int | ArrayLike, *,
            unseen: str = "skip") -> jax.Array:
  r"""Novelty of each list: the mean self-information of its items in the training data.

  .. math:: \mathrm{nov}(L) = \frac{1}{|L'|} \sum_{i \in L'} -\log_2 \frac{\phi(i)}{N}
     \in [0, \log_2 N]

  :math:`\phi(i)` = training users who interacted with ``i`` (:func:`item_popularity`), ``N`` the
  number of training users, so :math:`0 \le \phi(i) \le N` (a popularity above ``num_users``
  raises when the values are concrete). An item unseen in training has no finite novelty:
  ``unseen="skip"`` (default; Evidently's docs and code) leaves it out of :math:`L'` (a list of
  only unseen items is NaN); ``"max"`` counts it as seen by one user, :math:`\log_2 N`.
  Evidently's docs say "divide by K": equal to this for full lists of seen items.

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.novelty([[0, 1]], [4, 1], 4)[0]), 4)  # (0 + 2) / 2
    1.0
  """
  pop = _popularity(item_popularity)
  ids = _ids("ranked_ids", ranked_ids, pop.shape[0])
  _checks.check_choice("unseen", unseen, UNSEEN)
  n = _checks.as_array("num_users", num_users, kinds="fi")
  if n.ndim != 0:
    raise ValueError(f"num_users must be a scalar (the number of training users), got shape "
                     f"{tuple(n.shape)}")
  if _checks.is_concrete(n) and not float(n) > 0:
    raise ValueError(f"num_users must be > 0 (the number of training users), got {float(n):g}")
  if _checks.is_concrete(n) and _checks.is_concrete(pop) and pop.size:
    i, most = _checks.host_values(lambda p: (jnp.argmax(p), jnp.max(p)), pop)
    i, most = int(i), float(most)
    if most > float(n):
      raise ValueError(f"item_popularity must be <= num_users ({float(n):g}): an item cannot be "
                       f"seen by more training users than there are, got {most:g} at "
                       f"item {i}")
  return _novelty(ids, pop, n.astype(jnp.float32), unseen=unseen)


@functools.partial(jax.jit, static_argnames=("unseen",))
def _novelty(ids: jax.Array, pop: jax.Array, n: jax.Array, *, unseen: str) -> jax.Array:
  pop = pop.astype(jnp.float32)
  phi = jnp.where(ids >= 0, pop[jnp.where(ids >= 0, ids, 0)], 0.0)
  use = (ids >= 0) & ((phi > 0) | (unseen == "max"))
  info = -jnp.log2(jnp.maximum(phi, 1.0) / n)
  count = jnp.sum(use, axis=-1)
  return _nan_where(count == 0, jnp.sum(jnp.where(use, info, 0.0), axis=-1) / jnp.maximum(count, 1))


ARP_UNSEEN = ("zero", "skip")


def average_recommendation_popularity(ranked_ids: ArrayLike, item_popularity: ArrayLike, *,
                                      unseen: str = "zero", normalize: bool = False) -> jax.Array:
  r"""Average recommendation popularity (ARP, Abdollahpouri et al. 2021) of each list.

  .. math:: \mathrm{ARP}(L) = \frac{1}{|L|} \sum_{i \in L} \phi(i) \in [0, \max \phi]

  The dataset ARP is the mean over lists. Pass as :math:`\phi` what the dashboard uses: Evidently's
  documentation says the number of ratings (``item_popularity(..., distinct_users=False)``), its
  code distinct users (the default of :func:`item_popularity`). ``unseen="zero"`` (default) counts
  items absent from training with popularity 0; ``"skip"`` leaves them out (Evidently's code; a
  list of only unseen items is then NaN). ``normalize=True`` divides by :math:`\max_i \phi(i)`
  (Evidently's ``normalize_arp``).

  Example:
    >>> import jaxrank
    >>> jaxrank.average_recommendation_popularity([[0, 1], [2, -1]], [3, 1, 0]).tolist()
    [2.0, 0.0]
  """
  pop = _popularity(item_popularity)
  ids = _ids("ranked_ids", ranked_ids, pop.shape[0])
  _checks.check_choice("unseen", unseen, ARP_UNSEEN)
  return _arp(ids, pop, unseen=unseen, normalize=bool(normalize))


@functools.partial(jax.jit, static_argnames=("unseen", "normalize"))
def _arp(ids: jax.Array, pop: jax.Array, *, unseen: str, normalize: bool) -> jax.Array:
  pop = pop.astype(jnp.float32)
  if normalize:
    pop = pop / jnp.maximum(jnp.max(pop), 1e-30)
  phi = jnp.where(ids >= 0, pop[jnp.where(ids >= 0, ids, 0)], 0.0)
  use = (ids >= 0) & ((phi > 0) | (unseen == "zero"))
  count = jnp.sum(use, axis=-1)
  return _nan_where(count == 0, jnp.sum(jnp.where(use, phi, 0.0), axis=-1) / jnp.maximum(count, 1))


SERENDIPITY_NORMALIZE = ("relevant", "evidently")


def serendipity(ranked_ids: ArrayLike, relevant_ids: ArrayLike, history_ids: ArrayLike,
                item_embeddings: ArrayLike, *, normalize: str = "relevant") -> jax.Array:
  r"""Serendipity: how unexpected the relevant recommendations are given the user's history.

  The unexpectedness of a recommended item is its mean cosine distance to the user's training
  items :math:`H`; serendipity averages it over the relevant recommended items :math:`R`:

  .. math:: \mathrm{ser}(L) = \frac{1}{|R|} \sum_{i \in R}
     \Big(1 - \frac{1}{|H|} \sum_{h \in H} \cos(e_i, e_h)\Big) \in [0, 2]

  Lists without a relevant recommendation or without history are NaN (Evidently leaves those users
  out too). ``normalize="evidently"`` reproduces Evidently's code,
  :math:`1 - \sum_{i \in R} \frac{1}{|H|}\sum_h \cos(e_i, e_h)` (no division by :math:`|R|`, so it
  can be negative); its docs' formula also divides by k. Cost :math:`O(k d + |H| d)` per list.

  Args:
    ranked_ids: ``[..., k]`` recommended ids, ``-1`` pads.
    relevant_ids: ``[..., r]`` ids relevant to the user (only those recommended count), ``-1`` pads.
    history_ids: ``[..., h]`` the user's training items, ``-1`` pads.
    item_embeddings: ``[num_items, d]``.
    normalize: ``"relevant"`` (default, documented) or ``"evidently"``.

  Example:
    >>> import jaxrank
    >>> e = [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]
    >>> jaxrank.serendipity([[1, 2]], [[1, -1]], [[0]], e).tolist()
    [1.0]
  """
  e = _embeddings(item_embeddings)
  ids = _ids("ranked_ids", ranked_ids, e.shape[0])
  rel = _ids("relevant_ids", relevant_ids, e.shape[0])
  hist = _ids("history_ids", history_ids, e.shape[0])
  _checks.check_leading("relevant_ids", rel, "ranked_ids", ids.shape[:-1])
  _checks.check_leading("history_ids", hist, "ranked_ids", ids.shape[:-1])
  _checks.check_choice("normalize", normalize, SERENDIPITY_NORMALIZE)
  return _serendipity(ids, rel, hist, e, normalize=normalize)


@functools.partial(jax.jit, static_argnames=("normalize",))
def _serendipity(ids: jax.Array, rel: jax.Array, hist: jax.Array, e: jax.Array, *,
                 normalize: str) -> jax.Array:
  unit = _unit(e)
  history, _ = _sum_rows(unit, hist)
  h = jnp.sum(hist >= 0, axis=-1).astype(jnp.float32)
  mean_cos = _column_dots(unit, ids, history) / jnp.maximum(h, 1.0)[..., None]
  hit = (ids >= 0) & jnp.any((ids[..., :, None] == rel[..., None, :]) & (rel[..., None, :] >= 0),
                             axis=-1)
  r = jnp.sum(hit, axis=-1).astype(jnp.float32)
  undefined = (r == 0) | (h == 0)
  if normalize == "relevant":
    value = jnp.sum(jnp.where(hit, 1.0 - mean_cos, 0.0), axis=-1) / jnp.maximum(r, 1.0)
  else:
    value = 1.0 - jnp.sum(jnp.where(hit, mean_cos, 0.0), axis=-1)
  return _nan_where(undefined, value)


# ----------------------------------------------------------------------------------------------
# Catalog-level metrics (one scalar for all lists).

PERSONALIZATION_NORMALIZE = ("lists", "evidently")


def personalization(ranked_ids: ArrayLike, *, num_items: int, k: int | None = None,
                    normalize: str = "lists") -> jax.Array:
  r"""Personalization: 1 minus the mean overlap of two users' top-k lists.

  .. math:: \mathrm{pers} = 1 - \frac{1}{\binom{n}{2}} \sum_{u < v} \frac{|L_u \cap L_v|}{k}
     = 1 - \frac{\sum_i c_i (c_i - 1) / 2}{k \binom{n}{2}} \in [0, 1]

  where :math:`c_i` is the number of lists recommending item ``i``: each pair of lists sharing
  ``i`` is one of its :math:`\binom{c_i}{2}` pairs. So it costs O(lists x k + catalog), not
  O(lists^2 k), and runs on millions of users. ``k`` defaults to the length of the longest list
  (padding never changes the value); an explicit ``k`` must be at least that length (a shorter
  one raises a ValueError when ``ranked_ids`` is concrete, since the value would leave
  ``[0, 1]``). ``n`` is the number of non-empty lists (NaN when n < 2).

  ``normalize="evidently"`` reproduces Evidently's ``PersonalizationMetric`` code, which assumes
  full lists: it uses :math:`\sum_i c_i^2 - n k` for :math:`\sum_i c_i(c_i-1)` (equal when every
  list holds k items).

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.personalization([[0, 1], [0, 2], [3, 4]], num_items=5)), 4)
    0.8333
  """
  num_items = _num_items(num_items)
  ids = _ids("ranked_ids", ranked_ids, num_items)
  _checks.check_choice("normalize", normalize, PERSONALIZATION_NORMALIZE)
  k = _checks.check_k(k)
  if k is not None and _checks.is_concrete(ids) and ids.size:
    longest = int(_checks.host_values(lambda x: jnp.max(jnp.sum(x >= 0, axis=-1)), ids))
    if k < longest:
      raise ValueError(f"k must be >= the length of the longest list in ranked_ids ({longest} "
                       f"ids), got {k}")
  return _personalization(ids, None if k is None else jnp.float32(k), num_items=num_items,
                          normalize=normalize)


@functools.partial(jax.jit, static_argnames=("num_items", "normalize"))
def _personalization(ids: jax.Array, k: int | jax.Array | None, *, num_items: int,
                     normalize: str) -> jax.Array:
  if k is None:
    k = jnp.max(jnp.sum(ids >= 0, axis=-1), initial=0).astype(jnp.float32)
  c = _counts(ids, num_items=num_items).astype(jnp.float32)
  n = jnp.sum(jnp.any(ids >= 0, axis=-1)).astype(jnp.float32)
  if normalize == "lists":
    shared = jnp.sum(c * (c - 1))
  else:
    shared = jnp.sum(c * c) - n * k
  value = 1.0 - shared / (k * n * (n - 1))
  return _nan_where(n < 2, value)


def _catalog(catalog_mask: ArrayLike | None, num_items: int) -> jax.Array | None:
  if catalog_mask is None:
    return None
  mask = _checks.as_array("catalog_mask", catalog_mask, kinds="b")
  _checks.check_same_shape("catalog_mask", mask, "(num_items,)", (num_items,))
  return mask


def coverage(ranked_ids: ArrayLike, *, num_items: int,
             catalog_mask: ArrayLike | None = None) -> jax.Array:
  r"""Catalog coverage: the share of catalog items recommended to at least one list.

  .. math:: \mathrm{cov} = |\{i \in I: c_i > 0\}| / |I| \in [0, 1]

  The catalog :math:`I` is every item id below ``num_items``, or the ``catalog_mask``. Evidently's
  code uses the items seen in training, ``catalog_mask=item_popularity(...) > 0`` (recommended
  items outside it do not count).

  Example:
    >>> import jaxrank
    >>> float(jaxrank.coverage([[0, 1], [1, -1]], num_items=4))
    0.5
  """
  num_items = _num_items(num_items)
  ids = _ids("ranked_ids", ranked_ids, num_items)
  return _coverage(ids, _catalog(catalog_mask, num_items), num_items=num_items)


@functools.partial(jax.jit, static_argnames=("num_items",))
def _coverage(ids: jax.Array, mask: jax.Array | None, *, num_items: int) -> jax.Array:
  hit = _counts(ids, num_items=num_items) > 0
  if mask is None:
    return jnp.mean(hit.astype(jnp.float32))
  size = jnp.sum(mask).astype(jnp.float32)
  return _nan_where(size == 0, jnp.sum(hit & mask) / jnp.maximum(size, 1.0))


GINI_OVER = ("catalog", "recommended")


def gini(ranked_ids: ArrayLike, *, num_items: int, catalog_mask: ArrayLike | None = None,
         over: str = "catalog") -> jax.Array:
  r"""Gini index of how often the items are recommended (0 equal, 1 all on one item).

  .. math:: G = \frac{\sum_{j=1}^{m} (2j - m - 1)\, c_{(j)}}{(m - 1) \sum_j c_{(j)}} \in [0, 1]

  over the counts :math:`c_{(1)} \le \dots \le c_{(m)}` of the ``m`` items considered:
  ``over="catalog"`` (default; Abdollahpouri et al., as Evidently's docs define it, without their
  stray "1 -") every catalog item, recommended or not (``catalog_mask`` as in :func:`coverage`);
  ``over="recommended"`` only items recommended at least once (Evidently's code). NaN when
  ``m < 2`` or nothing is recommended.

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.gini([[0, 1], [0, 2]], num_items=3)), 4)
    0.25
  """
  num_items = _num_items(num_items)
  ids = _ids("ranked_ids", ranked_ids, num_items)
  _checks.check_choice("over", over, GINI_OVER)
  return _gini(ids, _catalog(catalog_mask, num_items), num_items=num_items, over=over)


@functools.partial(jax.jit, static_argnames=("num_items", "over"))
def _gini(ids: jax.Array, mask: jax.Array | None, *, num_items: int, over: str) -> jax.Array:
  c = _counts(ids, num_items=num_items)
  use = jnp.ones(num_items, bool) if mask is None else mask
  if over == "recommended":
    use = use & (c > 0)
  m = jnp.sum(use).astype(jnp.float32)
  # Excluded items sort first (key -1); the m included ones take positions num_items-m+1..num_items.
  cs = lax.sort(jnp.where(use, c, -1))
  j = jnp.arange(1, num_items + 1, dtype=jnp.float32) - (num_items - m)
  cf = jnp.maximum(cs, 0).astype(jnp.float32)
  total = jnp.sum(cf)
  value = jnp.sum((2 * j - m - 1) * cf) / ((m - 1) * total)
  return _nan_where((m < 2) | (total == 0), value)


def score_entropy(scores: ArrayLike, *, k: int | None = None, where: ArrayLike | None = None,
                  pooled: bool = True) -> jax.Array:
  r"""Entropy (nats) of the softmax of the top-k scores.

  .. math:: H = -\sum_j p_j \log p_j,\quad p = \mathrm{softmax}(s) \in [0, \log N]

  ``pooled=True`` (default) pools the top-k scores of all lists into one softmax, as Evidently's
  ``ScoreDistribution`` does (``scipy.stats.entropy(softmax(top_k))``; its docs call it a KL
  divergence, but with one argument scipy returns the Shannon entropy), and returns a scalar;
  ``pooled=False`` returns the entropy of each list's own softmax, ``[...]``.

  Args:
    scores: ``[..., n]`` scores; with ``k``, each list's k largest valid scores are used.
    k: optional cutoff.
    where: optional ``[..., n]`` bool, False = padding.
    pooled: see above.

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.score_entropy([[1.0, 1.0], [1.0, 1.0]])), 4)  # log 4
    1.3863
  """
  scores = _checks.as_array("scores", scores, kinds="fi", min_ndim=1, wide_ints="float")
  k = _checks.check_k(k)
  valid = _checks.as_where(where, scores.shape)
  if k is not None and k > scores.shape[-1]:
    raise ValueError(f"k must be <= the number of scores per list {scores.shape[-1]}, got {k}")
  return _entropy(scores, valid, k=k, pooled=bool(pooled))


@functools.partial(jax.jit, static_argnames=("k", "pooled"))
def _entropy(scores: jax.Array, valid: jax.Array | None, *, k: int | None,
             pooled: bool) -> jax.Array:
  s = scores.astype(jnp.float32)
  ok = jnp.ones(s.shape, bool) if valid is None else valid
  if k is not None:
    s, idx = lax.top_k(jnp.where(ok, s, -jnp.inf), k)
    ok = jnp.take_along_axis(ok, idx, axis=-1)
  if pooled:
    s, ok = s.reshape(-1), ok.reshape(-1)
  x = jnp.where(ok, s, -jnp.inf)
  log_z = jax.nn.logsumexp(x, axis=-1, keepdims=True)
  logp = jnp.where(ok, x - log_z, 0.0)
  return -jnp.sum(jnp.exp(logp) * logp * ok, axis=-1)


# ----------------------------------------------------------------------------------------------
# Item and user bias: distributions to plot against training.


def _categories(name: str, attribute: ArrayLike, num_categories: int | None,
                bins: ArrayLike | None) -> tuple[jax.Array, int]:
  attr = _checks.as_array(name, attribute, kinds="fib")
  if bins is not None:
    edges = np.asarray(bins, np.float64)
    if edges.ndim != 1 or np.any(np.diff(edges) <= 0):
      raise ValueError(f"bins must be increasing 1-D bin edges, got {bins!r}")
    return jnp.digitize(attr, jnp.asarray(edges, jnp.float32)).astype(jnp.int32), len(edges) + 1
  if attr.dtype == jnp.bool_:
    attr = attr.astype(jnp.int32)
  if not jnp.issubdtype(attr.dtype, jnp.integer):
    raise TypeError(f"{name} must hold integer categories in [0, num_categories) unless bins "
                    f"are given for a numeric attribute, got {attr.dtype}")
  c = _checks.check_k(num_categories, "num_categories")
  if c is None:
    raise ValueError("num_categories is required for a categorical attribute (or pass bins)")
  _checks.check_ids(name, attr.reshape(-1, 1), c, "num_categories")
  return attr.astype(jnp.int32), c


def _shares(categories: jax.Array, weight: jax.Array, num: int) -> jax.Array:
  counts = jnp.bincount(categories.reshape(-1), weights=weight.reshape(-1).astype(jnp.float32),
                        length=num)
  return counts / jnp.maximum(jnp.sum(counts), 1e-30)


def item_bias(ranked_ids: ArrayLike, item_attribute: ArrayLike, *,
              num_categories: int | None = None, bins: ArrayLike | None = None,
              train_item_mask: ArrayLike | None = None) -> dict[str, jax.Array]:
  r"""Item bias: the distribution of recommendations over an item attribute vs training.

  ``recommended[c]`` is the share of recommendation slots (an item recommended to 3 users counts
  3 times) whose item has category ``c``; ``train[c]`` the share of distinct training items
  (``train_item_mask``, default the whole catalog) in ``c``, as Evidently's ``ItemBiasMetric``
  (which drops duplicate training items). Both sum to 1. A numeric attribute is binned by the
  increasing edges ``bins`` (``numpy.digitize``: category ``j`` holds ``bins[j-1] <= x <
  bins[j]``). Plot with :func:`jaxrank.plot.plot_bias`.

  Args:
    ranked_ids: ``[..., k]`` recommended ids, ``-1`` pads.
    item_attribute: ``[num_items]`` int categories in ``[0, num_categories)``, or numbers with
      ``bins``.

  Returns:
    ``{"recommended": [C], "train": [C]}`` shares.

  Example:
    >>> import jaxrank
    >>> out = jaxrank.item_bias([[0, 1], [0, -1]], [0, 1, 1], num_categories=2)
    >>> [round(float(x), 4) for x in out["recommended"]], [round(float(x), 4) for x in out["train"]]
    ([0.6667, 0.3333], [0.3333, 0.6667])
  """
  cats, num = _categories("item_attribute", item_attribute, num_categories, bins)
  if cats.ndim != 1:
    raise ValueError(f"item_attribute must have shape (num_items,), got {tuple(cats.shape)}")
  ids = _ids("ranked_ids", ranked_ids, cats.shape[0])
  mask = _catalog(train_item_mask, cats.shape[0])  # None without train_item_mask
  train = jnp.ones(cats.shape, bool) if mask is None else mask
  counts = _counts(ids, num_items=cats.shape[0])
  return {"recommended": _shares(cats, counts, num), "train": _shares(cats, train, num)}


def user_bias(ranked_ids: ArrayLike, user_attribute: ArrayLike, *,
              num_categories: int | None = None, bins: ArrayLike | None = None,
              train_user_mask: ArrayLike | None = None) -> dict[str, jax.Array]:
  r"""User bias: the distribution of the users who get recommendations over a user attribute,
  against the training users' distribution (Evidently's ``UserBiasMetric``: each user once).

  .. math:: p_{rec}(c) = \frac{|\{u \text{ with a recommendation}: a_u = c\}|}
     {|\{u \text{ with a recommendation}\}|}, \qquad
     p_{train}(c) = \frac{|\{u \in \text{train}: a_u = c\}|}{|\text{train}|}

  Args:
    ranked_ids: ``[users, k]`` recommended ids, ``-1`` pads; users with no valid id get none.
    user_attribute: ``[users]`` int categories, or numbers with ``bins``.
    train_user_mask: ``[users]`` bool, users present in training (default all).

  Returns:
    ``{"recommended": [C], "train": [C]}`` shares.

  Example:
    >>> import jaxrank
    >>> out = jaxrank.user_bias([[0], [-1], [2]], [0, 1, 1], num_categories=2)
    >>> out["recommended"].tolist(), [round(float(x), 4) for x in out["train"]]
    ([0.5, 0.5], [0.3333, 0.6667])
  """
  cats, num = _categories("user_attribute", user_attribute, num_categories, bins)
  ids = _checks.as_array("ranked_ids", ranked_ids, kinds="i", min_ndim=1)
  _checks.check_same_shape("user_attribute", cats, "ranked_ids.shape[:-1]", ids.shape[:-1])
  train = jnp.ones(cats.shape, bool)
  if train_user_mask is not None:
    train = _checks.as_array("train_user_mask", train_user_mask, kinds="b")
    _checks.check_same_shape("train_user_mask", train, "user_attribute", cats.shape)
  served = jnp.any(ids >= 0, axis=-1)
  return {"recommended": _shares(cats, served, num), "train": _shares(cats, train, num)}
