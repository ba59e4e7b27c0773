"""Beyond-accuracy metrics: Evidently's own test expectations, hand-computed cases, brute-force
NumPy references (explicit pairs), properties (padding, order, jit, vmap), and Evidently itself."""

import itertools

import jax
import numpy as np
import pytest

import jaxrank

# ------------------------------------------------------------------ Evidently's test goldens
# Transcribed from evidentlyai/evidently tests/metrics/recsys/test_*.py (REFERENCES.md section 5).
# Item ids: 0a 1a 5a 6a 4a 10a 2a -> 0 1 2 3 4 5 6.
FEATURES = np.array([[1, 0], [1, 0.1], [1, 1], [-0.1, 0.9], [1, 0.9], [-1, -1], [1, 0.2]],
                    np.float32)


def test_evidently_diversity_golden():
  lists = [[0, 1, 2, 3], [0, 1, 2, 3], [0, 4, 3, 5]]
  got = jaxrank.intra_list_diversity(lists, FEATURES, normalize="evidently")
  assert float(np.mean(got)) == pytest.approx(1.0963345074906863, rel=1e-6)


def test_evidently_personalization_golden():
  lists = [[1, 2, 3, 4], [1, 2, 3, 4], [1, 3, 2, 5]]
  for normalize in ["lists", "evidently"]:  # full lists: both forms agree
    got = jaxrank.personalization(lists, num_items=6, normalize=normalize)
    assert float(got) == pytest.approx(0.1666667, abs=1e-6)


def test_evidently_serendipity_golden():
  feats = FEATURES.copy()
  feats[5] = [-1, 0]  # the serendipity test sets 10a = (-1, 0)
  # Users 1b, 2b, 3b (k=3); relevant recommendations 1b -> 5a (rank 3), 2b -> 0a (rank 1).
  ranked = [[0, 1, 2], [0, 1, 2], [0, 1, 2]]
  relevant = [[2], [0], [-1]]
  history = [[5], [6], [2]]
  for normalize in ["relevant", "evidently"]:  # one relevant item per user: both forms agree
    got = jaxrank.serendipity(ranked, relevant, history, feats, normalize=normalize)
    assert np.isnan(got[2])
    assert float(jaxrank.mean(got, empty="skip")) == pytest.approx(0.8632630527478137, rel=1e-6)


POP_RECS = [[3, -1], [2, 3], [1, 2]]  # (user, item, rank): (1,3,1) (2,2,1) (2,3,2) (3,1,1) (3,2,2)
POP_TRAIN = ([1, 1, 2, 3], [1, 2, 1, 1])  # (user, item) pairs


def test_evidently_popularity_goldens():
  phi = jaxrank.item_popularity(*POP_TRAIN, num_items=4)
  assert phi.tolist() == [0, 3, 1, 0]
  n_users = len(set(POP_TRAIN[0]))
  nov = jaxrank.novelty(POP_RECS, phi, n_users)
  assert float(jaxrank.mean(nov, empty="skip")) == pytest.approx(1.188722, abs=1e-6)
  arp = jaxrank.average_recommendation_popularity(POP_RECS, phi, unseen="skip")
  assert float(jaxrank.mean(arp, empty="skip")) == pytest.approx(1.5)
  assert float(jaxrank.coverage(POP_RECS, num_items=4, catalog_mask=phi > 0)) == 1.0
  assert float(jaxrank.gini(POP_RECS, num_items=4, over="recommended")) == pytest.approx(0.2)


def test_evidently_score_entropy_golden():
  scores = [[1.25, 1.0, 0.3], [0.9, 0.8, 0.7], [1.0, 0.5, 0.3]]
  assert float(jaxrank.score_entropy(scores, k=3)) == pytest.approx(2.15148438, abs=1e-6)


@pytest.mark.parametrize("k, want", [(1, 1 / 3), (2, 2 / 3), (3, 1.0)])
def test_evidently_coverage_golden(k, want):
  lists = np.array([[0, 1, 2]] * 3)[:, :k]
  assert float(jaxrank.coverage(lists, num_items=3)) == pytest.approx(want)


