"""``evaluate``: many metrics and cutoffs from one pass over the scores, and their mean."""

from __future__ import annotations

import functools
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core import formulas as _formulas
from jaxrank._core import irnames as _irnames
from jaxrank._core import options as _options
from jaxrank._core import dense as _dense
from jaxrank._core import table as _table
from jaxrank._core.formulas import Options
from jaxrank._core.ranks import Ranks

# evaluate's names, from the metric table (one record per metric): aliases -> metric names.
ALIASES = _table.ALIASES
NAMES = _table.NAMES


def parse_metric(name: str) -> tuple[str, int | None]:
  """``"ndcg@10"`` -> ``("ndcg", 10)``; ``"map"`` -> ``("average_precision", None)``.

  Example:
    >>> import jaxrank
    >>> jaxrank.parse_metric("mrr@10")
    ('reciprocal_rank', 10)
  """
  if not isinstance(name, str):
    raise TypeError(f"metric names must be strings, got {name!r}")
  match = re.fullmatch(r"\s*([A-Za-z_][A-Za-z_0-9]*)\s*(?:@\s*(\S+))?\s*", name)
  base = match.group(1).lower() if match else None
  base = ALIASES.get(base, base)
  if base not in _table.METRICS:
    known = ", ".join(list(NAMES) + sorted(ALIASES))
    raise ValueError(f"unknown metric {name!r}; known names (each optionally with @k): {known}")
  cut = match.group(2)
  if cut is None:
    return base, None
  if not _table.METRICS[base].cutoff:
    raise ValueError(f"metric {name!r}: {base} takes no cutoff (as trec_eval and ir_measures)")
  if not re.fullmatch(r"[0-9]+", cut) or int(cut) <= 0:
    raise ValueError(f"metric {name!r}: the cutoff after '@' must be a positive integer, "
                     f"got {cut!r}")
  return base, int(cut)


def resolve(name: str, where: str = "jaxrank.evaluate"):
  """``(spec, options, gains)`` of one of :func:`evaluate`'s names: jaxrank's (``"ndcg@10"``,
  ``"map"``; no options of their own) or ir_measures' (``"P(rel=2)@5"``,
  ``"nDCG(gains={0:0,1:1,2:3})@10"``: the options and the grade map written in the name, see
  :mod:`jaxrank._core.irnames`).

  Example:
    >>> from jaxrank._core import evaluate as _evaluate
    >>> _evaluate.resolve("P(rel=2)@5"), _evaluate.resolve("p@5")
    ((('precision', 5), (('threshold', 2),), None), (('precision', 5), (), None))
  """
  if not _irnames.is_name(name):
    return parse_metric(name), (), None
  target = _irnames.parse(name)
  if not _irnames.available(target):
    raise _irnames.not_in_core(target, where)
  return (target.core, target.k), target.options, target.gains


def metric_list(metrics: Any) -> list[str]:
  """``metrics`` as a non-empty list of names: one string or an iterable of them."""
  if isinstance(metrics, str):
    return [metrics]
  if metrics is None or isinstance(metrics, (bytes, numbers.Number)) or not hasattr(
      metrics, "__iter__"):
    raise TypeError(f"metrics must be a metric name or a list of names, got {metrics!r}")
  metrics = list(metrics)  # a generator is read once
  if not metrics:
    raise ValueError("metrics must name at least one metric, got an empty list")
  return metrics


# Every option is declared and checked once, in jaxrank._core.options.
make_options = _options.make_options
probe = _options.probe


def as_ranks(scores: Any, labels: Any, *, where, tie_key, ties, max_relevant, method) -> Ranks:
  """Passes a :class:`Ranks` through, or builds the exact one of dense ``(scores, labels)``."""
  if isinstance(scores, Ranks):
    return ranks_given(scores, labels, where=where, tie_key=tie_key, max_relevant=max_relevant)
  return _dense.dense_ranks(*dense_given(scores, labels, where), ties=rank_ties(ties),
                            tie_key=tie_key, max_relevant=max_relevant, method=method, cut=None)


