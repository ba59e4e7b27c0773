"""jaxrank.stats and jaxrank.compare against SciPy (and ranx when installed).

Every test batches its cases into one call per query count: the kernels compile once per shape,
and compilation, not computation, is what costs time here.
"""

import re
import warnings

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxrank import stats
from jaxrank.stats import _resampling  # the chunk size, patched below

ss = pytest.importorskip("scipy.stats")

ALTERNATIVES = ["two-sided", "greater", "less"]


def paired_cases(q: int, seed: int, n: int = 2):
  """[3n, q] pairs: continuous values, tied grades (many equal |d|), and 30% zero differences."""
  rng = np.random.default_rng(seed)
  a = np.concatenate([rng.random((n, q)), rng.integers(0, 4, (n, q)) / 4, rng.random((n, q))])
  b = np.concatenate([rng.random((n, q)), rng.integers(0, 4, (n, q)) / 4, rng.random((n, q))])
  same = rng.random((n, q)) < 0.3
  b[2 * n:][same] = a[2 * n:][same]
  keep = ~np.all(a == b, axis=1)
  return a[keep], b[keep]


# ----------------------------------------------------------------------------------------------
# Classical tests.


@pytest.mark.parametrize("q", [8, 30])
def test_ttest_matches_scipy(q):
  a, b = paired_cases(q, seed=q)
  for alternative in ALTERNATIVES:
    ours = stats.ttest(a, b, alternative=alternative)
    ref = ss.ttest_rel(a, b, axis=-1, alternative=alternative)
    np.testing.assert_allclose(ours.statistic, ref.statistic, rtol=1e-10)
    np.testing.assert_allclose(ours.pvalue, ref.pvalue, rtol=1e-9, atol=1e-15)


def test_ttest_broadcasts_leading_dimensions():
  rng = np.random.default_rng(0)
  a, b = rng.random((2, 3, 8)), rng.random((3, 8))
  ours = stats.ttest(a, b)
  assert ours.pvalue.shape == (2, 3)
  np.testing.assert_allclose(ours.pvalue, ss.ttest_rel(a, np.broadcast_to(b, a.shape),
                                                       axis=-1).pvalue, rtol=1e-9)


def _scipy_wilcoxon(a, b, **kw):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    res = [ss.wilcoxon(x, y, **kw) for x, y in zip(a, b)]
  return np.array([r.statistic for r in res]), np.array([r.pvalue for r in res])


# 8 queries: exact distribution or enumeration of the 2^8 sign flips (ties/zeros);
# 30: exact or normal approximation; 60: normal approximation.
@pytest.mark.parametrize("q", [8, 30, 60])
@pytest.mark.parametrize("zero_method", ["wilcox", "pratt", "zsplit"])
def test_wilcoxon_matches_scipy(q, zero_method):
  a, b = paired_cases(q, seed=q + 1)
  for alternative in ALTERNATIVES:
    for correction in (False, True):
      kw = dict(alternative=alternative, zero_method=zero_method, correction=correction)
      ours = stats.wilcoxon(a, b, **kw)
      stat, p = _scipy_wilcoxon(a, b, **kw)
      np.testing.assert_allclose(ours.statistic, stat, rtol=1e-12, err_msg=str(kw))
      np.testing.assert_allclose(ours.pvalue, p, rtol=1e-9, atol=1e-15, err_msg=str(kw))


@pytest.mark.parametrize("method", ["exact", "asymptotic"])
def test_wilcoxon_forced_method_matches_scipy(method):
  a, b = paired_cases(30, seed=5)  # with ties: scipy rounds W+ for the exact distribution
  ours = stats.wilcoxon(a, b, method=method)
  stat, p = _scipy_wilcoxon(a, b, method=method)
  np.testing.assert_allclose(ours.pvalue, p, rtol=1e-9, atol=1e-15)


@settings(max_examples=20, deadline=None)
@given(hnp.arrays(np.int8, (2, 8), elements=st.integers(0, 3)))
def test_wilcoxon_and_sign_test_on_tied_grades(grades):
  """Graded per-query values (few distinct levels): ties and zero differences everywhere."""
  a, b = grades[0] / 3, grades[1] / 3
  if np.all(a == b):
    assert stats.wilcoxon(a, b).pvalue == 1 and stats.sign_test(a, b).pvalue == 1
    return
  stat, p = _scipy_wilcoxon(a[None], b[None])
  ours = stats.wilcoxon(a, b)
  assert ours.statistic == pytest.approx(stat[0])
  assert ours.pvalue == pytest.approx(p[0], rel=1e-9, abs=1e-15)
  d = a - b
  k, n = int((d > 0).sum()), int((d != 0).sum())
  assert stats.sign_test(a, b).pvalue == pytest.approx(ss.binomtest(k, n).pvalue, rel=1e-9)


