"""Link prediction: one positive ranked against its candidates (knowledge-graph completion).

Every function reads the rank core built by :func:`jaxrank.from_candidates`: for a positive score
``s`` and its valid candidates ``c_j`` the optimistic rank is ``lo = 1 + #{c_j > s}`` and the
pessimistic rank ``hi = 1 + #{c_j >= s}``; ``C = 1 + #valid candidates`` is the number of options
(PyKEEN's ``number_of_options``). The metrics take either ``(positive_scores [...],
candidate_scores [..., c])`` or a prebuilt :class:`jaxrank.Ranks` (build it once, read it many
times) and return one value per query, shaped ``[...]``; :func:`jaxrank.mean` averages them.

Tie policies (``ties=``):

* ``"realistic"`` (default; PyKEEN, OGB >= 1.3.4): the metric of the mean rank ``(lo + hi) / 2``,
  which may be fractional, so Hits@k is 0 for ``lo = k, hi = k + 1``.
* ``"average"``: the exact expectation of the metric over the orders of the tied items, as in the
  rank core (``E[1/rank] != 1/E[rank]``). For the rank itself both coincide.
* ``"optimistic"`` (``lo``) and ``"pessimistic"`` (``hi``; the NCF protocol, where tied negatives
  win).

Filtering: ``candidate_mask`` (False drops a candidate) is the filter, e.g. the other known true
triples. PyKEEN marks filtered scores NaN instead; jaxrank ranks NaN scores below every number (a
NaN candidate never beats a positive, but it counts in ``C``, and a NaN positive ranks last), so
pass a mask, not NaN, to filter. :func:`filter_mask` builds the mask from known true ids.

The number of options ``C`` of the adjusted metrics (``num_options=``, keyword-only):

* ``"all"`` (default): the positive plus every unmasked candidate, whatever its score. A
  candidate scored ``-inf`` or ``+inf`` is still a candidate that a random scorer would have to
  rank, so the chance level ``E[rank] = (C + 1) / 2`` is that of the ranking that was scored,
  and ``1 <= rank <= C`` always holds (AMR stays in ``(0, 2)``).
* ``"finite"`` (PyKEEN's ``number_of_options = isfinite(scores).sum()``): only the positive and
  candidates with a finite score count, because PyKEEN marks filtered candidates with a
  non-finite score. A ``+inf`` candidate still ranks above the positive but is not an option, so
  the rank can exceed ``C``. It needs the scores (not a prebuilt Ranks); a query with no finite
  score (``C = 0``) raises.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Sequence
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core import compute as _core
from jaxrank._core import formulas as _formulas
from jaxrank._core import metrics as _metrics
from jaxrank._core import table as _table
from jaxrank._core.forms import from_candidates
from jaxrank._core.ranks import Ranks, as_scores

TIES = ("realistic", "average", "optimistic", "pessimistic")
NUM_OPTIONS = ("all", "finite")
# From the metric table: linkpred's name -> the core metric, and every name of those metrics.
_CORE_NAMES = _table.LINKPRED
ALIASES = {name: own for own, core in _CORE_NAMES.items()
           for name in (own, core, *_table.METRICS[core].aliases)}

__all__ = [
    "NUM_OPTIONS", "TIES", "adjusted_hits_at_k", "adjusted_mean_rank", "adjusted_mean_rank_index",
    "adjusted_reciprocal_rank", "evaluate", "evaluate_triples", "expected_hits_at_k",
    "expected_mean_rank", "expected_reciprocal_rank", "filter_mask", "hits_at_k", "mean_rank",
    "ncf_leave_one_out", "ndcg_at_k", "num_candidates", "ogb_hits_at_k", "ogb_mrr", "rank",
    "ranks", "reciprocal_rank",
]


# ----------------------------------------------------------------------------------------------
# The rank core and per-query values.


def ranks(positive_scores: ArrayLike | Ranks, candidate_scores: ArrayLike | None = None, *,
          candidate_mask: ArrayLike | None = None) -> Ranks:
  """The rank core of each query (a :class:`jaxrank.Ranks` with one slot); passes a Ranks through.

  Example:
    >>> from jaxrank import linkpred
    >>> r = linkpred.ranks([0.5], [[0.9, 0.5, 0.1]])
    >>> r.lo[:, 0].tolist(), r.hi[:, 0].tolist(), r.num_items.tolist()
    ([2], [3], [4])
  """
  if isinstance(positive_scores, Ranks):
    if candidate_scores is not None or candidate_mask is not None:
      raise ValueError("candidate_scores and candidate_mask must be None when a Ranks is passed "
                       "(the Ranks holds them; give k and metric names by keyword, or "
                       "evaluate(ranks, metrics))")
    if positive_scores.lo.shape[-1] != 1:
      raise ValueError(f"a link-prediction Ranks has one slot per query (from_candidates), got "
                       f"{positive_scores.lo.shape[-1]} slots")
    return positive_scores
  if candidate_scores is None:
    raise ValueError("candidate_scores is required with positive_scores (or pass a Ranks)")
  return from_candidates(positive_scores, candidate_scores, candidate_mask)


def _bounds(r: Ranks) -> tuple[jax.Array, jax.Array]:
  return r.lo[..., 0], r.hi[..., 0]


def _realistic(name: str, lo: jax.Array, hi: jax.Array, k: int | None) -> jax.Array:
  """PyKEEN's realistic value: the metric of the mean rank (lo + hi) / 2 (may be x.5)."""
  rank_ = (lo + hi).astype(jnp.float32) / 2
  if name == "mean_rank":
    return rank_
  if name == "hits_at_k":
    assert k is not None  # _one and _parse require a cutoff
    return (rank_ <= k).astype(jnp.float32)
  if name == "reciprocal_rank":
    return 1.0 / rank_
  assert k is not None  # hits_at_k, ndcg_at_k: _one and _parse require a cutoff
  return jnp.where(rank_ <= k, _formulas.log2_discount(rank_), 0.0)


