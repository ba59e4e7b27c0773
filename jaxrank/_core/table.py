"""The metric table: one record per exact metric, from which every layer is derived.

A :class:`Metric` record carries the metric's name, its formula on the rank core
(:mod:`jaxrank._core.formulas`), the formula options it reads (:mod:`jaxrank._core.options`), its aliases
for :func:`jaxrank.evaluate`, its soft counterpart, its trec_eval, ir_measures and
link-prediction names, and its docstring (math and a runnable example). From :data:`METRICS`:

* :mod:`jaxrank._core.metrics` builds the public functions, with exact signatures (only the options
  the metric reads) and these docstrings, and parses metric names (:data:`ALIASES`);
* :func:`values_of` (here) runs the records' formulas on Ranks,
  :mod:`jaxrank._soft.metrics` builds its soft functions from ``soft``,
  :mod:`jaxrank._trec.table` maps trec_eval measures to formulas (:data:`TREC`) and
  :mod:`jaxrank.linkpred` its metric names (:data:`LINKPRED`);
* the tests read :data:`NAMES` for their metric lists.

Adding a metric is one record here plus its formula (docs/adding-a-metric.md).

Example:
  >>> from jaxrank._core import table as _table
  >>> _table.METRICS["err"].options, _table.ALIASES["map"]
  (('max_grade',), 'average_precision')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from jaxrank._core import formulas as _formulas
from jaxrank._core.formulas import Options
from jaxrank._core.rankform import Array, Ranks


@dataclasses.dataclass(frozen=True)
class Metric:
  """One exact metric: how it is named, computed, configured and documented."""

  name: str
  formula: Callable  # (Ranks, k, Options) -> (value, empty) per list
  doc: str  # the public function's docstring: the math and a runnable example
  options: tuple[str, ...] = ()  # the formula options it reads beyond ties and empty
  aliases: tuple[str, ...] = ()  # other names in evaluate (lower case)
  soft: str | None = None  # the public soft counterpart (jaxrank.soft_...)
  trec: tuple[str, ...] = ()  # trec_eval measures computed by this formula
  ir_measures: str | None = None  # ir_measures' measure name
  linkpred: str | None = None  # jaxrank.linkpred's name
  cutoff: bool = True  # whether it takes k (bpref and infAP do not, as trec_eval)


_RECORDS = [
    Metric(name="precision", formula=_formulas.precision, options=('threshold', 'precision_denominator'), aliases=('p',), soft="soft_precision", trec=('P', 'set_P'), ir_measures="P", doc=r"""Precision at k: the share of the top k that is relevant.

  .. math:: P@k = |\{i \text{ relevant}: \mathrm{rank}_i \le k\}| / D

  ``precision_denominator="k"`` (default) uses ``D = k`` even when the list is shorter
  (trec_eval ``P_k``, ranx, RecBole); ``"min_k_n"`` uses ``D = min(k, n)`` (Rax, metrax,
  Evidently). Without ``k``, ``D = n`` (trec_eval ``set_P`` on a ranked-ids list).

  Example:
    >>> import jaxrank
    >>> float(jaxrank.precision([[3.0, 2.0, 1.0]], [[1, 0, 1]], k=2)[0])
    0.5
"""),
    Metric(name="recall", formula=_formulas.recall, options=('threshold',), aliases=('r',), soft="soft_recall", trec=('recall', 'set_recall', 'relative_P'), ir_measures="R", doc=r"""Recall at k: the share of the relevant items found in the top k.

  .. math:: R@k = |\{i \text{ relevant}: \mathrm{rank}_i \le k\}| / R

  ``R`` counts every relevant item, ranked or not (trec_eval ``recall_k``, ranx, Rax, Evidently).

  Example:
    >>> import jaxrank
    >>> float(jaxrank.recall([[3.0, 2.0, 1.0]], [[1, 0, 1]], k=2)[0])
    0.5
"""),
    Metric(name="fbeta", formula=_formulas.fbeta, options=('threshold', 'precision_denominator', 'beta'), aliases=('f',), doc=r"""F-beta at k of precision and recall.

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
"""),
    Metric(name="hit_rate", formula=_formulas.hit_rate, options=('threshold',), aliases=('hr', 'hits', 'success'), soft="soft_hit_rate", trec=('success',), ir_measures="Success", linkpred="hits_at_k", doc=r"""Hit rate (trec_eval ``success_k``, PyKEEN Hits@k): 1 if a relevant
  item is in the top k, else 0.

  With ``ties="average"`` it is the probability that a relevant item lands in the top k.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.hit_rate([[3.0, 2.0, 1.0]], [[0, 0, 1]], k=2)[0])
    0.0
