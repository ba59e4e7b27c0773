"""jaxrank's options against metrax and torchmetrics, per list, under each tool's conventions.

The README's "Reproducing other tools" rows for metrax and torchmetrics are what these tests check:

* metrax (``google-metrax``, in the ``[test]`` extra): ``NDCGAtK``/``DCGAtK`` are ``gain="exp2",
  ties="first"``; ``PrecisionAtK`` adds ``precision_denominator="min_k_n"``; ``RecallAtK``,
  ``AveragePrecisionAtK`` (denominator: every relevant item) and ``MRR`` are ``ties="first"``.
  metrax has no padding mask, and its ``MRR`` takes binary labels (with grades it returns the
  reciprocal rank of the first item of the *highest* grade, not of the first relevant item).
* torchmetrics' retrieval metrics (1.9): ``RetrievalMAP``, ``RetrievalMRR``,
  ``RetrievalPrecision`` and ``RetrievalRecall`` set the target of every item scored <= 0 to
  "not relevant" before ranking (``torch.where(preds > 0, target, 0)``) — for recall only in
  the numerator — while ``RetrievalHitRate``, ``RetrievalRPrecision`` and
  ``RetrievalNormalizedDCG`` do not; its MAP@k divides by the relevant items found in the top k.
  torchmetrics pulls torch, so it is in the ``[reference]`` extra only: the formulas are
  transcribed below in NumPy (from torchmetrics 1.9.0, ``functional/retrieval/*.py``) and always
  tested; the live comparison runs when torchmetrics is installed, and also checks that the
  transcription is faithful.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import jaxrank


def batch(seed, lists=40, n=16, *, ties=True, graded=True, nonpositive=False):
  rng = np.random.default_rng(seed)
  if ties:
    scores = (rng.integers(0, 6, (lists, n)) / 4).astype(np.float32)
  else:  # distinct scores (torch's sort and topk order ties arbitrarily)
    scores = np.stack([rng.permutation(n) for _ in range(lists)]).astype(np.float32) / n
  if nonpositive:  # a quarter of the items scored <= 0, one of them exactly 0
    scores = scores - np.float32(0.25)
  labels = (rng.integers(1, 4, (lists, n)) if graded else 1) * (rng.random((lists, n)) < 0.3)
  labels = np.broadcast_to(labels, (lists, n)).copy()
  labels[::7] = 0  # lists without relevant items
  labels[1, :] = 1  # a list with every item relevant
  return scores, labels.astype(np.int32)


# --------------------------------------------------------------------------------- metrax
KS = (1, 3, 5, 10, 16, 20)  # 16 = the list length, 20 beyond it

METRAX = [
    ("NDCGAtK", "ndcg", {"gain": "exp2"}, True),
    ("DCGAtK", "dcg", {"gain": "exp2"}, True),
    ("PrecisionAtK", "precision", {"precision_denominator": "min_k_n"}, True),
    ("RecallAtK", "recall", {}, True),
    ("AveragePrecisionAtK", "average_precision", {"ap_denominator": "all"}, True),
    ("MRR", "reciprocal_rank", {}, False),  # binary labels: see test_metrax_mrr_with_grades
]


def metrax_per_list(name, scores, labels, ks):
  """[lists, len(ks)]: metrax's public from_model_output(...).compute() on each list."""
  import jax
  import jax.numpy as jnp
  metrax = pytest.importorskip("metrax", reason="metrax is in the [test] extra: "
                               "pip install -e '.[test]'")
  cls = getattr(metrax, name)
  one = lambda s, y: cls.from_model_output(predictions=s[None], labels=y[None],  # noqa: E731
                                           ks=jnp.asarray(ks)).compute()
  return np.asarray(jax.vmap(one)(jnp.asarray(scores), jnp.asarray(labels)))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("metrax_name, name, options, graded", METRAX,
                         ids=[m[0] for m in METRAX])
def test_metrax(metrax_name, name, options, graded, seed):
  scores, labels = batch(seed, graded=graded)
  want = metrax_per_list(metrax_name, scores, labels, KS)
  fn = getattr(jaxrank, name)
  got = np.stack([np.asarray(fn(scores, labels, k=k, ties="first", **options)) for k in KS], 1)
  np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
  # the conventions matter on this data: jaxrank's defaults give other numbers
  if name in ("ndcg", "dcg", "precision"):
    default = np.stack([np.asarray(fn(scores, labels, k=k)) for k in KS], 1)
    assert not np.allclose(default, want, rtol=2e-5, atol=2e-6)


