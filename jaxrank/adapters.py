"""The metric protocols Flax users already have: CLU's ``clu.metrics.Metric`` and metrax's.

Both return a metric *class* whose instances wrap a :class:`jaxrank.MetricState` (so the values
equal :func:`jaxrank.evaluate` with ``reduce="mean"`` over every batch seen, under every empty-list
policy). ``clu`` and ``metrax`` (and so ``flax``) are imported when an adapter is built, never by
``import jaxrank``.

* :func:`clu_metric` -- ``from_model_output(*, scores, labels, where=None, **_)`` (keyword
  arguments, as ``clu.metrics.Collection.single_from_model_output`` passes them; the names are
  options), ``merge``, ``reduce`` (over a leading device axis, as after ``all_gather``),
  ``empty`` and ``compute``. Usable as a field of a ``clu.metrics.Collection``.
* :func:`metrax_metric` -- metrax's calling convention: ``from_model_output(predictions,
  labels, where=None)`` positionally or by keyword (metrax's metrics are ``clu.metrics.Metric``
  subclasses too, so both mix in one ``Collection``).

One metric name gives a scalar from ``compute()``. Several names are computed in one pass over
the scores; :func:`clu_metric` then returns a ``clu.metrics.Collection`` whose ``compute()`` is
``{name: scalar}`` and ``compute_values()`` ``{name: clu.values.Scalar}``, one per metric, as CLU's
metric writers take them (subclass it to add the loss and other CLU metrics); :func:`metrax_metric`
returns one metric whose ``compute()`` is ``{name: value}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax

from jaxrank.state import MetricState

__all__ = ["clu_metric", "metrax_metric"]


def _build(base: Any, metrics: Sequence[str] | str, options: dict[str, Any], *, scores: str,
           labels: str, where: str, positional: bool) -> type:
  import flax  # optional dependency, imported only here

  template = MetricState.init(metrics, **options)

  @flax.struct.dataclass
  class JaxrankMetric(base):
    """A jaxrank :class:`~jaxrank.MetricState` in the ``clu.metrics.Metric`` protocol."""

    state: MetricState

    @classmethod
    def empty(cls) -> JaxrankMetric:
      return cls(state=template.reset())

    @classmethod
    def from_model_output(cls, *args: Any, **kwargs: Any) -> JaxrankMetric:
      if positional and args:
        kwargs.update(zip((scores, labels, where), args))
      elif args:
        raise TypeError(f"from_model_output takes keyword arguments ({scores}=..., "
                        f"{labels}=...), got {len(args)} positional")
      missing = [name for name in (scores, labels) if name not in kwargs]
      if missing:
        raise TypeError(f"from_model_output needs {' and '.join(missing)}; got "
                        f"{sorted(kwargs)}")
      state = template.reset().update(kwargs[scores], kwargs[labels], where=kwargs.get(where))
      return cls(state=state)

    def merge(self, other: JaxrankMetric) -> JaxrankMetric:
      return type(self)(state=self.state.merge(other.state))

    def reduce(self) -> JaxrankMetric:
      # A leading device axis (after all_gather or pmap): merged element by element.
      parts = [jax.tree_util.tree_map(lambda x, i=i: x[i], self.state)
               for i in range(self.state.count.shape[0])]
      out = parts[0]
      for p in parts[1:]:
        out = out.merge(p)
      return type(self)(state=out)

    def compute(self) -> Any:
      values = self.state.compute()
      return values[metrics] if isinstance(metrics, str) else values  # one name: its value

  JaxrankMetric.__name__ = JaxrankMetric.__qualname__ = (
      f"Jaxrank_{'_'.join(template.metrics)}".replace("@", "_at_"))
  return JaxrankMetric


def _collection(metric: type, names: tuple[str, ...]) -> type:
  """A ``clu.metrics.Collection`` holding ``metric`` (several names, one pass) in its field
  ``jaxrank``, whose ``compute()`` and ``compute_values()`` give one entry per name."""
  import flax  # optional dependencies, imported only here
  from clu import metrics as clu_metrics  # optional dependency
  from clu import values as clu_values

  class JaxrankCollection(clu_metrics.Collection):
    """jaxrank metrics as a ``clu.metrics.Collection``: one scalar per metric name."""

    __annotations__ = {"jaxrank": metric}  # what CLU reads its fields from

    def __init_subclass__(cls, **kwargs: Any) -> None:
      # CLU builds a collection from the class's own __annotations__: a subclass that adds the
      # loss (`loss: clu.metrics.Average.from_output("loss")`) keeps the jaxrank field.
      super().__init_subclass__(**kwargs)
      cls.__annotations__ = {"jaxrank": metric, **cls.__dict__.get("__annotations__", {})}

    @classmethod
    def from_model_output(cls, *args: Any, **kwargs: Any) -> JaxrankCollection:
      raise TypeError(f"clu_metric({list(names)}) is a clu.metrics.Collection (one scalar per "
                      "metric), not a field of one: subclass it to add fields, or use one "
                      "clu_metric(name) field per metric")

    def compute(self) -> dict[str, Any]:
      out = super().compute()
      return {**self._by_name(out.pop("jaxrank"), out), **out}

    def compute_values(self) -> dict[str, Any]:
      out = super().compute_values()
      out.pop("jaxrank")
      values = self._by_name(self.jaxrank.compute(), out)
      return {**{n: clu_values.Scalar(v) for n, v in values.items()}, **out}

    @staticmethod
    def _by_name(values: dict[str, Any], others: dict[str, Any]) -> dict[str, Any]:
      clash = sorted(set(values) & set(others))
      if clash:
        raise ValueError(f"the collection's field(s) {clash} have the name of a jaxrank metric; "
                         "rename them")
      return values

  JaxrankCollection.__name__ = JaxrankCollection.__qualname__ = metric.__name__ + "_Collection"
  return flax.struct.dataclass(JaxrankCollection)


def clu_metric(metrics: Sequence[str] | str, *, scores: str = "scores", labels: str = "labels",
               where: str = "where", **options: Any) -> type:
  """A ``clu.metrics.Metric`` class for a jaxrank metric (``options`` as :class:`MetricState`),
  or for several names a ``clu.metrics.Collection`` of them, computed in one pass.

  ``scores``, ``labels`` and ``where`` name the model-output keys read by
  ``from_model_output`` (e.g. ``scores="logits"``); ``where`` is optional at call time.

  With several names (a list), the class is a ``clu.metrics.Collection``: build it with
  ``single_from_model_output(scores=..., labels=...)`` (or ``gather_from_model_output`` in
  ``pmap``), ``merge``, ``compute()`` -> ``{name: scalar}`` and ``compute_values()`` ->
  ``{name: clu.values.Scalar}``, one per metric, what ``clu.metric_writers`` write. Subclass it
  (with ``flax.struct.dataclass``) to add CLU metrics such as the loss's
  ``clu.metrics.Average.from_output("loss")``.

  Example:
    >>> import jax.numpy as jnp
    >>> from jaxrank.adapters import clu_metric
    >>> NDCG = clu_metric("ndcg@2", gain="exp2")
    >>> m = NDCG.from_model_output(scores=jnp.array([[0.9, 0.8, 0.1]]),
    ...                            labels=jnp.array([[0, 1, 1]]))
    >>> m = m.merge(NDCG.from_model_output(scores=jnp.array([[0.2, 0.7, 0.1]]),
    ...                                    labels=jnp.array([[1, 0, 0]])))
    >>> round(float(m.compute()), 4)
    0.5089
    >>> Both = clu_metric(["ndcg@2", "mrr"])  # a clu.metrics.Collection
    >>> c = Both.single_from_model_output(scores=jnp.array([[0.9, 0.8, 0.1]]),
    ...                                   labels=jnp.array([[0, 1, 1]]))
    >>> {name: round(float(v), 4) for name, v in c.compute().items()}
    {'ndcg@2': 0.3869, 'mrr': 0.5}
  """
  from clu import metrics as clu_metrics  # metrax's metrics are clu Metrics

  metric = _build(clu_metrics.Metric, metrics, options, scores=scores, labels=labels,
                  where=where, positional=False)
  if isinstance(metrics, str):
    return metric
  return _collection(metric, tuple(MetricState.init(metrics, **options).metrics))


def metrax_metric(metrics: Sequence[str] | str, **options: Any) -> type:
  """A metrax-style metric class: ``from_model_output(predictions, labels, where=None)``.

  To reproduce metrax's own ranking metrics pass its conventions (``ties="first"``, and
  ``gain="exp2"`` for DCG/NDCG; see the README's table).

  Example:
    >>> import jax.numpy as jnp
    >>> from jaxrank.adapters import metrax_metric
    >>> MRR = metrax_metric("mrr", ties="first")
    >>> m = MRR.from_model_output(jnp.array([[0.2, 0.7, 0.1]]), jnp.array([[1, 0, 0]]))
    >>> float(m.merge(MRR.empty()).compute())
    0.5
  """
  from clu import metrics as clu_metrics

  return _build(clu_metrics.Metric, metrics, options, scores="predictions", labels="labels", where="where",
                positional=True)