def ranks_given(ranks: Ranks, labels, *, where, tie_key, max_relevant, judged=None) -> Ranks:
  """A :class:`Ranks` passed as scores, checked to come without what it already holds."""
  extra = {"labels": labels, "where": where, "tie_key": tie_key, "max_relevant": max_relevant,
           "judged": judged}
  given = [name for name, value in extra.items() if value is not None]
  if given:
    raise ValueError(f"{', '.join(given)} must be None when a Ranks is passed (the Ranks "
                     f"already holds them); give k and the options by keyword "
                     f"(evaluate takes the metric names second: evaluate(ranks, metrics))")
  return ranks


def dense_given(scores, labels, where) -> tuple[Any, Any, Any]:
  """Dense ``(scores, labels, where)``, with the errors for labels that are missing or names."""
  if names_metrics(labels):
    raise TypeError(f"labels look like metric names ({labels!r}): with dense scores pass "
                    f"evaluate(scores, labels, metrics), or build a Ranks first")
  if labels is None:
    raise ValueError("labels is required with dense scores (or pass a jaxrank.Ranks built by "
                     "from_dense/from_sparse/from_ranked_ids/from_candidates)")
  return scores, labels, where


def rank_ties(ties: str) -> str:
  """The ``ties`` the ranks are built with: "first" breaks ties there, the rest keep bounds."""
  return "first" if ties == "first" else "average"


@functools.partial(jax.jit, static_argnames=("specs", "options"))
def compute_ranks(ranks: Ranks, *, specs: tuple[tuple[str, int | None], ...],
                  options: Options) -> tuple[jax.Array, ...]:
  """The internal entry point "these formulas on these Ranks": one jitted call per
  ``(specs, options)``, each value finished by its empty-list policy (used by evaluate, the trec
  path and linkpred)."""
  out = []
  for name, k in specs:
    value, empty = _table.METRICS[name].formula(ranks, k, options)
    out.append(_formulas.finish(value, empty, ranks, options))
  return tuple(out)


@functools.partial(jax.jit, static_argnames=("specs", "options", "ties", "m", "method", "cut",
                                             "checked", "z", "small"))
def _dense_values(scores, labels, valid, tie_key, judged, *, specs, options, ties, m, method,
                  cut, checked, z=0, small=None):
  """Ranks of dense input and the formulas in one jitted call (one dispatch, fused).

  ``small`` (:func:`jaxrank._core.dense.traced_slots`): ``(slots, cut)`` of a cheaper rank core, taken
  at run time when no list has more relevant items than its slots.
  """
  def values(m, cut):
    ranks = _dense.ranks_of_dense(scores, labels, valid, tie_key, judged, ties=ties, m=m,
                                  method=method, cut=cut, checked=checked, z=z)
    return compute_ranks(ranks, specs=specs, options=options), ranks.overflow

  if small is None:
    return values(m, cut)
  most = jnp.max(_dense.positive_count(labels, valid), initial=0)
  return jax.lax.cond(most <= small[0], lambda: values(*small), lambda: values(m, cut))


def compute(scores, labels, specs, options, *, where=None, tie_key=None, max_relevant=None,
            method="auto", judged=None, with_overflow: bool = False):
  """The metrics ``specs`` of a :class:`Ranks` or of dense ``(scores, labels)``.

  On dense input the ranks never leave this function, so they may be cut at the largest cutoff
  (:func:`cutoff`, :func:`jaxrank._core.dense.dense_ranks`). ``judged`` (dense only) adds the
  judged items' slots (:class:`jaxrank._core.ranks.Judgments`). ``with_overflow=True`` returns
  ``(values, overflow)``, the lists' ``Ranks.overflow`` beside the values, for the means
  (:func:`skip_mean`).
  """
  specs = tuple(specs)
  if isinstance(scores, Ranks):
    ranks = ranks_given(scores, labels, where=where, tie_key=tie_key, max_relevant=max_relevant,
                        judged=judged)
    values, overflow = compute_ranks(ranks, specs=specs, options=options), ranks.overflow
  else:
    ties = rank_ties(options.ties)
    arrays, static = _dense.dense_arguments(
        *dense_given(scores, labels, where), ties=ties, tie_key=tie_key,
        max_relevant=max_relevant, method=method, cut=cutoff(specs), judged=judged)
    scores_, _, valid, key, _ = arrays
    small = _dense.traced_slots(scores_, valid, key, ties=ties, method=method,
                                cut=cutoff(specs), max_relevant=max_relevant, static=static)
    values, overflow = _dense_values(*arrays, specs=specs, options=options, small=small,
                                     **static)
  return (values, overflow) if with_overflow else values


