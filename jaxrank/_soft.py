"""Soft (differentiable) ranking metrics and the losses built on them.

A soft metric is the exact metric's formula evaluated at soft ranks (see
:func:`jaxrank.soft_ranks`) with every hard step replaced by a sigmoid:

* the cutoff ``[rank_i <= k]`` becomes :math:`c_i = \\sigma((k + \\tfrac12 - r_i)/\\tau)`;
* "relevant item j is ahead of relevant item i" (Smooth-AP) becomes
  :math:`\\sigma((r_i - r_j)/\\tau)`;

with :math:`\\tau` = ``cutoff_temperature`` in rank units (default: ``temperature``). As both
temperatures go to 0, every soft metric equals the exact one for distinct scores. Tied scores tend
to their group's midpoint rank (the ``"average"`` rank), and the metric to its value at that rank:
e.g. two relevant items tied for the top give DCG ``2/log2(2.5)`` instead of the tie-averaged
``1 + 1/log2(3)``, and an item whose midpoint is ``k + 1/2`` gets cutoff weight 1/2.

Inputs mirror the exact metrics: dense ``scores``/``labels``/``where``, or the sparse form
``relevant_ids``/``relevant_grades`` over a catalog of ``n`` scores (``-1`` pads). With the
``"sigmoid"`` operator only the relevant items' ranks are computed: O(lists x R x n) time and
O(lists x (R + n)) memory, forward and backward. Everything is pure and works under ``jit``,
``vmap`` and ``grad``; empty and fully padded lists give finite values and zero gradients.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrank import _checks, _evaluate, _formulas, _ranks, _softrank, _table
from jaxrank._formulas import Options
from jaxrank._ranks import Ranks


def _inputs(scores, labels, relevant_ids, relevant_grades, where, max_relevant):
  """Validated (scores, valid, slot_index, slot_ok, grades, overflow-count) and static m."""
  scores = _checks.as_array("scores", scores, kinds="fi", min_ndim=1, wide_ints="float")
  valid = _checks.as_where(where, scores.shape)
  n = scores.shape[-1]
  if relevant_ids is not None:
    if labels is not None:
      raise ValueError("pass either labels (dense) or relevant_ids (sparse), not both")
    ids = _checks.as_array("relevant_ids", relevant_ids, kinds="i")
    _checks.check_leading("relevant_ids", ids, "scores", scores.shape[:-1])
    _checks.check_ids("relevant_ids", ids, n, "the number of scores")
    grades = _ranks.sparse_grades(ids, relevant_grades)
    used = (ids >= 0) & (grades > 0)
    slot_index = jnp.clip(ids, 0, n - 1).astype(jnp.int32)
    ranked = used if valid is None else used & jnp.take_along_axis(valid, slot_index, axis=-1)
    return scores, valid, slot_index, ranked, jnp.where(used, grades, 0.0), None
  if labels is None:
    raise ValueError("labels (dense) or relevant_ids (sparse) is required")
  if relevant_grades is not None:
    raise ValueError("relevant_grades needs relevant_ids")
  labels = _checks.as_array("labels", labels, kinds="fib", wide_ints="float")
  _checks.check_same_shape("labels", labels, "scores", scores.shape)
  grades, positive, m = _ranks.dense_positives(labels, valid, max_relevant)
  slot_index, slot_ok = _ranks.relevant_slots(positive, m)
  slot_grades = jnp.where(slot_ok, jnp.take_along_axis(grades, slot_index, axis=-1), 0.0)
  count = jnp.sum(positive, axis=-1, dtype=jnp.int32)
  return scores, valid, slot_index, slot_ok, slot_grades, count


def _divide(a, b):
  """``a / b`` with 0 where ``b == 0``, and zero (not NaN) gradients there."""
  ok = b > 0
  return jnp.where(ok, a / jnp.where(ok, b, 1), 0.0)


def _cutoff(r, k, tau):
  return 1.0 if k is None else jax.nn.sigmoid((k + 0.5 - r) / tau)


def _formula(name, r, ranked, grades, ranks_, k, o: Options, tau):
  """(value, empty) of one soft metric from slot soft ranks ``r``."""
  rel = _formulas.relevant(ranks_, o)
  nrel = jnp.sum(rel, axis=-1).astype(r.dtype)
  c = jnp.where(ranked, _cutoff(r, k, tau), 0.0)
  if name in ("dcg", "ndcg"):
    # NDCG reads gains over the list's largest gain (no overflow; see relative_gains).
    gains = (o.gain_of(grades) if name == "dcg"
             else _formulas.relative_gains(grades, grades, o)).astype(r.dtype)
    weight = o.discount_fn(r) * c
    dcg = jnp.sum(jnp.where((grades > 0) & (weight > 0), gains * weight, 0.0), axis=-1)
    if name == "dcg":
      return dcg, ~jnp.any(grades > 0, axis=-1)
    ideal = _formulas.ideal_dcg(ranks_, k, o, relative=True).astype(r.dtype)
    return _divide(dcg, ideal), ~(ideal > 0)
  hits = jnp.sum(jnp.where(rel, c, 0.0), axis=-1)
  empty = nrel == 0
  if name == "precision":
    return hits / jnp.maximum(_formulas.precision_denominator(ranks_, k, o), 1), empty
  if name == "recall":
    return _divide(hits, nrel), empty
  if name == "hit_rate":
    return 1.0 - jnp.prod(jnp.where(rel, 1.0 - c, 1.0), axis=-1), empty
  if name == "reciprocal_rank":
    return jnp.max(jnp.where(rel, c / r, 0.0), axis=-1, initial=0.0), empty
  # Smooth-AP: precision at each relevant item's soft rank, relevant items ahead by a sigmoid.
  both = (rel & ranked)[..., None, :] & ~jnp.eye(r.shape[-1], dtype=bool)
  ahead = jnp.sum(jnp.where(both, jax.nn.sigmoid((r[..., :, None] - r[..., None, :]) / tau), 0.0),
                  axis=-1)
  total = jnp.sum(jnp.where(rel, c * (1.0 + ahead) / r, 0.0), axis=-1)
  if o.ap_denominator == "all" or k is None:
    denom = nrel if o.ap_denominator != "retrieved" else hits
  else:
    denom = jnp.minimum(nrel, min(k, r.shape[-1])) if o.ap_denominator == "min_k" else hits
  return _divide(total, denom), empty


@functools.partial(jax.jit, static_argnames=("name", "k", "options", "operator"))
def _soft_metric(scores, valid, slot_index, ranked, grades, count, temperature, tau, *, name, k,
                 options, operator):
  s = _softrank.finite_scores(scores)
  n = s.shape[-1]
  r = _softrank.slot_ranks(operator, s, valid, slot_index, temperature)
  r = jnp.where(ranked, r, 1.0)  # unranked slots contribute nothing; keep them finite
  num_items = (jnp.full(s.shape[:-1], n, jnp.int32) if valid is None
               else jnp.sum(valid, axis=-1, dtype=jnp.int32))
  overflow = (jnp.zeros(s.shape[:-1], bool) if count is None
              else count > slot_index.shape[-1])
  # The exact formulas' helpers read grades, sizes and overflow from it; the ranks are soft (r),
  # so lo/hi say "not ranked" (n + 1) in case a helper ever reads them.
  unranked = jnp.full(grades.shape, n + 1, jnp.int32)
  ranks_ = Ranks(lo=unranked, hi=unranked, grades=grades, num_items=num_items,
                 overflow=overflow, size=n)
  value, empty = _formula(name, r, ranked, grades, ranks_, k, options, tau)
  return _formulas.finish(value, empty, ranks_, options)


def _soft(name: str, doc: str):
  if _table.METRICS[name].soft != "soft_" + name:  # the table names each soft counterpart
    raise AssertionError(f"the metric table does not list soft_{name} as {name}'s soft form")

  def metric(scores: ArrayLike, labels: ArrayLike | None = None, *,
             relevant_ids: ArrayLike | None = None, relevant_grades: ArrayLike | None = None,
             k: int | None = None, where: ArrayLike | None = None, threshold: float = 1,
             gain: str | Callable = "linear", discount: Callable | None = None,
             empty: str = "zero", ap_denominator: str = "all",
             precision_denominator: str = "k", temperature: float = 1.0,
             cutoff_temperature: float | None = None, operator: str = "sigmoid",
             max_relevant: int | None = None) -> jax.Array:
    k = _checks.check_k(k)
    temperature = _softrank.check_temperature("temperature", temperature)
    tau = temperature if cutoff_temperature is None else _softrank.check_temperature(
        "cutoff_temperature", cutoff_temperature)
    _checks.check_choice("operator", operator, _softrank.OPERATORS)
    options = _evaluate.make_options(threshold=threshold, gain=gain, discount=discount,
                                     empty=empty, ap_denominator=ap_denominator,
                                     precision_denominator=precision_denominator)
    inputs = _inputs(scores, labels, relevant_ids, relevant_grades, where, max_relevant)
    return _soft_metric(*inputs, temperature, tau, name=name, k=k, options=options,
                        operator=operator)

  metric.__name__ = metric.__qualname__ = "soft_" + name
  metric.__doc__ = doc + _COMMON
  return metric


_COMMON = """
  Common options (as the exact metrics, plus):
    relevant_ids, relevant_grades: the sparse form instead of ``labels``: ``[..., r]`` ids in
      ``[0, n)`` of the relevant items (``-1`` pads) and their grades (default 1).
    temperature: the operator's temperature (``jaxrank.soft_ranks``: score units for
      ``"sigmoid"``, ``"neuralsort"``, ``"softsort"``; the regularisation strength for
      ``"fast_l2"``/``"fast_kl"``).
    cutoff_temperature: the temperature, in rank units, of the smooth cutoff at ``k`` and of
      the pairwise step between relevant items (default: ``temperature``).
    operator: ``"sigmoid"`` (default; O(R n)), ``"neuralsort"``, ``"softsort"``, ``"fast_l2"``,
      ``"fast_kl"``.
    max_relevant: slots per list for dense labels (``None``: computed from concrete labels, ``n``
      under ``jit``; pass it there to keep the O(R n) cost).
  Lists without relevant items follow ``empty``; their value and gradient are finite.
