"""`jaxrank.numpy`: agreement with pytrec_eval and with the JAX API, input forms, errors, and the
number of compilations for a stream of differently sized batches."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxrank
from jaxrank import numpy as jrn
from jaxrank._host import batches, kernels

from trec_runs import PYTREC, random_trec


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_pytrec_eval(seed):
  pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier not installed")
  run, qrels = random_trec(seed)
  ref = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC.values())).evaluate(run)
  ours = jrn.evaluate_run(run, qrels, list(PYTREC), float32=True)
  assert sorted(ours["map"]) == sorted(ref)  # the same queries (qrels and run), no others
  for measure in PYTREC:
    for q in ref:
      assert ours[measure][q] == pytest.approx(ref[q][measure], abs=1e-6), (measure, q)


def test_float32_comparison_reproduces_pytrec_eval_ties():
  pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier not installed")
  run = {"q": {"a": 0.975230282, "b": 0.975230281}}
  qrels = {"q": {"a": 1, "b": 0}}
  ref = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"]
  assert ref == 0.5
  assert jrn.evaluate_run(run, qrels, "recip_rank", float32=True)["recip_rank"]["q"] == 0.5
  assert jrn.evaluate_run(run, qrels, "recip_rank")["recip_rank"]["q"] == 1.0


def test_run_dicts_with_jaxrank_names_and_tie_policies():
  run = {"q1": {"a": 0.5, "b": 0.5, "c": 0.1}, "q2": {"x": 1.0}}
  qrels = {"q1": {"a": 1, "c": 2}, "q2": {"y": 1}}
  out = jrn.evaluate_run(run, qrels, ["mrr", "ndcg@2", "P_2"], reduce=None)
  assert out["mrr"] == {"q1": 0.5, "q2": 0.0}  # trec order: b before a
  avg = jrn.evaluate_run(run, qrels, ["mrr"], ties="average")["mrr"]
  assert avg["q1"] == pytest.approx(0.75)  # a is first or second with probability 1/2
  means = jrn.evaluate_run(run, qrels, ["mrr", "P_2", "num_q"], reduce="mean")
  assert means == {"mrr": 0.25, "P_2": pytest.approx(0.25), "num_q": 2}
  with pytest.raises(ValueError, match="needs an order"):
    jrn.evaluate_run(run, qrels, ["bpref"], ties="average")
  with pytest.raises(ValueError, match="names 9 values"):
    jrn.evaluate_run(run, qrels, ["P"])


@pytest.mark.parametrize("ties", ["average", "optimistic", "pessimistic", "first"])
def test_arrays_and_ragged_lists_match_the_jax_api(ties):
  rng = np.random.default_rng(3)
  scores = (rng.integers(0, 5, (12, 20)) / 4).astype(np.float32)
  labels = rng.integers(0, 4, (12, 20)) * (rng.random((12, 20)) < 0.3)
  where = rng.random((12, 20)) < 0.8
  metrics = ["ndcg@5", "map", "mrr", "p@3", "r@10", "rprec", "hr@2", "mar"]
  expect = jaxrank.evaluate(scores, labels, metrics, where=where, ties=ties)
  got = jrn.evaluate(scores, labels, metrics, where=where, ties=ties)
  ragged_s = [list(map(float, s[w])) for s, w in zip(scores, where)]
  ragged_l = [list(map(int, y[w])) for y, w in zip(labels, where)]
  ragged = jrn.evaluate(ragged_s, ragged_l, metrics, ties=ties)
  for m in metrics:
    assert isinstance(got[m], np.ndarray) and got[m].shape == (12,)
    np.testing.assert_allclose(got[m], np.asarray(expect[m]), atol=1e-6)
    np.testing.assert_allclose(ragged[m], np.asarray(expect[m]), atol=1e-6)
  mean = jrn.evaluate(scores, labels, metrics, where=where, ties=ties, reduce="mean")
  assert isinstance(mean["map"], float) and mean["map"] == pytest.approx(
      float(np.mean(expect["map"])), abs=1e-6)


def test_leading_dimensions_and_empty_policy():
  scores = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
  labels = np.zeros((2, 3, 4))
  labels[0, 0, 1] = 1
  out = jrn.evaluate(scores, labels, ["mrr"], empty="skip")
  assert out["mrr"].shape == (2, 3) and np.isnan(out["mrr"]).sum() == 5
  assert out["mrr"][0, 0] == pytest.approx(1 / 3)
  assert jrn.evaluate(scores, labels, "mrr", empty="skip", reduce="mean")["mrr"] == (
      pytest.approx(1 / 3))


def test_ranked_ids_hand_example_and_keyed_output():
  out = jrn.evaluate_ranked([[7, 3, 5], [1, 2]], [{5, 9}, {4: 2}], ["recall@3", "mrr", "ndcg"])
  np.testing.assert_allclose(out["recall@3"], [0.5, 0.0])
  np.testing.assert_allclose(out["mrr"], [1 / 3, 0.0], rtol=1e-6)
  # ndcg of the first user: DCG 1/log2(4) = 0.5, ideal 1 + 1/log2(3)
  np.testing.assert_allclose(out["ndcg"], [0.5 / (1 + 1 / np.log2(3)), 0.0], rtol=1e-6)
  keyed = jrn.evaluate_ranked({"u1": ["a", "b"], "u2": ["c"]}, {"u1": ["b"], "u3": ["z"]},
                              ["mrr"], empty="nan")
  assert list(keyed["mrr"]) == ["u1", "u2", "u3"]
  assert keyed["mrr"]["u1"] == 0.5 and np.isnan(keyed["mrr"]["u2"]) and keyed["mrr"]["u3"] == 0


def test_ranked_ids_match_the_core_constructor():
  rng = np.random.default_rng(4)
  rec = [list(rng.choice(40, size=rng.integers(0, 15), replace=False)) for _ in range(30)]
  rel = [list(rng.choice(40, size=rng.integers(0, 6), replace=False)) for _ in range(30)]
  ranked = np.full((30, 15), -1)
  relevant = np.full((30, 6), -1)
  for i, (a, b) in enumerate(zip(rec, rel)):
    ranked[i, :len(a)], relevant[i, :len(b)] = a, b
  ranks = jaxrank.from_ranked_ids(ranked, relevant)
  metrics = ["ndcg@5", "map", "mrr", "p@5", "r@5", "rprec", "fbeta"]
  expect = jaxrank.evaluate(ranks, None, metrics)
  got = jrn.evaluate_ranked(rec, rel, metrics)
  for m in metrics:
    np.testing.assert_allclose(got[m], np.asarray(expect[m]), atol=1e-6, err_msg=m)


@pytest.mark.parametrize("call, error, message", [
    (lambda: jrn.evaluate([[0.1, 0.2]], [[1, -1]]), ValueError, "list 0, item 1: grades must"),
    (lambda: jrn.evaluate([[0.1, 0.2], [0.3]], [[1, 0], [1, 1]]), ValueError,
     "list 1: scores has 1 items but labels has 2"),
    (lambda: jrn.evaluate(np.zeros((2, 3)), np.zeros((2, 4))), ValueError, "shape of scores"),
    (lambda: jrn.evaluate([[0.1]], [[1]], ["nope"]), ValueError, "unknown metric 'nope'"),
    (lambda: jrn.evaluate_ranked({"ann": [1, 2, 1]}, {"ann": [1]}), ValueError,
     "recommended for user 'ann' repeats item 1"),
    (lambda: jrn.evaluate_ranked([[1, "a"]], [[1]]), TypeError, "all be ints or all be strings"),
    (lambda: jrn.evaluate_ranked([[1]], [{1: -2}]), ValueError,
     "relevant for user 0: the grade of item 1 must be a number >= 0"),
    (lambda: jrn.evaluate_ranked([[1]], [[1], [2]]), ValueError, "1 users but relevant has 2"),
    (lambda: jrn.evaluate_run({"q": {"a": 1.0}}, {"q": {"a": 1.5}}), ValueError,
     r"qrels\['q'\]\['a'\] must be an integer grade"),
    (lambda: jrn.evaluate_run({"q": {"a": 1.0}}, {"q": {"a": 1}}, ["yaap"]), ValueError,
     "does not compute"),
    (lambda: jrn.evaluate([[0.5, 0.5]], [[0, 1]], ["mrr"], ties="trec"), ValueError,
     "ties must be one of .* got 'trec' .*use evaluate_run"),
    (lambda: jrn.evaluate_ranked([[1, -3]], [[1]]), ValueError,
     r"recommended for user 0: item ids must be >= 0 \(-1 is padding\), got -3"),
    (lambda: jrn.evaluate_ranked({"a": [1]}, {"a": {-2: 1}}), ValueError,
     "relevant for user 'a': item ids must be >= 0"),
    (lambda: jrn.evaluate_run({"q": {"a": float("nan")}}, {"q": {"a": 1}}), ValueError,
     r"run\['q'\]\['a'\] must be a number \(the score\), not NaN"),
    (lambda: jrn.evaluate_run({"q": {"a": 1.0}}, {"q": {"a": 1}}, ["relstring"], reduce="mean"),
     ValueError, r"cannot average .*\(relstring\)"),
])
def test_input_errors_name_the_list_user_or_query(call, error, message):
  with pytest.raises(error, match=message):
    call()


def test_minus_one_pads_numpy_rows_of_ids():
  rec = np.array([[5, 3, -1], [7, 8, -1], [-1, -1, -1]])
  rel = np.array([[3, -1], [8, -1], [2, -1]])
  metrics = ["precision@3", "map", "ndcg@3", "recall@3"]
  expect = jaxrank.evaluate(jaxrank.from_ranked_ids(rec, rel), None, metrics)
  got = jrn.evaluate_ranked(list(rec), list(rel), metrics)
  for m in metrics:
    np.testing.assert_allclose(got[m], np.asarray(expect[m]), atol=1e-7, err_msg=m)


def test_printed_names_with_a_decimal_point():
  run, qrels = random_trec(3)
  printed = jrn.evaluate_run(run, qrels, ["iprec_at_recall_0.50", "Rprec_mult_0.20", "set_F_0.5"])
  dotted = jrn.evaluate_run(run, qrels, ["iprec_at_recall..5", "Rprec_mult.0.2", "set_F.0.5"])
  assert printed["iprec_at_recall_0.50"] == dotted["iprec_at_recall..5"]
  assert printed["Rprec_mult_0.20"] == dotted["Rprec_mult.0.2"]
  assert printed["set_F_0.5"] == dotted["set_F.0.5"]
  assert printed["set_F_0.5"] != jrn.evaluate_run(run, qrels, ["set_F"])["set_F"]  # beta 1


def test_a_stream_of_batch_sizes_compiles_a_handful_of_times(monkeypatch):
  from jax._src import dispatch, monitoring

  monkeypatch.setenv("JAXRANK_SCORING", "jax")  # the compiled kernel (small inputs: NumPy)
  compiles = []

  def listener(event, duration, **kwargs):
    if event == dispatch.BACKEND_COMPILE_EVENT:
      compiles.append(event)

  monitoring.register_event_duration_secs_listener(listener)
  firsts = []
  try:
    rng = np.random.default_rng(5)
    metrics = ["ndcg@10", "map", "mrr", "recall@20"]  # a metric set no other test compiles
    for b in range(50):  # 50 distinct batch sizes, 10 to 255 users
      users = 10 + 5 * b
      rec = [list(rng.choice(500, size=rng.integers(1, 51), replace=False))
             for _ in range(users)]
      rel = [list(rng.choice(500, size=rng.integers(1, 6), replace=False)) for _ in range(users)]
      out = jrn.evaluate_ranked(rec, rel, metrics)
      assert out["map"].shape == (users,)
      firsts.append((rec[0], rel[0], {m: out[m][0] for m in metrics}))
  finally:
    monitoring.unregister_event_duration_listener(listener)
  for rec, rel, values in firsts[::10]:  # padding changes nothing: a user alone, same values
    alone = jrn.evaluate_ranked([rec], [rel], metrics)
    assert all(alone[m][0] == pytest.approx(values[m], abs=1e-7) for m in metrics)
  assert 1 <= len(compiles) <= 8


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=12),
                min_size=1, max_size=9))
def test_a_batch_equals_its_lists_one_by_one(rows):
  """Padding and bucketing never change a value: each list alone gives the same numbers."""
  scores = [[s / 2 for s, _ in row] for row in rows]  # coarse scores: many ties
  labels = [[y for _, y in row] for row in rows]
  metrics = ["ndcg@3", "map", "mrr", "p@2", "r@4"]
  batch = jrn.evaluate(scores, labels, metrics)
  for i in range(len(rows)):
    alone = jrn.evaluate(scores[i:i + 1], labels[i:i + 1], metrics)
    for m in metrics:
      assert batch[m][i] == pytest.approx(alone[m][0], abs=1e-6)


def test_scores_compare_as_given_float32_directly_float64_exactly():
  # float64 scores 1e-9 apart are distinct here (host keys); the JAX API ties them in float32.
  s64, y = np.array([[1.0, 1 + 1e-9, 0.5]]), np.array([[1, 0, 0]])
  assert jrn.evaluate(s64, y, ["mrr"])["mrr"].tolist() == [0.5]
  assert float(jaxrank.evaluate(s64, y, ["mrr"])["mrr"][0]) == 0.75
  # float32 scores (ties, NaN) go to the kernel as they are and equal the JAX API.
  s32 = np.array([[0.5, 0.5, np.nan, 0.25, 0.5]], np.float32)
  y = np.array([[0, 1, 1, 0, 2]])
  for ties in ("average", "optimistic", "pessimistic", "first"):
    got = jrn.evaluate(s32, y, ["map", "ndcg@2", "mrr"], ties=ties)
    want = jaxrank.evaluate(s32, y, ["map", "ndcg@2", "mrr"], ties=ties)
    for m in got:
      np.testing.assert_allclose(got[m], np.asarray(want[m]), atol=1e-6, err_msg=(ties, m))


# ----------------------------------------------------------------------------------------------
# Ranked ids in every input form (issue 10, items 7 and 22).

RANKED = [[7, 3, 5, 11], [1, 2], [], [4, 9, 8]]
RELEVANT = [{5: 1, 9: 2}, {4: 2}, {6: 1}, {8: 3, 4: 1, 2: 0}]
RANKED_METRICS = ["ndcg@3", "ndcg", "map", "mrr", "p@2", "r@3", "rprec", "fbeta", "mar", "mr",
                  "hr@1", "dcg@2"]


def _padded(rows, width, fill=-1, dtype=np.int64):
  out = np.full((len(rows), width), fill, dtype)
  for i, row in enumerate(rows):
    out[i, :len(row)] = row
  return out


def _ranked_forms():
  """(name, recommended, relevant, relevant_grades, keys) in every documented form."""
  import jax.numpy as jnp
  ids = [list(r) for r in RELEVANT]
  grades = [list(r.values()) for r in RELEVANT]
  rec2d = _padded(RANKED, 5)
  rel2d, g2d = _padded(ids, 4), _padded(grades, 4, 0, np.float32)
  users = ["ann", "bob", "cy", "dee"]
  yield "lists, dicts", RANKED, RELEVANT, None, None
  yield "tuples, tuples+grades", tuple(map(tuple, RANKED)), tuple(map(tuple, ids)), grades, None
  for dt in (np.int32, np.int64, np.uint16):
    pad = -1 if np.dtype(dt).kind == "i" else None
    if pad is None:  # unsigned rows have no -1: ragged rows as a list of 1-D arrays instead
      yield ("list of uint16 rows", [np.array(r, dt) for r in RANKED],
             [np.array(r, dt) for r in ids], grades, None)
      continue
    yield f"2-D {np.dtype(dt).name}", rec2d.astype(dt), rel2d.astype(dt), g2d, None
  yield "JAX arrays", jnp.asarray(rec2d, jnp.int32), jnp.asarray(rel2d, jnp.int32), \
      jnp.asarray(g2d), None
  yield "rows of JAX arrays", [jnp.asarray(r, jnp.int32) for r in RANKED], RELEVANT, None, None
  yield "2-D array, list of dicts", rec2d, RELEVANT, None, None
  yield "dicts", dict(zip(users, RANKED)), dict(zip(users, RELEVANT)), None, users
  yield "string ids", [[f"i{v}" for v in r] for r in RANKED], \
      [{f"i{k}": g for k, g in r.items()} for r in RELEVANT], None, None


@pytest.mark.parametrize("form", list(_ranked_forms()), ids=lambda f: f[0])
def test_every_form_of_ranked_ids_gives_the_same_values(form):
  name, rec, rel, grades, keys = form
  rec2d = _padded(RANKED, 5)
  rel2d = _padded([list(r) for r in RELEVANT], 4)
  g2d = _padded([list(r.values()) for r in RELEVANT], 4, 0, np.float32)
  expect = jaxrank.evaluate(jaxrank.from_ranked_ids(rec2d, rel2d, g2d), None, RANKED_METRICS)
  got = jrn.evaluate_ranked(rec, rel, RANKED_METRICS, relevant_grades=grades)
  for m in RANKED_METRICS:
    values = np.array(list(got[m].values())) if keys else got[m]
    if keys:
      assert list(got[m]) == keys
    np.testing.assert_allclose(values, np.asarray(expect[m]), rtol=1e-6, err_msg=(name, m))


def test_top_k_ids_output_goes_straight_into_evaluate_ranked():
  scores = np.array([[0.1, 0.9, 0.5, 0.7], [0.3, 0.2, 0.8, 0.1]], np.float32)
  top = jaxrank.top_k_ids(scores, 2)
  out = jrn.evaluate_ranked(top, [[3], [0, 1]], ["recall@2", "mrr"])
  np.testing.assert_allclose(out["recall@2"], [1.0, 0.5])  # top 2: [1, 3] and [2, 0]
  np.testing.assert_allclose(out["mrr"], [0.5, 0.5])


def test_ids_that_differ_by_a_trailing_nul_are_different_ids():
  out = jrn.evaluate_ranked([["a\x00", "b"]], [["a"]], ["mrr", "recall@2"])
  assert out["mrr"].tolist() == [0.0] and out["recall@2"].tolist() == [0.0]
  out = jrn.evaluate_ranked([["b", "a"]], [["a\x00", "a"]], ["recall@2"])
  assert out["recall@2"].tolist() == [0.5]


# ----------------------------------------------------------------------------------------------
# float64 values (issue 10, item 5).


def test_values_are_float64_exact():
  """recall@3 = 1/3 must be the double 1/3, not float32's 0.3333333432674408."""
  rec, rel = [[1, 2, 3], [4, 5, 6, 7, 8, 9, 10]], [[1, 5, 6], [5, 6, 7, 8, 9, 10, 11]]
  out = jrn.evaluate_ranked(rec, rel, ["recall@3", "rprec", "p@3", "map", "mar", "hr@3"])
  assert out["recall@3"].tolist() == [1 / 3, 2 / 7]
  assert out["rprec"].tolist() == [1 / 3, 6 / 7]
  assert out["p@3"].tolist() == [1 / 3, 2 / 3]
  for values in out.values():
    assert values.dtype == np.float64
  scores, labels = [[3.0, 2.0, 1.0, 0.5, 0.25, 0.0, -1.0]], [[1, 0, 0, 1, 1, 1, 1]]
  got = jrn.evaluate(scores, labels, ["recall@3", "rprec", "r@5", "mrr"])
  assert got["recall@3"].tolist() == [1 / 5] and got["rprec"].tolist() == [3 / 5]
  assert got["r@5"].tolist() == [3 / 5] and got["mrr"].tolist() == [1.0]
  ties = jrn.evaluate([[1.0, 1.0, 1.0]], [[1, 0, 0]], ["r@1", "hr@1"])  # a 1/3 expectation
  assert ties["r@1"].tolist() == [1 / 3] and ties["hr@1"].tolist() == [1 / 3]


