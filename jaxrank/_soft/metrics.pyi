"""Type stub of :mod:`jaxrank._soft.metrics`, generated from the metric table, the soft formulas
and the option declarations by ``python tests/core/test_stubs.py``: do not edit
(tests/core/test_stubs.py keeps it equal)."""

from collections.abc import Callable

import jax
from jax.typing import ArrayLike

FUNCTIONS: dict[str, Callable]

def soft_precision(
    scores: ArrayLike,
    labels: ArrayLike | None = None,
    *,
    relevant_ids: ArrayLike | None = None,
    relevant_grades: ArrayLike | None = None,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    gain: str | Callable = 'linear',
    discount: Callable | None = None,
    empty: str = 'zero',
    ap_denominator: str = 'all',
    precision_denominator: str = 'k',
    temperature: float = 1.0,
    cutoff_temperature: float | None = None,
    operator: str = 'sigmoid',
    max_relevant: int | None = None,
) -> jax.Array:
  r"""Soft precision at k, in [0, 1].

  .. math:: P@k = \sum_{i \text{ relevant}} \sigma\big((k + \tfrac12 - r_i)/\tau\big) / D

  ``D`` as in :func:`jaxrank.precision`.

  Inputs as the exact metrics' (dense ``scores``/``labels``/``where``), or the sparse form:
  ``relevant_ids``/``relevant_grades``: ``[..., r]`` ids in ``[0, n)`` of the relevant items
  (``-1`` pads) and their grades (default 1), instead of ``labels``. With dense labels and
  ``max_relevant=None`` the slots are counted from concrete labels, and are ``n`` under ``jit``:
  pass ``max_relevant`` there to keep the O(R n) cost. Lists without relevant items follow
  ``empty``; their value and gradient are finite.

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    gain: ``"linear"`` (y), ``"exp2"`` (2^y - 1) or a callable of the grades.
    discount: a callable of the 1-based rank (default :func:`jaxrank.log2_discount`).
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax),
      ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    ap_denominator: ``"all"`` (R), ``"min_k"`` (min(k, R)) or ``"retrieved"`` (relevant in the top
      k).
    precision_denominator: ``"k"`` or ``"min_k_n"`` (min(k, list length)).
    temperature: the operator's temperature (:func:`jaxrank.soft_ranks`: score units for
      ``"sigmoid"``, ``"neuralsort"``, ``"softsort"``; the regularisation strength for
      ``"fast_l2"``/``"fast_kl"``).
    cutoff_temperature: the temperature, in rank units, of the smooth cutoff at ``k`` and of the
      pairwise step between relevant items (default: ``temperature``).
    operator: ``"sigmoid"`` (default; O(R n)), ``"neuralsort"``, ``"softsort"``, ``"fast_l2"``,
      ``"fast_kl"``.
    max_relevant: performance only: an upper bound on relevant items per list (see
      :func:`jaxrank.from_dense`).

  Example:
    >>> import jaxrank
    >>> float(jaxrank.soft_precision([[3.0, 2.0, 1.0]], [[1, 0, 1]], k=2, temperature=1e-3)[0])
    0.5
  """

