"""The cut path: metrics that all have a cutoff read ranks exact only within the largest one.

``jaxrank._core.dense.ranks_of_dense(..., cut=K)`` marks every slot that cannot reach the top ``K`` as
unranked; every formula at a cutoff ``k <= K`` must give exactly the value of the full ranks.
The internal kernel is compared with the full count on small integer scores with heavy ties,
NaN, -inf and padding, for every score dtype the cut path takes and every tie policy; the public
path (``method="auto"``, which takes it from 128 slots on CPU) against ``method="count"``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxrank
from jaxrank._core import compute as _compute
from jaxrank._core import cut as _cut
from jaxrank._core import dense as _dense

NAMES = ["precision", "recall", "fbeta", "hit_rate", "reciprocal_rank", "average_precision",
         "average_recall", "dcg", "ndcg", "r_precision", "mean_rank"]
TIES = ["average", "optimistic", "pessimistic", "first"]
DTYPES = [np.float32, np.float16, jnp.bfloat16, np.int8, np.uint8, np.int16, np.bool_]
LISTS, N = 5, 12  # fixed shapes: one compilation per (dtype, K, ties, metrics)

settings.register_profile("cutoff", max_examples=10, deadline=None)


def _data(seed, dtype, levels):
  rng = np.random.default_rng(seed)
  raw = rng.integers(0, levels, (LISTS, N))
  if np.issubdtype(np.dtype(dtype), np.floating) or dtype is jnp.bfloat16:
    scores = raw.astype(np.float32)
    scores[rng.random(raw.shape) < 0.1] = np.nan
    scores[rng.random(raw.shape) < 0.1] = -np.inf
    scores[rng.random(raw.shape) < 0.05] = -0.0
    scores = jnp.asarray(scores, dtype)
  else:
    scores = jnp.asarray((raw > 0) if dtype is np.bool_ else raw.astype(dtype))
  labels = rng.integers(0, 4, raw.shape) * (rng.random(raw.shape) < 0.5)
  labels[0] = 0  # one list without relevant items
  where = rng.random(raw.shape) < rng.choice([0.3, 0.8, 1.0])
  where[1] = False  # one fully padded list
  return scores, jnp.asarray(labels, jnp.int32), jnp.asarray(where)


def _values(scores, labels, where, *, ties, cut, specs, options):
  m, checked = _dense.slot_count(labels, where, None)
  ranks = _dense.ranks_of_dense(scores, labels, where, None, ties=_compute.rank_ties(ties), m=m,
                                method="auto", cut=cut, checked=checked)
  return _compute.compute_ranks(ranks, specs=specs, options=options)


@settings(settings.get_profile("cutoff"))
@given(seed=st.integers(0, 2**31 - 1), dtype=st.sampled_from(DTYPES),
       levels=st.integers(1, 5), cut=st.sampled_from([1, 3, N - 1]),
       ties=st.sampled_from(TIES), variant=st.integers(0, 2))
def test_cut_ranks_give_the_full_values(seed, dtype, levels, cut, ties, variant):
  scores, labels, where = _data(seed, dtype, levels)
  # three option sets (each one compilation): the defaults, and every other denominator
  options = _compute.make_options(
      ties=ties, gain=["linear", "exp2", "linear"][variant],
      ap_denominator=["all", "min_k", "retrieved"][variant],
      precision_denominator=["k", "min_k_n", "k"][variant])
  ks = sorted({1, cut})  # the cut is the largest cutoff
  specs = tuple((name, k) for name in NAMES for k in ks)
  full = _values(scores, labels, where, ties=ties, cut=None, specs=specs, options=options)
  fast = _values(scores, labels, where, ties=ties, cut=cut, specs=specs, options=options)
  for (name, k), a, b in zip(specs, fast, full):
    np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-7, err_msg=f"{name}@{k}")


@settings(settings.get_profile("cutoff"))
@given(seed=st.integers(0, 2**31 - 1), levels=st.integers(2, 40),
       cut=st.sampled_from([1, 3, N - 1]), dirty=st.booleans())
def test_unmasked_float32_cut_gives_the_full_values(seed, levels, cut, dirty):
  """The plain cut path (unmasked float32, a top_k of the scores as they are): ties straddling
  the cut or not; with ``dirty`` some lists hold NaN, zeros or -inf, which the keyed path
  takes over."""
  rng = np.random.default_rng(seed)
  scores = rng.integers(1, levels + 1, (LISTS, N)).astype(np.float32) / 8 - levels / 16
  scores[scores == 0] = 0.5
  if dirty:
    scores[rng.random(scores.shape) < 0.1] = rng.choice([np.nan, 0.0, -0.0, -np.inf])
  labels = jnp.asarray(rng.integers(0, 4, (LISTS, N)) * (rng.random((LISTS, N)) < 0.5))
  options = _compute.make_options()
  specs = tuple((name, k) for name in NAMES for k in sorted({1, cut}))
  full = _values(jnp.asarray(scores), labels, None, ties="average", cut=None, specs=specs,
                 options=options)
  fast = _values(jnp.asarray(scores), labels, None, ties="average", cut=cut, specs=specs,
                 options=options)
  for (name, k), a, b in zip(specs, fast, full):
    np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-7, err_msg=f"{name}@{k}")
  if not dirty:  # the plain path itself gives the bounds the full count gives, where exact
    positive = labels > 0
    values, top_index = jax.lax.top_k(jnp.asarray(scores), cut + 1)
    most = int(jnp.max(jnp.sum(positive, axis=-1)))
    for m in (N, most):  # one slot per item (_cut_item_ranks), and the relevant slots only
      index, ok = _dense.relevant_slots(positive, m)
      lo, hi = _cut._cut_slot_ranks_plain(jnp.asarray(scores), values, top_index, ok, index,
                                          cut=cut, size=N)
      r = jaxrank.from_dense(scores, labels, max_relevant=m)
      reach = np.asarray(lo) <= N
      assert reach.any() or cut < 3
      np.testing.assert_array_equal(np.asarray(lo)[reach], np.asarray(r.lo)[reach])
      np.testing.assert_array_equal(np.asarray(hi)[reach], np.asarray(r.hi)[reach])
      assert (np.asarray(r.lo)[~reach & np.asarray(ok)] > cut).all()


@pytest.mark.parametrize("case", ["distinct", "straddle", "short", "nan"])
@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_keyed_cut_counts_each_list_only_when_needed(case, dtype):
  """The keyed path (a mask, or a dtype other than float32) passes over whole lists only when a
  tie group at the cut-th key straddles the cut, or a list has fewer than cut items above -inf;
  every case, with lists that need the pass and lists that do not in one batch, gives the full
  count's values."""
  rng = np.random.default_rng(3)
  scores = np.stack([rng.permutation(N) for _ in range(LISTS)]).astype(np.float32)
  where = np.ones((LISTS, N), bool)
  where[:, -2:] = False  # masked: the keyed path
  if case == "straddle":
    scores[2, :4] = 20.0  # a group of 4 at the top of list 2, cut 3 falls inside it
  elif case == "short":
    where[3, 2:] = False  # list 3 holds 2 items, fewer than the cut
  elif case == "nan":
    # list 4: two items above -inf, then NaN, -inf, -inf, NaN...; the top_k sees all of them as
    # -inf and takes them in index order, so the cut-th and (cut + 1)-th keys differ (NaN,
    # -inf) while the relevant -inf items rank 3-4, inside the cut
    scores[4, 2:] = np.nan
    scores[4, 3:5] = -np.inf
  labels = rng.integers(0, 3, (LISTS, N)) * (rng.random((LISTS, N)) < 0.6)
  labels[4, 3:5] = 2
  labels = jnp.asarray(labels)
  s = jnp.asarray(np.nan_to_num(scores, nan=-5, neginf=-6) if dtype == np.int16 else scores,
                  dtype)
  options = _compute.make_options()
  specs = tuple((name, k) for name in NAMES for k in (1, 3))
  full = _values(s, labels, jnp.asarray(where), ties="average", cut=None, specs=specs,
                 options=options)
  fast = _values(s, labels, jnp.asarray(where), ties="average", cut=3, specs=specs,
                 options=options)
  for (name, k), a, b in zip(specs, fast, full):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, err_msg=f"{case} {name}@{k}")


