"""The four input forms build the same rank core; Ranks passes through metrics and evaluate."""

import jax
import numpy as np
import pytest

import jaxrank

NAMES = ["ndcg@5", "ndcg", "map", "map@3", "mrr", "p@5", "r@5", "hr@1", "rprec", "mar",
         "mean_rank", "dcg@4", "fbeta@3"]


def dense_and_sparse(seed, lists=12, n=40, r=6):
  rng = np.random.default_rng(seed)
  scores = (rng.integers(0, 8, (lists, n)) / 2).astype(np.float32)
  ids = np.stack([rng.permutation(n)[:r] for _ in range(lists)])
  ids[rng.random(ids.shape) < 0.3] = -1
  ids[0] = -1
  grades = rng.integers(1, 4, ids.shape)
  labels = np.zeros((lists, n), np.int64)
  for i in range(lists):
    keep = ids[i] >= 0
    labels[i, ids[i][keep]] = grades[i][keep]
  return scores, labels, ids, grades


@pytest.mark.parametrize("ties", ["average", "first", "optimistic", "pessimistic"])
@pytest.mark.parametrize("method", ["count", "sort"])
def test_sparse_equals_dense(ties, method):
  scores, labels, ids, grades = dense_and_sparse(0)
  want = jaxrank.evaluate(scores, labels, NAMES, ties=ties)
  build = "first" if ties == "first" else "average"
  ranks = jaxrank.from_sparse(scores, ids, grades, ties=build, method=method)
  got = jaxrank.evaluate(ranks, metrics=NAMES, ties=ties)
  for name in NAMES:
    np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("method", ["count", "sort"])
def test_dense_methods_and_slot_counts_agree(method):
  scores, labels, _, _ = dense_and_sparse(1)
  want = jaxrank.evaluate(scores, labels, NAMES)
  for max_relevant in (None, 6, 40):
    got = jaxrank.evaluate(scores, labels, NAMES, method=method, max_relevant=max_relevant)
    for name in NAMES:
      np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-7, err_msg=name)


def test_ranked_ids_equals_dense_without_ties():
  rng = np.random.default_rng(2)
  lists, n = 10, 25
  scores = np.stack([rng.permutation(n) for _ in range(lists)]).astype(np.float32)
  labels = rng.integers(0, 3, (lists, n)) * (rng.random((lists, n)) < 0.3)
  ranked = np.argsort(-scores, axis=1)
  ids = np.where(labels > 0, np.arange(n), -1)
  got = jaxrank.evaluate(jaxrank.from_ranked_ids(ranked, ids, labels), metrics=NAMES)
  want = jaxrank.evaluate(scores, labels, NAMES)
  for name in NAMES:
    np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-7, err_msg=name)


def test_ranked_ids_padding_and_missing():
  ranks = jaxrank.from_ranked_ids([[4, -1, 2, 9, -1]], [[9, 7, -1]])
  assert ranks.lo.tolist() == [[3, 6, 6]] and int(ranks.num_items[0]) == 3
  assert float(jaxrank.recall(ranks)[0]) == 0.5
  assert float(jaxrank.mean_rank(ranks)[0]) == (3 + 4) / 2  # missing item censored at n + 1


def test_candidates_equal_dense_and_filtered_setting():
  rng = np.random.default_rng(3)
  pos = rng.integers(0, 5, 30).astype(np.float32)
  cand = rng.integers(0, 5, (30, 9)).astype(np.float32)
  mask = rng.random((30, 9)) < 0.7
  ranks = jaxrank.from_candidates(pos, cand, mask)
  scores = np.concatenate([pos[:, None], cand], 1)
  labels = np.zeros(scores.shape, np.int32)
  labels[:, 0] = 1
  where = np.concatenate([np.ones((30, 1), bool), mask], 1)
  for ties in ("average", "optimistic", "pessimistic"):
    got = jaxrank.evaluate(ranks, metrics=NAMES, ties=ties)
    want = jaxrank.evaluate(scores, labels, NAMES, where=where, ties=ties)
    for name in NAMES:
      np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=f"{ties} {name}")
  first = jaxrank.from_candidates(pos, cand, mask, ties="first")
  np.testing.assert_array_equal(first.lo, ranks.lo)  # the positive goes before tied candidates


