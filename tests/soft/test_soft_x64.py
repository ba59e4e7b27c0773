"""float64 checks of the soft operators: check_grads, a NumPy permutahedron reference, Jacobians.

x64 must be on before JAX starts, so ``test_soft.py::test_float64_checks_in_a_subprocess`` runs
this file in its own interpreter with ``JAX_ENABLE_X64=1``; in a float32 session it is skipped.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import jaxrank

pytestmark = pytest.mark.skipif(
    not jax.config.jax_enable_x64,
    reason="float64 only: run by test_soft.py::test_float64_checks_in_a_subprocess")

OPERATORS = ["sigmoid", "neuralsort", "softsort", "fast_l2", "fast_kl"]
METRICS = ["ndcg", "dcg", "precision", "recall", "hit_rate", "reciprocal_rank",
           "average_precision"]


CUT_AND_FULL = ("ndcg", "reciprocal_rank", "average_precision")  # others: k=None is trivial


def modes(operator):
  # The permutahedron operators have a hand-written VJP (reverse mode only).
  return ("rev",) if operator.startswith("fast") else ("fwd", "rev")


# ----------------------------------------------------------------------------------------------
# A plain NumPy reference: sort + pool-adjacent-violators (Blondel et al., ICML 2020).


def pav_decreasing(y, lw=None):
  """argmin over v_1 >= ... >= v_n of 0.5||v - y||^2 (L2), or the KL problem with weights lw."""
  blocks = []  # lists of indices
  def value(b):
    if lw is None:
      return np.mean(y[b])
    return np.logaddexp.reduce(y[b]) - np.logaddexp.reduce(lw[b])
  for i in range(len(y)):
    blocks.append([i])
    while len(blocks) > 1 and value(blocks[-2]) <= value(blocks[-1]):
      last = blocks.pop()
      blocks[-1] += last
  out = np.empty(len(y))
  for b in blocks:
    out[b] = value(b)
  return out, blocks


def ref_soft_rank(x, eps, kl=False):
  n = len(x)
  theta = -np.asarray(x, np.float64) / eps
  perm = np.argsort(-theta, kind="stable")
  z = theta[perm]
  w = np.arange(n, 0, -1).astype(np.float64)
  v, _ = pav_decreasing(z, np.log(w)) if kl else pav_decreasing(z - w)
  out = np.empty(n)
  out[perm] = np.exp(z - v) if kl else z - v
  return out


def ref_soft_sort(x, eps):
  w = -np.sort(-np.asarray(x, np.float64))
  rho = np.arange(len(x), 0, -1) / eps
  v, _ = pav_decreasing(rho - w)
  return rho - v


def fd_jacobian(f, x, h=1e-6):
  cols = []
  for i in range(len(x)):
    e = np.zeros(len(x))
    e[i] = h
    cols.append((f(x + e) - f(x - e)) / (2 * h))
  return np.stack(cols, 1)


@pytest.mark.parametrize("kl", [False, True])
def test_fast_soft_rank_matches_numpy_pav(kl):
  rng = np.random.default_rng(0)
  for n in (1, 5, 40, 300):  # 300 > 128: the isotonic regression walks block starts in chunks
    for eps in (1e-3, 0.1, 1.0, 10.0):
      x = rng.normal(size=n)
      got = jaxrank.fast_soft_rank(x[None], temperature=eps, regularization="kl" if kl else "l2")
      np.testing.assert_allclose(got[0], ref_soft_rank(x, eps, kl), rtol=1e-6, atol=1e-6)
  # Batched, with ties and padding (padded items ranked n + 1, valid items as their own list).
  x = rng.integers(0, 4, (6, 9)).astype(np.float64)
  where = rng.random((6, 9)) < 0.8
  got = np.asarray(jaxrank.fast_soft_rank(x, temperature=0.7, where=where,
                                          regularization="kl" if kl else "l2"))
  for b in range(6):
    np.testing.assert_allclose(got[b][where[b]], ref_soft_rank(x[b][where[b]], 0.7, kl),
                               rtol=1e-6, atol=1e-6)
    assert np.all(got[b][~where[b]] == 10)


def test_fast_soft_sort_matches_numpy_pav():
  rng = np.random.default_rng(1)
  for n in (1, 8, 30):
    for eps in (1e-2, 0.5, 3.0):
      x = rng.normal(size=n)
      np.testing.assert_allclose(jaxrank.fast_soft_sort(x[None], temperature=eps)[0],
                                 ref_soft_sort(x, eps), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kl", [False, True])
@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0])
def test_fast_soft_rank_jacobian_matches_finite_differences(kl, eps):
  x = np.random.default_rng(2).normal(size=5)
  reg = "kl" if kl else "l2"
  jac = jax.jacrev(lambda v: jaxrank.fast_soft_rank(v[None], temperature=eps,
                                                    regularization=reg)[0])(jnp.asarray(x))
  np.testing.assert_allclose(jac, fd_jacobian(lambda v: ref_soft_rank(v, eps, kl), x),
                             rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0])
def test_fast_soft_sort_jacobian_matches_finite_differences(eps):
  x = np.random.default_rng(3).normal(size=6)
  jac = jax.jacrev(lambda v: jaxrank.fast_soft_sort(v[None], temperature=eps)[0])(jnp.asarray(x))
  np.testing.assert_allclose(jac, fd_jacobian(lambda v: ref_soft_sort(v, eps), x),
                             rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# check_grads on every operator and every soft metric.


@pytest.mark.parametrize("operator", OPERATORS)
def test_check_grads_soft_ranks(operator):
  rng = np.random.default_rng(4)
  x = jnp.asarray(rng.normal(size=(2, 7)))
  where = jnp.asarray(rng.random((2, 7)) < 0.8)
  check_grads(jax.jit(lambda v: jaxrank.soft_ranks(v, temperature=0.7, where=where,
                                                    operator=operator)),
              (x,), order=1, modes=modes(operator))


def test_check_grads_matrices_and_fast_ops():
  x = jnp.asarray(np.random.default_rng(5).normal(size=(2, 6)))
  for fn in (jaxrank.neural_sort, jaxrank.soft_sort):
    check_grads(jax.jit(lambda v, fn=fn: fn(v, temperature=0.5)), (x,), order=1)
  for reg in ("l2", "kl"):
    check_grads(jax.jit(lambda v, reg=reg: jaxrank.fast_soft_rank(v, temperature=0.5,
                                                                  regularization=reg)),
                (x,), order=1, modes=("rev",))
  check_grads(jax.jit(lambda v: jaxrank.fast_soft_sort(v, temperature=0.5)), (x,), order=1,
              modes=("rev",))


@pytest.mark.parametrize("operator", OPERATORS)
def test_check_grads_soft_metrics(operator):
  rng = np.random.default_rng(6)
  x = jnp.asarray(rng.normal(size=(3, 8)))
  y = rng.integers(0, 3, (3, 8)) * (rng.random((3, 8)) < 0.5)
  y[0, :2] = [1, 2]
  where = rng.random((3, 8)) < 0.85

  @jax.jit
  def every_metric(v):
    return jnp.stack([getattr(jaxrank, "soft_" + name)(v, y, where=where, k=k, temperature=0.6,
                                                       operator=operator, max_relevant=8)
                      for name in METRICS for k in ((None, 3) if name in CUT_AND_FULL else (3,))])

  # Reverse mode is what training uses; forward mode of the operators is checked above.
  check_grads(every_metric, (x,), order=1, modes=("rev",))
