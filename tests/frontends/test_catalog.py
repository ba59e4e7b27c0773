"""jaxrank.catalog against materialising the users x items matrix: from_sparse(where=~excluded) +
evaluate + top_k_ids, on small catalogs with heavy ties (integer embeddings), NaN scores, users
without held-out items, held-out items that are also excluded, all-excluded users and tiles that
do not divide the users or the catalog."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrank
from jaxrank import catalog

METRICS = ["ndcg@3", "map", "mrr", "precision@4", "recall@5", "mr", "rprec", "ndcg"]


def workload(seed, users=11, items=23, d=3, r=4, e=6, grades=False):
  """Integer embeddings in [-2, 2] (many tied scores), -1-padded held-out and excluded ids.

  User 0 has no held-out item, user 1 has every item excluded, user 2's held-out items are all
  also excluded; the rest draw held-out and excluded ids that overlap by one item.
  """
  rng = np.random.default_rng(seed)
  q = rng.integers(-2, 3, (users, d)).astype(np.float32)
  it = rng.integers(-2, 3, (items, d)).astype(np.float32)
  rel = np.full((users, r), -1, np.int32)
  ex = np.full((users, max(e, items)), -1, np.int32)
  for u in range(users):
    perm = rng.permutation(items)
    nr, ne = int(rng.integers(1, r + 1)), int(rng.integers(0, e + 1))
    if u == 0:
      nr = 0
    rel[u, :nr] = perm[:nr]
    start = max(nr - 1, 0)  # one held-out item is also excluded
    ex[u, :ne] = perm[start:start + ne]
    rel[u] = rng.permutation(rel[u])  # padding anywhere
  ex[1] = np.arange(items)
  ex[2, :] = -1
  ex[2, :r] = rel[2]
  g = rng.integers(0, 4, (users, r)).astype(np.float32) if grades else None
  return q, it, rel, ex, g


def materialised(q, it, rel, ex, g, score_fn=catalog.dot):
  scores = np.asarray(score_fn(jnp.asarray(q), jnp.asarray(it)))
  excluded = np.zeros(scores.shape, bool)
  rows, cols = np.nonzero(ex >= 0)
  excluded[rows, ex[rows, cols]] = True
  return scores, excluded


def assert_same_ranks(got, want):
  for field in ["lo", "hi", "grades", "num_items", "overflow"]:
    np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
  assert (got.size, got.resolved) == (want.size, want.resolved)


@pytest.mark.parametrize("method, blocks", [("count", (4, 5)), ("histogram", (4, 5)),
                                           ("histogram", (11, 23)), ("count", (3, 7))])
def test_equals_materialised(method, blocks):
  q, it, rel, ex, g = workload(0, grades=True)
  scores, excluded = materialised(q, it, rel, ex, g)
  out = catalog.evaluate(q, it, rel, METRICS, relevant_grades=g, exclude_ids=ex, top_k=7,
                         user_block=blocks[0], item_block=blocks[1], method=method)
  want = jaxrank.from_sparse(scores, rel, g, where=~excluded)
  assert_same_ranks(out.ranks, want)
  ref = jaxrank.evaluate(want, METRICS)
  for name in METRICS:
    np.testing.assert_allclose(out.metrics[name], ref[name], rtol=1e-6, err_msg=name)
  ids = jaxrank.top_k_ids(scores, 7, where=~excluded)
  np.testing.assert_array_equal(out.top_ids, ids)
  have = np.asarray(ids) >= 0
  np.testing.assert_array_equal(np.asarray(out.top_scores)[have],
                                np.take_along_axis(scores, np.maximum(ids, 0), 1)[have])
  assert (np.asarray(out.top_ids[1]) == -1).all()  # all excluded: nothing to recommend
  assert int(out.ranks.num_items[1]) == 0


@pytest.mark.parametrize("ties", ["optimistic", "pessimistic", "first"])
def test_tie_policies(ties):
  q, it, rel, ex, _ = workload(1)
  scores, excluded = materialised(q, it, rel, ex, None)
  out = catalog.evaluate(q, it, rel, METRICS, exclude_ids=ex, ties=ties, user_block=4,
                         item_block=6)
  want = jaxrank.from_sparse(scores, rel, where=~excluded,
                             ties="first" if ties == "first" else "average")
  assert_same_ranks(out.ranks, want)
  ref = jaxrank.evaluate(want, METRICS, ties=ties)
  for name in METRICS:
    np.testing.assert_allclose(out.metrics[name], ref[name], rtol=1e-6, err_msg=name)


def test_documented_edge_cases():
  q, it, rel, ex, _ = workload(2)
  out = catalog.evaluate(q, it, rel, ["recall@23", "mrr"], exclude_ids=ex, empty="nan")
  assert np.isnan(out.metrics["mrr"][0])  # no held-out item: an empty list
  # held-out items that are also excluded count as relevant but are never retrieved
  assert float(out.metrics["recall@23"][2]) == 0.0
  assert (np.asarray(out.ranks.lo[2])[np.asarray(rel[2]) >= 0] == it.shape[0] + 1).all()


def test_float_embeddings_nan_scores_and_custom_scorer():
  rng = np.random.default_rng(3)
  q = rng.standard_normal((9, 4)).astype(np.float32)
  it = rng.standard_normal((30, 4)).astype(np.float32)
  it[3] = it[5]  # duplicated items tie exactly
  it[7] = 0.0

  def cosine_with_nan(a, b):  # items 10 and 11 score NaN, 12 and 13 score -inf
    s = (a / jnp.linalg.norm(a, axis=1, keepdims=True)) @ (b / jnp.linalg.norm(b, axis=1)[:, None]).T
    return jnp.where(b[:, 0] == 99.0, jnp.nan, jnp.where(b[:, 0] == -99.0, -jnp.inf, s))

  it[10:12, 0] = 99.0
  it[12:14, 0] = -99.0
  rel = np.array([[3, 10, -1], [5, 12, 7]] + [[i, i + 1, -1] for i in range(7)], np.int32)
  ex = np.full((9, 27), -1, np.int32)
  ex[0, :25] = [i for i in range(30) if i not in (3, 10, 11, 12, 13)]  # few items left
  scores, excluded = materialised(q, it, rel, ex, None, cosine_with_nan)
  for method in ["count", "histogram"]:
    out = catalog.ranks(q, it, rel, exclude_ids=ex, score_fn=cosine_with_nan, top_k=6,
                        user_block=4, item_block=8, method=method)
    assert_same_ranks(out.ranks, jaxrank.from_sparse(scores, rel, where=~excluded))
    np.testing.assert_array_equal(out.top_ids, jaxrank.top_k_ids(scores, 6, where=~excluded))


def test_int_scores_and_csr_input():
  q, it, rel, ex, g = workload(4, grades=True)
  qi, iti = q.astype(np.int32), it.astype(np.int32)
  scores, excluded = materialised(qi, iti, rel, ex, g)
  assert scores.dtype == np.int32
  out = catalog.ranks(qi, iti, rel, g, exclude_ids=ex, top_k=4, user_block=5, item_block=9)
  assert_same_ranks(out.ranks, jaxrank.from_sparse(scores, rel, g, where=~excluded))
  np.testing.assert_array_equal(out.top_ids, jaxrank.top_k_ids(scores, 4, where=~excluded))
  # the same held-out and excluded sets as CSR rows
  def csr(ids, values=None):
    keep = ids >= 0
    indptr = np.concatenate([[0], np.cumsum(keep.sum(1))])
    return (indptr, ids[::1][keep]), None if values is None else values[keep]
  (rel_csr, g_csr), (ex_csr, _) = csr(rel, g), csr(ex)
  out2 = catalog.evaluate(qi, iti, rel_csr, METRICS, relevant_grades=g_csr, exclude_ids=ex_csr,
                          user_block=5, item_block=9)
  ref = jaxrank.evaluate(jaxrank.from_sparse(scores, rel, g, where=~excluded), METRICS)
  for name in METRICS:
    np.testing.assert_allclose(out2.metrics[name], ref[name], rtol=1e-6, err_msg=name)


def test_jit_free_blocks_do_not_change_results_and_mean():
  q, it, rel, ex, _ = workload(5, users=7, items=19)
  a = catalog.evaluate(q, it, rel, ["ndcg@5", "map"], exclude_ids=ex, reduce="mean")
  b = catalog.evaluate(q, it, rel, ["ndcg@5", "map"], exclude_ids=ex, reduce="mean",
                       user_block=2, item_block=4)
  for name in a.metrics:
    np.testing.assert_allclose(a.metrics[name], b.metrics[name], rtol=1e-6)
  assert a.metrics["map"].shape == ()


def test_default_block_sizes():
  ub, ib = catalog.default_block_sizes(10_000, 200_000, relevant=20, k=10)
  assert 1 <= ub <= 10_000 and 10 <= ib <= 200_000 and ib % 128 == 0
  assert ub * ib * (16 + 80) <= 2**29  # one tile well under a GiB on CPU
  assert catalog.default_block_sizes(3, 5, k=5) == (3, 5)


def test_pad_csr():
  ids, vals = catalog.pad_csr(np.array([0, 1, 1, 4]), np.array([5, 2, 0, 9]), [1.0, 2, 3, 4])
  assert ids.tolist() == [[5, -1, -1], [-1, -1, -1], [2, 0, 9]]
  assert vals.tolist() == [[1, 0, 0], [0, 0, 0], [2, 3, 4]]
  with pytest.raises(ValueError, match="indptr must start at 0"):
    catalog.pad_csr([0, 3], [1, 2])


def test_errors():
  q, it = np.ones((2, 3), np.float32), np.ones((5, 3), np.float32)
  with pytest.raises(ValueError, match="relevant_ids must be -1"):
    catalog.ranks(q, it, [[5], [0]])
  with pytest.raises(ValueError, match=r"relevant_ids must have shape \(2, m\)"):
    catalog.ranks(q, it, [0, 1])
  with pytest.raises(ValueError, match="exclude_ids must not repeat"):
    catalog.ranks(q, it, [[0], [1]], exclude_ids=[[2, 2], [-1, -1]])
  with pytest.raises(ValueError, match="embedding size"):
    catalog.ranks(q, np.ones((5, 4), np.float32), [[0], [1]])
  with pytest.raises(ValueError, match="top_k must be <= the number of items 5"):
    catalog.ranks(q, it, [[0], [1]], top_k=6)
  with pytest.raises(ValueError, match="method must be one of"):
    catalog.ranks(q, it, [[0], [1]], method="sort")
  with pytest.raises(ValueError, match="unknown metric"):
    catalog.evaluate(q, it, [[0], [1]], ["ndgc@3"])


def test_no_recompilation_for_new_values():
  q, it, rel, ex, _ = workload(6, users=6, items=17)
  catalog.ranks(q, it, rel, exclude_ids=ex, top_k=3)
  with jax.log_compiles():
    size = catalog._walk._cache_size()
    catalog.ranks(q + 1, it * 2, rel[::-1].copy(), exclude_ids=ex[::-1].copy(), top_k=3)
    assert catalog._walk._cache_size() == size


def test_metrics_reading_judgments_are_refused():
  q, it = np.ones((2, 2), np.float32), np.ones((5, 2), np.float32)
  for name in ("bpref", "infap", "judged@3", "Bpref"):
    with pytest.raises(ValueError, match="reads judged non-relevant items"):
      catalog.evaluate(q, it, [[0], [1]], [name])


# Issue 22, item 4: integer embeddings were multiplied and summed in their own dtype (int8 dot
# products wrapped around: exact [30000, 300, -30000, 15000] scored [48, 44, -48, -104]).


@pytest.mark.parametrize("qt, it_", [(np.int8, np.int8), (np.uint8, np.uint8), (np.int8, np.uint8),
                                     (np.int16, np.int16), (np.int32, np.int8)])
def test_integer_embeddings_rank_by_their_exact_dot_products(qt, it_):
  rng = np.random.default_rng(7)
  lo = lambda t: max(np.iinfo(t).min, -128)  # noqa: E731 - int16/int32 values kept small enough
  q = rng.integers(lo(qt), min(np.iinfo(qt).max, 127) + 1, (5, 4)).astype(qt)
  it = rng.integers(lo(it_), min(np.iinfo(it_).max, 127) + 1, (11, 4)).astype(it_)
  exact = q.astype(np.int64) @ it.astype(np.int64).T
  assert np.abs(exact).max() > 127  # the embeddings' own dtype would wrap
  rel = np.array([[0, 3], [1, -1], [2, 5], [4, 6], [10, 9]], np.int32)
  ex = np.array([[7], [-1], [1], [2], [-1]], np.int32)
  excluded = np.zeros(exact.shape, bool)
  rows, cols = np.nonzero(ex >= 0)
  excluded[rows, ex[rows, cols]] = True
  scores = exact.astype(np.int32)
  out = catalog.ranks(q, it, rel, exclude_ids=ex, top_k=3, item_block=4)
  assert_same_ranks(out.ranks, jaxrank.from_sparse(scores, rel, where=~excluded))
  np.testing.assert_array_equal(out.top_ids, jaxrank.top_k_ids(scores, 3, where=~excluded))
  np.testing.assert_array_equal(out.top_scores, np.take_along_axis(scores, out.top_ids, axis=1))
  assert out.top_scores.dtype == np.int32


def test_issue_example_int8_mrr():
  q = np.array([[100, 100, 100]], np.int8)
  it = np.array([[100, 100, 100], [1, 1, 1], [-100, -100, -100], [50, 50, 50]], np.int8)
  assert catalog.dot(jnp.asarray(q), jnp.asarray(it)).tolist() == [[30000, 300, -30000, 15000]]
  out = catalog.evaluate(q, it, [[0]], ["mrr"], top_k=2)
  assert float(out.metrics["mrr"][0]) == 1.0  # was 0.25
  assert out.top_ids.tolist() == [[0, 3]]


def test_integer_embeddings_that_could_wrap_are_refused():
  rel = [[0], [1]]
  big = np.full((2, 3), 2**20, np.int32)
  with pytest.raises(ValueError, match=r"dot products can reach 3\.29853e\+12, beyond int32"):
    catalog.evaluate(big, big, rel, ["mrr"])
  # traced embeddings whose dtypes do not bound the sums: refused, naming the way out
  small = np.ones((2, 3), np.int32)
  with pytest.raises(TypeError, match="under tracing .* cast them to a float dtype"):
    jax.jit(lambda u: catalog.evaluate(u, small, rel, ["mrr"]).metrics)(small)
  # dtypes that bound them (int8: 128 * 128 * d) are fine traced; small int32 values eagerly
  got = jax.jit(lambda u: catalog.evaluate(u, small.astype(np.int8), rel, ["mrr"]).metrics)(
      small.astype(np.int8))
  np.testing.assert_array_equal(got["mrr"], catalog.evaluate(small, small, rel, ["mrr"])
                                .metrics["mrr"])


# Issue 22, item 6: a score_fn of the wrong shape raised JAX-internal broadcasting errors.

WRONG_SHAPES = {
    "transposed": lambda a, b: (a @ b.T).T,
    "1-d": lambda a, b: (a @ b.T)[0],
    "scalar": lambda a, b: jnp.sum(a @ b.T),
    "one item more": lambda a, b: jnp.pad(a @ b.T, ((0, 0), (0, 1))),
}


@pytest.mark.parametrize("name", WRONG_SHAPES)
@pytest.mark.parametrize("users", [3, 5])  # 5 users x 5 items: a square tile
def test_score_fn_of_another_shape_is_named(name, users):
  q = np.ones((users, 2), np.float32)
  it = np.arange(10, dtype=np.float32).reshape(5, 2)
  rel = np.zeros((users, 1), np.int32)
  with pytest.raises(ValueError, match=r"score_fn must return scores of shape \[users, items\]"):
    catalog.evaluate(q, it, rel, ["mrr"], score_fn=WRONG_SHAPES[name])


def test_score_fn_of_another_kind_is_refused():
  q, it, rel = np.ones((3, 2), np.float32), np.ones((5, 2), np.float32), [[0], [1], [2]]
  for fn in (lambda a, b: (a @ b.T).astype(jnp.complex64), lambda a, b: a @ b.T > 0):
    with pytest.raises(TypeError, match="score_fn must return real scores of a float or integer "
                                        "dtype, got (complex64|bool)"):
      catalog.evaluate(q, it, rel, ["mrr"], score_fn=fn)
  with pytest.raises(TypeError, match=r"score_fn must return one array of scores \[users, "):
    catalog.evaluate(q, it, rel, ["mrr"], score_fn=lambda a, b: (a @ b.T, a))


@pytest.mark.parametrize("method, r", [("count", 3), ("count", catalog.FUSED_COUNT),
                                       ("count", catalog.FUSED_COUNT + 1),
                                       ("count", 2 * catalog.FUSED_COUNT + 5), ("histogram", 3),
                                       ("histogram", catalog.FUSED_COUNT + 1),
                                       ("auto", catalog.FUSED_COUNT + 1)])
@pytest.mark.parametrize("ties", ["average", "first"])
def test_each_count_form_equals_materialised(method, r, ties):
  # "count" takes one variadic reduction per tile for each group of FUSED_COUNT held-out items
  # per user (the last group shorter); every group count, and the histogram, give the
  # materialised ranks.
  q, it, rel, ex, _ = workload(5, users=6, items=80, r=r, e=5)
  scores, excluded = materialised(q, it, rel, ex, None)
  out = catalog.ranks(q, it, rel, exclude_ids=ex, ties=ties, user_block=4, item_block=24,
                      method=method, top_k=5)
  assert_same_ranks(out.ranks, jaxrank.from_sparse(scores, rel, where=~excluded, ties=ties))
  np.testing.assert_array_equal(out.top_ids, jaxrank.top_k_ids(scores, 5, where=~excluded))
