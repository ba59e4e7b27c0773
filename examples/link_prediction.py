"""Link prediction: evaluate a toy knowledge-graph scorer the way PyKEEN, OGB and NCF do.

    python examples/link_prediction.py [--entities 300] [--triples 400]

A DistMult-like scorer with random embeddings scores every entity as the head and as the tail of
each test triple. We report filtered MRR / Hits@k / MR on both sides with PyKEEN's realistic ties,
the adjusted metrics, and what a constant scorer would get under each tie policy (the trap of
scoring every candidate equally: optimistic ranks give it MRR = 1).
"""

from __future__ import annotations

import argparse

import numpy as np

from jaxrank import linkpred


def main() -> None:
  ap = argparse.ArgumentParser()
  ap.add_argument("--entities", type=int, default=300)
  ap.add_argument("--triples", type=int, default=400)
  args = ap.parse_args()
  rng = np.random.default_rng(0)
  e, n, d = args.entities, args.triples, 16
  ent = rng.standard_normal((e, d)).astype(np.float32)
  rel = rng.standard_normal((3, d)).astype(np.float32)
  triples = np.stack([rng.integers(0, e, n), rng.integers(0, 3, n), rng.integers(0, e, n)], 1)
  # Make the test triples somewhat predictable: nudge tails toward head * relation.
  ent[triples[:, 2]] += 0.5 * ent[triples[:, 0]] * rel[triples[:, 1]]
  h, r, t = ent[triples[:, 0]], rel[triples[:, 1]], ent[triples[:, 2]]
  tail_scores = (h * r) @ ent.T  # score of (h, r, e) for every e
  head_scores = (t * r) @ ent.T  # score of (e, r, t)
  # Other true answers to filter (here: a few random "known" triples per query).
  known_tails = rng.integers(-1, e, (n, 3))
  known_heads = rng.integers(-1, e, (n, 3))

  out = linkpred.evaluate_triples(head_scores, tail_scores, triples, known_heads=known_heads,
                                  known_tails=known_tails,
                                  metrics=["mrr", "hits@1", "hits@10", "mr"])
  print("filtered, realistic ties (PyKEEN's default report):")
  for side, values in out.items():
    print(f"  {side:5s} " + "  ".join(f"{k}={float(v):.4f}" for k, v in values.items()))

  pos = np.take_along_axis(tail_scores, triples[:, 2:3], axis=1)[:, 0]
  mask = linkpred.filter_mask(e, triples[:, 2], known_tails)
  r_ = linkpred.ranks(pos, tail_scores, candidate_mask=mask)
  print("\ntail side, adjusted against a random scorer (0 = random, 1 = perfect):")
  print(f"  AMR  {float(linkpred.adjusted_mean_rank(r_)):.4f}   "
        f"AMRI {float(linkpred.adjusted_mean_rank_index(r_)):.4f}   "
        f"adjusted Hits@10 {float(linkpred.adjusted_hits_at_k(r_, k=10)):.4f}   "
        f"adjusted MRR {float(linkpred.adjusted_reciprocal_rank(r_)):.4f}")

  const = np.zeros(n, np.float32), np.zeros((n, 99), np.float32)
  print("\na constant scorer, 1 positive + 99 negatives:")
  for ties in linkpred.TIES:
    m = linkpred.evaluate(*const, ["mrr", "hits@10"], ties=ties)
    print(f"  {ties:11s} MRR {float(m['mrr']):.4f}  Hits@10 {float(m['hits@10']):.4f}")
  neg = (triples[:, 2:3] + 1 + np.arange(99)) % e  # 99 entities other than the true tail
  ncf = linkpred.ncf_leave_one_out(pos, np.take_along_axis(tail_scores, neg, axis=1), k=10)
  print(f"\nNCF protocol, 1 positive + 99 negatives: HR@10 "
        f"{float(ncf['hr'].mean()):.4f}, NDCG@10 {float(ncf['ndcg'].mean()):.4f}")


if __name__ == "__main__":
  main()
