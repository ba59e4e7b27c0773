"""Property tests (hypothesis): invariances, policy ordering, cutoffs, jit, vmap and dtypes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxrank
from jaxrank._core import table as _table
from metric_table import HIGHER_IS_BETTER, NAMES, options_for

# bpref and infap take no cutoff (and infap is NaN for tied relevant items under average ties):
# tests/core/test_judged.py covers them against the enumeration of tied orders.
METRICS = [name for name in NAMES if _table.METRICS[name].cutoff]
NORMALISED = [m for m in METRICS if m not in ("dcg", "mean_rank")]


@st.composite
def lists(draw, max_lists=4, max_items=12):
  lists_ = draw(st.integers(1, max_lists))
  n = draw(st.integers(1, max_items))
  levels = draw(st.integers(1, 6))
  seed = draw(st.integers(0, 2**31 - 1))
  rng = np.random.default_rng(seed)
  scores = rng.integers(0, levels, (lists_, n)).astype(np.float32)
  scores[rng.random((lists_, n)) < 0.05] = np.nan
  labels = rng.integers(0, 4, (lists_, n)) * (rng.random((lists_, n)) < 0.5)
  where = rng.random((lists_, n)) < 0.85
  return scores, labels, where, rng


# Each test's own settings (a profile loaded here would change every other module's too). Every
# drawn shape compiles kernels: the three that compile the most draw fewer examples.
PROPERTY = settings(max_examples=40, deadline=None)
COMPILING = settings(max_examples=25, deadline=None)
k_st = st.one_of(st.none(), st.integers(1, 15))


@PROPERTY
@given(data=lists(), name=st.sampled_from(METRICS), k=k_st)
def test_permutation_invariance(data, name, k):
  scores, labels, where, rng = data
  perm = rng.permutation(scores.shape[1])
  f = getattr(jaxrank, name)
  a = f(scores, labels, where=where, k=k)
  b = f(scores[:, perm], labels[:, perm], where=where[:, perm], k=k)
  np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@PROPERTY
@given(data=lists(), name=st.sampled_from(METRICS), k=k_st, pad=st.integers(1, 5),
       ties=st.sampled_from(["average", "first", "optimistic", "pessimistic"]))
def test_padding_invariance(data, name, k, pad, ties):
  scores, labels, where, rng = data
  f = getattr(jaxrank, name)
  a = f(scores, labels, where=where, k=k, ties=ties)
  junk = rng.normal(size=(scores.shape[0], pad)).astype(np.float32) * 10
  b = f(np.concatenate([scores, junk], 1),
        np.concatenate([labels, rng.integers(0, 3, junk.shape)], 1),
        where=np.concatenate([where, np.zeros(junk.shape, bool)], 1), k=k, ties=ties)
  np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@COMPILING
@given(data=lists(), name=st.sampled_from(METRICS), k=k_st)
def test_optimistic_average_pessimistic_order(data, name, k):
  scores, labels, where, _ = data
  f = getattr(jaxrank, name)
  opt, avg, pess = (np.asarray(f(scores, labels, where=where, k=k, ties=t))
                    for t in ("optimistic", "average", "pessimistic"))
  if name not in HIGHER_IS_BETTER:
    opt, pess = pess, opt
  assert np.all(opt >= avg - 1e-5) and np.all(avg >= pess - 1e-5)


@PROPERTY
@given(data=lists(), name=st.sampled_from(METRICS), extra=st.integers(0, 5))
def test_cutoff_at_or_beyond_n_equals_uncut(data, name, extra):
  scores, labels, where, _ = data
  f = getattr(jaxrank, name)
  kw = options_for(name, dict(where=where, precision_denominator="min_k_n"))
  full = np.asarray(f(scores, labels, **kw))
  cut = np.asarray(f(scores, labels, k=scores.shape[1] + extra, **kw))
  np.testing.assert_allclose(full, cut, rtol=1e-5, atol=1e-6)


@PROPERTY
@given(data=lists(), name=st.sampled_from(METRICS), k=k_st)
def test_bounds(data, name, k):
  scores, labels, where, _ = data
  v = np.asarray(getattr(jaxrank, name)(scores, labels, where=where, k=k))
  assert not np.isnan(v).any()
  if name in NORMALISED:
    assert np.all((v >= 0) & (v <= 1 + 1e-6))
  elif name == "dcg":
    assert np.all(v >= 0)
  else:
    n = where.sum(1)
    assert np.all((v == 0) | ((v >= 1) & (v <= n + 1)))
  r = jaxrank.from_dense(scores, labels, where)
  used = r.grades > 0
  lo, hi = np.asarray(r.lo)[used], np.asarray(r.hi)[used]
  n = np.broadcast_to(where.sum(1, keepdims=True), r.lo.shape)[used]
  assert np.all((1 <= lo) & (lo <= hi) & (hi <= n))


@COMPILING
@given(data=lists(), name=st.sampled_from(METRICS), k=k_st)
def test_jit_equals_eager(data, name, k):
  scores, labels, where, _ = data
  f = getattr(jaxrank, name)
  eager = f(scores, labels, where=where, k=k)
  jitted = jax.jit(lambda s, y, w: f(s, y, where=w, k=k))(scores, labels, where)
  np.testing.assert_allclose(eager, jitted, rtol=1e-5, atol=1e-6)
  mr = int(max(1, ((labels > 0) & where).sum(1).max()))
  bounded = jax.jit(lambda s, y, w: f(s, y, where=w, k=k, max_relevant=mr))(scores, labels, where)
  np.testing.assert_allclose(eager, bounded, rtol=1e-5, atol=1e-6)


@COMPILING
@given(data=lists(), name=st.sampled_from(METRICS), k=k_st)
def test_vmap_equals_python_loop(data, name, k):
  scores, labels, where, _ = data
  f = getattr(jaxrank, name)
  vmapped = jax.vmap(lambda s, y, w: f(s, y, where=w, k=k))(scores, labels, where)
  looped = [f(s, y, where=w, k=k) for s, y, w in zip(scores, labels, where)]
  np.testing.assert_allclose(vmapped, np.stack(looped), rtol=1e-5, atol=1e-6)


@PROPERTY
@given(data=lists(), name=st.sampled_from(METRICS))
def test_leading_dimensions(data, name):
  scores, labels, where, _ = data
  f = getattr(jaxrank, name)
  flat = f(scores, labels, where=where)
  nested = f(scores[:, None], labels[:, None], where=where[:, None])
  assert nested.shape == (scores.shape[0], 1)
  np.testing.assert_allclose(flat, nested[:, 0], rtol=1e-6)


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16, jnp.float32, jnp.int32])
@pytest.mark.parametrize("label_dtype", [np.int32, np.float32, np.int64, bool])
def test_dtypes(dtype, label_dtype):
  rng = np.random.default_rng(1)
  scores = rng.integers(-8, 8, (6, 10)).astype(np.float32)  # exact in every dtype
  labels = rng.integers(0, 2 if label_dtype is bool else 4, (6, 10)).astype(label_dtype)
  base = jaxrank.evaluate(scores, labels.astype(np.float32), ["ndcg@5", "map", "mrr", "p@3"])
  got = jaxrank.evaluate(jnp.asarray(scores).astype(dtype), labels,
                         ["ndcg@5", "map", "mrr", "p@3"])
  for name in base:
    np.testing.assert_allclose(got[name], base[name], rtol=1e-6, err_msg=name)


def test_float64_scores_keep_their_order_under_x64():
  # float64 keys are 64-bit: scores that differ only beyond float32 precision are not tied.
  code = """
import jax; jax.config.update("jax_enable_x64", True)
import numpy as np, jaxrank
s = np.array([[1.0, 1.0 + 1e-12, 0.5]]); y = np.array([[1, 0, 0]])
r = jaxrank.from_dense(s, y)
assert r.lo.tolist() == [[2]] and r.hi.tolist() == [[2]], (r.lo, r.hi)
assert float(jaxrank.reciprocal_rank(s, y)[0]) == 0.5
"""
  import subprocess
  import sys
  subprocess.run([sys.executable, "-c", code], check=True)