def test_ranks_is_a_pytree_that_jits_and_vmaps():
  scores, labels, ids, grades = dense_and_sparse(4)
  ranks = jaxrank.from_sparse(scores, ids, grades)
  jitted = jax.jit(lambda r: jaxrank.ndcg(r, k=5))(ranks)
  np.testing.assert_allclose(jitted, jaxrank.ndcg(ranks, k=5), rtol=1e-6)
  vmapped = jax.vmap(lambda s, i, g: jaxrank.ndcg(jaxrank.from_sparse(s, i, g), k=5))(
      scores, ids, grades)
  np.testing.assert_allclose(vmapped, jaxrank.ndcg(ranks, k=5), rtol=1e-6)


def test_traced_overflow_gives_nan_not_a_wrong_number():
  scores = np.array([[3.0, 2.0, 1.0], [3.0, 2.0, 1.0]], np.float32)
  labels = np.array([[1, 1, 1], [1, 0, 0]])
  out = jax.jit(lambda s, y: jaxrank.ndcg(s, y, max_relevant=1))(scores, labels)
  assert np.isnan(out[0]) and out[1] == 1.0


def test_empty_policies_and_mean():
  scores = np.array([[3.0, 2.0], [1.0, 0.0], [0.0, 0.0]], np.float32)
  labels = np.array([[0, 1], [0, 0], [0, 0]])
  where = np.array([[True, True], [True, True], [False, False]])  # last list fully padded
  for empty, want_mean in (("zero", 0.5 / 3), ("skip", 0.5)):
    per_list = jaxrank.reciprocal_rank(scores, labels, where=where, empty=empty)
    assert float(jaxrank.mean(per_list, empty=empty)) == pytest.approx(want_mean)
  per_list = jaxrank.reciprocal_rank(scores, labels, where=where, empty="nan")
  assert np.isnan(per_list[1:]).all() and np.isnan(jaxrank.mean(per_list, empty="nan"))
  out = jaxrank.evaluate(scores, labels, ["mrr"], where=where, empty="skip", reduce="mean")
  assert float(out["mrr"]) == pytest.approx(0.5)


def test_nan_scores_rank_last_and_never_make_nan():
  scores = np.array([[np.nan, 1.0, np.nan, -np.inf]], np.float32)
  labels = np.array([[1, 0, 1, 0]])
  r = jaxrank.from_dense(scores, labels)
  assert r.lo.tolist() == [[3, 3]] and r.hi.tolist() == [[4, 4]]
  out = jaxrank.evaluate(scores, labels, ["ndcg", "map", "mrr", "p@2"])
  assert all(np.isfinite(v).all() for v in out.values())


def test_lists_without_items():
  """A last axis of size 0 (no candidates) is an empty list in every form, not a crash."""
  from jaxrank import linkpred

  empty = np.zeros((2, 0), np.float32)
  names = ["map", "mrr", "precision@3", "ndcg@3", "ndcg", "mean_rank", "r_precision",
           "average_recall", "fbeta", "hit_rate@2", "dcg", "recall@2"]
  for policy, want in (("zero", 0.0), ("nan", np.nan)):
    for ties in ("average", "optimistic", "pessimistic", "first"):
      out = jaxrank.evaluate(empty, empty, names, empty=policy, ties=ties)
      for name in names:
        np.testing.assert_array_equal(np.asarray(out[name]), [want, want], err_msg=name)
  ranks = jaxrank.from_ranked_ids(np.zeros((2, 0), int), np.array([[3], [-1]]))
  np.testing.assert_array_equal(np.asarray(jaxrank.recall(ranks, k=2)), [0.0, 0.0])
  for op in ("sigmoid", "neuralsort", "softsort", "fast_l2", "fast_kl"):
    assert jaxrank.soft_ranks(empty, operator=op).shape == (2, 0)
    np.testing.assert_array_equal(np.asarray(jaxrank.soft_ndcg(empty, empty, operator=op)), 0)
    grad = jax.grad(lambda s, op=op: jaxrank.soft_ndcg_loss(s, empty, operator=op))(empty)
    assert grad.shape == (2, 0)
  assert jaxrank.fast_soft_sort(empty).shape == (2, 0)
  assert float(linkpred.reciprocal_rank([0.5], np.zeros((1, 0)))[0]) == 1.0  # no competitor


