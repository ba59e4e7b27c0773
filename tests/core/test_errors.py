"""Bad input gets a clear error naming the argument and the offending shape, dtype or value."""

import numpy as np
import pytest

import jaxrank

S = np.array([[0.3, 0.2, 0.1]], np.float32)
Y = np.array([[1, 0, 1]])


@pytest.mark.parametrize("call, exc, pattern", [
    (lambda: jaxrank.ndcg(S, Y[:, :2]), ValueError, r"labels must have the shape of scores \(1, 3\), got \(1, 2\)"),
    (lambda: jaxrank.ndcg(S, Y, where=np.ones((1, 2), bool)), ValueError, r"where .*\(1, 2\)"),
    (lambda: jaxrank.ndcg(S, Y, where=np.ones((1, 3))), TypeError, r"where must have a bool dtype, got float"),
    (lambda: jaxrank.ndcg(S, Y, k=0), ValueError, r"k must be a positive int or None, got 0"),
    (lambda: jaxrank.ndcg(S, Y, k=-2), ValueError, r"k must be .* got -2"),
    (lambda: jaxrank.ndcg(S, Y, k=2.5), TypeError, r"k must be a positive int or None, got 2.5"),
    (lambda: jaxrank.ndcg(S, Y, k=True), TypeError, r"k must be .* got True"),
    (lambda: jaxrank.ndcg(S, -Y), ValueError, r"labels must be >= 0 .* got -1 at index \(0, 0\)"),
    (lambda: jaxrank.ndcg(S, np.array([[np.nan, 0, 1]])), ValueError, r"labels must not contain NaN"),
    (lambda: jaxrank.ndcg(S.astype(bool), Y), TypeError, r"scores must have a floating or integer dtype, got bool"),
    (lambda: jaxrank.ndcg(np.array(["a", "b"]), Y), TypeError, r"scores must"),
    (lambda: jaxrank.ndcg(np.float32(1.0), 1), ValueError, r"scores must have at least 1 dimension"),
    (lambda: jaxrank.evaluate(S, Y, ["ndgc@10"]), ValueError, r"unknown metric 'ndgc@10'; known names"),
    (lambda: jaxrank.evaluate(S, Y, ["ndcg@0"]), ValueError, r"metric 'ndcg@0': the cutoff"),
    (lambda: jaxrank.evaluate(S, Y, ["ndcg@ten"]), ValueError, r"cutoff after '@' must be a positive integer, got 'ten'"),
    (lambda: jaxrank.evaluate(S, Y, []), ValueError, r"metrics must name at least one"),
    (lambda: jaxrank.evaluate(S, Y, ["map"], reduce="sum"), ValueError, r"reduce must be None or 'mean', got 'sum'"),
    (lambda: jaxrank.ndcg(S, Y, ties="random"), ValueError, r"ties must be one of .* got 'random'"),
    (lambda: jaxrank.ndcg(S, Y, empty="drop"), ValueError, r"empty must be one of"),
    (lambda: jaxrank.ndcg(S, Y, gain="exp"), ValueError, r"gain must be one of"),
    (lambda: jaxrank.precision(S, Y, threshold=0), ValueError, r"threshold must be a positive finite number, got 0"),
    (lambda: jaxrank.average_precision(S, Y, ap_denominator="some"), ValueError, r"ap_denominator must be one of"),
    (lambda: jaxrank.precision(S, Y, precision_denominator="n"), ValueError, r"precision_denominator"),
    (lambda: jaxrank.ndcg(S, Y, method="fast"), ValueError, r"method must be one of"),
    (lambda: jaxrank.ndcg(S, Y, tie_key=np.ones((1, 3))), ValueError, r"tie_key is only used with ties='first'"),
    (lambda: jaxrank.ndcg(S, Y, ties="first", tie_key=np.ones((1, 4))), ValueError, r"tie_key must have the shape of scores"),
    (lambda: jaxrank.ndcg(S, Y, max_relevant=1), ValueError, r"max_relevant=1 is smaller than .* \(2\)"),
    (lambda: jaxrank.ndcg(S), ValueError, r"labels is required"),
    (lambda: jaxrank.ndcg(jaxrank.from_dense(S, Y), Y), ValueError, r"labels must be None when a Ranks is passed"),
    (lambda: jaxrank.ndcg(jaxrank.from_dense(S, Y), ties="first"), ValueError, r"ties='first' needs"),
    (lambda: jaxrank.from_sparse(S, [[0, 5]]), ValueError, r"relevant_ids must be -1 \(padding\) or in \[0, 3\).*got 5 at index \(0, 1\)"),
    (lambda: jaxrank.from_sparse(S, [[1, 1]]), ValueError, r"relevant_ids must not repeat an id .* repeats id 1"),
    (lambda: jaxrank.from_sparse(S, [[0.0, 1.0]]), TypeError, r"relevant_ids must have a integer dtype"),
    (lambda: jaxrank.from_sparse(S, [0, 1]), ValueError, r"relevant_ids must have shape \(1,\) \+ \(m,\)"),
    (lambda: jaxrank.from_sparse(S, [[0, 1]], [[1, -1]]), ValueError, r"relevant_grades must be >= 0"),
    (lambda: jaxrank.from_ranked_ids([[1, 2, 2]], [[1]]), ValueError, r"ranked_ids must not repeat"),
    (lambda: jaxrank.from_candidates([0.1, 0.2], [[0.1, 0.3]]), ValueError, r"candidate_scores must have shape \(2,\)"),
    (lambda: jaxrank.from_candidates([0.1], [[0.1]], [[1]]), TypeError, r"candidate_mask must have a bool dtype"),
    (lambda: jaxrank.mean([1.0], empty="x"), ValueError, r"empty must be one of"),
])
def test_errors(call, exc, pattern):
  with pytest.raises(exc, match=pattern):
    call()
