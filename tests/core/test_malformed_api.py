"""Malformed and hostile input to the JAX API, walked as a table (issue 10, items 20-22).

Each row is (description, call, exception type, regex of the one-line message). Every message
names the argument and what was expected; none may leak an internal (a JAX/NumPy conversion
error, a Python TypeError about iteration, an OverflowError from a jitted argument). A second
table holds hostile inputs that are valid and must give the right number, and the last tests
check item 2 (pessimistic ties and unranked relevant items) through the NumPy and CLI doors.
"""

import decimal
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrank
from jaxrank import linkpred

S = np.array([[0.3, 0.2, 0.1]], np.float32)
Y = np.array([[1, 0, 1]])
R = jaxrank.from_dense(S, Y)
P, C = [0.5], [[0.9, 0.5, 0.1]]
UNRANKED = jaxrank.from_sparse(np.zeros((1, 4), np.float32), [[1]], where=[[True, False, True, True]])
RAGGED = r"must be a rectangular array, got a ragged nested list .*use where= \(padding\) or " \
         r"jaxrank.numpy for ragged lists"
OBJECT = r"must hold numbers, got \w+ that makes an object array"
BIG = 10**30

ERRORS = [
    # --- scores, labels, where of the dense metrics and evaluate (items 20, 22)
    ("scores None", lambda: jaxrank.ndcg(None, Y), TypeError, r"^scores must be an array, got None$"),
    ("scores ragged", lambda: jaxrank.ndcg([[1, 2], [3]], [[1, 0], [1]]), ValueError, "scores " + RAGGED),
    ("scores object array with None", lambda: jaxrank.ndcg(np.array([[1, None, 2]]), Y), TypeError, "scores " + OBJECT),
    ("scores list with None", lambda: jaxrank.evaluate([[1, None, 2]], Y, ["map"]), TypeError, "scores " + OBJECT),
    ("scores strings", lambda: jaxrank.ndcg([["a", "b", "c"]], Y), TypeError, r"scores must have a floating or integer dtype, got <U1"),
    ("scores a string", lambda: jaxrank.ndcg("abc", Y), TypeError, r"scores must have a floating or integer dtype, got <U3"),
    ("scores a dict", lambda: jaxrank.ndcg({"a": 1}, Y), TypeError, "scores " + OBJECT),
    ("scores a set", lambda: jaxrank.ndcg({1, 2, 3}, Y), TypeError, "scores " + OBJECT),
    ("scores a generator", lambda: jaxrank.ndcg((x for x in [1, 2, 3]), Y), TypeError, "scores " + OBJECT),
    ("scores Decimals", lambda: jaxrank.ndcg([[decimal.Decimal(1)] * 3], Y), TypeError, "scores " + OBJECT),
    ("scores complex", lambda: jaxrank.ndcg(np.array([[1j, 0, 0]]), Y), TypeError, r"scores must have a floating or integer dtype, got complex"),
    ("scores datetime64", lambda: jaxrank.ndcg(np.zeros((1, 3), "datetime64[D]"), Y), TypeError, r"scores must have a floating or integer dtype, got datetime64"),
    ("scores bytes", lambda: jaxrank.ndcg(b"abc", Y), TypeError, r"scores must have a floating or integer dtype, got \|S3"),
    ("scores int beyond 64 bits", lambda: jaxrank.ndcg([[2**70, 1, 2]], Y), TypeError, r"scores must hold numbers.*an int beyond 64 bits"),
    ("scores bool", lambda: jaxrank.ndcg(S.astype(bool), Y), TypeError, r"scores must have a floating or integer dtype, got bool"),
    ("scores 0-d", lambda: jaxrank.ndcg(1.0, 1), ValueError, r"scores must have at least 1 dimension"),
    ("labels ragged", lambda: jaxrank.ndcg(S, [[1, 0], [1]]), ValueError, "labels " + RAGGED),
    ("labels object", lambda: jaxrank.ndcg(S, np.array([[1, None, 1]])), TypeError, "labels " + OBJECT),
    ("labels +inf", lambda: jaxrank.ndcg(S, [[np.inf, 0, 1]]), ValueError, r"labels must be finite and at most 3.40282e\+38 \(grades are float32\), got inf at index \(0, 0\)"),
    ("labels above float32", lambda: jaxrank.evaluate(S, np.array([[1e39, 0, 1]]), ["map"]), ValueError, r"labels must be finite and at most 3.40282e\+38"),
    ("labels above float32, float64 under x64", lambda: _x64(lambda: jaxrank.ndcg(S, np.array([[1e39, 0, 1]]))), ValueError, r"labels must be finite and at most 3.40282e\+38 .* got 1e\+39 at index \(0, 0\)"),
    ("labels -inf", lambda: jaxrank.ndcg(S, [[-np.inf, 0, 1]]), ValueError, r"labels must be >= 0 \(0 = not relevant\), got -inf"),
    ("labels NaN", lambda: jaxrank.recall(S, [[np.nan, 0, 1]]), ValueError, r"labels must not contain NaN, found NaN at index \(0, 0\)"),
    ("labels strings", lambda: jaxrank.ndcg(S, [["1", "0", "1"]]), TypeError, r"labels must have a floating or integer or bool dtype, got <U1"),
    ("labels shaped like one list", lambda: jaxrank.ndcg(S, [1, 0, 1]), ValueError, r"labels must have the shape of scores \(1, 3\), got \(3,\)"),
    ("labels missing", lambda: jaxrank.ndcg(S), ValueError, r"labels is required with dense scores"),
    ("labels that are metric names", lambda: jaxrank.evaluate(S, ["map"]), TypeError, r"labels look like metric names \(\['map'\]\)"),
    ("where ints", lambda: jaxrank.ndcg(S, Y, where=[[1, 1, 0]]), TypeError, r"where must have a bool dtype, got int32"),
    ("where ragged", lambda: jaxrank.ndcg(S, Y, where=[[True], [False, True]]), ValueError, "where " + RAGGED),
    ("where with None", lambda: jaxrank.ndcg(S, Y, where=[[True, None, False]]), TypeError, "where " + OBJECT),
    ("tie_key strings", lambda: jaxrank.ndcg(S, Y, ties="first", tie_key=[["a", "b", "c"]]), TypeError, r"tie_key must have a floating or integer dtype"),
    # --- options (item 20: overflow values, infinities, NaN)
    ("k a string", lambda: jaxrank.ndcg(S, Y, k="3"), TypeError, r"k must be a positive int or None, got '3'"),
    ("k a float", lambda: jaxrank.ndcg(S, Y, k=np.float64(3.0)), TypeError, r"k must be a positive int or None"),
    ("k a list", lambda: jaxrank.ndcg(S, Y, k=[3]), TypeError, r"k must be a positive int or None, got \[3\]"),
    ("max_relevant 0", lambda: jaxrank.ndcg(S, Y, max_relevant=0), ValueError, r"max_relevant must be a positive int or None, got 0"),
    ("max_relevant a float", lambda: jaxrank.ndcg(S, Y, max_relevant=2.0), TypeError, r"max_relevant must be a positive int or None"),
    ("threshold NaN", lambda: jaxrank.precision(S, Y, threshold=math.nan), ValueError, r"threshold must be a positive finite number, got nan"),
    ("threshold inf", lambda: jaxrank.precision(S, Y, threshold=math.inf), ValueError, r"threshold must be a positive finite number, got inf"),
    ("threshold a string", lambda: jaxrank.precision(S, Y, threshold="1"), ValueError, r"threshold must be a positive finite number, got '1'"),
    ("beta NaN", lambda: jaxrank.fbeta(S, Y, beta=math.nan), ValueError, r"beta must be a positive number \(inf: recall\), got nan"),
    ("beta 0", lambda: jaxrank.fbeta(S, Y, beta=0), ValueError, r"beta must be a positive number"),
    ("gain None", lambda: jaxrank.ndcg(S, Y, gain=None), ValueError, r"gain must be one of \['linear', 'exp2'\], got None"),
    ("gain callable returning strings", lambda: jaxrank.ndcg(S, Y, gain=lambda g: "x"), TypeError, r"gain must be a callable of an array of grades, returning an array of the same shape"),
    ("gain callable changing the shape", lambda: jaxrank.ndcg(S, Y, gain=lambda g: g[..., :1]), TypeError, r"gain must return a numeric array of the shape of its input; .* shape \(1, 1\)"),
    ("discount a string", lambda: jaxrank.dcg(S, Y, discount="log"), TypeError, r"discount must be a callable of the 1-based rank or None, got 'log'"),
    ("discount callable failing", lambda: jaxrank.dcg(S, Y, discount=lambda r: r["x"]), TypeError, r"discount must be a callable of an array of 1-based ranks"),
    ("ties None", lambda: jaxrank.ndcg(S, Y, ties=None), ValueError, r"ties must be one of \['average', 'optimistic', 'pessimistic', 'first'\], got None"),
    ("empty None", lambda: jaxrank.ndcg(S, Y, empty=None), ValueError, r"empty must be one of"),
    ("method None", lambda: jaxrank.ndcg(S, Y, method=None), ValueError, r"method must be one of"),
    # --- evaluate's metric list and the Ranks door (item 9)
    ("metrics None", lambda: jaxrank.evaluate(S, Y, None), TypeError, r"metrics must be a metric name or a list of names, got None"),
    ("metrics an int", lambda: jaxrank.evaluate(S, Y, 3), TypeError, r"metrics must be a metric name or a list of names, got 3"),
    ("metrics [None]", lambda: jaxrank.evaluate(S, Y, [None]), TypeError, r"metric names must be strings, got None"),
    ("metric cutoff 1.5", lambda: jaxrank.evaluate(S, Y, ["map@1.5"]), ValueError, r"the cutoff after '@' must be a positive integer"),
    ("metric '' ", lambda: jaxrank.evaluate(S, Y, [""]), ValueError, r"unknown metric ''; known names"),
    ("metrics given twice with a Ranks", lambda: jaxrank.evaluate(R, ["map"], ["mrr"]), ValueError, r"metrics given twice: with a Ranks pass them second"),
    ("Ranks with where", lambda: jaxrank.evaluate(R, ["map"], where=[[True] * 3]), ValueError, r"where must be None when a Ranks is passed"),
    ("Ranks with a positional k", lambda: jaxrank.ndcg(R, 3), ValueError, r"labels must be None when a Ranks is passed .* give k and the options by keyword"),
    ("reduce 'none'", lambda: jaxrank.evaluate(S, Y, ["map"], reduce="none"), ValueError, r"reduce must be None or 'mean', got 'none'"),
    ("mean of None", lambda: jaxrank.mean(None), TypeError, r"values must be an array, got None"),
    ("mean of ragged", lambda: jaxrank.mean([[1.0], [1.0, 2.0]]), ValueError, "values " + RAGGED),
    ("mean of strings", lambda: jaxrank.mean(["a"]), TypeError, r"values must have a floating or integer or bool dtype"),
    # --- from_* constructors
    ("from_sparse ids float", lambda: jaxrank.from_sparse(S, [[0.0, 1.0]]), TypeError, r"relevant_ids must have a integer dtype, got float32"),
    ("from_sparse ids -2", lambda: jaxrank.from_sparse(S, [[-2]]), ValueError, r"relevant_ids must be -1 \(padding\) or in \[0, 3\)"),
    ("from_sparse ids beyond int32", lambda: jaxrank.from_sparse(S, np.array([[2**40]])), ValueError, r"relevant_ids must fit in int32 when JAX's x64 mode is off, got 1099511627776 at index \(0, 0\)"),
    ("from_sparse ids None", lambda: jaxrank.from_sparse(S, None), TypeError, r"relevant_ids must be an array, got None"),
    ("from_sparse ids ragged", lambda: jaxrank.from_sparse(S, [[0], [1, 2]]), ValueError, "relevant_ids " + RAGGED),
    ("from_sparse ids with None", lambda: jaxrank.from_sparse(S, [[0, None]]), TypeError, "relevant_ids " + OBJECT),
    ("from_sparse ids bool", lambda: jaxrank.from_sparse(S, [[True]]), TypeError, r"relevant_ids must have a integer dtype, got bool"),
    ("from_sparse grades inf", lambda: jaxrank.from_sparse(S, [[0]], [[np.inf]]), ValueError, r"relevant_grades must be finite and at most 3.40282e\+38"),
    ("from_sparse grades NaN", lambda: jaxrank.from_sparse(S, [[0]], [[np.nan]]), ValueError, r"relevant_grades must not contain NaN"),
    ("from_sparse scores None", lambda: jaxrank.from_sparse(None, [[0]]), TypeError, r"scores must be an array, got None"),
    ("from_ranked_ids None", lambda: jaxrank.from_ranked_ids(None, [[1]]), TypeError, r"ranked_ids must be an array, got None"),
    ("from_ranked_ids ragged", lambda: jaxrank.from_ranked_ids([[1, 2], [3]], [[1], [3]]), ValueError, "ranked_ids " + RAGGED),
    ("from_ranked_ids beyond int32", lambda: jaxrank.from_ranked_ids(np.array([[2**40, 1]]), [[1]]), ValueError, r"ranked_ids must fit in int32 when JAX's x64 mode is off"),
    ("from_ranked_ids -5", lambda: jaxrank.from_ranked_ids([[1, -5]], [[1]]), ValueError, r"ranked_ids must be -1 \(padding\) or in"),
    ("from_candidates positive None", lambda: jaxrank.from_candidates(None, C), TypeError, r"positive_scores must be an array, got None"),
    ("from_candidates candidates None", lambda: jaxrank.from_candidates(P, None), TypeError, r"candidate_scores must be an array, got None"),
    ("from_candidates ragged", lambda: jaxrank.from_candidates([1.0, 2.0], [[1.0], [1.0, 2.0]]), ValueError, "candidate_scores " + RAGGED),
    ("from_candidates strings", lambda: jaxrank.from_candidates(["a"], [["b"]]), TypeError, r"positive_scores must have a floating or integer dtype"),
    ("from_candidates mask ints", lambda: jaxrank.from_candidates(P, C, [[1, 0, 1]]), TypeError, r"candidate_mask must have a bool dtype, got int32"),
    ("from_candidates int32 vs float32 under jit", lambda: jax.jit(lambda p, c: jaxrank.from_candidates(p, c).lo)(jnp.array([1]), jnp.array([[1.0]])), TypeError, r"positive_scores and candidate_scores have no common device dtype"),
    # --- top_k_ids
    ("top_k_ids k None", lambda: jaxrank.top_k_ids(S, None), TypeError, r"k must be a positive int, got None"),
    ("top_k_ids k 10**30", lambda: jaxrank.top_k_ids(S, BIG), ValueError, r"k must be <= the number of items 3, got 10{30}"),
    ("top_k_ids k beyond n", lambda: jaxrank.top_k_ids(S, 4), ValueError, r"k must be <= the number of items 3, got 4"),
    ("top_k_ids scores None", lambda: jaxrank.top_k_ids(None, 1), TypeError, r"scores must be an array, got None"),
    ("top_k_ids ragged", lambda: jaxrank.top_k_ids([[1, 2], [3]], 1), ValueError, "scores " + RAGGED),
    ("top_k_ids object", lambda: jaxrank.top_k_ids([[1, None]], 1), TypeError, "scores " + OBJECT),
    ("top_k_ids where ints", lambda: jaxrank.top_k_ids(S, 1, where=[[1, 0, 1]]), TypeError, r"where must have a bool dtype"),
    # --- linkpred
    ("linkpred positive None", lambda: linkpred.evaluate(None, C), TypeError, r"positive_scores must be an array, got None"),
    ("linkpred candidates ragged", lambda: linkpred.evaluate([1.0, 2.0], [[1.0], [1.0, 2.0]]), ValueError, "candidate_scores " + RAGGED),
    ("linkpred positive with None", lambda: linkpred.evaluate([None], C), TypeError, "positive_scores " + OBJECT),
    ("linkpred metrics None", lambda: linkpred.evaluate(P, C, None), TypeError, r"metrics must be a metric name or a list of names, got None"),
    ("linkpred Ranks with candidates", lambda: linkpred.evaluate(linkpred.ranks(P, C), C), ValueError, r"candidate_scores and candidate_mask must be None when a Ranks is passed"),
    ("linkpred num_options unknown", lambda: linkpred.adjusted_mean_rank(P, C, num_options="x"), ValueError, r"num_options must be one of \['all', 'finite'\], got 'x'"),
    ("linkpred num_options finite, no finite score", lambda: linkpred.adjusted_mean_rank([np.nan], [[np.inf]], num_options="finite"), ValueError, r"num_options='finite': the query at index \(0,\) has no finite score"),
    ("linkpred num_options finite of a Ranks", lambda: linkpred.adjusted_hits_at_k(linkpred.ranks(P, C), num_options="finite"), ValueError, r"num_options='finite' counts finite scores, which a Ranks does not hold"),
    # --- soft_ndcg
    ("soft scores None", lambda: jaxrank.soft_ndcg(None, Y), TypeError, r"scores must be an array, got None"),
    ("soft scores ragged", lambda: jaxrank.soft_ndcg([[1, 2], [3]], [[1, 0], [1]]), ValueError, "scores " + RAGGED),
    ("soft labels inf", lambda: jaxrank.soft_ndcg(S, [[np.inf, 0, 1]]), ValueError, r"labels must be finite and at most 3.40282e\+38"),
    ("soft temperature inf", lambda: jaxrank.soft_ndcg(S, Y, temperature=math.inf), ValueError, r"temperature must be a positive finite number, got inf"),
    ("soft temperature NaN", lambda: jaxrank.soft_ndcg(S, Y, temperature=math.nan), ValueError, r"temperature must be a positive finite number, got nan"),
    ("soft gain callable changing the shape", lambda: jaxrank.soft_ndcg(S, Y, gain=lambda g: g.sum()), TypeError, r"gain must return a numeric array of the shape of its input"),
]


