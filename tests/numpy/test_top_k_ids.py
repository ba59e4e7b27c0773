"""``top_k_ids`` against a NumPy reference, for every dtype and every rule of its docstring.

Issue 11: the kernel runs XLA's CPU ``top_k`` on float32 (as is, or carrying the rank core's
order keys as float32 bit patterns) instead of a top k of int32 keys, which XLA's CPU backend
runs as a full sort. The reference is a stable NumPy sort by (valid first, NaN last, exact value
descending): ties in index order, ``-0.0`` tied with ``0.0``, subnormals by value, ``-1`` where
fewer than k items are valid. Each case compares the eager call, a jitted call and a vmap over
rows with it.
"""

import functools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jaxrank

DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.int8, np.int16, np.int32, np.uint8,
          np.uint16, np.uint32, ml_dtypes.int4, ml_dtypes.float8_e5m2]
X64_DTYPES = [np.float64, np.int64, np.uint64]


def reference(scores, valid, k):
  """Stable sort of (valid first, NaN last, exact value descending); ``-1`` for padding."""
  x = np.asarray(scores)
  if x.dtype.kind not in "iu":
    x = x.astype(np.float64)  # exact for every float dtype; -0.0 == 0.0 below
  nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
  # dense ranks of the values (one unique pass, so uint64 beyond int64 needs no negation)
  _, rank = np.unique(np.where(nan, 0, x), return_inverse=True)
  rank = rank.reshape(x.shape)
  valid = np.ones(x.shape, bool) if valid is None else np.asarray(valid)
  order = np.lexsort((-rank, nan, ~valid), axis=-1)[..., :k]
  return np.where(np.take_along_axis(valid, order, axis=-1), order, -1)


def pool(dtype, rng):
  """A few values of ``dtype`` (heavy ties): extremes, ±0, subnormals, ±inf, NaN, random ones."""
  dtype = np.dtype(dtype)
  if dtype.kind in "iu" or dtype.name.endswith("int4"):
    info = ml_dtypes.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    values = {lo, lo + 1, hi, hi - 1, 0, 1} | {
        int(v) for v in rng.integers(lo, hi, size=4, endpoint=True,
                                     dtype=np.uint64 if dtype == np.uint64 else np.int64)}
    return np.array(sorted(values), dtype)
  info = ml_dtypes.finfo(dtype)
  sub = float(info.smallest_subnormal)
  values = [0.0, -0.0, 1.0, -1.0, float(info.max), -float(info.max), float(info.tiny), sub, -sub,
            3 * sub, np.inf, -np.inf, np.nan, -np.nan] + list(rng.normal(size=4))
  values = np.array(values, np.float64).astype(dtype)
  values[13] = -values[13] if dtype.itemsize > 1 else values[13]  # a NaN with the sign bit set
  return values


@functools.partial(jax.jit, static_argnames="k")
def jitted(s, w, k):
  return jaxrank.top_k_ids(s, k, where=w)


@functools.partial(jax.jit, static_argnames="k")
def mapped(s, w, k):
  return jax.vmap(lambda s, w: jaxrank.top_k_ids(s, k, where=w))(s, w)


def check(scores, valid, k, transforms=True):
  want = reference(scores, valid, k)
  s = jnp.asarray(scores)
  w = None if valid is None else jnp.asarray(valid)
  np.testing.assert_array_equal(np.asarray(jaxrank.top_k_ids(s, k, where=w)), want)
  if not transforms:
    return
  np.testing.assert_array_equal(np.asarray(jitted(s, w, k=k)), want)
  if s.ndim == 2:
    np.testing.assert_array_equal(np.asarray(mapped(s, w, k=k)), want)


def draw(dtype, rng, shape=(12, 16)):
  values = pool(dtype, rng)
  scores = values[rng.integers(0, values.size, size=shape)]
  valid = rng.random(shape) < 0.7
  rows = valid.reshape(-1, shape[-1])
  rows[0] = True   # a row fully valid,
  rows[1] = False  # one fully padded,
  rows[2, 2:] = False  # one with fewer than k valid
  return scores, valid


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
def test_every_dtype_equals_the_reference(dtype):
  rng = np.random.default_rng(abs(hash(np.dtype(dtype).name)) % 2**32)
  scores, valid = draw(dtype, rng)
  check(scores, valid, 5)  # eager, jitted, vmapped
  check(scores, None, 5, transforms=False)
  check(scores, valid, scores.shape[-1], transforms=False)