@functools.partial(jax.jit, static_argnames=("specs", "ties"))
def _compute(r: Ranks, *, specs: tuple[tuple[str, int | None], ...],
             ties: str) -> tuple[jax.Array, ...]:
  if ties == "realistic":
    lo, hi = _bounds(r)
    # A cutoff beyond the list keeps everything: clamped, so a huge k never overflows int32.
    return tuple(_realistic(name, lo, hi, k if k is None else min(k, r.size))
                 for name, k in specs)
  # The other policies are the rank core's: exact expectation over tie orders, or a bound.
  return _core.compute_ranks(r, specs=tuple((_CORE_NAMES[name], k) for name, k in specs),
                            options=_core.make_options(ties=ties))


def _check_ties(ties: str) -> None:
  _checks.check_choice("ties", ties, TIES)


def _one(name: str, positive_scores: ArrayLike | Ranks, candidate_scores: ArrayLike | None,
         k: int | None, candidate_mask: ArrayLike | None, ties: str) -> jax.Array:
  _check_ties(ties)
  k = _checks.check_k(k)
  if k is None and name in ("hits_at_k", "ndcg_at_k"):
    raise ValueError(f"{name} needs a positive int k, got None")
  r = ranks(positive_scores, candidate_scores, candidate_mask=candidate_mask)
  (value,) = _compute(r, specs=((name, k),), ties=ties)
  return value


def hits_at_k(positive_scores: ArrayLike | Ranks, candidate_scores: ArrayLike | None = None,
              k: int = 10, *, candidate_mask: ArrayLike | None = None,
              ties: str = "realistic") -> jax.Array:
  r"""Hits@k per query: 1 when the positive ranks within the top k.

  .. math:: \mathrm{Hits@k} = [\,r \le k\,] \in \{0, 1\}; \text{ with } ``average``:
     P(r \le k) = |[lo, hi] \cap [1, k]| / (hi - lo + 1) \in [0, 1]

  Example:
    >>> from jaxrank import linkpred
    >>> linkpred.hits_at_k([0.5, 0.5], [[0.9, 0.1], [0.5, 0.5]], k=1).tolist()
    [0.0, 0.0]
    >>> linkpred.hits_at_k([0.5, 0.5], [[0.9, 0.1], [0.5, 0.5]], k=1, ties="average").tolist()
    [0.0, 0.3333333432674408]
  """
  return _one("hits_at_k", positive_scores, candidate_scores, k, candidate_mask, ties)


def reciprocal_rank(positive_scores: ArrayLike | Ranks, candidate_scores: ArrayLike | None = None,
                    *, candidate_mask: ArrayLike | None = None,
                    ties: str = "realistic") -> jax.Array:
  r"""Reciprocal rank per query; its mean is MRR (PyKEEN's inverse harmonic mean rank).

  .. math:: RR = 1 / r \in (0, 1]; \text{ with } ``average``: \frac{1}{hi - lo + 1}
     \sum_{p=lo}^{hi} \frac{1}{p}

  A constant scorer over C options gets realistic RR ``2 / (C + 1)`` (1/50.5 for C = 100), never 1.

  Example:
    >>> from jaxrank import linkpred
    >>> linkpred.reciprocal_rank([0.5], [[0.9, 0.5, 0.1]]).tolist()  # ranks 2..3: 1/2.5
    [0.4000000059604645]
  """
  return _one("reciprocal_rank", positive_scores, candidate_scores, None, candidate_mask, ties)


