"""Differential tests against the reference implementations, under each one's conventions.

Random data with tied scores, padding, graded labels, lists without relevant items, and cutoffs
beyond the list. Each tool is skipped (with the reason) when it does not install.
"""

import numpy as np
import pytest

import jaxrank


def random_batch(seed, lists=40, n=30, tie_levels=6):
  rng = np.random.default_rng(seed)
  scores = (rng.integers(0, tie_levels, (lists, n)) / 4).astype(np.float32)
  labels = rng.integers(1, 4, (lists, n)) * (rng.random((lists, n)) < 0.25)
  labels[::7] = 0  # lists without relevant items
  where = rng.random((lists, n)) < 0.9
  where[:, :2] = True
  return scores, labels, where


# ------------------------------------------------------------------------------- trec_eval
TREC = {
    "map": ("average_precision", None), "map_cut_5": ("average_precision", 5),
    "map_cut_100": ("average_precision", 100), "recip_rank": ("reciprocal_rank", None),
    "P_5": ("precision", 5), "P_10": ("precision", 10), "P_100": ("precision", 100),
    "recall_5": ("recall", 5), "recall_100": ("recall", 100), "ndcg": ("ndcg", None),
    "ndcg_cut_5": ("ndcg", 5), "ndcg_cut_10": ("ndcg", 10), "Rprec": ("r_precision", None),
    "success_1": ("hit_rate", 1), "success_5": ("hit_rate", 5), "set_P": ("precision", None),
    "set_recall": ("recall", None), "set_F": ("fbeta", None),
}


def trec_dicts(scores, labels, where, extra_judged=None):
  run, qrels = {}, {}
  for q in range(scores.shape[0]):
    qid = f"q{q}"
    run[qid] = {f"d{j:03d}": float(scores[q, j]) for j in range(scores.shape[1]) if where[q, j]}
    qrels[qid] = {f"d{j:03d}": int(labels[q, j]) for j in range(scores.shape[1])
                  if where[q, j] and (labels[q, j] > 0 or j % 3 == 0)}
    for doc, grade in (extra_judged or {}).get(qid, {}).items():
      qrels[qid][doc] = grade
    if not qrels[qid]:
      qrels[qid]["d999"] = 0  # keep the query judged (pytrec_eval skips unjudged queries)
  return run, qrels


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pytrec_eval_dense(seed):
  pytrec_eval = pytest.importorskip("pytrec_eval")
  scores, labels, where = random_batch(seed)
  run, qrels = trec_dicts(scores, labels, where)
  want = pytrec_eval.RelevanceEvaluator(qrels, set(TREC)).evaluate(run)
  # trec_eval breaks ties by doc id descending: the larger id first.
  tie_key = np.broadcast_to(np.arange(scores.shape[1]), scores.shape)
  specs = list(TREC.values())
  names = [f"{m}@{k}" if k else m for m, k in specs]
  got = jaxrank.evaluate(scores, labels, names, where=where, ties="first", tie_key=tie_key)
  for measure, name in zip(TREC, names):
    expected = np.array([want[f"q{q}"][measure] for q in range(scores.shape[0])])
    np.testing.assert_allclose(np.asarray(got[name]), expected, atol=2e-6, err_msg=measure)


@pytest.mark.parametrize("k, relevant", [(20, 8), (4, 12)])
def test_pytrec_eval_ranked_ids_with_unretrieved_relevant(k, relevant):
  # (4, 12): more relevant ids than ranked ones. Rprec counted the unranked ones (rank k + 1)
  # inside R, and NDCG's ideal was cut at the list's length (0.469 for trec_eval's 0.339).
  pytrec_eval = pytest.importorskip("pytrec_eval")
  rng = np.random.default_rng(5)
  lists, catalog = 30, 60
  ranked = np.stack([rng.permutation(catalog)[:k] for _ in range(lists)])
  ranked[:, -5:][rng.random(ranked[:, -5:].shape) < 0.5] = -1  # shorter runs
  rel_ids = np.stack([rng.permutation(catalog)[:relevant] for _ in range(lists)])
  rel_ids[rng.random((lists, relevant)) < 0.3] = -1
  grades = rng.integers(1, 4, rel_ids.shape)
  run = {f"q{q}": {f"d{d:03d}": float(k - i) for i, d in enumerate(ranked[q]) if d >= 0}
         for q in range(lists)}
  qrels = {f"q{q}": {f"d{d:03d}": int(g) for d, g in zip(rel_ids[q], grades[q]) if d >= 0}
           or {"d999": 0} for q in range(lists)}
  want = pytrec_eval.RelevanceEvaluator(qrels, set(TREC)).evaluate(run)
  ranks = jaxrank.from_ranked_ids(ranked, rel_ids, grades)
  for measure, (name, cut) in TREC.items():
    got = getattr(jaxrank, name)(ranks, k=cut)
    expected = np.array([want[f"q{q}"][measure] for q in range(lists)])
    np.testing.assert_allclose(np.asarray(got), expected, atol=2e-6, err_msg=measure)