# ------------------------------------------------------------------------ hand-computed cases
def test_documented_defaults_differ_from_evidently_code():
  # ARP per the docs counts an unseen item as popularity 0: users (0), (1 + 0)/2, (3 + 1)/2.
  phi = jaxrank.item_popularity(*POP_TRAIN, num_items=4)
  arp = jaxrank.average_recommendation_popularity(POP_RECS, phi)
  np.testing.assert_allclose(arp, [0.0, 0.5, 2.0])
  # Gini over the whole catalog of 4 items: counts sorted 0, 1, 2, 2.
  want = ((2 * 1 - 5) * 0 + (2 * 2 - 5) * 1 + (2 * 3 - 5) * 2 + (2 * 4 - 5) * 2) / (3 * 5)
  assert float(jaxrank.gini(POP_RECS, num_items=4)) == pytest.approx(want)
  # Novelty counting unseen item 3 as seen by one of the 3 users: log2(3).
  nov = jaxrank.novelty(POP_RECS, phi, 3, unseen="max")
  np.testing.assert_allclose(nov, [np.log2(3), (np.log2(3) + np.log2(3)) / 2,
                                   (0 + np.log2(3)) / 2], rtol=1e-6)


def test_diversity_two_orthogonal_and_short_lists():
  e = np.array([[1, 0], [0, 1], [2, 0], [0, 0]], np.float32)
  got = jaxrank.intra_list_diversity([[0, 1, 2], [0, -1, -1], [-1, -1, -1], [0, 3, -1]], e)
  # pairs (0,1): 1, (0,2): 0, (1,2): 1 -> 2/3; one item and no items: NaN; a zero vector: 1.
  np.testing.assert_allclose(got, [2 / 3, np.nan, np.nan, 1.0], rtol=1e-6)
  ev = jaxrank.intra_list_diversity([[0, 1, 2], [0, -1, -1]], e, normalize="evidently")
  np.testing.assert_allclose(ev, [2 / 3, 0.0], rtol=1e-6)


def test_personalization_identical_and_disjoint():
  assert float(jaxrank.personalization([[0, 1], [0, 1], [1, 0]], num_items=2)) == pytest.approx(0)
  assert float(jaxrank.personalization([[0, 1], [2, 3], [4, 5]], num_items=6)) == 1.0
  assert np.isnan(float(jaxrank.personalization([[0, 1], [-1, -1]], num_items=2)))


def test_gini_extremes():
  assert float(jaxrank.gini([[0], [0], [0]], num_items=3)) == pytest.approx(1.0)
  assert float(jaxrank.gini([[0, 1], [2, -1], [-1, -1]], num_items=3)) == pytest.approx(0.0)


def test_score_entropy_per_list_and_padding():
  scores = np.array([[0.0, 0.0, 5.0], [1.0, 1.0, 1.0]], np.float32)
  got = jaxrank.score_entropy(scores, pooled=False, where=[[True, True, False], [True] * 3])
  np.testing.assert_allclose(got, [np.log(2), np.log(3)], rtol=1e-6)


def test_item_and_user_bias_with_bins():
  out = jaxrank.item_bias([[0, 1], [0, 2]], [0.5, 2.5, 7.0], bins=[1.0, 5.0],
                          train_item_mask=[True, True, False])
  np.testing.assert_allclose(out["recommended"], [0.5, 0.25, 0.25])
  np.testing.assert_allclose(out["train"], [0.5, 0.5, 0.0])
  out = jaxrank.user_bias([[0], [1], [-1]], [20.0, 40.0, 60.0], bins=[30.0])
  np.testing.assert_allclose(out["recommended"], [0.5, 0.5])
  np.testing.assert_allclose(out["train"], [1 / 3, 2 / 3])


def test_top_k_ids():
  got = jaxrank.top_k_ids([[0.1, np.nan, 0.5, 0.3]], 3, where=[[True, True, True, False]])
  assert got.tolist() == [[2, 0, 1]]
  assert jaxrank.top_k_ids([[0.1, 0.5]], 2, where=[[True, False]]).tolist() == [[0, -1]]