def mean_rank(positive_scores: ArrayLike | Ranks, candidate_scores: ArrayLike | None = None, *,
              candidate_mask: ArrayLike | None = None, ties: str = "realistic") -> jax.Array:
  r"""The (1-based) rank of each query's positive; its mean is MR, in ``[1, C]``.

  .. math:: \mathrm{rank} = 1 + |\{c : s_c > s_+\}| + \tau\,|\{c : s_c = s_+\}|

  over the unfiltered candidates :math:`c`, with :math:`\tau` = 0 (``"optimistic"``), 1
  (``"pessimistic"``) or 1/2 (``"realistic"`` and ``"average"``: ``(lo + hi) / 2``).

  Example:
    >>> from jaxrank import linkpred
    >>> linkpred.mean_rank([0.5], [[0.9, 0.5, 0.1]], ties="pessimistic").tolist()
    [3.0]
  """
  return _one("mean_rank", positive_scores, candidate_scores, None, candidate_mask, ties)


def ndcg_at_k(positive_scores: ArrayLike | Ranks, candidate_scores: ArrayLike | None = None,
              k: int = 10, *, candidate_mask: ArrayLike | None = None,
              ties: str = "realistic") -> jax.Array:
  r"""NDCG@k of a single positive (its ideal DCG is 1), as in the NCF protocol.

  .. math:: \mathrm{NDCG@k} = [\,r \le k\,] / \log_2(r + 1) \in [0, 1]

  Example:
    >>> from jaxrank import linkpred
    >>> linkpred.ndcg_at_k([0.5], [[0.9, 0.8, 0.1]], k=10).tolist()
    [0.5]
  """
  return _one("ndcg_at_k", positive_scores, candidate_scores, k, candidate_mask, ties)


def rank(positive_scores: ArrayLike | Ranks, candidate_scores: ArrayLike | None = None, *,
         candidate_mask: ArrayLike | None = None, ties: str = "realistic") -> jax.Array:
  """The rank of each positive under a tie policy (alias of :func:`mean_rank` per query).

  Example:
    >>> from jaxrank import linkpred
    >>> linkpred.rank([0.5], [[0.9, 0.5, 0.1]]).tolist()
    [2.5]
  """
  return mean_rank(positive_scores, candidate_scores, candidate_mask=candidate_mask, ties=ties)


def num_candidates(positive_scores: ArrayLike | Ranks, candidate_scores: ArrayLike | None = None,
                   *, candidate_mask: ArrayLike | None = None,
                   num_options: str = "all") -> jax.Array:
  """``C`` per query: the positive plus its valid (unfiltered) candidates.

  ``num_options="finite"`` counts only those with a finite score (PyKEEN's rule; see the module
  docstring).

  Example:
    >>> from jaxrank import linkpred
    >>> linkpred.num_candidates([0.5], [[0.9, 0.5, 0.1]], candidate_mask=[[True, False, True]])
    Array([3], dtype=int32)
    >>> linkpred.num_candidates([0.5], [[-float("inf"), 0.5, 0.1]], num_options="finite")
    Array([3], dtype=int32)
  """
  _checks.check_choice("num_options", num_options, NUM_OPTIONS)
  positive_scores, candidate_scores = _scores_once(positive_scores, candidate_scores, num_options)
  r = ranks(positive_scores, candidate_scores, candidate_mask=candidate_mask)
  return _count_options(r, positive_scores, candidate_scores, candidate_mask, num_options)


def _scores_once(positive_scores: ArrayLike | Ranks, candidate_scores: ArrayLike | None,
                 num_options: str) -> tuple[ArrayLike | Ranks, ArrayLike | None]:
  """The scores as arrays once, when both ``ranks`` and the finite count read them."""
  if num_options == "all" or isinstance(positive_scores, Ranks):
    return positive_scores, candidate_scores
  # None (no candidate_scores) goes on to as_scores, which raises its TypeError.
  pos, cand = as_scores(("positive_scores", positive_scores, 0),
                        ("candidate_scores", cast(ArrayLike, candidate_scores), 1))
  return pos, cand


def _count_options(r: Ranks, positive_scores: ArrayLike | Ranks,
                   candidate_scores: ArrayLike | None, candidate_mask: ArrayLike | None,
                   num_options: str) -> jax.Array:
  """``C`` per query under the ``num_options`` rule (int32)."""
  if num_options == "all":
    return r.num_items
  if isinstance(positive_scores, Ranks):
    raise ValueError("num_options='finite' counts finite scores, which a Ranks does not hold: "
                     "pass positive_scores and candidate_scores")
  mask = None if candidate_mask is None else jnp.asarray(candidate_mask)
  count = _finite_options(positive_scores, candidate_scores, mask)  # arrays: _scores_once
  if _checks.is_concrete(count) and bool(jnp.min(count, initial=1) < 1):  # host only on failure
    bad = np.argwhere(np.asarray(count) < 1)
    if bad.size:
      i = tuple(int(j) for j in bad[0])
      raise ValueError(f"num_options='finite': the query at index {i} has no finite score (its "
                       f"positive and every candidate are NaN, inf or masked), so C = 0")
  return count