"""

soft_dcg = _soft("dcg", r"""Soft DCG at k: DCG at the soft ranks with a smooth cutoff.

  .. math:: \mathrm{DCG}@k = \sum_i \mathrm{gain}(y_i)\, \mathrm{discount}(r_i)\,
     \sigma\big((k + \tfrac12 - r_i)/\tau\big)

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.soft_dcg([[3.0, 2.0, 1.0]], [[0, 1, 1]], temperature=1e-3)[0]), 4)
    1.1309
""")

soft_ndcg = _soft("ndcg", r"""Soft NDCG at k (the softsort / ApproxNDCG family): soft DCG over the
  exact ideal DCG, which needs only the sorted grades.

  .. math:: \mathrm{NDCG}@k = \mathrm{DCG}@k(r) / \mathrm{IDCG}@k

  Range: non-negative, and 1 at most in the limit; soft ranks of several relevant items can
  overlap, so at large temperatures the value may slightly exceed the exact one.

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.soft_ndcg([[3.0, 2.0, 1.0]], [[1, 5, 3]], temperature=1e-3)[0]), 4)
    0.7649
""")

soft_precision = _soft("precision", r"""Soft precision at k, in [0, 1].

  .. math:: P@k = \sum_{i \text{ relevant}} \sigma\big((k + \tfrac12 - r_i)/\tau\big) / D

  ``D`` as in :func:`jaxrank.precision`.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.soft_precision([[3.0, 2.0, 1.0]], [[1, 0, 1]], k=2, temperature=1e-3)[0])
    0.5