def test_metrax_mrr_with_grades():
  """metrax's MRR finds the first item of the highest grade (argmax of the ranked labels)."""
  scores, labels = np.array([[0.9, 0.8, 0.1]], np.float32), np.array([[1, 3, 0]], np.int32)
  assert metrax_per_list("MRR", scores, labels, (3,))[0, 0] == pytest.approx(0.5)
  assert float(jaxrank.reciprocal_rank(scores, labels, ties="first")[0]) == 1.0
  # ... which jaxrank gives with the list's top grade as the threshold
  assert float(jaxrank.reciprocal_rank(scores, labels, ties="first", threshold=3)[0]) == 0.5


# --------------------------------------------------------------- torchmetrics, in NumPy
# Transcribed from torchmetrics 1.9.0 functional/retrieval/{average_precision, reciprocal_rank,
# precision, recall, hit_rate, r_precision, ndcg}.py for one query (preds, target: [n]); the
# ranking is a descending sort (distinct scores here, so its tie order does not matter).
def _order(preds):
  return np.argsort(-preds, kind="stable")


def tm_average_precision(preds, target, top_k=None):
  top_k = top_k or len(preds)
  target = np.where(preds > 0, target, 0)[_order(preds)][:top_k]
  if not target.sum():
    return 0.0
  positions = np.arange(1, len(target) + 1)[target > 0]
  return float(np.mean((np.arange(len(positions)) + 1) / positions))


def tm_reciprocal_rank(preds, target, top_k=None):
  top_k = top_k or len(preds)
  target = np.where(preds > 0, target, 0)[_order(preds)][:top_k]
  if not target.sum():
    return 0.0
  return 1.0 / (np.flatnonzero(target)[0] + 1.0)


def tm_precision(preds, target, top_k=None, adaptive_k=False):
  if top_k is None or (adaptive_k and top_k > len(preds)):
    top_k = len(preds)
  if not target.sum():
    return 0.0
  return float(np.where(preds > 0, target, 0)[_order(preds)][:top_k].sum() / top_k)


def tm_recall(preds, target, top_k=None):
  top_k = top_k or len(preds)
  if not target.sum():
    return 0.0
  return float(np.where(preds > 0, target, 0)[_order(preds)][:top_k].sum() / target.sum())


def tm_hit_rate(preds, target, top_k=None):
  top_k = top_k or len(preds)
  return float(target[_order(preds)][:top_k].sum() > 0)


def tm_r_precision(preds, target):
  r = int(target.sum())
  return 0.0 if not r else float(target[_order(preds)][:r].sum() / r)


def tm_ndcg(preds, target, top_k=None):
  """sklearn's tie-averaged DCG over the ideal DCG (no score filter, linear gain)."""
  top_k = top_k or len(preds)
  discount = 1.0 / np.log2(np.arange(len(target)) + 2.0)
  discount[top_k:] = 0.0
  _, inv, counts = np.unique(-preds, return_inverse=True, return_counts=True)
  ranked = np.bincount(inv, weights=target.astype(float)) / counts
  cum = np.cumsum(discount)[np.cumsum(counts) - 1]
  gain = float(np.sum(ranked * np.diff(cum, prepend=0.0)))
  ideal = float(np.sum(discount * np.sort(target)[::-1]))
  return 0.0 if ideal == 0 else gain / ideal


def relevant_ids(labels):
  """[lists, n] labels -> [lists, r] ids of the relevant items, -1 pads."""
  r = max(int((labels > 0).sum(1).max()), 1)
  out = np.full((labels.shape[0], r), -1, np.int32)
  for i, row in enumerate(labels):
    ids = np.flatnonzero(row > 0)
    out[i, :len(ids)] = ids
  return out


def jaxrank_as_torchmetrics(metric, scores, labels, k, **tm_options):
  """The jaxrank call the README gives for each torchmetrics retrieval metric."""
  retrieved = labels * (scores > 0)  # torchmetrics: an item scored <= 0 is not retrieved
  if metric == "average_precision":
    return jaxrank.average_precision(scores, retrieved, k=k, ap_denominator="retrieved")
  if metric == "reciprocal_rank":
    return jaxrank.reciprocal_rank(scores, retrieved, k=k)
  if metric == "precision":
    denominator = "min_k_n" if tm_options.get("adaptive_k") else "k"
    return jaxrank.precision(scores, retrieved, k=k, precision_denominator=denominator)
  if metric == "recall":  # every relevant item stays in the denominator
    return jaxrank.recall(jaxrank.from_sparse(scores, relevant_ids(labels), where=scores > 0),
                          k=k)
  if metric == "hit_rate":
    return jaxrank.hit_rate(scores, labels, k=k)
  if metric == "r_precision":
    return jaxrank.r_precision(scores, labels)
  if metric == "ndcg":
    return jaxrank.ndcg(scores, labels, k=k)
  raise AssertionError(metric)