@jax.jit
def _finite_options(pos: jax.Array, cand: jax.Array, mask: jax.Array | None) -> jax.Array:
  finite = jnp.isfinite(cand) if mask is None else jnp.isfinite(cand) & mask
  return jnp.isfinite(pos).astype(jnp.int32) + jnp.sum(finite, axis=-1, dtype=jnp.int32)


# ----------------------------------------------------------------------------------------------
# Expectations under a random scorer and PyKEEN's adjusted metrics.


def _num_options(c: ArrayLike) -> jax.Array:
  """``C`` as float32; ``C < 1`` (no positive) raises when concrete and is NaN under tracing."""
  c = _checks.as_array("num_candidates", c, kinds="i")
  if _checks.is_concrete(c):
    values = np.asarray(c)
    bad = np.argwhere(values < 1)
    if bad.size:
      i = tuple(int(j) for j in bad[0])
      raise ValueError(f"num_candidates must be >= 1 (the positive plus its candidates), got "
                       f"{values[i]} at index {i}")
    return c.astype(jnp.float32)
  return jnp.where(c >= 1, c.astype(jnp.float32), jnp.nan)


def _expected_mean_rank(cf: jax.Array) -> jax.Array:
  return (cf + 1) / 2


def _expected_hits_at_k(cf: jax.Array, k: int) -> jax.Array:
  return jnp.minimum(float(k) / cf, 1.0)  # a float k: any size, no int32 overflow


def _expected_reciprocal_rank(cf: jax.Array) -> jax.Array:
  # H(C) = digamma(C + 1) + Euler-Mascheroni, exact to float32 rounding for every C >= 1.
  return (jax.scipy.special.digamma(cf + 1) + np.euler_gamma) / cf


def expected_mean_rank(num_candidates: ArrayLike) -> jax.Array:
  r"""Expected rank under a random scorer: :math:`(C + 1) / 2` per query.

  ``C`` counts the positive, so it must be >= 1: a smaller count raises a ValueError (NaN under
  ``jit``/``vmap`` tracing, where the value cannot be checked). The same holds for
  :func:`expected_hits_at_k` and :func:`expected_reciprocal_rank`.

  Example:
    >>> from jaxrank import linkpred
    >>> linkpred.expected_mean_rank([100]).tolist()
    [50.5]
  """
  return _expected_mean_rank(_num_options(num_candidates))


def expected_hits_at_k(num_candidates: ArrayLike, k: int = 10) -> jax.Array:
  r"""Expected Hits@k under a random scorer: :math:`\min(k / C, 1)` per query.

  Example:
    >>> from jaxrank import linkpred
    >>> linkpred.expected_hits_at_k([100, 5], k=10).tolist()
    [0.10000000149011612, 1.0]
  """
  cutoff = _checks.check_k(k)
  if cutoff is None:
    raise ValueError("expected_hits_at_k needs a positive int k, got None")
  return _expected_hits_at_k(_num_options(num_candidates), cutoff)


def expected_reciprocal_rank(num_candidates: ArrayLike) -> jax.Array:
  r"""Expected reciprocal rank under a random scorer: :math:`H(C) / C` (H: harmonic number).

  Example:
    >>> from jaxrank import linkpred
    >>> round(float(linkpred.expected_reciprocal_rank([100])[0]), 6)
    0.051874
  """
  return _expected_reciprocal_rank(_num_options(num_candidates))


def _mean_and_expectation(name: str, positive_scores: ArrayLike | Ranks,
                          candidate_scores: ArrayLike | None, candidate_mask: ArrayLike | None,
                          k: int | None, ties: str,
                          num_options: str) -> tuple[jax.Array, jax.Array]:
  _checks.check_choice("num_options", num_options, NUM_OPTIONS)
  positive_scores, candidate_scores = _scores_once(positive_scores, candidate_scores, num_options)
  r = ranks(positive_scores, candidate_scores, candidate_mask=candidate_mask)
  value = jnp.mean(_one(name, r, None, k, None, ties))
  # C >= 1: by construction for "all", checked (when concrete) for "finite".
  c = _count_options(r, positive_scores, candidate_scores, candidate_mask,
                     num_options).astype(jnp.float32)
  if name == "mean_rank":
    expected = _expected_mean_rank(c)
  elif name == "reciprocal_rank":
    expected = _expected_reciprocal_rank(c)
  else:
    assert name == "hits_at_k" and k is not None  # _one above raised for a missing k
    expected = _expected_hits_at_k(c, k)
  return value, jnp.mean(expected)


