"""Classical paired tests: Student's t, Wilcoxon signed-rank and sign tests."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import special as jsp
from numpy.typing import ArrayLike

from jaxrank.stats._arrays import as_output, choice, padded, paired_rows, studentize
from jaxrank.stats._distributions import t_sf_kernel
from jaxrank.stats._resampling import MAX_EXACT_QUERIES, sign_flip_counts
from jaxrank.stats._types import ALTERNATIVES, SIDE, TestResult

_MAX_EXACT_WILCOXON = 200  # the exact table is [n + 1, n (n + 1) / 2 + 1]: 32 MB at n = 200


def _binom_cdf(k: jax.Array, n: jax.Array) -> jax.Array:
  """P(X <= k) for X ~ Binomial(n, 1/2), k and n integers as floats."""
  inside = (k >= 0) & (k < n)
  value = jsp.betainc(jnp.where(inside, n - k, 1.0), jnp.where(inside, k + 1, 1.0), 0.5)
  return jnp.where(k < 0, 0.0, jnp.where(k >= n, 1.0, value))


def _all_sides(ge: jax.Array | np.ndarray, le: jax.Array | np.ndarray) -> jax.Array:
  """p-values [greater, less, two-sided] from P(T >= t_obs) and P(T <= t_obs)."""
  return jnp.stack([ge, le, jnp.minimum(1.0, 2 * jnp.minimum(ge, le))])


@jax.jit
def _ttest(d: jax.Array) -> tuple[jax.Array, jax.Array]:
  """t statistic and p-values [greater, less, two-sided] of each row of d."""
  n = d.shape[-1]
  t = studentize(d.mean(-1), jnp.std(d, axis=-1, ddof=1), n)
  two = jsp.betainc((n - 1) / 2, 0.5, (n - 1) / (n - 1 + t * t))
  p = jnp.stack([t_sf_kernel(t, n - 1.0), t_sf_kernel(-t, n - 1.0), two])
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
  choice("alternative", alternative, ALTERNATIVES)
  a, b, lead = paired_rows(a, b, min_queries=2)
  with jax.enable_x64(True):
    t, p = _ttest(jnp.asarray(padded(a - b)))
  rows = a.shape[0]
  return TestResult(as_output(t[:rows], lead), as_output(p[SIDE[alternative], :rows], lead))


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


def _ranks(x: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Average (1-based) ranks of x [..., n] along the last axis and each value's tie count."""
  srt = jnp.sort(x, axis=-1)
  search = jax.vmap(jnp.searchsorted, in_axes=(0, 0, None))
  flat, sflat = x.reshape(-1, x.shape[-1]), srt.reshape(-1, x.shape[-1])
  left = search(sflat, flat, "left").reshape(x.shape)
  right = search(sflat, flat, "right").reshape(x.shape)
  return (left + right + 1) / 2, (right - left).astype(x.dtype)


_ZERO_METHODS = ("wilcox", "pratt", "zsplit")


@jax.jit
def _wilcoxon(d: jax.Array, table: jax.Array, zero_method: int | jax.Array,
              correction: bool | jax.Array) -> tuple[jax.Array, ...]:
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

  def cdf(k: jax.Array) -> jax.Array:
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
  choice("alternative", alternative, ALTERNATIVES)
  choice("zero_method", zero_method, ("wilcox", "pratt", "zsplit"))
  choice("method", method, ("auto", "exact", "asymptotic", "permutation"))
  if not isinstance(correction, bool):
    raise TypeError(f"correction must be True or False, got {correction!r}")
  a, b, lead = paired_rows(a, b)
  q = a.shape[-1]
  if method == "permutation" and q > MAX_EXACT_QUERIES:
    raise ValueError(f"method='permutation' enumerates 2^queries sign flips: at most "
                     f"{MAX_EXACT_QUERIES} queries, got {q}")
  if method == "exact" and q > _MAX_EXACT_WILCOXON:
    raise ValueError(f"method='exact' tabulates the signed-rank distribution: at most "
                     f"{_MAX_EXACT_WILCOXON} queries, got {q} (use 'asymptotic')")
  table = _wilcoxon_cdf_table(min(q, 50) if method != "exact" else q)
  with jax.enable_x64(True):
    parts = _wilcoxon(jnp.asarray(padded(a - b)), jnp.asarray(table),
                      _ZERO_METHODS.index(zero_method), correction)
  rows = a.shape[0]
  r_plus, r_minus, p_asym, p_exact, weights, offset, exact_ok = (
      np.asarray(v)[..., :rows] if i in (2, 3) else np.asarray(v)[:rows]
      for i, v in enumerate(parts))
  side = SIDE[alternative]
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
  return TestResult(as_output(stat, lead), as_output(p, lead))


def _wilcoxon_enumerated(weights: np.ndarray, offset: np.ndarray) -> np.ndarray:
  """p-values [sides, pairs] of W+ over all 2^n sign flips (scipy's permutation_test, exact)."""
  p_count, q = weights.shape
  x = np.concatenate([weights, np.zeros((1, q))])
  _, counts = sign_flip_counts(x, np.full(p_count, p_count), np.arange(p_count), offset,
                               key=0, n=2 ** q, exact=True)
  return np.asarray(_all_sides(counts[0] / 2 ** q, counts[1] / 2 ** q))


@jax.jit
def _sign_test(d: jax.Array) -> tuple[jax.Array, jax.Array]:
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
  choice("alternative", alternative, ALTERNATIVES)
  a, b, lead = paired_rows(a, b)
  with jax.enable_x64(True):
    k, p = _sign_test(jnp.asarray(padded(a - b)))
  rows = a.shape[0]
  return TestResult(as_output(k[:rows], lead), as_output(p[SIDE[alternative], :rows], lead))