"""),
    Metric(name="reciprocal_rank", formula=_formulas.reciprocal_rank, options=('threshold',), aliases=('mrr', 'rr'), soft="soft_reciprocal_rank", trec=('recip_rank',), ir_measures="RR", linkpred="reciprocal_rank", doc=r"""Reciprocal rank of the first relevant item
  (0 when none is in the top k); its mean over lists is MRR.

  .. math:: RR@k = 1 / \min\{\mathrm{rank}_i: i \text{ relevant}\} \text{ if that is} \le k

  trec_eval ``recip_rank`` is ``k=None`` with ``ties="first"`` and a doc-id ``tie_key``.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.reciprocal_rank([[3.0, 2.0, 1.0]], [[0, 1, 1]])[0])
    0.5
"""),
    Metric(name="average_precision", formula=_formulas.average_precision, options=('threshold', 'ap_denominator'), aliases=('map', 'ap'), soft="soft_average_precision", trec=('map', 'gm_map', 'map_cut'), ir_measures="AP", doc=r"""Average precision at k; its mean is MAP.

  .. math:: AP@k = \frac{1}{D} \sum_{i \text{ relevant},\ \mathrm{rank}_i \le k} P@\mathrm{rank}_i

  ``ap_denominator="all"`` (default, D = R: trec_eval ``map``/``map_cut_k``, ranx, metrax,
  Evidently; Rax for dense labels), ``"min_k"`` (D = min(k, R): RecBole, RePlay, MS
  recommenders ``map_at_k``), ``"retrieved"`` (D = relevant items in the top k: torchmetrics; with
  ties averaged this is the ratio of expectations).

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.average_precision([[5., 4, 3, 2, 1]], [[1, 0, 0, 1, 1]])[0]), 4)
    0.7
"""),
    Metric(name="average_recall", formula=_formulas.average_recall, options=('threshold',), aliases=('mar',), doc=r"""Average recall at k (Evidently's AR; mean: MAR).

  .. math:: AR@k = \frac{1}{R} \sum_{i \text{ relevant},\ \mathrm{rank}_i \le k} R@\mathrm{rank}_i

  Example:
    >>> import jaxrank
    >>> float(jaxrank.average_recall([[3.0, 2.0, 1.0]], [[0, 1, 1]])[0])
    0.75
"""),
    Metric(name="dcg", formula=_formulas.dcg, options=('gain', 'discount'), soft="soft_dcg", trec=('dcg',), doc=r"""Discounted cumulative gain at k.

  .. math:: DCG@k = \sum_{i:\ \mathrm{rank}_i \le k} \mathrm{gain}(y_i)\,\mathrm{discount}(\mathrm{rank}_i)

  ``gain="linear"`` (y; trec_eval ``dcg``, sklearn, Evidently), ``"exp2"`` (2^y - 1; Rax, metrax,
  TF-Ranking, ranx ``ndcg_burges``) or a callable; ``discount`` defaults to
  :func:`jaxrank.log2_discount`. ``ties="average"`` equals sklearn's ``dcg_score``.

  DCG is summed in the metrics' float dtype (float32; float64 in JAX's x64 mode). A DCG beyond
  its range is ``+inf`` (e.g. ``gain="exp2"`` of a grade >= 128 in float32, or linear grades
  near 3.4e38), never NaN; :func:`ndcg` stays exact for those lists.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.dcg([[3.0, 2.0, 1.0]], [[0, 1, 1]])[0])
    1.130929708480835
"""),
    Metric(name="ndcg", formula=_formulas.ndcg, options=('gain', 'discount'), soft="soft_ndcg", trec=('ndcg', 'ndcg_cut'), ir_measures="nDCG", linkpred="ndcg_at_k", doc=r"""Normalised DCG at k: DCG@k over the DCG@k of the ideal order.

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
"""),
    Metric(name="r_precision", formula=_formulas.r_precision, options=('threshold',), aliases=('rprec',), trec=('Rprec',), ir_measures="Rprec", doc=r"""R-precision: precision at R, the number of relevant items
  (trec_eval ``Rprec``); with ``k``, precision at min(k, R) (RecTools ``r_precision``).

  .. math:: \mathrm{RPrec} = \frac{|\{\text{relevant in the top } c\}|}{c},\quad c = R
     \text{ (or } \min(k, R))

  Range [0, 1]; with ties, the expectation over the orders of tied items.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.r_precision([[3.0, 2.0, 1.0]], [[0, 1, 1]])[0])
    0.5