# ---------------------------------------------------------- brute-force references, random data
def random_lists(seed, users=40, k=6, items=30, d=5):
  rng = np.random.default_rng(seed)
  lists = np.stack([rng.permutation(items)[:k] for _ in range(users)])
  lengths = rng.integers(0, k + 1, users)
  lengths[:3] = k
  lists = np.where(np.arange(k) < lengths[:, None], lists, -1)
  for row in lists:  # pads anywhere, not only at the end
    rng.shuffle(row)
  emb = rng.normal(size=(items, d)).astype(np.float32)
  emb[0] = 0  # a zero embedding
  emb[1] = emb[2] * 3  # parallel items
  return rng, lists, emb


def cos_dist(a, b):
  na, nb = np.linalg.norm(a), np.linalg.norm(b)
  if na == 0 or nb == 0:
    return 1.0
  return 1.0 - float(a @ b) / (na * nb)


def valid(row):
  return [int(i) for i in row if i >= 0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_diversity_vs_explicit_pairs(seed):
  _, lists, emb = random_lists(seed)
  want_pairs, want_ev = [], []
  for row in lists:
    ids = valid(row)
    total = sum(cos_dist(emb[i], emb[j]) for i, j in itertools.combinations(ids, 2))
    npairs = len(ids) * (len(ids) - 1) / 2
    want_pairs.append(total / npairs if npairs else np.nan)
    want_ev.append(total / len(ids) if ids else np.nan)
  np.testing.assert_allclose(jaxrank.intra_list_diversity(lists, emb), want_pairs, atol=2e-5)
  np.testing.assert_allclose(jaxrank.intra_list_diversity(lists, emb, normalize="evidently"),
                             want_ev, atol=2e-5)


@pytest.mark.parametrize("seed", [0, 1])
def test_personalization_vs_explicit_pairs(seed):
  _, lists, _ = random_lists(seed, items=12)
  sets = [set(valid(r)) for r in lists if valid(r)]
  k = max(len(s) for s in sets)
  overlaps = [len(a & b) / k for a, b in itertools.combinations(sets, 2)]
  assert float(jaxrank.personalization(lists, num_items=12)) == pytest.approx(
      1 - np.mean(overlaps), abs=1e-6)
  # Evidently's code: n(n-1) - (sum c^2 - n k) / k over n(n-1).
  c = np.bincount(np.concatenate([list(s) for s in sets]), minlength=12)
  n = len(sets)
  want = (n * (n - 1) - ((c ** 2).sum() - n * k) / k) / (n * (n - 1))
  assert float(jaxrank.personalization(lists, num_items=12, normalize="evidently")) == (
      pytest.approx(want, abs=1e-6))


@pytest.mark.parametrize("seed", [0, 1])
def test_popularity_metrics_vs_numpy(seed):
  rng, lists, _ = random_lists(seed, items=30)
  users = rng.integers(0, 15, 200)
  items = rng.integers(0, 25, 200)  # items 25..29 are never seen in training
  pairs = set(zip(users.tolist(), items.tolist()))
  phi = np.array([sum(1 for u, i in pairs if i == it) for it in range(30)])
  np.testing.assert_array_equal(jaxrank.item_popularity(users, items, num_items=30), phi)
  np.testing.assert_array_equal(
      jaxrank.item_popularity(users, items, num_items=30, distinct_users=False),
      np.bincount(items, minlength=30))
  n = len(set(users.tolist()))
  nov, arp_zero, arp_skip = [], [], []
  for row in lists:
    ids = valid(row)
    seen = [i for i in ids if phi[i] > 0]
    nov.append(np.mean([-np.log2(phi[i] / n) for i in seen]) if seen else np.nan)
    arp_zero.append(np.mean([phi[i] for i in ids]) if ids else np.nan)
    arp_skip.append(np.mean([phi[i] for i in seen]) if seen else np.nan)
  np.testing.assert_allclose(jaxrank.novelty(lists, phi, n), nov, rtol=1e-5)
  np.testing.assert_allclose(jaxrank.average_recommendation_popularity(lists, phi), arp_zero,
                             rtol=1e-6)
  np.testing.assert_allclose(
      jaxrank.average_recommendation_popularity(lists, phi, unseen="skip"), arp_skip, rtol=1e-6)
  counts = np.bincount(lists[lists >= 0], minlength=30)
  np.testing.assert_array_equal(jaxrank.recommendation_counts(lists, num_items=30), counts)
  assert float(jaxrank.coverage(lists, num_items=30)) == pytest.approx((counts > 0).mean())
  train = phi > 0
  assert float(jaxrank.coverage(lists, num_items=30, catalog_mask=train)) == pytest.approx(
      ((counts > 0) & train).sum() / train.sum())
  for over, use in [("catalog", np.ones(30, bool)), ("recommended", counts > 0)]:
    c = np.sort(counts[use])
    m = len(c)
    want = np.sum((2 * np.arange(1, m + 1) - m - 1) * c) / ((m - 1) * c.sum())
    assert float(jaxrank.gini(lists, num_items=30, over=over)) == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize("seed", [0, 1])
def test_serendipity_vs_explicit_sums(seed):
  rng, lists, emb = random_lists(seed)
  relevant = np.where(rng.random((40, 4)) < 0.7, rng.integers(0, 30, (40, 4)), -1)
  relevant = np.array([[x if x not in r[:j] else -1 for j, x in enumerate(r)] for r in relevant])
  history = np.array([rng.permutation(30)[:5] for _ in range(40)])
  history[rng.random((40, 5)) < 0.3] = -1
  history[5] = -1  # a user without history
  want_rel, want_ev = [], []
  for row, rel, hist in zip(lists, relevant, history):
    hits = [i for i in valid(row) if i in set(valid(rel))]
    h = valid(hist)
    if not hits or not h:
      want_rel.append(np.nan), want_ev.append(np.nan)
      continue
    mean_cos = [np.mean([1 - cos_dist(emb[i], emb[j]) for j in h]) for i in hits]
    want_rel.append(np.mean([1 - m for m in mean_cos]))
    want_ev.append(1 - np.sum(mean_cos))
  np.testing.assert_allclose(jaxrank.serendipity(lists, relevant, history, emb), want_rel,
                             atol=2e-5)
  np.testing.assert_allclose(
      jaxrank.serendipity(lists, relevant, history, emb, normalize="evidently"), want_ev, atol=2e-5)


def test_score_entropy_vs_scipy():
  scipy_stats = pytest.importorskip("scipy.stats")
  rng = np.random.default_rng(0)
  s = rng.normal(size=(20, 12)).astype(np.float32) * 3
  top = -np.sort(-s, axis=1)[:, :5]
  p = np.exp(top - top.max())
  assert float(jaxrank.score_entropy(s, k=5)) == pytest.approx(
      scipy_stats.entropy((p / p.sum()).ravel()), rel=1e-5)
  per = [scipy_stats.entropy(np.exp(r - r.max()) / np.exp(r - r.max()).sum()) for r in top]
  np.testing.assert_allclose(jaxrank.score_entropy(s, k=5, pooled=False), per, rtol=1e-5)


# --------------------------------------------------------------------- properties, jit, vmap
def test_padding_and_order_invariance():
  rng, lists, emb = random_lists(3, items=30)
  padded = np.concatenate([lists, -np.ones((40, 3), lists.dtype)], axis=1)
  perm = np.stack([rng.permutation(padded.shape[1]) for _ in range(40)])
  shuffled = np.take_along_axis(padded, perm, axis=1)
  phi = rng.integers(0, 9, 30)
  for f in [lambda x: jaxrank.intra_list_diversity(x, emb),
            lambda x: jaxrank.novelty(x, phi, 20),
            lambda x: jaxrank.average_recommendation_popularity(x, phi),
            lambda x: jaxrank.personalization(x, num_items=30),
            lambda x: jaxrank.gini(x, num_items=30),
            lambda x: jaxrank.coverage(x, num_items=30)]:
    np.testing.assert_allclose(f(lists), f(shuffled), rtol=1e-5, atol=1e-6)


def test_jit_and_vmap():
  _, lists, emb = random_lists(4, users=12)
  eager = jaxrank.intra_list_diversity(lists, emb)
  jitted = jax.jit(jaxrank.intra_list_diversity)(lists, emb)
  vmapped = jax.vmap(jaxrank.intra_list_diversity, in_axes=(0, None))(lists.reshape(3, 4, -1),
                                                                       emb)
  np.testing.assert_allclose(jitted, eager, rtol=1e-6)
  np.testing.assert_allclose(vmapped.reshape(-1), eager, rtol=1e-6)
  pers = jax.jit(lambda x: jaxrank.personalization(x, num_items=30))(lists)
  np.testing.assert_allclose(pers, jaxrank.personalization(lists, num_items=30), rtol=1e-6)
  # A batch of datasets: leading dims of the per-list metrics are kept.
  assert jaxrank.intra_list_diversity(lists.reshape(3, 4, -1), emb).shape == (3, 4)


def test_no_recompilation_for_new_values():
  _, lists, emb = random_lists(5)
  jaxrank.intra_list_diversity(lists, emb)
  from jaxrank._core import beyond as _beyond
  before = _beyond._diversity._cache_size()
  jaxrank.intra_list_diversity(lists[::-1].copy(), emb * 2)
  assert _beyond._diversity._cache_size() == before


def test_errors():
  emb = np.ones((3, 2), np.float32)
  with pytest.raises(ValueError, match=r"ranked_ids must be -1 \(padding\) or in \[0, 3\)"):
    jaxrank.intra_list_diversity([[0, 3]], emb)
  with pytest.raises(ValueError, match="must not repeat an id"):
    jaxrank.intra_list_diversity([[0, 0]], emb)
  with pytest.raises(ValueError, match="item_embeddings must have shape"):
    jaxrank.intra_list_diversity([[0, 1]], np.ones(3))
  with pytest.raises(ValueError, match="normalize must be one of"):
    jaxrank.intra_list_diversity([[0, 1]], emb, normalize="k")
  with pytest.raises(TypeError, match="num_items must be a positive int"):
    jaxrank.personalization([[0, 1]], num_items=2.0)
  with pytest.raises(ValueError, match=r"item_popularity must be counts >= 0 .*got -1 at item 0"):
    jaxrank.novelty([[0]], [-1, 2], 3)
  with pytest.raises(ValueError, match="num_users must be > 0"):
    jaxrank.novelty([[0]], [1, 2], 0)
  with pytest.raises(ValueError, match="catalog_mask must have the shape"):
    jaxrank.coverage([[0]], num_items=2, catalog_mask=[True])
  with pytest.raises(ValueError, match="num_categories is required"):
    jaxrank.item_bias([[0]], [0, 1])
  with pytest.raises(ValueError, match="relevant_ids must have shape"):
    jaxrank.serendipity([[0], [1]], [[0]], [[1], [2]], emb)
  with pytest.raises(ValueError, match="as many ids"):
    jaxrank.item_popularity([0, 1], [0], num_items=2)


def test_num_items_none_is_an_error_that_names_it():
  # num_items=None used to pass its check (None is a valid cutoff k) and fail later with an
  # unrelated TypeError ("'>=' not supported between 'int' and 'NoneType'").
  calls = [
      lambda n: jaxrank.recommendation_counts([[0, 1]], num_items=n),
      lambda n: jaxrank.item_popularity([0, 1], [0, 1], num_items=n),
      lambda n: jaxrank.personalization([[0, 1], [1, 0]], num_items=n),
      lambda n: jaxrank.coverage([[0, 1]], num_items=n),
      lambda n: jaxrank.gini([[0, 1]], num_items=n),
  ]
  for call in calls:
    with pytest.raises(TypeError, match="num_items must be a positive int, got None"):
      call(None)
    call(2)  # a positive int is accepted
  with pytest.raises(TypeError, match="k must be a positive int, got None"):
    jaxrank.top_k_ids([[0.1, 0.9]], None)


def test_popularity_error_says_what_popularity_is():
  # Not the relevance-label message ("0 = not relevant"): popularity is a count per item.
  for pop in ([1, 2, 0, -1], [1.0, 2.0, 0.0, -1.0]):
    with pytest.raises(ValueError, match=r"item_popularity must be counts >= 0 .*got -1 at item 3"):
      jaxrank.average_recommendation_popularity([[0, 1]], pop)
  with pytest.raises(ValueError, match="item_popularity must be counts >= 0 .*got nan at item 1"):
    jaxrank.novelty([[0]], [1.0, np.nan], 3)
  try:
    jaxrank.novelty([[0]], [1, -1], 3)
  except ValueError as e:
    assert "not relevant" not in str(e)


def test_personalization_rejects_k_below_the_longest_list():
  # An explicit k shorter than a list made the value leave [0, 1] (-2.0 here).
  with pytest.raises(ValueError, match=r"k must be >= the length of the longest list in "
                                       r"ranked_ids \(3 ids\), got 1"):
    jaxrank.personalization([[0, 1, 2], [0, 1, 2]], num_items=3, k=1)
  with pytest.raises(ValueError, match=r"\(2 ids\), got 1"):
    jaxrank.personalization([[0, -1, 2], [-1, -1, 1]], num_items=3, k=1)
  # k equal to or above the longest list is valid and unchanged.
  lists = [[0, 1, 2], [0, 1, -1]]
  assert float(jaxrank.personalization(lists, num_items=3, k=3)) == pytest.approx(
      float(jaxrank.personalization(lists, num_items=3)))
  assert 0 <= float(jaxrank.personalization(lists, num_items=3, k=5)) <= 1
  # Under jit the value cannot be checked: no error is raised.
  jax.jit(lambda x: jaxrank.personalization(x, num_items=3, k=1))(np.array(lists))


def test_novelty_rejects_popularity_above_num_users():
  # phi(i) > N gave a negative novelty (-1.32), outside the documented [0, log2 N].
  with pytest.raises(ValueError, match=r"item_popularity must be <= num_users \(2\).*got 5 at "
                                       r"item 0"):
    jaxrank.novelty([[0]], [5], 2)
  with pytest.raises(ValueError, match=r"<= num_users \(3\).*got 4 at item 2"):
    jaxrank.novelty([[0]], [1, 3, 4], 3)
  assert float(jaxrank.novelty([[0]], [2, 1], 2)[0]) == 0.0  # phi = N: valid, novelty 0


# --------------------------------------------------------------- against Evidently itself
def evidently_report(metric, curr, train=None, recom_type="rank"):
  from evidently.legacy.pipeline.column_mapping import ColumnMapping, RecomType
  from evidently.legacy.report import Report

  report = Report(metrics=[metric])
  mapping = ColumnMapping(recommendations_type=RecomType.RANK if recom_type == "rank"
                          else RecomType.SCORE)
  extra = None if train is None else {"current_train_data": train}
  report.run(reference_data=None, current_data=curr, column_mapping=mapping,
             additional_data=extra)
  return metric.get_result()


def test_against_evidently():
  pytest.importorskip("evidently", reason="Evidently is optional: pip install -e '.[reference]' (Evidently 0.7 needs pandas < 3)",
                      exc_type=ImportError)
  pd = pytest.importorskip("pandas")
  from evidently.legacy import metrics as em

  rng = np.random.default_rng(11)
  users, k, items = 25, 4, 15
  lists = np.stack([rng.permutation(items)[:k] for _ in range(users)])  # full lists
  emb = rng.normal(size=(items, 3)).astype(np.float64)
  target = (rng.random((users, k)) < 0.3).astype(int)
  scores = rng.normal(size=(users, k))
  scores = -np.sort(-scores, axis=1)
  curr = pd.DataFrame({
      "user_id": np.repeat(np.arange(users), k), "item_id": lists.ravel(),
      "prediction": np.tile(np.arange(1, k + 1), users), "target": target.ravel(),
      "f1": emb[lists.ravel(), 0], "f2": emb[lists.ravel(), 1], "f3": emb[lists.ravel(), 2]})
  tu = rng.integers(0, users, 120)
  ti = rng.integers(0, items - 3, 120)  # the last 3 items are unseen in training
  train = pd.DataFrame({"user_id": tu, "item_id": ti, "target": 1, "f1": emb[ti, 0],
                        "f2": emb[ti, 1], "f3": emb[ti, 2]})
  feats = ["f1", "f2", "f3"]

  div = evidently_report(em.DiversityMetric(k=k, item_features=feats), curr)
  got = jaxrank.intra_list_diversity(lists, emb.astype(np.float32), normalize="evidently")
  assert float(np.mean(got)) == pytest.approx(div.current_value, rel=1e-5)

  pers = evidently_report(em.PersonalizationMetric(k=k), curr)
  assert float(jaxrank.personalization(lists, num_items=items)) == pytest.approx(
      pers.current_value, abs=1e-6)

  phi = jaxrank.item_popularity(tu, ti, num_items=items)
  n_train = len(set(tu.tolist()))
  nov = evidently_report(em.NoveltyMetric(k=k), curr, train)
  assert float(jaxrank.mean(jaxrank.novelty(lists, phi, n_train), empty="skip")) == (
      pytest.approx(nov.current_value, rel=1e-5))

  pop = evidently_report(em.PopularityBias(k=k), curr, train)
  arp = jaxrank.average_recommendation_popularity(lists, phi, unseen="skip")
  assert float(jaxrank.mean(arp, empty="skip")) == pytest.approx(pop.current_apr, rel=1e-5)
  assert float(jaxrank.coverage(lists, num_items=items, catalog_mask=phi > 0)) == (
      pytest.approx(pop.current_coverage, rel=1e-6))
  assert float(jaxrank.gini(lists, num_items=items, over="recommended")) == pytest.approx(
      pop.current_gini, rel=1e-5)

  history = np.full((users, 120), -1)
  for u in range(users):
    h = sorted(set(ti[tu == u].tolist()))
    history[u, :len(h)] = h
  relevant = np.where(target > 0, lists, -1)
  # Evidently sums over every training row of the user (duplicates included): compare on
  # deduplicated training data.
  train_dedup = train.drop_duplicates(subset=["user_id", "item_id"])
  ser = evidently_report(em.SerendipityMetric(k=k, item_features=feats), curr, train_dedup)
  got = jaxrank.serendipity(lists, relevant, history, emb.astype(np.float32),
                            normalize="evidently")
  assert float(jaxrank.mean(got, empty="skip")) == pytest.approx(ser.current_value, rel=1e-5)

  curr_scores = curr.assign(prediction=scores.ravel())
  ent = evidently_report(em.ScoreDistribution(k=k), curr_scores, recom_type="score")
  assert float(jaxrank.score_entropy(scores, k=k)) == pytest.approx(ent.current_entropy,
                                                                    rel=1e-5)


def test_plot_bias():
  pytest.importorskip("matplotlib", reason="jaxrank.plot needs the [plot] extra")
  import matplotlib
  matplotlib.use("Agg")
  from jaxrank import plot
  with pytest.raises(ValueError, match="labels must name the 2 categories"):
    plot.plot_bias({"recommended": [0.5, 0.5], "train": [1.0, 0.0]}, labels=["a"])


# ----------------------------------------------------------------------------- properties
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), pad=st.floats(0.0, 0.9))
def test_ranges_and_scale_invariance(seed, pad):
  users, k, items = 8, 5, 12  # fixed shapes: one compilation for every example
  rng = np.random.default_rng(seed)
  lists = np.stack([rng.permutation(items)[:k] for _ in range(users)])
  lists[rng.random(lists.shape) < pad] = -1
  emb = rng.normal(size=(items, 3)).astype(np.float32)
  div = np.asarray(jaxrank.intra_list_diversity(lists, emb))
  assert np.all((div[~np.isnan(div)] >= 0) & (div[~np.isnan(div)] <= 2 + 1e-5))
  scaled = emb * rng.uniform(0.5, 3.0, (items, 1)).astype(np.float32)
  np.testing.assert_allclose(jaxrank.intra_list_diversity(lists, scaled), div, atol=2e-5)
  for value in [jaxrank.personalization(lists, num_items=items),
                jaxrank.gini(lists, num_items=items), jaxrank.coverage(lists, num_items=items)]:
    v = float(value)
    assert np.isnan(v) or -1e-6 <= v <= 1 + 1e-6
  phi = rng.integers(0, 6, items)
  nov = np.asarray(jaxrank.novelty(lists, phi, 6, unseen="max"))
  assert np.all((nov[~np.isnan(nov)] >= -1e-6) & (nov[~np.isnan(nov)] <= np.log2(6) + 1e-5))


def test_top_k_ids_orders_like_the_rank_core():
  # NaN ranks below -inf (as in every metric), padding below NaN, ties by index.
  assert jaxrank.top_k_ids([[np.nan, -np.inf, 0.5]], 3).tolist() == [[2, 1, 0]]
  assert jaxrank.top_k_ids([[0.5, 0.5, np.nan]], 3, where=[[True, False, True]]).tolist() == [
      [0, 2, -1]]