def test_one_slot_closed_form_equals_the_average_over_tie_orders():
  """With one relevant slot per list, hit rate and RR use a closed form (no loop over the tie
  group); it must equal the mean over every position the relevant item can take in its group."""
  rng = np.random.default_rng(5)
  scores = np.round(rng.random((50, 30)), 1).astype(np.float32)  # many ties
  labels = np.zeros((50, 30), np.int32)
  labels[np.arange(50), rng.integers(0, 30, 50)] = 1
  labels[7] = 0  # a list without a relevant item
  r = jaxrank.from_dense(scores, labels)
  assert r.lo.shape[-1] == 1
  for k in (None, 1, 3, 10):
    rr = np.asarray(jaxrank.reciprocal_rank(r, k=k))
    hr = np.asarray(jaxrank.hit_rate(r, k=k))
    for i in range(50):
      if labels[i].sum() == 0:
        assert rr[i] == 0 and hr[i] == 0
        continue
      j = int(np.argmax(labels[i]))
      lo = 1 + int((scores[i] > scores[i, j]).sum())
      hi = int((scores[i] >= scores[i, j]).sum())
      cap = 30 if k is None else k
      ranks = np.arange(lo, hi + 1)
      np.testing.assert_allclose(rr[i], np.mean(np.where(ranks <= cap, 1 / ranks, 0)), rtol=1e-6)
      np.testing.assert_allclose(hr[i], np.mean(ranks <= cap), rtol=1e-6)


METRIC_FUNCTIONS = ["precision", "recall", "fbeta", "hit_rate", "reciprocal_rank",
                    "average_precision", "average_recall", "dcg", "ndcg", "r_precision",
                    "mean_rank"]


@pytest.mark.parametrize("ties", ["average", "first", "pessimistic"])
def test_a_ranks_enters_every_door_positionally(ties):
  # Issue 10, item 9: evaluate(ranks, ["map"]) said "labels must be None when a Ranks is
  # passed". The metric names may come second; every metric function takes a Ranks alone.
  scores, labels, ids, grades = dense_and_sparse(1, lists=4, n=10, r=3)
  ranks = jaxrank.from_sparse(scores, ids, grades, ties="first" if ties == "first" else "average")
  want = jaxrank.evaluate(scores, labels, NAMES, ties=ties)
  for got in (jaxrank.evaluate(ranks, NAMES, ties=ties),
              jaxrank.evaluate(ranks, tuple(NAMES), ties=ties),
              jaxrank.evaluate(ranks, metrics=NAMES, ties=ties)):
    assert list(got) == NAMES
    for name in NAMES:
      np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-7, err_msg=name)
  one = jaxrank.evaluate(ranks, "ndcg@5", ties=ties, reduce="mean")
  np.testing.assert_allclose(one["ndcg@5"], np.mean(want["ndcg@5"]), rtol=1e-6)
  for name in METRIC_FUNCTIONS:
    f = getattr(jaxrank, name)
    np.testing.assert_allclose(f(ranks, k=3, ties=ties), f(scores, labels, k=3, ties=ties),
                               rtol=1e-6, atol=1e-7, err_msg=name)


def test_a_link_prediction_ranks_takes_the_metric_names_second():
  from jaxrank import linkpred
  pos, cand = [0.5, 0.2], [[0.9, 0.5, 0.1], [0.3, 0.1, 0.0]]
  ranks = linkpred.ranks(pos, cand)
  want = linkpred.evaluate(pos, cand, ["mrr", "hits@1", "mr"])
  for got in (linkpred.evaluate(ranks, ["mrr", "hits@1", "mr"]),
              linkpred.evaluate(ranks, metrics=["mrr", "hits@1", "mr"])):
    assert {k: float(v) for k, v in got.items()} == {k: float(v) for k, v in want.items()}
  assert float(linkpred.evaluate(ranks, "mrr")["mrr"]) == float(want["mrr"])
