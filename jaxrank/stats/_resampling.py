"""Resampling: sign flips and bootstrap counts, one resample per ``fold_in(key, r)``;
the randomization and bootstrap tests and the bootstrap distribution of the mean."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from jaxrank._core.types import Key
from jaxrank.stats._arrays import (
  as_key,
  checked_array,
  choice,
  padded,
  paired_rows,
  positive_int,
  studentize,
)
from jaxrank.stats._types import ALTERNATIVES, PVALUES, SIDE, TestResult

# Statistics within this fraction of (sum |a| + sum |b|) of the observed one count as ties: float64
# rounding (~1e-13 for 10^4 queries) never changes a p-value, and no real difference is merged.
_RTOL = 1e-10
_ELEMENTS_PER_CHUNK = 1 << 22  # resamples per chunk: chunk * queries <= 4M (32 MB of float64)
MAX_EXACT_QUERIES = 24


def _exact_signs(r: jax.Array, q: int) -> jax.Array:
  """Sign vector number r of the 2^q enumeration: bit i of r set flips query i."""
  bits = (r[:, None] >> jnp.arange(q, dtype=r.dtype)[None]) & 1
  return 1.0 - 2.0 * bits.astype(jnp.float64)


def _random_signs(key: jax.Array, r: jax.Array, q: int) -> jax.Array:
  words = (q + 31) // 32
  bits = jax.vmap(lambda i: jax.random.bits(jax.random.fold_in(key, i), (words,),
                                            jnp.uint32))(r)
  unpacked = (bits[:, :, None] >> jnp.arange(32, dtype=jnp.uint32)) & 1
  return 1.0 - 2.0 * unpacked.reshape(r.shape[0], words * 32)[:, :q].astype(jnp.float64)


def _random_counts(key: jax.Array, r: jax.Array, q: int) -> jax.Array:
  """Bootstrap counts [len(r), q]: q draws per resample, one random word each (Lemire's
  multiply-shift maps a uint32 onto [0, q): half the random bits of ``randint``)."""
  def one(i: jax.Array) -> jax.Array:
    bits = jax.random.bits(jax.random.fold_in(key, i), (q,), jnp.uint32)
    idx = ((bits.astype(jnp.uint64) * q) >> 32).astype(jnp.int32)
    return jnp.zeros(q, jnp.float64).at[idx].add(1.0)
  return jax.vmap(one)(r)


def _chunk(n: int, q: int) -> int:
  return max(1, min(n, _ELEMENTS_PER_CHUNK // max(q, 1)))


@functools.partial(jax.jit, static_argnames=("n", "q", "kind"))
def _draw(key: jax.Array, *, n: int, q: int, kind: str) -> jax.Array:
  r = jnp.arange(n, dtype=jnp.uint32)
  return _random_signs(key, r, q) if kind == "signs" else _random_counts(key, r, q)


def sign_flips(key: Key, n_resamples: int, n_queries: int) -> np.ndarray:
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
  n, q = positive_int("n_resamples", n_resamples), positive_int("n_queries", n_queries)
  with jax.enable_x64(True):
    return np.asarray(_draw(as_key(key), n=n, q=q, kind="signs"))


def bootstrap_counts(key: Key, n_resamples: int, n_queries: int) -> np.ndarray:
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
  n, q = positive_int("n_resamples", n_resamples), positive_int("n_queries", n_queries)
  with jax.enable_x64(True):
    return np.asarray(_draw(as_key(key), n=n, q=q, kind="counts"))


def _null_counts(statistic: Callable[[jax.Array], jax.Array], obs: jax.Array, tol: jax.Array, *,
                 n: int, chunk: int) -> jax.Array:
  """How many of the n resampled statistics are >=, <= and (in absolute value) >= ``obs``.

  ``statistic(r)`` gives the statistics ``[chunk, pairs]`` of resamples ``r``; ``lax.map`` runs
  the chunks in turn (memory of one chunk), the padding resamples ``r >= n`` are not counted.
  Values within ``tol`` of ``obs`` count as ties, i.e. as extreme.
  """
  def body(c: jax.Array) -> jax.Array:
    r = c * chunk + jnp.arange(chunk, dtype=jnp.uint32)
    t = statistic(r)
    valid = (r < n)[:, None]
    return jnp.stack([jnp.sum(valid & (t >= obs - tol), 0),
                      jnp.sum(valid & (t <= obs + tol), 0),
                      jnp.sum(valid & (jnp.abs(t) >= jnp.abs(obs) - tol), 0)])

  per_chunk: jax.Array = jax.lax.map(body, jnp.arange(-(-n // chunk), dtype=jnp.uint32))
  return per_chunk.sum(0)


@functools.partial(jax.jit, static_argnames=("n", "exact", "chunk"))
def _flip_counts(key: jax.Array, x: jax.Array, ref: jax.Array, sys: jax.Array, offset: jax.Array,
                 *, n: int, exact: bool, chunk: int) -> tuple[jax.Array, jax.Array]:
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

  def flipped(r: jax.Array) -> jax.Array:
    s = _exact_signs(r, q) if exact else _random_signs(key, r, q)
    t = s @ xt
    return t[:, sys] - t[:, ref] + offset

  counts = _null_counts(flipped, obs, tol, n=n, chunk=chunk)
  return obs, counts


def sign_flip_counts(x: np.ndarray, ref: np.ndarray, sys: np.ndarray, offset: ArrayLike, *,
                     key: Key, n: int, exact: bool) -> tuple[np.ndarray,
                                                                         np.ndarray]:
  """Host wrapper of :func:`_flip_counts`: (observed T, counts [3, pairs]) as NumPy."""
  q, pairs = x.shape[-1], len(sys)
  with jax.enable_x64(True):
    obs, counts = _flip_counts(as_key(key), jnp.asarray(padded(x)), jnp.asarray(padded(ref)),
                               jnp.asarray(padded(sys)),
                               jnp.asarray(padded(np.asarray(offset, np.float64))), n=n,
                               exact=exact, chunk=_chunk(n, q))
  return np.asarray(obs, np.float64)[:pairs], np.asarray(counts, np.float64)[:, :pairs]


def randomization_pairs(x: np.ndarray, ref: np.ndarray, sys: np.ndarray, *,
                        key: Key, n_resamples: int, alternative: str, method: str,
                        pvalue: str) -> tuple[np.ndarray, np.ndarray]:
  q = x.shape[-1]
  if method == "auto":
    method = "exact" if q <= MAX_EXACT_QUERIES and 2 ** q <= n_resamples else "monte-carlo"
  if method == "exact" and q > MAX_EXACT_QUERIES:
    raise ValueError(f"method='exact' enumerates 2^queries sign flips: at most "
                     f"{MAX_EXACT_QUERIES} queries, got {q}")
  n = 2 ** q if method == "exact" else n_resamples
  obs, counts = sign_flip_counts(x, ref, sys, np.zeros(len(sys)), key=key, n=n,
                                 exact=method == "exact")
  count = counts[SIDE[alternative]]
  p = count / n if method == "exact" or pvalue == "ranx" else (count + 1) / (n + 1)
  stat = obs / q
  return stat, np.minimum(p, 1.0)


def randomization_test(a: ArrayLike, b: ArrayLike, *, key: Key = 0,
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
  choice("alternative", alternative, ALTERNATIVES)
  choice("method", method, ("auto", "exact", "monte-carlo"))
  choice("pvalue", pvalue, PVALUES)
  n_resamples = positive_int("n_resamples", n_resamples)
  a, b, lead = paired_rows(a, b)
  p_count = a.shape[0]
  x = np.concatenate([a, b])
  stat, p = randomization_pairs(x, np.arange(p_count, 2 * p_count), np.arange(p_count),
                                key=key, n_resamples=n_resamples, alternative=alternative,
                                method=method, pvalue=pvalue)
  return TestResult(stat.reshape(lead), p.reshape(lead))


@functools.partial(jax.jit, static_argnames=("n", "chunk"))
def _bootstrap_t_counts(key: jax.Array, d: jax.Array, *, n: int,
                        chunk: int) -> tuple[jax.Array, jax.Array]:
  q = d.shape[-1]
  mean = d.mean(-1)
  centered = d - mean[:, None]
  sd = jnp.std(d, axis=-1, ddof=1)
  t_obs = studentize(mean, sd, q)
  tol = _RTOL * jnp.abs(t_obs)

  def resampled(r: jax.Array) -> jax.Array:
    w = _random_counts(key, r, q)
    m = (w @ centered.T) / q
    m2 = (w @ (centered * centered).T) / q
    var = jnp.maximum(m2 - m * m, 0.0) * q / (q - 1)
    return studentize(m, jnp.sqrt(var), q)

  counts = _null_counts(resampled, t_obs, tol, n=n, chunk=chunk)
  return t_obs, counts


def bootstrap_test(a: ArrayLike, b: ArrayLike, *, key: Key = 0,
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
  choice("alternative", alternative, ALTERNATIVES)
  choice("pvalue", pvalue, PVALUES)
  n = positive_int("n_resamples", n_resamples)
  a, b, lead = paired_rows(a, b, min_queries=2)
  t, p = _bootstrap_test_flat(a - b, key=key, n=n, alternative=alternative, pvalue=pvalue)
  return TestResult(t.reshape(lead), p.reshape(lead))


def _bootstrap_test_flat(d: np.ndarray, *, key: Key, n: int, alternative: str,
                         pvalue: str) -> tuple[np.ndarray, np.ndarray]:
  q = d.shape[-1]
  with jax.enable_x64(True):
    t, counts = _bootstrap_t_counts(as_key(key), jnp.asarray(padded(d)), n=n, chunk=_chunk(n, q))
  t, counts = np.asarray(t)[:d.shape[0]], np.asarray(counts, np.float64)[SIDE[alternative],
                                                                         :d.shape[0]]
  p = (counts + 1) / (n + 1) if pvalue == "plus_one" else counts / n
  return np.asarray(t, np.float64), np.minimum(p, 1.0)


@functools.partial(jax.jit, static_argnames=("n", "chunk"))
def _bootstrap_means(key: jax.Array, x: jax.Array, *, n: int, chunk: int) -> jax.Array:
  q = x.shape[-1]

  def body(c: jax.Array) -> jax.Array:
    r = c * chunk + jnp.arange(chunk, dtype=jnp.uint32)
    return _random_counts(key, r, q) @ x.T / q

  out: jax.Array = jax.lax.map(body, jnp.arange(-(-n // chunk), dtype=jnp.uint32))
  return out.reshape(-1, x.shape[0])[:n].T


def bootstrap_means(x: ArrayLike, *, key: Key = 0,
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
  n = positive_int("n_resamples", n_resamples)
  x = checked_array("x", x)
  lead, q = x.shape[:-1], x.shape[-1]
  with jax.enable_x64(True):
    flat = x.reshape(-1, q)
    out = _bootstrap_means(as_key(key), jnp.asarray(padded(flat)), n=n, chunk=_chunk(n, q))
  return np.asarray(out)[:flat.shape[0]].reshape(lead + (n,))