# ----------------------------------------------------------------------------------------------
# Users and queries in common (issue 10, item 8).


def test_keyed_inputs_that_share_no_user_are_an_error():
  with pytest.raises(ValueError, match="share no user.*recommended has 'ann'.*relevant has 'bo"):
    jrn.evaluate_ranked({"ann": [1, 2]}, {"bob": [1]})
  with pytest.raises(ValueError, match="no users"):
    jrn.evaluate_ranked({}, {})
  with pytest.raises(ValueError, match="no users"):
    jrn.evaluate_ranked([], [], reduce="mean")
  # one user in common is enough: the others follow the empty policy
  out = jrn.evaluate_ranked({"ann": [1], "cy": [3]}, {"ann": [1], "bob": [2]}, "mrr")
  assert out["mrr"] == {"ann": 1.0, "cy": 0.0, "bob": 0.0}


# ----------------------------------------------------------------------------------------------
# Scores of every dtype (issue 10, items 1 and 21: jaxrank.numpy compares scores on the host).

SCORE_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                np.float16, np.float32, np.float64, np.bool_]


def _dtype_scores(dt):
  info = np.iinfo(dt) if np.dtype(dt).kind in "iu" else None
  if np.dtype(dt) == np.bool_:
    return np.array([[True, False, True, False, False]])
  if info is None:
    return np.array([[1.5, -2.0, 1.5, 0.0, 3.0e3]], dt)
  lo, hi = int(info.min), int(info.max)
  return np.array([[hi, lo, hi - 1, lo + 1, 0 if lo < 0 else 5]], dt)