def soft_recall(
    scores: ArrayLike,
    labels: ArrayLike | None = None,
    *,
    relevant_ids: ArrayLike | None = None,
    relevant_grades: ArrayLike | None = None,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    gain: str | Callable = 'linear',
    discount: Callable | None = None,
    empty: str = 'zero',
    ap_denominator: str = 'all',
    precision_denominator: str = 'k',
    temperature: float = 1.0,
    cutoff_temperature: float | None = None,
    operator: str = 'sigmoid',
    max_relevant: int | None = None,
) -> jax.Array:
  r"""Soft recall at k, in [0, 1].

  .. math:: R@k = \sum_{i \text{ relevant}} \sigma\big((k + \tfrac12 - r_i)/\tau\big) / R

  Inputs as the exact metrics' (dense ``scores``/``labels``/``where``), or the sparse form:
  ``relevant_ids``/``relevant_grades``: ``[..., r]`` ids in ``[0, n)`` of the relevant items
  (``-1`` pads) and their grades (default 1), instead of ``labels``. With dense labels and
  ``max_relevant=None`` the slots are counted from concrete labels, and are ``n`` under ``jit``:
  pass ``max_relevant`` there to keep the O(R n) cost. Lists without relevant items follow
  ``empty``; their value and gradient are finite.

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    gain: ``"linear"`` (y), ``"exp2"`` (2^y - 1) or a callable of the grades.
    discount: a callable of the 1-based rank (default :func:`jaxrank.log2_discount`).
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax),
      ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    ap_denominator: ``"all"`` (R), ``"min_k"`` (min(k, R)) or ``"retrieved"`` (relevant in the top
      k).
    precision_denominator: ``"k"`` or ``"min_k_n"`` (min(k, list length)).
    temperature: the operator's temperature (:func:`jaxrank.soft_ranks`: score units for
      ``"sigmoid"``, ``"neuralsort"``, ``"softsort"``; the regularisation strength for
      ``"fast_l2"``/``"fast_kl"``).
    cutoff_temperature: the temperature, in rank units, of the smooth cutoff at ``k`` and of the
      pairwise step between relevant items (default: ``temperature``).
    operator: ``"sigmoid"`` (default; O(R n)), ``"neuralsort"``, ``"softsort"``, ``"fast_l2"``,
      ``"fast_kl"``.
    max_relevant: performance only: an upper bound on relevant items per list (see
      :func:`jaxrank.from_dense`).

  Example:
    >>> import jaxrank
    >>> float(jaxrank.soft_recall([[3.0, 2.0, 1.0]], [[1, 0, 1]], k=2, temperature=1e-3)[0])
    0.5
  """

def soft_hit_rate(
    scores: ArrayLike,
    labels: ArrayLike | None = None,
    *,
    relevant_ids: ArrayLike | None = None,
    relevant_grades: ArrayLike | None = None,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    gain: str | Callable = 'linear',
    discount: Callable | None = None,
    empty: str = 'zero',
    ap_denominator: str = 'all',
    precision_denominator: str = 'k',
    temperature: float = 1.0,
    cutoff_temperature: float | None = None,
    operator: str = 'sigmoid',
    max_relevant: int | None = None,
) -> jax.Array:
  r"""Soft hit rate at k: the probability that some relevant item is
  in the top k when each is independently with probability :math:`c_i`, in [0, 1].

  .. math:: HR@k = 1 - \prod_{i \text{ relevant}} \big(1 - \sigma((k + \tfrac12 - r_i)/\tau)\big)

  Inputs as the exact metrics' (dense ``scores``/``labels``/``where``), or the sparse form:
  ``relevant_ids``/``relevant_grades``: ``[..., r]`` ids in ``[0, n)`` of the relevant items
  (``-1`` pads) and their grades (default 1), instead of ``labels``. With dense labels and
  ``max_relevant=None`` the slots are counted from concrete labels, and are ``n`` under ``jit``:
  pass ``max_relevant`` there to keep the O(R n) cost. Lists without relevant items follow
  ``empty``; their value and gradient are finite.

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    gain: ``"linear"`` (y), ``"exp2"`` (2^y - 1) or a callable of the grades.
    discount: a callable of the 1-based rank (default :func:`jaxrank.log2_discount`).
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax),
      ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    ap_denominator: ``"all"`` (R), ``"min_k"`` (min(k, R)) or ``"retrieved"`` (relevant in the top
      k).
    precision_denominator: ``"k"`` or ``"min_k_n"`` (min(k, list length)).
    temperature: the operator's temperature (:func:`jaxrank.soft_ranks`: score units for
      ``"sigmoid"``, ``"neuralsort"``, ``"softsort"``; the regularisation strength for
      ``"fast_l2"``/``"fast_kl"``).
    cutoff_temperature: the temperature, in rank units, of the smooth cutoff at ``k`` and of the
      pairwise step between relevant items (default: ``temperature``).
    operator: ``"sigmoid"`` (default; O(R n)), ``"neuralsort"``, ``"softsort"``, ``"fast_l2"``,
      ``"fast_kl"``.
    max_relevant: performance only: an upper bound on relevant items per list (see
      :func:`jaxrank.from_dense`).

  Example:
    >>> import jaxrank
    >>> float(jaxrank.soft_hit_rate([[3.0, 2.0, 1.0]], [[0, 0, 1]], k=2, temperature=1e-3)[0])
    0.0
  """

