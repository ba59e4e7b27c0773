"""Confidence intervals and effect sizes."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import special as jsp
from numpy.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core.types import Key
from jaxrank.stats._arrays import (
  as_output,
  checked_array,
  choice,
  padded,
  paired_rows,
  positive_int,
)
from jaxrank.stats._distributions import t_ppf
from jaxrank.stats._resampling import bootstrap_means
from jaxrank.stats._types import CI_METHODS, Interval


@functools.partial(jax.jit, static_argnames="method")
def _bootstrap_interval(x: jax.Array, theta_b: jax.Array, alpha: jax.Array, *,
                        method: str) -> tuple[jax.Array, jax.Array]:
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
                        key: Key = 0, n_resamples: int = 10_000) -> Interval:
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
  choice("method", method, CI_METHODS)
  level = _checks.check_unit_interval("confidence", confidence)
  n = positive_int("n_resamples", n_resamples)
  x = checked_array("x", x, min_queries=2)
  lead, q = x.shape[:-1], x.shape[-1]
  flat = x.reshape(-1, q)
  alpha = (1 - level) / 2
  if method == "t":
    mean = flat.mean(-1)
    half = t_ppf(1 - alpha, q - 1) * flat.std(-1, ddof=1) / math.sqrt(q)
    return Interval(mean.reshape(lead), (mean - half).reshape(lead), (mean + half).reshape(lead))
  theta_b = bootstrap_means(flat, key=key, n_resamples=n)
  with jax.enable_x64(True):
    theta, ci = _bootstrap_interval(jnp.asarray(padded(flat)), jnp.asarray(padded(theta_b)),
                                    jnp.float64(alpha), method=method)
  rows = flat.shape[0]
  theta, ci = np.asarray(theta)[:rows], np.asarray(ci)[:rows]
  return Interval(as_output(theta, lead), ci[:, 0].reshape(lead), ci[:, 1].reshape(lead))


def mean_difference(a: ArrayLike, b: ArrayLike, *, confidence: float = 0.95, method: str = "t",
                    key: Key = 0, n_resamples: int = 10_000) -> Interval:
  """The mean paired difference ``mean(a - b)`` over queries with its confidence interval.

  :func:`confidence_interval` of ``a - b`` (``method`` ``"t"``, ``"percentile"`` or ``"bca"``).

  Example:
    >>> from jaxrank import stats
    >>> ci = stats.mean_difference([0.5, 0.4, 0.7, 0.3], [0.4, 0.35, 0.5, 0.3])
    >>> round(float(ci.estimate), 4), round(float(ci.low), 4), round(float(ci.high), 4)
    (0.0875, -0.0484, 0.2234)
  """
  a, b, lead = paired_rows(a, b, min_queries=2)
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
  a, b, lead = paired_rows(a, b, min_queries=2)
  d = a - b
  mean, sd = d.mean(-1), d.std(-1, ddof=1)
  with np.errstate(divide="ignore", invalid="ignore"):
    out = np.where(sd > 0, mean / np.where(sd > 0, sd, 1.0),
                   np.where(mean == 0, 0.0, np.sign(mean) * np.inf))
  return out.reshape(lead)
