"""The soft (differentiable) formulas of the metrics, their registry and the soft metric kernel.

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

Each soft formula is registered once (:data:`SOFT_FORMULAS`, metric name -> formula and
docstring); :func:`kernel` evaluates one on the soft ranks of the relevant slots. The public
functions built from them are in :mod:`jaxrank._soft.metrics`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank._core import formulas as _formulas
from jaxrank._core.formulas import Options
from jaxrank._core.ranks import Ranks
from jaxrank._soft import operators as _softrank


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
def kernel(scores, valid, slot_index, ranked, grades, count, temperature, tau, *, name, k, options,
           operator):
  """The soft metric ``name`` of the slots' items (the inputs of a public soft function): soft ranks
  of the relevant slots by ``operator``, then the registered formula and the ``empty`` policy."""
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
