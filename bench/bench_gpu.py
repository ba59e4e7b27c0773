"""Accelerator benchmark: jaxrank's rank core against the cost of reading the scores once.

Two workloads, both built on the device with ``jax.random`` (key 0) and timed as the median of
``--repeats`` calls after a warm-up call (compilation excluded), ``jax.block_until_ready`` on each:

(a) Recommendation, sparse labels: ``--lists`` lists x ``--items`` catalog items (default
    100,000 x 1,000), float32 normal scores and ``--relevant`` (16) distinct relevant ids per
    list. One jitted function runs ``jaxrank.from_sparse(scores, ids, method="count")`` and
    ``jaxrank.ndcg(ranks, k=10)``. Baseline: jitted ``jax.lax.top_k(scores, 10)``.
(b) Link prediction: ``--cand-lists`` positives (default ``--lists / 10`` = 10,000), each scored
    against ``--candidates`` candidates (default ``--items * 100`` = 100,000). One jitted function
    runs ``jaxrank.from_candidates(pos, cand)``, ``reciprocal_rank`` (whole list) and
    ``hit_rate`` (k=10). Baseline: jitted ``jnp.max(cand, axis=-1)``, a single read of the scores.

Meant for a GPU/TPU. On CPU it still runs (and says so); shrink it there with the flags, e.g.
``python bench/bench_gpu.py --lists 200 --items 1000``.

Usage:
  python bench/bench_gpu.py [--lists 100000] [--items 1000] [--relevant 16]
                            [--cand-lists N] [--candidates N] [--repeats 20] [--json PATH]
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time

import jax
import jax.numpy as jnp

import jaxrank


def median_ms(fn, *args, repeats: int) -> tuple[float, float]:
  """(median, best) wall time in ms of ``fn(*args)`` after one warm-up call."""
  jax.block_until_ready(fn(*args))
  times = []
  for _ in range(max(1, repeats)):
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    times.append((time.perf_counter() - start) * 1e3)
  return statistics.median(times), min(times)


@jax.jit
def sparse_ndcg(scores, relevant_ids):
  ranks = jaxrank.from_sparse(scores, relevant_ids, method="count")
  return jaxrank.ndcg(ranks, k=10)


@jax.jit
def top10(scores):
  return jax.lax.top_k(scores, 10)


@jax.jit
def candidates_rr_hits(pos, cand):
  ranks = jaxrank.from_candidates(pos, cand)
  return jaxrank.reciprocal_rank(ranks), jaxrank.hit_rate(ranks, k=10)


@jax.jit
def max_read(cand):
  return jnp.max(cand, axis=-1)


def workload_sparse(lists: int, items: int, relevant: int):
  k_scores, k_ids = jax.random.split(jax.random.key(0))
  scores = jax.random.normal(k_scores, (lists, items), jnp.float32)
  # `relevant` distinct ids per list: the top-k positions of uniform noise.
  ids = jax.lax.top_k(jax.random.uniform(k_ids, (lists, items)), relevant)[1].astype(jnp.int32)
  return jax.block_until_ready((scores, ids))


def workload_candidates(lists: int, candidates: int):
  k_pos, k_cand = jax.random.split(jax.random.key(1))
  pos = jax.random.normal(k_pos, (lists,), jnp.float32) + 3.0  # positives score higher
  cand = jax.random.normal(k_cand, (lists, candidates), jnp.float32)
  return jax.block_until_ready((pos, cand))


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--lists", type=int, default=100_000, help="(a) number of lists")
  parser.add_argument("--items", type=int, default=1_000, help="(a) catalog size")
  parser.add_argument("--relevant", type=int, default=16, help="(a) relevant ids per list")
  parser.add_argument("--cand-lists", type=int, default=None,
                      help="(b) number of positives (default: --lists / 10)")
  parser.add_argument("--candidates", type=int, default=None,
                      help="(b) candidates per positive (default: --items * 100)")
  parser.add_argument("--repeats", type=int, default=20)
  parser.add_argument("--json", type=str, default=None, help="write the results to this file")
  args = parser.parse_args(argv)
  cand_lists = args.cand_lists or max(1, args.lists // 10)
  candidates = args.candidates or args.items * 100

  device = jax.devices()[0]
  print(f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
  print(f"jax {jax.__version__}, jaxrank {jaxrank.__version__}, backend "
        f"{jax.default_backend()}, device {device.device_kind} (x{jax.device_count()})")
  if jax.default_backend() == "cpu":
    print("NOTE: running on CPU, not on an accelerator; these numbers do not describe GPU "
          "performance (use small --lists/--items here).")
  print()

  scores, ids = workload_sparse(args.lists, args.items, args.relevant)
  a_med, a_best = median_ms(sparse_ndcg, scores, ids, repeats=args.repeats)
  t_med, t_best = median_ms(top10, scores, repeats=args.repeats)
  ndcg_mean = float(jnp.mean(sparse_ndcg(scores, ids)))
  del scores, ids

  pos, cand = workload_candidates(cand_lists, candidates)
  b_med, b_best = median_ms(candidates_rr_hits, pos, cand, repeats=args.repeats)
  m_med, m_best = median_ms(max_read, cand, repeats=args.repeats)
  rr, hits = candidates_rr_hits(pos, cand)
  mrr_mean, hits_mean = float(jnp.mean(rr)), float(jnp.mean(hits))
  del pos, cand

  rows = [
      ("a", f"{args.lists} x {args.items}, {args.relevant} relevant ids",
       "jit(from_sparse(method='count') + ndcg@10)", a_med, a_best, a_med / t_med),
      ("a", "", "jit(lax.top_k(scores, 10)) (baseline)", t_med, t_best, 1.0),
      ("b", f"{cand_lists} positives x {candidates} candidates",
       "jit(from_candidates + reciprocal_rank + hit_rate@10)", b_med, b_best, b_med / m_med),
      ("b", "", "jit(jnp.max(cand, axis=-1)) (single read, baseline)", m_med, m_best, 1.0),
  ]
  print(f"median / best of {args.repeats} calls after warm-up (compilation excluded)\n")
  print("| workload | shape | what | ms (median) | ms (best) | / baseline |")
  print("|---|---|---|---:|---:|---:|")
  for w, shape, what, med, best, ratio in rows:
    print(f"| {w} | {shape} | {what} | {med:.3f} | {best:.3f} | {ratio:.2f}x |")
  print(f"\n(a) mean ndcg@10 = {ndcg_mean:.6f}; (b) mrr = {mrr_mean:.6f}, "
        f"hits@10 = {hits_mean:.6f}")

  if args.json:
    result = {
        "backend": jax.default_backend(), "device": device.device_kind,
        "jax": jax.__version__, "config": vars(args) | {"cand_lists": cand_lists,
                                                        "candidates": candidates},
        "rows": [dict(zip(("workload", "shape", "what", "ms_median", "ms_best",
                           "ratio_to_baseline"), r)) for r in rows],
        "means": {"ndcg@10": ndcg_mean, "mrr": mrr_mean, "hits@10": hits_mean},
    }
    with open(args.json, "w") as f:
      json.dump(result, f, indent=2)
    print(f"wrote {args.json}")


if __name__ == "__main__":
  main()