TM = [("average_precision", tm_average_precision, {}),
      ("reciprocal_rank", tm_reciprocal_rank, {}),
      ("precision", tm_precision, {}),
      ("precision", tm_precision, {"adaptive_k": True}),
      ("recall", tm_recall, {}),
      ("hit_rate", tm_hit_rate, {}),
      ("ndcg", tm_ndcg, {})]
TM_KS = (None, 1, 3, 10, 20)  # lists of 16


def tm_case(metric, seed):
  """Binary targets (torchmetrics requires them) except for NDCG, which also gets ties."""
  return batch(seed, ties=metric == "ndcg", graded=metric == "ndcg", nonpositive=True)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("k", TM_KS)
@pytest.mark.parametrize("metric, reference, tm_options", TM,
                         ids=[f"{m}{'-adaptive' if o else ''}" for m, _, o in TM])
def test_torchmetrics_transcription(metric, reference, tm_options, k, seed):
  scores, labels = tm_case(metric, seed)
  want = [reference(s, y, k, **tm_options) for s, y in zip(scores, labels)]
  got = jaxrank_as_torchmetrics(metric, scores, labels, k, **tm_options)
  np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("seed", [0, 1])
def test_torchmetrics_r_precision_transcription(seed):
  scores, labels = tm_case("r_precision", seed)
  want = [tm_r_precision(s, y) for s, y in zip(scores, labels)]
  np.testing.assert_allclose(np.asarray(jaxrank.r_precision(scores, labels)), want, atol=2e-6)


def test_torchmetrics_score_filter_changes_map():
  """Why the row exists: relevant items scored <= 0 leave torchmetrics' MAP (and its
  denominator), so its MAP is higher than the usual one on the same data."""
  scores, labels = tm_case("average_precision", 0)
  usual = float(np.mean(jaxrank.average_precision(scores, labels)))
  tm = float(np.mean([tm_average_precision(s, y) for s, y in zip(scores, labels)]))
  assert tm > usual + 0.01


TORCH_FUNCTIONS = {"average_precision": "retrieval_average_precision",
                   "reciprocal_rank": "retrieval_reciprocal_rank",
                   "precision": "retrieval_precision", "recall": "retrieval_recall",
                   "hit_rate": "retrieval_hit_rate", "ndcg": "retrieval_normalized_dcg"}


def test_torchmetrics_live():
  """Every row of TM at every k against torchmetrics itself (one test: one skip without it)."""
  torch = pytest.importorskip("torch", reason="torchmetrics pulls torch: "
                              "pip install -e '.[reference]'")
  functional = pytest.importorskip("torchmetrics.functional.retrieval",
                                   reason="torchmetrics is optional: pip install -e '.[reference]'")
  for (metric, reference, tm_options), k in itertools.product(TM, TM_KS):
    scores, labels = tm_case(metric, 0)
    fn = getattr(functional, TORCH_FUNCTIONS[metric])
    target = (lambda y: torch.tensor(y)) if metric == "ndcg" else (lambda y: torch.tensor(y > 0))
    want = [float(fn(torch.tensor(s), target(y), top_k=k, **tm_options))
            for s, y in zip(scores, labels)]
    transcribed = [reference(s, y, k, **tm_options) for s, y in zip(scores, labels)]
    case = f"{metric} {tm_options} k={k}"
    np.testing.assert_allclose(transcribed, want, rtol=1e-5, atol=1e-6, err_msg=case)
    got = jaxrank_as_torchmetrics(metric, scores, labels, k, **tm_options)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-6, err_msg=case)


def test_torchmetrics_live_modular_map():
  """The modular RetrievalMAP (grouped by query index, empty queries 0) is the mean of the
  functional values, i.e. ``jaxrank.mean`` of the per-list values with ``empty="zero"``."""
  torch = pytest.importorskip("torch", reason="torchmetrics pulls torch: "
                              "pip install -e '.[reference]'")
  retrieval = pytest.importorskip("torchmetrics.retrieval",
                                  reason="torchmetrics is optional: pip install -e '.[reference]'")
  scores, labels = tm_case("average_precision", 1)
  indexes = np.repeat(np.arange(len(scores)), scores.shape[1])
  tm_map = retrieval.RetrievalMAP(top_k=5)
  want = float(tm_map(torch.tensor(scores.ravel()), torch.tensor(labels.ravel() > 0),
                      indexes=torch.tensor(indexes)))
  got = float(jaxrank.mean(jaxrank_as_torchmetrics("average_precision", scores, labels, 5)))
  assert got == pytest.approx(want, rel=2e-5)