@pytest.mark.parametrize("q", [8, 60])
def test_sign_test_matches_binomtest(q):
  a, b = paired_cases(q, seed=3)
  d = a - b
  k, n = (d > 0).sum(1), (d != 0).sum(1)
  for alternative in ALTERNATIVES:
    ours = stats.sign_test(a, b, alternative=alternative)
    ref = [ss.binomtest(int(x), int(y), 0.5, alternative=alternative).pvalue
           for x, y in zip(k, n)]
    np.testing.assert_array_equal(ours.statistic, k)
    np.testing.assert_allclose(ours.pvalue, ref, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("test", ["ttest", "wilcoxon", "sign_test", "randomization_test",
                                  "bootstrap_test"])
def test_identical_systems_give_p_one(test):
  """All differences zero: no evidence (SciPy gives NaN or raises; jaxrank says p = 1)."""
  x = np.linspace(0, 1, 30)
  for alternative in ALTERNATIVES:
    res = getattr(stats, test)(x, x, alternative=alternative, **(
        {"n_resamples": 500} if "_test" in test and test != "sign_test" else {}))
    assert float(res.pvalue) == 1.0


# ----------------------------------------------------------------------------------------------
# Randomization and bootstrap tests.


def _mean_diff(x, y, axis):
  return np.mean(x - y, axis=axis)


def test_randomization_exact_matches_scipy_permutation_test():
  a, b = paired_cases(8, seed=11)
  for alternative in ALTERNATIVES:
    ours = stats.randomization_test(a, b, alternative=alternative)  # 2^9 <= 10,000: exact
    for i in range(len(a)):
      ref = ss.permutation_test((a[i], b[i]), _mean_diff, permutation_type="samples",
                                n_resamples=np.inf, vectorized=True, alternative=alternative)
      assert ours.statistic[i] == pytest.approx(ref.statistic, abs=1e-15)
      assert ours.pvalue[i] == pytest.approx(ref.pvalue, rel=1e-12)


def test_randomization_monte_carlo_is_the_documented_count():
  """p = (#{|T_s| >= |T|} + 1) / (R + 1) over the rows of sign_flips(key, R, Q)."""
  rng = np.random.default_rng(4)
  a, b = rng.integers(0, 5, (3, 30)) / 4, rng.integers(0, 5, (3, 30)) / 4  # tied statistics
  d = a - b
  signs = stats.sign_flips(7, 500, 30)
  null = signs @ d.T
  obs = d.sum(1)
  tol = 1e-10 * (np.abs(a).sum(1) + np.abs(b).sum(1))
  counts = {"two-sided": (np.abs(null) >= np.abs(obs) - tol).sum(0),
            "greater": (null >= obs - tol).sum(0), "less": (null <= obs + tol).sum(0)}
  for alternative, count in counts.items():
    res = stats.randomization_test(a, b, key=7, n_resamples=500, alternative=alternative)
    np.testing.assert_array_equal(res.pvalue, (count + 1) / 501)
    ranx = stats.randomization_test(a, b, key=7, n_resamples=500, alternative=alternative,
                                    pvalue="ranx")
    np.testing.assert_array_equal(ranx.pvalue, count / 500)


def test_randomization_monte_carlo_agrees_with_exact_within_its_error():
  a, b = paired_cases(14, seed=2)
  exact = stats.randomization_test(a, b, method="exact").pvalue
  mc = stats.randomization_test(a, b, method="monte-carlo", n_resamples=2000, key=3).pvalue
  sd = np.sqrt(exact * (1 - exact) / 2000)
  assert np.all(np.abs(mc - exact) <= 4 * sd + 1 / 2000)


def test_resampling_does_not_depend_on_chunking_or_call(monkeypatch):
  """A fixed key: the same p-values every run, whatever the chunk size and the pairs asked."""
  rng = np.random.default_rng(8)
  x = rng.random((4, 30))
  key = jax.random.key(5)
  first = stats.pairwise(x, test="randomization", key=key, n_resamples=500)
  ci = stats.confidence_interval(x, method="bca", key=key, n_resamples=500)
  monkeypatch.setattr(_resampling, "_ELEMENTS_PER_CHUNK", 64)
  assert _resampling._chunk(500, 30) == 2  # 2 resamples per chunk, not 500
  again = stats.pairwise(x, test="randomization", key=key, n_resamples=500)
  np.testing.assert_array_equal(first.pvalue, again.pvalue)
  np.testing.assert_array_equal(ci.low, stats.confidence_interval(
      x, method="bca", key=key, n_resamples=500).low)
  monkeypatch.undo()
  # One pair on its own sees the same sign vectors as inside the all-pairs call.
  single = stats.randomization_test(x[3], x[1], key=key, n_resamples=500)
  pick = (first.reference == 1) & (first.system == 3)
  assert float(single.pvalue) == float(first.pvalue[pick][0])


def test_bootstrap_test_is_the_documented_count():
  rng = np.random.default_rng(9)
  a, b = rng.random((2, 30)), rng.random((2, 30))
  d = a - b
  w = stats.bootstrap_counts(2, 500, 30)
  centered = d - d.mean(1, keepdims=True)
  m = w @ centered.T / 30
  var = (w @ (centered ** 2).T / 30 - m ** 2) * 30 / 29
  t_star = m / np.sqrt(var / 30)
  t_obs = ss.ttest_rel(a, b, axis=-1).statistic
  res = stats.bootstrap_test(a, b, key=2, n_resamples=500)
  np.testing.assert_allclose(res.statistic, t_obs, rtol=1e-12)
  count = (np.abs(t_star) >= np.abs(t_obs) * (1 - 1e-9)).sum(0)
  np.testing.assert_array_equal(res.pvalue, (count + 1) / 501)


def test_bootstrap_test_is_close_to_the_t_test_on_many_queries():
  rng = np.random.default_rng(10)
  a = rng.random((3, 300))
  b = a + rng.normal(0.03, 0.3, (3, 300))
  boot = stats.bootstrap_test(a, b, n_resamples=2000).pvalue
  np.testing.assert_allclose(boot, stats.ttest(a, b).pvalue, atol=0.03)


# ----------------------------------------------------------------------------------------------
# Intervals, effect sizes, corrections, Tukey.


class _Distribution:
  def __init__(self, values):
    self.bootstrap_distribution = values


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_interval_is_scipys_from_the_same_distribution(method):
  rng = np.random.default_rng(12)
  x = np.concatenate([rng.random((2, 30)), rng.exponential(1.0, (2, 30))])  # skewed: a != 0
  for confidence in (0.9, 0.95):
    ours = stats.confidence_interval(x, method=method, key=4, n_resamples=500,
                                     confidence=confidence)
    dist = stats.bootstrap_means(x, key=4, n_resamples=500)
    for i in range(len(x)):
      ref = ss.bootstrap((x[i],), np.mean, n_resamples=0, method=method,
                         confidence_level=confidence,
                         bootstrap_result=_Distribution(dist[i])).confidence_interval
      assert (ours.low[i], ours.high[i]) == pytest.approx((ref.low, ref.high), rel=1e-12)


def test_bootstrap_interval_is_close_to_scipys_own_resamples():
  x = np.random.default_rng(13).exponential(1.0, 60)
  ref = ss.bootstrap((x,), np.mean, n_resamples=2000, method="bca", rng=0).confidence_interval
  ours = stats.confidence_interval(x, method="bca", n_resamples=2000)
  width = ref.high - ref.low
  assert abs(ours.low - ref.low) < 0.08 * width and abs(ours.high - ref.high) < 0.08 * width


def test_t_interval_and_effect_size():
  a, b = paired_cases(30, seed=14)
  ci = stats.mean_difference(a, b, confidence=0.9)
  ref = ss.ttest_rel(a, b, axis=-1).confidence_interval(0.9)
  np.testing.assert_allclose([ci.low, ci.high], [ref.low, ref.high], rtol=1e-9)
  np.testing.assert_allclose(ci.estimate, (a - b).mean(1))
  d = stats.cohens_d(a, b)
  np.testing.assert_allclose(d * np.sqrt(30), ss.ttest_rel(a, b, axis=-1).statistic)
  assert stats.cohens_d([1.0, 1.0], [0.0, 0.0]) == np.inf


def test_t_distribution_functions_match_scipy():
  t = np.array([-1e4, -30.0, -2.0, -1e-9, 0.0, 1e-9, 0.5, 3.0, 40.0, 1e4])
  p = np.array([1e-12, 1e-6, 0.01, 0.3, 0.7, 0.975, 1 - 1e-9])
  for df in (1.0, 2.5, 30.0, 1e6):
    np.testing.assert_allclose(stats.t_sf(t, df), ss.t.sf(t, df), rtol=5e-9, atol=1e-300)
    np.testing.assert_allclose(stats.t_cdf(t, df), ss.t.cdf(t, df), rtol=5e-9, atol=1e-300)
    np.testing.assert_allclose(stats.t_ppf(p, df), ss.t.ppf(p, df), rtol=1e-6)


def test_studentized_range_matches_scipy():
  q = np.array([0.1, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 12.0, 20.0])
  k = np.array([2.0, 3.0, 10.0, 50.0])[:, None, None]
  df = np.array([1.0, 3.0, 20.0, 1000.0, np.inf])[None, :, None]
  ours = stats.studentized_range_sf(q, k, df)  # one call, one compilation
  ref = ss.studentized_range.sf(q, k, df)
  np.testing.assert_allclose(ours, ref, atol=1e-9)
  np.testing.assert_allclose(stats.studentized_range_cdf(q, k, df), 1 - ref, atol=1e-9)
  # k = 2 is the two-sided t-test, exactly, at any df (SciPy drifts by 3e-6 at df = 1e5).
  df = np.geomspace(1, 1e8, 17)[:, None]
  np.testing.assert_allclose(stats.studentized_range_sf(q, 2, df),
                             2 * ss.t.sf(q / np.sqrt(2), df), rtol=1e-9, atol=1e-13)


def _holm_reference(p):
  m, order = len(p), np.argsort(p)
  out, running = np.empty(m), 0.0
  for rank, i in enumerate(order):
    running = max(running, min(1.0, (m - rank) * p[i]))
    out[i] = running
  return out


def test_corrections():
  rng = np.random.default_rng(15)
  p = np.concatenate([rng.random((4, 9)) ** 3, [[0.01, 0.01, 0.5, 1.0, 0.0, 0.2, 0.2, 0.3,
                                                0.04]]])
  for method in ("bh", "by"):
    np.testing.assert_allclose(stats.adjust(p, method=method),
                               ss.false_discovery_control(p, axis=-1, method=method))
  np.testing.assert_allclose(stats.adjust(p, method="holm"),
                             np.stack([_holm_reference(row) for row in p]))
  np.testing.assert_allclose(stats.adjust(p, method="bonferroni"), np.minimum(1, 9 * p))
  np.testing.assert_array_equal(stats.adjust(p, method="none"), p)
  with pytest.raises(ValueError, match="pvalues must be between 0 and 1"):
    stats.adjust([0.5, 1.5])


@pytest.mark.parametrize("k", [3, 4])
def test_tukey_oneway_matches_scipy(k):
  x = np.random.default_rng(k).random((k, 30))
  ours = stats.tukey_hsd(x, design="oneway")
  ref = ss.tukey_hsd(*x)
  np.testing.assert_allclose(ours.statistic, ref.statistic, atol=1e-15)
  np.testing.assert_allclose(ours.pvalue, ref.pvalue, atol=1e-9)


def test_tukey_blocked_is_the_two_way_anova():
  x = np.random.default_rng(16).random((4, 30)) + np.linspace(0, 1, 30)  # strong query effect
  k, n = x.shape
  means = x.mean(1)
  resid = x - means[:, None] - x.mean(0) + x.mean()
  mse = (resid ** 2).sum() / ((k - 1) * (n - 1))
  q = np.abs(means[:, None] - means) / np.sqrt(mse / n)
  ref = ss.studentized_range.sf(q, k, (k - 1) * (n - 1))
  np.testing.assert_allclose(stats.tukey_hsd(x).pvalue, ref, atol=1e-9)
  # Two systems: the blocked Tukey HSD is the paired t-test.
  two = stats.tukey_hsd(x[:2]).pvalue[0, 1]
  assert two == pytest.approx(ss.ttest_rel(x[0], x[1]).pvalue, rel=1e-8)
  # Blocking removes the query effect: more power than the one-way design here.
  assert stats.tukey_hsd(x).pvalue[0, 3] < stats.tukey_hsd(x, design="oneway").pvalue[0, 3]


def test_pairwise_all_tests_and_pairs():
  rng = np.random.default_rng(17)
  x = rng.random((4, 30)) + np.array([[0.0], [0.05], [0.3], [0.31]])
  for test in stats.TESTS:
    res = stats.pairwise(x, test=test, n_resamples=500)
    np.testing.assert_array_equal(res.reference, [0, 0, 0, 1, 1, 2])
    np.testing.assert_array_equal(res.system, [1, 2, 3, 2, 3, 3])
    np.testing.assert_allclose(res.difference, x[res.system].mean(1) - x[res.reference].mean(1))
    assert res.significant.dtype == bool and (res.adjusted >= res.pvalue - 1e-15).all()
  base = stats.pairwise(x, pairs="baseline", correction="bonferroni")
  single = stats.ttest(x[1:], x[0]).pvalue
  np.testing.assert_allclose(base.pvalue, single)
  np.testing.assert_allclose(base.adjusted, np.minimum(1, 3 * single))
  tukey = stats.pairwise(x, test="tukey", pairs=[(0, 2), (3, 1)])
  np.testing.assert_allclose(tukey.pvalue, stats.tukey_hsd(x).pvalue[[2, 1], [0, 3]])
  np.testing.assert_array_equal(tukey.adjusted, tukey.pvalue)  # Tukey: no further correction


# ----------------------------------------------------------------------------------------------
# Alignment and errors.


def test_align_by_query_id_and_missing_policies():
  per = {"a": {"q1": 0.5, "q2": 0.1, "q3": 0.2}, "b": {"q3": 0.7, "q1": 0.4}}
  with pytest.raises(ValueError, match=r"system 'b' has no value for 1 of the 3 queries "
                                       r"\('q2'\); pass missing='zero'"):
    stats.align(per)
  zero = stats.align(per, missing="zero")
  assert zero.queries == ("q1", "q2", "q3")
  np.testing.assert_array_equal(zero.values, [[0.5, 0.1, 0.2], [0.4, 0.0, 0.7]])
  inter = stats.align(per, missing="intersect")
  assert inter.queries == ("q1", "q3")
  np.testing.assert_array_equal(inter.values, [[0.5, 0.2], [0.4, 0.7]])
  arrays = stats.align({"a": [1.0, 2.0], "b": np.array([3.0, 4.0])})
  assert arrays.queries == ("0", "1") and arrays.values.shape == (2, 2)


@pytest.mark.parametrize("call, message", [
    (lambda: stats.align({"a": {"q1": float("nan")}}), "system 'a', query 'q1': the value is NaN"),
    (lambda: stats.align({"a": {"q1": float("inf")}}), "system 'a', query 'q1': the value is inf"),
    (lambda: stats.align({"a": {"q1": None}}), "system 'a', query 'q1': the value is None"),
    (lambda: stats.align({"a": [0.5, -np.inf]}), "system 'a', query '1': the value is -inf"),
    (lambda: stats.align({"a": {"q1": 1.0}, "b": [1.0]}), "all be {qid: value} dicts or all"),
    (lambda: stats.align({"a": [1.0, 2.0], "b": [1.0]}), "1-D of one length"),
    (lambda: stats.align({"a": {"q1": 1.0}, "b": {"q2": 1.0}}, missing="intersect"),
     "no query has a value for every system"),
    (lambda: stats.align({}), "non-empty dict"),
    (lambda: stats.align({"a": {"q": 1.0}}, missing="drop"), "missing must be one of"),
    (lambda: stats.ttest([1.0, 2.0, 3.0], [1.0, 2.0]), "same number of queries"),
    (lambda: stats.ttest([1.0], [2.0]), "at least 2 queries"),
    (lambda: stats.ttest([1.0, np.inf], [1.0, 2.0]), "a must be finite, got inf at index"),
    (lambda: stats.ttest([1.0, 2.0], [1.0, 2.0], alternative="two_sided"),
     "alternative must be one of"),
    (lambda: stats.ttest(np.ones((2, 3)), np.ones((3, 3))), "do not broadcast"),
    (lambda: stats.randomization_test([1.0, 2.0], [2.0, 1.0], key="seed"), "key must be"),
    (lambda: stats.randomization_test([1.0, 2.0], [2.0, 1.0], n_resamples=0),
     "n_resamples must be a positive integer"),
    (lambda: stats.randomization_test(np.ones(30), np.zeros(30), method="exact"),
     "at most 24 queries, got 30"),
    (lambda: stats.confidence_interval([1.0, 2.0], confidence=95), "confidence must be"),
    (lambda: stats.wilcoxon(np.ones(201), np.zeros(201), method="exact"),
     "at most 200 queries, got 201 (use 'asymptotic')"),
    (lambda: stats.pairwise(np.ones((1, 4))), "at least 2 systems"),
    (lambda: stats.pairwise(np.ones((3, 4)), pairs=[(0, 3)]), "distinct system indices"),
    (lambda: stats.pairwise(np.ones((3, 4)), test="tukey", correction="holm"),
     "already controls the family-wise error"),
    (lambda: stats.studentized_range_sf(1.0, 1, 10), "k must be >= 2"),
    (lambda: stats.t_ppf(1.0, 3), "p must be strictly between 0 and 1"),
])
def test_bad_input_gets_one_clear_error(call, message):
  with pytest.raises((ValueError, TypeError), match=re.escape(message)):
    call()


# ----------------------------------------------------------------------------------------------
# jaxrank.compare: reports from per-query values and from runs, formats, plots, the command.


def synthetic_runs(n_queries=30, systems=("base", "better", "same"), seed=0):
  """Qrels and runs whose quality differs: 'better' scores relevant documents higher."""
  rng = np.random.default_rng(seed)
  qrels, runs = {}, {name: {} for name in systems}
  for q in range(n_queries):
    qid = f"q{q:02d}"
    grades = rng.integers(0, 3, 20) * (rng.random(20) < 0.4)
    qrels[qid] = {f"d{j}": int(g) for j, g in enumerate(grades)}
    for name in systems:
      boost = 1.5 if name == "better" else 0.3
      scores = rng.random(20) + boost * grades * rng.random(20)
      runs[name][qid] = {f"d{j}": float(s) for j, s in enumerate(scores)}
  return qrels, runs


def test_compare_runs_agrees_with_evaluate_run_and_the_tests():
  from jaxrank import compare
  from jaxrank import numpy as jrn
  qrels, runs = synthetic_runs()
  report = compare.compare_runs(runs, qrels, ["map", "ndcg@10"], pairs="all")
  assert report.systems == ("base", "better", "same") and report.measures == ("map", "ndcg@10")
  per = {n: jrn.evaluate_run(r, qrels, ["map", "ndcg@10"]) for n, r in runs.items()}
  for j, m in enumerate(report.measures):
    x = np.array([[per[n][m][q] for q in report.queries] for n in report.systems])
    np.testing.assert_allclose(report.means[:, j], x.mean(1))
    np.testing.assert_allclose(report.values[j], x)
    res = report.pairs[m]
    np.testing.assert_allclose(res.pvalue, stats.ttest(x[res.system], x[res.reference]).pvalue)
    np.testing.assert_allclose(res.adjusted, stats.adjust(res.pvalue, method="holm"))
    ci = stats.confidence_interval(x)
    np.testing.assert_allclose([report.low[:, j], report.high[:, j]], [ci.low, ci.high])
  # 'better' is significantly better than both others on both measures, nothing else is.
  for m in report.measures:
    assert report.better_than(m) == [[], [0, 2], []]
  table = report.to_string()
  assert table.splitlines()[2].split()[:5] == ["b", "better", f"{report.means[1, 0]:.4f}",
                                               "ac", f"{report.means[1, 1]:.4f}"]


def test_report_formats():
  import csv
  import io as stdio
  import json
  from jaxrank import compare
  qrels, runs = synthetic_runs(systems=("base", "better"))
  runs = {"base_run": runs["base"], "better&co": runs["better"]}
  report = compare.compare_runs(runs, qrels, ["P_5", "ndcg_cut_10"])
  md = report.to_string("markdown", pvalues=True).splitlines()
  assert md[0] == "|  | run | P_5 | ndcg_cut_10 |" and md[1] == "| --- | --- | ---: | ---: |"
  assert md[3].startswith("| b | better&co | **") and "<sup>a</sup>" in md[3]
  assert md[5].startswith("letters: significantly better than that run (paired t-test")
  assert "| P_5 | better&co | base_run | +" in report.to_string("markdown", pvalues=True)
  tex = report.to_string("latex")
  assert "\\begin{tabular}{llrr}" in tex and "base\\_run" in tex and "better\\&co" in tex
  assert "P\\_5" in tex and "\\textbf{" in tex and "$^{a}$" in tex
  # a complete table environment, as ranx writes it: caption (the legend) and label
  lines = tex.splitlines()
  assert lines[:3] == ["% needs \\usepackage{booktabs}", "\\begin{table}[ht]", "\\centering"]
  assert lines[3].startswith("\\caption{Mean over 30 queries; the best mean of each measure in "
                             "bold. Superscripts: significantly better than the run of that "
                             "letter (paired t-test, Holm correction, alpha 0.05, two-sided; ")
  assert lines[4:6] == ["\\label{tab:comparison}", "\\begin{tabular}{llrr}"]
  assert lines[-2:] == ["\\end{tabular}", "\\end{table}"] and tex.count("\\caption{") == 1
  both = report.to_string("latex", pvalues=True)
  assert both.count("\\begin{table}[ht]") == both.count("\\end{table}") == 2
  assert "\\label{tab:comparison-pairs}" in both and "95\\% confidence interval" in both
  assert "p-value adjusted (Holm correction)" in both
  rows = list(csv.reader(stdio.StringIO(report.to_string("csv", digits=3))))
  assert rows[0] == ["label", "run", "P_5", "P_5 better than", "ndcg_cut_10",
                     "ndcg_cut_10 better than"]
  assert rows[2][:2] == ["b", "better&co"] and rows[2][3] == "a" and len(rows[2][2]) == 5
  pairs = list(csv.reader(stdio.StringIO(report.to_string("csv", pvalues=True))))
  assert pairs[0][:4] == ["measure", "run", "vs", "difference"] and len(pairs) == 3
  # p-values (and Cohen's d) at full precision: the shortest text that reads back the same
  for row, m in zip(pairs[1:], report.measures):
    res = report.pairs[m]
    assert [float(row[6]), float(row[7]), float(row[8])] == [
        float(res.effect[0]), float(res.pvalue[0]), float(res.adjusted[0])]
    assert row[7] == repr(float(res.pvalue[0]))
  data = json.loads(report.to_string("json"))
  assert data["settings"]["test"] == "t" and data["queries"] == 30
  assert data["systems"][1]["measures"]["P_5"]["better_than"] == ["base_run"]
  assert {c["measure"] for c in data["comparisons"]} == {"P_5", "ndcg_cut_10"}
  with pytest.raises(ValueError, match="format must be one of"):
    report.to_string("html")


def test_compare_missing_queries_and_dataframes():
  pd = pytest.importorskip("pandas")
  from jaxrank import compare, io
  qrels, runs = synthetic_runs(n_queries=12, systems=("base", "better"))
  del runs["better"]["q03"], runs["better"]["q07"]
  with pytest.raises(ValueError, match=r"system 'better' has no value for 2 of the 12 queries "
                                       r"\('q03', 'q07'\)"):
    compare.compare_runs(runs, qrels, "map")
  zero = compare.compare_runs(runs, qrels, "map", missing="zero")
  inter = compare.compare_runs(runs, qrels, "map", missing="intersect")
  assert len(zero.queries) == 12 and len(inter.queries) == 10
  assert zero.values[0, 1, zero.queries.index("q03")] == 0.0
  frames = {name: io.run_to_frame(run) for name, run in runs.items()}
  via_frames = compare.compare_runs(frames, io.qrels_to_frame(qrels), "map", missing="zero")
  np.testing.assert_allclose(via_frames.means, zero.means)
  assert isinstance(frames["base"], pd.DataFrame)


@pytest.mark.parametrize("call, message", [
    (lambda c: c.compare({"a": {"m": [1.0, 2.0]}}), "at least 2 systems"),
    (lambda c: c.compare({"a": {"m": [1.0, 2.0]}, "b": {"n": [1.0, 2.0]}}),
     "every system must have the same measures"),
    (lambda c: c.compare({"a": {"m": 0.5}, "b": {"m": 0.4}}), "got the number 0.5 (a mean?)"),
    (lambda c: c.compare({"a": {"m": [1.0, 2.0]}, "b": {"m": [2.0, 3.0]}}).better_than("x"),
     "measure must be one of ['m']"),
    (lambda c: c.compare_runs({"a": {"q": {"d": 1.0}}, "b": {"q": {"d": 1.0}}},
                              {"q": {"d": 1}}, "num_q"), "has no per-query values"),
    (lambda c: c.compare_runs({"a": {"q": {"d": 1.0}}, "b": {"x": {"d": 1.0}}},
                              {"q": {"d": 1}}, "map"), "run 'b': no query of the run"),
    (lambda c: c.compare_runs({"a": {"q": {"d": 1.0}}, "b": {"q": {"d": 1.0}}}, {}, "map",
                              missing="zero"), "has judgments in the qrels (no queries)"),
    # values that are not finite numbers: the system and the query, as for NaN (was: "index
    # (0, 1)" for an infinity; "NaN ... under empty='nan'" for None)
    (lambda c: c.compare({"a": {"m": {"q1": 1.0, "q2": 2.0}},
                          "b": {"m": {"q1": 1.0, "q2": np.inf}}}),
     "measure 'm', system 'b', query 'q2': the value is inf; per-query values must be finite"),
    (lambda c: c.compare({"a": {"m": {"q1": -np.inf, "q2": 2.0}}, "b": {"m": {"q1": 1.0}}},
                         missing="zero"),
     "measure 'm', system 'a', query 'q1': the value is -inf; per-query values must be"),
    (lambda c: c.compare({"a": {"m": [1.0, 2.0]}, "b": {"m": np.array([np.inf, 1.0])}}),
     "measure 'm', system 'b', query '0': the value is inf"),
    (lambda c: c.compare({"a": {"m": {"q1": 1.0, "q2": 2.0}}, "b": {"m": {"q1": None, "q2": 1}}}),
     "measure 'm', system 'b', query 'q1': the value is None; every per-query value must be a "
     "number"),
    (lambda c: c.compare({"a": {"m": [1.0, None]}, "b": {"m": [1.0, 2.0]}}),
     "measure 'm', system 'a', query '1': the value is None"),
    (lambda c: c.compare({"a": {"m": (1.0, float("nan"))}, "b": {"m": [1.0, 2.0]}}),
     "measure 'm', system 'a', query '1': the value is NaN (a query without relevant documents "
     "under empty='nan'?)"),
])
def test_compare_errors(call, message):
  from jaxrank import compare
  with pytest.raises((ValueError, TypeError), match=re.escape(message)):
    call(compare)


def _write_runs(tmp_path, runs, qrels):
  from jaxrank import io
  io.write_qrels(qrels, tmp_path / "qrels.txt")
  paths = []
  for name, run in runs.items():
    io.write_run(run, tmp_path / f"{name}.run")
    paths.append(str(tmp_path / f"{name}.run"))
  return str(tmp_path / "qrels.txt"), paths


def test_cli_compare(tmp_path, capsys):
  import json
  from jaxrank import cli, compare
  qrels, runs = synthetic_runs()
  qrels_path, run_paths = _write_runs(tmp_path, runs, qrels)
  code = cli.main(["compare", qrels_path, *run_paths, "-m", "map", "-m", "P_10",
                   "--format", "json"])
  out, err = capsys.readouterr()
  assert code == 0 and err == ""
  data = json.loads(out)
  expected = compare.compare_runs(runs, qrels, ["map", "P_10"])
  assert [s["name"] for s in data["systems"]] == ["base", "better", "same"]
  assert data["systems"][1]["measures"]["map"]["mean"] == pytest.approx(expected.means[1, 0])
  code = cli.main(["compare", qrels_path, *run_paths, "-m", "map", "--test", "randomization",
                   "--n-resamples", "500", "--pairs", "all", "--correction", "bh", "--p-values",
                   "--names", "x,y,z"])
  out, _ = capsys.readouterr()
  assert code == 0 and out.splitlines()[0].split() == ["run", "map"]
  assert "randomization test, Benjamini-Hochberg correction" in out and "| " not in out
  assert len([line for line in out.splitlines() if line.startswith("map ")]) == 3


@pytest.mark.parametrize("args, message", [
    (["one.run"], "give at least two runs to compare, got 1"),
    (["a.run", "b.run", "--names", "x"], "--names must give 2 non-empty names"),
    (["a.run", "b.run", "-m", "nonsense"], "nonsense"),
    (["a.run", "missing.run"], "missing.run"),
    (["a.run", "b.run", "--alpha", "2"], "alpha must be a number between 0 and 1, got 2.0"),
    (["a.run", "b.run", "-c", "--missing", "intersect"], "-c means --missing zero"),
])
def test_cli_compare_errors_are_one_line(tmp_path, capsys, args, message):
  from jaxrank import cli
  qrels, runs = synthetic_runs(n_queries=4, systems=("a", "b"))
  qrels_path, _ = _write_runs(tmp_path, runs, qrels)
  code = cli.main(["compare", qrels_path, *[str(tmp_path / a) if a.endswith(".run") else a
                                             for a in args]])
  out, err = capsys.readouterr()
  assert code != 0 and out == "" and err.count("\n") == 1 and message in err
  assert err.startswith("jaxrank: error: ")


def test_cli_compare_says_what_the_command_takes(tmp_path, capsys):
  """The command's options in its errors, not the library's (`missing='zero'`); stdin read
  once; --plot names a file of a known format, checked before the work."""
  from jaxrank import cli
  qrels, runs = synthetic_runs(n_queries=6, systems=("full", "partial"))
  del runs["partial"]["q02"]
  qrels_path, (full, partial) = _write_runs(tmp_path, runs, qrels)

  def error(*args):
    code = cli.main(["compare", *map(str, args)])
    out, err = capsys.readouterr()
    assert code == 1 and out == "" and err.count("\n") == 1, (code, out, err)
    return err

  err = error(qrels_path, full, partial, "-m", "map")
  assert "system 'partial' has no value for 1 of the 6 queries ('q02')" in err
  assert err.endswith("pass --missing zero (or -c, as trec_eval) or --missing intersect\n")
  assert "missing='" not in err
  err = error("-", "-", full)  # stdin can be read once
  assert "QRELS and RUN 1 cannot all be standard input ('-'): it can be read once" in err
  err = error(qrels_path, "-", "-")
  assert "RUN 1 and RUN 2 cannot all be standard input ('-')" in err
  assert "--plot must name a file (FILE.png, .pdf, .svg, ...), got ''" in error(
      qrels_path, full, partial, "-c", "--plot", "")
  assert f"got the directory {str(tmp_path)!r}; give e.g." in error(
      qrels_path, full, partial, "-c", "--plot", tmp_path)
  assert "--plot FILE's extension picks the image format, one of" in error(
      qrels_path, full, partial, "-c", "--plot", tmp_path / "plot")
  assert "does not exist" in error(qrels_path, full, partial, "-c", "--plot",
                                   tmp_path / "nowhere" / "p.png")
  assert sorted(p.name for p in tmp_path.iterdir()) == ["full.run", "partial.run", "qrels.txt"]
  # with -c it works; a run may come from stdin
  assert cli.main(["compare", qrels_path, full, partial, "-c", "-m", "map"]) == 0
  from_file = capsys.readouterr().out
  with open(partial) as f, pytest.MonkeyPatch.context() as mp:
    mp.setattr("sys.stdin", f)
    assert cli.main(["compare", qrels_path, full, "-", "-c", "-m", "map",
                     "--names", "full,partial"]) == 0
  assert capsys.readouterr().out == from_file


def test_compare_columns_are_trec_evals_printed_names(tmp_path, capsys):
  """`-m P.5` is the column P_5, as `jaxrank evaluate` prints it (was: P.5)."""
  from jaxrank import cli, compare
  qrels, runs = synthetic_runs(n_queries=8, systems=("a", "b"))
  report = compare.compare_runs(runs, qrels, ["P.5", "ndcg_cut.10", "P_5", "ndcg@10",
                                              "recall_10", "map"])
  assert report.measures == ("P_5", "ndcg_cut_10", "ndcg@10", "recall_10", "map")
  assert report.better_than("P.5") == report.better_than("P_5")
  qrels_path, paths = _write_runs(tmp_path, runs, qrels)
  for fmt, header in [("table", None), ("csv", "label,run,P_10,P_10 better than,"),
                      ("markdown", "|  | run | P_10 | ndcg_cut_10 | iprec_at_recall_0.50 |")]:
    assert cli.main(["compare", qrels_path, *paths, "-m", "P.10", "-m", "ndcg_cut.10",
                     "-m", "iprec_at_recall.0.5", "--format", fmt]) == 0
    out = capsys.readouterr().out
    if header is None:
      assert out.splitlines()[0].split() == ["run", "P_10", "ndcg_cut_10",
                                             "iprec_at_recall_0.50"]
    else:
      assert out.startswith(header)
  assert cli.main(["evaluate", qrels_path, paths[0], "-m", "P.10"]) == 0
  assert capsys.readouterr().out.startswith("P_10 ")


def test_compare_help_says_how_its_defaults_differ_from_ranx(capsys):
  from jaxrank import cli
  with pytest.raises(SystemExit):
    cli.main(["compare", "--help"])
  out = " ".join(capsys.readouterr().out.split())
  assert "The defaults are not ranx's" in out
  assert "`--pairs all --correction none --alpha 0.01` (--alpha: ranx's max_p) gives ranx's " \
         "letters" in out


def test_plots(tmp_path, capsys):
  matplotlib = pytest.importorskip("matplotlib")
  matplotlib.use("Agg")
  from jaxrank import cli, compare
  qrels, runs = synthetic_runs()
  report = compare.compare_runs(runs, qrels, ["map", "P_5"])
  fig = compare.plot_differences(report, measure="P_5", system="better")
  heights = [p.get_height() for p in fig.axes[0].patches]
  d = report.values[1, 1] - report.values[1, 0]
  assert heights == sorted(heights, reverse=True) and sorted(heights) == sorted(d.tolist())
  assert "p = " in fig.axes[0].get_title()
  fig = compare.plot_means(report, measure="map")
  assert len(fig.axes[0].get_xticklabels()) == 3
  assert len(compare.plot_summary(report).axes) == 2 * 3
  qrels_path, run_paths = _write_runs(tmp_path, runs, qrels)
  png = tmp_path / "cmp.png"
  assert cli.main(["compare", qrels_path, *run_paths, "-m", "map", "--plot", str(png)]) == 0
  assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  capsys.readouterr()


def test_example_data_five_queries():
  """The shipped example run against a noisier copy: 5 queries are too few for any test."""
  from jaxrank import compare, io
  from jaxrank.cli import example_paths
  qrels_path, run_path = example_paths()
  run = io.read_run(run_path)
  noise = np.random.default_rng(0).normal(0, 1, len(run))
  noisy = io.Run(run.qid, run.docid, run.score + noise, tag="noisy")
  report = compare.compare_runs({"example": run, "noisy": noisy}, io.read_qrels(qrels_path),
                                ["map", "P_5"], test="randomization")
  assert len(report.queries) == 5
  # Exact enumeration of 2^5 sign flips: the smallest two-sided p-value is 2/32.
  assert (report.pairs["map"].pvalue >= 1 / 16).all()
  assert report.better_than("map") == [[], []]


# ----------------------------------------------------------------------------------------------
# ranx (skipped without it): its compare's statistics on the same per-query values.


def test_same_p_values_as_ranx():
  pytest.importorskip("ranx", reason="ranx is in the [bench] extra: pip install -e '.[bench]'")
  from ranx.statistical_tests import compute_statistical_significance
  rng = np.random.default_rng(21)
  x = rng.random((3, 40)) + np.array([[0.0], [0.08], [0.1]])
  names = ["a", "b", "c"]
  scores = {n: {"m": x[i]} for i, n in enumerate(names)}
  pairs = stats.pairwise(x, correction="none")
  tukey = stats.pairwise(x, test="tukey", design="oneway")
  fisher = stats.pairwise(x, test="randomization", pvalue="ranx", n_resamples=2000,
                          correction="none")
  ranx_t = compute_statistical_significance(names, scores, stat_test="student")
  ranx_tukey = compute_statistical_significance(names, scores, stat_test="tukey")
  ranx_fisher = compute_statistical_significance(names, scores, stat_test="fisher",
                                                 n_permutations=2000)
  for k, (i, j) in enumerate(zip(pairs.reference, pairs.system)):
    key = frozenset([names[i], names[j]])
    assert pairs.pvalue[k] == pytest.approx(ranx_t[key]["m"]["p_value"], rel=1e-9)
    assert tukey.pvalue[k] == pytest.approx(ranx_tukey[key]["m"]["p_value"], abs=1e-9)
    p = ranx_fisher[key]["m"]["p_value"]
    assert abs(fisher.pvalue[k] - p) <= 5 * np.sqrt(p * (1 - p) / 2000) + 2 / 2000


def test_ranx_letters_with_all_pairs_no_correction_and_its_max_p():
  """docs/stats.md: `pairs="all", correction="none", alpha=max_p` gives ranx's letters (its
  Report's superscripts) and its t-test p-values; jaxrank's defaults (baseline, Holm) do not."""
  pytest.importorskip("ranx", reason="ranx is in the [bench] extra: pip install -e '.[bench]'")
  from ranx.data_structures import Report as RanxReport
  from ranx.statistical_tests import compute_statistical_significance
  from jaxrank import compare
  rng = np.random.default_rng(5)
  x = rng.random((5, 50)) + np.array([[0.0], [0.05], [0.12], [0.15], [0.3]])
  names = ["r1", "r2", "r3", "r4", "r5"]
  scores = {n: {"m": x[i]} for i, n in enumerate(names)}
  for max_p in (0.01, 0.05):
    comparisons = compute_statistical_significance(names, scores, stat_test="student",
                                                   max_p=max_p)
    theirs = RanxReport(model_names=names, results={n: {"m": float(x[i].mean())}
                                                    for i, n in enumerate(names)},
                        comparisons=comparisons, metrics=["m"], max_p=max_p, win_tie_loss={},
                        stat_test="student")
    mine = compare.compare({n: {"m": x[i]} for i, n in enumerate(names)}, pairs="all",
                           correction="none", alpha=max_p)
    letters = ["".join(mine.labels[k] for k in row) for row in mine.better_than("m")]
    assert letters == [theirs.get_superscript_for_latex(n, "m") for n in names]
    res = mine.pairs["m"]
    for k, (i, j) in enumerate(zip(res.reference, res.system)):
      assert res.pvalue[k] == pytest.approx(
          comparisons[frozenset([names[i], names[j]])]["m"]["p_value"], rel=1e-9)
    assert any(letters) and sum(map(len, letters)) > sum(
        map(len, compare.compare({n: {"m": x[i]} for i, n in enumerate(names)},
                                 alpha=max_p).better_than("m")))
