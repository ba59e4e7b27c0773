"""Scores of every dtype JAX accepts rank by their exact value, through every input form.

Issue 10, items 1 and 21: narrow integer keys wrapped (int8 [1, 5, 3] all tied), 64-bit integers
were wrapped to int32 without x64 mode (2**32 ranked below 5), and float32 subnormals tied with 0
(XLA flushes them in arithmetic). The expected ranks here come from exact Python comparisons of
each value (``int`` for integers, ``float`` for floats), with NaN below every number.
"""

import math
import zlib

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import jaxrank
from jaxrank import linkpred

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
              ml_dtypes.int4, ml_dtypes.uint4]
FLOAT_DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64,
                ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]
ALL_DTYPES = INT_DTYPES + FLOAT_DTYPES
METRICS = ["precision", "recall", "fbeta", "hit_rate", "reciprocal_rank", "average_precision",
           "average_recall", "dcg", "ndcg", "r_precision", "mean_rank"]


def _name(dtype):
  return np.dtype(dtype).name


def _pool(dtype, rng):
  """Values of ``dtype``: its extremes, zeros, subnormals, infinities, NaN and random ones."""
  dtype = np.dtype(dtype)
  if np.issubdtype(dtype, np.integer) or dtype in (ml_dtypes.int4, ml_dtypes.uint4):
    info = ml_dtypes.iinfo(dtype) if dtype.itemsize == 1 and dtype.name.endswith("int4") else (
        np.iinfo(dtype))
    lo, hi = int(info.min), int(info.max)
    values = {lo, lo + 1, hi, hi - 1, 0, 1, min(hi, 5)} | {
        int(v) for v in rng.integers(lo, hi, size=6, endpoint=True, dtype=np.int64
                                     if dtype != np.uint64 else np.uint64)}
    if dtype.itemsize >= 4 and dtype.kind == "i":  # values JAX would wrap or clip
      values |= {2**31 - 1, -(2**31), 2**31 - 2} if dtype == np.int32 else {2**32, -(2**40), 5}
    if dtype == np.uint64:
      values |= {2**32, 2**63 + 1, 2**64 - 1}
    return np.array(sorted(v for v in values if lo <= v <= hi), dtype=dtype)
  info = ml_dtypes.finfo(dtype)
  tiny, smallest = float(info.tiny), float(info.smallest_subnormal)
  values = [0.0, -0.0, 1.0, -1.0, 0.5, float(info.max), -float(info.max), tiny, -tiny, smallest,
            -smallest, 2 * smallest, float("nan")]
  if not dtype.name.startswith("float8_e4m3fn"):
    values += [float("inf"), float("-inf")]
  values += list(rng.normal(size=4) * 3)
  return np.array(values, np.float64).astype(dtype)


def _draw(dtype, shape, rng):
  pool = _pool(dtype, rng)
  return pool[rng.integers(0, pool.size, size=shape)]


def _exact(v):
  v = np.asarray(v)
  if v.dtype.kind in "iu" or v.dtype.name.endswith("int4"):
    return int(v)
  return float(v.astype(np.float64))


def _above(a, b):
  """a ranks strictly above b: numbers by value, NaN below every number."""
  if isinstance(a, float) and math.isnan(a):
    return False
  return (isinstance(b, float) and math.isnan(b)) or a > b


def _bounds(row, valid, i):
  """(1 + #{valid j above i}, #{valid j at or above i}) by exact comparisons."""
  x = [_exact(v) for v in row]
  above = sum(1 for j in range(len(x)) if valid[j] and _above(x[j], x[i]))
  below = sum(1 for j in range(len(x)) if valid[j] and _above(x[i], x[j]))
  return 1 + above, int(np.sum(valid)) - below


def _device(x, dtype):
  """The array as the user hands it: NumPy for 64-bit types (JAX may not hold them), else JAX."""
  return x if np.dtype(dtype).itemsize == 8 else jnp.asarray(x)


# x64 mode changes the key dtype of 64-bit scores only; 32-bit ones run once more as a check.
CASES = ([(t, False) for t in ALL_DTYPES if np.dtype(t) != np.float64]
         + [(t, True) for t in (np.int64, np.uint64, np.float64)])