def soft_reciprocal_rank(
    scores: ArrayLike,
    labels: ArrayLike | None = None,
    *,
    relevant_ids: ArrayLike | None = None,
    relevant_grades: ArrayLike | None = None,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    gain: str | Callable = 'linear',
    discount: Callable | None = None,
    empty: str = 'zero',
    ap_denominator: str = 'all',
    precision_denominator: str = 'k',
    temperature: float = 1.0,
    cutoff_temperature: float | None = None,
    operator: str = 'sigmoid',
    max_relevant: int | None = None,
) -> jax.Array:
  r"""Soft reciprocal rank, in [0, 1].

  .. math:: RR@k = \max_{i \text{ relevant}} \sigma\big((k + \tfrac12 - r_i)/\tau\big) / r_i

  The max passes its gradient to the best-ranked relevant item.

  Inputs as the exact metrics' (dense ``scores``/``labels``/``where``), or the sparse form:
  ``relevant_ids``/``relevant_grades``: ``[..., r]`` ids in ``[0, n)`` of the relevant items
  (``-1`` pads) and their grades (default 1), instead of ``labels``. With dense labels and
  ``max_relevant=None`` the slots are counted from concrete labels, and are ``n`` under ``jit``:
  pass ``max_relevant`` there to keep the O(R n) cost. Lists without relevant items follow
  ``empty``; their value and gradient are finite.

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    gain: ``"linear"`` (y), ``"exp2"`` (2^y - 1) or a callable of the grades.
    discount: a callable of the 1-based rank (default :func:`jaxrank.log2_discount`).
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax),
      ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    ap_denominator: ``"all"`` (R), ``"min_k"`` (min(k, R)) or ``"retrieved"`` (relevant in the top
      k).
    precision_denominator: ``"k"`` or ``"min_k_n"`` (min(k, list length)).
    temperature: the operator's temperature (:func:`jaxrank.soft_ranks`: score units for
      ``"sigmoid"``, ``"neuralsort"``, ``"softsort"``; the regularisation strength for
      ``"fast_l2"``/``"fast_kl"``).
    cutoff_temperature: the temperature, in rank units, of the smooth cutoff at ``k`` and of the
      pairwise step between relevant items (default: ``temperature``).
    operator: ``"sigmoid"`` (default; O(R n)), ``"neuralsort"``, ``"softsort"``, ``"fast_l2"``,
      ``"fast_kl"``.
    max_relevant: performance only: an upper bound on relevant items per list (see
      :func:`jaxrank.from_dense`).

  Example:
    >>> import jaxrank
    >>> float(jaxrank.soft_reciprocal_rank([[3.0, 2.0, 1.0]], [[0, 1, 1]], temperature=1e-3)[0])
    0.5
  """

