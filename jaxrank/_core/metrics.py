"""The public metric API: one function per record of the metric table
(:mod:`jaxrank._core.table`), and :func:`evaluate`, :func:`mean`, :func:`parse_metric`.

Every metric function takes dense ``scores [..., n]`` and ``labels [..., n]`` (or a
:class:`jaxrank.Ranks` from any input form) and returns one value per list, shaped like the
leading dimensions. Its keyword-only options are exactly those the metric reads
(``inspect.signature`` shows them), each declared once in :mod:`jaxrank._core.options`; any other
option is a ``TypeError`` naming the metric and the option. :func:`evaluate` takes every option
and applies each to the metrics that read it. All of them end in the one compute dispatch,
:mod:`jaxrank._core.compute`.

NaN scores rank below every number and tie with each other; they never make a metric NaN.

Example:
  >>> import inspect, jaxrank
  >>> list(inspect.signature(jaxrank.rbp).parameters)[2:5]
  ['k', 'where', 'threshold']
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core import formulas as _formulas
from jaxrank._core import irnames as _irnames
from jaxrank._core import options as _options
from jaxrank._core import table as _table
from jaxrank._core.compute import (check_used, compute, make_options, metric_list,
                                   metrics_second, skip_mean)
from jaxrank._core.names import DEFAULT_METRICS, parse_metric
from jaxrank._core.options import OPTIONS
from jaxrank._core.ranks import Ranks


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
    (value,) = compute(scores, labels, [(metric.name, k)], formula_options,
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

__all__ = [*_table.NAMES, "evaluate", "mean", "parse_metric"]


def _resolve(name: str, where: str = "jaxrank.evaluate"):
  """``(spec, options, gains)`` of one of :func:`evaluate`'s names: jaxrank's (``"ndcg@10"``,
  ``"map"``; no options of their own) or ir_measures' (``"P(rel=2)@5"``,
  ``"nDCG(gains={0:0,1:1,2:3})@10"``: the options and the grade map written in the name, see
  :mod:`jaxrank._core.irnames`).

  Example:
    >>> _resolve("P(rel=2)@5"), _resolve("p@5")  # doctest globals: this module's
    ((('precision', 5), (('threshold', 2),), None), (('precision', 5), (), None))
  """
  if not _irnames.is_name(name):
    return parse_metric(name), (), None
  target = _irnames.parse(name)
  if not _irnames.available(target):
    raise _irnames.not_in_core(target, where)
  return (target.core, target.k), target.options, target.gains


def mean(values: ArrayLike | Mapping[str, ArrayLike], *, empty: str = "zero"):
  """Mean over lists honouring the empty-list policy.

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
  _checks.check_choice("empty", empty, _formulas.EMPTY)
  if isinstance(values, Mapping):
    return {name: mean(v, empty=empty) for name, v in values.items()}
  values = _checks.as_array("values", values, kinds="fib")
  return skip_mean(values, _formulas.overflowed(values)) if empty == "skip" else jnp.mean(values)


# evaluate's keyword parameters in signature order: every option, each declared once in
# jaxrank._core.options (defaults, annotations, documentation), and its own ``reduce``.
_EVALUATE_PARAMETERS = ("where", "threshold", "gain", "discount", "ties", "tie_key", "judged",
                        "empty", "ap_denominator", "precision_denominator", "beta", "persistence",
                        "max_grade", "graded", "reduce", "max_relevant", "method")


@_options.takes(_EVALUATE_PARAMETERS)
def evaluate(scores: ArrayLike | Ranks, labels: ArrayLike | Sequence[str] | None = None,
             metrics: Sequence[str] = DEFAULT_METRICS, *, reduce: str | None = None,
             **options: Any) -> dict[str, jax.Array]:
  """Computes many metrics at many cutoffs from one rank core (one pass over the scores).

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

  Example:
    >>> import jaxrank
    >>> out = jaxrank.evaluate([[0.9, 0.8, 0.1]], [[0, 1, 1]], ["map", "ndcg@2"])
    >>> {k: round(float(v[0]), 4) for k, v in out.items()}
    {'map': 0.5833, 'ndcg@2': 0.3869}
  """
  labels, metrics = metrics_second(scores, labels, metrics, DEFAULT_METRICS)
  metrics = metric_list(metrics)
  if reduce not in (None, "mean"):
    raise ValueError(f"reduce must be None or 'mean', got {reduce!r}")
  given = {name: options[name] for name in _options.FORMULA_OPTIONS}
  where, tie_key, judged = options["where"], options["tie_key"], options["judged"]
  max_relevant, method, empty = options["max_relevant"], options["method"], options["empty"]
  make_options(**given)  # checked even when every name sets its own
  resolved = [_resolve(name) for name in metrics]
  check_used({**given, "judged": judged}, [spec[0] for spec, _, _ in resolved])
  # One rank-core pass per distinct (options written in the names, grade map): usually one.
  groups: dict[tuple, list[int]] = {}
  for i, (_, own, gains) in enumerate(resolved):
    groups.setdefault((own, gains), []).append(i)
  values: list[Any] = [None] * len(metrics)
  overflow: list[Any] = [None] * len(metrics)
  for (own, gains), at in groups.items():
    if gains is not None and (isinstance(scores, Ranks) or labels is None):
      raise ValueError(f"metric {metrics[at[0]]!r} maps grades (gains=...): it needs dense "
                       f"scores and labels, not a Ranks")
    group_labels = labels if gains is None else _irnames.map_grades(labels, gains)
    got, flag = compute(scores, group_labels, [resolved[i][0] for i in at],
                        make_options(**{**given, **dict(own)}), where=where, tie_key=tie_key,
                        max_relevant=max_relevant, method=method, judged=judged,
                        with_overflow=True)
    for i, v in zip(at, got):
      values[i], overflow[i] = v, flag
  out = dict(zip(metrics, values))
  if reduce != "mean":
    return out
  # the lists' overflow flags, not only the values' NaN marks, decide the skip means
  return {name: skip_mean(v, flag) if empty == "skip" else jnp.mean(v)
          for (name, v), flag in zip(out.items(), overflow)}
