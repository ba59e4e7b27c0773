"""Types of jaxrank's function-valued options and of the argument forms of its public API.

As Rax's ``types.py``: the protocols say what a callable passed to jaxrank must accept and
return (``gain=``, ``discount=``, the formulas of the metric table), and the aliases name the forms the public functions take (pytrec_eval-style dicts, random
keys). They are for type checkers and readers; nothing here runs while a metric is computed.

A callable matches a protocol by its positional parameters (the protocols' parameters are
positional-only, so the names are free):

  >>> import jax, jax.numpy as jnp
  >>> from jaxrank._core.types import Discount, Gain
  >>> def exp_gain(grades: jax.Array) -> jax.Array:
  ...   return jnp.exp2(grades) - 1
  >>> gain: Gain = exp_gain
  >>> discount: Discount = lambda rank: 1 / rank
  >>> gain(jnp.array([0.0, 1.0, 2.0])).tolist()
  [0.0, 1.0, 3.0]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, TypeAlias, TypeVar

import jax
from jax.typing import ArrayLike

# This module imports no other jaxrank module, so every module of the core can import it (no
# cycle, tests/test_layers.py): the types of the core's own classes are parameters.
RanksT = TypeVar("RanksT", contravariant=True)
OptionsT = TypeVar("OptionsT", contravariant=True)


class Gain(Protocol):
  """``gain=``: the gain of each grade, elementwise (``"linear"`` is ``y``, ``"exp2"`` is
  ``2^y - 1``). Called with the grades as a float array ``[..., m]``; returns an array of that
  shape (jaxrank converts it to the metrics' float dtype)."""

  def __call__(self, grades: jax.Array, /) -> ArrayLike: ...


class Discount(Protocol):
  """``discount=``: the weight of each 1-based rank, elementwise (default
  :func:`jaxrank.log2_discount`, ``1 / log2(1 + rank)``). Called with float ranks: a
  ``jax.Array``, or a float64 NumPy array when jaxrank tabulates the discount's prefix sums (the
  expected discount over a tie group); returns an array of the same shape."""

  def __call__(self, ranks: ArrayLike, /) -> ArrayLike: ...


class MetricFormula(Protocol[RanksT, OptionsT]):
  """The formula of a rank metric (``Metric.formula`` in :mod:`jaxrank._core.table`): from the
  rank core, the cutoff ``k`` (``None``: the whole list) and the formula options, each list's
  value and whether the list is empty (has nothing the metric counts), both ``[...]``; the
  ``empty`` policy is applied afterwards. Written ``MetricFormula[Ranks, Options]`` (the core's
  :class:`~jaxrank.Ranks` and ``jaxrank._core.formulas.Options``)."""

  def __call__(self, ranks: RanksT, k: int | None, options: OptionsT,
               /) -> tuple[jax.Array, jax.Array]: ...


# A metric function of the public API (``jaxrank.ndcg``, ``jaxrank.soft_ndcg``, ...):
# ``(scores, labels, **options) -> [...]`` per-list values.
MetricFn: TypeAlias = Callable[..., jax.Array]
# A loss (``jaxrank.as_loss(metric)``): the same arguments, a scalar.
LossFn: TypeAlias = Callable[..., jax.Array]

# ``gain=`` and ``discount=`` as the public functions take them.
GainOption: TypeAlias = str | Gain
DiscountOption: TypeAlias = Discount | None

# pytrec_eval's dicts: a run ``{qid: {docid: score}}`` and qrels ``{qid: {docid: grade}}``.
RunDict: TypeAlias = Mapping[str, Mapping[str, float]]
QrelsDict: TypeAlias = Mapping[str, Mapping[str, int]]
# Per-query values of one measure per system, ``{system: {qid: value}}`` (jaxrank.stats.align).
PerQueryDict: TypeAlias = Mapping[str, Mapping[str, float]]

# A JAX random key (``jax.random.key``) or an integer seed (jaxrank.stats' resampling).
Key: TypeAlias = jax.Array | int
