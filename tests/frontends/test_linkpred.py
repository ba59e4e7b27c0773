"""jaxrank.linkpred: hand-computed cases, random/constant scorer expectations, PyKEEN's formulas,
OGB's and NCF's protocols, filtering, head/tail reporting, jit and errors."""

import heapq
import math

import jax
import numpy as np
import pytest

import jaxrank
from jaxrank import linkpred

TIES = ["realistic", "average", "optimistic", "pessimistic"]


def harmonic(n):
  return sum(1.0 / i for i in range(1, n + 1))


# ------------------------------------------------------------------------- hand-computed cases
def test_tied_positive_each_policy():
  # Positive 0.5 against [0.9, 0.5, 0.5, 0.1]: strictly above 1, tied 2 -> ranks 2..4.
  pos, cand = [0.5], [[0.9, 0.5, 0.5, 0.1]]
  want_rank = {"realistic": 3.0, "average": 3.0, "optimistic": 2.0, "pessimistic": 4.0}
  want_rr = {"realistic": 1 / 3, "average": (1 / 2 + 1 / 3 + 1 / 4) / 3, "optimistic": 0.5,
             "pessimistic": 0.25}
  want_h2 = {"realistic": 0.0, "average": 1 / 3, "optimistic": 1.0, "pessimistic": 0.0}
  want_h3 = {"realistic": 1.0, "average": 2 / 3, "optimistic": 1.0, "pessimistic": 0.0}
  for t in TIES:
    assert float(linkpred.mean_rank(pos, cand, ties=t)[0]) == want_rank[t]
    assert float(linkpred.reciprocal_rank(pos, cand, ties=t)[0]) == pytest.approx(want_rr[t])
    assert float(linkpred.hits_at_k(pos, cand, 2, ties=t)[0]) == pytest.approx(want_h2[t])
    assert float(linkpred.hits_at_k(pos, cand, 3, ties=t)[0]) == pytest.approx(want_h3[t])


def test_realistic_hits_uses_fractional_rank():
  # Ranks 1..2 -> realistic 1.5: not a hit at k = 1 (PyKEEN, OGB), a half hit under "average".
  assert float(linkpred.hits_at_k([1.0], [[1.0, 0.0]], 1)[0]) == 0.0
  assert float(linkpred.hits_at_k([1.0], [[1.0, 0.0]], 1, ties="average")[0]) == 0.5


@pytest.mark.parametrize("c", [2, 10, 100])
def test_constant_scorer(c):
  pos = np.zeros(3, np.float32)
  cand = np.zeros((3, c - 1), np.float32)
  rr = {t: float(linkpred.reciprocal_rank(pos, cand, ties=t)[0]) for t in TIES}
  assert rr["realistic"] == pytest.approx(1 / ((c + 1) / 2), rel=1e-6)  # 1/50.5 for C = 100
  assert rr["optimistic"] == 1.0 and rr["pessimistic"] == pytest.approx(1 / c)
  # Averaged over tie orders a constant scorer is exactly a random one.
  assert rr["average"] == pytest.approx(harmonic(c) / c, rel=1e-6)
  assert float(linkpred.hits_at_k(pos, cand, 10, ties="realistic")[0]) == float((c + 1) / 2 <= 10)


def test_constant_scorer_average_is_random_expectation_1_plus_99():
  pos, cand = np.zeros(4, np.float32), np.zeros((4, 99), np.float32)
  out = linkpred.evaluate(pos, cand, ["hits@10", "ndcg@10", "mrr", "mr"], ties="average")
  assert float(out["hits@10"]) == pytest.approx(0.1, rel=1e-6)
  assert float(out["ndcg@10"]) == pytest.approx(0.0454356, abs=1e-7)
  assert float(out["mrr"]) == pytest.approx(0.0518738, abs=1e-7)
  assert float(out["mr"]) == 50.5