# The sorting path differs by dtype only in the keys' width and fullness: a few dtypes cover it.
SORTED = {np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64, np.float32,
                                ml_dtypes.bfloat16, np.float64)}


@pytest.mark.parametrize("dtype, x64", CASES,
                         ids=[f"{_name(t)}-{'x64' if x else 'x32'}" for t, x in CASES])
def test_every_form_ranks_by_exact_value(dtype, x64):
  with jax.enable_x64(x64):
    _check_every_form(dtype)


def _check_every_form(dtype):
  rng = np.random.default_rng(zlib.crc32(_name(dtype).encode()))  # same data in every process
  lists, n = 3, 9
  scores = _draw(dtype, (lists, n), rng)
  scores[0, :3] = scores[0, 3]  # a tie group
  where = rng.random((lists, n)) < 0.8
  where[1, :] = True
  labels = (rng.random((lists, n)) < 0.5).astype(np.int32)
  labels[:, 0] = 1
  s = _device(scores, dtype)

  # from_dense (both counting paths) and from_sparse with padding
  for method in ("count", "sort") if np.dtype(dtype) in SORTED else ("count",):
    r = jaxrank.from_dense(s, labels, where, method=method)
    for b in range(lists):
      slots = [i for i in range(n) if labels[b, i] > 0 and where[b, i]]
      want = [_bounds(scores[b], where[b], i) for i in slots]
      got = list(zip(np.asarray(r.lo[b]).tolist(), np.asarray(r.hi[b]).tolist()))[:len(slots)]
      assert got == want, (method, b, scores[b], where[b])
  ids = np.where(labels > 0, np.arange(n), -1).astype(np.int32)
  rs = jaxrank.from_sparse(s, ids, where=where)
  for b in range(lists):
    for i in range(n):
      if labels[b, i] and where[b, i]:
        assert (int(rs.lo[b, i]), int(rs.hi[b, i])) == _bounds(scores[b], where[b], i)
      elif labels[b, i]:
        assert int(rs.lo[b, i]) == n + 1  # unranked

  # ties="first": ties by index; tie_key of the same dtype breaks them first
  r = jaxrank.from_dense(s, labels, where, ties="first", tie_key=s)
  for b in range(lists):
    x = [_exact(v) for v in scores[b]]
    for slot, i in enumerate(i for i in range(n) if labels[b, i] > 0 and where[b, i]):
      ahead = sum(1 for j in range(n) if where[b, j] and (
          _above(x[j], x[i]) or (not _above(x[i], x[j]) and j < i)))
      assert int(r.lo[b, slot]) == 1 + ahead

  # from_candidates / linkpred: the positive is each list's item 0 against the others
  pos, cand, mask = scores[:, 0], scores[:, 1:], where[:, 1:]
  rc = jaxrank.from_candidates(_device(pos, dtype), _device(cand, dtype), mask)
  mr = linkpred.mean_rank(_device(pos, dtype), _device(cand, dtype), candidate_mask=mask)
  for b in range(lists):
    x0 = _exact(pos[b])
    xs = [_exact(v) for v, m in zip(cand[b], mask[b]) if m]
    lo = 1 + sum(_above(v, x0) for v in xs)
    hi = lo + sum(not _above(v, x0) and not _above(x0, v) for v in xs)
    assert (int(rc.lo[b, 0]), int(rc.hi[b, 0])) == (lo, hi)
    assert float(mr[b]) == (lo + hi) / 2

  # top_k_ids: value order, NaN after numbers, padding after NaN, ties by index
  for w in (None, where):
    got = np.asarray(jaxrank.top_k_ids(s, n, where=w))
    for b in range(lists):
      valid = np.ones(n, bool) if w is None else w[b]
      x = [_exact(v) for v in scores[b]]
      order = sorted(range(n), key=lambda i: (not valid[i],
                                              sum(_above(x[j], x[i]) for j in range(n)), i))
      want = [i if valid[i] else -1 for i in order]
      assert got[b].tolist() == want, (b, scores[b], valid)