""")

soft_recall = _soft("recall", r"""Soft recall at k, in [0, 1].

  .. math:: R@k = \sum_{i \text{ relevant}} \sigma\big((k + \tfrac12 - r_i)/\tau\big) / R

  Example:
    >>> import jaxrank
    >>> float(jaxrank.soft_recall([[3.0, 2.0, 1.0]], [[1, 0, 1]], k=2, temperature=1e-3)[0])
    0.5
""")

soft_hit_rate = _soft("hit_rate", r"""Soft hit rate at k: the probability that some relevant item is
  in the top k when each is independently with probability :math:`c_i`, in [0, 1].

  .. math:: HR@k = 1 - \prod_{i \text{ relevant}} \big(1 - \sigma((k + \tfrac12 - r_i)/\tau)\big)

  Example:
    >>> import jaxrank
    >>> float(jaxrank.soft_hit_rate([[3.0, 2.0, 1.0]], [[0, 0, 1]], k=2, temperature=1e-3)[0])
    0.0
""")

soft_reciprocal_rank = _soft("reciprocal_rank", r"""Soft reciprocal rank, in [0, 1].

  .. math:: RR@k = \max_{i \text{ relevant}} \sigma\big((k + \tfrac12 - r_i)/\tau\big) / r_i

  The max passes its gradient to the best-ranked relevant item.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.soft_reciprocal_rank([[3.0, 2.0, 1.0]], [[0, 1, 1]], temperature=1e-3)[0])
    0.5
