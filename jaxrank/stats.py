"""``jaxrank.stats``: is system B really better than system A on these queries?

Significance tests, confidence intervals, effect sizes and multiple-comparison corrections for
per-query metric values of several systems on the same queries (paired data): the output of
:func:`jaxrank.numpy.evaluate_run` or :func:`jaxrank.evaluate`, one value per query.

* Paired tests of ``a`` against ``b`` (arrays ``[..., queries]``, any leading shape, one test per
  leading index; ``alternative="greater"`` means ``mean(a - b) > 0``): :func:`ttest`,
  :func:`wilcoxon`, :func:`sign_test`, :func:`randomization_test` (Fisher's, sign flips; exact
  enumeration for small query sets), :func:`bootstrap_test` (studentized, paired).
* Many systems at once (``values [systems, queries]``): :func:`pairwise` (every pair, or each
  system against a baseline, corrected for multiple comparisons) and :func:`tukey_hsd`.
* Intervals and effect sizes: :func:`confidence_interval` (t, percentile or BCa bootstrap, of the
  mean over queries), :func:`mean_difference`, :func:`cohens_d`, :func:`bootstrap_means`.
* Corrections: :func:`adjust` (Bonferroni, Holm, Benjamini-Hochberg, Benjamini-Yekutieli).
* Distributions (JAX, float64): :func:`t_sf`, :func:`t_cdf`, :func:`t_ppf`,
  :func:`studentized_range_sf`, :func:`studentized_range_cdf`.
* Input: :func:`align` lines up ``{system: {qid: value}}`` dicts by query id.

The functions take array-likes and return NumPy float64 arrays (named tuples of them); they run
jit-compiled JAX kernels in float64 (``jax.enable_x64`` inside), so they are meant for evaluation
results on the host, not for use inside a ``jax.jit``. SciPy is not needed: the t, normal and
binomial CDFs come from ``jax.scipy.special`` and the studentized range distribution is
integrated numerically here. Every test agrees with its SciPy counterpart (see
``tests/test_stats.py``); where jaxrank differs it says so (all differences zero: ``p = 1``).

Resampling (randomization, bootstrap) is vectorised: the resamples of one call are shared by
every system and pair, and resample ``r`` is drawn from ``jax.random.fold_in(key, r)``, so a fixed
key gives the same p-values on every run, chunk size and backend.

Example:
  >>> from jaxrank import stats
  >>> a = [0.50, 0.40, 0.70, 0.30, 0.60, 0.55, 0.45, 0.65]
  >>> b = [0.40, 0.35, 0.50, 0.30, 0.45, 0.50, 0.40, 0.50]
  >>> round(float(stats.ttest(a, b).pvalue), 4)
  0.0058
  >>> round(float(stats.randomization_test(a, b).pvalue), 4)  # exact: 2^8 sign flips
  0.0156
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import special as jsp
from numpy.typing import ArrayLike

from jaxrank import _checks

__all__ = [
    "ALTERNATIVES", "CI_METHODS", "CORRECTIONS", "MISSING", "PVALUES", "TESTS", "Interval",
    "Pairwise", "PerQuery", "TestResult", "adjust", "align", "bootstrap_counts",
    "bootstrap_means", "bootstrap_test", "cohens_d", "confidence_interval", "mean_difference",
    "pairwise", "randomization_test", "sign_flips", "sign_test", "studentized_range_cdf",
    "studentized_range_sf", "t_cdf", "t_ppf", "t_sf", "ttest", "tukey_hsd", "wilcoxon",
]

ALTERNATIVES = ("two-sided", "greater", "less")
CORRECTIONS = ("none", "bonferroni", "holm", "bh", "by")
TESTS = ("t", "wilcoxon", "sign", "randomization", "bootstrap", "tukey")
PVALUES = ("plus_one", "ranx")
CI_METHODS = ("t", "percentile", "bca")
MISSING = ("error", "zero", "intersect")
_SIDE = {"greater": 0, "less": 1, "two-sided": 2}  # rows of p-values and counts

# Statistics within this fraction of (sum |a| + sum |b|) of the observed one count as ties: float64
# rounding (~1e-13 for 10^4 queries) never changes a p-value, and no real difference is merged.
_RTOL = 1e-10
_ELEMENTS_PER_CHUNK = 1 << 22  # resamples per chunk: chunk * queries <= 4M (32 MB of float64)
_MAX_EXACT_QUERIES = 24
_MAX_EXACT_WILCOXON = 200  # the exact table is [n + 1, n (n + 1) / 2 + 1]: 32 MB at n = 200


class TestResult(NamedTuple):
  """A test's ``statistic`` and ``pvalue``, NumPy arrays of the inputs' leading shape.

  Example:
    >>> from jaxrank import stats
    >>> statistic, pvalue = stats.sign_test([[1.0, 2.0], [2.0, 1.0]], [0.0, 0.0])
    >>> statistic.tolist(), pvalue.round(4).tolist()
    ([2.0, 2.0], [0.5, 0.5])
  """
  __test__ = False  # not a pytest test class
  statistic: np.ndarray
  pvalue: np.ndarray


class Interval(NamedTuple):
  """An ``estimate`` with its confidence interval ``[low, high]`` (NumPy arrays).

  Example:
    >>> from jaxrank import stats
    >>> estimate, low, high = stats.confidence_interval([1.0, 2.0, 3.0])
    >>> float(estimate), bool(low < 2 < high)
    (2.0, True)
  """
  estimate: np.ndarray
  low: np.ndarray
  high: np.ndarray


class PerQuery(NamedTuple):
  """Per-query values of several systems, aligned: ``values[s, q]`` is system s on query q.

  Example:
    >>> from jaxrank import stats
    >>> stats.align({"a": {"q1": 1.0}, "b": {"q1": 0.5}}).values.tolist()
    [[1.0], [0.5]]
  """
  systems: tuple[str, ...]
  queries: tuple[str, ...]
  values: np.ndarray


class Pairwise(NamedTuple):
  """Tests of ``system`` against ``reference`` (index arrays ``[pairs]``) on one measure.

  ``difference = mean(system) - mean(reference)`` with its confidence interval ``[low, high]``,
  ``effect`` the paired Cohen's d, ``statistic`` and ``pvalue`` of the test, ``adjusted`` the
  p-value after the correction over the pairs, ``significant = adjusted <= alpha``.

  Example:
    >>> from jaxrank import stats
    >>> res = stats.pairwise([[0.1, 0.2, 0.3], [0.3, 0.4, 0.6]])
    >>> res.reference.tolist(), res.system.tolist(), res.difference.round(4).tolist()
    ([0], [1], [0.2333])
  """
  reference: np.ndarray
  system: np.ndarray
  difference: np.ndarray
  low: np.ndarray
  high: np.ndarray
  effect: np.ndarray
  statistic: np.ndarray
  pvalue: np.ndarray
  adjusted: np.ndarray
  significant: np.ndarray


# ----------------------------------------------------------------------------------------------
# Input checks.


def _choice(name: str, value: Any, allowed: Sequence[str]) -> str:
  _checks.check_choice(name, value, allowed)
  return value


def _positive_int(name: str, value: Any) -> int:
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
    raise ValueError(f"{name} must be a positive integer, got {value!r}")
  return int(value)


def _array(name: str, x: Any, min_queries: int = 1) -> np.ndarray:
  try:
    arr = np.asarray(x, dtype=np.float64)
  except (TypeError, ValueError):
    raise TypeError(f"{name} must be an array of numbers [..., queries], got "
                    f"{type(x).__name__}") from None
  if arr.ndim < 1:
    raise ValueError(f"{name} must have a queries axis (shape [..., queries]), got a scalar")
  if arr.shape[-1] < min_queries:
    raise ValueError(f"{name} must have at least {min_queries} queries (last axis), got "
                     f"{arr.shape[-1]}")
  bad = ~np.isfinite(arr)
  if bad.any():
    at = tuple(int(i) for i in np.argwhere(bad)[0])
    raise ValueError(f"{name} must be finite, got {arr[at]} at index {at}")
  return arr


def _paired(a: Any, b: Any, min_queries: int = 1) -> tuple[np.ndarray, np.ndarray, tuple]:
  """``a`` and ``b`` broadcast to ``[pairs, queries]``, and the leading shape."""
  a, b = _array("a", a, min_queries), _array("b", b, min_queries)
  if a.shape[-1] != b.shape[-1]:
    raise ValueError(f"a and b must have the same number of queries (last axis), got "
                     f"{a.shape[-1]} and {b.shape[-1]}")
  try:
    lead = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
  except ValueError:
    raise ValueError(f"the leading shapes of a {a.shape} and b {b.shape} do not "
                     "broadcast") from None
  q = a.shape[-1]
  a = np.broadcast_to(a, lead + (q,)).reshape(-1, q)
  b = np.broadcast_to(b, lead + (q,)).reshape(-1, q)
  return a, b, lead


def _key(key: Any) -> jax.Array:
  if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
    return jax.random.key(int(key))
  if isinstance(key, jax.Array) and (jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)
                                     or (key.dtype == jnp.uint32 and key.shape == (2,))):
    return key
  raise TypeError(f"key must be a jax.random key or an integer seed, got {key!r:.60}")


def _padded(x: np.ndarray, minimum: int = 8) -> np.ndarray:
  """x with its first axis zero-padded to a power of two (>= minimum).

  Kernels see a handful of row counts, not one per number of systems or pairs, so they compile
  a handful of times; padding rows are all zeros and are sliced off the results.
  """
  rows = x.shape[0]
  size = max(minimum, 1 << max(rows - 1, 0).bit_length())
  return np.concatenate([x, np.zeros((size - rows,) + x.shape[1:], x.dtype)]) if size > rows \
      else x


def _elementwise(kernel, *args: ArrayLike) -> np.ndarray:
  """kernel(*args) on the broadcast arrays, flattened and padded to a power of two (>= 8), so
  it compiles once per size bucket; the padding repeats the last element."""
  arrays = np.broadcast_arrays(*(np.asarray(a, np.float64) for a in args))
  shape, size = arrays[0].shape, arrays[0].size
  if size == 0:
    return np.zeros(shape)
  bucket = max(8, 1 << (size - 1).bit_length())
  flat = [np.pad(a.reshape(-1), (0, bucket - size), mode="edge") for a in arrays]
  with jax.enable_x64(True):
    out = np.asarray(kernel(*(jnp.asarray(f) for f in flat)))
  return out[:size].reshape(shape)


def _out(x: jax.Array, lead: tuple[int, ...]) -> np.ndarray:
  return np.asarray(x, np.float64).reshape(lead)


# ----------------------------------------------------------------------------------------------
# Distributions (float64 under jax.enable_x64).


@jax.jit
def _t_sf(t, df):
  # P(T > |t|) = I_x(df/2, 1/2)/2, x = df/(df + t^2), for |t| > 1 (x below the mean of that beta
  # distribution, I small), and 1/2 - I_{1-x}(1/2, df/2)/2 for |t| <= 1: no digits cancel.
  t2 = t * t
  tail = jnp.where(t2 > 1, 0.5 * jsp.betainc(df / 2, 0.5, df / (df + t2)),
                   0.5 - 0.5 * jsp.betainc(0.5, df / 2, t2 / (df + t2)))
  return jnp.where(t >= 0, tail, 1 - tail)


def t_sf(t: ArrayLike, df: ArrayLike) -> np.ndarray:
  r"""Survival function of Student's t distribution, :math:`P(T > t)`, in float64.

  .. math:: P(T > t) = \tfrac12 I_{\nu/(\nu + t^2)}(\nu/2, 1/2) \quad (t \ge 0)

  with :math:`I` the regularized incomplete beta function (``jax.scipy.special.betainc``).

  Example:
    >>> from jaxrank import stats
    >>> stats.t_sf([0.0, 2.0], 10).round(6).tolist()
    [0.5, 0.036694]
  """
  return _elementwise(_t_sf, t, df)


def t_cdf(t: ArrayLike, df: ArrayLike) -> np.ndarray:
  """Cumulative distribution function of Student's t distribution, :math:`P(T \\le t)`.

  Example:
    >>> from jaxrank import stats
    >>> stats.t_cdf([-2.0, 0.0], 10).round(6).tolist()
    [0.036694, 0.5]
  """
  return t_sf(-np.asarray(t, np.float64), df)


@jax.jit
def _t_ppf(p, df):
  # Bisection on v = asinh(t) in [-700, 700]: the CDF is monotone in v, and v has float64
  # resolution relative to t from the centre to the far tails (t ~ 1e300); 110 halvings.
  def step(_, lohi):
    lo, hi = lohi
    mid = (lo + hi) / 2
    below = _t_sf(-jnp.sinh(mid), df) < p  # the CDF at sinh(mid), without 1 - sf
    return jnp.where(below, mid, lo), jnp.where(below, hi, mid)
  edge = jnp.full(jnp.broadcast_shapes(p.shape, df.shape), 700.0)
  lo, hi = jax.lax.fori_loop(0, 110, step, (-edge, edge))
  return jnp.sinh((lo + hi) / 2)


def t_ppf(p: ArrayLike, df: ArrayLike) -> np.ndarray:
  """Quantile function (inverse CDF) of Student's t distribution, by bisection on the CDF.

  Example:
    >>> from jaxrank import stats
    >>> stats.t_ppf([0.025, 0.975], 10).round(6).tolist()
    [-2.228139, 2.228139]
  """
  p = np.asarray(p, np.float64)
  if ((p <= 0) | (p >= 1) | np.isnan(p)).any():
    raise ValueError(f"p must be strictly between 0 and 1, got {p}")
  return _elementwise(_t_ppf, p, df)


def _gauss_legendre(lo: float, hi: float, panels: int, order: int) -> tuple[np.ndarray, ...]:
  """Nodes and weights of composite Gauss-Legendre quadrature on [lo, hi]."""
  x, w = np.polynomial.legendre.leggauss(order)
  edges = np.linspace(lo, hi, panels + 1)
  half = np.diff(edges)[:, None] / 2
  mid = (edges[:-1] + edges[1:])[:, None] / 2
  return (mid + half * x).ravel(), (half * w).ravel()


# Quadrature rules (composite Gauss-Legendre): the inner integral over z on [-9, 9]; the outer
# over y = log s on [-1, 1], mapped per df onto the core [max(lo, -8), hi] and onto the long,
# smooth left tail [lo, max(lo, -8)] that only small df have. Large df (>= 50) concentrate s
# near 1, where fewer nodes reach the same accuracy (tested against SciPy to 1e-10).
_Z_RULE = _gauss_legendre(-9.0, 9.0, 16, 12)
_RULES = {"small_df": (_gauss_legendre(-1.0, 1.0, 16, 12), _gauss_legendre(-1.0, 1.0, 6, 8)),
          "large_df": (_gauss_legendre(-1.0, 1.0, 8, 12), _gauss_legendre(-1.0, 1.0, 1, 1))}


def _range_sf_given_s(w, k):
  """P(range of k standard normals > w), for w and k [..., 1] (the z nodes go on the last axis).

  .. math:: 1 - k\\int \\phi(z) (\\Phi(z) - \\Phi(z - w))^{k-1} dz
     = k\\int \\phi(z)\\Phi(z)^{k-1} [1 - (1 - \\Phi(z-w)/\\Phi(z))^{k-1}] dz,

  the second form evaluated with log1p/expm1, so tiny tail probabilities keep their digits.
  """
  z, weights = (jnp.asarray(v) for v in _Z_RULE)
  log_phi_z = jsp.log_ndtr(z)
  ratio = jsp.ndtr(z - w) / jnp.exp(log_phi_z)
  inner = -jnp.expm1((k - 1) * jnp.log1p(-jnp.minimum(ratio, 1.0)))
  dens = jnp.exp(-z * z / 2 - 0.5 * math.log(2 * math.pi) + (k - 1) * log_phi_z)
  return k[..., 0] * jnp.sum(weights * dens * inner, axis=-1)


def _log_gamma_ratio(a):
  """``a log a - a - gammaln(a)``, stable for large a (Stirling's series from a = 20 on)."""
  big = jnp.maximum(a, 20.0)
  series = (0.5 * jnp.log(big) - 0.5 * math.log(2 * math.pi) - 1 / (12 * big)
            + 1 / (360 * big ** 3) - 1 / (1260 * big ** 5))
  small = jnp.minimum(a, 20.0)
  direct = small * jnp.log(small) - small - jsp.gammaln(small)
  return jnp.where(a >= 20, series, direct)


@functools.partial(jax.jit, static_argnames="rule")
def _studentized_range_sf(q, k, df, *, rule):
  # Outer integral over y = log(s), s^2 = chi2_df / df, whose density is
  # 2 (nu/2)^{nu/2} e^{nu y - nu e^{2y}/2} / Gamma(nu/2)
  #   = 2 exp((nu/2)(2y + 1 - e^{2y}) + a log a - a - gammaln(a)),  a = nu/2,
  # written so that nothing of size nu cancels; [lo, hi] holds it down to e^-45 of its mode.
  q, k, df = jnp.broadcast_arrays(q, k, df)
  finite = jnp.isfinite(df)
  nu = jnp.where(finite, df, 1.0)
  root = jnp.sqrt(60 / nu)  # the Gaussian regime of large df (with room for the cubic term)
  lo = -jnp.where(root < 0.3, root, 45 / nu + 0.5)
  hi = jnp.minimum(root, 0.5 * jnp.log(90 / nu + 1) + 0.5)
  split = jnp.maximum(lo, -8.0)
  ys, ws = [], []
  for (nodes, wts), a, b in zip(_RULES[rule], (split, lo), (hi, split)):
    ys.append(a[..., None] + (jnp.asarray(nodes) + 1) / 2 * (b - a)[..., None])
    ws.append(jnp.asarray(wts) * (b - a)[..., None] / 2)
  y, weights = jnp.concatenate(ys, -1), jnp.concatenate(ws, -1)
  half = nu[..., None] / 2
  log_dens = (math.log(2) - half * (jnp.expm1(2 * y) - 2 * y)
              + _log_gamma_ratio(half))
  weights = weights * jnp.exp(log_dens)
  # df = inf (s = 1): one node y = 0 of weight 1 replaces the integral.
  y = jnp.concatenate([y, jnp.zeros_like(y[..., :1])], -1)
  weights = jnp.concatenate([jnp.where(finite[..., None], weights, 0.0),
                             jnp.where(finite, 0.0, 1.0)[..., None]], -1)
  w = q[..., None] * jnp.exp(y)
  sf = jnp.sum(weights * _range_sf_given_s(w[..., None], k[..., None, None]), axis=-1)
  return jnp.where(q <= 0, 1.0, jnp.clip(sf, 0.0, 1.0))


def _check_range_args(k, df):
  k = np.asarray(k, np.float64)
  df = np.asarray(df, np.float64)
  if (np.isnan(k) | (k < 2)).any():
    raise ValueError(f"k must be >= 2 (the number of groups), got {k}")
  if (np.isnan(df) | (df <= 0)).any():
    raise ValueError(f"df must be > 0 (np.inf for the normal limit), got {df}")
  return k, df


def studentized_range_sf(q: ArrayLike, k: ArrayLike, df: ArrayLike) -> np.ndarray:
  r"""Survival function of the studentized range distribution, :math:`P(Q > q)`.

  The range of ``k`` independent standard normals divided by an independent
  :math:`s = \sqrt{\chi^2_\nu / \nu}`, :math:`\nu` = ``df`` (``np.inf``: s = 1):

  .. math:: P(Q > q) = \int_0^\infty f_s(s)\, P(\text{range}_k > q s)\, ds,

  integrated numerically in JAX (composite Gauss-Legendre over log s and over the normal
  variable; agrees with ``scipy.stats.studentized_range`` to ~1e-9, tested for k = 2..100,
  df = 1..1e6 and inf). The p-value of Tukey's HSD.

  Example:
    >>> from jaxrank import stats
    >>> stats.studentized_range_sf([0.0, 3.5, 5.0], 3, 20).round(6).tolist()
    [1.0, 0.055892, 0.005631]
  """
  k, df = _check_range_args(k, df)
  rule = "large_df" if np.all(df >= 50) else "small_df"
  return _elementwise(functools.partial(_studentized_range_sf, rule=rule), q, k, df)


def studentized_range_cdf(q: ArrayLike, k: ArrayLike, df: ArrayLike) -> np.ndarray:
  """Cumulative distribution function of the studentized range, ``1 - studentized_range_sf``.

  Example:
    >>> from jaxrank import stats
    >>> stats.studentized_range_cdf(3.5, 3, 20).round(5)
    np.float64(0.94411)
  """
  return 1 - studentized_range_sf(q, k, df)


def _binom_cdf(k, n):
  """P(X <= k) for X ~ Binomial(n, 1/2), k and n integers as floats."""
  inside = (k >= 0) & (k < n)
  value = jsp.betainc(jnp.where(inside, n - k, 1.0), jnp.where(inside, k + 1, 1.0), 0.5)
  return jnp.where(k < 0, 0.0, jnp.where(k >= n, 1.0, value))


def _all_sides(ge, le):
  """p-values [greater, less, two-sided] from P(T >= t_obs) and P(T <= t_obs)."""
  return jnp.stack([ge, le, jnp.minimum(1.0, 2 * jnp.minimum(ge, le))])


# ----------------------------------------------------------------------------------------------
# Classical paired tests.


def _studentize(mean, sd, q):
  """mean / (sd / sqrt(q)); 0 for 0/0 and +-inf for x/0 (all differences equal)."""
  se = sd / math.sqrt(q)
  return jnp.where(se > 0, mean / jnp.where(se > 0, se, 1.0),
                   jnp.where(mean == 0, 0.0, jnp.sign(mean) * jnp.inf))


@jax.jit
def _ttest(d):
  """t statistic and p-values [greater, less, two-sided] of each row of d."""
  n = d.shape[-1]
  t = _studentize(d.mean(-1), jnp.std(d, axis=-1, ddof=1), n)
  two = jsp.betainc((n - 1) / 2, 0.5, (n - 1) / (n - 1 + t * t))
  p = jnp.stack([_t_sf(t, n - 1.0), _t_sf(-t, n - 1.0), two])
  return t, jnp.where(jnp.all(d == 0, -1), 1.0, p)  # no difference: no evidence, any side


def ttest(a: ArrayLike, b: ArrayLike, *, alternative: str = "two-sided") -> TestResult:
  r"""Paired Student's t-test of ``a`` against ``b`` over the last axis (queries).

  .. math:: t = \frac{\bar d}{s_d / \sqrt n}, \quad d = a - b,\ \nu = n - 1,

  with the p-value from Student's t CDF (``jax.scipy.special.betainc``). The same statistic and
  p-value as ``scipy.stats.ttest_rel(a, b, axis=-1, alternative=...)``, except when every
  difference is zero: jaxrank returns ``t = 0, p = 1`` (SciPy: NaN).

  Args:
    a, b: per-query values ``[..., queries]`` (leading shapes broadcast; one test each).
    alternative: ``"two-sided"``, ``"greater"`` (``mean(a - b) > 0``) or ``"less"``.

  Example:
    >>> from jaxrank import stats
    >>> res = stats.ttest([0.5, 0.4, 0.7, 0.3], [0.4, 0.35, 0.5, 0.3], alternative="greater")
    >>> round(float(res.statistic), 4), round(float(res.pvalue), 4)
    (2.0494, 0.0664)
  """
  _choice("alternative", alternative, ALTERNATIVES)
  a, b, lead = _paired(a, b, min_queries=2)
  with jax.enable_x64(True):
    t, p = _ttest(jnp.asarray(_padded(a - b)))
  rows = a.shape[0]
  return TestResult(_out(t[:rows], lead), _out(p[_SIDE[alternative], :rows], lead))


@functools.lru_cache(maxsize=4)
def _wilcoxon_cdf_table(n_max: int) -> np.ndarray:
  """``table[n, k] = P(W <= k)`` of the exact signed-rank null distribution of n ranks."""
  top = n_max * (n_max + 1) // 2
  counts = np.zeros((n_max + 1, top + 1))
  row = np.zeros(top + 1)
  row[0] = 1
  counts[0] = row
  for n in range(1, n_max + 1):  # subset sums of {1..n}: 50 vector steps at most, once
    row = row + np.concatenate([np.zeros(n), row[:-n]])
    counts[n] = row
  return np.cumsum(counts, axis=1) / 2.0 ** np.arange(n_max + 1)[:, None]


def _ranks(x):
  """Average (1-based) ranks of x [..., n] along the last axis and each value's tie count."""
  srt = jnp.sort(x, axis=-1)
  search = jax.vmap(jnp.searchsorted, in_axes=(0, 0, None))
  flat, sflat = x.reshape(-1, x.shape[-1]), srt.reshape(-1, x.shape[-1])
  left = search(sflat, flat, "left").reshape(x.shape)
  right = search(sflat, flat, "right").reshape(x.shape)
  return (left + right + 1) / 2, (right - left).astype(x.dtype)


_ZERO_METHODS = ("wilcox", "pratt", "zsplit")


@jax.jit
def _wilcoxon(d, table, zero_method, correction):
  """Signed-rank statistics and p-values of each row of d (options traced: one compile).

  Returns W+, W-, the asymptotic and the exact-distribution p-values [sides, rows], the sign-flip
  form of W+ (weights, offset) and whether the exact distribution applies (no ties, no zeros).
  """
  n_all = d.shape[-1]
  wilcox, zsplit = zero_method == 0, zero_method == 2
  zero = d == 0
  nz = zero.sum(-1).astype(d.dtype)
  rank, ties = _ranks(jnp.abs(d))
  # wilcox: zeros dropped, ranks among the nonzero differences; pratt, zsplit: zeros ranked.
  rank = jnp.where(wilcox, jnp.where(zero, 0.0, rank - nz[..., None]), rank)
  count = jnp.where(wilcox, n_all - nz, float(n_all))
  # Tie correction over tied |d| groups (sum of t^3 - t = sum over members of t^2 - 1); the
  # zeros' group counts only under zsplit, as in scipy.
  in_ties = zsplit | ~zero
  tie_term = jnp.sum(jnp.where(in_ties, ties * ties - 1, 0.0), -1)
  has_ties = jnp.any(in_ties & (ties > 1), -1)
  const = jnp.where(zsplit, jnp.sum(jnp.where(zero, rank, 0.0), -1) / 2, 0.0)
  pos = jnp.where(d > 0, rank, 0.0)
  neg = jnp.where(d < 0, rank, 0.0)
  r_plus = pos.sum(-1) + const
  r_minus = neg.sum(-1) + const
  pratt = jnp.where(zero_method == 1, 1.0, 0.0)
  mean = count * (count + 1) / 4 - pratt * nz * (nz + 1) / 4
  var = count * (count + 1) * (2 * count + 1) - pratt * nz * (nz + 1) * (2 * nz + 1)
  se = jnp.sqrt(jnp.maximum(var - tie_term / 2, 0.0) / 24)
  safe = jnp.where(se > 0, se, 1.0)
  z = (r_plus - mean) / safe
  shift = jnp.where(correction, 0.5 / safe, 0.0)  # continuity correction towards the mean
  z_two = z - jnp.sign(z) * shift
  p_asym = jnp.stack([jsp.ndtr(-(z - shift)), jsp.ndtr(z + shift),
                      jnp.minimum(1.0, 2 * jnp.minimum(jsp.ndtr(-z_two), jsp.ndtr(z_two)))])
  # The exact null distribution of W+ (exact without ties; scipy rounds the statistic when
  # forced with ties: floor for the upper tail, ceil for the lower).
  rows = count.astype(jnp.int32)
  top = table.shape[-1] - 1

  def cdf(k):
    return jnp.where(k < 0, 0.0, table[rows, jnp.clip(k, 0, top).astype(jnp.int32)])

  p_exact = _all_sides(1 - cdf(jnp.floor(r_plus) - 1), cdf(jnp.ceil(r_plus)))
  # W+ under sign flips s is linear in s: s.(pos - neg)/2 + sum(pos + neg)/2 + const.
  weights = (pos - neg) / 2
  offset = (pos + neg).sum(-1) / 2 + const
  exact_ok = ~has_ties & (nz == 0)
  return r_plus, r_minus, p_asym, p_exact, weights, offset, exact_ok


def wilcoxon(a: ArrayLike, b: ArrayLike, *, alternative: str = "two-sided",
             zero_method: str = "wilcox", correction: bool = False,
             method: str = "auto") -> TestResult:
  r"""Wilcoxon signed-rank test of ``a`` against ``b`` over the last axis (queries).

  The differences :math:`d = a - b` are ranked by :math:`|d|` (ties get their average rank) and
  :math:`W^+ = \sum_{d_i > 0} \mathrm{rank}_i`. SciPy's conventions and defaults, per pair:

  * ``zero_method``: ``"wilcox"`` drops zero differences (default), ``"pratt"`` ranks them and
    drops them from :math:`W^+`, ``"zsplit"`` gives half their rank to each side;
  * ``method="auto"``: the exact null distribution for at most 50 queries without ties or zeros;
    with ties or zeros, exact enumeration of the :math:`2^n` sign flips for at most 13 queries;
    otherwise the normal approximation with the tie correction (and the continuity correction
    with ``correction=True``). Or force ``"exact"`` (at most 200 queries), ``"asymptotic"`` or
    ``"permutation"`` (enumeration, at most 24 queries).

  The statistic is SciPy's: :math:`\min(W^+, W^-)` two-sided, else :math:`W^+`. Every value agrees
  with ``scipy.stats.wilcoxon(a, b, ...)`` on each pair; all differences zero give ``p = 1``
  (SciPy: NaN).

  Example:
    >>> from jaxrank import stats
    >>> a = [0.5, 0.4, 0.7, 0.3, 0.6, 0.55, 0.45, 0.65]
    >>> b = [0.4, 0.35, 0.5, 0.3, 0.45, 0.5, 0.4, 0.5]
    >>> res = stats.wilcoxon(a, b)  # one zero difference: enumeration of 2^8 flips
    >>> float(res.statistic), round(float(res.pvalue), 4)
    (0.0, 0.0156)
  """
  _choice("alternative", alternative, ALTERNATIVES)
  _choice("zero_method", zero_method, ("wilcox", "pratt", "zsplit"))
  _choice("method", method, ("auto", "exact", "asymptotic", "permutation"))
  if not isinstance(correction, bool):
    raise TypeError(f"correction must be True or False, got {correction!r}")
  a, b, lead = _paired(a, b)
  q = a.shape[-1]
  if method == "permutation" and q > _MAX_EXACT_QUERIES:
    raise ValueError(f"method='permutation' enumerates 2^queries sign flips: at most "
                     f"{_MAX_EXACT_QUERIES} queries, got {q}")
  if method == "exact" and q > _MAX_EXACT_WILCOXON:
    raise ValueError(f"method='exact' tabulates the signed-rank distribution: at most "
                     f"{_MAX_EXACT_WILCOXON} queries, got {q} (use 'asymptotic')")
  table = _wilcoxon_cdf_table(min(q, 50) if method != "exact" else q)
  with jax.enable_x64(True):
    parts = _wilcoxon(jnp.asarray(_padded(a - b)), jnp.asarray(table),
                      _ZERO_METHODS.index(zero_method), correction)
  rows = a.shape[0]
  r_plus, r_minus, p_asym, p_exact, weights, offset, exact_ok = (
      np.asarray(v)[..., :rows] if i in (2, 3) else np.asarray(v)[:rows]
      for i, v in enumerate(parts))
  side = _SIDE[alternative]
  p_asym, p_exact = p_asym[side], p_exact[side]
  if method == "auto":  # scipy's choice, made per pair
    if q > 50:
      p = p_asym
    else:
      fallback = p_asym
      if q <= 13 and not exact_ok.all():
        fallback = _wilcoxon_enumerated(weights, offset)[side]
      p = np.where(exact_ok, p_exact, fallback)
  elif method == "permutation":
    p = _wilcoxon_enumerated(weights, offset)[side]
  else:
    p = p_exact if method == "exact" else p_asym
  p = np.where(np.any(a != b, -1), np.clip(p, 0.0, 1.0), 1.0)
  stat = np.minimum(r_plus, r_minus) if alternative == "two-sided" else r_plus
  return TestResult(_out(stat, lead), _out(p, lead))


def _wilcoxon_enumerated(weights, offset):
  """p-values [sides, pairs] of W+ over all 2^n sign flips (scipy's permutation_test, exact)."""
  p_count, q = weights.shape
  x = np.concatenate([weights, np.zeros((1, q))])
  _, counts = _enumerate(x, np.full(p_count, p_count), np.arange(p_count), offset, key=0,
                         n=2 ** q, exact=True)
  return np.asarray(_all_sides(counts[0] / 2 ** q, counts[1] / 2 ** q))


@jax.jit
def _sign_test(d):
  """Positive differences and p-values [greater, less, two-sided] of each row of d."""
  k = jnp.sum(d > 0, -1).astype(d.dtype)
  n = jnp.sum(d != 0, -1).astype(d.dtype)
  return k, jnp.where(n > 0, _all_sides(1 - _binom_cdf(k - 1, n), _binom_cdf(k, n)), 1.0)


def sign_test(a: ArrayLike, b: ArrayLike, *, alternative: str = "two-sided") -> TestResult:
  r"""Sign test of ``a`` against ``b`` over the last axis (queries).

  The statistic is :math:`k = \#\{d_i > 0\}` among the :math:`n = \#\{d_i \ne 0\}` nonzero
  differences (zeros are dropped); under the null :math:`k \sim \mathrm{Binomial}(n, 1/2)`.
  The p-value is ``scipy.stats.binomtest(k, n, 0.5, alternative).pvalue`` (two-sided:
  :math:`\min(1, 2\min(P(X \le k), P(X \ge k)))`); ``n = 0`` gives ``p = 1``.

  Example:
    >>> from jaxrank import stats
    >>> res = stats.sign_test([0.5, 0.4, 0.7, 0.3, 0.6], [0.4, 0.35, 0.5, 0.3, 0.45])
    >>> float(res.statistic), float(res.pvalue)
    (4.0, 0.125)
  """
  _choice("alternative", alternative, ALTERNATIVES)
  a, b, lead = _paired(a, b)
  with jax.enable_x64(True):
    k, p = _sign_test(jnp.asarray(_padded(a - b)))
  rows = a.shape[0]
  return TestResult(_out(k[:rows], lead), _out(p[_SIDE[alternative], :rows], lead))


# ----------------------------------------------------------------------------------------------
# Resampling: sign flips and bootstrap counts, one resample per fold_in(key, r).


def _exact_signs(r, q: int):
  """Sign vector number r of the 2^q enumeration: bit i of r set flips query i."""
  bits = (r[:, None] >> jnp.arange(q, dtype=r.dtype)[None]) & 1
  return 1.0 - 2.0 * bits.astype(jnp.float64)


def _random_signs(key, r, q: int):
  words = (q + 31) // 32
  bits = jax.vmap(lambda i: jax.random.bits(jax.random.fold_in(key, i), (words,),
                                            jnp.uint32))(r)
  unpacked = (bits[:, :, None] >> jnp.arange(32, dtype=jnp.uint32)) & 1
  return 1.0 - 2.0 * unpacked.reshape(r.shape[0], words * 32)[:, :q].astype(jnp.float64)


def _random_counts(key, r, q: int):
  """Bootstrap counts [len(r), q]: q draws per resample, one random word each (Lemire's
  multiply-shift maps a uint32 onto [0, q): half the random bits of ``randint``)."""
  def one(i):
    bits = jax.random.bits(jax.random.fold_in(key, i), (q,), jnp.uint32)
    idx = ((bits.astype(jnp.uint64) * q) >> 32).astype(jnp.int32)
    return jnp.zeros(q, jnp.float64).at[idx].add(1.0)
  return jax.vmap(one)(r)


def _chunk(n: int, q: int) -> int:
  return max(1, min(n, _ELEMENTS_PER_CHUNK // max(q, 1)))


@functools.partial(jax.jit, static_argnames=("n", "q", "kind"))
def _draw(key, *, n, q, kind):
  r = jnp.arange(n, dtype=jnp.uint32)
  return _random_signs(key, r, q) if kind == "signs" else _random_counts(key, r, q)


def sign_flips(key: jax.Array | int, n_resamples: int, n_queries: int) -> np.ndarray:
  """The random sign vectors ``[n_resamples, n_queries]`` (+1/-1) of :func:`randomization_test`.

  Row ``r`` comes from ``jax.random.fold_in(key, r)`` (32 signs per random word), so it does not
  depend on how many rows are drawn or how they are chunked.

  Example:
    >>> from jaxrank import stats
    >>> s = stats.sign_flips(0, 3, 5)
    >>> s.shape, sorted(set(s.ravel().tolist())) == [-1.0, 1.0]
    ((3, 5), True)
    >>> bool((stats.sign_flips(0, 2, 5) == s[:2]).all())
    True
  """
  n, q = _positive_int("n_resamples", n_resamples), _positive_int("n_queries", n_queries)
  with jax.enable_x64(True):
    return np.asarray(_draw(_key(key), n=n, q=q, kind="signs"))


def bootstrap_counts(key: jax.Array | int, n_resamples: int, n_queries: int) -> np.ndarray:
  """How often each query is drawn in each bootstrap resample, ``[n_resamples, n_queries]``.

  Resample ``r`` draws ``n_queries`` query indices with replacement from
  ``jax.random.fold_in(key, r)``, each ``floor(u * n_queries / 2^32)`` of a uniform 32-bit word
  ``u`` (every query has probability ``1/n_queries`` within ``2^-32``); every row sums to
  ``n_queries``. Paired: all systems share them.

  Example:
    >>> from jaxrank import stats
    >>> c = stats.bootstrap_counts(0, 4, 6)
    >>> c.shape, c.sum(axis=1).tolist()
    ((4, 6), [6.0, 6.0, 6.0, 6.0])
  """
  n, q = _positive_int("n_resamples", n_resamples), _positive_int("n_queries", n_queries)
  with jax.enable_x64(True):
    return np.asarray(_draw(_key(key), n=n, q=q, kind="counts"))


def _null_counts(statistic, obs, tol, *, n: int, chunk: int):
  """How many of the n resampled statistics are >=, <= and (in absolute value) >= ``obs``.

  ``statistic(r)`` gives the statistics ``[chunk, pairs]`` of resamples ``r``; ``lax.map`` runs
  the chunks in turn (memory of one chunk), the padding resamples ``r >= n`` are not counted.
  Values within ``tol`` of ``obs`` count as ties, i.e. as extreme.
  """
  def body(c):
    r = c * chunk + jnp.arange(chunk, dtype=jnp.uint32)
    t = statistic(r)
    valid = (r < n)[:, None]
    return jnp.stack([jnp.sum(valid & (t >= obs - tol), 0),
                      jnp.sum(valid & (t <= obs + tol), 0),
                      jnp.sum(valid & (jnp.abs(t) >= jnp.abs(obs) - tol), 0)])

  return jax.lax.map(body, jnp.arange(-(-n // chunk), dtype=jnp.uint32)).sum(0)


@functools.partial(jax.jit, static_argnames=("n", "exact", "chunk"))
def _flip_counts(key, x, ref, sys, offset, *, n, exact, chunk):
  """Sign-flip null distribution of T(s) = s.x[sys] - s.x[ref] + offset, per pair.

  Returns the observed T (s = all ones) and the counts of sign vectors whose T is >=, <= and
  (in absolute value) >= the observed one. One matrix product per chunk of sign vectors serves
  every pair: the sums per row of x, then differences per pair.
  """
  q = x.shape[-1]
  xt = x.T
  sums = jnp.ones((1, q)) @ xt
  obs = sums[0, sys] - sums[0, ref] + offset
  scale = jnp.abs(x).sum(-1)
  tol = _RTOL * (scale[sys] + scale[ref] + jnp.abs(offset))

  def flipped(r):
    s = _exact_signs(r, q) if exact else _random_signs(key, r, q)
    t = s @ xt
    return t[:, sys] - t[:, ref] + offset

  counts = _null_counts(flipped, obs, tol, n=n, chunk=chunk)
  return obs, counts


def _enumerate(x, ref, sys, offset, *, key, n, exact):
  """Host wrapper of :func:`_flip_counts`: (observed T, counts [3, pairs]) as NumPy."""
  q, pairs = x.shape[-1], len(sys)
  with jax.enable_x64(True):
    obs, counts = _flip_counts(_key(key), jnp.asarray(_padded(x)), jnp.asarray(_padded(ref)),
                               jnp.asarray(_padded(sys)),
                               jnp.asarray(_padded(np.asarray(offset, np.float64))), n=n,
                               exact=exact, chunk=_chunk(n, q))
  return np.asarray(obs, np.float64)[:pairs], np.asarray(counts, np.float64)[:, :pairs]



def _randomization(x, ref, sys, *, key, n_resamples, alternative, method, pvalue):
  q = x.shape[-1]
  if method == "auto":
    method = "exact" if q <= _MAX_EXACT_QUERIES and 2 ** q <= n_resamples else "monte-carlo"
  if method == "exact" and q > _MAX_EXACT_QUERIES:
    raise ValueError(f"method='exact' enumerates 2^queries sign flips: at most "
                     f"{_MAX_EXACT_QUERIES} queries, got {q}")
  n = 2 ** q if method == "exact" else n_resamples
  obs, counts = _enumerate(x, ref, sys, np.zeros(len(sys)), key=key, n=n,
                           exact=method == "exact")
  count = counts[_SIDE[alternative]]
  p = count / n if method == "exact" or pvalue == "ranx" else (count + 1) / (n + 1)
  stat = obs / q
  return stat, np.minimum(p, 1.0)


def randomization_test(a: ArrayLike, b: ArrayLike, *, key: jax.Array | int = 0,
                       n_resamples: int = 10_000, alternative: str = "two-sided",
                       method: str = "auto", pvalue: str = "plus_one") -> TestResult:
  r"""Fisher's randomization (paired permutation) test of ``a`` against ``b`` over queries.

  Under the null hypothesis the two systems are exchangeable on every query, so each difference
  :math:`d_i = a_i - b_i` is as likely to have the other sign. The statistic is the mean
  difference :math:`T = \bar d`; its null distribution is that of :math:`\frac1n\sum_i s_i d_i`
  over sign vectors :math:`s \in \{\pm1\}^n` (Smucker, Allan & Carterette, CIKM 2007). Two-sided
  counts :math:`|T_s| \ge |T|`.

  * ``method="exact"``: all :math:`2^n` sign vectors (at most 24 queries),
    :math:`p = \#\{s: T_s \text{ as extreme}\} / 2^n`; equal to
    ``scipy.stats.permutation_test(..., permutation_type="samples")`` with exact enumeration.
  * ``method="monte-carlo"``: ``n_resamples`` random sign vectors (row r from
    ``fold_in(key, r)``, see :func:`sign_flips`), :math:`p = (\#+1)/(R+1)` (``pvalue=
    "plus_one"``, default: the observed assignment counts as one resample, so p is never 0 and
    the test is exact in level, Phipson & Smyth 2010), or :math:`\#/R` (``pvalue="ranx"``, as
    ranx and many IR scripts; may be 0).
  * ``method="auto"`` (default): exact when :math:`2^n \le` ``n_resamples``.

  Statistics within ``1e-10 * (sum|a| + sum|b|)`` of the observed one count as ties (as extreme),
  so float rounding never changes a p-value. Every leading index is tested with the same sign
  vectors, in one matrix product per chunk of resamples.

  Returns:
    ``statistic`` the mean difference, ``pvalue``.

  Example:
    >>> from jaxrank import stats
    >>> a = [0.5, 0.4, 0.7, 0.3, 0.6, 0.55, 0.45, 0.65]
    >>> b = [0.4, 0.35, 0.5, 0.3, 0.45, 0.5, 0.4, 0.5]
    >>> res = stats.randomization_test(a, b)  # 2^8 <= 10,000: exact enumeration
    >>> round(float(res.statistic), 4), float(res.pvalue)
    (0.0938, 0.015625)
    >>> mc = stats.randomization_test(a, b, method="monte-carlo", key=1, n_resamples=2000)
    >>> 0.008 < float(mc.pvalue) < 0.025
    True
  """
  _choice("alternative", alternative, ALTERNATIVES)
  _choice("method", method, ("auto", "exact", "monte-carlo"))
  _choice("pvalue", pvalue, PVALUES)
  n_resamples = _positive_int("n_resamples", n_resamples)
  a, b, lead = _paired(a, b)
  p_count = a.shape[0]
  x = np.concatenate([a, b])
  stat, p = _randomization(x, np.arange(p_count, 2 * p_count), np.arange(p_count), key=key,
                           n_resamples=n_resamples, alternative=alternative, method=method,
                           pvalue=pvalue)
  return TestResult(stat.reshape(lead), p.reshape(lead))


@functools.partial(jax.jit, static_argnames=("n", "chunk"))
def _bootstrap_t_counts(key, d, *, n, chunk):
  q = d.shape[-1]
  mean = d.mean(-1)
  centered = d - mean[:, None]
  sd = jnp.std(d, axis=-1, ddof=1)
  t_obs = _studentize(mean, sd, q)
  tol = _RTOL * jnp.abs(t_obs)

  def resampled(r):
    w = _random_counts(key, r, q)
    m = (w @ centered.T) / q
    m2 = (w @ (centered * centered).T) / q
    var = jnp.maximum(m2 - m * m, 0.0) * q / (q - 1)
    return _studentize(m, jnp.sqrt(var), q)

  counts = _null_counts(resampled, t_obs, tol, n=n, chunk=chunk)
  return t_obs, counts


def bootstrap_test(a: ArrayLike, b: ArrayLike, *, key: jax.Array | int = 0,
                   n_resamples: int = 10_000, alternative: str = "two-sided",
                   pvalue: str = "plus_one") -> TestResult:
  r"""Paired bootstrap test of ``a`` against ``b`` (Sakai, SIGIR 2006; Efron & Tibshirani 16.4).

  The differences are shifted to mean zero (the null hypothesis), :math:`d' = d - \bar d`, and
  resampled with replacement over queries (:func:`bootstrap_counts`); the studentized statistic
  :math:`t^* = \bar{d'^*} / (s_{d'^*} / \sqrt n)` of each resample is compared with the observed
  :math:`t = \bar d / (s_d / \sqrt n)`. Two-sided counts :math:`|t^*| \ge |t|`;
  :math:`p = (\#+1)/(R+1)`, or :math:`\#/R` with ``pvalue="ranx"``.

  Returns:
    ``statistic`` the observed t, ``pvalue``.

  Example:
    >>> from jaxrank import stats
    >>> a = [0.5, 0.4, 0.7, 0.3, 0.6, 0.55, 0.45, 0.65]
    >>> b = [0.4, 0.35, 0.5, 0.3, 0.45, 0.5, 0.4, 0.5]
    >>> res = stats.bootstrap_test(a, b, n_resamples=2000)
    >>> round(float(res.statistic), 3), float(res.pvalue) < 0.02
    (3.91, True)
  """
  _choice("alternative", alternative, ALTERNATIVES)
  _choice("pvalue", pvalue, PVALUES)
  n = _positive_int("n_resamples", n_resamples)
  a, b, lead = _paired(a, b, min_queries=2)
  t, p = _bootstrap_test_flat(a - b, key=key, n=n, alternative=alternative, pvalue=pvalue)
  return TestResult(t.reshape(lead), p.reshape(lead))


def _bootstrap_test_flat(d, *, key, n, alternative, pvalue):
  q = d.shape[-1]
  with jax.enable_x64(True):
    t, counts = _bootstrap_t_counts(_key(key), jnp.asarray(_padded(d)), n=n, chunk=_chunk(n, q))
  t, counts = np.asarray(t)[:d.shape[0]], np.asarray(counts, np.float64)[_SIDE[alternative],
                                                                          :d.shape[0]]
  p = (counts + 1) / (n + 1) if pvalue == "plus_one" else counts / n
  return np.asarray(t, np.float64), np.minimum(p, 1.0)


# ----------------------------------------------------------------------------------------------
# Bootstrap distributions, confidence intervals and effect sizes.


@functools.partial(jax.jit, static_argnames=("n", "chunk"))
def _bootstrap_means(key, x, *, n, chunk):
  q = x.shape[-1]

  def body(c):
    r = c * chunk + jnp.arange(chunk, dtype=jnp.uint32)
    return _random_counts(key, r, q) @ x.T / q

  out = jax.lax.map(body, jnp.arange(-(-n // chunk), dtype=jnp.uint32))
  return out.reshape(-1, x.shape[0])[:n].T


def bootstrap_means(x: ArrayLike, *, key: jax.Array | int = 0,
                    n_resamples: int = 10_000) -> np.ndarray:
  """Bootstrap distribution of the mean over queries, ``[..., n_resamples]``.

  Every leading index (system) is resampled with the same query draws
  (:func:`bootstrap_counts`), so differences of rows are the paired bootstrap of the difference.

  Example:
    >>> from jaxrank import stats
    >>> means = stats.bootstrap_means([[0.2, 0.4, 0.9], [0.1, 0.5, 0.6]], n_resamples=5)
    >>> means.shape
    (2, 5)
  """
  n = _positive_int("n_resamples", n_resamples)
  x = _array("x", x)
  lead, q = x.shape[:-1], x.shape[-1]
  with jax.enable_x64(True):
    flat = x.reshape(-1, q)
    out = _bootstrap_means(_key(key), jnp.asarray(_padded(flat)), n=n, chunk=_chunk(n, q))
  return np.asarray(out)[:flat.shape[0]].reshape(lead + (n,))


@functools.partial(jax.jit, static_argnames="method")
def _bootstrap_interval(x, theta_b, alpha, *, method):
  theta = x.mean(-1)
  if method == "percentile":
    levels = jnp.broadcast_to(jnp.stack([alpha, 1 - alpha]), (x.shape[0], 2))
  else:  # BCa: bias correction z0 and acceleration a (jackknife of the mean: U_i = x_i - mean)
    r = theta_b.shape[-1]
    below = jnp.sum(theta_b < theta[:, None], -1) + jnp.sum(theta_b <= theta[:, None], -1)
    z0 = jsp.ndtri(below / (2 * r))
    u = x - theta[:, None]
    ss = jnp.sum(u * u, -1)
    acc = jnp.where(ss > 0, jnp.sum(u ** 3, -1) / 6 / jnp.where(ss > 0, ss, 1.0) ** 1.5, 0.0)
    z = jsp.ndtri(jnp.stack([alpha, 1 - alpha]))
    num = z0[:, None] + z[None]
    levels = jsp.ndtr(z0[:, None] + num / (1 - acc[:, None] * num))
  return theta, jax.vmap(jnp.quantile)(theta_b, levels)


def confidence_interval(x: ArrayLike, *, confidence: float = 0.95, method: str = "t",
                        key: jax.Array | int = 0, n_resamples: int = 10_000) -> Interval:
  r"""Two-sided confidence interval of the mean over the last axis (queries).

  * ``"t"``: :math:`\bar x \pm t_{1-\alpha/2,\,n-1}\, s / \sqrt n`;
  * ``"percentile"``: the :math:`\alpha/2` and :math:`1-\alpha/2` quantiles (linear
    interpolation) of the bootstrap means (:func:`bootstrap_means`);
  * ``"bca"``: bias-corrected and accelerated (Efron & Tibshirani 14.3), the bias from the
    bootstrap means, the acceleration from the jackknife of the mean,
    :math:`\hat a = \sum u_i^3 / (6 (\sum u_i^2)^{3/2})`, :math:`u_i = x_i - \bar x`.

  The bootstrap intervals are ``scipy.stats.bootstrap``'s formulas (same interval from the same
  bootstrap distribution). Every leading index shares the bootstrap draws.

  Example:
    >>> from jaxrank import stats
    >>> x = [0.2, 0.4, 0.9, 0.5, 0.3, 0.6, 0.7, 0.1]
    >>> ci = stats.confidence_interval(x)
    >>> round(float(ci.estimate), 4), round(float(ci.low), 4), round(float(ci.high), 4)
    (0.4625, 0.2393, 0.6857)
    >>> bca = stats.confidence_interval(x, method="bca", n_resamples=2000)
    >>> 0.2 < float(bca.low) < 0.35 and 0.55 < float(bca.high) < 0.7
    True
  """
  _choice("method", method, CI_METHODS)
  level = _checks.check_unit_interval("confidence", confidence)
  n = _positive_int("n_resamples", n_resamples)
  x = _array("x", x, min_queries=2)
  lead, q = x.shape[:-1], x.shape[-1]
  flat = x.reshape(-1, q)
  alpha = (1 - level) / 2
  if method == "t":
    mean = flat.mean(-1)
    half = t_ppf(1 - alpha, q - 1) * flat.std(-1, ddof=1) / math.sqrt(q)
    return Interval(mean.reshape(lead), (mean - half).reshape(lead), (mean + half).reshape(lead))
  theta_b = bootstrap_means(flat, key=key, n_resamples=n)
  with jax.enable_x64(True):
    theta, ci = _bootstrap_interval(jnp.asarray(_padded(flat)), jnp.asarray(_padded(theta_b)),
                                    jnp.float64(alpha), method=method)
  rows = flat.shape[0]
  theta, ci = np.asarray(theta)[:rows], np.asarray(ci)[:rows]
  return Interval(_out(theta, lead), ci[:, 0].reshape(lead), ci[:, 1].reshape(lead))


def mean_difference(a: ArrayLike, b: ArrayLike, *, confidence: float = 0.95, method: str = "t",
                    key: jax.Array | int = 0, n_resamples: int = 10_000) -> Interval:
  """The mean paired difference ``mean(a - b)`` over queries with its confidence interval.

  :func:`confidence_interval` of ``a - b`` (``method`` ``"t"``, ``"percentile"`` or ``"bca"``).

  Example:
    >>> from jaxrank import stats
    >>> ci = stats.mean_difference([0.5, 0.4, 0.7, 0.3], [0.4, 0.35, 0.5, 0.3])
    >>> round(float(ci.estimate), 4), round(float(ci.low), 4), round(float(ci.high), 4)
    (0.0875, -0.0484, 0.2234)
  """
  a, b, lead = _paired(a, b, min_queries=2)
  out = confidence_interval(a - b, confidence=confidence, method=method, key=key,
                            n_resamples=n_resamples)
  return Interval(*(np.asarray(v).reshape(lead) for v in out))


def cohens_d(a: ArrayLike, b: ArrayLike) -> np.ndarray:
  r"""Cohen's d for paired data (:math:`d_z`): the mean difference in standard deviations.

  .. math:: d_z = \bar d / s_d, \quad d = a - b,\ s_d \text{ with } n - 1

  (:math:`\pm\infty` when all differences are equal and nonzero, 0 when all are zero). The t
  statistic of :func:`ttest` is :math:`d_z \sqrt n`.

  Example:
    >>> from jaxrank import stats
    >>> round(float(stats.cohens_d([0.5, 0.4, 0.7, 0.3], [0.4, 0.35, 0.5, 0.3])), 4)
    1.0247
  """
  a, b, lead = _paired(a, b, min_queries=2)
  d = a - b
  mean, sd = d.mean(-1), d.std(-1, ddof=1)
  with np.errstate(divide="ignore", invalid="ignore"):
    out = np.where(sd > 0, mean / np.where(sd > 0, sd, 1.0),
                   np.where(mean == 0, 0.0, np.sign(mean) * np.inf))
  return out.reshape(lead)


# ----------------------------------------------------------------------------------------------
# Multiple comparisons.


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
  _choice("method", method, CORRECTIONS)
  p = np.asarray(pvalues, np.float64)
  if p.ndim < 1:
    raise ValueError("pvalues must have at least one axis (the family of tests), got a scalar")
  if (np.isnan(p) | (p < 0) | (p > 1)).any():
    raise ValueError(f"pvalues must be between 0 and 1, got {p[np.isnan(p) | (p < 0) | (p > 1)]}")
  m = p.shape[-1]
  if method == "none" or m == 0:
    return p.copy()
  if method == "bonferroni":
    return np.minimum(1.0, p * m)
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
def _tukey_parts(x, *, blocked):
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
  _choice("design", design, ("blocked", "oneway"))
  x = _array("values", values, min_queries=2)
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
  _choice("missing", missing, MISSING)
  if not isinstance(per_system, Mapping) or not per_system:
    raise TypeError(f"per_system must be a non-empty dict {{system: {{qid: value}}}}, got "
                    f"{type(per_system).__name__}")
  systems = tuple(str(s) for s in per_system)
  keyed = [isinstance(v, Mapping) for v in per_system.values()]
  if any(keyed) and not all(keyed):
    raise TypeError("per_system values must all be {qid: value} dicts or all be arrays, got "
                    "a mix")
  if not all(keyed):
    rows = []
    for s, v in zip(systems, per_system.values()):
      try:
        rows.append(np.asarray(v, dtype=np.float64))
      except (TypeError, ValueError):
        raise TypeError(f"system {s!r}: per-query values must be numbers, got "
                        f"{type(v).__name__}") from None
    shapes = {r.shape for r in rows}
    if len(shapes) != 1 or len(next(iter(shapes))) != 1 or not rows[0].size:
      raise ValueError(f"per_system arrays must be 1-D of one length (aligned queries), got "
                       f"shapes { {s: r.shape for s, r in zip(systems, rows)} }")
    values = np.stack(rows)
    queries = tuple(str(i) for i in range(values.shape[1]))
    _check_finite(per_system, systems, queries, values, np.ones(values.shape, bool))
    return PerQuery(systems, queries, values)
  queries = list(dict.fromkeys(q for v in per_system.values() for q in v))
  index = {q: i for i, q in enumerate(queries)}
  values = np.zeros((len(systems), len(queries)))
  present = np.zeros(values.shape, bool)
  for s, (name, per_q) in enumerate(zip(systems, per_system.values())):
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
      queries = [q for q, k in zip(queries, keep) if k]
  if not queries:
    raise ValueError("per_system has no queries")
  return PerQuery(systems, tuple(str(q) for q in queries), values)


def _check_finite(per_system: Mapping, systems: tuple, queries: list, values: np.ndarray,
                  present: np.ndarray) -> None:
  """Names the system and query of the first value that is not a finite number: None (no
  value), NaN (a list without relevant items under ``empty="nan"``) or an infinity."""
  bad = ~np.isfinite(values) & present
  if not bad.any():
    return
  s, q = (int(i) for i in np.argwhere(bad)[0])
  given = list(per_system.values())[s]
  try:  # the value as given: None reads as NaN
    original = given[queries[q]] if isinstance(given, Mapping) else given[q]
  except Exception:  # noqa: BLE001 - an array type that cannot be indexed so: no None in it
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
    _choice("pairs", pairs, ("all", "baseline"))
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


def pairwise(values: ArrayLike, *, test: str = "t", pairs: str | Sequence = "all",
             alternative: str = "two-sided", correction: str | None = None,
             alpha: float = 0.05, confidence: float = 0.95, ci: str = "t",
             key: jax.Array | int = 0, n_resamples: int = 10_000,
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
  _choice("test", test, TESTS)
  _choice("alternative", alternative, ALTERNATIVES)
  if correction is None:
    correction = "none" if test == "tukey" else "holm"
  _choice("correction", correction, CORRECTIONS)
  if test == "tukey" and correction != "none":
    raise ValueError(f"test='tukey' already controls the family-wise error: use "
                     f"correction='none', got {correction!r}")
  if test == "tukey" and alternative != "two-sided":
    raise ValueError(f"test='tukey' is two-sided only, got alternative={alternative!r}")
  _checks.check_unit_interval("alpha", alpha)
  x = _array("values", values, min_queries=2)
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
    stat, p = _randomization(x, ref, sys, key=key, alternative=alternative,
                             n_resamples=_positive_int("n_resamples", n_resamples),
                             method=_choice("method", options.get("method", "auto"),
                                            ("auto", "exact", "monte-carlo")),
                             pvalue=_choice("pvalue", options.get("pvalue", "plus_one"), PVALUES))
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