def adjusted_mean_rank(positive_scores: ArrayLike | Ranks,
                       candidate_scores: ArrayLike | None = None, *,
                       candidate_mask: ArrayLike | None = None,
                       ties: str = "realistic", num_options: str = "all") -> jax.Array:
  r"""Adjusted mean rank (PyKEEN's AMR, Berrendorf et al. 2020): MR over its random expectation.

  .. math:: \mathrm{AMR} = \frac{\mathrm{MR}}{\frac{1}{n}\sum_i (C_i + 1)/2} \in (0, 2),
     \text{ lower is better, 1 for a random scorer}

  Returns a scalar over all queries (the expectation is of the mean, so it is not a per-query mean).
  ``num_options`` picks what ``C`` counts: ``"all"`` unmasked candidates (default) or only
  ``"finite"``-scored ones (PyKEEN); the same holds for every adjusted metric (module docstring).

  Example:
    >>> from jaxrank import linkpred
    >>> round(float(linkpred.adjusted_mean_rank([0.9, 0.1], [[0.5, 0.4], [0.5, 0.4]])), 4)
    1.0
  """
  value, expected = _mean_and_expectation("mean_rank", positive_scores, candidate_scores,
                                          candidate_mask, None, ties, num_options)
  return value / expected


def adjusted_mean_rank_index(positive_scores: ArrayLike | Ranks,
                             candidate_scores: ArrayLike | None = None, *,
                             candidate_mask: ArrayLike | None = None,
                             ties: str = "realistic", num_options: str = "all") -> jax.Array:
  r"""Adjusted mean rank index (PyKEEN's AMRI): 1 for a perfect ranker, 0 for a random one.

  .. math:: \mathrm{AMRI} = 1 - \frac{\mathrm{MR} - 1}{\mathbb{E}[\mathrm{MR}] - 1} \in [-1, 1]

  Example:
    >>> from jaxrank import linkpred
    >>> float(linkpred.adjusted_mean_rank_index([0.9, 0.8], [[0.5, 0.4], [0.5, 0.4]]))
    1.0
  """
  value, expected = _mean_and_expectation("mean_rank", positive_scores, candidate_scores,
                                          candidate_mask, None, ties, num_options)
  return 1.0 - (value - 1.0) / (expected - 1.0)


def adjusted_hits_at_k(positive_scores: ArrayLike | Ranks,
                       candidate_scores: ArrayLike | None = None, k: int = 10, *,
                       candidate_mask: ArrayLike | None = None,
                       ties: str = "realistic", num_options: str = "all") -> jax.Array:
  r"""Adjusted Hits@k (PyKEEN): 0 for a random scorer, 1 for a perfect one.

  .. math:: \frac{H_k - \mathbb{E}[H_k]}{1 - \mathbb{E}[H_k]},\ \mathbb{E}[H_k] = \frac{1}{n}
     \sum_i \min(k / C_i, 1); \text{ range } [-\mathbb{E}/(1-\mathbb{E}), 1]

  Example:
    >>> from jaxrank import linkpred
    >>> float(linkpred.adjusted_hits_at_k([0.9], [[0.5, 0.4, 0.3, 0.2]], k=1))
    1.0
  """
  value, expected = _mean_and_expectation("hits_at_k", positive_scores, candidate_scores,
                                          candidate_mask, k, ties, num_options)
  return (value - expected) / (1.0 - expected)


def adjusted_reciprocal_rank(positive_scores: ArrayLike | Ranks,
                             candidate_scores: ArrayLike | None = None, *,
                             candidate_mask: ArrayLike | None = None,
                             ties: str = "realistic", num_options: str = "all") -> jax.Array:
  r"""Adjusted MRR (PyKEEN's adjusted inverse harmonic mean rank): 0 random, 1 perfect.

  .. math:: \frac{\mathrm{MRR} - \mathbb{E}}{1 - \mathbb{E}},\ \mathbb{E} = \frac{1}{n}
     \sum_i H(C_i) / C_i

  Example:
    >>> from jaxrank import linkpred
    >>> float(linkpred.adjusted_reciprocal_rank([0.9], [[0.5, 0.4]]))
    1.0
  """
  value, expected = _mean_and_expectation("reciprocal_rank", positive_scores, candidate_scores,
                                          candidate_mask, None, ties, num_options)
  return (value - expected) / (1.0 - expected)


# ----------------------------------------------------------------------------------------------
# Many metrics at once, triples, and filtering.


