"""Comparing systems with significance tests: jaxrank.compare and jaxrank.stats.

    python examples/compare_systems.py

1. The example run shipped with jaxrank against two noisier copies of itself: 5 queries are too
   few for any test to call a difference significant.
2. A synthetic collection of 60 queries and four systems of different quality, written as TREC
   files and compared from Python and with the `jaxrank compare` command.
"""

import pathlib
import tempfile

import numpy as np

from jaxrank import cli, compare, io, stats

# 1. The shipped example: the run and two copies with noise added to the scores.
qrels_path, run_path = cli.example_paths()
qrels, run = io.read_qrels(qrels_path), io.read_run(run_path)
rng = np.random.default_rng(0)
runs = {"example": run}
for name, noise in (("noisy", 0.5), ("noisier", 2.0)):  # same rows (ids as codes), new scores
  runs[name] = io.Run(qid_codes=run.qid_codes, qid_vocab=run.qid_vocab,
                      docid_codes=run.docid_codes, docid_vocab=run.docid_vocab,
                      score=run.score + rng.normal(0, noise, len(run)), tag=name)
report = compare.compare_runs(runs, qrels, ["map", "P_5", "ndcg_cut_10"], test="randomization")
print(report)
print("smallest possible two-sided p-value with 5 queries (exact randomization test):",
      2 / 2 ** len(report.queries), "\n")


# 2. A synthetic collection: per query 40 judged documents (about 1 in 3 relevant, grades 1-2);
#    a system's score is noise plus `skill` times the grade (times noise), so skill orders the
#    systems in expectation; on these 60 queries hybrid (0.7) still scores below dense (0.6), a
#    difference no test below calls significant.
def synthetic(n_queries=60, skills=(("bm25", 0.4), ("dense", 0.6), ("hybrid", 0.7),
                                    ("rerank", 1.2)), seed=1):
  rng = np.random.default_rng(seed)
  qrels = {f"q{i:03d}": {f"d{j}": int(rng.choice([0, 0, 0, 0, 1, 2])) for j in range(40)}
           for i in range(n_queries)}
  runs = {name: {q: {d: float(rng.random() + skill * g * rng.random()) for d, g in docs.items()}
                 for q, docs in qrels.items()} for name, skill in skills}
  return qrels, runs


qrels, runs = synthetic()
report = compare.compare_runs(runs, qrels, ["map", "ndcg_cut_10", "P_10"])
print("each system against bm25, paired t-test, Holm correction:")
print(report)
print("all pairs, Fisher's randomization test (10,000 sign flips), Markdown with the pairs:")
print(compare.compare_runs(runs, qrels, ["ndcg_cut_10"], test="randomization", pairs="all")
      .to_string("markdown", pvalues=True))
print("all pairs, Tukey's HSD (queries as blocks):")
print(compare.compare_runs(runs, qrels, ["ndcg_cut_10"], test="tukey", pairs="all"))

# The same numbers from the per-query values, with jaxrank.stats directly.
ndcg = report.values[report.measures.index("ndcg_cut_10")]  # [systems, queries]
hybrid, dense = ndcg[2], ndcg[1]
print("hybrid vs dense, ndcg_cut_10:")
for name, res in [("t-test", stats.ttest(hybrid, dense)),
                  ("randomization", stats.randomization_test(hybrid, dense, key=42)),
                  ("bootstrap", stats.bootstrap_test(hybrid, dense, key=42)),
                  ("Wilcoxon", stats.wilcoxon(hybrid, dense)),
                  ("sign", stats.sign_test(hybrid, dense))]:
  print(f"  {name:14s} p = {float(res.pvalue):.4f}")
diff = stats.mean_difference(hybrid, dense, method="bca")
print(f"  difference {float(diff.estimate):+.4f}, 95% BCa interval [{float(diff.low):+.4f}, "
      f"{float(diff.high):+.4f}], Cohen's d {float(stats.cohens_d(hybrid, dense)):.3f}\n")

# The command line on TREC files (and a plot, when matplotlib is installed).
with tempfile.TemporaryDirectory() as tmp:
  tmp = pathlib.Path(tmp)
  io.write_qrels(qrels, tmp / "qrels.txt")
  paths = []
  for name, r in runs.items():
    io.write_run(r, tmp / f"{name}.run")
    paths.append(str(tmp / f"{name}.run"))
  args = ["compare", str(tmp / "qrels.txt"), *paths, "-m", "map", "-m", "ndcg_cut_10",
          "--format", "latex"]
  try:
    import matplotlib  # noqa: F401
    args += ["--plot", str(tmp / "comparison.png")]
  except ImportError:
    pass
  print("$ jaxrank " + " ".join(a.replace(str(tmp) + "/", "") for a in args))
  cli.main(args)
  if "--plot" in args:
    print(f"(plot: {(tmp / 'comparison.png').stat().st_size:,} bytes of PNG)")