def cutoff(specs: Sequence[tuple[str, int | None]]) -> int | None:
  """The largest cutoff when every metric has one (the ranks then matter only within it).

  Every formula at a cutoff ``k`` gives the same value for every rank beyond ``k`` (it reads such
  an item as unranked), so ranks beyond the largest cutoff need not be exact; ``None`` when a
  metric reads the whole list.
  """
  ks = [k for _, k in specs]
  return None if not ks or any(k is None for k in ks) else max(ks)


def check_used(given: dict[str, Any], names: Sequence[str]) -> None:
  """An option set away from its default that none of the metrics ``names`` reads is an error."""
  used = {"ties", "empty"}.union(*(_table.METRICS[name].options for name in names))
  arrays = {name for name in ("judged",) if name in given}  # input arrays: set when not None
  unused = [name for name in arrays if given[name] is not None and name not in used]
  for option in unused + _options.unused({k: v for k, v in given.items() if k not in arrays},
                                         used):
    readers = [m.name for m in _table.METRICS.values() if option in m.options]
    shown = "<array>" if option in arrays else repr(given[option])
    raise ValueError(f"option {option}={shown} is read by none of the requested "
                     f"metrics ({', '.join(dict.fromkeys(names))}); it concerns "
                     f"{', '.join(readers)}")


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


def skip_mean(values: jax.Array, overflow: jax.Array) -> jax.Array:
  """The mean of the non-NaN values (``empty="skip"``), NaN if a list overflowed.

  An overflowed list (more relevant items than ``max_relevant`` under ``jit``) is NaN like an
  empty one under ``"skip"``, but it must never be dropped as one: the mean is then
  :func:`jaxrank._core.formulas.overflow_nan`.

  Example:
    >>> import numpy as np
    >>> from jaxrank._core import evaluate as _evaluate
    >>> v = np.array([1.0, np.nan, 0.5])
    >>> float(_evaluate.skip_mean(v, np.zeros(3, bool))), float(_evaluate.skip_mean(v, v > 0.7))
    (0.75, nan)
  """
  out = jnp.nanmean(jnp.asarray(values))
  return jnp.where(jnp.any(overflow), _formulas.overflow_nan(out.dtype), out)


def names_metrics(x: Any) -> bool:
  """A metric name or a non-empty list of names (not labels)."""
  if isinstance(x, str):
    return True
  return (isinstance(x, (list, tuple)) and len(x) > 0 and all(isinstance(v, str) for v in x))


DEFAULT_METRICS = ("ndcg@10", "map", "mrr", "precision@10", "recall@10")


def metrics_second(first: Any, second: Any, metrics: Any, default: Sequence[str]):
  """``(second, metrics)``, or ``(None, second)`` for ``evaluate(ranks, ["map", ...])``: a Ranks
  needs no labels (or candidates), so a list of names second is the metrics."""
  if not (isinstance(first, Ranks) and names_metrics(second)):
    return second, metrics
  if metrics is not default:
    raise ValueError("metrics given twice: with a Ranks pass them second, "
                     "evaluate(ranks, metrics), or as metrics=...")
  return None, second


def evaluate(scores: ArrayLike | Ranks, labels: ArrayLike | Sequence[str] | None = None,
             metrics: Sequence[str] = DEFAULT_METRICS, *,
             where: ArrayLike | None = None, threshold: float = 1,
             gain: str | Callable = "linear", discount: Callable | None = None,
             ties: str = "average", tie_key: ArrayLike | None = None,
             judged: ArrayLike | None = None, empty: str = "zero",
             ap_denominator: str = "all", precision_denominator: str = "k", beta: float = 1.0,
             persistence: float = 0.8, max_grade: float = 4.0, graded: bool = False,
             reduce: str | None = None, max_relevant: int | None = None,
             method: str = "auto") -> dict[str, jax.Array]:
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
  given = dict(threshold=threshold, gain=gain, discount=discount, ties=ties, empty=empty,
               ap_denominator=ap_denominator, precision_denominator=precision_denominator,
               beta=beta, persistence=persistence, max_grade=max_grade, graded=graded)
  make_options(**given)  # checked even when every name sets its own
  resolved = [resolve(name) for name in metrics]
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
