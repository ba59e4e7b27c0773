"""jaxrank quickstart: evaluate a ranker on deterministic synthetic data and print a metric table.

    python examples/quickstart.py [--lists 2000] [--items 500] [--seed 0]

The "ranker" scores each item by its hidden relevance plus noise, rounded to one decimal so that
some scores tie (ties are handled exactly: the default is the expected value over tied orders).
"""

from __future__ import annotations

import argparse

import numpy as np

import jaxrank

METRICS = ["ndcg@10", "ndcg", "map", "map@10", "mrr", "p@10", "r@10", "r@100", "hr@1",
           "r_precision", "mean_rank"]


def synthetic(lists: int, items: int, seed: int):
  rng = np.random.default_rng(seed)
  labels = rng.choice(4, size=(lists, items), p=[0.95, 0.03, 0.015, 0.005])
  scores = np.round(labels * 0.6 + rng.normal(size=(lists, items)), 1).astype(np.float32)
  lengths = rng.integers(items // 2, items + 1, size=lists)  # ragged lists, padded to `items`
  where = np.arange(items) < lengths[:, None]
  return scores, labels, where


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--lists", type=int, default=2000)
  parser.add_argument("--items", type=int, default=500)
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args()

  scores, labels, where = synthetic(args.lists, args.items, args.seed)
  print(f"{args.lists} lists x up to {args.items} items, "
        f"{int(((labels > 0) & where).sum())} relevant items (grades 1-3), seed {args.seed}\n")
  rows = {ties: jaxrank.evaluate(scores, labels, METRICS, where=where, ties=ties, reduce="mean")
          for ties in ("optimistic", "average", "pessimistic")}
  print(f"| {'metric':<12} | {'optimistic':>10} | {'average':>10} | {'pessimistic':>11} |")
  print(f"|{'-' * 14}|{'-' * 11}:|{'-' * 11}:|{'-' * 12}:|")
  for name in METRICS:
    values = [float(rows[t][name]) for t in ("optimistic", "average", "pessimistic")]
    print(f"| {name:<12} | {values[0]:>10.4f} | {values[1]:>10.4f} | {values[2]:>11.4f} |")

  # The same lists through the sparse form: scores over the catalog plus the relevant ids.
  ids = np.full((args.lists, int((labels > 0).sum(1).max())), -1)
  for i, row in enumerate(labels * where):
    found = np.flatnonzero(row)
    ids[i, :found.size] = found
  grades = np.take_along_axis(labels, np.maximum(ids, 0), axis=1)
  ranks = jaxrank.from_sparse(scores, ids, grades, where=where)
  sparse = float(jaxrank.mean(jaxrank.ndcg(ranks, k=10)))
  print(f"\nsparse form, ndcg@10: {sparse:.4f} (same core, same number)")


if __name__ == "__main__":
  main()