@pytest.mark.parametrize("dtype", [np.int8, np.uint32, np.int64, np.float16], ids=_name)
def test_metrics_equal_those_of_the_float64_order(dtype):
  # Every metric and tie policy of a dtype equals the metric of its values' order, given as
  # small float32 ranks (which every dtype's values map to exactly).
  labels = np.random.default_rng(7).integers(0, 3, size=(6, 8))  # one slot count: one compile
  scores = _draw(dtype, (6, 8), np.random.default_rng(8))
  scores[:, 4:] = scores[:, :4]  # ties
  exact = np.array([[sum(_above(_exact(v), _exact(u)) for u in row) for v in row]
                    for row in scores], np.float32)  # items below: the same order and ties
  s = _device(scores, dtype)
  # The dtype only enters the Ranks, which "average" (bounds) and "first" (resolved) build; the
  # other policies read the same Ranks as "average" (test_vs_reference covers them).
  for ties in ("average", "first"):
    names = METRICS + ["ndcg@3", "precision@3", "reciprocal_rank@3"]
    got = jaxrank.evaluate(s, labels, names, ties=ties)
    want = jaxrank.evaluate(exact, labels, names, ties=ties)
    for name in got:
      np.testing.assert_allclose(np.asarray(got[name]), np.asarray(want[name]), rtol=1e-6,
                                 err_msg=f"{name} {ties}")


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64,
                                   np.int64], ids=_name)
def test_issue_examples(dtype):
  s = np.array([[1, 5, 3]], dtype)
  assert float(jaxrank.reciprocal_rank(s, [[0, 1, 0]])[0]) == 1.0
  assert jaxrank.top_k_ids(s, 2).tolist() == [[1, 2]]
  assert linkpred.rank(np.array([5], dtype), np.array([[1, 3]], dtype)).tolist() == [1.0]
  if np.dtype(dtype).kind == "u":  # with uint8, scores 0, 1, 2 tied
    assert float(jaxrank.reciprocal_rank(np.array([[0, 1, 2]], dtype), [[0, 0, 1]])[0]) == 1.0


def test_int64_beyond_int32_without_x64():
  # 2**32 wrapped to 0 and ranked below 5 (mrr 0.5); now every value keeps its order.
  s = np.array([[2**32, 5]], np.int64)
  assert float(jaxrank.reciprocal_rank(s, [[1, 0]])[0]) == 1.0
  assert float(jaxrank.reciprocal_rank([[2**40, 2**40 + 1, -(2**40)]], [[1, 0, 0]])[0]) == 0.5
  assert jaxrank.top_k_ids(np.array([[-(2**40), 3, 2**63 - 1]]), 3).tolist() == [[2, 1, 0]]
  assert linkpred.rank(np.array([2**33]), np.array([[2**33 + 1, 2**32, 7]])).tolist() == [2.0]
  u = np.array([[2**64 - 1, 2**63, 0]], np.uint64)
  assert jaxrank.top_k_ids(u, 3).tolist() == [[0, 1, 2]]
  # ... also against the same values given as exact floats of another list
  r = jaxrank.from_candidates(np.array([2**40], np.int64), np.array([[2.0**41, 1.5]]))
  assert (r.lo.tolist(), r.hi.tolist()) == ([[2]], [[2]])


def test_int64_ids_beyond_int32_without_x64_raise():
  with pytest.raises(ValueError, match=r"relevant_ids must fit in int32 when JAX's x64 mode is "
                                       r"off, got 4294967296 at index \(0, 0\)"):
    jaxrank.from_ranked_ids([[1, 2]], np.array([[2**32]]))


def test_float32_subnormals_rank_by_value():
  # XLA flushes subnormals in arithmetic and comparisons on CPU; the keys use the bits only.
  tiny = np.float32(1e-45)
  s = np.array([[tiny, 0.0, -tiny, -0.0, 2 * tiny, np.float32(1.2e-38)]], np.float32)
  assert float(jaxrank.reciprocal_rank(s[:, :2], [[1, 0]])[0]) == 1.0
  assert float(jaxrank.reciprocal_rank(s[:, [2, 0]], [[0, 1]])[0]) == 1.0
  assert jaxrank.top_k_ids(s, 6).tolist() == [[5, 4, 0, 1, 3, 2]]  # 0.0 and -0.0 tie by index
  r = jaxrank.from_dense(s, [[0, 1, 0, 1, 0, 0]])
  assert (r.lo.tolist(), r.hi.tolist()) == ([[4, 4]], [[5, 5]])  # only 0.0 == -0.0 tie


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")
def test_float64_without_x64_is_float32():
  # JAX stores float64 input as float32 without x64 mode: orders never invert, values equal in
  # float32 tie. (With x64 mode on, float64 compares exactly: test_every_form_ranks_by_exact_value.)
  rng = np.random.default_rng(0)
  s = rng.normal(size=(4, 30)) * 10.0 ** rng.integers(-40, 40, size=(4, 30))
  s[0, :3] = [1.0, 1.0 + 1e-12, 1e39]
  labels = rng.integers(0, 2, size=s.shape)
  a = jaxrank.evaluate(s, labels, METRICS)
  b = jaxrank.evaluate(s.astype(np.float32), labels, METRICS)
  for name in METRICS:
    np.testing.assert_array_equal(np.asarray(a[name]), np.asarray(b[name]))


