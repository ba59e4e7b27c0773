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

Each soft formula is registered once (:data:`SOFT_FORMULAS`, metric name -> formula and
docstring), and the public functions are built from the metric table: one ``jaxrank.soft_<name>``
per record whose ``soft`` names it, with the option parameters of :data:`jaxrank._core.options.SOFT`.
A record naming a soft form without a registered formula, or the reverse, fails at import.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core import formulas as _formulas
from jaxrank._core import options as _options
from jaxrank._core import dense as _dense
from jaxrank._core import ranks as _ranks
from jaxrank._soft import operators as _softrank
from jaxrank._core import table as _table
from jaxrank._core.formulas import Options
from jaxrank._core.ranks import Ranks


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
  grades, positive, m = _dense.dense_positives(labels, valid, max_relevant)
  slot_index, slot_ok = _dense.relevant_slots(positive, m)
  slot_grades = jnp.where(slot_ok, jnp.take_along_axis(grades, slot_index, axis=-1), 0.0)
  count = jnp.sum(positive, axis=-1, dtype=jnp.int32)
  return scores, valid, slot_index, slot_ok, slot_grades, count


def _divide(a, b):
  """``a / b`` with 0 where ``b == 0``, and zero (not NaN) gradients there."""
  ok = b > 0
  return jnp.where(ok, a / jnp.where(ok, b, 1), 0.0)


def _cutoff(r, k, tau):
  return 1.0 if k is None else jax.nn.sigmoid((k + 0.5 - r) / tau)


class SoftRanks(NamedTuple):
  """What a soft formula reads: slot soft ranks ``r``, which slots are ranked, their grades,
  and the exact rank core's view of the list (grades, sizes; its lo/hi say "not ranked")."""

  r: jax.Array
  ranked: jax.Array
  grades: jax.Array
  ranks: Ranks


@dataclasses.dataclass(frozen=True)
class SoftFormula:
  """The soft counterpart of one exact metric: its formula and its public docstring."""

  formula: Callable  # (SoftRanks, k, Options, tau) -> (value, empty) per list
  doc: str  # the math and a runnable example; the options are added from jaxrank._core.options


# metric name -> its soft formula; the public functions are those the metric table names
# (``Metric.soft``), one per record, each checked to have its formula here.
SOFT_FORMULAS: dict[str, SoftFormula] = {}


def _register(name: str, doc: str) -> Callable[[Callable], Callable]:
  def register(formula: Callable) -> Callable:
    SOFT_FORMULAS[name] = SoftFormula(formula, doc)
    return formula
  return register


def _hits(x: SoftRanks, k, o: Options, tau):
  """(relevant slots, their number, each one's smooth cutoff weight c_i)."""
  rel = _formulas.relevant(x.ranks, o)
  nrel = jnp.sum(rel, axis=-1).astype(x.r.dtype)
  return rel, nrel, jnp.where(x.ranked, _cutoff(x.r, k, tau), 0.0)


def _dcg_of(x: SoftRanks, k, o: Options, tau, gains):
  weight = o.discount_fn(x.r) * jnp.where(x.ranked, _cutoff(x.r, k, tau), 0.0)
  gains = gains.astype(x.r.dtype)
  return jnp.sum(jnp.where((x.grades > 0) & (weight > 0), gains * weight, 0.0), axis=-1)


@_register("dcg", r"""Soft DCG at k: DCG at the soft ranks with a smooth cutoff.

  .. math:: \mathrm{DCG}@k = \sum_i \mathrm{gain}(y_i)\, \mathrm{discount}(r_i)\,
     \sigma\big((k + \tfrac12 - r_i)/\tau\big)

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.soft_dcg([[3.0, 2.0, 1.0]], [[0, 1, 1]], temperature=1e-3)[0]), 4)
    1.1309
""")
def _dcg(x, k, o, tau):
  return _dcg_of(x, k, o, tau, o.gain_of(x.grades)), ~jnp.any(x.grades > 0, axis=-1)


