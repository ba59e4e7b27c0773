"""Beyond-accuracy report for a toy recommender: diversity, novelty, serendipity, personalization,
popularity bias (ARP, coverage, Gini), score entropy and item bias, on deterministic data.

    python examples/recsys_beyond_accuracy.py [--users 2000] [--items 500] [--k 10] [--plot out.png]

Two recommenders are compared: "popular" (everyone gets the most popular items, plus noise) and
"personal" (each user's nearest items in embedding space). Each metric is printed under the
documented definition and, where Evidently's code differs, under Evidently's (``evidently=``).
"""

from __future__ import annotations

import argparse
import sys

import jax.numpy as jnp
import numpy as np

import jaxrank


def synthetic(users: int, items: int, dim: int = 16, seed: int = 0):
  rng = np.random.default_rng(seed)
  item_emb = rng.standard_normal((items, dim)).astype(np.float32)
  user_emb = rng.standard_normal((users, dim)).astype(np.float32)
  genre = rng.integers(0, 4, items)  # a categorical item attribute
  # Training interactions: popular items (low ids) are seen far more often.
  n = users * 8
  train_users = rng.integers(0, users, n)
  train_items = np.minimum((items * rng.random(n) ** 2.5).astype(np.int64), items - 1)
  return item_emb, user_emb, genre, train_users, train_items


def main() -> None:
  ap = argparse.ArgumentParser()
  ap.add_argument("--users", type=int, default=2000)
  ap.add_argument("--items", type=int, default=500)
  ap.add_argument("--k", type=int, default=10)
  ap.add_argument("--plot", default=None, help="write an item-bias bar chart (needs matplotlib)")
  args = ap.parse_args()
  if args.plot:
    try:
      import matplotlib  # noqa: F401
    except ImportError:  # one line, before the work, not a traceback at the end
      sys.exit('recsys_beyond_accuracy.py --plot needs matplotlib: pip install "jaxrank[plot]"')
  item_emb, user_emb, genre, tu, ti = synthetic(args.users, args.items)
  phi = jaxrank.item_popularity(tu, ti, num_items=args.items)
  n_train_users = len(np.unique(tu))
  history = np.full((args.users, 64), -1)
  for u in range(args.users):
    h = np.unique(ti[tu == u])[:64]
    history[u, :len(h)] = h
  rng = np.random.default_rng(1)
  relevant = rng.integers(0, args.items, (args.users, 20))
  relevant = np.where(np.arange(20) < 5, relevant, -1)
  relevant = np.array([np.where(np.r_[True, row[1:] != row[:-1]], row, -1)
                       for row in np.sort(relevant, axis=1)])

  recommenders = {
      "popular": np.asarray(phi, np.float32)[None, :] + rng.normal(0, 2, (args.users, args.items)),
      "personal": user_emb @ item_emb.T,
  }
  print(f"{args.users} users, top-{args.k} of {args.items} items\n")
  print(f"{'metric':44s} {'popular':>10s} {'personal':>10s}")
  rows = {}
  for name, scores in recommenders.items():
    ids = jaxrank.top_k_ids(scores, args.k)
    skip = lambda v: float(jaxrank.mean(v, empty="skip"))  # noqa: E731
    rows.setdefault("intra-list diversity", []).append(
        skip(jaxrank.intra_list_diversity(ids, item_emb)))
    rows.setdefault("  evidently= (pair sum / list length)", []).append(
        skip(jaxrank.intra_list_diversity(ids, item_emb, normalize="evidently")))
    rows.setdefault("novelty (bits)", []).append(skip(jaxrank.novelty(ids, phi, n_train_users)))
    rows.setdefault("serendipity", []).append(
        skip(jaxrank.serendipity(ids, relevant, history, item_emb)))
    rows.setdefault("personalization", []).append(
        float(jaxrank.personalization(ids, num_items=args.items)))
    rows.setdefault("ARP (distinct training users)", []).append(
        skip(jaxrank.average_recommendation_popularity(ids, phi)))
    rows.setdefault("coverage of the catalog", []).append(
        float(jaxrank.coverage(ids, num_items=args.items)))
    rows.setdefault("Gini (catalog)", []).append(float(jaxrank.gini(ids, num_items=args.items)))
    rows.setdefault("  evidently= (recommended items only)", []).append(
        float(jaxrank.gini(ids, num_items=args.items, over="recommended")))
    top = jnp.take_along_axis(jnp.asarray(scores), ids, axis=-1)
    rows.setdefault("score entropy (pooled, nats)", []).append(
        float(jaxrank.score_entropy(top)))
    bias = jaxrank.item_bias(ids, genre, num_categories=4)
    rows.setdefault("share of genre 0 (train share)", []).append(
        f"{float(bias['recommended'][0]):.3f} ({float(bias['train'][0]):.3f})")
    if args.plot and name == "personal":
      from jaxrank import plot
      fig = plot.plot_bias(bias, labels=["g0", "g1", "g2", "g3"], title="item bias by genre")
      fig.savefig(args.plot)
  for metric, (a, b) in rows.items():
    fmt = (lambda x: f"{x:10.4f}") if isinstance(a, float) else (lambda x: f"{x:>10s}")
    print(f"{metric:44s} {fmt(a)} {fmt(b)}")


if __name__ == "__main__":
  main()
