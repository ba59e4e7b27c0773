"""The one compute dispatch: the metrics ``specs`` of a :class:`Ranks` or of dense input.

Every face ends here: the metric functions and :func:`jaxrank.evaluate`
(:mod:`jaxrank._core.metrics`), ``jaxrank.numpy``, the TREC path, ``catalog``, ``linkpred`` and
``MetricState``. :func:`compute` builds the ranks of dense input and runs the formulas in one
jitted call (the ranks cut at the largest cutoff, :func:`cutoff`); :func:`compute_ranks` runs the
formulas on given :class:`Ranks`. Beside them, the steps the faces share: metric lists, option
checks, and the means under ``empty="skip"``.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from jaxrank._core import checks as _checks
from jaxrank._core import dense as _dense
from jaxrank._core import formulas as _formulas
from jaxrank._core import options as _options
from jaxrank._core import table as _table
from jaxrank._core.formulas import Options
from jaxrank._core.ranks import Ranks
from jaxrank._core.table import values_of


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
  """The internal entry point "these formulas on these Ranks" on JAX arrays: one jitted call
  per ``(specs, options)`` of :func:`jaxrank._core.table.values_of` (used by evaluate, the trec
  path's kernel and linkpred)."""
  return values_of(ranks, specs=specs, options=options)


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


class _Guesses:
  """The static options of the last eager :func:`compute` of each input signature (shapes,
  dtypes, metrics, options), for at most ``size`` signatures, to start the jitted call before the
  host check of the labels (:func:`jaxrank._core.dense.dense_static`) has confirmed them.

  A signature is guessed once its last ``needed`` calls had the same options; ``needed`` starts
  at 2 and doubles (up to 64) at each wrong guess, so a stream whose options keep changing
  (batches whose most relevant items cross a slot bucket) soon stops paying for wasted calls.
  """

  def __init__(self, size: int = 256) -> None:
    self._size = size
    self._last: dict[Any, tuple[dict, int, int]] = {}  # (static, same in a row, needed)

  def guess(self, key: Any) -> dict | None:
    """The static options to start ``key``'s call with, or None."""
    entry = self._last.get(key)
    return entry[0] if entry is not None and entry[1] >= entry[2] else None

  def record(self, key: Any, static: dict, *, guessed: bool) -> None:
    """The checked options of ``key``'s call (``guessed``: it started one with a guess)."""
    last, same, needed = self._last.pop(key, (None, 0, 2))
    if len(self._last) >= self._size:
      del self._last[next(iter(self._last))]  # the signature recorded longest ago
    if static == last:
      self._last[key] = (static, same + 1, needed)
    else:
      self._last[key] = (static, 1, min(2 * needed, 64) if guessed else needed)


# On concrete labels checked by NumPy (dense.checks_on_host) the check and the kernel run at
# once: compute starts the jitted call with the options of the calls before it on inputs of the
# same signature (an eval loop's batches), checks the labels while XLA computes, and keeps the
# result when the check gives the same options (the same executable: the same values); if not,
# it runs the call again with the checked ones. A bad label still raises. At 4,000 x 1,000
# int32 labels on 2 CPU cores the check took 2.6 ms of ndcg(k=10)'s 29.
_GUESSES = _Guesses()


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
    values, overflow = _dense_compute(*dense_given(scores, labels, where), specs, options,
                                      tie_key=tie_key, max_relevant=max_relevant,
                                      method=method, judged=judged)
  return (values, overflow) if with_overflow else values


def _dense_compute(scores, labels, where, specs, options, *, tie_key, max_relevant, method,
                   judged) -> tuple[Any, jax.Array]:
  """:func:`compute` of dense input: ``(values, overflow)``, the check of concrete labels run
  beside the jitted call where :data:`_GUESSES` knows its options."""
  ties, cut = rank_ties(options.ties), cutoff(specs)
  arrays = _dense.dense_inputs(scores, labels, where, ties=ties, tie_key=tie_key, method=method,
                               judged=judged)
  scores, labels, valid, tie_key, judged = arrays
  guessing = (all(_checks.is_concrete(a) for a in arrays if a is not None) and judged is None
              and _dense.checks_on_host(labels, valid))
  signature = (tuple(None if a is None else (a.shape, a.dtype) for a in arrays), specs, options,
               method, max_relevant)
  guess = _GUESSES.guess(signature) if guessing else None
  early = None if guess is None else _dense_values(*arrays, specs=specs, options=options,
                                                   **guess)
  static = _dense.dense_static(arrays, ties=ties, max_relevant=max_relevant, method=method,
                               cut=cut)
  static["small"] = _dense.traced_slots(scores, valid, tie_key, ties=ties, method=method,
                                        cut=cut, max_relevant=max_relevant, static=static)
  values, overflow = (early if early is not None and static == guess else
                      _dense_values(*arrays, specs=specs, options=options, **static))
  if guessing and not isinstance(overflow, jax.core.Tracer):  # not inside an outer trace
    _GUESSES.record(signature, static, guessed=early is not None)
  return values, overflow


def cutoff(specs: Sequence[tuple[str, int | None]]) -> int | None:
  """The largest cutoff when every metric has one (the ranks then matter only within it).

  Every formula at a cutoff ``k`` gives the same value for every rank beyond ``k`` (it reads such
  an item as unranked), so ranks beyond the largest cutoff need not be exact; ``None`` when a
  metric reads the whole list.
  """
  ks = [k for _, k in specs]
  return None if not ks or any(k is None for k in ks) else max(k for k in ks if k is not None)


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


def skip_mean(values: jax.Array, overflow: jax.Array) -> jax.Array:
  """The mean of the non-NaN values (``empty="skip"``), NaN if a list overflowed.

  An overflowed list (more relevant items than ``max_relevant`` under ``jit``) is NaN like an
  empty one under ``"skip"``, but it must never be dropped as one: the mean is then
  :func:`jaxrank._core.formulas.overflow_nan`.

  Example:
    >>> import numpy as np
    >>> from jaxrank._core import compute as _compute
    >>> v = np.array([1.0, np.nan, 0.5])
    >>> float(_compute.skip_mean(v, np.zeros(3, bool))), float(_compute.skip_mean(v, v > 0.7))
    (0.75, nan)
  """
  out = jnp.nanmean(jnp.asarray(values))
  return jnp.where(jnp.any(overflow), _formulas.overflow_nan(out.dtype), out)


def names_metrics(x: Any) -> bool:
  """A metric name or a non-empty list of names (not labels)."""
  if isinstance(x, str):
    return True
  return (isinstance(x, (list, tuple)) and len(x) > 0 and all(isinstance(v, str) for v in x))


def metrics_second(first: Any, second: Any, metrics: Any, default: Sequence[str]):
  """``(second, metrics)``, or ``(None, second)`` for ``evaluate(ranks, ["map", ...])``: a Ranks
  needs no labels (or candidates), so a list of names second is the metrics."""
  if not (isinstance(first, Ranks) and names_metrics(second)):
    return second, metrics
  if metrics is not default:
    raise ValueError("metrics given twice: with a Ranks pass them second, "
                     "evaluate(ranks, metrics), or as metrics=...")
  return None, second