def _parse(name: str) -> tuple[str, int | None]:
  if not isinstance(name, str):
    raise TypeError(f"metric names must be strings, got {name!r}")
  base, _, cut = name.strip().lower().partition("@")
  metric = ALIASES.get(base.strip())
  if metric is None:
    raise ValueError(f"unknown link-prediction metric {name!r}; known: {sorted(ALIASES)} "
                     f"(hits and ndcg need @k)")
  if metric in ("mean_rank", "reciprocal_rank"):
    if cut:
      raise ValueError(f"metric {name!r} takes no cutoff")
    return metric, None
  if not cut.strip().isdigit() or int(cut) <= 0:
    raise ValueError(f"metric {name!r} needs a positive cutoff after '@', e.g. 'hits@10'")
  return metric, int(cut)


DEFAULT_METRICS = ("mrr", "hits@1", "hits@3", "hits@10", "mr")


def evaluate(positive_scores: ArrayLike | Ranks,
             candidate_scores: ArrayLike | Sequence[str] | None = None,
             metrics: Sequence[str] = DEFAULT_METRICS, *,
             candidate_mask: ArrayLike | None = None, ties: str = "realistic",
             reduce: str | None = "mean") -> dict[str, jax.Array]:
  """Several link-prediction metrics from one counting pass.

  Names: ``mrr``/``rr``, ``mr``, ``hits@k``/``hr@k``, ``ndcg@k``. ``reduce="mean"`` (default)
  returns their means over queries; ``None`` the per-query values. With a prebuilt
  :class:`jaxrank.Ranks` the names may come second: ``evaluate(ranks, ["mrr", "hits@10"])``.

  Example:
    >>> from jaxrank import linkpred
    >>> out = linkpred.evaluate([0.5, 0.9], [[0.9, 0.1], [0.5, 0.4]], ["mrr", "hits@1"])
    >>> {k: round(float(v), 4) for k, v in out.items()}
    {'mrr': 0.75, 'hits@1': 0.5}
  """
  _check_ties(ties)
  candidates, metrics = _core.metrics_second(positive_scores, candidate_scores, metrics,
                                              DEFAULT_METRICS)
  metrics = _core.metric_list(metrics)
  if reduce not in (None, "mean"):
    raise ValueError(f"reduce must be None or 'mean', got {reduce!r}")
  specs = tuple(_parse(m) for m in metrics)
  r = ranks(positive_scores, candidates, candidate_mask=candidate_mask)
  values = _compute(r, specs=specs, ties=ties)
  out = dict(zip(metrics, values))
  return _metrics.mean(out) if reduce == "mean" else out


def filter_mask(num_entities: int, true_ids: ArrayLike, known_ids: ArrayLike) -> jax.Array:
  """Candidate mask of the filtered setting: drop every known true id except the query's own.

  Args:
    num_entities: catalog size ``E``, a positive int.
    true_ids: ``[...]`` the id scored as the positive, in ``[0, E)`` (it is dropped from the
      candidates too, since its score is the positive score).
    known_ids: ``[..., r]`` other ids known to be true for the query (train/valid/test), in
      ``[0, E)``; ``-1`` pads. Repeats are allowed.

  Returns:
    ``[..., E]`` bool, True for candidates that stay.

  Raises:
    ValueError: for an id out of range (checked when the ids are concrete, i.e. outside
      ``jit``/``vmap`` tracing; under tracing an out-of-range id filters nothing).

  Example:
    >>> from jaxrank import linkpred
    >>> linkpred.filter_mask(4, [1], [[1, 3, -1]]).tolist()
    [[True, False, True, False]]
  """
  return _checked_filter_mask(num_entities, true_ids, known_ids, "num_entities", "true_ids",
                              "known_ids")


def _positive_int(name: str, value: Any) -> int:
  if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
    raise TypeError(f"{name} must be a positive int, got {value!r} of type "
                    f"{type(value).__name__}")
  if value <= 0:
    raise ValueError(f"{name} must be a positive int, got {value}")
  return int(value)


def _check_entity_ids(name: str, ids: jax.Array, num_entities: int, upper_name: str, *,
                      padding: bool) -> None:
  """Concrete ids must lie in [0, num_entities), or be -1 where ``padding`` allows it."""
  if not _checks.is_concrete(ids):
    return
  values = np.asarray(ids)
  bad = np.argwhere((values < (-1 if padding else 0)) | (values >= num_entities))
  if bad.size:
    i = tuple(int(j) for j in bad[0])
    allowed = (f"-1 (padding) or in [0, {num_entities})" if padding
               else f"an entity id in [0, {num_entities})")
    raise ValueError(f"{name} must be {allowed} ({upper_name}), got {values[i]} at index {i}")


