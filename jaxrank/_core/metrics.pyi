"""Type stub of :mod:`jaxrank._core.metrics`, generated from the metric table and the option
declarations by ``python tests/core/test_stubs.py``: do not edit (tests/core/test_stubs.py keeps it
equal)."""

from collections.abc import Callable, Mapping, Sequence

import jax
from jax.typing import ArrayLike

from jaxrank._core.table import Metric
from jaxrank._core.ranks import Ranks

def accepted(metric: Metric) -> tuple[str, ...]: ...

def precision(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    precision_denominator: str = 'k',
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""Precision at k: the share of the top k that is relevant.

  .. math:: P@k = |\{i \text{ relevant}: \mathrm{rank}_i \le k\}| / D

  ``precision_denominator="k"`` (default) uses ``D = k`` even when the list is shorter
  (trec_eval ``P_k``, ranx, RecBole); ``"min_k_n"`` uses ``D = min(k, n)`` (Rax, metrax,
  Evidently). Without ``k``, ``D = n`` (trec_eval ``set_P`` on a ranked-ids list).

  Example:
    >>> import jaxrank
    >>> float(jaxrank.precision([[3.0, 2.0, 1.0]], [[1, 0, 1]], k=2)[0])
    0.5

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    precision_denominator: ``"k"`` or ``"min_k_n"`` (min(k, list length)).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def recall(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""Recall at k: the share of the relevant items found in the top k.

  .. math:: R@k = |\{i \text{ relevant}: \mathrm{rank}_i \le k\}| / R

  ``R`` counts every relevant item, ranked or not (trec_eval ``recall_k``, ranx, Rax, Evidently).

  Example:
    >>> import jaxrank
    >>> float(jaxrank.recall([[3.0, 2.0, 1.0]], [[1, 0, 1]], k=2)[0])
    0.5

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def fbeta(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    precision_denominator: str = 'k',
    beta: float = 1.0,
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""F-beta at k of precision and recall.

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

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    precision_denominator: ``"k"`` or ``"min_k_n"`` (min(k, list length)).
    beta: the weight of recall in F-beta (inf: recall).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def hit_rate(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""Hit rate (trec_eval ``success_k``, PyKEEN Hits@k): 1 if a relevant
  item is in the top k, else 0.

  With ``ties="average"`` it is the probability that a relevant item lands in the top k.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.hit_rate([[3.0, 2.0, 1.0]], [[0, 0, 1]], k=2)[0])
    0.0

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def reciprocal_rank(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""Reciprocal rank of the first relevant item
  (0 when none is in the top k); its mean over lists is MRR.

  .. math:: RR@k = 1 / \min\{\mathrm{rank}_i: i \text{ relevant}\} \text{ if that is} \le k

  trec_eval ``recip_rank`` is ``k=None`` with ``ties="first"`` and a doc-id ``tie_key``.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.reciprocal_rank([[3.0, 2.0, 1.0]], [[0, 1, 1]])[0])
    0.5

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def average_precision(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    ap_denominator: str = 'all',
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""Average precision at k; its mean is MAP.

  .. math:: AP@k = \frac{1}{D} \sum_{i \text{ relevant},\ \mathrm{rank}_i \le k} P@\mathrm{rank}_i

  ``ap_denominator="all"`` (default, D = R: trec_eval ``map``/``map_cut_k``, ranx, metrax,
  Evidently; Rax for dense labels), ``"min_k"`` (D = min(k, R): RecBole, RePlay, MS
  recommenders ``map_at_k``), ``"retrieved"`` (D = relevant items in the top k: torchmetrics; with
  ties averaged this is the ratio of expectations).

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.average_precision([[5., 4, 3, 2, 1]], [[1, 0, 0, 1, 1]])[0]), 4)
    0.7

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    ap_denominator: ``"all"`` (R), ``"min_k"`` (min(k, R)) or ``"retrieved"`` (relevant in the top k).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def average_recall(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""Average recall at k (Evidently's AR; mean: MAR).

  .. math:: AR@k = \frac{1}{R} \sum_{i \text{ relevant},\ \mathrm{rank}_i \le k} R@\mathrm{rank}_i

  Example:
    >>> import jaxrank
    >>> float(jaxrank.average_recall([[3.0, 2.0, 1.0]], [[0, 1, 1]])[0])
    0.75

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def dcg(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    gain: str | Callable = 'linear',
    discount: Callable | None = None,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""Discounted cumulative gain at k.

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

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    gain: ``"linear"`` (y), ``"exp2"`` (2^y - 1) or a callable of the grades.
    discount: a callable of the 1-based rank (default :func:`jaxrank.log2_discount`).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def ndcg(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    gain: str | Callable = 'linear',
    discount: Callable | None = None,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""Normalised DCG at k: DCG@k over the DCG@k of the ideal order.

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

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    gain: ``"linear"`` (y), ``"exp2"`` (2^y - 1) or a callable of the grades.
    discount: a callable of the 1-based rank (default :func:`jaxrank.log2_discount`).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def r_precision(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""R-precision: precision at R, the number of relevant items
  (trec_eval ``Rprec``); with ``k``, precision at min(k, R) (RecTools ``r_precision``).

  .. math:: \mathrm{RPrec} = \frac{|\{\text{relevant in the top } c\}|}{c},\quad c = R
     \text{ (or } \min(k, R))

  Range [0, 1]; with ties, the expectation over the orders of tied items.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.r_precision([[3.0, 2.0, 1.0]], [[0, 1, 1]])[0])
    0.5

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def mean_rank(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""Mean 1-based rank of the relevant items of each list.

  With ``k``, ranks beyond k count as k + 1. Relevant items that are not ranked (missing from a
  ranked-ids list, ``where=False`` in :func:`jaxrank.from_sparse`) count as n + 1, or k + 1 with
  ``k``. ``ties="average"`` gives the realistic rank, ``"optimistic"``/``"pessimistic"`` PyKEEN's
  other two.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.mean_rank([[3.0, 2.0, 1.0]], [[0, 1, 1]])[0])
    2.5

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def err(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    max_grade: float = 4.0,
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""Expected reciprocal rank at k (Chapelle et al. 2009): the
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

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    max_grade: ERR's top grade: stop probability (2^y - 1) / 2^max_grade (gdeval, RankLib: 4).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def rbp(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    persistence: float = 0.8,
    graded: bool = False,
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""Rank-biased precision at k (Moffat & Zobel
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

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    persistence: RBP's probability of going on to the next rank, in (0, 1) (ir_measures' default 0.8; trec_eval's rbp uses 0.9).
    graded: RBP's gains: False (1 per relevant item) or True (grade over the list's largest grade when that is above 1, trec_eval's rbp).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def rbp_residual(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    persistence: float = 0.8,
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""RBP's residual at k (Moffat & Zobel 2008): the weight of the ranks below the
  evaluated depth d = min(k, n), which RBP counts as not relevant.

  .. math:: \mathrm{resid}@k = p^{d}

  RBP lies in ``[rbp, rbp + rbp_residual]`` whatever the unseen items are. Items inside the
  list count as judged (the rank core holds no "unjudged" kind); unjudged items inside the
  run add to trec_eval's ``rbp_resid`` (``jaxrank evaluate -m rbp_resid``). Never empty.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.rbp_residual([[3.0, 2.0, 1.0]], [[1, 0, 1]], persistence=0.5)[0])
    0.125

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    persistence: RBP's probability of going on to the next rank, in (0, 1) (ir_measures' default 0.8; trec_eval's rbp uses 0.9).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def bpref(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    judged: ArrayLike | None = None,
    threshold: float = 1,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""Binary preference (Buckley & Voorhees 2004, as
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

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    judged: ``[..., n]`` bool: which items carry a judgment (dense input; default: every item). False items are not judged; a True item with a negative label is in the pool but unjudged (see :func:`jaxrank.from_dense`).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def infap(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    judged: ArrayLike | None = None,
    threshold: float = 1,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""Inferred average precision (Yilmaz &
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

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    judged: ``[..., n]`` bool: which items carry a judgment (dense input; default: every item). False items are not judged; a True item with a negative label is in the pool but unjudged (see :func:`jaxrank.from_dense`).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def judged(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | None = None,
    *,
    k: int | None = None,
    where: ArrayLike | None = None,
    judged: ArrayLike | None = None,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    empty: str = 'zero',
    max_relevant: int | None = None,
    method: str = 'auto',
) -> jax.Array:
  r"""Judged@k (ir_measures): the share of the top k that carries a judgment.

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

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    judged: ``[..., n]`` bool: which items carry a judgment (dense input; default: every item). False items are not judged; a True item with a negative label is in the pool but unjudged (see :func:`jaxrank.from_dense`).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores), ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last), or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax), ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    max_relevant: performance only: an upper bound on relevant items per list (see :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see :func:`jaxrank.from_dense`).
  """

def evaluate(
    scores: ArrayLike | Ranks,
    labels: ArrayLike | Sequence[str] | None = None,
    metrics: Sequence[str] = ('ndcg@10', 'map', 'mrr', 'precision@10', 'recall@10'),
    *,
    where: ArrayLike | None = None,
    threshold: float = 1,
    gain: str | Callable = 'linear',
    discount: Callable | None = None,
    ties: str = 'average',
    tie_key: ArrayLike | None = None,
    judged: ArrayLike | None = None,
    empty: str = 'zero',
    ap_denominator: str = 'all',
    precision_denominator: str = 'k',
    beta: float = 1.0,
    persistence: float = 0.8,
    max_grade: float = 4.0,
    graded: bool = False,
    reduce: str | None = None,
    max_relevant: int | None = None,
    method: str = 'auto',
) -> dict[str, jax.Array]:
  r"""Computes many metrics at many cutoffs from one rank core (one pass over the scores).

  ``metrics`` are metric function names with an optional ``@k`` (``"ndcg@10"``,
  ``"precision@5"``) or the aliases ``map``, ``mrr``, ``mar``, ``p@k``, ``r@k``, ``hr@k``
  (also ``ap``, ``rr``, ``hits``, ``success``, ``rprec``, ``mr``), or ir_measures' measure names
  with its conventions (``"nDCG@10"``, ``"P(rel=2)@5"``, ``"RBP(p=0.5,rel=1)"``,
  ``"nDCG(gains={0:0,1:1,2:3})@10"``; docs/ir-measures.md): their parameters override the
  options below for that name only. Every option means what it
  means in the single-metric functions (see :func:`jaxrank.ndcg` and friends) and is applied to
  every metric that reads it (each function's signature lists them). An option set to anything
  but its default that none of the requested metrics reads is a ``ValueError`` naming it (it
  would change nothing, which is almost always a mistake); ``ties`` and ``empty`` concern all.

  Args:
    scores: ``[..., n]`` scores, or a :class:`jaxrank.Ranks` (then no ``labels``: the metric
      names may come second, ``evaluate(ranks, ["map", "ndcg@10"])``).
    labels: ``[..., n]`` non-negative relevance grades.
    judged: optional ``[..., n]`` bool, which items carry a judgment (read by ``bpref``,
      ``infap`` and ``judged``; see :func:`jaxrank.from_dense`).
    metrics: the metric names.
    reduce: ``None`` returns per-list arrays of the leading shape; ``"mean"`` returns their mean
      under the ``empty`` policy (see :func:`jaxrank.mean`).

  Returns:
    ``{name: values}`` with the names as given.

  Options:
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    gain: ``"linear"`` (y), ``"exp2"`` (2^y - 1) or a callable of the grades.
    discount: a callable of the 1-based rank (default :func:`jaxrank.log2_discount`).
    ties: ``"average"`` (default; the exact expectation over all orders of tied scores),
      ``"optimistic"`` (relevant, higher-graded items first in each tie), ``"pessimistic"`` (last),
      or ``"first"`` (earlier index first, or larger ``tie_key`` first).
    tie_key: ``[..., n]`` secondary key for ``ties="first"``.
    judged: ``[..., n]`` bool: which items carry a judgment (dense input; default: every item).
      False items are not judged; a True item with a negative label is in the pool but unjudged (see
      :func:`jaxrank.from_dense`).
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax),
      ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    ap_denominator: ``"all"`` (R), ``"min_k"`` (min(k, R)) or ``"retrieved"`` (relevant in the top
      k).
    precision_denominator: ``"k"`` or ``"min_k_n"`` (min(k, list length)).
    beta: the weight of recall in F-beta (inf: recall).
    persistence: RBP's probability of going on to the next rank, in (0, 1) (ir_measures' default
      0.8; trec_eval's rbp uses 0.9).
    max_grade: ERR's top grade: stop probability (2^y - 1) / 2^max_grade (gdeval, RankLib: 4).
    graded: RBP's gains: False (1 per relevant item) or True (grade over the list's largest grade
      when that is above 1, trec_eval's rbp).
    max_relevant: performance only: an upper bound on relevant items per list (see
      :func:`jaxrank.from_dense`).
    method: performance only: ``"auto"``, ``"count"`` or ``"sort"`` (see
      :func:`jaxrank.from_dense`).

  Example:
    >>> import jaxrank
    >>> out = jaxrank.evaluate([[0.9, 0.8, 0.1]], [[0, 1, 1]], ["map", "ndcg@2"])
    >>> {k: round(float(v[0]), 4) for k, v in out.items()}
    {'map': 0.5833, 'ndcg@2': 0.3869}
  """

def mean(
    values: ArrayLike | Mapping[str, ArrayLike],
    *,
    empty: str = 'zero',
):
  r"""Mean over lists honouring the empty-list policy.

  ``empty="skip"`` averages only the lists that have relevant items (their per-list value is NaN);
  ``"zero"`` and ``"nan"`` average every list (with ``"nan"`` an empty list makes the mean NaN).
  A mapping (as returned by :func:`evaluate`) is reduced value by value. A list that overflowed
  ``max_relevant`` under ``jit`` makes the mean NaN under every policy: its NaN is marked as
  such (it is not an empty list's NaN, so ``"skip"`` keeps it).

  Example:
    >>> import jaxrank
    >>> float(jaxrank.mean([1.0, float("nan"), 0.5], empty="skip"))
    0.75
  """

def parse_metric(
    name: str,
) -> tuple[str, int | None]:
  r"""``"ndcg@10"`` -> ``("ndcg", 10)``; ``"map"`` -> ``("average_precision", None)``.

  Example:
    >>> import jaxrank
    >>> jaxrank.parse_metric("mrr@10")
    ('reciprocal_rank', 10)
  """