def test_random_scorer_expectations_1_plus_99():
  # 40,000 queries of uniform scores: means within 4 standard errors of the closed forms.
  rng = np.random.default_rng(0)
  n = 40_000
  pos = rng.random(n, dtype=np.float32)
  cand = rng.random((n, 99), dtype=np.float32)
  out = linkpred.evaluate(pos, cand, ["hits@10", "ndcg@10", "mrr"], reduce=None)
  ranks = np.arange(1, 101)
  for name, f in [("hits@10", (ranks <= 10).astype(float)),
                  ("ndcg@10", np.where(ranks <= 10, 1 / np.log2(ranks + 1), 0.0)),
                  ("mrr", 1.0 / ranks)]:
    expected, se = f.mean(), f.std() / math.sqrt(n)
    assert abs(float(np.mean(out[name])) - expected) < 4 * se, name
  assert f.mean() == pytest.approx(0.0518738, abs=1e-7)
  ncf = linkpred.ncf_leave_one_out(pos, cand)
  assert abs(float(np.mean(ncf["hr"])) - 0.1) < 4 * 0.3 / math.sqrt(n)
  assert abs(float(np.mean(ncf["ndcg"])) - 0.0454356) < 0.003


def test_expectations_closed_forms():
  c = np.array([1, 2, 5, 100, 10_000])
  np.testing.assert_allclose(linkpred.expected_mean_rank(c), (c + 1) / 2)
  np.testing.assert_allclose(linkpred.expected_hits_at_k(c, 10), np.minimum(10 / c, 1.0))
  np.testing.assert_allclose(linkpred.expected_reciprocal_rank(c),
                             [harmonic(int(x)) / x for x in c], rtol=2e-6)


# ------------------------------------------------------------ PyKEEN's formulas (transcription)
def pykeen_ranks_numpy(pos, cand, mask):
  """pykeen.evaluation.ranks.Ranks.from_scores: filtered scores are NaN, C = #finite scores."""
  all_scores = np.where(mask, cand, np.nan)
  all_scores = np.concatenate([all_scores, pos[:, None]], axis=1)  # the true score is included
  with np.errstate(invalid="ignore"):
    optimistic = (all_scores > pos[:, None]).sum(1) + 1
    pessimistic = (all_scores >= pos[:, None]).sum(1)
  realistic = (optimistic + pessimistic) * 0.5
  return optimistic, realistic, pessimistic, np.isfinite(all_scores).sum(1)


def pykeen_metrics_numpy(ranks, c, k):
  """pykeen.metrics.ranking: MR, MRR, Hits@k and the adjusted AMR, AMRI, Hits@k, MRR."""
  mr, mrr, hits = ranks.mean(), (1 / ranks).mean(), (ranks <= k).mean()
  e_mr = (0.5 * (c + 1)).mean()
  e_mrr = np.mean([harmonic(int(x)) / x for x in c])
  e_hits = np.minimum(k / c, 1.0).mean()
  return {"mr": mr, "mrr": mrr, "hits": hits, "amr": mr / e_mr,
          "amri": (mr - e_mr) / (1 - e_mr), "ahits": (hits - e_hits) / (1 - e_hits),
          "amrr": (mrr - e_mrr) / (1 - e_mrr)}


def random_queries(seed, n=300, c=40, levels=8):
  rng = np.random.default_rng(seed)
  pos = rng.integers(0, levels, n).astype(np.float32)
  cand = rng.integers(0, levels, (n, c)).astype(np.float32)
  mask = rng.random((n, c)) < 0.8  # the filtered setting: C varies per query
  return pos, cand, mask


def jaxrank_pykeen_metrics(pos, cand, mask, k, ties):
  r = linkpred.ranks(pos, cand, candidate_mask=mask)
  return {"mr": float(np.mean(linkpred.mean_rank(r, ties=ties))),
          "mrr": float(np.mean(linkpred.reciprocal_rank(r, ties=ties))),
          "hits": float(np.mean(linkpred.hits_at_k(r, k=k, ties=ties))),
          "amr": float(linkpred.adjusted_mean_rank(r, ties=ties)),
          "amri": float(linkpred.adjusted_mean_rank_index(r, ties=ties)),
          "ahits": float(linkpred.adjusted_hits_at_k(r, k=k, ties=ties)),
          "amrr": float(linkpred.adjusted_reciprocal_rank(r, ties=ties))}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("k", [1, 3, 10])