def test_ties_straddling_the_cut():
  # cut 3 falls inside the tie group of ranks 2-5; relevant items inside and outside it
  scores = jnp.array([[9.0, 5.0, 5.0, 5.0, 5.0, 1.0, 0.0, -1.0]])
  labels = jnp.array([[0, 3, 0, 1, 2, 1, 0, 2]])
  for ties in TIES:
    options = _compute.make_options(ties=ties)
    specs = tuple((name, k) for name in NAMES for k in (2, 3))
    full = _values(scores, labels, None, ties=ties, cut=None, specs=specs, options=options)
    fast = _values(scores, labels, None, ties=ties, cut=3, specs=specs, options=options)
    for (name, k), a, b in zip(specs, fast, full):
      np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=f"{ties} {name}@{k}")


def test_cut_ranks_mark_only_out_of_reach_slots():
  scores = jnp.array([[4.0, 3.0, 3.0, 3.0, 1.0, jnp.nan]])
  labels = jnp.array([[1, 0, 1, 1, 1, 1]])
  r = _dense.ranks_of_dense(scores, labels, None, None, ties="average", m=6, method="auto",
                            cut=2, checked=True)
  # m = n: one slot per item. Items 2 and 3 sit in the 3.0 group straddling the cut (ranks
  # 2-4, exact); items 4 and 5 cannot reach the top 2 and read as unranked (7), as item 1
  # (not relevant) does.
  assert r.lo.tolist() == [[1, 7, 2, 2, 7, 7]] and r.hi.tolist() == [[1, 7, 4, 4, 7, 7]]
  full = jaxrank.from_dense(scores, labels, max_relevant=6)
  assert full.lo.tolist() == [[1, 7, 2, 2, 5, 6]]


