"""Full-catalog evaluation from embeddings, never materialising the users x items score matrix.

A two-tower or matrix-factorisation model scores user ``u`` against item ``j`` as
``s_uj = score_fn(query_emb[u], item_emb[j])`` (a dot product by default). The rank of a held-out
item ``i`` of user ``u`` over the catalog, with the user's seen (training) items ``E_u`` excluded,
is the pair of bounds of the rank core (:class:`jaxrank.Ranks`):

.. math::

   lo_{ui} = 1 + |\\{j \\notin E_u,\\ j \\ne i : s_{uj} > s_{ui}\\}|, \\qquad
   hi_{ui} = 1 + |\\{j \\notin E_u,\\ j \\ne i : s_{uj} \\ge s_{ui}\\}|,

and both are sums over item blocks. :func:`evaluate` walks the catalog in item blocks (and the
users in user blocks): it scores one ``[user_block, item_block]`` tile at a time, adds the tile's
counts for every held-out item, and merges the tile's best items into a running top-k of
recommended ids. Peak memory is O(user_block x item_block + users x (relevant + k)); the
``[users, items]`` matrix is never formed.

The result equals materialising the matrix and calling
``jaxrank.from_sparse(scores, relevant_ids, relevant_grades, where=~excluded)``,
``jaxrank.evaluate`` and ``jaxrank.top_k_ids(scores, k, where=~excluded)``, ties included: scores
are compared through the rank core's integer keys (NaN below every number, ``-0.0 == 0.0``,
exact for every dtype), and the recommended ids follow ``top_k_ids``' rules (NaN after every
number, equal scores by lower item id, excluded items never, ``-1`` where a user has fewer than k
non-excluded items).

Conventions:

* ``num_items`` of a user is the number of non-excluded catalog items (what ``precision``'s
  ``"min_k_n"`` and the uncut ``mean_rank`` read); ``Ranks.size`` is the catalog size.
* A held-out item that is also excluded (seen in training) stays relevant (it counts in recall's
  and NDCG's denominators) but is never retrieved, exactly as ``from_sparse`` treats a relevant
  item with ``where=False``: drop it from ``relevant_ids`` first if it should not count.
* A user with no held-out item is an empty list (the ``empty`` option decides its value); a user
  whose every item is excluded ranks nothing and gets ``-1`` recommendations.
* Every score compared is one a tile computed: the held-out items' own scores are computed on
  tiles of the walk's shape, and should a scorer still round one differently (float matmuls of
  different shapes may, on some backends), that user block is walked again with the tile's
  value. So the ranks are those of the matrix the tiles compute, and an item is never compared
  with itself.

Shape for sharding: the walk over one item range (:func:`_scan_items`) returns a partial state
whose counts add up over item ranges and whose top-k merges (:func:`_merge_top`), so the catalog
can be split over one mesh axis and the users over another.

Example:
  >>> import jax.numpy as jnp
  >>> from jaxrank import catalog
  >>> users = jnp.array([[1.0, 0.0], [0.0, 1.0]])
  >>> items = jnp.array([[3.0, 0.0], [2.0, 1.0], [0.0, 2.0], [1.0, 1.0]])
  >>> out = catalog.evaluate(users, items, [[1], [3]], ["mrr", "recall@2"],
  ...                        exclude_ids=[[0], [2]], top_k=2)
  >>> {name: v.tolist() for name, v in out.metrics.items()}
  {'mrr': [1.0, 0.75], 'recall@2': [1.0, 1.0]}
  >>> out.top_ids.tolist()
  [[1, 3], [1, 3]]
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core import compute as _compute
from jaxrank._core import metrics as _metrics
from jaxrank._core import options as _options
from jaxrank._core import ranks as _ranks
from jaxrank._core import table as _table
from jaxrank._core.names import DEFAULT_METRICS
from jaxrank._core.ranks import Ranks

__all__ = ["Result", "default_block_sizes", "dot", "dot_accumulator", "evaluate", "pad_csr",
           "ranks"]

METHODS = ("auto", "count", "histogram")


class Result(NamedTuple):
  """What :func:`evaluate` (and :func:`ranks`) return.

  ``metrics``: ``{name: [users] values}`` (or their means with ``reduce="mean"``; empty for
  :func:`ranks`); ``ranks``: the :class:`jaxrank.Ranks` of the held-out items (``[users]``
  lists); ``top_ids`` ``[users, k]`` int32 recommended ids, best first, ``-1`` where fewer than k
  items remain, and ``top_scores`` their scores (meaningless where the id is ``-1``); both
  ``None`` without ``top_k``.

  Example:
    >>> import jax.numpy as jnp
    >>> from jaxrank import catalog
    >>> out = catalog.ranks(jnp.array([[1.0]]), jnp.array([[2.0], [1.0]]), [[0]], top_k=1)
    >>> out.metrics, out.ranks.lo.tolist(), out.top_ids.tolist(), out.top_scores.tolist()
    ({}, [[1]], [[0]], [[2.0]])
  """

  metrics: dict[str, jax.Array]
  ranks: Ranks
  top_ids: jax.Array | None
  top_scores: jax.Array | None


def dot(query_block: jax.Array, item_block: jax.Array) -> jax.Array:
  """The default scorer: ``[u, d] x [i, d] -> [u, i]`` dot products.

  Integer embeddings are multiplied and summed in :func:`dot_accumulator`'s dtype (int32, int64
  in JAX's x64 mode), not in their own: int8 products summed in int8 would wrap around.
  :func:`evaluate` and :func:`ranks` refuse integer embeddings whose dot products could leave
  that range.

  Example:
    >>> import jax.numpy as jnp
    >>> from jaxrank import catalog
    >>> catalog.dot(jnp.array([[1.0, 2.0]]), jnp.array([[3.0, 1.0], [0.0, 1.0]])).tolist()
    [[5.0, 2.0]]
    >>> catalog.dot(jnp.array([[100, 100]], jnp.int8), jnp.array([[100, 50]], jnp.int8)).tolist()
    [[15000]]
  """
  acc = dot_accumulator(query_block.dtype, item_block.dtype)
  if acc is None:
    return query_block @ item_block.T
  return jnp.matmul(query_block, item_block.T, preferred_element_type=acc)


def dot_accumulator(query_dtype: Any, item_dtype: Any) -> np.dtype | None:
  """The integer dtype :func:`dot` sums integer embeddings in (``None`` unless both are integer):
  int64 in JAX's x64 mode, else int32.

  Example:
    >>> import numpy as np
    >>> from jaxrank import catalog
    >>> catalog.dot_accumulator(np.int8, np.uint8), catalog.dot_accumulator(np.int8, np.float32)
    (dtype('int32'), None)
  """
  if not all(jnp.issubdtype(t, jnp.integer) for t in (query_dtype, item_dtype)):
    return None
  return np.dtype(np.int64 if jax.enable_x64.value else np.int32)


def _check_dot_range(q: jax.Array, items: jax.Array) -> None:
  """Integer embeddings whose dot products could leave :func:`dot_accumulator`'s range (and wrap
  around) are refused: by their dtypes when that bounds them, else by their values (concrete
  only; traced ones that the dtypes do not bound are refused too)."""
  acc = dot_accumulator(q.dtype, items.dtype)
  if acc is None:
    return
  limit, d = int(np.iinfo(acc).max), q.shape[1]
  def span(t) -> int:
    return max(-int(np.iinfo(t).min), int(np.iinfo(t).max))

  if span(q.dtype) * span(items.dtype) * d <= limit:
    return
  fix = ("cast them to a float dtype (float32 is exact while every |dot product| <= 2**24)"
         + ("" if jax.enable_x64.value else " or turn on JAX's x64 mode (int64 sums)"))
  if not (_checks.is_concrete(q) and _checks.is_concrete(items)):
    raise TypeError(f"query_emb ({q.dtype}) and item_emb ({items.dtype}) are integer "
                    f"embeddings of size {d}: under tracing their values are unknown and their "
                    f"dtypes do not bound the dot products to {acc} (they could wrap around): "
                    f"{fix}")
  # float64 bounds: a relative error ~d * 2**-53, far inside the 1e-9 margin
  qa, ia = (np.abs(np.asarray(x, np.float64)) for x in (q, items))
  bound = min(qa.sum(1).max(initial=0) * ia.max(initial=0),
              qa.max(initial=0) * ia.sum(1).max(initial=0))
  if bound * (1 + 1e-9) > limit:
    raise ValueError(f"query_emb ({q.dtype}) and item_emb ({items.dtype}) are integer "
                     f"embeddings whose dot products can reach {bound:.6g}, beyond {acc}'s "
                     f"largest value {limit} (they would wrap around): {fix}")


def _check_scorer(score_fn: Callable, q: jax.Array, items: jax.Array, ub: int, ib: int) -> None:
  """``score_fn`` on a ``[ub, d]`` and an ``[ib, d]`` block must give real ``[ub, ib]`` scores
  (checked abstractly, by ``jax.eval_shape``: nothing is computed)."""
  def shape_of(u: int) -> tuple[tuple[int, ...], Any]:
    out = jax.eval_shape(score_fn, jax.ShapeDtypeStruct((u, q.shape[1]), q.dtype),
                         jax.ShapeDtypeStruct((ib, items.shape[1]), items.dtype))
    if not hasattr(out, "shape") or not hasattr(out, "dtype"):
      raise TypeError(f"score_fn must return one array of scores [users, items], got "
                      f"{type(out).__name__}")
    return tuple(out.shape), out.dtype

  dtype: Any = None  # the first look's score dtype
  # A square tile cannot tell [users, items] from its transpose; one user fewer can (score_fn
  # treats rows independently). A score_fn that cannot run on it is left to the first check.
  for u in (ub, ub - 1) if ub == ib and ub > 1 else (ub,):
    try:
      shape, out_dtype = shape_of(u)
    except Exception:  # only the second look; the walk's own shape is the first
      if u == ub:
        raise
      break
    dtype = out_dtype if dtype is None else dtype
    if shape != (u, ib):
      raise ValueError(f"score_fn must return scores of shape [users, items] = ({u}, {ib}) for "
                       f"a [{u}, d] query block and a [{ib}, d] item block, got shape {shape}")
  if not (jnp.issubdtype(dtype, jnp.floating) or jnp.issubdtype(dtype, jnp.integer)):
    raise TypeError(f"score_fn must return real scores of a float or integer dtype, got "
                    f"{np.dtype(dtype)}")


# ----------------------------------------------------------------------------------------------
# Inputs.


def pad_csr(indptr: ArrayLike, indices: ArrayLike, values: ArrayLike | None = None, *,
            width: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
  """Rows of a CSR matrix (``indptr [users + 1]``, ``indices [nnz]``) as ``-1``-padded ids.

  ``values`` (``[nnz]``, e.g. grades) are padded with 0 alongside. ``width`` defaults to the
  longest row (at least 1). Runs on the host in O(nnz), without a Python loop.

  Example:
    >>> from jaxrank import catalog
    >>> ids, grades = catalog.pad_csr([0, 2, 2, 3], [4, 1, 7], [1, 2, 3])
    >>> ids.tolist(), grades.tolist()
    ([[4, 1], [-1, -1], [7, -1]], [[1, 2], [0, 0], [3, 0]])
  """
  indptr = _checks.as_numpy("indptr", indptr)
  indices = _checks.as_numpy("indices", indices)
  if indptr.ndim != 1 or indptr.size < 1 or indptr.dtype.kind not in "iu":
    raise ValueError(f"indptr must be a 1-d integer array of users + 1 offsets, got "
                     f"{indptr.dtype} of shape {indptr.shape}")
  if indices.ndim != 1 or indices.dtype.kind not in "iu":
    raise ValueError(f"indices must be a 1-d integer array, got {indices.dtype} of shape "
                     f"{indices.shape}")
  lengths = np.diff(indptr)
  if indptr[0] != 0 or (lengths < 0).any() or indptr[-1] != indices.size:
    raise ValueError(f"indptr must start at 0, never decrease and end at len(indices) "
                     f"({indices.size}), got {indptr[0]}..{indptr[-1]}")
  longest = int(lengths.max(initial=0))
  width = max(1, longest) if width is None else width
  if longest > width:
    raise ValueError(f"width must be at least the longest row ({longest}), got {width}")
  rows = np.repeat(np.arange(lengths.size), lengths)
  cols = np.arange(indices.size) - np.repeat(indptr[:-1], lengths)
  ids = np.full((lengths.size, width), -1, np.int32 if indices.max(initial=0) < 2**31 else
                np.int64)
  ids[rows, cols] = indices
  if values is None:
    return ids, None
  values = _checks.as_numpy("values", values)
  if values.shape != indices.shape:
    raise ValueError(f"values must have the shape of indices {indices.shape}, got {values.shape}")
  padded = np.zeros((lengths.size, width), values.dtype)
  padded[rows, cols] = values
  return ids, padded


def _id_rows(name: str, ids: Any, users: int, num_items: int) -> jax.Array:
  """``[users, m]`` int ids (``-1`` pads, no repeats), from padded rows or ``(indptr, indices)``."""
  if isinstance(ids, tuple) and len(ids) == 2:
    ids, _ = pad_csr(*ids)
  ids = _checks.as_array(name, ids, kinds="i")
  if ids.ndim != 2 or ids.shape[0] != users:
    raise ValueError(f"{name} must have shape ({users}, m) (one row per query), got "
                     f"{tuple(ids.shape)}")
  _checks.check_ids(name, ids, num_items, "the number of items")
  return ids.astype(jnp.int32)


def _relevant(relevant_ids, relevant_grades, users, num_items):
  ids, grades = relevant_ids, relevant_grades
  if isinstance(relevant_ids, tuple) and len(relevant_ids) == 2:
    ids, grades = pad_csr(*relevant_ids, relevant_grades)
  ids = _id_rows("relevant_ids", ids, users, num_items)
  if ids.shape[1] == 0:
    ids = jnp.full((users, 1), -1, jnp.int32)
    grades = None if grades is None else jnp.zeros((users, 1), jnp.float32)
  return ids, _ranks.sparse_grades(ids, grades)


def _embeddings(name: str, x: ArrayLike) -> jax.Array:
  x = _checks.as_array(name, x, kinds="fi")
  if x.ndim != 2:
    raise ValueError(f"{name} must have shape (n, d), got {tuple(x.shape)}")
  return x


def default_block_sizes(num_users: int, num_items: int, *, relevant: int = 1, k: int = 0,
                        device: Any = None) -> tuple[int, int]:
  """``(user_block, item_block)`` that keep one tile well inside the device's memory.

  A tile costs about ``user_block x item_block x (16 + relevant)`` bytes (scores, keys, masks and
  the counting temporaries); the budget is an eighth of the device's free memory, or 256 MiB where
  ``memory_stats()`` is unavailable (CPU). Item blocks are multiples of 128 and hold at least
  ``k`` items.

  Example:
    >>> from jaxrank import catalog
    >>> catalog.default_block_sizes(10, 300)
    (10, 300)
  """
  device = jax.devices()[0] if device is None else device
  stats = None
  try:
    stats = device.memory_stats()
  except Exception:  # backends without memory statistics
    stats = None
  if stats and stats.get("bytes_limit"):
    free = int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    budget, ub = max(free // 8, 1 << 28), 4096
  else:
    budget, ub = 1 << 28, 512
  per_element = 16 + 4 * min(relevant, 64)
  ub = max(1, min(num_users, ub))
  ib = max(budget // (per_element * ub), k, 128)
  ib = -(-ib // 128) * 128
  return ub, max(1, min(num_items, ib))


# ----------------------------------------------------------------------------------------------
# Public entry points.


def ranks(query_emb: ArrayLike, item_emb: ArrayLike, relevant_ids: Any,
          relevant_grades: ArrayLike | None = None, *, exclude_ids: Any = None,
          score_fn: Callable[[jax.Array, jax.Array], jax.Array] | None = None,
          top_k: int | None = None, ties: str = "average", user_block: int | None = None,
          item_block: int | None = None, method: str = "auto") -> Result:
  """The :class:`jaxrank.Ranks` of every user's held-out items over the whole catalog.

  Equal to ``jaxrank.from_sparse(S, relevant_ids, relevant_grades, where=~excluded, ties=ties)``
  on the materialised ``S = score_fn(query_emb, item_emb)`` (and, with ``top_k``, to
  ``jaxrank.top_k_ids(S, top_k, where=~excluded)``), computed in tiles (see the module
  docstring). ``ties="first"`` breaks ties by the lower item id; any other value keeps the tie
  bounds for the metrics' ``ties`` option.

  Args:
    query_emb: ``[users, d]`` user (query) embeddings.
    item_emb: ``[items, d]`` item embeddings.
    relevant_ids: held-out ids ``[users, r]`` (``-1`` pads) or a CSR pair ``(indptr, indices)``.
    relevant_grades: ``[users, r]`` grades (default 1; 0 drops the slot), or ``[nnz]`` with CSR.
    exclude_ids: ids never counted nor recommended (the seen items): ``[users, e]`` (``-1``
      pads) or ``(indptr, indices)``.
    score_fn: ``score_fn(query_block [u, d], item_block [i, d]) -> [u, i]`` scores of any float or
      int dtype (default :func:`dot`, which sums integer embeddings in int32, or int64 under x64,
      and refuses those whose dot products could leave that range). It must treat rows
      independently; pass the same function object each time (a new lambda compiles again).
      Another shape or a complex dtype is an error naming ``score_fn``.
    top_k: also return the ``top_k`` best non-excluded ids and their scores per user.
    user_block, item_block: tile sizes (default :func:`default_block_sizes`); results never
      depend on them.
    method: ``"count"`` (compare every tile score with every held-out score: one pass over the
      tile per 32 held-out items per user), ``"histogram"`` (place each tile score among the
      user's sorted held-out scores and histogram the places; 4-9x slower on CPU) or
      ``"auto"`` (``"count"``).

  Example:
    >>> import jax.numpy as jnp
    >>> from jaxrank import catalog
    >>> out = catalog.ranks(jnp.array([[1.0]]), jnp.array([[2.0], [1.0], [1.0], [3.0]]), [[1]])
    >>> out.ranks.lo.tolist(), out.ranks.hi.tolist(), out.ranks.num_items.tolist()
    ([[3]], [[4]], [4])
  """
  q = _embeddings("query_emb", query_emb)
  items = _embeddings("item_emb", item_emb)
  if items.shape[1] != q.shape[1] and score_fn is None:
    raise ValueError(f"item_emb must have the embedding size of query_emb ({q.shape[1]}) for "
                     f"the dot product, got shape {tuple(items.shape)}")
  users, num_items = q.shape[0], items.shape[0]
  if users == 0 or num_items == 0:
    raise ValueError(f"query_emb and item_emb must each hold at least one row, got shapes "
                     f"{tuple(q.shape)} and {tuple(items.shape)}")
  rel, grades = _relevant(relevant_ids, relevant_grades, users, num_items)
  if exclude_ids is None:
    ex = jnp.full((users, 1), -1, jnp.int32)
  else:
    ex = _id_rows("exclude_ids", exclude_ids, users, num_items)
    if ex.shape[1] == 0:
      ex = jnp.full((users, 1), -1, jnp.int32)
  _checks.check_choice("ties", ties, _ranks.TIES)
  _checks.check_choice("method", method, METHODS)
  if top_k is not None:
    top_k = _checks.check_k(top_k, "top_k")
    if top_k > num_items:
      raise ValueError(f"top_k must be <= the number of items {num_items}, got {top_k}")
  score_fn = dot if score_fn is None else score_fn
  if not callable(score_fn):
    raise TypeError(f"score_fn must be a callable (query_block, item_block) -> scores, got "
                    f"{score_fn!r}")
  ub, ib = default_block_sizes(users, num_items, relevant=rel.shape[1], k=top_k or 0)
  ub = ub if user_block is None else min(_checks.check_k(user_block, "user_block"), users)
  ib = ib if item_block is None else min(_checks.check_k(item_block, "item_block"), num_items)
  ib = max(ib, min(top_k or 0, num_items))  # a tile must be able to hold the whole top k
  if score_fn is dot:
    _check_dot_range(q, items)
  _check_scorer(score_fn, q, items, ub, ib)
  if method == "auto":  # measured faster everywhere it was measured (bench/RESULTS.md)
    method = "count"
  # A grade of 0 drops the slot (from_sparse keeps such an id only as a judged non-relevant item,
  # which only bpref, infap and judged read; evaluate refuses those).
  used = jnp.where(grades > 0, rel, -1)
  lo, hi, num, tids, tscores = _walk(q, items, used, ex, score_fn=score_fn, ub=ub, ib=ib,
                                     k=top_k or 0, ties=ties, method=method)
  r = Ranks(lo=lo, hi=hi, grades=jnp.where(used >= 0, grades, 0.0), num_items=num,
            overflow=jnp.zeros((users,), bool), size=num_items, resolved=ties == "first")
  if top_k is None:
    tids = tscores = None
  return Result(metrics={}, ranks=r, top_ids=tids, top_scores=tscores)


@_options.takes(_options.FACE_OPTIONS, after="reduce")
def evaluate(query_emb: ArrayLike, item_emb: ArrayLike, relevant_ids: Any,
             metrics: Sequence[str] = DEFAULT_METRICS, *,
             relevant_grades: ArrayLike | None = None, exclude_ids: Any = None,
             score_fn: Callable[[jax.Array, jax.Array], jax.Array] | None = None,
             top_k: int | None = None, reduce: str | None = None,
             user_block: int | None = None, item_block: int | None = None,
             method: str = "auto", **options: Any) -> Result:
  """Metrics of every user's held-out items ranked over the whole catalog (seen items excluded).

  One walk over the catalog (:func:`ranks`), then every metric from the rank core, exactly as
  ``jaxrank.evaluate(jaxrank.from_sparse(S, relevant_ids, relevant_grades, where=~excluded),
  metrics, ...)`` on the materialised scores ``S``. The metric names and options are those of
  :func:`jaxrank.evaluate`; ``ties="first"`` ranks tied items by lower item id. The arguments
  not listed below are those of :func:`ranks`.

  Args:
    metrics: metric names with optional ``@k`` (``"ndcg@10"``, ``"map"``, ``"recall@20"``).
    reduce: ``None`` (per-user values) or ``"mean"`` (under the ``empty`` policy).

  Returns:
    A :class:`Result`: ``metrics``, ``ranks``, and with ``top_k`` the recommended ``top_ids`` and
    ``top_scores``, ready for ``jaxrank.coverage``, ``novelty``, ``personalization``,
    ``intra_list_diversity``.

  Example:
    >>> import jax.numpy as jnp
    >>> from jaxrank import catalog
    >>> users = jnp.array([[1, 0], [0, 1]])
    >>> items = jnp.array([[2, 0], [1, 1], [0, 3], [1, 0]])
    >>> out = catalog.evaluate(users, items, [[3, -1], [1, 0]], ["ndcg@2", "map"],
    ...                        exclude_ids=[[0], [-1]], reduce="mean")
    >>> {name: round(float(v), 4) for name, v in out.metrics.items()}
    {'ndcg@2': 0.6012, 'map': 0.6458}
  """
  metrics = _compute.metric_list(metrics)
  if reduce not in (None, "mean"):
    raise ValueError(f"reduce must be None or 'mean', got {reduce!r}")
  ties, empty = options["ties"], options["empty"]
  formula_options = _compute.make_options(**options)
  specs = tuple(_metrics.parse_metric(name) for name in metrics)
  for name, (base, _) in zip(metrics, specs):
    if _table.reads_judgments(base):
      raise ValueError(f"metric {name!r} reads judged non-relevant items, which the catalog walk "
                       f"does not rank (it ranks the held-out relevant ids only): use "
                       f"jaxrank.from_sparse with grade-0 ids on a score matrix instead")
  out = ranks(query_emb, item_emb, relevant_ids, relevant_grades, exclude_ids=exclude_ids,
              score_fn=score_fn, top_k=top_k, ties=ties, user_block=user_block,
              item_block=item_block, method=method)
  values = dict(zip(metrics, _compute.compute_ranks(out.ranks, specs=specs,
                                                    options=formula_options)))
  if reduce == "mean":
    values = _metrics.mean(values, empty=empty)
  return out._replace(metrics=values)


# ----------------------------------------------------------------------------------------------
# The walk: users in blocks (outer loop), the catalog in blocks (inner scan).


class _Partial(NamedTuple):
  """What one item range contributes to one user block; adds/merges over item ranges.

  ``gt``/``ge`` ``[u, r]``: non-excluded items scored above / at or above each held-out score
  (the item itself included, corrected at the end); ``own`` ``[u, r]``: the held-out item's own
  key where the range holds it; ``before`` ``[u, r]``: ties with a lower id (``ties="first"``);
  ``top_*`` ``[u, k]``: the best candidates so far (key, non-excluded, id, score).
  """

  gt: jax.Array
  ge: jax.Array
  own: jax.Array
  before: jax.Array
  top_key: jax.Array
  top_valid: jax.Array
  top_id: jax.Array
  top_score: jax.Array


def _merge_top(a: tuple[jax.Array, ...], b: tuple[jax.Array, ...], k: int):
  """The k best of two candidate sets ``(key, valid, id, score)``: non-excluded first, larger key
  first, then lower id (``a`` holds the lower ids, each set is in that order, and
  :func:`_top_order` keeps positions in order on ties)."""
  key, valid, ids, score = (jnp.concatenate([x, y], axis=-1) for x, y in zip(a, b))
  take = functools.partial(jnp.take_along_axis, indices=_top_order(score, valid, k, key), axis=1)
  return take(key), take(valid), take(ids), take(score)


def _block_top(scores, valid, k):
  """The block's k best ``(key, valid, index, score)`` under top_k_ids' order (the keys of the k
  taken scores only: the tile's keys need not be kept)."""
  idx = _top_order(scores, valid, k)
  take = functools.partial(jnp.take_along_axis, indices=idx, axis=1)
  best = take(scores)
  return _ranks.sort_keys(best, None), take(valid), idx.astype(jnp.int32), best


def _top_order(scores, valid, k, keys=None):
  """The positions of the k best ``[u, n]`` items: non-excluded first, larger key first, then
  lower position (``keys``: the scores' :func:`jaxrank._core.ranks.sort_keys`, computed here
  where needed if not given).

  Float scores take ``lax.top_k`` on a float copy (NaN and excluded items at -inf, ``-0.0`` as
  ``0.0``), which is exact unless the -inf tier is reached; then, as for int scores whose keys
  can meet padding's, the items are sorted by (non-excluded, key, position).
  """

  def keyed():
    return _ranks.sort_keys(scores, None) if keys is None else keys

  def by_sort(_):
    index = lax.broadcasted_iota(jnp.int32, scores.shape, 1)
    return lax.sort((~valid, ~keyed(), index), dimension=-1, num_keys=3)[2][:, :k]

  if jnp.issubdtype(scores.dtype, jnp.floating):
    proxy = jnp.where(valid & ~jnp.isnan(scores), jnp.where(scores == 0, 0, scores), -jnp.inf)
    top, idx = lax.top_k(proxy, k)
    idx = lax.cond(jnp.any(top == -jnp.inf), by_sort, lambda _: idx, None)
  else:
    pad, full = _ranks.padding_key(scores.dtype), keyed()
    idx = lax.top_k(jnp.where(valid, full, jnp.asarray(pad, full.dtype)), k)[1]
    if _ranks.key_dtype(scores.dtype)[1]:  # full keys: padding's key may meet a valid one
      clash = jnp.any(valid & (full <= pad)) & jnp.any(~valid)
      idx = lax.cond(clash, by_sort, lambda _: idx, None)
  return idx


# "count" compares a tile with this many held-out items per user in one variadic reduction (one
# pass over the tile, 2 outputs per item): 2,048 users x 50,000 items, r = 10 on CPU, 0.11 s for
# the counts against 1.5 s for the [u, r, items] comparison; more items take one pass per group
# of this many (r = 64: 1.03 s in all against 9.0 s by the histogram; bench/RESULTS.md).
FUSED_COUNT = 32


def _fused_counts(keys, valid, thr, ids=None, rel=None):
  """``(gt, ge[, before])`` ``[u, r]`` in one pass over the tile: a reduction with one output per
  held-out item and count (``before``: items tied with it at a lower id, for ``ties="first"``)."""
  r = thr.shape[1]
  cols = [thr[:, t:t + 1] for t in range(r)]
  masks = [(keys > c) & valid for c in cols] + [(keys >= c) & valid for c in cols]
  if ids is not None:
    masks += [(keys == c) & valid & (ids < rel[:, t:t + 1]) for t, c in enumerate(cols)]
  ops = tuple(m.astype(jnp.int32) for m in masks)
  sums = lax.reduce(ops, tuple(jnp.int32(0) for _ in ops),
                    lambda xs, ys: tuple(x + y for x, y in zip(xs, ys)), (1,))
  return tuple(jnp.stack(sums[i * r:(i + 1) * r], axis=1) for i in range(len(ops) // r))


def _histogram_counts(keys, valid, thr):
  """``(gt, ge)`` ``[u, r]``: valid tile items keyed above / at or above each of ``thr``
  (sorted ascending per row), by ``method="histogram"``."""
  # Each item's place among the sorted thresholds (a short reduction over r per item), then a
  # histogram of the places: item j is above threshold t (1-based) iff below_j >= t.
  u, r = thr.shape
  below = jnp.sum(thr[:, None, :] < keys[:, :, None], axis=-1, dtype=jnp.int32)
  upto = jnp.sum(thr[:, None, :] <= keys[:, :, None], axis=-1, dtype=jnp.int32)
  junk = 2 * (r + 1)
  bins = jnp.concatenate([jnp.where(valid, below, junk), jnp.where(valid, upto + r + 1, junk)],
                         axis=1)
  rows = lax.broadcasted_iota(jnp.int32, bins.shape, 0)
  hist = jnp.zeros((u, junk + 1), jnp.int32).at[rows, bins].add(1, mode="drop")
  # counts[t] = sum of the histogram over places >= t, for t = 1..r
  tail = lambda h: jnp.cumsum(h[:, ::-1], axis=1)[:, ::-1][:, 1:]  # noqa: E731
  return tail(hist[:, :r + 1]), tail(hist[:, r + 1:junk])


def _scan_items(q, items, thr, rel, ex, *, start, stop, score_fn, ib, k, ties, method):
  """The partial state of one user block over the item range ``[start, stop)``.

  Tiles of ``ib`` items; the last tile is shifted back to end at ``stop`` (no padded copy of the
  item table) and ignores the items an earlier tile already counted.
  """
  u, r = thr.shape
  d = items.shape[1]
  n_tiles = -(-(stop - start) // ib)
  key_dtype = _ranks.key_dtype(jax.eval_shape(score_fn, q[:1], items[:1]).dtype)[0]
  iota = lax.broadcasted_iota(jnp.int32, (u, ib), 1)
  rows = lax.broadcasted_iota(jnp.int32, ex.shape, 0)

  def tile(state: _Partial, t):
    first = start + t * ib  # first item not counted yet
    offset = jnp.minimum(first, stop - ib)
    block = lax.dynamic_slice(items, (offset, 0), (ib, d))
    scores = score_fn(q, block)
    keys = _ranks.sort_keys(scores, None)
    ids = offset + iota
    # excluded items of this tile, scattered into a [u, ib] mask (out-of-tile ids dropped)
    local = jnp.where((ex >= first) & (ex < offset + ib), ex - offset, ib)
    excluded = jnp.zeros((u, ib), bool).at[rows, local].set(True, mode="drop")
    valid = (ids >= first) & ~excluded
    before = state.before
    if method == "count":  # one pass over the tile per FUSED_COUNT held-out items
      groups = [_fused_counts(keys, valid, thr[:, g:g + FUSED_COUNT],
                              *((ids, rel[:, g:g + FUSED_COUNT]) if ties == "first" else ()))
                for g in range(0, r, FUSED_COUNT)]
      gt, ge, *tied = (jnp.concatenate(parts, axis=1) for parts in zip(*groups))
      before = before + sum(tied)
    else:
      gt, ge = _histogram_counts(keys, valid, thr)
      if ties == "first":
        tied = (keys[:, None, :] == thr[:, :, None]) & (ids[:, None, :] < rel[:, :, None])
        before = before + jnp.sum(tied & valid[:, None, :], axis=-1, dtype=jnp.int32)
    # the held-out item's own key, read where this tile holds it
    mine = (rel >= first) & (rel < offset + ib)
    at = jnp.clip(rel - offset, 0, ib - 1)
    own = jnp.where(mine, _ranks.sort_keys(jnp.take_along_axis(scores, at, axis=1), None),
                    state.own)
    top = state[4:]
    if k:
      bkey, bvalid, bidx, bscore = _block_top(scores, valid, k)
      top = _merge_top(top, (bkey, bvalid, offset + bidx, bscore.astype(state.top_score.dtype)),
                       k)
    return _Partial(state.gt + gt, state.ge + ge, own, before, *top), None

  score_dtype = jax.eval_shape(score_fn, q[:1], items[:1]).dtype
  zeros = jnp.zeros((u, r), jnp.int32)
  init = _Partial(zeros, zeros, jnp.zeros((u, r), key_dtype), zeros,
                  jnp.zeros((u, k), key_dtype), jnp.zeros((u, k), bool),
                  jnp.full((u, k), -1, jnp.int32), jnp.zeros((u, k), score_dtype))
  state, _ = lax.scan(tile, init, jnp.arange(n_tiles))
  return state


def _own_scores(qb, items, rel, *, score_fn, ib):
  """``[u, r]`` scores of each user's held-out items, computed on ``[u, ib]`` tiles like the walk's.

  The held-out items of the whole user block are laid out in tiles of ``ib`` items and scored
  against every user of the block (the same ``score_fn`` call, shapes and kernel as the walk, so
  the same rounding); each user reads its own items. Costs ``u x r`` extra items of the walk.
  """
  u, r = rel.shape
  n_tiles = -(-(u * r) // ib)
  flat = jnp.clip(rel, 0, items.shape[0] - 1).reshape(-1)
  flat = jnp.pad(flat, (0, n_tiles * ib - u * r))
  pair = jnp.arange(u * r, dtype=jnp.int32).reshape(u, r)  # position of (user, slot) in flat
  dtype = jax.eval_shape(score_fn, qb[:1], items[:1]).dtype

  def tile(out, t):
    scores = score_fn(qb, jnp.take(items, lax.dynamic_slice_in_dim(flat, t * ib, ib), axis=0))
    col = jnp.clip(pair - t * ib, 0, ib - 1)
    here = (pair >= t * ib) & (pair < (t + 1) * ib)
    return jnp.where(here, jnp.take_along_axis(scores, col, axis=1), out), None

  out, _ = lax.scan(tile, jnp.zeros((u, r), dtype), jnp.arange(n_tiles))
  return out


@functools.partial(jax.jit, static_argnames=("score_fn", "ub", "ib", "k", "ties", "method"))
def _walk(q, items, rel, ex, *, score_fn, ub, ib, k, ties, method):
  users, num_items = q.shape[0], items.shape[0]
  r = rel.shape[1]
  n_blocks = -(-users // ub)
  score_dtype = jax.eval_shape(score_fn, q[:1], items[:1]).dtype

  def user_block(b, out):
    lo_all, hi_all, top_ids, top_scores = out
    s = jnp.minimum(b * ub, users - ub)  # the last block is shifted back, never padded
    qb = lax.dynamic_slice_in_dim(q, s, ub)
    relb = lax.dynamic_slice_in_dim(rel, s, ub)
    exb = lax.dynamic_slice_in_dim(ex, s, ub)
    thr = _ranks.sort_keys(_own_scores(qb, items, relb, score_fn=score_fn, ib=ib), None)
    ranked = (relb >= 0) & ~jnp.any(exb[:, None, :] == relb[:, :, None], axis=-1)

    def walk(thr):
      # thresholds sorted ascending per user (the histogram method needs it), restored after
      order = jnp.argsort(thr, axis=1)
      back = functools.partial(jnp.take_along_axis, indices=jnp.argsort(order, axis=1), axis=1)
      sort = functools.partial(jnp.take_along_axis, indices=order, axis=1)
      st = _scan_items(qb, items, sort(thr), sort(relb), exb, start=0, stop=num_items,
                       score_fn=score_fn, ib=ib, k=k, ties=ties, method=method)
      return st._replace(gt=back(st.gt), ge=back(st.ge), own=back(st.own),
                         before=back(st.before))

    st = walk(thr)
    # The tiles' own score of a held-out item is the one compared (as in the materialised
    # matrix); should score_fn have rounded it differently above, walk again with it.
    st = lax.cond(jnp.any(ranked & (st.own != thr)), lambda: walk(st.own), lambda: st)
    thr = jnp.where(ranked, st.own, thr)
    # the item never counts itself; excluded or padding held-out items stay unranked
    gt = st.gt - (ranked & (st.own > thr))
    ge = st.ge - (ranked & (st.own >= thr))
    if ties == "first":
      lo = hi = gt + st.before + 1
    else:
      lo, hi = gt + 1, ge + 1
    unranked = jnp.int32(num_items + 1)
    lo, hi = jnp.where(ranked, lo, unranked), jnp.where(ranked, hi, unranked)
    lo_all = lax.dynamic_update_slice_in_dim(lo_all, lo, s, 0)
    hi_all = lax.dynamic_update_slice_in_dim(hi_all, hi, s, 0)
    if k:
      ids = jnp.where(st.top_valid, st.top_id, -1)
      top_ids = lax.dynamic_update_slice_in_dim(top_ids, ids, s, 0)
      top_scores = lax.dynamic_update_slice_in_dim(top_scores, st.top_score, s, 0)
    return lo_all, hi_all, top_ids, top_scores

  init = (jnp.zeros((users, r), jnp.int32), jnp.zeros((users, r), jnp.int32),
          jnp.full((users, k), -1, jnp.int32), jnp.zeros((users, k), score_dtype))
  lo, hi, top_ids, top_scores = lax.fori_loop(0, n_blocks, user_block, init)
  num = num_items - jnp.sum(ex >= 0, axis=1, dtype=jnp.int32)
  return lo, hi, num, top_ids, top_scores
