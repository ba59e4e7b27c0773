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

(c) Full-catalog evaluation: ``--users`` x ``--catalog`` float32 embeddings of ``--dim``
    (default 100,000 x 1,000,000 x 64), ``--held-out`` (10) and 50 seen items per user, five
    metrics and the top 20 by ``jaxrank.catalog.evaluate(method="count")`` (and ``"auto"``).
    Baseline: the same tiles by hand, a jitted blocked matmul with the seen items masked and
    ``lax.top_k`` merged per tile (``bench_catalog.blocked_top_k``: top-k ids only, no ranks).
(d) Streaming evaluation in a training loop: ``MetricState.update`` jitted, ``--state-steps``
    batches of ``--state-batch`` x ``--items`` scores and graded labels (``max_relevant=16``),
    five metrics. Baseline: the same number of jitted ``lax.top_k(scores, 10)`` calls.

Meant for a GPU/TPU. On CPU it still runs (and says so); shrink it there with the flags, e.g.
``python bench/bench_gpu.py --lists 200 --items 1000``.

Usage:
  python bench/bench_gpu.py [--lists 100000] [--items 1000] [--relevant 16]
                            [--cand-lists N] [--candidates N] [--users 100000]
                            [--catalog 1000000] [--dim 64] [--state-batch 4096]
                            [--state-steps 20] [--only a,b,c,d] [--repeats 20] [--json PATH]
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
from bench_catalog import blocked_top_k
from bench_catalog import workload as catalog_workload
from jaxrank import catalog

FIVE = ["ndcg@10", "map", "mrr", "precision@10", "recall@10"]


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


def rows_catalog(users: int, items: int, dim: int, held_out: int,
                 repeats: int) -> tuple[list, dict]:
  """(c): catalog.evaluate, count and auto, against the by-hand blocked matmul + top_k."""
  q, it, rel, seen = (jnp.asarray(x) for x in catalog_workload(users, items, dim, held_out, 50))
  ub, ib = catalog.default_block_sizes(users, items, relevant=held_out, k=20)

  def run(method):
    return jax.jit(lambda q, it, rel, seen: catalog.evaluate(
        q, it, rel, FIVE, exclude_ids=seen, top_k=20, reduce="mean", user_block=ub,
        item_block=ib, method=method).metrics)

  by_hand = blocked_top_k(q, it, seen, ub, ib, 20)
  h_med, h_best = median_ms(by_hand, repeats=repeats)
  rows, means = [], {}
  for method in ("count", "auto"):
    fn = run(method)
    med, best = median_ms(fn, q, it, rel, seen, repeats=repeats)
    rows.append(("c", f"{users} x {items} x d{dim}, {held_out} held-out, 50 seen, top-20 (tiles "
                 f"{ub} x {ib})" if method == "count" else "",
                 f"catalog.evaluate(method={method!r}), five metrics + top_k", med, best,
                 med / h_med))
    means[f"catalog {method} mrr"] = float(fn(q, it, rel, seen)["mrr"])
  rows.append(("c", "", "jitted blocked matmul + lax.top_k, seen masked (by hand, baseline)",
               h_med, h_best, 1.0))
  return rows, means


