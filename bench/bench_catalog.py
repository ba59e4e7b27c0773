"""Full-catalog evaluation from embeddings (issue 14): jaxrank.catalog against its limits.

Workload (numpy seed 0): ``--users`` x ``--dim`` and ``--items`` x ``--dim`` float32 embeddings,
``--relevant`` held-out and ``--seen`` excluded items per user (disjoint arithmetic progressions), five metrics
(ndcg@10, map, mrr, precision@10, recall@10) and the top-``--k`` ids.

Rows (median of ``--repeats`` after a warm-up call):
* ``matmul``: the bare blocked matmul producing the same scores (each tile reduced by ``max`` so
  XLA cannot drop it), the limit; jaxrank.catalog's time is reported as a multiple of it;
* the same tiles with the seen items masked and ``lax.top_k`` per tile, merged by ``lax.top_k``:
  what a user writes by hand for top-k ids (no ranks, no tie rule);
* ``jaxrank.catalog`` with ``method="histogram"`` and ``"count"``;
* NumPy: materialised ``[user_block, items]`` blocks (NumPy matmul), seen items masked,
  ``argpartition`` top-k, ranks of the held-out items by counting, the five metrics;
* ``torch.topk`` on the same blocks if torch imports (top-k only, no ranks).
``--rss ITEMS`` instead runs jaxrank.catalog once on ``ITEMS`` items and prints the peak RSS
(materialising users x items float32 would need users x items x 4 bytes).

Usage:
  python bench/bench_catalog.py                       # 10,000 x 200,000 x 64, CPU (minutes)
  python bench/bench_catalog.py --quick               # 1,000 x 20,000
  python bench/bench_catalog.py --rss 1000000         # peak RSS at 1M items
  python bench/bench_catalog.py --users 100000 --items 1000000   # on a GPU
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import catalog

METRICS = ["ndcg@10", "map", "mrr", "precision@10", "recall@10"]


def workload(users, items, dim, relevant, seen, seed=0):
  rng = np.random.default_rng(seed)
  q = rng.standard_normal((users, dim), dtype=np.float32)
  it = (rng.standard_normal((items, dim), dtype=np.float32) / np.sqrt(dim)).astype(np.float32)
  # distinct ids per row without a [users, items] array: (a + j b) mod items, j < m, b < items / m
  m = relevant + seen
  a = rng.integers(0, items, users)
  b = rng.integers(1, max(2, items // m), users)
  ids = ((a[:, None] + np.arange(m) * b[:, None]) % items).astype(np.int32)
  return q, it, ids[:, :relevant], ids[:, relevant:]


def timed(fn, repeats):
  jax.block_until_ready(fn())
  ts = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(fn())
    ts.append(time.perf_counter() - t0)
  return statistics.median(ts)


def blocked_matmul(q, it, ub, ib):
  users, items = q.shape[0], it.shape[0]

  @jax.jit
  def run(q, it):
    def user_block(b, acc):
      qb = jax.lax.dynamic_slice_in_dim(q, jnp.minimum(b * ub, users - ub), ub)

      def tile(m, t):
        block = jax.lax.dynamic_slice_in_dim(it, jnp.minimum(t * ib, items - ib), ib)
        return jnp.maximum(m, jnp.max(qb @ block.T, axis=1)), None

      m, _ = jax.lax.scan(tile, jnp.full((ub,), -jnp.inf), jnp.arange(-(-items // ib)))
      return acc + jnp.sum(m)

    return jax.lax.fori_loop(0, -(-users // ub), user_block, 0.0)

  return lambda: run(q, it)


def blocked_top_k(q, it, seen, ub, ib, k):
  """What a user writes by hand: the same tiles, seen items masked, ``lax.top_k`` per tile and a
  ``lax.top_k`` merge with the running best (top-k ids only: no ranks, no ties rule)."""
  users, items = q.shape[0], it.shape[0]

  @jax.jit
  def run(q, it, seen):
    def user_block(b, out):
      s = jnp.minimum(b * ub, users - ub)
      qb = jax.lax.dynamic_slice_in_dim(q, s, ub)
      rows = jax.lax.broadcasted_iota(jnp.int32, (ub, seen.shape[1]), 0)
      sb = jax.lax.dynamic_slice_in_dim(seen, s, ub)

      def tile(top, t):
        off = jnp.minimum(t * ib, items - ib)
        scores = qb @ jax.lax.dynamic_slice_in_dim(it, off, ib).T
        scores = scores.at[rows, sb - off].set(-jnp.inf, mode="drop")
        v, i = jax.lax.top_k(scores, k)
        v, j = jax.lax.top_k(jnp.concatenate([top[0], v], 1), k)
        return (v, jnp.take_along_axis(jnp.concatenate([top[1], i + off], 1), j, 1)), None

      init = (jnp.full((ub, k), -jnp.inf), jnp.zeros((ub, k), jnp.int32))
      (_, ids), _ = jax.lax.scan(tile, init, jnp.arange(-(-items // ib)))
      return jax.lax.dynamic_update_slice_in_dim(out, ids, s, 0)

    return jax.lax.fori_loop(0, -(-users // ub), user_block, jnp.zeros((users, k), jnp.int32))

  return lambda: run(q, it, seen)


def numpy_eval(q, it, rel, seen, k, ub):
  """Materialised blocks, argpartition top-k, counted ranks, the five metrics (means)."""
  users = q.shape[0]
  out = np.zeros(5)
  for s in range(0, users, ub):
    scores = q[s:s + ub] @ it.T
    rows = np.arange(scores.shape[0])[:, None]
    scores[rows, seen[s:s + ub]] = -np.inf
    part = np.argpartition(-scores, k, axis=1)[:, :k]
    top = np.take_along_axis(part, np.argsort(-np.take_along_axis(scores, part, 1), 1), 1)
    mine = np.take_along_axis(scores, rel[s:s + ub], 1)
    rank = 1 + (scores[:, None, :] > mine[:, :, None]).sum(-1) if mine.shape[1] <= 4 else (
        1 + np.stack([(scores > mine[:, j:j + 1]).sum(1) for j in range(mine.shape[1])], 1))
    r = rel.shape[1]
    disc = 1 / np.log2(rank + 1)
    ideal = (1 / np.log2(np.arange(2, min(r, 10) + 2))).sum()
    out += [np.sum(np.where(rank <= 10, disc, 0), 1).sum() / ideal,
            np.sum(np.arange(1, r + 1) / np.sort(rank, 1), 1).sum() / r,
            (1 / rank.min(1)).sum(), (rank <= 10).sum() / 10, (rank <= 10).sum() / r]
    del top
  return out / users


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--users", type=int, default=10_000)
  p.add_argument("--items", type=int, default=200_000)
  p.add_argument("--dim", type=int, default=64)
  p.add_argument("--relevant", type=int, default=20)
  p.add_argument("--seen", type=int, default=50)
  p.add_argument("--k", type=int, default=10)
  p.add_argument("--repeats", type=int, default=3)
  p.add_argument("--user-block", type=int, default=None)
  p.add_argument("--item-block", type=int, default=None)
  p.add_argument("--quick", action="store_true", help="1,000 users x 20,000 items")
  p.add_argument("--rss", type=int, default=None, metavar="ITEMS",
                 help="only run jaxrank.catalog once on ITEMS items and print the peak RSS")
  a = p.parse_args()
  if a.quick:
    a.users, a.items = 1_000, 20_000
  if a.rss:
    a.items = a.rss
  q, it, rel, seen = workload(a.users, a.items, a.dim, a.relevant, a.seen)
  ub, ib = catalog.default_block_sizes(a.users, a.items, relevant=a.relevant, k=a.k)
  ub, ib = a.user_block or ub, a.item_block or ib
  print(f"jax {jax.__version__}, {jax.devices()[0].device_kind}; {a.users:,} users x "
        f"{a.items:,} items x d={a.dim}, {a.relevant} held-out + {a.seen} seen per user, "
        f"top-{a.k}; tiles {ub} x {ib}")
  qd, itd, reld, seend = (jnp.asarray(x) for x in (q, it, rel, seen))

  def run(method):
    return lambda: catalog.evaluate(qd, itd, reld, METRICS, exclude_ids=seend, top_k=a.k,
                                    reduce="mean", user_block=ub, item_block=ib, method=method)

  if a.rss:
    t0 = time.perf_counter()
    out = jax.block_until_ready(run("auto")())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"jaxrank.catalog once (compile included): {time.perf_counter() - t0:.1f} s, peak RSS "
          f"{peak:.2f} GiB (materialising: {a.users * a.items * 4 / 2**30:.1f} GiB); "
          f"mrr {float(out.metrics['mrr']):.4f}")
    return
  base = timed(blocked_matmul(qd, itd, ub, ib), a.repeats)
  print(f"| bare blocked matmul (the limit) | {base * 1e3:,.0f} ms | 1.0x |")
  by_hand = timed(blocked_top_k(qd, itd, seend, ub, ib, a.k), a.repeats)
  print(f"| jitted blocked matmul + lax.top_k, seen masked (by hand; top-k only) | "
        f"{by_hand * 1e3:,.0f} ms | {by_hand / base:.1f}x |")
  for method in ["auto", "histogram", "count"]:
    t = timed(run(method), a.repeats)
    print(f"| jaxrank.catalog method={method} | {t * 1e3:,.0f} ms | {t / base:.1f}x "
          f"({t / by_hand:.2f}x by hand) |")
  t0 = time.perf_counter()
  numpy_eval(q, it, rel, seen, a.k, 1000)
  t = time.perf_counter() - t0
  print(f"| NumPy blocks + argpartition + counted ranks | {t * 1e3:,.0f} ms | {t / base:.1f}x |")
  try:
    import torch
  except ImportError:
    print("| torch.topk | not installed | |")
    return
  qt, itt, seent = torch.from_numpy(q), torch.from_numpy(it), torch.from_numpy(seen).long()

  def torch_topk():
    for s in range(0, a.users, 1000):
      scores = qt[s:s + 1000] @ itt.T
      scores.scatter_(1, seent[s:s + 1000], float("-inf"))
      torch.topk(scores, a.k, dim=1)

  torch_topk()
  t0 = time.perf_counter()
  torch_topk()
  t = time.perf_counter() - t0
  print(f"| torch {torch.__version__} blocks + torch.topk (top-k only, no ranks) | "
        f"{t * 1e3:,.0f} ms | {t / base:.1f}x |")


if __name__ == "__main__":
  main()