"""),
    Metric(name="mean_rank", formula=_formulas.mean_rank, options=('threshold',), aliases=('mr',), linkpred="mean_rank", doc=r"""Mean 1-based rank of the relevant items of each list.

  With ``k``, ranks beyond k count as k + 1. Relevant items that are not ranked (missing from a
  ranked-ids list, ``where=False`` in :func:`jaxrank.from_sparse`) count as n + 1, or k + 1 with
  ``k``. ``ties="average"`` gives the realistic rank, ``"optimistic"``/``"pessimistic"`` PyKEEN's
  other two.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.mean_rank([[3.0, 2.0, 1.0]], [[0, 1, 1]])[0])
    2.5
"""),
    Metric(name="err", formula=_formulas.err, options=("max_grade",),
           ir_measures="ERR", doc=r"""Expected reciprocal rank at k (Chapelle et al. 2009): the
  cascade user stops at each item with probability :math:`R(y) = (2^y - 1) / 2^{y_{max}}`.

  .. math:: ERR@k = \sum_{r=1}^{k} \frac{1}{r} R(y_{(r)}) \prod_{j < r} \big(1 - R(y_{(j)})\big)

  ``max_grade`` is :math:`y_{max}` (default 4, as gdeval, ir_measures' ``ERR@k`` and RankLib);
  larger grades stop the user for sure. ``ties="average"`` is the exact expectation over the
  orders of tied scores: relevant items in earlier tie groups are ahead for sure, and inside a
  group the relevant items' order and their positions are uniform and independent. A group with
  two or more tied relevant items costs O(m^2) memory per list (m relevant slots).

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.err([[3.0, 2.0, 1.0]], [[0, 4, 2]], k=3)[0]), 4)
    0.4727
"""),
    Metric(name="rbp", formula=_formulas.rbp, options=("threshold", "persistence", "graded"),
           ir_measures="RBP", doc=r"""Rank-biased precision at k (Moffat & Zobel
  2008): the user goes on to the next rank with probability p (``persistence``).

  .. math:: RBP@k = (1 - p) \sum_{r=1}^{k} g_{(r)}\, p^{r - 1}

  ``g`` is 1 for relevant items (grade ``>= threshold``); ``graded=True`` uses the grade over
  the list's largest grade when that is above 1 (trec_eval's ``rbp``). Linear in each item's
  weight, so the tie-averaged value is exact. :func:`rbp_residual` gives the weight left
  unknown.

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.rbp([[3.0, 2.0, 1.0]], [[1, 0, 1]], persistence=0.5)[0]), 4)
    0.625
"""),
    Metric(name="rbp_residual", formula=_formulas.rbp_residual, options=("persistence",),
           doc=r"""RBP's residual at k (Moffat & Zobel 2008): the weight of the ranks below the
  evaluated depth d = min(k, n), which RBP counts as not relevant.

  .. math:: \mathrm{resid}@k = p^{d}

  RBP lies in ``[rbp, rbp + rbp_residual]`` whatever the unseen items are. Items inside the
  list count as judged (the rank core holds no "unjudged" kind); unjudged items inside the
  run add to trec_eval's ``rbp_resid`` (``jaxrank evaluate -m rbp_resid``). Never empty.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.rbp_residual([[3.0, 2.0, 1.0]], [[1, 0, 1]], persistence=0.5)[0])
    0.125
"""),
    Metric(name="bpref", formula=_formulas.bpref, options=("threshold", "judged"),
           cutoff=False, ir_measures="Bpref", doc=r"""Binary preference (Buckley & Voorhees 2004, as
  trec_eval computes it): how rarely judged non-relevant items rank above the relevant ones.

  .. math:: \mathrm{bpref} = \frac{1}{R} \sum_{i \text{ relevant, retrieved}}
     1 - \frac{\min(n_i, R)}{\min(N, R)}

  :math:`n_i` counts the judged non-relevant items ranked above i, N those of the whole list
  (ranked or not); unjudged items count for nothing (``judged=`` mask, or ids not listed in the
  sparse and ranked-ids forms; a term is 1 when :math:`\min(N, R) = 0`). ``ties="average"`` is
  the exact expectation: in a tie group of u judged non-relevant items the number ahead of a
  relevant one is uniform on 0..u. No cutoff.

  Example:
    >>> import jaxrank
    >>> scores, labels = [[4.0, 3.0, 2.0, 1.0]], [[0, 1, 0, 1]]
    >>> float(jaxrank.bpref(scores, labels)[0])  # (1 - 1/2 + 1 - 2/2) / 2
    0.25
    >>> float(jaxrank.bpref(scores, labels, judged=[[False, True, True, True]])[0])
    0.5