DTYPE_METRICS = ["mrr", "map", "ndcg@2"]


@pytest.mark.parametrize("dt", SCORE_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("ties", ["average", "first"])  # every policy: the host ranks test
def test_every_score_dtype_ranks_like_its_float64_value(dt, ties):
  scores = _dtype_scores(dt)
  labels = np.array([[0, 1, 2, 0, 1]])
  metrics = DTYPE_METRICS
  as_float = scores.astype(np.float64)
  if np.dtype(dt) in (np.int64, np.uint64):  # beyond float64's 53 bits: compare exactly
    order = np.argsort(-scores[0].astype(object), kind="stable")
    as_float = np.empty((1, 5))
    as_float[0, order] = -np.arange(5.0)
  want = jrn.evaluate(as_float, labels, metrics, ties=ties)
  got = jrn.evaluate(scores, labels, metrics, ties=ties)
  ragged = jrn.evaluate([list(scores[0])], labels.tolist(), metrics, ties=ties)
  for m in metrics:
    np.testing.assert_array_equal(got[m], want[m], err_msg=m)
    np.testing.assert_array_equal(ragged[m], want[m], err_msg=m)


def test_wide_integer_scores_keep_their_order():
  # 2**32 vs 5 (issue item 21), 2**53 + 1 vs 2**53 (float64 would tie them), uint64 near 2**64
  for row, relevant in (([2**32, 5], 0), ([2**53, 2**53 + 1], 1), ([2**63 - 1, 2**63 - 2], 0)):
    got = jrn.evaluate(np.array([row], np.int64), [[int(i == relevant) for i in range(2)]], "mrr")
    assert got["mrr"].tolist() == [1.0], row
  got = jrn.evaluate(np.array([[2**64 - 1, 2**64 - 2]], np.uint64), [[0, 1]], "mrr")
  assert got["mrr"].tolist() == [0.5]


@pytest.mark.parametrize("dt", [d for d in SCORE_DTYPES if d is not np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_every_score_dtype_agrees_with_the_jax_api(dt):
  """Needs the core's sort_keys fix for narrow and unsigned integers (issue 10, item 1)."""
  scores = _dtype_scores(dt)
  if np.dtype(dt).itemsize == 8 and np.dtype(dt).kind in "iu":
    scores = np.array([[2**31 + 7, 3, 2**31 + 5, 0, 2**31]], dt)  # beyond int32, within 2**53
  labels = np.array([[0, 1, 2, 0, 1]])
  for ties in ("average", "first"):
    want = jaxrank.evaluate(scores, labels, DTYPE_METRICS, ties=ties)
    got = jrn.evaluate(scores, labels, DTYPE_METRICS, ties=ties)
    for m in got:
      np.testing.assert_allclose(got[m], np.asarray(want[m]), rtol=1e-6, err_msg=(ties, m))


# ----------------------------------------------------------------------------------------------
# Ranks found on the host (lists with many relevant items) equal the kernel's and the reference
# (issue 10, item 19).

# One metric of each formula family that reads ranks differently (compile time is per metric).
ALL_METRICS = ["precision@2", "recall@3", "hit_rate@1", "mrr", "map@3", "average_recall",
               "ndcg@2", "mean_rank"]
TIES = ["average", "first", "optimistic", "pessimistic"]
SCORES = [0.0, -0.0, 0.5, 1.0, -1.0, 0.1, 1 / 3, float("nan"), float("inf"), float("-inf")]


@st.composite
def ragged_batches(draw):
  rows = draw(st.lists(st.lists(st.tuples(st.sampled_from(SCORES), st.integers(0, 3)),
                                max_size=7), min_size=1, max_size=5))
  return [[s for s, _ in row] for row in rows], [[y for _, y in row] for row in rows]


@settings(max_examples=25, deadline=None)
@given(ragged_batches(), st.sampled_from(TIES))
def test_host_ranks_equal_the_kernel_and_the_reference(batch, ties):
  """_KERNEL_MAX_SLOTS = 0 sends every list to the host ranks, 2 splits a batch between both."""
  from reference import reference
  scores, labels = batch
  kernel = jrn.evaluate(scores, labels, ALL_METRICS, ties=ties)
  for cut in (0, 2):
    with pytest.MonkeyPatch.context() as mp:
      mp.setattr(kernels, "_KERNEL_MAX_SLOTS", cut)
      host = jrn.evaluate(scores, labels, ALL_METRICS, ties=ties)
    for m in ALL_METRICS:
      np.testing.assert_allclose(host[m], kernel[m], rtol=1e-12, atol=1e-12, err_msg=(cut, m))
  for m in ALL_METRICS:
    name, k = jaxrank.parse_metric(m)
    want = [reference(name, [s], [y], ties=ties, k=k)[0] for s, y in zip(scores, labels)]
    np.testing.assert_allclose(kernel[m], want, rtol=1e-9, atol=1e-12, err_msg=m)


def test_one_long_list_beside_many_short_ones_is_padded_alone():
  rng = np.random.default_rng(6)
  scores = [list(rng.random(5)) for _ in range(300)] + [list(rng.random(30_000))]
  labels = [list(rng.integers(0, 2, 5)) for _ in range(300)] + [list(rng.integers(0, 2, 30_000))]
  batch = jrn.evaluate(scores, labels, ["map", "ndcg@10"])
  for i in (0, 299, 300):
    alone = jrn.evaluate(scores[i:i + 1], labels[i:i + 1], ["map", "ndcg@10"])
    assert batch["map"][i] == alone["map"][0] and batch["ndcg@10"][i] == alone["ndcg@10"][0]
  width = np.array([8] * 300 + [32768])
  order, calls = batches.shape_calls(width, np.full(301, 8), budget=1 << 22, floor=1 << 12)
  assert [(stop - start, rows, w) for start, stop, rows, w, _ in calls] == [
      (300, 512, 8), (1, 1, 32768)]  # not 301 rows of 32,768


def test_one_long_list_with_many_relevant_items_costs_what_it_costs_alone():
  """1 list x 100,000 items, half of them relevant, every tie policy: was padded to 64 lists
  and compared every item with every relevant one (minutes); now host work in O(n log r)."""
  import time
  rng = np.random.default_rng(7)
  n = 100_000
  scores = np.round(rng.random((1, n)), 3)  # many ties
  labels = rng.integers(0, 2, (1, n)) * rng.integers(1, 4, (1, n))
  metrics = ["ndcg@10", "map", "mrr", "r@1000", "rprec"]
  start = time.perf_counter()
  got = {ties: jrn.evaluate(scores, labels, metrics, ties=ties) for ties in TIES}
  assert time.perf_counter() - start < 30  # two compilations and four sub-second runs
  want = jaxrank.evaluate(scores.astype(np.float32), labels, metrics, method="sort")
  for m in metrics:
    np.testing.assert_allclose(got["average"][m], np.asarray(want[m]), rtol=2e-5, err_msg=m)
    lo, hi = got["pessimistic"][m][0], got["optimistic"][m][0]
    assert lo <= got["average"][m][0] <= hi and lo <= got["first"][m][0] <= hi, m


@pytest.mark.parametrize("names", [["P.1", "P.2"], ["ndcg_cut.1", "ndcg_cut.3"],
                                   ["recall.5", "recall.10"], ["success.1", "success.5"],
                                   ["map_cut.2", "map_cut.3"], ["relstring.2", "relstring.3"],
                                   ["iprec_at_recall.0.5", "iprec_at_recall.1.0"]])
def test_evaluate_run_keeps_every_parameter_of_one_measure(names):
  # trec_eval's "first -m NAME.params wins" is the command line's rule; a list of names in the
  # Python API asks for each of them (P.2 raised KeyError: 'P_2').
  run = {"q": {"a": 0.9, "b": 0.8, "c": 0.7}}
  qrels = {"q": {"a": 0, "b": 1, "c": 2}}
  both = jrn.evaluate_run(run, qrels, names)
  for name in names:
    assert both[name] == jrn.evaluate_run(run, qrels, [name])[name]


def test_evaluate_ranked_does_not_depend_on_the_order_of_the_relevant_ids():
  # Each list's slots are put in one canonical order before the sums, so permuting the
  # relevant ids changes no bit (5 distinct last-ulp values from 6 permutations before).
  import itertools
  ranked = [[7, 3, 9, 1, 4, 8, 2]]
  grades = {9: 3, 1: 1, 8: 2}
  seen = set()
  for perm in itertools.permutations(grades):
    out = jrn.evaluate_ranked(ranked, [{i: grades[i] for i in perm}],
                              ["ndcg", "map", "ndcg@5", "average_recall"])
    seen.add(tuple(float(v[0]) for v in out.values()))
  assert len(seen) == 1, seen


def _random_ranked(rng, users=60, items=40):
  """Ragged top lists (some -1 padding inside) and graded relevant dicts, some users empty."""
  rec, rel = [], []
  for _ in range(users):
    k = int(rng.integers(0, 12))
    row = rng.permutation(items)[:k].tolist()
    if k and rng.random() < 0.2:
      row.insert(int(rng.integers(0, k)), -1)
    rec.append(row)
    r = int(rng.integers(0, 6))
    rel.append({int(i): int(rng.integers(0, 4)) for i in rng.permutation(items)[:r]})
  return rec, rel


def test_evaluate_ranked_routes_agree_on_random_lists():
  # Three routes: padded 2-D arrays (the jitted kernel), the same lists too uneven to pad (the
  # host path), and string ids (coded on the host). All must give the same values.
  rng = np.random.default_rng(7)
  metrics = ["ndcg@5", "ndcg", "map", "mrr", "precision@3", "recall@10", "r_precision"]
  rec, rel = _random_ranked(rng)
  fast = jrn.evaluate_ranked(rec, rel, metrics)
  uneven_rec = rec + [list(range(100, 5100))]  # one long list: padding would be 50x
  uneven = jrn.evaluate_ranked(uneven_rec, rel + [{}], metrics)
  strings = jrn.evaluate_ranked([[f"d{i}" for i in r if i >= 0] for r in rec],
                                [{f"d{i}": g for i, g in r.items()} for r in rel], metrics)
  width = max(map(len, rec))
  arr = np.array([r + [-1] * (width - len(r)) for r in rec])
  rel_ids = [list(r) + [-1] * (5 - len(r)) for r in rel]
  rel_grades = [list(r.values()) + [0] * (5 - len(r)) for r in rel]
  arrays = jrn.evaluate_ranked(arr, np.array(rel_ids), metrics,
                               relevant_grades=np.array(rel_grades))
  for m in metrics:
    np.testing.assert_allclose(uneven[m][:-1], fast[m], rtol=1e-12, atol=0, err_msg=m)
    np.testing.assert_allclose(strings[m], fast[m], rtol=1e-12, atol=0, err_msg=m)
    np.testing.assert_allclose(arrays[m], fast[m], rtol=1e-12, atol=0, err_msg=m)
  ref = jaxrank.evaluate(jaxrank.from_ranked_ids(arr, np.array(rel_ids), np.array(rel_grades)),
                         metrics)
  for m in metrics:
    np.testing.assert_allclose(fast[m], np.asarray(ref[m]), rtol=1e-5, err_msg=m)


def test_evaluate_ranked_arrays_with_large_ids_or_repeats_take_the_general_path():
  small = jrn.evaluate_ranked(np.array([[3, 1, 2], [5, 4, -1]]), np.array([[1, -1], [4, 9]]),
                              ["mrr", "recall@2"])
  big = 2**40
  large = jrn.evaluate_ranked(np.array([[big + 3, big + 1, big + 2], [big + 5, big + 4, -1]]),
                              np.array([[big + 1, -1], [big + 4, big + 9]]), ["mrr", "recall@2"])
  for m in small:
    np.testing.assert_array_equal(large[m], small[m])
  with pytest.raises(ValueError, match=r"recommended for user 1 repeats item 4"):
    jrn.evaluate_ranked(np.array([[3, 1, 2], [4, 4, -1]]), np.array([[1], [4]]), ["mrr"])
  with pytest.raises(ValueError, match=r"relevant for user 0 repeats item 1"):
    jrn.evaluate_ranked(np.array([[3, 1, 2]]), np.array([[1, 1]]), ["mrr"])
  with pytest.raises(ValueError, match=r"grade of item 1 must be a number >= 0"):
    jrn.evaluate_ranked(np.array([[3, 1, 2]]), np.array([[1]]), ["mrr"],
                        relevant_grades=np.array([[np.nan]]))


def test_tied_scores_order_long_and_unicode_ids_like_pytrec_eval():
  # Ties are broken by doc id descending in byte order (strcmp): ids longer than one 8-byte
  # word, sharing prefixes, one a prefix of another, non-ASCII; only the tied ids are compared.
  pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier not installed")
  rng = np.random.default_rng(3)
  stems = ["clueweb12-0000tw-00-0", "clueweb12-0000tw-00-", "città-è-", "z", "ab\u00e9"]
  run, qrels = {}, {}
  for q in range(12):
    names = [f"{stems[j % 5]}{j}" for j in rng.choice(300, 60, replace=False)]
    run[f"q{q}"] = {d: float(rng.integers(0, 3)) for d in names}
    qrels[f"q{q}"] = {d: int(rng.integers(0, 3)) for d in rng.choice(names, 25, replace=False)}
  measures = ["map", "recip_rank", "P_5", "ndcg_cut_10", "bpref"]
  ref = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recip_rank", "P", "ndcg_cut",
                                               "bpref"}).evaluate(run)
  ours = jrn.evaluate_run(run, qrels, measures)
  for m in measures:
    for q in ref:
      assert ours[m][q] == pytest.approx(ref[q][m], abs=1e-12), (m, q)


@pytest.mark.parametrize("dtype,ties", [(np.float32, t) for t in TIES] + [
    (np.float64, "average"), (np.int16, "first"), (np.int64, "average"),
    (np.float16, "pessimistic")])
def test_rectangular_arrays_take_the_dense_kernel_and_agree_with_the_general_path(ties, dtype):
  # Arrays go straight to the dense kernel; the same data as lists of lists takes the flat
  # path (and arrays with a subnormal score the general path too). All must agree.
  rng = np.random.default_rng(11)
  scores = rng.integers(-3, 4, (3, 7, 12)).astype(dtype)  # heavy ties
  labels = rng.integers(0, 4, (3, 7, 12)) * (rng.random((3, 7, 12)) < 0.4)
  labels[0, 0] = 0  # a list without relevant items
  where = rng.random((3, 7, 12)) < 0.85
  metrics = ["ndcg@5", "ndcg", "map", "mrr", "precision@3", "recall@10", "r_precision"]
  fast = jrn.evaluate(scores, labels, metrics, ties=ties, where=where)
  general = jrn.evaluate(scores.tolist(), labels.tolist(), metrics, ties=ties)
  masked = jrn.evaluate([[v for v, w in zip(r, m) if w] for r, m in
                         zip(scores.reshape(-1, 12).tolist(), where.reshape(-1, 12))],
                        [[v for v, w in zip(r, m) if w] for r, m in
                         zip(labels.reshape(-1, 12).tolist(), where.reshape(-1, 12))],
                        metrics, ties=ties)
  nomask = jrn.evaluate(scores, labels, metrics, ties=ties)
  for m in metrics:
    assert fast[m].shape == (3, 7)
    np.testing.assert_allclose(nomask[m].reshape(-1), np.asarray(general[m]).reshape(-1),
                               rtol=1e-12, atol=0, err_msg=m)
    np.testing.assert_allclose(fast[m].reshape(-1), masked[m], rtol=1e-12, atol=0, err_msg=m)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_a_subnormal_score_anywhere_is_found(dtype):
  # The check reads the scores in blocks: a subnormal in any block, the last one partial, counts.
  from jaxrank.numpy import _arrays
  tiny = np.finfo(dtype).tiny
  x = np.random.default_rng(0).standard_normal((3, 70_000)).astype(dtype)
  x[np.abs(x) < tiny] = 0.0
  x[0, :5] = [0.0, -0.0, np.inf, -np.inf, tiny]
  assert not _arrays._any_subnormal(x)
  for at in (0, 65_535, 65_536, 140_000, x.size - 1):
    y = x.copy()
    y.reshape(-1)[at] = -tiny / 2
    assert _arrays._any_subnormal(y), at
    assert _arrays._any_subnormal(y, step=1000), at


def test_rectangular_arrays_in_several_padded_calls_agree_with_the_general_path(monkeypatch):
  # Small calls (rows padded to a power of two; the last call padded, the others views), all
  # dispatched before they are read, against the lists' path; a subnormal score in the last
  # list sends the arrays to the general path, which must agree too.
  monkeypatch.setattr(batches, "ITEMS_PER_CALL", 4096)
  rng = np.random.default_rng(3)
  scores = rng.integers(-5, 6, (55, 300)).astype(np.float32)
  labels = rng.integers(0, 4, (55, 300)) * (rng.random((55, 300)) < 0.05)
  metrics = ["ndcg@10", "map", "mrr", "recall@20"]
  calls = []
  inner = kernels._dense_kernel
  monkeypatch.setattr(kernels, "_dense_kernel",
                      lambda *a, **k: calls.append(a[0].shape[0]) or inner(*a, **k))
  fast = jrn.evaluate(scores, labels, metrics)
  assert len(calls) > 2 and calls[-1] > 55 - sum(calls[:-1])  # the last call is padded
  general = jrn.evaluate(scores.tolist(), labels.tolist(), metrics)
  sub = scores.copy()
  sub[-1, -1] = np.finfo(np.float32).tiny / 4
  calls.clear()
  routed = jrn.evaluate(sub, labels, metrics)
  assert not calls
  general_sub = jrn.evaluate(sub.tolist(), labels.tolist(), metrics)
  for m in metrics:
    np.testing.assert_allclose(fast[m], general[m], rtol=1e-12, atol=0, err_msg=m)
    np.testing.assert_allclose(routed[m], general_sub[m], rtol=1e-12, atol=0, err_msg=m)
