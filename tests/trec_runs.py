"""Random pytrec_eval-style runs and qrels shared by the tests of the TREC doors (tests/numpy,
tests/cli, tests/trec), and such files (random_files)."""

import numpy as np

PYTREC = {"map": "map", "ndcg": "ndcg", "ndcg_cut_10": "ndcg_cut", "P_5": "P", "P_20": "P",
          "recall_10": "recall", "recip_rank": "recip_rank", "Rprec": "Rprec", "bpref": "bpref",
          "set_F": "set", "set_P": "set", "set_recall": "set", "success_5": "success",
          "map_cut_10": "map_cut", "num_rel": "num_rel", "num_ret": "num_ret",
          "num_rel_ret": "num_rel_ret"}


def random_trec(seed, queries=25):
  """String ids (some with '#'), scores on a coarse grid (ties), grades -1..3, some queries
  without judgments or without relevant documents, relevant documents missing from the run;
  queries numbered without padding ('q9' sorts after 'q10') and given in shuffled order."""
  rng = np.random.default_rng(seed)
  name = lambda j: f"d#{j}" if j % 7 == 0 else f"doc{j}"  # noqa: E731
  run, qrels = {}, {}
  for qi in range(queries):
    q = f"q{qi}"
    docs = rng.choice(150, size=rng.integers(1, 50), replace=False)
    run[q] = {name(j): float(np.round(rng.normal(), 1)) for j in docs}
    if qi % 6 != 5:
      judged = rng.choice(150, size=rng.integers(1, 40), replace=False)
      top = 0 if qi % 6 == 4 else 3
      qrels[q] = {name(j): int(rng.integers(-1, top + 1)) for j in judged}
  qrels["only-in-qrels"] = {"x": 1}
  shuffle = lambda d: {k: d[k] for k in rng.permutation(list(d))}  # noqa: E731
  return shuffle(run), shuffle(qrels)


def random_files(tmp_path, seed):
  """A run (lines grouped by query, in a random query order) with tied scores, and graded
  qrels that judge some documents the run never retrieved, some queries with no run lines and
  some run queries without judgments."""
  rng = np.random.default_rng(seed)
  run, qrels = [], []
  queries = [f"q{i}" for i in rng.permutation(30)]
  for i, q in enumerate(queries):
    n = int(rng.integers(1, 25))
    docs = rng.choice(60, size=n + 5, replace=False)
    scores = rng.integers(0, 6, size=n) / 4  # many ties
    if i % 7 != 3:  # some run queries have no judgments
      for d in docs[rng.random(n + 5) < 0.6]:
        qrels.append(f"{q} 0 d{d} {int(rng.choice([-1, 0, 0, 1, 1, 2, 3]))}\n")
    if i % 9 != 5:  # some judged queries are not in the run
      run += [f"{q} Q0 d{d} {r} {s} tag{i}\n" for r, (d, s) in enumerate(zip(docs, scores))]
  rng.shuffle(qrels)
  (tmp_path / "run").write_text("".join(run))
  (tmp_path / "qrels").write_text("".join(qrels))
  return tmp_path / "qrels", tmp_path / "run"