def _x64(call):
  with jax.enable_x64(True):
    return call()


@pytest.mark.parametrize("description, call, exc, pattern", ERRORS, ids=[r[0] for r in ERRORS])
def test_malformed_input_gets_a_one_line_error(description, call, exc, pattern):
  with pytest.raises(exc, match=pattern) as info:
    call()
  assert "\n" not in str(info.value), description


VALUES = [
    # hostile but valid: the right number, not NaN
    ("beta inf is recall", lambda: jaxrank.fbeta(S, [[1, 1, 1]], k=1, beta=math.inf), 1 / 3),
    ("beta 1e200 is recall", lambda: jaxrank.fbeta(S, [[1, 1, 1]], k=1, beta=1e200), 1 / 3),
    ("beta 1e-200 is precision", lambda: jaxrank.fbeta(S, [[1, 1, 1]], k=1, beta=1e-200), 1.0),
    ("beta 1e30 (beta^2 beyond float32)", lambda: jaxrank.fbeta(S, [[1, 1, 1]], k=1, beta=1e30), 1 / 3),
    ("labels 2**40 (int64, no x64)", lambda: jaxrank.ndcg(S, np.array([[2**40, 0, 1]])), 1.0),
    ("labels 3e38", lambda: jaxrank.ndcg([[1.0, 0.0, 0.5]], [[3e38, 3e38, 1.0]]), 0.91972),
    ("exp2 gain of 128", lambda: jaxrank.ndcg([[1.0, 0.0]], [[128, 0]], gain="exp2"), 1.0),
    ("scores 2**32 vs 5 (int64, no x64)", lambda: jaxrank.reciprocal_rank(np.array([[2**32, 5]]), [[1, 0]]), 1.0),
    ("tie_key beyond int32", lambda: jaxrank.reciprocal_rank([[1.0, 1.0]], [[0, 1]], ties="first", tie_key=np.array([[2**40, 2**41]])), 1.0),
    ("float32 subnormal above 0", lambda: jaxrank.reciprocal_rank(np.array([[1e-45, 0.0]], np.float32), [[1, 0]]), 1.0),
    # a cutoff of any size keeps everything (item 20: k + 1 wrapped to -2**31, OverflowErrors)
    ("k 10**30", lambda: jaxrank.ndcg(S, Y, k=BIG), 0.9197208),
    ("precision@10**30 divides by k", lambda: jaxrank.precision(S, Y, k=BIG), 2e-30),
    ("mean_rank@2**31", lambda: jaxrank.mean_rank(S, [[0, 0, 1]], k=2**31), 3.0),
    ("mean_rank@2**31 of an unranked item is k + 1", lambda: jaxrank.mean_rank(UNRANKED, k=2**31), 2.0**31 + 1),
    ("max_relevant 10**30", lambda: jaxrank.ndcg(S, Y, max_relevant=BIG), 0.9197208),
    ("a cutoff of 30 digits in a metric name", lambda: jaxrank.evaluate(S, Y, ["mean_rank@" + "9" * 30])["mean_rank@" + "9" * 30], 2.0),
    ("min_k AP at 10**30", lambda: jaxrank.average_precision(S, Y, k=BIG, ap_denominator="min_k"), 0.8333333),
    ("linkpred hits@(30 digits)", lambda: linkpred.evaluate(P, C, ["hits@" + "9" * 30])["hits@" + "9" * 30], 1.0),
    ("linkpred hits_at_k k=10**30", lambda: linkpred.hits_at_k(P, C, k=BIG), 1.0),
    ("linkpred expected_hits_at_k k=10**30", lambda: linkpred.expected_hits_at_k([5], k=BIG), 1.0),
    ("soft precision k=10**30", lambda: jaxrank.soft_precision(S, Y, k=BIG), 2e-30),
    ("soft min_k AP k=10**30", lambda: jaxrank.soft_average_precision(S, Y, k=BIG, ap_denominator="min_k"), float(jaxrank.soft_average_precision(S, Y)[0])),
    ("a Ranks and the metric list second", lambda: jaxrank.evaluate(R, ["map"])["map"], 0.8333333),
    ("a Ranks and one metric name second", lambda: jaxrank.evaluate(R, "mrr")["mrr"], 1.0),
    ("linkpred: a Ranks and the metric list second", lambda: linkpred.evaluate(linkpred.ranks(P, C), ["mr"])["mr"], 2.5),
    ("a callable gain of +inf: the ratio's limit", lambda: jaxrank.ndcg([[1.0, 0.0]], [[1, 2]], gain=lambda g: jnp.where(g > 1, jnp.inf, g)), 1 / math.log2(3)),
]


