"""The worked examples of the metric definitions (hand-computed values)."""

import numpy as np
import pytest

import jaxrank


def scores_for_hits(hit_ranks, n):
  """Scores n..1 (rank 1 first) and binary labels with hits at the given 1-based ranks."""
  scores = np.arange(n, 0, -1, dtype=np.float32)
  labels = np.zeros(n, np.int32)
  labels[np.asarray(hit_ranks) - 1] = 1
  return scores, labels


@pytest.mark.parametrize("hits, want", [([1, 4, 5], 0.7), ([2, 3, 4], 23 / 36)])
def test_average_precision_three_relevant_of_five(hits, want):
  s, y = scores_for_hits(hits, 5)
  assert float(jaxrank.average_precision(s[None], y[None])[0]) == pytest.approx(want, abs=1e-6)


def test_two_feeds_map_mrr_ndcg():
  s1, y1 = scores_for_hits([2, 3], 3)
  s2, y2 = scores_for_hits([1, 2], 3)
  out = jaxrank.evaluate(np.stack([s1, s2]), np.stack([y1, y2]), ["map", "mrr", "ndcg"])
  np.testing.assert_allclose(out["map"], [(1 / 2 + 2 / 3) / 2, 1.0], atol=1e-6)
  assert round(float(out["map"][0]), 3) == 0.583
  np.testing.assert_allclose(out["mrr"], [0.5, 1.0], atol=1e-6)
  assert round(float(out["ndcg"][0]), 3) == 0.693
  np.testing.assert_allclose(out["ndcg"][1], 1.0, atol=1e-6)


def test_graded_ndcg():
  scores = np.array([[3.0, 2.0, 1.0], [3.0, 2.0, 1.0]], np.float32)
  grades = np.array([[3, 5, 1], [1, 5, 3]])  # in rank order; ideal 5, 3, 1
  got = np.asarray(jaxrank.ndcg(scores, grades))
  assert round(float(got[0]), 3) == 0.900
  assert round(float(got[1]), 3) == 0.765


def test_knowledge_graph_hits():
  # Two positives, each against four negatives: ranked 2nd and 1st.
  pos = np.array([0.7, 0.9], np.float32)
  negs = np.array([[0.8, 0.1, 0.2, 0.3], [0.5, 0.4, 0.3, 0.2]], np.float32)
  ranks = jaxrank.from_candidates(pos, negs)
  assert ranks.lo[:, 0].tolist() == [2, 1]
  assert float(jaxrank.mean(jaxrank.hit_rate(ranks, k=3))) == 1.0
  assert float(jaxrank.mean(jaxrank.hit_rate(ranks, k=1))) == 0.5


def test_rax_neginf_example():
  # Rax's test_treats_neginf_as_unranked_items: -inf items are unranked but the relevant one still
  # counts in R. In jaxrank that is the sparse form with where=False (dense where=False is padding).
  scores = np.array([[-np.inf, 5, 2, -np.inf, 1]], np.float32)
  ranks = jaxrank.from_sparse(scores, [[0, 2]], where=np.isfinite(scores))
  assert float(jaxrank.precision(ranks, k=3)[0]) == pytest.approx(1 / 3)
  assert float(jaxrank.recall(ranks, k=3)[0]) == pytest.approx(1 / 2)
  assert float(jaxrank.reciprocal_rank(ranks)[0]) == pytest.approx(1 / 2)


def test_evidently_goldens():
  # Users a, b, c; ranks 1-3; targets a = [1,0,0], b = [0,0,0], c = [0,0,1].
  scores = np.array([[1.25, 1.0, 0.3], [0.9, 0.8, 0.7], [1.0, 0.5, 0.3]], np.float32)
  labels = np.array([[1, 0, 0], [0, 0, 0], [0, 0, 1]])
  kw = dict(empty="skip", precision_denominator="min_k_n", reduce="mean")
  names = [f"{m}@{k}" for m in ("precision", "recall", "map", "mar", "hr") for k in (1, 2, 3)]
  out = {k: float(v) for k, v in jaxrank.evaluate(scores, labels, names, **kw).items()}
  want = {"precision": [0.5, 0.25, 1 / 3], "recall": [0.5, 0.5, 1.0], "map": [0.5, 0.5, 2 / 3],
          "mar": [0.5, 0.5, 1.0], "hr": [0.5, 0.5, 1.0]}
  for m, values in want.items():
    for k, v in zip((1, 2, 3), values):
      assert out[f"{m}@{k}"] == pytest.approx(v, abs=1e-6), f"{m}@{k}"
  # Evidently with no_feedback_users=True counts user b as zero.
  zero = jaxrank.evaluate(scores, labels, ["precision@3", "map@3"], empty="zero",
                          precision_denominator="min_k_n", reduce="mean")
  assert float(zero["precision@3"]) == pytest.approx(0.2222, abs=1e-4)
  assert float(zero["map@3"]) == pytest.approx(0.4444, abs=1e-4)


def test_constant_scorer_gets_no_credit_from_tie_breaking():
  # mteb#5092: a constant scorer must not get MRR 1.0 by index order under average ties.
  scores = np.zeros((1, 4), np.float32)
  labels = np.array([[1, 0, 0, 0]])
  assert float(jaxrank.reciprocal_rank(scores, labels)[0]) == pytest.approx(
      (1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)
  assert float(jaxrank.reciprocal_rank(scores, labels, ties="first")[0]) == 1.0
  assert float(jaxrank.reciprocal_rank(scores, labels, ties="pessimistic")[0]) == 0.25