def _checked_filter_mask(num_entities: int, true_ids: ArrayLike, known_ids: ArrayLike,
                         entities_name: str, true_name: str, known_name: str) -> jax.Array:
  num_entities = _positive_int(entities_name, num_entities)
  true_ids = _checks.as_array(true_name, true_ids, kinds="i")
  known = _checks.as_array(known_name, known_ids, kinds="i")
  _checks.check_leading(known_name, known, true_name, true_ids.shape)
  _check_entity_ids(true_name, true_ids, num_entities, entities_name, padding=False)
  _check_entity_ids(known_name, known, num_entities, entities_name, padding=True)
  return _filter_mask(true_ids, known, num_entities=num_entities)


@functools.partial(jax.jit, static_argnames=("num_entities",))
def _filter_mask(true_ids: jax.Array, known: jax.Array, *, num_entities: int) -> jax.Array:
  lead = true_ids.shape
  ids = jnp.concatenate([known, true_ids[..., None]], axis=-1).reshape(-1, known.shape[-1] + 1)
  rows = jnp.broadcast_to(jnp.arange(ids.shape[0])[:, None], ids.shape)
  safe = jnp.where(ids >= 0, ids, num_entities)  # out of bounds: dropped by the scatter
  drop = jnp.zeros((ids.shape[0], num_entities), bool).at[rows, safe].set(True, mode="drop")
  return ~drop.reshape(*lead, num_entities)


def evaluate_triples(head_scores: ArrayLike, tail_scores: ArrayLike, triples: ArrayLike, *,
                     known_heads: ArrayLike | None = None, known_tails: ArrayLike | None = None,
                     metrics: Sequence[str] = ("mrr", "hits@1", "hits@3", "hits@10", "mr"),
                     ties: str = "realistic") -> dict[str, dict[str, jax.Array]]:
  """Head, tail and both-sides means for test triples, PyKEEN-style (both = mean over the 2n).

  Args:
    head_scores: ``[n, E]`` score of ``(e, r, t)`` for every entity ``e`` (head prediction).
    tail_scores: ``[n, E]`` score of ``(h, r, e)`` (tail prediction).
    triples: ``[n, 3]`` int ``(h, r, t)``; the true entity's own score is the positive. Heads
      and tails must be entity ids in ``[0, E)``: triples have no padding value (``-1`` raises).
    known_heads, known_tails: optional ``[n, m]`` ids in ``[0, E)`` of other true heads of
      ``(?, r, t)`` / tails of ``(h, r, ?)`` (``-1`` pads) to filter (the filtered setting).

  Returns:
    ``{"head": {...}, "tail": {...}, "both": {...}}`` of metric means.

  Raises:
    ValueError: for a head, tail or known id out of range (checked when the ids are concrete,
      i.e. outside ``jit``/``vmap`` tracing).

  Example:
    >>> import numpy as np
    >>> from jaxrank import linkpred
    >>> s = np.array([[0.1, 0.9, 0.5]])
    >>> out = linkpred.evaluate_triples(s, s, [[2, 0, 1]], metrics=["mrr"])
    >>> {side: round(float(v["mrr"]), 4) for side, v in out.items()}
    {'head': 0.5, 'tail': 1.0, 'both': 0.75}
  """
  triples = _checks.as_array("triples", triples, kinds="i")
  if triples.ndim != 2 or triples.shape[-1] != 3:
    raise ValueError(f"triples must have shape (n, 3), got {tuple(triples.shape)}")
  out = {}
  per_side = {}
  for side, scores, col, known in (("head", head_scores, 0, known_heads),
                                   ("tail", tail_scores, 2, known_tails)):
    (scores,) = as_scores((f"{side}_scores", scores, 0))
    if scores.ndim != 2 or scores.shape[0] != triples.shape[0]:
      raise ValueError(f"{side}_scores must have shape ({triples.shape[0]}, num_entities), got "
                       f"{tuple(scores.shape)}")
    true_ids = triples[:, col]
    entities = f"{side}_scores.shape[1]"
    known_name = f"known_{side}s"
    if known is None:
      known_name, known = "known", jnp.full((triples.shape[0], 1), -1, true_ids.dtype)
    mask = _checked_filter_mask(scores.shape[1], true_ids, known, entities,
                                f"triples[:, {col}] ({side})", known_name)
    pos = jnp.take_along_axis(scores, true_ids[:, None], axis=-1)[:, 0]
    per_side[side] = evaluate(pos, scores, metrics, candidate_mask=mask, ties=ties, reduce=None)
    out[side] = _metrics.mean(per_side[side])
  out["both"] = {m: jnp.mean(jnp.concatenate([per_side["head"][m], per_side["tail"][m]]))
                 for m in metrics}
  return out