@pytest.mark.parametrize("a, b", [(np.int8, np.uint8), (np.int16, np.float16),
                                  (np.uint8, ml_dtypes.bfloat16), (np.int32, np.float32),
                                  (np.uint32, np.int32), (np.float16, ml_dtypes.bfloat16)],
                         ids=lambda t: np.dtype(t).name)
def test_mixed_dtypes_compare_exactly(a, b):
  # The positive and its candidates in different dtypes: compared by exact value, never cast
  # into a dtype that changes one of them (int32 16777217 vs float32 16777216.0).
  big = 16777217 if np.dtype(a) == np.int32 else 100
  pos = np.array([big, 3, -1 if np.dtype(a).kind != "u" else 0], a)
  cand = np.array([[16777216 if np.dtype(a) == np.int32 else 99, 3, 0]] * 3, b)
  r = jaxrank.from_candidates(jnp.asarray(pos), jnp.asarray(cand))
  for i in range(3):
    x0 = _exact(pos[i])
    xs = [_exact(v) for v in cand[i]]
    lo = 1 + sum(_above(v, x0) for v in xs)
    hi = lo + sum(v == x0 for v in xs)
    assert (int(r.lo[i, 0]), int(r.hi[i, 0])) == (lo, hi)


def test_mixed_dtypes_without_exact_common_dtype_under_jit_raise():
  f = jax.jit(lambda p, c: jaxrank.from_candidates(p, c).lo)
  with pytest.raises(TypeError, match=r"positive_scores and candidate_scores have no common "
                                      r"device dtype .* cast them to one dtype"):
    f(jnp.array([1], jnp.int32), jnp.array([[1.0]], jnp.float32))


def test_full_width_int_keys_do_not_meet_padding():
  # int32/uint32 keys use every value, so padding's key can equal a valid item's key.
  lo32 = np.iinfo(np.int32).min
  s = np.array([[lo32, lo32 + 1, 7, lo32]], np.int32)
  where = np.array([[True, True, False, False]])
  for method in ("count", "sort"):
    r = jaxrank.from_dense(s, [[1, 1, 1, 1]], where, method=method)
    assert (r.lo[0, :2].tolist(), r.hi[0, :2].tolist()) == ([2, 1], [2, 1])
  assert jaxrank.top_k_ids(s, 4, where=where).tolist() == [[1, 0, -1, -1]]
  r = jaxrank.from_candidates(jnp.array([lo32], jnp.int32), jnp.array([[lo32, 0]], jnp.int32),
                              jnp.array([[False, True]]))
  assert (r.lo.tolist(), r.hi.tolist()) == ([[2]], [[2]])
  u = np.array([[0, 5, 0]], np.uint32)
  r = jaxrank.from_dense(u, [[1, 0, 0]], [[True, True, False]], ties="first")
  assert r.lo.tolist() == [[2]]
  # uint32 0 and 1 hold the two smallest keys, where padding sits (padding_key)
  u = np.array([[1, 0, 5, 1, 0]], np.uint32)
  where = np.array([[True, True, True, False, False]])
  assert jaxrank.top_k_ids(u, 5, where=where).tolist() == [[2, 0, 1, -1, -1]]
  for method in ("count", "sort"):
    r = jaxrank.from_dense(u, [[1, 1, 0, 0, 0]], where, method=method)
    assert (r.lo.tolist(), r.hi.tolist()) == ([[2, 3]], [[2, 3]])
  r = jaxrank.from_dense(u, [[1, 1, 0, 0, 0]], where, ties="first")
  assert r.lo.tolist() == [[2, 3]]