def rows_state(batch: int, items: int, steps: int, repeats: int) -> tuple[list, dict]:
  """(d): ``steps`` jitted MetricState.update calls against as many jitted top_k calls."""
  keys = jax.random.split(jax.random.key(2), 2)
  scores = jax.random.normal(keys[0], (batch, items), jnp.float32)
  labels = jnp.where(jax.random.uniform(keys[1], (batch, items)) < 0.005,
                     jax.random.randint(keys[1], (batch, items), 1, 4), 0).astype(jnp.int32)
  step = jax.jit(lambda st, s, y: st.update(s, y))

  def stream(scores, labels):
    state = jaxrank.MetricState.init(FIVE, max_relevant=16)
    for _ in range(steps):
      state = step(state, scores, labels)
    return state.count

  def tops(scores):
    return [top10(scores)[0] for _ in range(steps)]

  s_med, s_best = median_ms(stream, scores, labels, repeats=repeats)
  t_med, t_best = median_ms(tops, scores, repeats=repeats)
  state = jaxrank.MetricState.init(FIVE, max_relevant=16).update(scores, labels)
  return [("d", f"{steps} batches of {batch} x {items}",
           "MetricState.update jitted, five metrics, max_relevant=16", s_med, s_best,
           s_med / t_med),
          ("d", "", f"{steps} x jit(lax.top_k(scores, 10)) (baseline)", t_med, t_best, 1.0)], {
              "state ndcg@10": float(state.compute()["ndcg@10"])}


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--lists", type=int, default=100_000, help="(a) number of lists")
  parser.add_argument("--items", type=int, default=1_000, help="(a) catalog size")
  parser.add_argument("--relevant", type=int, default=16, help="(a) relevant ids per list")
  parser.add_argument("--cand-lists", type=int, default=None,
                      help="(b) number of positives (default: --lists / 10)")
  parser.add_argument("--candidates", type=int, default=None,
                      help="(b) candidates per positive (default: --items * 100)")
  parser.add_argument("--users", type=int, default=100_000, help="(c) users")
  parser.add_argument("--catalog", type=int, default=1_000_000, help="(c) catalog items")
  parser.add_argument("--dim", type=int, default=64, help="(c) embedding dimension")
  parser.add_argument("--held-out", type=int, default=10, help="(c) held-out items per user")
  parser.add_argument("--state-batch", type=int, default=4096, help="(d) lists per batch")
  parser.add_argument("--state-steps", type=int, default=20, help="(d) batches per stream")
  parser.add_argument("--only", type=str, default="a,b,c,d", help="workloads to run")
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

  only = set(args.only.split(","))
  rows: list = []
  means: dict = {}
  if "a" in only:
    scores, ids = workload_sparse(args.lists, args.items, args.relevant)
    a_med, a_best = median_ms(sparse_ndcg, scores, ids, repeats=args.repeats)
    t_med, t_best = median_ms(top10, scores, repeats=args.repeats)
    means["(a) ndcg@10"] = float(jnp.mean(sparse_ndcg(scores, ids)))
    del scores, ids
    rows += [("a", f"{args.lists} x {args.items}, {args.relevant} relevant ids",
              "jit(from_sparse(method='count') + ndcg@10)", a_med, a_best, a_med / t_med),
             ("a", "", "jit(lax.top_k(scores, 10)) (baseline)", t_med, t_best, 1.0)]
  if "b" in only:
    pos, cand = workload_candidates(cand_lists, candidates)
    b_med, b_best = median_ms(candidates_rr_hits, pos, cand, repeats=args.repeats)
    m_med, m_best = median_ms(max_read, cand, repeats=args.repeats)
    rr, hits = candidates_rr_hits(pos, cand)
    means["(b) mrr"], means["(b) hits@10"] = float(jnp.mean(rr)), float(jnp.mean(hits))
    del pos, cand
    rows += [("b", f"{cand_lists} positives x {candidates} candidates",
              "jit(from_candidates + reciprocal_rank + hit_rate@10)", b_med, b_best,
              b_med / m_med),
             ("b", "", "jit(jnp.max(cand, axis=-1)) (single read, baseline)", m_med, m_best,
              1.0)]
  if "c" in only:
    more, found = rows_catalog(args.users, args.catalog, args.dim, args.held_out, args.repeats)
    rows, means = rows + more, means | found
  if "d" in only:
    more, found = rows_state(args.state_batch, args.items, args.state_steps, args.repeats)
    rows, means = rows + more, means | found
  print(f"median / best of {args.repeats} calls after warm-up (compilation excluded)\n")
  print("| workload | shape | what | ms (median) | ms (best) | / baseline |")
  print("|---|---|---|---:|---:|---:|")
  for w, shape, what, med, best, ratio in rows:
    print(f"| {w} | {shape} | {what} | {med:.3f} | {best:.3f} | {ratio:.2f}x |")
  print("\nmeans (sanity): " + ", ".join(f"{k} = {v:.6f}" for k, v in means.items()))

  if args.json:
    result = {
        "backend": jax.default_backend(), "device": device.device_kind,
        "jax": jax.__version__, "config": vars(args) | {"cand_lists": cand_lists,
                                                        "candidates": candidates},
        "rows": [dict(zip(("workload", "shape", "what", "ms_median", "ms_best",
                           "ratio_to_baseline"), r)) for r in rows],
        "means": means,
    }
    with open(args.json, "w") as f:
      json.dump(result, f, indent=2)
    print(f"wrote {args.json}")


if __name__ == "__main__":
  main()
