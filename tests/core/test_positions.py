"""Optimistic / pessimistic positions of tied relevant items (``jaxrank._core.positions``).

The sort-based positions (taken beyond ``PAIRWISE_SLOTS`` slots per list) are checked against
the pairwise ``[lists, m, m]`` formula (``_positions.positions_pairwise``), on Ranks built from
random tied scores (graded labels, padding, relevant items that were not retrieved, lists
without relevant items) and on arbitrary slot
arrays; and their compiled temporary memory is checked to be O(lists x m), not O(lists x m^2).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxrank
from jaxrank._core import positions as _positions
from jaxrank._core.ranks import Ranks

MiB = 2**20
POLICIES = ["optimistic", "pessimistic"]


# The former positions, kept in the library for lists of few slots: one [lists, m, m]
# comparison of every pair of slots.
pairwise_positions = _positions.positions_pairwise


@functools.partial(jax.jit, static_argnames="ties")
def both(r: Ranks, ties: str):
  return _positions.positions_sorted(r, ties), pairwise_positions(r, ties)


def assert_same(r: Ranks, ties: str):
  got, want = both(r, ties)
  np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
  np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))
  assert got[0].dtype == want[0].dtype and got[0].shape == r.lo.shape


@st.composite
def tied_ranks(draw):
  """Ranks of random tied scores: dense (with padding) or sparse (with unretrieved items).

  Fixed shapes (what varies is the content), so each form and policy compiles once.
  """
  rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
  lists, n = 4, 12
  levels = draw(st.integers(1, 4))  # few score levels: large tie groups
  scores = rng.integers(0, levels, (lists, n)).astype(np.float32)
  grades = rng.integers(0, 4, (lists, n)) * (rng.random((lists, n)) < 0.6)
  if draw(st.booleans()):
    where = rng.random((lists, n)) < 0.8
    return jaxrank.from_dense(scores, grades, where=where, max_relevant=n)
  r = 6
  ids = np.stack([rng.choice(n + 3, r, replace=False) for _ in range(lists)])
  ids = np.where(ids >= n, -1, ids)  # -1 pads
  rel_grades = rng.integers(1, 4, (lists, r)).astype(np.float32)
  where = rng.random((lists, n)) < 0.8  # excluded items are relevant and never retrieved
  return jaxrank.from_sparse(scores, ids, rel_grades, where=where)


settings.register_profile("positions", max_examples=60, deadline=None)


@settings(settings.get_profile("positions"))
@given(r=tied_ranks(), ties=st.sampled_from(POLICIES))
def test_positions_equal_the_pairwise_formula(r, ties):
  assert_same(r, ties)


@settings(settings.get_profile("positions"))
@given(seed=st.integers(0, 2**31 - 1), ties=st.sampled_from(POLICIES))
def test_positions_on_arbitrary_slots(seed, ties):
  # Any slot arrays: repeated grades, grade-0 slots inside groups, lo beyond size (unranked).
  rng = np.random.default_rng(seed)
  lists, m, size = 3, 12, 6
  lo = rng.integers(1, size + 2, (lists, m)).astype(np.int32)
  hi = np.minimum(lo + rng.integers(0, 4, (lists, m)), size).astype(np.int32)
  hi = np.where(lo > size, lo, np.maximum(hi, lo))
  grades = (rng.integers(0, 3, (lists, m)) * rng.random((lists, m)) * 2).round(1)
  r = Ranks(lo=jnp.asarray(lo), hi=jnp.asarray(hi), grades=jnp.asarray(grades, jnp.float32),
            num_items=jnp.full((lists,), size, jnp.int32), overflow=jnp.zeros((lists,), bool),
            size=size)
  assert_same(r, ties)


@pytest.mark.parametrize("ties", POLICIES)
@pytest.mark.parametrize("shape", [(2, 0), (0, 3), (3,)])
def test_positions_of_empty_and_unbatched_slots(shape, ties):
  lo = jnp.ones(shape, jnp.int32)
  r = Ranks(lo=lo, hi=lo + 1, grades=jnp.ones(shape, jnp.float32),
            num_items=jnp.full(shape[:-1], 2, jnp.int32), overflow=jnp.zeros(shape[:-1], bool),
            size=2)
  assert_same(r, ties)


@pytest.mark.parametrize("ties", POLICIES)
def test_positions_under_jit_and_vmap(ties):
  rng = np.random.default_rng(0)
  scores = rng.integers(0, 3, (3, 5, 9)).astype(np.float32)
  labels = rng.integers(0, 3, (3, 5, 9))
  r = jaxrank.from_dense(scores, labels)
  eager = _positions.positions(r, ties)[0]
  jitted = jax.jit(lambda r: _positions.positions(r, ties)[0])(r)
  np.testing.assert_array_equal(eager, jitted)
  np.testing.assert_array_equal(eager, pairwise_positions(r, ties)[0])
  # A metric under each policy still equals the value from the pairwise positions.
  for name in ("ndcg", "average_precision", "reciprocal_rank", "mean_rank"):
    got = getattr(jaxrank, name)(r, ties=ties)
    fixed = Ranks(lo=eager, hi=eager, grades=r.grades, num_items=r.num_items,
                  overflow=r.overflow, size=r.size, resolved=True)
    np.testing.assert_allclose(got, getattr(jaxrank, name)(fixed), rtol=1e-6)


@pytest.mark.parametrize("ties", POLICIES)
def test_positions_memory_is_linear_in_the_slots(ties):
  # 200 lists x 2,000 relevant slots: the pairwise form needed [200, 2000, 2000] (0.8 GB of
  # bool, several GiB with its int intermediates); the sort needs a few [200, 2000] arrays.
  lists, m = 200, 2000

  def fn(lo, hi, grades):
    r = Ranks(lo=lo, hi=hi, grades=grades, num_items=jnp.full((lists,), 3 * m, jnp.int32),
              overflow=jnp.zeros((lists,), bool), size=3 * m)
    return _positions.positions(r, ties)[0]  # m > PAIRWISE_SLOTS: the sort

  shapes = (jax.ShapeDtypeStruct((lists, m), jnp.int32),) * 2 + (
      jax.ShapeDtypeStruct((lists, m), jnp.float32),)
  analysis = jax.jit(fn).lower(*shapes).compile().memory_analysis()
  if analysis is None:
    pytest.skip("this backend reports no memory analysis")
  one = lists * m * 4  # one int32 [lists, m] array: 1.6 MB
  assert analysis.temp_size_in_bytes <= 16 * one, (analysis.temp_size_in_bytes, one)


@pytest.mark.parametrize("ties", POLICIES)
def test_positions_take_the_pairwise_form_for_few_slots(ties):
  rng = np.random.default_rng(1)
  for m in (_positions.PAIRWISE_SLOTS, _positions.PAIRWISE_SLOTS + 1):
    scores = rng.integers(0, 4, (6, 3 * m)).astype(np.float32)
    labels = rng.integers(0, 3, scores.shape) * (rng.random(scores.shape) < 0.4)
    r = jaxrank.from_dense(scores, labels, max_relevant=m)
    got = _positions.positions(r, ties)[0]
    np.testing.assert_array_equal(got, pairwise_positions(r, ties)[0])
    np.testing.assert_array_equal(got, _positions.positions_sorted(r, ties)[0])