"""),
    Metric(name="infap", formula=_formulas.infap, options=("threshold", "judged"),
           cutoff=False, ir_measures="infAP", doc=r"""Inferred average precision (Yilmaz &
  Aslam 2006, as trec_eval's ``infAP``): AP estimated from a sample of judged pooled items.

  .. math:: \mathrm{infAP} = \frac{1}{R} \sum_{i \text{ relevant, retrieved}} \frac{1}{p_i}
     + \frac{p_i - 1}{p_i} \cdot \frac{r_i + n_i + u_i}{p_i - 1} \cdot
     \frac{r_i + \epsilon}{r_i + n_i + 2\epsilon}

  at rank :math:`p_i` (the term is 1 at rank 1), with :math:`r_i` relevant, :math:`n_i` judged
  non-relevant and :math:`u_i` pooled-but-unjudged items above i (a negative label with the
  ``judged=`` mask; items not judged at all are outside the pool), :math:`\epsilon = 10^{-5}`.
  With every item judged it is AP. ``ties="optimistic"``/``"pessimistic"`` put the non-relevant
  items of a tie group behind / ahead of the relevant ones; ``"average"`` has no closed form:
  it is exact when no retrieved relevant item is tied and NaN for a list where one is (use
  ``ties="first"`` with a ``tie_key``, as trec_eval). No cutoff.

  Example:
    >>> import jaxrank
    >>> scores, labels = [[4.0, 3.0, 2.0, 1.0]], [[0, 1, -1, 1]]
    >>> judged = [[True, True, True, True]]  # item 2: in the pool, not judged
    >>> round(float(jaxrank.infap(scores, labels, judged=judged)[0]), 4)  # (0.5 + 0.625) / 2
    0.5625
"""),
    Metric(name="judged", formula=_formulas.judged, options=("judged",), ir_measures="Judged",
           doc=r"""Judged@k (ir_measures): the share of the top k that carries a judgment.

  .. math:: \mathrm{Judged}@k = |\{i \text{ judged}: \mathrm{rank}_i \le k\}| / \min(k, n)

  An item is judged when it has a qrels entry of any value, a negative one included (as
  ir_measures): with ``judged=`` the mask, in the sparse and ranked-ids forms the listed ids
  (grade 0 too); without it every item is. Empty (the list has no items) follows ``empty``.
  ``ties="optimistic"``/``"pessimistic"`` put the judged items of a tie group first / last.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.judged(jaxrank.from_ranked_ids([[7, 3, 5, 2]], [[3, 9, 2]], [[0, 1, 2]]),
    ...                      k=2)[0])
    0.5
"""),
]

METRICS: dict[str, Metric] = {m.name: m for m in _RECORDS}
NAMES = tuple(METRICS)
# evaluate's names: every metric name and alias (lower case) -> the metric name.
ALIASES = {alias: m.name for m in _RECORDS for alias in m.aliases}
# trec_eval measure -> the metric whose formula computes it.
TREC = {measure: m.name for m in _RECORDS for measure in m.trec}
# jaxrank.linkpred's metric names -> the metric computing them.
LINKPRED = {m.linkpred: m.name for m in _RECORDS if m.linkpred}
SOFT = {m.soft: m.name for m in _RECORDS if m.soft}


def values_of(ranks: Ranks, *, specs: tuple[tuple[str, int | None], ...],
              options: Options) -> tuple[Array, ...]:
  """The formulas ``specs`` (``(name, k)`` pairs) on ``ranks``, each value finished by its
  empty-list policy (:func:`jaxrank._core.formulas.finish`).

  On Ranks of NumPy arrays it runs on the host in float64, without JAX (:mod:`jaxrank._core.xp`);
  on JAX arrays inside a caller's ``jit`` (:func:`jaxrank._core.compute.compute_ranks`).

  Example:
    >>> import numpy as np
    >>> from jaxrank._core import table as _table
    >>> from jaxrank._core.options import make_options
    >>> from jaxrank._core.rankform import Ranks
    >>> r = Ranks(lo=np.array([[1, 3]]), hi=np.array([[1, 3]]), grades=np.array([[1.0, 1.0]]),
    ...           num_items=np.array([4]), overflow=np.array([False]), size=4, resolved=True)
    >>> [v.tolist() for v in _table.values_of(r, specs=(("average_precision", None),),
    ...                                        options=make_options())]
    [[0.8333333333333333]]
  """
  out = []
  for name, k in specs:
    value, empty = METRICS[name].formula(ranks, k, options)
    out.append(_formulas.finish(value, empty, ranks, options))
  return tuple(out)


def reads_judgments(name: str) -> bool:
  """Whether metric ``name`` reads judged non-relevant items (bpref, infap, judged): the inputs
  must then tell them apart from unjudged ones (``judged=``, grade-0 ids)."""
  return "judged" in METRICS[name].options