def test_soft_metrics_keep_int64_magnitudes():
  # Soft ranks read score differences: 64-bit ints beyond int32 become floats, not wrapped ints.
  s = np.array([[2**40, 5, 0]], np.int64)
  value = jaxrank.soft_ndcg(s, [[1, 0, 0]], temperature=1e-3)
  assert float(value[0]) == pytest.approx(1.0)
  value = jaxrank.soft_reciprocal_rank(np.array([[2**40, 5]], np.uint64), [[1, 0]],
                                       temperature=1e-3)
  assert float(value[0]) == pytest.approx(1.0, abs=1e-3)


def test_int_positives_against_float32_candidates_stay_exact():
  # Small ints against float32 are cast (they fit the mantissa); 2**24 + 1 does not fit and
  # still ranks by its exact value (it is above the candidate 2**24, which float32 would tie).
  cand = np.array([[0.5, 3.0, 2.0**24, -1.0]], np.float32)
  for pos, want in (([3], [2]), ([1], [3]), ([2**24 + 1], [1]), ([2**24], [1])):
    lo = np.asarray(linkpred.rank(pos, cand, ties="optimistic")).tolist()
    assert lo == want, (pos, lo)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint16, np.bool_,
                                   np.float16, np.float32, np.float64])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("shape", [(7, 13), (2, 3, 5), (4, 0), (0, 6), (3, 70_000),
                                   (2, 70, 2_000)])
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_host_label_summary_equals_the_device_one(dtype, masked, shape):
  # Integer, boolean, float32 and float64 labels on the CPU are counted and checked by NumPy in
  # place (_dense._summary, in blocks of rows: the last two shapes span several); everything
  # else by the jitted reduction. Both must say the same, with a bad label (negative, NaN,
  # infinite, above float32's range) only in the last row, and grades that float32 reads as 0.
  from jaxrank._core import dense as _dense
  signed = np.issubdtype(dtype, np.signedinteger) or np.issubdtype(dtype, np.floating)
  rng = np.random.default_rng(len(shape) + shape[-1])
  labels = rng.integers(-1 if signed else 0, 3, shape)
  valid = jnp.asarray(rng.random(shape) < 0.7) if masked else None
  cases = [labels, np.maximum(labels, 0), np.zeros(shape, int)]
  bad = [-1] if signed else []
  if np.issubdtype(dtype, np.floating):
    bad += [np.nan, np.inf, -np.inf, 4e38, -0.0, 1e-45, 1e-46, 2.0**-150, 2.0**-149]
  for value in bad:  # in the last label, and in the whole last row (the fullest list, or not)
    last, row = (np.maximum(labels, 0).astype(np.float64) for _ in range(2))
    if last.size:
      last.reshape(-1)[-1] = value
      row.reshape(-1, shape[-1])[-1] = value
    cases += [last, row]
  with jax.enable_x64(dtype == np.float64):
    for y in cases:
      y = jnp.asarray(y.astype(dtype))
      host = _dense._summary(y, valid)
      device = [int(v) for v in np.asarray(_dense._label_summary(y, valid))]
      # XLA's CPU kernels read float32 subnormals as 0; NumPy counts them: more slots than
      # positives is safe (fewer would not be), and only such grades may differ.
      grades = np.asarray(y, np.float64).astype(np.float32)
      if (np.abs(grades[grades != 0]) < np.finfo(np.float32).tiny).any():
        assert host[1:] == device[1:] and host[0] >= device[0], (y.dtype, host, device)
      else:
        assert host == device, (y.dtype, y.reshape(-1)[-1:], host, device)


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16])
def test_half_precision_labels_check_without_a_warning(dtype):
  # Their largest value is below float32's: comparing with it cast float32's largest to inf
  # and warned on every call. +inf is still the one label above the range.
  import warnings
  scores = np.random.default_rng(0).random((3, 20))
  labels = jnp.asarray(np.arange(60).reshape(3, 20) % 3, dtype)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    jaxrank.ndcg(scores, labels, k=5)
    with pytest.raises(ValueError, match="got inf at index"):
      jaxrank.ndcg(scores, labels.at[1, 2].set(jnp.inf), k=5)