@pytest.mark.parametrize("ties", ["average", "first"])  # the bounds serve every other policy
def test_public_path_takes_the_cut_and_agrees_with_the_count(ties):
  rng = np.random.default_rng(7)
  lists, n = 4, 200
  scores = np.round(rng.normal(size=(lists, n)), 1).astype(np.float32)  # many ties
  scores[rng.random(scores.shape) < 0.05] = np.nan
  labels = rng.integers(1, 4, (lists, n)) * (rng.random((lists, n)) < 0.7)  # ~126 relevant
  where = rng.random((lists, n)) < 0.9
  m, _ = _dense.slot_count(jnp.asarray(labels), jnp.asarray(where), None)
  assert _cut.cut_applies(np.float32, n, 10, m, ties=ties, tie_key=None, method="auto")
  metrics = [f"{name}@{k}" for name in NAMES for k in (3, 10)]
  auto = jaxrank.evaluate(scores, labels, metrics, where=where, ties=ties)
  count = jaxrank.evaluate(scores, labels, metrics, where=where, ties=ties, method="count")
  for name in metrics:
    np.testing.assert_allclose(auto[name], count[name], rtol=2e-6, atol=2e-7, err_msg=name)
  one = jaxrank.ndcg(scores, labels, where=where, ties=ties, k=10)
  np.testing.assert_allclose(one, count["ndcg@10"], rtol=2e-6)


def test_cut_path_under_jit_and_vmap():
  rng = np.random.default_rng(3)
  scores = jnp.asarray(rng.integers(0, 4, (3, 4, 60)).astype(np.float32))
  labels = jnp.asarray(rng.integers(0, 3, (3, 4, 60)))

  def metrics(s, y, method):
    return jaxrank.evaluate(s, y, ["ndcg@5", "map@5", "mrr@5", "p@5", "r@5"], method=method)

  count = metrics(scores, labels, "count")
  jitted = jax.jit(lambda s, y: metrics(s, y, "auto"))(scores, labels)  # one slot per item
  mapped = jax.vmap(lambda s, y: metrics(s, y, "auto"))(scores, labels)
  for name in count:
    np.testing.assert_allclose(jitted[name], count[name], rtol=2e-6, err_msg=name)
    np.testing.assert_allclose(mapped[name], count[name], rtol=2e-6, err_msg=name)


def test_no_recompilation_for_new_values():
  rng = np.random.default_rng(5)

  def call(seed):
    r = np.random.default_rng(seed)
    s = r.normal(size=(4, 100)).astype(np.float32)
    y = (r.random((4, 100)) < 0.6).astype(np.int32)
    y[:, :60] = 1  # the same slot bucket every call
    return jaxrank.evaluate(s, y, ["ndcg@10", "p@10"])

  call(0)
  before = _compute._dense_values._cache_size()
  for seed in rng.integers(1, 1000, 3):
    call(int(seed))
  assert _compute._dense_values._cache_size() == before
