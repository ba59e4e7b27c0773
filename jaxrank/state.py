"""Mergeable metric state: metric means accumulated over batches, steps, devices and processes.

A :class:`MetricState` holds, for a fixed set of metric names and options, the running sum of the
per-list values of every metric and the number of lists that sum counts. Everything that
:func:`jaxrank.evaluate` with ``reduce="mean"`` does over one batch, a state does over any number
of them: :meth:`~MetricState.update` adds a batch, :meth:`~MetricState.merge` adds another state,
:meth:`~MetricState.psum` adds the states of every device of a ``shard_map``/``pmap`` axis, and
:meth:`~MetricState.compute` gives ``{name: mean}``, equal to ``evaluate(..., reduce="mean")`` on
the concatenated batches under every empty-list policy:

* ``empty="zero"``: every list counts; ``"nan"``: every list counts and one empty list makes the
  mean NaN (NaN propagates through the sums); ``"skip"``: only lists with a value count (the lists
  ``evaluate`` marks NaN are left out of both the sum and the count, as ``jaxrank.mean`` does),
  except a list with more relevant items than ``max_relevant``: it makes the mean NaN under
  every policy, never a plausible mean without it.

The state is an immutable pytree (its arrays are the leaves; the metric names and options are
static), so it is a ``jit`` argument and result, a ``lax.scan`` carry and a ``donate_argnums``
buffer, and :meth:`~MetricState.update` never synchronises with the host under ``jit`` (the state
carries ``max_relevant``, the relevant-slot bound that traced labels need). Sums are kept as
compensated (value, error) pairs in the metrics' float dtype, so a million lists summed batch by
batch in float32 lose no more than one batch sum does.

:class:`HostMetricState` is the same for host streams through :mod:`jaxrank.numpy`: ragged batches
of any size (padded on the host to few shapes, so a stream compiles a handful of times), float64
values, and sums kept exactly enough that :meth:`~HostMetricState.compute` is the correctly
rounded mean of every list seen.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core import compute as _compute
from jaxrank._core import metrics as _metrics
from jaxrank._core import options as _options
from jaxrank._core.formulas import Options
from jaxrank._core.names import DEFAULT_METRICS
from jaxrank._core.ranks import Ranks

__all__ = ["HostMetricState", "MetricState"]


def _two_sum(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
  """``a + b`` rounded, and its rounding error (Knuth's TwoSum; exact in any float dtype)."""
  s = a + b
  bb = s - a
  err = (a - (s - bb)) + (b - bb)
  return s, jnp.where(jnp.isfinite(s), err, 0.0)


def _add(total: jax.Array, error: jax.Array, value: jax.Array,
         value_error: jax.Array | float = 0.0) -> tuple[jax.Array, jax.Array]:
  """Compensated ``(total, error) + (value, value_error)``."""
  s, e = _two_sum(total, value)
  return s, error + value_error + e


def _check_config(a: MetricState, b: Any, what: str) -> None:
  if not isinstance(b, MetricState):
    raise TypeError(f"{what} needs another MetricState, got {type(b).__name__}")
  mine = (a.metrics, a.options, a.max_relevant, a.method)
  theirs = (b.metrics, b.options, b.max_relevant, b.method)
  if mine != theirs:
    raise ValueError(f"{what}: the states hold different metrics or options: "
                     f"{a.metrics}, {a.options} vs {b.metrics}, {b.options}")


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["total", "error", "count"],
    meta_fields=["metrics", "specs", "options", "max_relevant", "method"],
)
@dataclasses.dataclass(frozen=True)
class MetricState:
  r"""Sums and list counts of some metrics over every batch seen; ``compute()`` gives the means.

  For each metric :math:`m` the state holds :math:`S_m = \sum_{l} v_m(l)` over the counted lists
  :math:`l` (every list, or with ``empty="skip"`` those with a value) and their number
  :math:`N_m`; :meth:`compute` returns :math:`S_m / N_m`. ``total + error`` is the compensated sum
  (``error`` the rounding error of ``total``); ``count`` is int32.

  Build one with :meth:`init`; every method returns a new state.

  Example:
    >>> import jax, jax.numpy as jnp, jaxrank
    >>> state = jaxrank.MetricState.init(["map", "ndcg@2"])
    >>> state = state.update([[0.9, 0.8, 0.1]], [[0, 1, 1]])
    >>> step = jax.jit(lambda s, x, y: s.update(x, y))  # jit-able: no host synchronisation
    >>> state = step(state, jnp.array([[0.2, 0.7, 0.1]]), jnp.array([[1, 0, 0]]))
    >>> {k: round(float(v), 4) for k, v in state.compute().items()}
    {'map': 0.5417, 'ndcg@2': 0.5089}
  """

  total: jax.Array
  error: jax.Array
  count: jax.Array
  metrics: tuple[str, ...]
  specs: tuple[tuple[str, int | None], ...]
  options: Options
  max_relevant: int | None = None
  method: str = "auto"

  @classmethod
  @_options.takes(_options.FACE_OPTIONS + ("max_relevant", "method"))
  def init(cls, metrics: Sequence[str] | str = DEFAULT_METRICS,
           **options: Any) -> MetricState:
    """An empty state for ``metrics`` (names as in :func:`jaxrank.evaluate`) and options.

    ``max_relevant`` bounds the relevant items per list of every batch given to :meth:`update`
    under ``jit`` (see :func:`jaxrank.from_dense`; ``None``: read from concrete labels, or when
    traced 64 slots while no list has more relevant items, else one slot per item, picked at
    run time). ``method`` is as in :func:`jaxrank.evaluate`.

    Example:
      >>> import jaxrank
      >>> s = jaxrank.MetricState.init("mrr", empty="skip")
      >>> s.metrics, s.count.tolist()
      (('mrr',), [0])
    """
    names = tuple(_compute.metric_list(metrics))
    max_relevant, method = options.pop("max_relevant"), options.pop("method")
    formula_options = _compute.make_options(**options)
    specs = tuple(_metrics.parse_metric(name) for name in names)
    if max_relevant is not None:
      max_relevant = _checks.check_k(max_relevant, "max_relevant")
    if method not in ("auto", "count", "sort"):
      raise ValueError(f"method must be one of ['auto', 'count', 'sort'], got {method!r}")
    # The metrics' dtype. (jax.config's options are dynamic attributes, unknown to mypy.)
    x64 = jax.config.jax_enable_x64  # type: ignore[attr-defined]
    dtype = jnp.float64 if x64 else jnp.float32
    return cls(total=jnp.zeros((len(names),), dtype), error=jnp.zeros((len(names),), dtype),
               count=jnp.zeros((len(names),), jnp.int32),
               metrics=names, specs=specs, options=formula_options, max_relevant=max_relevant,
               method=method)

  def reset(self) -> MetricState:
    """The same metrics and options with nothing counted (CLU's ``empty()``).

    Example:
      >>> import jaxrank
      >>> s = jaxrank.MetricState.init("mrr").update([[0.1, 0.2]], [[1, 0]])
      >>> s.count.tolist(), s.reset().count.tolist()
      ([1], [0])
    """
    return dataclasses.replace(self, total=jnp.zeros_like(self.total),
                               error=jnp.zeros_like(self.error),
                               count=jnp.zeros_like(self.count))

  def values(self, scores: ArrayLike | Ranks, labels: ArrayLike | None = None, *,
             where: ArrayLike | None = None,
             tie_key: ArrayLike | None = None) -> dict[str, jax.Array]:
    """Per-list values of the state's metrics on one batch (what :meth:`update` adds up).

    Example:
      >>> import jaxrank
      >>> s = jaxrank.MetricState.init("mrr")
      >>> s.values([[0.1, 0.2], [0.3, 0.1]], [[1, 0], [1, 0]])["mrr"].tolist()
      [0.5, 1.0]
    """
    return dict(zip(self.metrics, self._values(scores, labels, where, tie_key)[0]))

  def _values(self, scores: ArrayLike | Ranks, labels: ArrayLike | None, where: ArrayLike | None,
              tie_key: ArrayLike | None) -> tuple[tuple[jax.Array, ...], jax.Array]:
    """The per-list values and the lists' overflow flags (``Ranks.overflow``), as
    :func:`jaxrank.evaluate` computes them (cut at the largest cutoff, and under ``jit``
    without ``max_relevant`` few slots when the lists allow: :data:`jaxrank._core.dense.TRACED_SLOTS`)."""
    return _compute.compute(scores, labels, self.specs, self.options, where=where,
                            tie_key=tie_key, max_relevant=self.max_relevant, method=self.method,
                            with_overflow=True)

  def update(self, scores: ArrayLike | Ranks, labels: ArrayLike | None = None, *,
             where: ArrayLike | None = None, tie_key: ArrayLike | None = None,
             list_mask: ArrayLike | None = None) -> MetricState:
    """Adds one batch: dense ``scores``/``labels`` ``[..., n]`` (``where`` masks padding items)
    or any :class:`jaxrank.Ranks` (then no ``labels``).

    ``list_mask`` (``[...]`` bool, the batch's leading shape) drops whole lists: False lists are
    not counted at all, under every ``empty`` policy. Use it for lists added only to make a batch
    divide evenly over devices; a list whose items are all ``where=False`` is instead an *empty*
    list, counted as the ``empty`` policy says.

    Example:
      >>> import jaxrank
      >>> s = jaxrank.MetricState.init("mrr").update(
      ...     [[0.1, 0.2], [0.3, 0.1]], [[1, 0], [1, 0]], list_mask=[True, False])
      >>> s.count.tolist(), float(s.compute()["mrr"])
      ([1], 0.5)
    """
    values, overflow = self._values(scores, labels, where, tie_key)
    lead = overflow.shape
    mask = None
    if list_mask is not None:
      mask = jnp.asarray(list_mask)
      if mask.dtype != jnp.bool_ or mask.shape != lead:
        raise ValueError(f"list_mask must be a bool array of the lists' shape {lead}, got "
                         f"{mask.dtype} of shape {mask.shape}")
    return self._add_values(tuple(values), overflow, mask)

  @jax.jit
  def _add_values(self, values: tuple[jax.Array, ...], overflow: jax.Array,
                  mask: jax.Array | None) -> MetricState:
    sums, counts = [], []
    for v in values:
      keep = jnp.ones(v.shape, bool) if mask is None else mask
      if self.options.empty == "skip":
        # an overflowed list (NaN, more relevant items than max_relevant) is not an empty one:
        # it stays in the sum, which makes the mean NaN
        keep = keep & (~jnp.isnan(v) | overflow)
      sums.append(jnp.sum(jnp.where(keep, v, 0.0), dtype=self.total.dtype))
      counts.append(jnp.sum(keep, dtype=jnp.int32))
    total, error = _add(self.total, self.error, jnp.stack(sums))
    return dataclasses.replace(self, total=total, error=error,
                               count=self.count + jnp.stack(counts))

  def merge(self, other: MetricState) -> MetricState:
    """The state of both states' batches together (same metrics and options).

    Example:
      >>> import jaxrank
      >>> a = jaxrank.MetricState.init("mrr").update([[0.1, 0.2]], [[1, 0]])
      >>> b = jaxrank.MetricState.init("mrr").update([[0.3, 0.1]], [[1, 0]])
      >>> float(a.merge(b).compute()["mrr"])
      0.75
    """
    _check_config(self, other, "merge")
    total, error = _add(self.total, self.error, other.total, other.error)
    return dataclasses.replace(self, total=total, error=error, count=self.count + other.count)

  def psum(self, axis_name: Any) -> MetricState:
    """The merged state of every device along ``axis_name`` (in ``shard_map``/``pmap`` bodies).

    One ``lax.psum`` of the sums, their errors and the counts; every device gets the result.
    Sum only what each device added: in a loop whose carried state is replicated, psum a state
    of this step's batch and merge it, ``state.merge(state.reset().update(s, y).psum("data"))``.

    Example:
      >>> import jax, jaxrank
      >>> s = jaxrank.MetricState.init("mrr")
      >>> f = jax.vmap(lambda s, x, y: s.update(x, y).psum("d"), in_axes=(None, 0, 0),
      ...              axis_name="d")
      >>> out = f(s, jax.numpy.array([[[0.1, 0.2]], [[0.3, 0.1]]]), jax.numpy.array([[[1, 0]],
      ...         [[1, 0]]]))
      >>> out.count.tolist(), out.compute()["mrr"].tolist()
      ([[2], [2]], [0.75, 0.75])
    """
    total, error, count = jax.lax.psum((self.total, self.error, self.count), axis_name)
    total, err = _two_sum(total, error)
    return dataclasses.replace(self, total=total, error=err, count=count)

  def compute(self) -> dict[str, jax.Array]:
    """``{name: mean}``: each metric's sum over its counted lists (NaN when none was counted).

    Example:
      >>> import jaxrank
      >>> s = jaxrank.MetricState.init(["mrr", "p@1"], empty="skip")
      >>> s = s.update([[0.1, 0.2], [0.3, 0.1], [0.5, 0.4]], [[1, 0], [1, 0], [0, 0]])
      >>> {k: float(v) for k, v in s.compute().items()}
      {'mrr': 0.75, 'p@1': 0.5}
    """
    means = (self.total + self.error) / self.count.astype(self.total.dtype)
    return {name: means[..., i] for i, name in enumerate(self.metrics)}