@pytest.mark.parametrize("dtype", X64_DTYPES, ids=lambda t: np.dtype(t).name)
def test_64_bit_dtypes_under_x64_equal_the_reference(dtype):
  rng = np.random.default_rng(3)
  with jax.enable_x64(True):
    scores, valid = draw(dtype, rng)
    check(scores, valid, 5, transforms=False)
    check(scores, None, 5, transforms=False)
    if np.dtype(dtype).kind in "iu":  # values within float32's integers: its top k, exact
      small = rng.integers(0, 4, size=scores.shape).astype(dtype) + np.array(2**24 - 3, dtype)
      check(small, valid, 5, transforms=False)
      check(small, None, 16, transforms=False)
      small[0, :3], small[0, 3] = 2**24, 2**24 + 1  # no float32: the keys' top k
      check(small, None, 5, transforms=False)


def test_float32_fast_path_and_its_fallbacks():
  # float32 without padding runs XLA's top_k on the scores as they are unless a zero or NaN
  # reaches the top k: rows without either, rows where -0.0/0.0 decide the order or the cut,
  # NaN (either sign) among few numbers, subnormals next to zero.
  rng = np.random.default_rng(0)
  ties = rng.integers(-3, 4, size=(6, 40)).astype(np.float32)
  ties[ties == 0] = 0.5
  check(ties, None, 10)  # heavy ties, no zero: the scores' own top k
  zeros = np.where(rng.random((6, 40)) < 0.5, np.float32(0.0), np.float32(-0.0))
  zeros[:, ::7] = 1.0
  check(zeros, None, 10)
  check(-zeros, None, 10)
  nan = np.full((6, 40), np.nan, np.float32)
  nan[:, 1::2] = -np.nan
  nan[0, 5], nan[1, 39], nan[2, :3] = -np.inf, np.inf, [-1.0, 0.0, 2.0]
  check(nan, None, 10)
  tiny = np.float32(1e-45)
  sub = np.array([[tiny, 0.0, -tiny, -0.0, 2 * tiny, np.float32(1.2e-38), -2 * tiny]], np.float32)
  check(sub, None, 7, transforms=False)
  check(sub, None, 2, transforms=False)
  # one NaN row makes every row of the batch take the keys' top k; the others stay exact
  mixed = rng.standard_normal((6, 40)).astype(np.float32)
  mixed[3, 4] = np.nan
  check(mixed, None, 10)


def test_shapes_and_k_equal_n():
  rng = np.random.default_rng(1)
  scores, valid = draw(np.float32, rng, shape=(2, 3, 9))
  check(scores, valid, 9)
  check(scores, None, 9)
  check(scores[0, 0], valid[0, 0], 4)
  check(scores[0, 0, :1], None, 1)
  check(scores.astype(ml_dtypes.bfloat16), valid, 3, transforms=False)


def test_bool_scores_are_refused_as_everywhere():
  with pytest.raises(TypeError, match=r"scores must have a floating or integer dtype, got bool"):
    jaxrank.top_k_ids(np.array([[True, False]]), 1)


def test_full_keys_meet_padding():
  # int32/uint32 keys use every value, so a valid item can hold padding's key: sorted then.
  lo = np.iinfo(np.int32).min
  s = np.array([[lo, lo + 1, 7, lo, lo + 1], [3, lo, 3, 3, 0]], np.int32)
  w = np.array([[True, True, False, False, True], [True, True, True, False, True]])
  check(s, w, 5)
  check(np.array([[1, 0, 5, 1, 0]], np.uint32), np.array([[True, True, True, False, False]]), 5)


@settings(max_examples=60, deadline=None)
@given(scores=hnp.arrays(np.float32, (3, 8), elements=st.floats(width=32, allow_subnormal=True)),
       valid=hnp.arrays(np.bool_, (3, 8)), k=st.sampled_from([1, 3, 8]),
       pad=st.booleans())
def test_float32_property(scores, valid, k, pad):
  check(scores, valid if pad else None, k)


@settings(max_examples=30, deadline=None)
@given(scores=hnp.arrays(np.int16, (3, 8), elements=st.integers(-3, 3)),
       valid=hnp.arrays(np.bool_, (3, 8)), k=st.sampled_from([2, 8]))
def test_int16_property(scores, valid, k):
  check(scores, valid, k)


def test_no_recompilation_for_new_values():
  s = jnp.asarray(np.random.default_rng(2).standard_normal((4, 50)).astype(np.float32))
  jaxrank.top_k_ids(s, 5)
  with jax.log_compiles():
    pass
  before = jaxrank._core.beyond._top_k_ids._cache_size()
  jaxrank.top_k_ids(s + 1, 5)
  jaxrank.top_k_ids(s.at[0, 0].set(jnp.nan), 5)  # the fallback is a cond, not a new trace
  assert jaxrank._core.beyond._top_k_ids._cache_size() == before
