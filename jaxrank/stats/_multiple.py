"""Multiple comparisons, aligning per-query values, and all pairs at once."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core.types import Key
from jaxrank.stats._arrays import checked_array, choice, positive_int
from jaxrank.stats._distributions import studentized_range_sf
from jaxrank.stats._intervals import cohens_d, mean_difference
from jaxrank.stats._paired import sign_test, ttest, wilcoxon
from jaxrank.stats._resampling import bootstrap_test, randomization_pairs
from jaxrank.stats._types import (
  ALTERNATIVES,
  CORRECTIONS,
  MISSING,
  PVALUES,
  TESTS,
  Pairwise,
  PerQuery,
  TestResult,
)


def adjust(pvalues: ArrayLike, *, method: str = "holm") -> np.ndarray:
  r"""p-values adjusted for multiple comparisons, over the last axis (the family).

  With :math:`m` tests and :math:`p_{(1)} \le \dots \le p_{(m)}`:

  * ``"bonferroni"``: :math:`\min(1, m p_i)` (family-wise error);
  * ``"holm"``: :math:`\max_{j \le i} \min(1, (m - j + 1) p_{(j)})` (family-wise error,
    uniformly more powerful than Bonferroni);
  * ``"bh"``: Benjamini-Hochberg, :math:`\min_{j \ge i} \min(1, m p_{(j)} / j)` (false
    discovery rate, independent or positively dependent tests);
  * ``"by"``: Benjamini-Yekutieli, BH times :math:`\sum_{j \le m} 1/j` (FDR, any dependence);
  * ``"none"``: unchanged.

  ``"bh"`` and ``"by"`` equal ``scipy.stats.false_discovery_control(p, method=...)``.

  Example:
    >>> from jaxrank import stats
    >>> p = [0.01, 0.04, 0.03, 0.20]
    >>> stats.adjust(p, method="holm").round(4).tolist()
    [0.04, 0.09, 0.09, 0.2]
    >>> stats.adjust(p, method="bh").round(4).tolist()
    [0.04, 0.0533, 0.0533, 0.2]
  """
  choice("method", method, CORRECTIONS)
  p = np.asarray(pvalues, np.float64)
  if p.ndim < 1:
    raise ValueError("pvalues must have at least one axis (the family of tests), got a scalar")
  if (np.isnan(p) | (p < 0) | (p > 1)).any():
    raise ValueError(f"pvalues must be between 0 and 1, got {p[np.isnan(p) | (p < 0) | (p > 1)]}")
  m = p.shape[-1]
  if method == "none" or m == 0:
    return p.copy()
  if method == "bonferroni":
    bonferroni: np.ndarray = np.minimum(1.0, p * m)
    return bonferroni
  order = np.argsort(p, axis=-1, kind="stable")
  ps = np.take_along_axis(p, order, -1)
  i = np.arange(1, m + 1)
  if method == "holm":
    adj = np.minimum(1.0, np.maximum.accumulate(ps * (m - i + 1), axis=-1))
  else:
    factor = np.sum(1.0 / i) if method == "by" else 1.0
    adj = np.minimum.accumulate((ps * m * factor / i)[..., ::-1], axis=-1)[..., ::-1]
    adj = np.minimum(adj, 1.0)
  out = np.empty_like(adj)
  np.put_along_axis(out, order, adj, -1)
  return out


@functools.partial(jax.jit, static_argnames="blocked")
def _tukey_parts(x: jax.Array, *, blocked: bool) -> tuple[jax.Array, jax.Array]:
  s, q = x.shape
  means = x.mean(-1)
  if blocked:  # two-way ANOVA without replication: topic (query) effects removed
    resid = x - means[:, None] - x.mean(0)[None] + x.mean()
    mse = jnp.sum(resid * resid) / ((s - 1) * (q - 1))
  else:  # one-way ANOVA: systems as independent groups
    mse = jnp.sum((x - means[:, None]) ** 2) / (s * (q - 1))
  return means, mse


def tukey_hsd(values: ArrayLike, *, design: str = "blocked") -> TestResult:
  r"""Tukey's honestly significant difference test over all pairs of systems.

  For systems i, j with means :math:`\bar x_i, \bar x_j` over n queries,
  :math:`q_{ij} = |\bar x_i - \bar x_j| / \sqrt{\mathrm{MSE}/n}` and
  :math:`p_{ij} = P(Q_{k,\nu} > q_{ij})` (:func:`studentized_range_sf`, k systems): the p-values
  are already adjusted for all :math:`k(k-1)/2` comparisons (family-wise error).

  * ``design="blocked"`` (default; Sakai's recommendation for IR, the queries are blocks): MSE
    is the residual of the two-way ANOVA without replication, :math:`\nu = (k-1)(n-1)`. With two
    systems it is the paired t-test.
  * ``design="oneway"``: systems as independent groups, :math:`\nu = k(n-1)`; this is
    ``scipy.stats.tukey_hsd(*values)`` and what ranx reports.

  Returns:
    ``statistic[i, j] = mean_i - mean_j`` and ``pvalue[i, j]`` (``[k, k]``, 1 on the diagonal).

  Example:
    >>> from jaxrank import stats
    >>> x = [[0.5, 0.4, 0.7, 0.3, 0.6], [0.4, 0.35, 0.5, 0.3, 0.45], [0.2, 0.3, 0.3, 0.1, 0.2]]
    >>> stats.tukey_hsd(x).pvalue.round(4).tolist()
    [[1.0, 0.1176, 0.0006], [0.1176, 1.0, 0.0086], [0.0006, 0.0086, 1.0]]
  """
  choice("design", design, ("blocked", "oneway"))
  x = checked_array("values", values, min_queries=2)
  if x.ndim != 2 or x.shape[0] < 2:
    raise ValueError(f"values must be [systems, queries] with at least 2 systems, got shape "
                     f"{x.shape}")
  k, n = x.shape
  with jax.enable_x64(True):
    means, mse = _tukey_parts(jnp.asarray(x), blocked=design == "blocked")
  means, mse = np.asarray(means), float(mse)
  diff = means[:, None] - means[None]
  df = (k - 1) * (n - 1) if design == "blocked" else k * (n - 1)
  upper = np.triu_indices(k, 1)  # each pair once: the integral is the costly part
  gap = np.abs(diff[upper])
  with np.errstate(divide="ignore", invalid="ignore"):
    q = np.where(mse > 0, gap / math.sqrt(max(mse, 0.0) / n), np.where(gap == 0, 0.0, np.inf))
  p = np.ones((k, k))
  p[upper] = studentized_range_sf(q, k, df)
  p.T[upper] = p[upper]
  return TestResult(diff, p)


# ----------------------------------------------------------------------------------------------
# Aligning per-query values, and all pairs at once.


def _describe(items: Sequence[str], limit: int = 5) -> str:
  shown = ", ".join(repr(i) for i in items[:limit])
  return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def align(per_system: Mapping[str, Mapping[str, float] | ArrayLike], *,
          missing: str = "error") -> PerQuery:
  """Per-query values of several systems as one ``[systems, queries]`` array, by query id.

  Args:
    per_system: ``{system: {qid: value}}`` (e.g. one metric of
      :func:`jaxrank.numpy.evaluate_run` per system) or ``{system: values [queries]}`` (arrays
      already aligned by position; the queries are then named ``"0"``, ``"1"``, ...).
    missing: what to do with a query that some systems have and others do not:
      ``"error"`` (default) raises, naming the queries; ``"zero"`` scores it 0 for the systems
      without it (trec_eval's ``-c``: a query the system did not answer has every measure 0);
      ``"intersect"`` keeps only the queries every system has.

  Queries are ordered by first appearance (the first system's order, then new ones). A value
  that is not a finite number is an error naming its system and query: NaN (a list without
  relevant items under ``empty="nan"``: choose another ``empty`` policy), None or an infinity.

  Example:
    >>> from jaxrank import stats
    >>> pq = stats.align({"bm25": {"q1": 0.5, "q2": 0.25}, "dense": {"q2": 0.75, "q1": 1.0}})
    >>> pq.systems, pq.queries, pq.values.tolist()
    (('bm25', 'dense'), ('q1', 'q2'), [[0.5, 0.25], [1.0, 0.75]])
    >>> stats.align({"a": {"q1": 1.0}, "b": {"q2": 1.0}}, missing="zero").values.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
  """
  choice("missing", missing, MISSING)
  if not isinstance(per_system, Mapping) or not per_system:
    raise TypeError(f"per_system must be a non-empty dict {{system: {{qid: value}}}}, got "
                    f"{type(per_system).__name__}")
  systems = tuple(str(s) for s in per_system)
  keyed = [v for v in per_system.values() if isinstance(v, Mapping)]
  if keyed and len(keyed) != len(per_system):
    raise TypeError("per_system values must all be {qid: value} dicts or all be arrays, got "
                    "a mix")
  if not keyed:
    rows = []
    for name, v in zip(systems, per_system.values()):
      try:
        rows.append(np.asarray(v, dtype=np.float64))
      except (TypeError, ValueError):
        raise TypeError(f"system {name!r}: per-query values must be numbers, got "
                        f"{type(v).__name__}") from None
    shapes = {r.shape for r in rows}
    if len(shapes) != 1 or len(next(iter(shapes))) != 1 or not rows[0].size:
      raise ValueError(f"per_system arrays must be 1-D of one length (aligned queries), got "
                       f"shapes { {s: r.shape for s, r in zip(systems, rows)} }")
    values = np.stack(rows)
    positions = tuple(str(i) for i in range(values.shape[1]))
    _check_finite(per_system, systems, positions, values, np.ones(values.shape, bool))
    return PerQuery(systems, positions, values)
  queries = list(dict.fromkeys(q for v in keyed for q in v))
  index = {q: i for i, q in enumerate(queries)}
  values = np.zeros((len(systems), len(queries)))
  present = np.zeros(values.shape, bool)
  for s, (name, per_q) in enumerate(zip(systems, keyed)):
    cols = np.fromiter((index[q] for q in per_q), np.int64, len(per_q))
    try:
      vals = np.fromiter(per_q.values(), np.float64, len(per_q))
    except (TypeError, ValueError):
      raise TypeError(f"system {name!r}: per-query values must be numbers") from None
    values[s, cols] = vals
    present[s, cols] = True
  _check_finite(per_system, systems, queries, values, present)
  if not present.all():
    if missing == "error":
      s = int(np.flatnonzero(~present.all(1))[0])
      lacking = [queries[q] for q in np.flatnonzero(~present[s])]
      raise ValueError(f"system {systems[s]!r} has no value for {len(lacking)} of the "
                       f"{len(queries)} queries ({_describe(lacking)}); pass missing='zero' "
                       "(trec_eval -c) or missing='intersect'")
    if missing == "intersect":
      keep = present.all(0)
      if not keep.any():
        raise ValueError("missing='intersect': no query has a value for every system")
      values = values[:, keep]
      queries = [queries[i] for i in np.flatnonzero(keep)]
  if not queries:
    raise ValueError("per_system has no queries")
  return PerQuery(systems, tuple(str(q) for q in queries), values)


def _check_finite(per_system: Mapping[str, Any], systems: tuple[str, ...],
                  queries: Sequence[str], values: np.ndarray, present: np.ndarray) -> None:
  """Names the system and query of the first value that is not a finite number: None (no
  value), NaN (a list without relevant items under ``empty="nan"``) or an infinity."""
  bad = ~np.isfinite(values) & present
  if not bad.any():
    return
  s, q = (int(i) for i in np.argwhere(bad)[0])
  given = list(per_system.values())[s]
  try:  # the value as given: None reads as NaN
    original = given[queries[q]] if isinstance(given, Mapping) else given[q]
  except Exception:  # an array type that cannot be indexed so: no None in it
    original = values[s, q]
  where = f"system {systems[s]!r}, query {queries[q]!r}"
  if original is None:
    raise ValueError(f"{where}: the value is None; every per-query value must be a number")
  if np.isnan(values[s, q]):
    raise ValueError(f"{where}: the value is NaN (a query without relevant documents under "
                     "empty='nan'?); choose empty='zero' or 'skip' when evaluating")
  raise ValueError(f"{where}: the value is {values[s, q]}; per-query values must be finite")


def _pairs(k: int, pairs: Any) -> tuple[np.ndarray, np.ndarray]:
  if isinstance(pairs, str):
    choice("pairs", pairs, ("all", "baseline"))
    if pairs == "baseline":
      return np.zeros(k - 1, np.int64), np.arange(1, k)
    ref, sys = np.triu_indices(k, 1)
    return ref.astype(np.int64), sys.astype(np.int64)
  arr = np.asarray(pairs)
  if arr.ndim != 2 or arr.shape[1] != 2 or arr.dtype.kind not in "iu" or arr.size == 0:
    raise ValueError(f"pairs must be 'all', 'baseline' or a list of (reference, system) index "
                     f"pairs, got {pairs!r:.80}")
  if (arr < 0).any() or (arr >= k).any() or (arr[:, 0] == arr[:, 1]).any():
    raise ValueError(f"pairs must hold distinct system indices in [0, {k}), got {pairs!r:.80}")
  return arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64)


def pairwise(values: ArrayLike, *, test: str = "t", pairs: str | ArrayLike = "all",
             alternative: str = "two-sided", correction: str | None = None,
             alpha: float = 0.05, confidence: float = 0.95, ci: str = "t",
             key: Key = 0, n_resamples: int = 10_000,
             **options: Any) -> Pairwise:
  """Compares systems pair by pair on one measure: tests, corrected p-values, CIs, effect sizes.

  Args:
    values: per-query values ``[systems, queries]`` (see :func:`align`).
    test: ``"t"`` (:func:`ttest`), ``"wilcoxon"``, ``"sign"``, ``"randomization"``,
      ``"bootstrap"`` or ``"tukey"`` (:func:`tukey_hsd`, already family-wise adjusted). Each
      pair tests ``system`` against ``reference`` (``a = values[system]``).
    pairs: ``"all"`` (``i < j``: reference i, system j), ``"baseline"`` (system 0 is the
      reference of every other), or a list of ``(reference, system)`` index pairs.
    correction: over the pairs of this call (one measure): ``"holm"``, ``"bonferroni"``,
      ``"bh"``, ``"by"`` or ``"none"``; default (None) Holm, and ``"none"`` for Tukey's HSD.
    alpha: significance level of ``significant = adjusted <= alpha``.
    confidence, ci: the confidence interval of each difference (:func:`mean_difference`).
    key, n_resamples: for the randomization and bootstrap tests and bootstrap intervals.
    options: passed to the test (``zero_method=``, ``method=``, ``pvalue=``, ``design=``).

  The randomization test of all pairs costs one matrix product of the sign flips with the
  systems' values (not one per pair): the sums per system, then differences per pair.

  Example:
    >>> from jaxrank import stats
    >>> x = [[0.5, 0.4, 0.7, 0.3, 0.6], [0.4, 0.35, 0.5, 0.3, 0.45], [0.2, 0.3, 0.3, 0.1, 0.2]]
    >>> res = stats.pairwise(x, pairs="baseline")
    >>> res.system.tolist(), res.difference.round(3).tolist(), res.adjusted.round(4).tolist()
    ([1, 2], [-0.1, -0.28], [0.0474, 0.0173])
  """
  choice("test", test, TESTS)
  choice("alternative", alternative, ALTERNATIVES)
  if correction is None:
    correction = "none" if test == "tukey" else "holm"
  choice("correction", correction, CORRECTIONS)
  if test == "tukey" and correction != "none":
    raise ValueError(f"test='tukey' already controls the family-wise error: use "
                     f"correction='none', got {correction!r}")
  if test == "tukey" and alternative != "two-sided":
    raise ValueError(f"test='tukey' is two-sided only, got alternative={alternative!r}")
  _checks.check_unit_interval("alpha", alpha)
  x = checked_array("values", values, min_queries=2)
  if x.ndim != 2 or x.shape[0] < 2:
    raise ValueError(f"values must be [systems, queries] with at least 2 systems, got shape "
                     f"{x.shape}")
  ref, sys = _pairs(x.shape[0], pairs)
  a, b = x[sys], x[ref]
  if test == "t":
    stat, p = ttest(a, b, alternative=alternative, **options)
  elif test == "wilcoxon":
    stat, p = wilcoxon(a, b, alternative=alternative, **options)
  elif test == "sign":
    stat, p = sign_test(a, b, alternative=alternative, **options)
  elif test == "randomization":
    unknown = set(options) - {"method", "pvalue"}
    if unknown:
      raise TypeError(f"unexpected options for test='randomization': {sorted(unknown)}")
    stat, p = randomization_pairs(x, ref, sys, key=key, alternative=alternative,
                                  n_resamples=positive_int("n_resamples", n_resamples),
                                  method=choice("method", options.get("method", "auto"),
                                                ("auto", "exact", "monte-carlo")),
                                  pvalue=choice("pvalue", options.get("pvalue", "plus_one"),
                                                PVALUES))
  elif test == "bootstrap":
    stat, p = bootstrap_test(a, b, key=key, n_resamples=n_resamples, alternative=alternative,
                             **options)
  else:
    res = tukey_hsd(x, **options)
    stat, p = res.statistic[sys, ref], res.pvalue[sys, ref]
  adjusted = adjust(p, method=correction)
  interval = mean_difference(a, b, confidence=confidence, method=ci, key=key,
                             n_resamples=n_resamples)
  return Pairwise(reference=ref, system=sys, difference=interval.estimate, low=interval.low,
                  high=interval.high, effect=cohens_d(a, b), statistic=np.asarray(stat),
                  pvalue=np.asarray(p), adjusted=adjusted, significant=adjusted <= alpha)