# ----------------------------------------------------------------------------------------------
# Presets: OGB and NCF.


def ogb_hits_at_k(positive_scores: ArrayLike, negative_scores: ArrayLike, k: int) -> jax.Array:
  r"""OGB's ``Evaluator`` Hits@K (ogbl-ppa @100, -collab @50, -ddi @20): one shared negative set.

  A positive is a hit when it scores strictly above the K-th largest negative (ties lose); with
  fewer than K negatives every positive is a hit (OGB returns 1.0).

  .. math:: \mathrm{Hits@K} = \frac{1}{P} \sum_p [\, s_p > s^{neg}_{(K)} \,] \in [0, 1]

  Args:
    positive_scores: ``[P]`` scores of the positive edges.
    negative_scores: ``[N]`` scores of the negative edges, shared by every positive.
    k: K.

  Returns:
    The scalar Hits@K, as OGB reports it.

  Example:
    >>> from jaxrank import linkpred
    >>> float(linkpred.ogb_hits_at_k([0.9, 0.5, 0.2], [0.5, 0.3, 0.1], k=1))
    0.3333333432674408
  """
  pos, neg = as_scores(("positive_scores", positive_scores, 0),
                       ("negative_scores", negative_scores, 0))
  if pos.ndim != 1 or neg.ndim != 1:
    raise ValueError(f"positive_scores and negative_scores must be 1-D (OGB's shared negatives), "
                     f"got shapes {tuple(pos.shape)} and {tuple(neg.shape)}")
  cutoff = _checks.check_k(k)
  if cutoff is None:
    raise ValueError("ogb_hits_at_k needs a positive int k, got None")
  if neg.shape[0] < cutoff:
    return jnp.float32(1.0)
  return _ogb_hits(pos, neg, k=cutoff)


@functools.partial(jax.jit, static_argnames=("k",))
def _ogb_hits(pos: jax.Array, neg: jax.Array, *, k: int) -> jax.Array:
  kth = lax.top_k(neg, k)[0][-1]  # one dtype that holds both exactly (as_scores)
  return jnp.mean((pos > kth).astype(jnp.float32))


def ogb_mrr(positive_scores: ArrayLike, negative_scores: ArrayLike) -> dict[str, jax.Array]:
  r"""OGB's ``Evaluator`` MRR protocol (ogbl-citation2, -wikikg2, -biokg), per positive.

  Each positive has its own negatives ``[P, N]``; the rank is the realistic
  :math:`1 + (\#\{n > s\} + \#\{n \ge s\}) / 2` (OGB >= 1.3.4), and OGB returns per-positive
  ``hits@1``, ``hits@3``, ``hits@10`` (``rank <= k`` on that fractional rank) and ``mrr_list``.

  Example:
    >>> from jaxrank import linkpred
    >>> out = linkpred.ogb_mrr([0.5], [[0.5, 0.1, 0.9]])
    >>> out["mrr_list"].tolist(), out["hits@3"].tolist()
    ([0.4000000059604645], [1.0])
  """
  r = ranks(positive_scores, negative_scores)
  names = ("hits@1", "hits@3", "hits@10", "mrr_list")
  values = _compute(r, specs=(("hits_at_k", 1), ("hits_at_k", 3), ("hits_at_k", 10),
                              ("reciprocal_rank", None)), ties="realistic")
  return dict(zip(names, values))


def ncf_leave_one_out(positive_scores: ArrayLike, negative_scores: ArrayLike, *, k: int = 10,
                      ties: str = "pessimistic") -> dict[str, jax.Array]:
  r"""The NCF leave-one-out protocol (He et al., WWW 2017): 1 held-out positive vs 99 negatives.

  Per user: ``hr = [r <= k]`` and ``ndcg = [r <= k] / log2(r + 1)``. NCF's ``heapq.nlargest``
  keeps tied negatives ahead of the positive (they are inserted first), so its ranks are
  pessimistic; pass ``ties="average"`` for the tie-free expectation.

  A random scorer over 1 + 99 candidates gets E[HR@10] = 0.1 and E[NDCG@10] = 0.0454.

  Example:
    >>> from jaxrank import linkpred
    >>> out = linkpred.ncf_leave_one_out([0.5], [[0.5, 0.1, 0.9]], k=3)  # pessimistic rank 3
    >>> out["hr"].tolist(), out["ndcg"].tolist()
    ([1.0], [0.5])
  """
  _check_ties(ties)
  k = _positive_int("k", k)
  r = ranks(positive_scores, negative_scores)
  hr, ndcg = _compute(r, specs=(("hits_at_k", k), ("ndcg_at_k", k)), ties=ties)
  return {"hr": hr, "ndcg": ndcg}
