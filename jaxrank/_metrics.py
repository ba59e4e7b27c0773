"""The public metric functions: one per metric, all reading the same rank core.

Every function takes dense ``scores [..., n]`` and ``labels [..., n]`` (or a :class:`jaxrank.Ranks`
from any input form) and returns one value per list, shaped like the leading dimensions. They all
share one keyword-only signature; an option that does not concern a metric is ignored, so the
same ``**options`` can be passed to all of them and to :func:`jaxrank.evaluate`.

Common options:
  k: cutoff (a positive int of any size) or None for the whole list.
  where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
  threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    DCG/NDCG use every positive grade as gain and ignore it.
  ties: ``"average"`` (default; the exact expectation over all orders of tied scores, as
    scikit-learn's NDCG), ``"optimistic"`` (relevant, higher-graded items first in each tie),
    ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
  tie_key: ``[..., n]`` secondary key for ``ties="first"``.
  empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax),
    ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`; Evidently's default).
  max_relevant, method: performance knobs of :func:`jaxrank.from_dense`.

NaN scores rank below every number and tie with each other; they never make a metric NaN.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
from jax.typing import ArrayLike

from jaxrank import _checks, _evaluate
from jaxrank._ranks import Ranks


def _metric(name: str, doc: str):
  def metric(scores: ArrayLike | Ranks, labels: ArrayLike | None = None, *,
             k: int | None = None, where: ArrayLike | None = None, threshold: float = 1,
             gain: str | Callable = "linear", discount: Callable | None = None,
             ties: str = "average", tie_key: ArrayLike | None = None, empty: str = "zero",
             ap_denominator: str = "all", precision_denominator: str = "k",
             beta: float = 1.0, max_relevant: int | None = None,
             method: str = "auto") -> jax.Array:
    k = _checks.check_k(k)
    options = _evaluate.make_options(
        threshold=threshold, gain=gain, discount=discount, ties=ties, empty=empty,
        ap_denominator=ap_denominator, precision_denominator=precision_denominator, beta=beta)
    (value,) = _evaluate.compute(scores, labels, [(name, k)], options, where=where,
                                 tie_key=tie_key, max_relevant=max_relevant, method=method)
    return value

  metric.__name__ = metric.__qualname__ = name
  metric.__doc__ = doc + "\n  Options: see the ``jaxrank._metrics`` module docstring.\n"
  return metric


precision = _metric("precision", r"""Precision at k: the share of the top k that is relevant.

  .. math:: P@k = |\{i \text{ relevant}: \mathrm{rank}_i \le k\}| / D

  ``precision_denominator="k"`` (default) uses ``D = k`` even when the list is shorter
  (trec_eval ``P_k``, ranx, RecBole); ``"min_k_n"`` uses ``D = min(k, n)`` (Rax, metrax,
  Evidently). Without ``k``, ``D = n`` (trec_eval ``set_P`` on a ranked-ids list).

  Example:
    >>> import jaxrank
    >>> float(jaxrank.precision([[3.0, 2.0, 1.0]], [[1, 0, 1]], k=2)[0])
    0.5
""")

recall = _metric("recall", r"""Recall at k: the share of the relevant items found in the top k.

  .. math:: R@k = |\{i \text{ relevant}: \mathrm{rank}_i \le k\}| / R

  ``R`` counts every relevant item, ranked or not (trec_eval ``recall_k``, ranx, Rax, Evidently).

  Example:
    >>> import jaxrank
    >>> float(jaxrank.recall([[3.0, 2.0, 1.0]], [[1, 0, 1]], k=2)[0])
    0.5
""")

fbeta = _metric("fbeta", r"""F-beta at k of precision and recall.

  .. math:: F_\beta = (1 + \beta^2) P R / (\beta^2 P + R) = (1+\beta^2)\,\mathrm{hits} /
     (\beta^2 R + D)

  Linear in the number of hits, so its tie-averaged value is exact. Every positive ``beta`` gives
  a finite value; ``beta=inf`` gives the limit, recall. ``precision_denominator`` as in
  :func:`precision`; trec_eval ``set_F`` is ``k=None``; Evidently computes F of the *averaged*
  P and R, which is not a per-list mean.

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.fbeta([[3.0, 2.0, 1.0]], [[1, 0, 1]], k=2)[0]), 4)
    0.5
""")

hit_rate = _metric("hit_rate", r"""Hit rate (trec_eval ``success_k``, PyKEEN Hits@k): 1 if a relevant
  item is in the top k, else 0.

  With ``ties="average"`` it is the probability that a relevant item lands in the top k.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.hit_rate([[3.0, 2.0, 1.0]], [[0, 0, 1]], k=2)[0])
    0.0