def test_against_pykeen_formulas_transcribed(seed, k):
  # Always runs: PyKEEN pulls torch, so it is not a test dependency; this NumPy transcription of
  # its rank and metric code (REFERENCES.md section 4) is checked against PyKEEN itself below.
  pos, cand, mask = random_queries(seed)
  opt, real, pess, c = pykeen_ranks_numpy(pos, cand, mask)
  np.testing.assert_array_equal(linkpred.num_candidates(pos, cand, candidate_mask=mask), c)
  for ties, ranks in [("optimistic", opt), ("realistic", real), ("pessimistic", pess)]:
    want = pykeen_metrics_numpy(ranks.astype(np.float64), c, k)
    got = jaxrank_pykeen_metrics(pos, cand, mask, k, ties)
    for name in want:
      assert got[name] == pytest.approx(want[name], rel=1e-5, abs=1e-6), (ties, name)


@pytest.mark.parametrize("k", [1, 10])
def test_num_options_finite_is_pykeens_rule_with_infinite_scores(k):
  # Issue 10, item 15: PyKEEN counts only finite scores in C (its filtered scores are NaN/inf);
  # jaxrank's default counts every unmasked candidate. Both rules, with +-inf positives and
  # candidates in the lists.
  pos, cand, mask = random_queries(3, n=200, c=30)
  rng = np.random.default_rng(4)
  cand[rng.random(cand.shape) < 0.1] = np.inf
  cand[rng.random(cand.shape) < 0.1] = -np.inf
  pos[rng.random(pos.shape) < 0.05] = np.inf
  pos[rng.random(pos.shape) < 0.05] = -np.inf
  opt, real, pess, finite = pykeen_ranks_numpy(pos, cand, mask)
  everything = 1 + mask.sum(1)
  for rule, c in (("finite", finite), ("all", everything)):
    np.testing.assert_array_equal(
        linkpred.num_candidates(pos, cand, candidate_mask=mask, num_options=rule), c)
    want = pykeen_metrics_numpy(real.astype(np.float64), c, k)
    kw = dict(candidate_mask=mask, num_options=rule)
    got = {"amr": linkpred.adjusted_mean_rank(pos, cand, **kw),
           "amri": linkpred.adjusted_mean_rank_index(pos, cand, **kw),
           "ahits": linkpred.adjusted_hits_at_k(pos, cand, k=k, **kw),
           "amrr": linkpred.adjusted_reciprocal_rank(pos, cand, **kw)}
    for name, value in got.items():
      assert float(value) == pytest.approx(want[name], rel=1e-5, abs=1e-6), (rule, name)
  assert not np.array_equal(finite, everything)  # the rules differ on these lists
  # the default is "all", and a prebuilt Ranks serves it
  r = linkpred.ranks(pos, cand, candidate_mask=mask)
  assert float(linkpred.adjusted_mean_rank(r)) == float(
      linkpred.adjusted_mean_rank(pos, cand, candidate_mask=mask, num_options="all"))


def test_against_pykeen_itself():
  torch = pytest.importorskip("torch", reason="PyKEEN needs torch: pip install -e '.[reference]'")
  pytest.importorskip("pykeen", reason="PyKEEN is optional (it pulls torch): pip install -e '.[reference]'")
  from pykeen.evaluation.ranks import Ranks as PyKeenRanks
  from pykeen.metrics import ranking as pm

  pos, cand, mask = random_queries(7)
  all_scores = np.concatenate([np.where(mask, cand, np.nan), pos[:, None]], axis=1)
  pr = PyKeenRanks.from_scores(torch.as_tensor(pos[:, None]), torch.as_tensor(all_scores))
  c = pr.number_of_options.numpy()
  metrics = {"mr": pm.ArithmeticMeanRank(), "mrr": pm.InverseHarmonicMeanRank(),
             "hits": pm.HitsAtK(k=10), "amr": pm.AdjustedArithmeticMeanRank(),
             "amri": pm.AdjustedArithmeticMeanRankIndex(), "ahits": pm.AdjustedHitsAtK(k=10),
             "amrr": pm.AdjustedInverseHarmonicMeanRank()}
  for ties, ranks in [("optimistic", pr.optimistic), ("realistic", pr.realistic),
                      ("pessimistic", pr.pessimistic)]:
    got = jaxrank_pykeen_metrics(pos, cand, mask, 10, ties)
    for name, metric in metrics.items():
      if ties != "realistic" and name.startswith("a"):
        continue  # PyKEEN defines the adjusted metrics on realistic ranks only
      want = metric(ranks=ranks.numpy().astype(np.float64), num_candidates=c)
      assert got[name] == pytest.approx(want, rel=1e-5, abs=1e-6), (ties, name)


