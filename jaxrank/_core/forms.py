"""Ranks of the other input forms: sparse relevant ids over a catalog (:func:`from_sparse`),
ranked id lists (:func:`from_ranked_ids`) and a positive against candidates
(:func:`from_candidates`). Dense scores and labels: :mod:`jaxrank._core.dense`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core.counting import check_ties_args, counts_by_compare, slot_ranks
from jaxrank._core.rankform import TIES
from jaxrank._core.ranks import (UNUSED, ZERO, Judgments, Ranks, as_scores, sort_keys,
                                 sparse_grades)


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
    ties, tie_key: as in :func:`jaxrank.from_dense`.
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
  tie_key = check_ties_args(ties, method, tie_key, scores.shape)
  return _from_sparse(scores, ids, grades, valid, tie_key, ties=ties, method=method)


@functools.partial(jax.jit, static_argnames=("ties", "method"))
def _from_sparse(scores, ids, grades, valid, tie_key, *, ties, method):
  n = scores.shape[-1]
  num_items = (jnp.full(scores.shape[:-1], n, jnp.int32) if valid is None
               else jnp.sum(valid, axis=-1, dtype=jnp.int32))
  listed = ids >= 0
  safe = jnp.clip(ids, 0, n - 1).astype(jnp.int32)
  # every listed id is ranked, grade 0 too (the judged non-relevant ones, see Judgments): the
  # same counting pass, the same cost as before (each slot was counted, then masked)
  ranked = listed if valid is None else listed & jnp.take_along_axis(valid, safe, axis=-1)
  # "auto" keeps the sparse form's memory at O(lists x (relevant + chunk)): no sorted copy.
  method = "count" if method == "auto" else method
  lo, hi = slot_ranks(scores, valid, ranked, safe, ties=ties, method=method, tie_key=tie_key,
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
  gt, ge = counts_by_compare(items, sort_keys(pos[..., None], None))
  lo = gt + 1
  hi = lo if ties == "first" else ge + 1
  num_items = 1 + (jnp.full(pos.shape, c, jnp.int32) if mask is None
                   else jnp.sum(mask, axis=-1, dtype=jnp.int32))
  return Ranks(lo=lo, hi=hi, grades=jnp.ones(lo.shape, jnp.float32), num_items=num_items,
               overflow=jnp.zeros(pos.shape, bool), size=c + 1, resolved=ties == "first")