@_register("ndcg", r"""Soft NDCG at k (the softsort / ApproxNDCG family): soft DCG over the
  exact ideal DCG, which needs only the sorted grades.

  .. math:: \mathrm{NDCG}@k = \mathrm{DCG}@k(r) / \mathrm{IDCG}@k

  Range: non-negative, and 1 at most in the limit; soft ranks of several relevant items can
  overlap, so at large temperatures the value may slightly exceed the exact one.

  Example:
    >>> import jaxrank
    >>> round(float(jaxrank.soft_ndcg([[3.0, 2.0, 1.0]], [[1, 5, 3]], temperature=1e-3)[0]), 4)
    0.7649
""")
def _ndcg(x, k, o, tau):
  # Gains over the list's largest gain (no overflow; see relative_gains), as the exact NDCG.
  dcg = _dcg_of(x, k, o, tau, _formulas.relative_gains(x.grades, x.grades, o))
  ideal = _formulas.ideal_dcg(x.ranks, k, o, relative=True).astype(x.r.dtype)
  return _divide(dcg, ideal), ~(ideal > 0)


@_register("precision", r"""Soft precision at k, in [0, 1].

  .. math:: P@k = \sum_{i \text{ relevant}} \sigma\big((k + \tfrac12 - r_i)/\tau\big) / D

  ``D`` as in :func:`jaxrank.precision`.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.soft_precision([[3.0, 2.0, 1.0]], [[1, 0, 1]], k=2, temperature=1e-3)[0])
    0.5
""")
def _precision(x, k, o, tau):
  rel, nrel, c = _hits(x, k, o, tau)
  hits = jnp.sum(jnp.where(rel, c, 0.0), axis=-1)
  return hits / jnp.maximum(_formulas.precision_denominator(x.ranks, k, o), 1), nrel == 0


@_register("recall", r"""Soft recall at k, in [0, 1].

  .. math:: R@k = \sum_{i \text{ relevant}} \sigma\big((k + \tfrac12 - r_i)/\tau\big) / R

  Example:
    >>> import jaxrank
    >>> float(jaxrank.soft_recall([[3.0, 2.0, 1.0]], [[1, 0, 1]], k=2, temperature=1e-3)[0])
    0.5
""")
def _recall(x, k, o, tau):
  rel, nrel, c = _hits(x, k, o, tau)
  return _divide(jnp.sum(jnp.where(rel, c, 0.0), axis=-1), nrel), nrel == 0


@_register("hit_rate", r"""Soft hit rate at k: the probability that some relevant item is
  in the top k when each is independently with probability :math:`c_i`, in [0, 1].

  .. math:: HR@k = 1 - \prod_{i \text{ relevant}} \big(1 - \sigma((k + \tfrac12 - r_i)/\tau)\big)

  Example:
    >>> import jaxrank
    >>> float(jaxrank.soft_hit_rate([[3.0, 2.0, 1.0]], [[0, 0, 1]], k=2, temperature=1e-3)[0])
    0.0
""")
def _hit_rate(x, k, o, tau):
  rel, nrel, c = _hits(x, k, o, tau)
  return 1.0 - jnp.prod(jnp.where(rel, 1.0 - c, 1.0), axis=-1), nrel == 0


@_register("reciprocal_rank", r"""Soft reciprocal rank, in [0, 1].

  .. math:: RR@k = \max_{i \text{ relevant}} \sigma\big((k + \tfrac12 - r_i)/\tau\big) / r_i

  The max passes its gradient to the best-ranked relevant item.

  Example:
    >>> import jaxrank
    >>> float(jaxrank.soft_reciprocal_rank([[3.0, 2.0, 1.0]], [[0, 1, 1]], temperature=1e-3)[0])
    0.5
""")
def _reciprocal_rank(x, k, o, tau):
  rel, nrel, c = _hits(x, k, o, tau)
  return jnp.max(jnp.where(rel, c / x.r, 0.0), axis=-1, initial=0.0), nrel == 0