@pytest.mark.parametrize("description, call, want", VALUES, ids=[r[0] for r in VALUES])
def test_hostile_but_valid_input_gets_the_right_number(description, call, want):
  got = np.asarray(call()).reshape(-1)
  assert got.size == 1 and got[0] == pytest.approx(want, rel=1e-5), description


def test_traced_non_finite_labels_keep_ndcg_in_range():
  # Under jit the labels cannot be checked: an infinite grade counts as the list's largest gain
  # (the limit of the ratio), so NDCG stays in [0, 1] and never becomes NaN.
  f = jax.jit(lambda s, y: jaxrank.ndcg(s, y))
  got = f(jnp.array([[1.0, 0.0], [1.0, 0.0]]), jnp.array([[jnp.inf, 1.0], [1.0, jnp.inf]]))
  np.testing.assert_allclose(np.asarray(got), [1.0, 1 / math.log2(3)], rtol=1e-6)


# ------------------------------------------------------------------------------------------
# Item 2 through the other doors: relevant documents absent from the run, pessimistic ties.


def test_pessimistic_unranked_relevant_through_evaluate_run():
  from jaxrank import numpy as jrn
  run = {"q": {"d1": 0.0}}
  qrels = {"q": {"d1": 0, "d2": 1, "d3": 1}}
  names = ["mrr", "map", "recall@100", "hr@100", "ndcg", "precision@10"]
  for ties in ("pessimistic", "optimistic", "average", "first", "trec"):
    out = jrn.evaluate_run(run, qrels, names, ties=ties, reduce="mean")
    assert all(out[name] == 0.0 for name in names), (ties, out)
  out = jrn.evaluate_run(run, qrels, ["mean_rank"], ties="pessimistic", reduce="mean")
  assert out["mean_rank"] == 2.0  # n + 1 for each unretrieved relevant document


def test_pessimistic_unranked_relevant_through_the_cli(tmp_path, capsys):
  from jaxrank import cli
  (tmp_path / "qrels").write_text("q 0 d1 0\nq 0 d2 1\nq 0 d3 1\n")
  (tmp_path / "run").write_text("q Q0 d1 1 0.0 t\n")
  code = cli.main(["evaluate", str(tmp_path / "qrels"), str(tmp_path / "run"), "--ties",
                   "pessimistic", "-m", "recip_rank", "-m", "map", "-m", "recall.100",
                   "-m", "success.100"])
  out = capsys.readouterr().out
  assert code == 0, out
  values = {line.split()[0]: float(line.split()[2]) for line in out.splitlines() if line.strip()}
  assert values == {"recip_rank": 0.0, "map": 0.0, "recall_100": 0.0, "success_100": 0.0}, out