""")

soft_average_precision = _soft("average_precision", r"""Soft average precision (Smooth-AP,
  Brown et al. 2020), in [0, 1].

  .. math:: AP@k = \frac1D \sum_{i \text{ rel}} c_i\,
     \frac{1 + \sum_{j \text{ rel},\, j \ne i} \sigma((r_i - r_j)/\tau)}{r_i}

  ``ap_denominator`` as in :func:`jaxrank.average_precision` (``"retrieved"`` uses
  :math:`\sum c_i`). O(R^2) per list on top of the ranks.

  Example:
    >>> import jaxrank
    >>> s, y = [[5., 4, 3, 2, 1]], [[1, 0, 0, 1, 1]]
    >>> round(float(jaxrank.soft_average_precision(s, y, temperature=1e-3)[0]), 4)
    0.7
""")


def as_loss(metric: Callable) -> Callable:
  r"""Turns a soft metric into a loss: :math:`1 - \mathrm{mean}` over lists.

  The mean honours ``empty``: with ``"zero"`` every list counts (an empty list adds a constant 1
  and no gradient); with ``"skip"`` (or ``"nan"``) only lists with relevant items are averaged,
  and the loss is 0 when there are none. Works under ``jit`` and ``jax.grad`` (an Optax step).

  Example:
    >>> import jax, jaxrank
    >>> loss = jaxrank.as_loss(jaxrank.soft_ndcg)
    >>> g = jax.grad(lambda s: loss(s, [[0, 1, 1]], temperature=0.5))(jax.numpy.ones((1, 3)))
    >>> g.shape
    (1, 3)
  """

  def loss(scores: ArrayLike, labels: ArrayLike | None = None, **options) -> jax.Array:
    values = metric(scores, labels, **options)
    ok = ~jnp.isnan(values)
    count = jnp.sum(ok)
    return jnp.sum(jnp.where(ok, 1.0 - values, 0.0)) / jnp.maximum(count, 1)

  loss.__name__ = loss.__qualname__ = metric.__name__ + "_loss"
  loss.__doc__ = (f"``1 - mean({metric.__name__})`` over lists (see :func:`jaxrank.as_loss`); "
                  f"the arguments are ``{metric.__name__}``'s.")
  return loss


def _named_loss(metric: Callable) -> Callable:
  """``as_loss(metric)`` with the math and a runnable example in its docstring."""
  loss = as_loss(metric)
  loss.__doc__ += f"""

  .. math:: L(s) = 1 - \\frac{{1}}{{|U|}} \\sum_{{u \\in U}} m_u(s)

  with :math:`m` = ``{metric.__name__}`` and :math:`U` the lists that count under ``empty``.

  Example:
    >>> import jax, jax.numpy as jnp, jaxrank
    >>> loss = jaxrank.{loss.__name__}
    >>> float(loss(jnp.array([[3.0, 2.0, 1.0]]), [[1, 0, 0]], temperature=1e-3))
    0.0
    >>> jax.grad(loss)(jnp.array([[1.0, 2.0, 3.0]]), [[1, 0, 0]]).shape
    (1, 3)
  """
  return loss


soft_ndcg_loss = _named_loss(soft_ndcg)
soft_average_precision_loss = _named_loss(soft_average_precision)
soft_reciprocal_rank_loss = _named_loss(soft_reciprocal_rank)