def test_average_matches_rank_core():
  pos, cand, mask = random_queries(3, n=100, c=12, levels=3)
  r = jaxrank.from_candidates(pos, cand, mask)
  np.testing.assert_allclose(linkpred.reciprocal_rank(r, ties="average"),
                             jaxrank.reciprocal_rank(r, ties="average"), rtol=1e-5)
  np.testing.assert_allclose(linkpred.hits_at_k(r, k=4, ties="average"),
                             jaxrank.hit_rate(r, k=4, ties="average"), rtol=1e-5, atol=1e-7)
  for t in ["optimistic", "pessimistic"]:
    np.testing.assert_allclose(linkpred.reciprocal_rank(r, ties=t),
                               jaxrank.reciprocal_rank(r, ties=t), rtol=1e-6)


def test_average_bruteforce_over_tie_orders():
  rng = np.random.default_rng(5)
  pos = rng.integers(0, 3, 50).astype(np.float32)
  cand = rng.integers(0, 3, (50, 6)).astype(np.float32)
  got_rr = np.asarray(linkpred.reciprocal_rank(pos, cand, ties="average"))
  got_nd = np.asarray(linkpred.ndcg_at_k(pos, cand, 3, ties="average"))
  for i in range(50):
    lo = 1 + int((cand[i] > pos[i]).sum())
    hi = 1 + int((cand[i] >= pos[i]).sum())
    places = np.arange(lo, hi + 1)
    assert got_rr[i] == pytest.approx(np.mean(1 / places), rel=1e-6)
    assert got_nd[i] == pytest.approx(np.mean(np.where(places <= 3, 1 / np.log2(places + 1), 0)),
                                      rel=1e-6, abs=1e-7)


# ------------------------------------------------------------------------------- OGB and NCF
def ogb_eval_hits_numpy(pos, neg, k):
  """ogb/linkproppred/evaluate.py _eval_hits (shared negatives, strict >)."""
  if len(neg) < k:
    return 1.0
  kth = np.sort(neg)[::-1][k - 1]
  return float(np.sum(pos > kth)) / len(pos)


def ogb_eval_mrr_numpy(pos, neg):
  """ogb/linkproppred/evaluate.py _eval_mrr (>= 1.3.4): realistic ranks."""
  optimistic = (neg >= pos[:, None]).sum(1)
  pessimistic = (neg > pos[:, None]).sum(1)
  rank = 0.5 * (optimistic + pessimistic) + 1
  return {"hits@1": (rank <= 1).astype(float), "hits@3": (rank <= 3).astype(float),
          "hits@10": (rank <= 10).astype(float), "mrr_list": 1.0 / rank}


@pytest.mark.parametrize("k", [1, 5, 20, 60])
def test_ogb_hits(k):
  rng = np.random.default_rng(k)
  pos = (rng.integers(0, 30, 200) / 3).astype(np.float32)
  neg = (rng.integers(0, 30, 50) / 3).astype(np.float32)
  assert float(linkpred.ogb_hits_at_k(pos, neg, k)) == pytest.approx(
      ogb_eval_hits_numpy(pos, neg, k), abs=1e-7)


def test_ogb_hits_ties_lose():
  assert float(linkpred.ogb_hits_at_k([0.5, 0.6], [0.5, 0.1], k=1)) == 0.5