# ---------------------------------------------------------------------------- scikit-learn
@pytest.mark.parametrize("k", [None, 1, 3, 10, 50])
def test_sklearn_ndcg_and_dcg_tie_averaged(k):
  metrics = pytest.importorskip("sklearn.metrics")
  scores, labels, _ = random_batch(3, lists=25, n=12, tie_levels=3)
  got_ndcg = np.asarray(jaxrank.ndcg(scores, labels, k=k))
  got_dcg = np.asarray(jaxrank.dcg(scores, labels, k=k))
  for i in range(scores.shape[0]):
    y, s = labels[i][None], scores[i][None]
    assert got_ndcg[i] == pytest.approx(metrics.ndcg_score(y, s, k=k), abs=2e-6)
    assert got_dcg[i] == pytest.approx(metrics.dcg_score(y, s, k=k), rel=2e-6, abs=2e-6)


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")  # inside sklearn
@pytest.mark.parametrize("k", [None, 2, 5])
@pytest.mark.parametrize("scale", [1e30, 1e37, 3e38])
def test_sklearn_ndcg_with_grades_near_float32_max(scale, k):
  # Issue 10, item 3: the sums of gains overflowed float32 and NDCG was NaN (sklearn: 0.9197 for
  # the issue's example). Grades up to float32's largest value, with ties among scores and grades.
  metrics = pytest.importorskip("sklearn.metrics")
  rng = np.random.default_rng(int(np.log10(scale)))
  scores = rng.integers(0, 4, (20, 8)).astype(np.float32)
  labels = (rng.integers(0, 4, (20, 8)) / 3 * scale).astype(np.float32)
  labels[0, :3] = [3e38, 3e38, 1.0]
  got = np.asarray(jaxrank.ndcg(scores, labels, k=k))
  assert np.all((got >= 0) & (got <= 1))
  for i in range(scores.shape[0]):
    want = metrics.ndcg_score(labels[i][None].astype(np.float64), scores[i][None], k=k)
    assert got[i] == pytest.approx(want, abs=2e-6), i
  if k is None:
    example = jaxrank.ndcg([[1.0, 0.0, 0.5]], [[3e38, 3e38, 1.0]])
    assert float(example[0]) == pytest.approx(0.9197, abs=1e-4)
  dcg = np.asarray(jaxrank.dcg(scores, labels, k=k))
  assert not np.isnan(dcg).any()  # the DCG itself may exceed float32: then it is +inf


def _exact_exp2_ndcg(scores, grades, k):
  """NDCG with gain 2^g - 1 in exact integers (grades are ints), tie-averaged by enumeration."""
  from fractions import Fraction
  import itertools
  import math
  n = len(scores)
  cut = n if k is None else min(k, n)
  top = max(grades)
  ratio = [float(Fraction(2**g - 1, 2**top - 1)) if top else 0.0 for g in grades]
  disc = [1 / math.log2(2 + i) for i in range(n)]
  ideal = sum(r * d for r, d in zip(sorted(ratio, reverse=True)[:cut], disc))
  values = []
  groups = [list(g) for _, g in itertools.groupby(sorted(range(n), key=lambda i: -scores[i]),
                                                 key=lambda i: -scores[i])]
  for combo in itertools.product(*(itertools.permutations(g) for g in groups)):
    order = [i for g in combo for i in g]
    values.append(sum(ratio[i] * disc[p] for p, i in enumerate(order[:cut])) / ideal)
  return float(np.mean(values)) if ideal > 0 else 0.0


@pytest.mark.parametrize("k", [None, 1, 3])
def test_exp2_ndcg_with_gains_beyond_float32(k):
  # gain="exp2" of a grade >= 128 is +inf in float32 (ndcg([[1, 0]], [[128, 0]]) was NaN); NDCG
  # is a ratio of gains, computed over the list's largest gain, so it stays exact.
  rng = np.random.default_rng(5)
  scores = rng.integers(0, 3, (12, 6)).astype(np.float32)
  grades = rng.integers(0, 400, (12, 6)) * (rng.random((12, 6)) < 0.6)
  grades[0, :2], scores[0, :2] = [128, 0], [1.0, 0.0]
  grades[1, :3] = [1000, 999, 1]
  got = np.asarray(jaxrank.ndcg(scores, grades, k=k, gain="exp2"))
  for i in range(12):
    assert got[i] == pytest.approx(_exact_exp2_ndcg(scores[i], grades[i].tolist(), k),
                                   abs=2e-6), i
  assert float(jaxrank.ndcg([[1.0, 0.0]], [[128, 0]], gain="exp2")[0]) == 1.0
  assert float(jaxrank.dcg([[1.0, 0.0]], [[128, 0]], gain="exp2")[0]) == np.inf
  assert float(jaxrank.dcg([[1.0, 0.0]], [[0, 128]], gain="exp2", k=1)[0]) == 0.0  # not inf x 0


def test_soft_ndcg_with_gains_beyond_float32():
  soft = jaxrank.soft_ndcg([[1.0, 0.0, 0.5]], [[3e38, 3e38, 1.0]], temperature=1e-3)
  assert float(soft[0]) == pytest.approx(0.9197, abs=1e-3)
  soft = jaxrank.soft_ndcg([[1.0, 0.0]], [[200, 0]], gain="exp2", temperature=1e-3)
  assert float(soft[0]) == pytest.approx(1.0, abs=1e-3)


# ------------------------------------------------------------------------------------ Rax
RAX = [("ndcg_metric", "ndcg", {}), ("dcg_metric", "dcg", {}),
       ("mrr_metric", "reciprocal_rank", {}), ("recall_metric", "recall", {}),
       ("precision_metric", "precision", {"precision_denominator": "min_k_n"}),
       ("ap_metric", "average_precision", {})]


@pytest.mark.parametrize("topn", [None, 1, 5, 40])
@pytest.mark.parametrize("rax_name, name, extra", RAX)
def test_rax(rax_name, name, extra, topn):
  rax = pytest.importorskip("rax")
  scores, labels, where = random_batch(4, lists=30, n=16)
  fn = getattr(rax, rax_name)
  want = np.asarray(fn(scores, labels.astype(np.float32), where=where, topn=topn,
                       reduce_fn=None))
  if name == "precision" and topn is None:
    extra = {}
  extra = {"gain": "exp2", **extra} if name in ("ndcg", "dcg") else extra  # Rax's gain
  got = getattr(jaxrank, name)(scores, labels, where=where, k=topn, ties="first", **extra)
  np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-6)