def soft_average_precision(
    scores: ArrayLike,
    labels: ArrayLike | None = None,
    *,
    relevant_ids: ArrayLike | None = None,
    relevant_grades: ArrayLike | None = None,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    gain: str | Callable = 'linear',
    discount: Callable | None = None,
    empty: str = 'zero',
    ap_denominator: str = 'all',
    precision_denominator: str = 'k',
    temperature: float = 1.0,
    cutoff_temperature: float | None = None,
    operator: str = 'sigmoid',
    max_relevant: int | None = None,
) -> jax.Array:
  r"""Soft average precision (Smooth-AP, Brown et al. 2020), in
  [0, 1].

  .. math:: AP@k = \frac1D \sum_{i \text{ rel}} c_i\,
     \frac{1 + \sum_{j \text{ rel},\, j \ne i} \sigma((r_i - r_j)/\tau)}{r_i}

  ``ap_denominator`` as in :func:`jaxrank.average_precision` (``"retrieved"`` uses
  :math:`\sum c_i`). O(R^2) per list on top of the ranks.

  Inputs as the exact metrics' (dense ``scores``/``labels``/``where``), or the sparse form:
  ``relevant_ids``/``relevant_grades``: ``[..., r]`` ids in ``[0, n)`` of the relevant items
  (``-1`` pads) and their grades (default 1), instead of ``labels``. With dense labels and
  ``max_relevant=None`` the slots are counted from concrete labels, and are ``n`` under ``jit``:
  pass ``max_relevant`` there to keep the O(R n) cost. Lists without relevant items follow
  ``empty``; their value and gradient are finite.

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    gain: ``"linear"`` (y), ``"exp2"`` (2^y - 1) or a callable of the grades.
    discount: a callable of the 1-based rank (default :func:`jaxrank.log2_discount`).
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax),
      ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    ap_denominator: ``"all"`` (R), ``"min_k"`` (min(k, R)) or ``"retrieved"`` (relevant in the top
      k).
    precision_denominator: ``"k"`` or ``"min_k_n"`` (min(k, list length)).
    temperature: the operator's temperature (:func:`jaxrank.soft_ranks`: score units for
      ``"sigmoid"``, ``"neuralsort"``, ``"softsort"``; the regularisation strength for
      ``"fast_l2"``/``"fast_kl"``).
    cutoff_temperature: the temperature, in rank units, of the smooth cutoff at ``k`` and of the
      pairwise step between relevant items (default: ``temperature``).
    operator: ``"sigmoid"`` (default; O(R n)), ``"neuralsort"``, ``"softsort"``, ``"fast_l2"``,
      ``"fast_kl"``.
    max_relevant: performance only: an upper bound on relevant items per list (see
      :func:`jaxrank.from_dense`).

  Example:
    >>> import jaxrank
    >>> s, y = [[5., 4, 3, 2, 1]], [[1, 0, 0, 1, 1]]
    >>> round(float(jaxrank.soft_average_precision(s, y, temperature=1e-3)[0]), 4)
    0.7
  """

def soft_dcg(
    scores: ArrayLike,
    labels: ArrayLike | None = None,
    *,
    relevant_ids: ArrayLike | None = None,
    relevant_grades: ArrayLike | None = None,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    gain: str | Callable = 'linear',
    discount: Callable | None = None,
    empty: str = 'zero',
    ap_denominator: str = 'all',
    precision_denominator: str = 'k',
    temperature: float = 1.0,
    cutoff_temperature: float | None = None,
    operator: str = 'sigmoid',
    max_relevant: int | None = None,
) -> jax.Array:
  r"""Soft DCG at k: DCG at the soft ranks with a smooth cutoff.

  .. math:: \mathrm{DCG}@k = \sum_i \mathrm{gain}(y_i)\, \mathrm{discount}(r_i)\,
     \sigma\big((k + \tfrac12 - r_i)/\tau\big)

  Inputs as the exact metrics' (dense ``scores``/``labels``/``where``), or the sparse form:
  ``relevant_ids``/``relevant_grades``: ``[..., r]`` ids in ``[0, n)`` of the relevant items
  (``-1`` pads) and their grades (default 1), instead of ``labels``. With dense labels and
  ``max_relevant=None`` the slots are counted from concrete labels, and are ``n`` under ``jit``:
  pass ``max_relevant`` there to keep the O(R n) cost. Lists without relevant items follow
  ``empty``; their value and gradient are finite.

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    gain: ``"linear"`` (y), ``"exp2"`` (2^y - 1) or a callable of the grades.
    discount: a callable of the 1-based rank (default :func:`jaxrank.log2_discount`).
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax),
      ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    ap_denominator: ``"all"`` (R), ``"min_k"`` (min(k, R)) or ``"retrieved"`` (relevant in the top
      k).
    precision_denominator: ``"k"`` or ``"min_k_n"`` (min(k, list length)).
    temperature: the operator's temperature (:func:`jaxrank.soft_ranks`: score units for
      ``"sigmoid"``, ``"neuralsort"``, ``"softsort"``; the regularisation strength for
      ``"fast_l2"``/``"fast_kl"``).
    cutoff_temperature: the temperature, in rank units, of the smooth cutoff at ``k`` and of the
      pairwise step between relevant items (default: ``temperature``).
    operator: ``"sigmoid"`` (default; O(R n)), ``"neuralsort"``, ``"softsort"``, ``"fast_l2"``,
      ``"fast_kl"``.
    max_relevant: performance only: an upper bound on relevant items per list (see
      :func:`jaxrank.from_dense`).

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.soft_dcg([[3.0, 2.0, 1.0]], [[0, 1, 1]], temperature=1e-3)[0]), 4)
    1.1309
  """

