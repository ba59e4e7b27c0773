"""Link-prediction benchmark: MRR and Hits@10 of 1 positive vs candidates, jaxrank vs PyKEEN.

Workload (deterministic, numpy seed 0): ``--queries`` queries, each a positive score and
``--candidates`` candidate scores, float32 uniform in [0, 1) rounded to 3 decimals (so ties
occur), processed in batches of ``--batch`` queries as both tools do (a 100,000 x 10,000 float32
score matrix is 4 GB). Generating the scores is not timed.

Timed, per batch and summed over batches (the median of ``--repeats`` full passes):
* jaxrank: ``linkpred.evaluate(pos, cand, ["mrr", "hits@10"], reduce=None)`` with realistic ties,
  ``jax.block_until_ready``; the per-query values are summed on the device.
* PyKEEN: ``RankBasedEvaluator.process_scores_(hrt_batch, "tail", all_scores, true_scores)`` for
  every batch, then ``finalize()`` (which computes all of its rank-based metrics from the stored
  ranks); the scores it receives already include the true score (its convention), built outside
  the timing. Model scoring is not part of either timing.
* NumPy written the obvious way: ``(cand > pos).sum`` and ``(cand >= pos).sum`` per batch.

Usage:
  python bench/bench_linkpred.py [--queries 100000] [--candidates 10000] [--batch 5000]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import linkpred


def version(name: str) -> str:
  try:
    return importlib.metadata.version(name)
  except importlib.metadata.PackageNotFoundError:
    return "not installed"


def batches(queries: int, candidates: int, batch: int, seed: int = 0):
  rng = np.random.default_rng(seed)
  for start in range(0, queries, batch):
    b = min(batch, queries - start)
    pos = np.round(rng.random(b, dtype=np.float32), 3)
    cand = np.round(rng.random((b, candidates), dtype=np.float32), 3)
    yield pos, cand


def run_jaxrank(data):
  total_rr, total_h, elapsed = 0.0, 0.0, 0.0
  for pos, cand in data:
    p, c = jax.device_put(pos), jax.device_put(cand)
    jax.block_until_ready((p, c))
    t = time.perf_counter()
    out = linkpred.evaluate(p, c, ["mrr", "hits@10"], reduce=None)
    sums = jax.block_until_ready((jnp.sum(out["mrr"]), jnp.sum(out["hits@10"])))
    elapsed += time.perf_counter() - t
    total_rr += float(sums[0])
    total_h += float(sums[1])
  return elapsed, total_rr, total_h


def run_numpy(data):
  total_rr, total_h, elapsed = 0.0, 0.0, 0.0
  for pos, cand in data:
    t = time.perf_counter()
    rank = 1 + 0.5 * ((cand > pos[:, None]).sum(1) + (cand >= pos[:, None]).sum(1))
    rr, h = float((1 / rank).sum()), float((rank <= 10).sum())
    elapsed += time.perf_counter() - t
    total_rr += rr
    total_h += h
  return elapsed, total_rr, total_h


PYKEEN_SPLIT = (0.0, 0.0)


def run_pykeen(data):
  import torch
  from pykeen.evaluation import RankBasedEvaluator

  evaluator = RankBasedEvaluator(clear_on_finalize=True)
  elapsed = 0.0
  global PYKEEN_SPLIT
  for pos, cand in data:
    true = torch.from_numpy(pos[:, None])
    scores = torch.from_numpy(np.concatenate([pos[:, None], cand], axis=1))
    hrt = torch.zeros((pos.shape[0], 3), dtype=torch.long)
    t = time.perf_counter()
    with torch.inference_mode():
      evaluator.process_scores_(hrt, "tail", scores, true_scores=true)
    elapsed += time.perf_counter() - t
  t = time.perf_counter()
  result = evaluator.finalize()
  PYKEEN_SPLIT = (elapsed, time.perf_counter() - t)
  elapsed += PYKEEN_SPLIT[1]
  mrr = result.get_metric("tail.realistic.inverse_harmonic_mean_rank")
  hits = result.get_metric("tail.realistic.hits_at_10")
  return elapsed, mrr, hits


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  ap.add_argument("--queries", type=int, default=100_000)
  ap.add_argument("--candidates", type=int, default=10_000)
  ap.add_argument("--batch", type=int, default=5_000)
  ap.add_argument("--repeats", type=int, default=1)
  args = ap.parse_args()
  q, c, b = args.queries, args.candidates, args.batch
  print(f"# link prediction, {q:,} queries x {c:,} candidates, batches of {b:,}; "
        f"jax {jax.__version__} ({jax.default_backend()}), numpy {np.__version__}, "
        f"pykeen {version('pykeen')}, torch {version('torch')}; {platform.processor() or '?'}")
  # Compile once outside the timing (one batch shape; a shorter last batch compiles once more).
  warm = next(batches(b, c, b, seed=1))
  jax.block_until_ready(linkpred.evaluate(warm[0], warm[1], ["mrr", "hits@10"], reduce=None))
  if q % b:
    w = next(batches(q % b, c, q % b, seed=1))
    jax.block_until_ready(linkpred.evaluate(w[0], w[1], ["mrr", "hits@10"], reduce=None))

  rows = []
  for name, fn in [("jaxrank linkpred.evaluate (realistic)", run_jaxrank),
                   ("NumPy (cand > pos).sum, (cand >= pos).sum", run_numpy),
                   ("PyKEEN RankBasedEvaluator", run_pykeen)]:
    times, value = [], None
    for _ in range(args.repeats):
      try:
        elapsed, rr, hits = fn(batches(q, c, b))
      except ImportError as e:
        value = f"skipped ({e})"
        break
      times.append(elapsed)
      norm = 1.0 if name.startswith("PyKEEN") else 1.0 / q
      value = f"MRR {rr * norm:.6f}, Hits@10 {hits * norm:.6f}"
      if name.startswith("PyKEEN"):
        value += (f" (process_scores_ {PYKEEN_SPLIT[0]:.2f} s + finalize, all its metrics, "
                  f"{PYKEEN_SPLIT[1]:.2f} s)")
    t = f"{statistics.median(times):.2f}" if times else "-"
    rows.append((name, t, value))
  print("| implementation | time (s, all batches) | result |")
  print("|---|---|---|")
  for row in rows:
    print(f"| {row[0]} | {row[1]} | {row[2]} |")


if __name__ == "__main__":
  main()