""")

reciprocal_rank = _metric("reciprocal_rank", r"""Reciprocal rank of the first relevant item
  (0 when none is in the top k); its mean over lists is MRR.

  .. math:: RR@k = 1 / \min\{\mathrm{rank}_i: i \text{ relevant}\} \text{ if that is} \le k

  trec_eval ``recip_rank`` is ``k=None`` with ``ties="first"`` and a doc-id ``tie_key``.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.reciprocal_rank([[3.0, 2.0, 1.0]], [[0, 1, 1]])[0])
    0.5
""")

average_precision = _metric("average_precision", r"""Average precision at k; its mean is MAP.

  .. math:: AP@k = \frac{1}{D} \sum_{i \text{ relevant},\ \mathrm{rank}_i \le k} P@\mathrm{rank}_i

  ``ap_denominator="all"`` (default, D = R: trec_eval ``map``/``map_cut_k``, ranx, metrax,
  Evidently; Rax for dense labels), ``"min_k"`` (D = min(k, R): RecBole, RePlay, MS
  recommenders ``map_at_k``), ``"retrieved"`` (D = relevant items in the top k: torchmetrics; with
  ties averaged this is the ratio of expectations).

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.average_precision([[5., 4, 3, 2, 1]], [[1, 0, 0, 1, 1]])[0]), 4)
    0.7
""")

average_recall = _metric("average_recall", r"""Average recall at k (Evidently's AR; mean: MAR).

  .. math:: AR@k = \frac{1}{R} \sum_{i \text{ relevant},\ \mathrm{rank}_i \le k} R@\mathrm{rank}_i

  Example:
    >>> import jaxrank
    >>> float(jaxrank.average_recall([[3.0, 2.0, 1.0]], [[0, 1, 1]])[0])
    0.75
""")

dcg = _metric("dcg", r"""Discounted cumulative gain at k.

  .. math:: DCG@k = \sum_{i:\ \mathrm{rank}_i \le k} \mathrm{gain}(y_i)\,\mathrm{discount}(\mathrm{rank}_i)

  ``gain="linear"`` (y; trec_eval, sklearn, Evidently), ``"exp2"`` (2^y - 1; Rax, metrax,
  TF-Ranking, ranx ``ndcg_burges``) or a callable; ``discount`` defaults to
  :func:`jaxrank.log2_discount`. ``ties="average"`` equals sklearn's ``dcg_score``.

  DCG is summed in the metrics' float dtype (float32; float64 in JAX's x64 mode). A DCG beyond
  its range is ``+inf`` (e.g. ``gain="exp2"`` of a grade >= 128 in float32, or linear grades
  near 3.4e38), never NaN; :func:`ndcg` stays exact for those lists.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.dcg([[3.0, 2.0, 1.0]], [[0, 1, 1]])[0])
    1.130929708480835
""")

ndcg = _metric("ndcg", r"""Normalised DCG at k: DCG@k over the DCG@k of the ideal order.

  The ideal order sorts every positive grade of the list (ranked or not) in decreasing order, so
  relevant items missing from a ranked-ids list lower it (trec_eval ``ndcg``/``ndcg_cut_k``;
  sklearn ``ndcg_score`` with ``ties="average"``; Rax/metrax with ``gain="exp2"``,
  ``ties="first"``). Lists whose ideal DCG is 0 follow ``empty``.

  Both sums divide every gain by the list's largest gain first (the same ratio), so no sum
  overflows and NDCG stays in [0, 1] for every valid grade: ``gain="exp2"`` of a grade of 128
  or 1000, linear grades up to float32's largest value (3.4e38; larger, infinite or NaN grades
  are rejected). With a callable gain that returns ``+inf``, the items of infinite gain count
  as 1 and the others as 0, the limit of the ratio.

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.ndcg([[3.0, 2.0, 1.0]], [[1, 5, 3]])[0]), 4)
    0.7649
""")

r_precision = _metric("r_precision", r"""R-precision: precision at R, the number of relevant items
  (trec_eval ``Rprec``); with ``k``, precision at min(k, R) (RecTools ``r_precision``).

  .. math:: \mathrm{RPrec} = \frac{|\{\text{relevant in the top } c\}|}{c},\quad c = R
     \text{ (or } \min(k, R))

  Range [0, 1]; with ties, the expectation over the orders of tied items.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.r_precision([[3.0, 2.0, 1.0]], [[0, 1, 1]])[0])
    0.5
""")

mean_rank = _metric("mean_rank", r"""Mean 1-based rank of the relevant items of each list.

  With ``k``, ranks beyond k count as k + 1. Relevant items that are not ranked (missing from a
  ranked-ids list, ``where=False`` in :func:`jaxrank.from_sparse`) count as n + 1, or k + 1 with
  ``k``. ``ties="average"`` gives the realistic rank, ``"optimistic"``/``"pessimistic"`` PyKEEN's
  other two.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.mean_rank([[3.0, 2.0, 1.0]], [[0, 1, 1]])[0])
    2.5
""")