def test_ogb_mrr():
  rng = np.random.default_rng(1)
  pos = rng.integers(0, 5, 300).astype(np.float32)
  neg = rng.integers(0, 5, (300, 20)).astype(np.float32)
  got, want = linkpred.ogb_mrr(pos, neg), ogb_eval_mrr_numpy(pos, neg)
  for name in want:
    np.testing.assert_allclose(got[name], want[name], rtol=1e-6)


def ncf_numpy(pos, neg, k):
  """NCF evaluate.py: negatives go into the dict before the positive; heapq.nlargest."""
  hr, nd = [], []
  for p, ns in zip(pos, neg):
    scores = {i: float(s) for i, s in enumerate(ns)}
    scores[len(ns)] = float(p)
    top = heapq.nlargest(k, scores, key=scores.get)
    hit = len(ns) in top
    hr.append(float(hit))
    nd.append(math.log(2) / math.log(top.index(len(ns)) + 2) if hit else 0.0)
  return np.array(hr), np.array(nd)


def test_ncf_leave_one_out_matches_heapq():
  rng = np.random.default_rng(2)
  pos = rng.integers(0, 20, 400).astype(np.float32)
  neg = rng.integers(0, 20, (400, 99)).astype(np.float32)
  got = linkpred.ncf_leave_one_out(pos, neg, k=10)
  hr, nd = ncf_numpy(pos, neg, 10)
  np.testing.assert_array_equal(got["hr"], hr)
  np.testing.assert_allclose(got["ndcg"], nd, rtol=1e-6)


# ------------------------------------------------------------------- filtering and triples
def test_filter_mask():
  m = linkpred.filter_mask(5, [0, 3], [[2, 4, -1], [-1, -1, -1]])
  assert m.tolist() == [[False, True, False, True, False], [True, True, True, False, True]]


def test_filtered_mask_is_the_filter_nan_ranks_last():
  # A filtered candidate scoring above the positive no longer counts; a NaN candidate does count.
  pos, cand = [0.5], [[0.9, 0.7, 0.1]]
  assert float(linkpred.mean_rank(pos, cand, candidate_mask=[[False, True, True]])[0]) == 2.0
  assert float(linkpred.mean_rank(pos, [[np.nan, 0.7, 0.1]])[0]) == 2.0
  assert int(linkpred.num_candidates(pos, [[np.nan, 0.7, 0.1]])[0]) == 4


def test_evaluate_triples_head_tail_both():
  rng = np.random.default_rng(4)
  n, e = 30, 12
  head = rng.integers(0, 4, (n, e)).astype(np.float32)
  tail = rng.integers(0, 4, (n, e)).astype(np.float32)
  triples = np.stack([rng.integers(0, e, n), np.zeros(n, int), rng.integers(0, e, n)], 1)
  known_h = rng.integers(-1, e, (n, 3))
  known_t = rng.integers(-1, e, (n, 3))
  out = linkpred.evaluate_triples(head, tail, triples, known_heads=known_h, known_tails=known_t,
                                  metrics=["mrr", "hits@3", "mr"])

  def side(scores, true, known):
    rr, h3, mr = [], [], []
    for i in range(n):
      keep = [j for j in range(e) if j != true[i] and j not in set(known[i])]
      s, c = scores[i, true[i]], scores[i, keep]
      rank = 1 + 0.5 * ((c > s).sum() + (c >= s).sum())
      rr.append(1 / rank), h3.append(rank <= 3), mr.append(rank)
    return np.array(rr), np.array(h3, float), np.array(mr)

  h, t = side(head, triples[:, 0], known_h), side(tail, triples[:, 2], known_t)
  for i, name in enumerate(["mrr", "hits@3", "mr"]):
    assert float(out["head"][name]) == pytest.approx(h[i].mean(), rel=1e-6)
    assert float(out["tail"][name]) == pytest.approx(t[i].mean(), rel=1e-6)
    assert float(out["both"][name]) == pytest.approx(np.concatenate([h[i], t[i]]).mean(),
                                                     rel=1e-6)


