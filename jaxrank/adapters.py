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

One metric name gives a scalar from ``compute()``; several give ``{name: value}`` (one pass over
the scores for all of them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax

from jaxrank.state import MetricState

__all__ = ["clu_metric", "metrax_metric"]


def _build(base, metrics, options, *, scores, labels, where, positional):
  import flax  # noqa: PLC0415 - optional dependency, imported only here

  template = MetricState.init(metrics, **options)
  single = isinstance(metrics, str)

  @flax.struct.dataclass
  class JaxrankMetric(base):
    """A jaxrank :class:`~jaxrank.MetricState` in the ``clu.metrics.Metric`` protocol."""

    state: MetricState

    @classmethod
    def empty(cls):
      return cls(state=template.reset())

    @classmethod
    def from_model_output(cls, *args, **kwargs):
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

    def merge(self, other):
      return type(self)(state=self.state.merge(other.state))

    def reduce(self):
      # A leading device axis (after all_gather or pmap): merged element by element.
      parts = [jax.tree_util.tree_map(lambda x, i=i: x[i], self.state)
               for i in range(self.state.count.shape[0])]
      out = parts[0]
      for p in parts[1:]:
        out = out.merge(p)
      return type(self)(state=out)

    def compute(self):
      values = self.state.compute()
      return values[metrics] if single else values

  JaxrankMetric.__name__ = JaxrankMetric.__qualname__ = (
      f"Jaxrank_{'_'.join(template.metrics)}".replace("@", "_at_"))
  return JaxrankMetric


def clu_metric(metrics: Sequence[str] | str, *, scores: str = "scores", labels: str = "labels",
               where: str = "where", **options: Any) -> type:
  """A ``clu.metrics.Metric`` class for jaxrank metrics (``options`` as :class:`MetricState`).

  ``scores``, ``labels`` and ``where`` name the model-output keys read by
  ``from_model_output`` (e.g. ``scores="logits"``); ``where`` is optional at call time.

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
  """
  from clu import metrics as clu_metrics  # noqa: PLC0415 - optional dependency

  return _build(clu_metrics.Metric, metrics, options, scores=scores, labels=labels, where=where,
                positional=False)


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
  from clu import metrics as clu_metrics  # noqa: PLC0415 - metrax's metrics are clu Metrics

  return _build(clu_metrics.Metric, metrics, options, scores="predictions", labels="labels", where="where",
                positional=True)
