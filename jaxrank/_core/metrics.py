"""The public metric functions: one per record of the metric table (:mod:`jaxrank._core.table`).

Every function takes dense ``scores [..., n]`` and ``labels [..., n]`` (or a :class:`jaxrank.Ranks`
from any input form) and returns one value per list, shaped like the leading dimensions. Its
keyword-only options are exactly those the metric reads (``inspect.signature`` shows them), each
declared once in :mod:`jaxrank._core.options`; any other option is a ``TypeError`` naming the metric
and the option. :func:`jaxrank.evaluate` takes every option and applies each to the metrics that
read it.

NaN scores rank below every number and tie with each other; they never make a metric NaN.

Example:
  >>> import inspect, jaxrank
  >>> list(inspect.signature(jaxrank.rbp).parameters)[2:5]
  ['k', 'where', 'threshold']
"""

from __future__ import annotations

import inspect
from typing import Any

import jax

from jaxrank._core import checks as _checks
from jaxrank._core import evaluate as _evaluate
from jaxrank._core import options as _options
from jaxrank._core import table as _table
from jaxrank._core.options import OPTIONS


def accepted(metric: _table.Metric) -> tuple[str, ...]:
  """The options a metric's function takes, in the order of :data:`jaxrank._core.options.OPTIONS`."""
  return tuple(name for name in OPTIONS if name in _options.COMMON or name in metric.options)


def _signature(names: tuple[str, ...]) -> inspect.Signature:
  params = [inspect.Parameter("scores", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              annotation="ArrayLike | Ranks"),
            inspect.Parameter("labels", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                              annotation="ArrayLike | None")]
  params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=OPTIONS[name].default,
                               annotation=OPTIONS[name].annotation) for name in names]
  return inspect.Signature(params, return_annotation="jax.Array")


def _function(metric: _table.Metric):
  names = accepted(metric)
  defaults = {name: OPTIONS[name].default for name in names}
  formula_names = tuple(name for name in names if OPTIONS[name].kind == "formula")

  def function(scores: Any, labels: Any = None, **options: Any) -> jax.Array:
    wrong = [name for name in options if name not in defaults]
    if wrong:
      raise TypeError(f"{metric.name}() takes no option {wrong[0]!r}; its options are "
                      f"{', '.join(names)}")
    values = {**defaults, **options}
    k = _checks.check_k(values["k"])
    formula_options = _options.make_options(**{name: values[name] for name in formula_names})
    (value,) = _evaluate.compute(scores, labels, [(metric.name, k)], formula_options,
                                 where=values["where"], tie_key=values["tie_key"],
                                 max_relevant=values["max_relevant"], method=values["method"],
                                 judged=values.get("judged"))
    return value

  function.__name__ = function.__qualname__ = metric.name
  function.__signature__ = _signature(names)
  lines = "".join(f"    {name}: {OPTIONS[name].doc}\n" for name in names)
  function.__doc__ = metric.doc + f"\n  Options:\n{lines}"
  return function


for _metric in _table.METRICS.values():
  globals()[_metric.name] = _function(_metric)
del _metric

__all__ = list(_table.NAMES)
