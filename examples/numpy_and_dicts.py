"""jaxrank.numpy: the same metrics from NumPy arrays, ragged lists, ranked ids and TREC dicts.

    python examples/numpy_and_dicts.py
"""

import numpy as np

from jaxrank import numpy as jrn

# 1. Scores and graded labels: arrays [lists, n] or ragged lists of lists.
scores = [[0.9, 0.8, 0.8, 0.1], [0.3, 0.7]]
labels = [[0, 2, 1, 0], [1, 0]]
print("per list:", {k: v.round(4).tolist() for k, v in
                    jrn.evaluate(scores, labels, ["ndcg@3", "map", "mrr"]).items()})
print("mean, ties broken the worst way:",
      jrn.evaluate(scores, labels, ["map"], ties="pessimistic", reduce="mean"))

# 2. Recommender output: a ranked list of item ids per user, and the relevant items
#    (a set, or {item: grade}); relevant items never recommended still count in recall.
recommended = {"ann": [12, 7, 3, 9], "bob": [4, 5], "cy": [1]}
relevant = {"ann": {7, 40}, "bob": {5: 3, 4: 1}, "cy": set()}
out = jrn.evaluate_ranked(recommended, relevant, ["recall@3", "ndcg@3", "mrr"], empty="skip")
print("per user:", out)

# 3. pytrec_eval-style dicts with string ids: trec_eval's tie order (doc id descending) and
#    measure names, or jaxrank's names; float32=True compares scores like pytrec_eval.
run = {"q1": {"d1": 0.5, "d2": 0.5, "d#3": 0.1}, "q2": {"d9": 2.0, "d4": 1.0}}
qrels = {"q1": {"d1": 1, "d#3": 2}, "q2": {"d4": 1, "d7": 1}}
print(jrn.evaluate_run(run, qrels, ["map", "P_2", "ndcg_cut_10", "bpref", "recall@10"]))
print(jrn.evaluate_run(run, qrels, ["map", "ndcg"], reduce="mean"))
print("tie-averaged instead of doc-id order:",
      jrn.evaluate_run(run, qrels, ["mrr"], ties="average")["mrr"])

# 4. A stream of differently sized batches compiles only a handful of times (shapes are
#    padded to powers of two); padding never changes a value.
rng = np.random.default_rng(0)
for users in (30, 47, 90, 200):
  recs = [list(rng.choice(1000, 20, replace=False)) for _ in range(users)]
  truth = [list(rng.choice(1000, 5, replace=False)) for _ in range(users)]
  print(users, "users, mean ndcg@10:",
        round(jrn.evaluate_ranked(recs, truth, ["ndcg@10"], reduce="mean")["ndcg@10"], 4))