def soft_ndcg(
    scores: ArrayLike,
    labels: ArrayLike | None = None,
    *,
    relevant_ids: ArrayLike | None = None,
    relevant_grades: ArrayLike | None = None,
    k: int | None = None,
    where: ArrayLike | None = None,
    threshold: float = 1,
    gain: str | Callable = 'linear',
    discount: Callable | None = None,
    empty: str = 'zero',
    ap_denominator: str = 'all',
    precision_denominator: str = 'k',
    temperature: float = 1.0,
    cutoff_temperature: float | None = None,
    operator: str = 'sigmoid',
    max_relevant: int | None = None,
) -> jax.Array:
  r"""Soft NDCG at k (the softsort / ApproxNDCG family): soft DCG over the
  exact ideal DCG, which needs only the sorted grades.

  .. math:: \mathrm{NDCG}@k = \mathrm{DCG}@k(r) / \mathrm{IDCG}@k

  Range: non-negative, and 1 at most in the limit; soft ranks of several relevant items can
  overlap, so at large temperatures the value may slightly exceed the exact one.

  Inputs as the exact metrics' (dense ``scores``/``labels``/``where``), or the sparse form:
  ``relevant_ids``/``relevant_grades``: ``[..., r]`` ids in ``[0, n)`` of the relevant items
  (``-1`` pads) and their grades (default 1), instead of ``labels``. With dense labels and
  ``max_relevant=None`` the slots are counted from concrete labels, and are ``n`` under ``jit``:
  pass ``max_relevant`` there to keep the O(R n) cost. Lists without relevant items follow
  ``empty``; their value and gradient are finite.

  Options:
    k: cutoff (a positive int of any size) or None for the whole list.
    where: ``[..., n]`` bool mask of valid items (False = padding, not ranked).
    threshold: an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).
    gain: ``"linear"`` (y), ``"exp2"`` (2^y - 1) or a callable of the grades.
    discount: a callable of the 1-based rank (default :func:`jaxrank.log2_discount`).
    empty: value for lists without relevant items: ``"zero"`` (default; trec_eval, sklearn, Rax),
      ``"nan"``, or ``"skip"`` (NaN per list, left out of :func:`jaxrank.mean`).
    ap_denominator: ``"all"`` (R), ``"min_k"`` (min(k, R)) or ``"retrieved"`` (relevant in the top
      k).
    precision_denominator: ``"k"`` or ``"min_k_n"`` (min(k, list length)).
    temperature: the operator's temperature (:func:`jaxrank.soft_ranks`: score units for
      ``"sigmoid"``, ``"neuralsort"``, ``"softsort"``; the regularisation strength for
      ``"fast_l2"``/``"fast_kl"``).
    cutoff_temperature: the temperature, in rank units, of the smooth cutoff at ``k`` and of the
      pairwise step between relevant items (default: ``temperature``).
    operator: ``"sigmoid"`` (default; O(R n)), ``"neuralsort"``, ``"softsort"``, ``"fast_l2"``,
      ``"fast_kl"``.
    max_relevant: performance only: an upper bound on relevant items per list (see
      :func:`jaxrank.from_dense`).

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.soft_ndcg([[3.0, 2.0, 1.0]], [[1, 5, 3]], temperature=1e-3)[0]), 4)
    0.7649
  """