# ----------------------------------------------------------------------- jit, vmap, errors
def test_jit_vmap_and_no_recompilation():
  pos, cand, mask = random_queries(9, n=16, c=10)
  f = jax.jit(lambda p, c, m: linkpred.evaluate(p, c, ["mrr", "hits@3"], candidate_mask=m,
                                                reduce=None))
  got = f(pos, cand, mask)
  want = linkpred.evaluate(pos, cand, ["mrr", "hits@3"], candidate_mask=mask, reduce=None)
  for name in want:
    np.testing.assert_allclose(got[name], want[name], rtol=1e-6)
  vm = jax.vmap(lambda p, c: linkpred.reciprocal_rank(p, c, ties="average"))(
      pos.reshape(4, 4), cand.reshape(4, 4, 10))
  np.testing.assert_allclose(vm.reshape(-1), linkpred.reciprocal_rank(pos, cand, ties="average"),
                             rtol=1e-6)
  linkpred.hits_at_k(pos, cand, 3)
  before = linkpred._compute._cache_size()
  linkpred.hits_at_k(pos + 1, cand, 3)
  assert linkpred._compute._cache_size() == before


def test_errors():
  with pytest.raises(ValueError, match="ties must be one of"):
    linkpred.reciprocal_rank([0.5], [[0.1]], ties="first")
  with pytest.raises(ValueError, match="candidate_scores must have shape"):
    linkpred.reciprocal_rank([0.5, 0.2], [[0.1]])
  with pytest.raises(ValueError, match="needs a positive int k"):
    linkpred.hits_at_k([0.5], [[0.1]], None)
  with pytest.raises(ValueError, match="unknown link-prediction metric"):
    linkpred.evaluate([0.5], [[0.1]], ["map"])
  with pytest.raises(ValueError, match="needs a positive cutoff"):
    linkpred.evaluate([0.5], [[0.1]], ["hits"])
  with pytest.raises(ValueError, match="1-D"):
    linkpred.ogb_hits_at_k([[0.5]], [0.1], 1)
  with pytest.raises(TypeError, match="candidate_mask must have a bool dtype"):
    linkpred.reciprocal_rank([0.5], [[0.1]], candidate_mask=[[1]])


def test_evaluate_triples_rejects_ids_out_of_range():
  # -1 is no padding for triples: it used to index the last entity (head mrr 0.4 from entity 2).
  s = np.array([[0.1, 0.9, 0.5]])
  with pytest.raises(ValueError, match=r"triples\[:, 0\] \(head\) must be an entity id in "
                                       r"\[0, 3\) \(head_scores.shape\[1\]\), got -1"):
    linkpred.evaluate_triples(s, s, [[-1, 0, 1]], metrics=["mrr", "mr"])
  with pytest.raises(ValueError, match=r"triples\[:, 2\] \(tail\) .*got 3 at index \(1,\)"):
    linkpred.evaluate_triples(np.vstack([s, s]), np.vstack([s, s]), [[0, 0, 1], [1, 0, 3]])
  with pytest.raises(ValueError, match=r"known_tails must be -1 \(padding\) or in \[0, 3\) "
                                       r"\(tail_scores.shape\[1\]\), got 7"):
    linkpred.evaluate_triples(s, s, [[0, 0, 1]], known_tails=[[7]])
  with pytest.raises(ValueError, match=r"known_heads must be -1 \(padding\).*got -5"):
    linkpred.evaluate_triples(s, s, [[0, 0, 1]], known_heads=[[1, -5]])


def test_filter_mask_rejects_bad_ids_and_entity_counts():
  with pytest.raises(ValueError, match=r"known_ids must be -1 \(padding\) or in \[0, 3\) "
                                       r"\(num_entities\), got 7 at index \(0, 1\)"):
    linkpred.filter_mask(3, [0], [[1, 7]])
  with pytest.raises(ValueError, match=r"known_ids .*got -5"):
    linkpred.filter_mask(3, [0], [[-5]])
  with pytest.raises(ValueError, match=r"true_ids must be an entity id in \[0, 3\).*got 3"):
    linkpred.filter_mask(3, [3], [[-1]])
  with pytest.raises(ValueError, match="num_entities must be a positive int, got 0"):
    linkpred.filter_mask(0, [0], [[-1]])
  with pytest.raises(ValueError, match="num_entities must be a positive int, got -2"):
    linkpred.filter_mask(-2, [0], [[-1]])
  with pytest.raises(TypeError, match="num_entities must be a positive int, got 2.5"):
    linkpred.filter_mask(2.5, [0], [[-1]])
  # Repeated known ids and -1 padding stay valid.
  assert linkpred.filter_mask(3, [0], [[2, 2, -1]]).tolist() == [[False, True, False]]