# ----------------------------------------------------------------------------------------------
# The host face.


def _exact_add(hi: float, lo: float, values: np.ndarray) -> tuple[float, float]:
  """``(hi, lo)`` + the sum of ``values``: ``hi`` the correctly rounded sum, ``lo`` the rest."""
  parts = [hi, lo, *values.tolist()]
  new_hi = math.fsum(parts)
  return new_hi, (math.fsum([*parts, -new_hi]) if math.isfinite(new_hi) else 0.0)


@dataclasses.dataclass(frozen=True)
class HostMetricState:
  r"""Metric means over a stream of host batches, through :mod:`jaxrank.numpy` (float64).

  Batches may be NumPy arrays or ragged lists of any size (:meth:`update`: scores and labels, as
  :func:`jaxrank.numpy.evaluate`; :meth:`update_ranked`: ranked ids and relevant ids, as
  :func:`jaxrank.numpy.evaluate_ranked`). Shapes are padded to few buckets, so a stream does not
  compile per batch. Sums are kept exactly enough (a correctly rounded sum and its remainder,
  :func:`math.fsum`) that :meth:`compute` is :math:`\mathrm{fl}(\sum_l v_l) / N` over every list
  seen, whatever the batching; ``merge`` combines the streams of several workers.

  Example:
    >>> from jaxrank.state import HostMetricState
    >>> s = HostMetricState.init(["map", "mrr"])
    >>> s = s.update([[0.9, 0.8, 0.1]], [[0, 1, 1]]).update([[0.2, 0.7], [0.1]], [[1, 0], [1]])
    >>> {k: round(v, 4) for k, v in s.compute().items()}
    {'map': 0.6944, 'mrr': 0.6667}
  """

  metrics: tuple[str, ...]
  options: dict[str, Any]
  sums: tuple[tuple[float, float], ...]
  counts: tuple[int, ...]

  @classmethod
  @_options.takes(_options.FACE_OPTIONS, first=("ties",))
  def init(cls, metrics: Sequence[str] | str = DEFAULT_METRICS,
           **options: Any) -> HostMetricState:
    """An empty host state; options as in :func:`jaxrank.numpy.evaluate`.

    Example:
      >>> from jaxrank.state import HostMetricState
      >>> HostMetricState.init("ndcg@10", empty="skip").counts
      (0,)
    """
    names = tuple(_compute.metric_list(metrics))
    for name in names:
      _metrics.parse_metric(name)
    ties = options["ties"]
    _compute.make_options(**{**options, "ties": "first" if ties == "trec" else ties})
    return cls(metrics=names, options=options, sums=((0.0, 0.0),) * len(names),
               counts=(0,) * len(names))

  def _add(self, out: dict[str, Any]) -> HostMetricState:
    sums, counts = [], []
    for name, (hi, lo), n in zip(self.metrics, self.sums, self.counts):
      v = out[name]
      v = np.asarray(list(v.values()) if isinstance(v, dict) else v, np.float64).reshape(-1)
      if self.options["empty"] == "skip":
        v = v[~np.isnan(v)]
      sums.append(_exact_add(hi, lo, v))
      counts.append(n + v.size)
    return dataclasses.replace(self, sums=tuple(sums), counts=tuple(counts))

  def update(self, scores: Any, labels: Any, *, where: Any = None) -> HostMetricState:
    """Adds a batch of scored lists (arrays ``[..., n]`` or ragged lists of lists).

    Example:
      >>> from jaxrank.state import HostMetricState
      >>> HostMetricState.init("mrr").update([[0.1, 0.2], [0.5]], [[1, 0], [1]]).counts
      (2,)
    """
    # Loaded here, not at the top: `jaxrank.MetricState` (this module) stays free of the NumPy
    # face, the TREC layer and io (tests/test_layers.py lists this import). No cycle: the NumPy
    # face does not import this module.
    from jaxrank import numpy as jrn
    return self._add(jrn.evaluate(scores, labels, list(self.metrics), where=where,
                                  **self.options))

  def update_ranked(self, recommended: Any, relevant: Any,
                    relevant_grades: Any = None) -> HostMetricState:
    """Adds a batch of ranked id lists and their relevant ids (lists, ``-1``-padded arrays or
    ``{user: ...}`` dicts, as :func:`jaxrank.numpy.evaluate_ranked`).

    Example:
      >>> from jaxrank.state import HostMetricState
      >>> s = HostMetricState.init(["recall@2"]).update_ranked({"a": [3, 1]}, {"a": {1, 7}})
      >>> s.compute()
      {'recall@2': 0.5}
    """
    from jaxrank import numpy as jrn
    opts = {k: v for k, v in self.options.items() if k != "ties"}
    return self._add(jrn.evaluate_ranked(recommended, relevant, list(self.metrics),
                                         relevant_grades=relevant_grades, **opts))

  def merge(self, other: HostMetricState) -> HostMetricState:
    """Both streams together.

    Example:
      >>> from jaxrank.state import HostMetricState
      >>> a = HostMetricState.init("mrr").update([[0.1, 0.2]], [[1, 0]])
      >>> a.merge(HostMetricState.init("mrr").update([[0.5]], [[1]])).compute()
      {'mrr': 0.75}
    """
    if not isinstance(other, HostMetricState):
      raise TypeError(f"merge needs another HostMetricState, got {type(other).__name__}")
    if (self.metrics, self.options) != (other.metrics, other.options):
      raise ValueError(f"merge: the states hold different metrics or options: {self.metrics}, "
                       f"{self.options} vs {other.metrics}, {other.options}")
    sums = tuple(_exact_add(hi, lo, np.asarray(o)) for (hi, lo), o in zip(self.sums, other.sums))
    return dataclasses.replace(self, sums=sums,
                               counts=tuple(a + b for a, b in zip(self.counts, other.counts)))

  def compute(self) -> dict[str, float]:
    """``{name: mean}`` as Python floats (NaN where no list was counted).

    Example:
      >>> from jaxrank.state import HostMetricState
      >>> HostMetricState.init("mrr").compute()
      {'mrr': nan}
    """
    return {name: (hi / n if n else math.nan)
            for name, (hi, _), n in zip(self.metrics, self.sums, self.counts)}