@_register("average_precision", r"""Soft average precision (Smooth-AP, Brown et al. 2020), in
  [0, 1].

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
def _average_precision(x, k, o, tau):
  # Smooth-AP: precision at each relevant item's soft rank, relevant items ahead by a sigmoid.
  rel, nrel, c = _hits(x, k, o, tau)
  r = x.r
  hits = jnp.sum(jnp.where(rel, c, 0.0), axis=-1)
  both = (rel & x.ranked)[..., None, :] & ~jnp.eye(r.shape[-1], dtype=bool)
  ahead = jnp.sum(jnp.where(both, jax.nn.sigmoid((r[..., :, None] - r[..., None, :]) / tau), 0.0),
                  axis=-1)
  total = jnp.sum(jnp.where(rel, c * (1.0 + ahead) / r, 0.0), axis=-1)
  if o.ap_denominator == "all" or k is None:
    denom = nrel if o.ap_denominator != "retrieved" else hits
  else:
    denom = jnp.minimum(nrel, min(k, r.shape[-1])) if o.ap_denominator == "min_k" else hits
  return _divide(total, denom), nrel == 0


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
  value, empty = SOFT_FORMULAS[name].formula(SoftRanks(r, ranked, grades, ranks_), k, options,
                                             tau)
  return _formulas.finish(value, empty, ranks_, options)


_INPUTS_DOC = """
  Inputs as the exact metrics' (dense ``scores``/``labels``/``where``), or the sparse form:
  ``relevant_ids``/``relevant_grades``: ``[..., r]`` ids in ``[0, n)`` of the relevant items
  (``-1`` pads) and their grades (default 1), instead of ``labels``. With dense labels and
  ``max_relevant=None`` the slots are counted from concrete labels, and are ``n`` under ``jit``:
  pass ``max_relevant`` there to keep the O(R n) cost. Lists without relevant items follow
  ``empty``; their value and gradient are finite.
"""


def _soft(metric: _table.Metric) -> Callable:
  """The public soft function of a metric of the table: its soft formula, the soft options."""
  name = metric.name
  if name not in SOFT_FORMULAS:
    raise AssertionError(f"the metric table names {metric.soft} as {name}'s soft form, but "
                         f"jaxrank._soft.metrics registers no soft formula for {name}")

  def soft_metric(scores: ArrayLike, labels: ArrayLike | None = None, *,
                  relevant_ids: ArrayLike | None = None,
                  relevant_grades: ArrayLike | None = None, **options) -> jax.Array:
    k = _checks.check_k(options["k"])
    temperature = _options.check("temperature", options["temperature"])
    tau = _options.check("cutoff_temperature", options["cutoff_temperature"])
    tau = temperature if tau is None else tau
    operator = _options.check("operator", options["operator"])
    formula_options = _options.make_options(**{n: options[n] for n in _options.SOFT
                                               if _options.declared(n).kind == "formula"})
    inputs = _inputs(scores, labels, relevant_ids, relevant_grades, options["where"],
                     options["max_relevant"])
    return _soft_metric(*inputs, temperature, tau, name=name, k=k, options=formula_options,
                        operator=operator)

  soft_metric.__name__ = soft_metric.__qualname__ = metric.soft
  doc = SOFT_FORMULAS[name].doc
  at = doc.index("\n  Example:")
  soft_metric.__doc__ = doc[:at] + _INPUTS_DOC + doc[at:]
  return _options.takes(_options.SOFT, after="relevant_grades")(soft_metric)


# One public soft function per metric whose record names a soft form (jaxrank.soft_ndcg, ...).
FUNCTIONS: dict[str, Callable] = {m.soft: _soft(m) for m in _table.METRICS.values() if m.soft}
_unnamed = sorted(set(SOFT_FORMULAS) - {m.name for m in _table.METRICS.values() if m.soft})
if _unnamed:
  raise AssertionError(f"soft formulas registered for {_unnamed}, whose records in the metric "
                       f"table name no soft form (Metric.soft)")
globals().update(FUNCTIONS)


def as_loss(metric: Callable) -> Callable:
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

  def loss(scores: ArrayLike, labels: ArrayLike | None = None, **options) -> jax.Array:
    values = metric(scores, labels, **options)
    ok = ~jnp.isnan(values) | _formulas.overflowed(values)  # an overflowed list is not empty
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


soft_ndcg_loss = _named_loss(FUNCTIONS["soft_ndcg"])
soft_average_precision_loss = _named_loss(FUNCTIONS["soft_average_precision"])
soft_reciprocal_rank_loss = _named_loss(FUNCTIONS["soft_reciprocal_rank"])