def test_ogb_hits_at_k_needs_a_positive_int_k():
  with pytest.raises(ValueError, match="ogb_hits_at_k needs a positive int k, got None"):
    linkpred.ogb_hits_at_k([0.5], [0.1], None)
  with pytest.raises(ValueError, match="k must be a positive int"):
    linkpred.ogb_hits_at_k([0.5], [0.1], 0)
  with pytest.raises(ValueError, match="expected_hits_at_k needs a positive int k, got None"):
    linkpred.expected_hits_at_k([5], None)


def test_expectations_reject_fewer_than_one_option():
  # C counts the positive: C = 0 gave an infinite expected reciprocal rank.
  for fn in (linkpred.expected_reciprocal_rank, linkpred.expected_mean_rank,
             lambda c: linkpred.expected_hits_at_k(c, 1)):
    with pytest.raises(ValueError, match=r"num_candidates must be >= 1 .*got 0 at index \(1,\)"):
      fn([3, 0])
    with pytest.raises(ValueError, match=r"num_candidates must be >= 1 .*got -2"):
      fn([-2])
  # Under tracing the value cannot be checked: NaN, never inf.
  got = jax.jit(linkpred.expected_reciprocal_rank)(np.array([0, 1]))
  assert np.isnan(got[0]) and float(got[1]) == pytest.approx(1.0, rel=1e-6)


# ----------------------------------------------------------------------------- properties
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), levels=st.integers(1, 4))
def test_policy_ordering_and_masking(seed, levels):
  n, c = 6, 12  # fixed shapes: one compilation for every example
  rng = np.random.default_rng(seed)
  pos = rng.integers(0, levels, n).astype(np.float32)
  cand = rng.integers(0, levels, (n, c)).astype(np.float32)
  mask = rng.random((n, c)) < 0.7
  rr = {t: np.asarray(linkpred.reciprocal_rank(pos, cand, candidate_mask=mask, ties=t))
        for t in TIES}
  hits = {t: np.asarray(linkpred.hits_at_k(pos, cand, 2, candidate_mask=mask, ties=t))
          for t in TIES}
  eps = 1e-6
  assert np.all(rr["optimistic"] + eps >= rr["average"])
  assert np.all(rr["average"] + eps >= rr["realistic"])  # Jensen: E[1/r] >= 1/E[r]
  assert np.all(rr["realistic"] + eps >= rr["pessimistic"])
  assert np.all(hits["optimistic"] + eps >= hits["average"])
  assert np.all(hits["average"] + eps >= hits["pessimistic"])
  # Masking a candidate is the same as removing it (bounds counted over the kept ones).
  for i in range(n):
    kept = cand[i][mask[i]]
    lo, hi = 1 + int((kept > pos[i]).sum()), 1 + int((kept >= pos[i]).sum())
    want = {"optimistic": 1 / lo, "pessimistic": 1 / hi, "realistic": 2 / (lo + hi),
            "average": np.mean(1 / np.arange(lo, hi + 1))}
    for t in TIES:
      assert rr[t][i] == pytest.approx(want[t], rel=1e-6)


def test_metric_names_from_a_generator_and_ncf_k_none():
  out = linkpred.evaluate([0.5], [[0.9, 0.1]], (m for m in ["mrr", "hits@1"]))
  assert sorted(out) == ["hits@1", "mrr"] and float(out["mrr"]) == 0.5
  with pytest.raises(TypeError, match="k must be a positive int, got None"):
    linkpred.ncf_leave_one_out([0.5], [[0.1]], k=None)