def as_loss(
    metric: Callable,
) -> Callable:
  r"""Turns a soft metric into a loss: :math:`1 - \mathrm{mean}` over lists.

  The mean honours ``empty``: with ``"zero"`` every list counts (an empty list adds a constant 1
  and no gradient); with ``"skip"`` (or ``"nan"``) only lists with relevant items are averaged,
  and the loss is 0 when there are none. A list with more relevant items than ``max_relevant``
  (under ``jit``) makes the loss NaN rather than being left out. Works under ``jit`` and
  ``jax.grad`` (an Optax step).

  Example:
    >>> import jax, jaxrank
    >>> loss = jaxrank.as_loss(jaxrank.soft_ndcg)
    >>> g = jax.grad(lambda s: loss(s, [[0, 1, 1]], temperature=0.5))(jax.numpy.ones((1, 3)))
    >>> g.shape
    (1, 3)
  """

def soft_ndcg_loss(
    scores: ArrayLike,
    labels: ArrayLike | None = None,
    **options,
) -> jax.Array:
  r"""``1 - mean(soft_ndcg)`` over lists (see :func:`jaxrank.as_loss`); the arguments are ``soft_ndcg``'s.

  .. math:: L(s) = 1 - \frac{1}{|U|} \sum_{u \in U} m_u(s)

  with :math:`m` = ``soft_ndcg`` and :math:`U` the lists that count under ``empty``.

  Example:
    >>> import jax, jax.numpy as jnp, jaxrank
    >>> loss = jaxrank.soft_ndcg_loss
    >>> float(loss(jnp.array([[3.0, 2.0, 1.0]]), [[1, 0, 0]], temperature=1e-3))
    0.0
    >>> jax.grad(loss)(jnp.array([[1.0, 2.0, 3.0]]), [[1, 0, 0]]).shape
    (1, 3)
  """

def soft_average_precision_loss(
    scores: ArrayLike,
    labels: ArrayLike | None = None,
    **options,
) -> jax.Array:
  r"""``1 - mean(soft_average_precision)`` over lists (see :func:`jaxrank.as_loss`); the arguments are ``soft_average_precision``'s.

  .. math:: L(s) = 1 - \frac{1}{|U|} \sum_{u \in U} m_u(s)

  with :math:`m` = ``soft_average_precision`` and :math:`U` the lists that count under ``empty``.

  Example:
    >>> import jax, jax.numpy as jnp, jaxrank
    >>> loss = jaxrank.soft_average_precision_loss
    >>> float(loss(jnp.array([[3.0, 2.0, 1.0]]), [[1, 0, 0]], temperature=1e-3))
    0.0
    >>> jax.grad(loss)(jnp.array([[1.0, 2.0, 3.0]]), [[1, 0, 0]]).shape
    (1, 3)
  """

def soft_reciprocal_rank_loss(
    scores: ArrayLike,
    labels: ArrayLike | None = None,
    **options,
) -> jax.Array:
  r"""``1 - mean(soft_reciprocal_rank)`` over lists (see :func:`jaxrank.as_loss`); the arguments are ``soft_reciprocal_rank``'s.

  .. math:: L(s) = 1 - \frac{1}{|U|} \sum_{u \in U} m_u(s)

  with :math:`m` = ``soft_reciprocal_rank`` and :math:`U` the lists that count under ``empty``.

  Example:
    >>> import jax, jax.numpy as jnp, jaxrank
    >>> loss = jaxrank.soft_reciprocal_rank_loss
    >>> float(loss(jnp.array([[3.0, 2.0, 1.0]]), [[1, 0, 0]], temperature=1e-3))
    0.0
    >>> jax.grad(loss)(jnp.array([[1.0, 2.0, 3.0]]), [[1, 0, 0]]).shape
    (1, 3)
  """
