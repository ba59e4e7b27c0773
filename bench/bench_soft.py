"""Soft NDCG and fast soft rank: forward+backward time and compiled peak memory.

    python bench/bench_soft.py [--quick] [--repeats 5]

Part 1, soft NDCG@10 (sigmoid ranks, T = 0.1) and its gradient w.r.t. the scores:
  * jaxrank ``soft_ndcg``: ranks of the relevant items only, O(R x n), from dense labels and from
    the sparse form (``relevant_ids``);
  * the O(n^2) ApproxNDCG of Rax/TF-Ranking: every item's rank from an ``[n, n]`` matrix (run in
    blocks of 128 lists so that 1,024 x 1,000 fits in memory here; at 100,000 candidates only
    its compiled memory is reported, it cannot run).
  Sizes: 1,024 lists x 1,000 candidates and 256 lists x 100,000 candidates, 16 relevant per list.
Part 2, fast soft rank (forward + backward of a random linear function of the ranks) against
ott-jax's Sinkhorn ranks, torchsort and softjax where they import.

Memory is XLA's compiled estimate (arguments + outputs + temporaries) of the jitted call.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxrank

T = 0.1
K = 10


def approx_ndcg_n2(scores, labels, where=None):
  """Rax/TF-Ranking's ApproxNDCG@k: sigmoid ranks of every item from an [n, n] matrix."""
  n = scores.shape[-1]
  diff = (scores[..., None, :] - scores[..., :, None]) / T
  pair = jax.nn.sigmoid(diff) * (1.0 - jnp.eye(n, dtype=scores.dtype))
  if where is not None:
    pair = jnp.where(where[..., None, :], pair, 0.0)
  ranks = 1.0 + jnp.sum(pair, axis=-1)
  gains = labels.astype(scores.dtype)
  cut = jax.nn.sigmoid((K + 0.5 - ranks) / T)
  dcg = jnp.sum(gains * cut / jnp.log2(1.0 + ranks), axis=-1)
  best = -jnp.sort(-gains, axis=-1)[..., :K]
  ideal = jnp.sum(best / jnp.log2(2.0 + jnp.arange(best.shape[-1])), axis=-1)
  return jnp.where(ideal > 0, dcg / jnp.where(ideal > 0, ideal, 1.0), 0.0)


def blocked(fn, block=128):
  """Runs ``fn`` over blocks of lists with ``lax.map`` (bounded memory, same math)."""
  def run(scores, labels):
    lists = scores.shape[0]
    if lists <= block:
      return fn(scores, labels)
    out = jax.lax.map(lambda a: fn(*a), (scores.reshape(-1, block, scores.shape[-1]),
                                         labels.reshape(-1, block, labels.shape[-1])))
    return out.reshape(lists)
  return run


def timed(fn, *args, repeats):
  jax.block_until_ready(fn(*args))
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    times.append(time.perf_counter() - t0)
  return 1e3 * float(np.median(times))


def memory_mb(fn, *args):
  stats = fn.lower(*args).compile().memory_analysis()
  if stats is None:
    return float("nan")
  total = (stats.argument_size_in_bytes + stats.output_size_in_bytes
           + stats.temp_size_in_bytes - stats.alias_size_in_bytes)
  return total / 2**20


def grad_of(metric):
  return jax.jit(jax.value_and_grad(lambda s, *a: jnp.sum(metric(s, *a))))


def problem(lists, n, relevant, seed=0):
  rng = np.random.default_rng(seed)
  scores = rng.normal(size=(lists, n)).astype(np.float32)
  ids = np.stack([rng.choice(n, relevant, replace=False) for _ in range(lists)]).astype(np.int32)
  grades = rng.integers(1, 4, ids.shape).astype(np.float32)
  labels = np.zeros((lists, n), np.float32)
  np.put_along_axis(labels, ids, grades, axis=-1)
  return jnp.asarray(scores), jnp.asarray(labels), jnp.asarray(ids), jnp.asarray(grades)


def soft_ndcg_rows(lists, n, relevant, repeats, run_n2):
  scores, labels, ids, grades = problem(lists, n, relevant)
  dense = grad_of(lambda s, y: jaxrank.soft_ndcg(s, y, k=K, temperature=T,
                                                 max_relevant=relevant))
  sparse = grad_of(lambda s, i, g: jaxrank.soft_ndcg(s, relevant_ids=i, relevant_grades=g, k=K,
                                                     temperature=T))
  n2 = grad_of(blocked(approx_ndcg_n2))
  rows = []
  # The two jaxrank forms and the O(n^2) form must agree before anything is timed.
  v_dense, _ = dense(scores, labels)
  v_sparse, _ = sparse(scores, ids, grades)
  np.testing.assert_allclose(v_dense, v_sparse, rtol=1e-4)
  rows.append(("jaxrank soft_ndcg, dense labels", timed(dense, scores, labels, repeats=repeats),
               memory_mb(dense, scores, labels)))
  rows.append(("jaxrank soft_ndcg, sparse ids", timed(sparse, scores, ids, grades,
                                                      repeats=repeats),
               memory_mb(sparse, scores, ids, grades)))
  mem = memory_mb(n2, scores, labels)
  if run_n2:
    v_n2, _ = n2(scores, labels)
    np.testing.assert_allclose(v_n2, v_dense, rtol=2e-3)
    rows.append(("O(n^2) ApproxNDCG (Rax/TF-Ranking form, 128-list blocks)",
                 timed(n2, scores, labels, repeats=repeats), mem))
  else:
    rows.append(("O(n^2) ApproxNDCG (Rax/TF-Ranking form, 128-list blocks)", float("nan"), mem))
  return rows


def fast_rank_rows(lists, n, repeats):
  rng = np.random.default_rng(1)
  x = rng.normal(size=(lists, n)).astype(np.float32)
  w = rng.normal(size=(lists, n)).astype(np.float32)
  eps = 0.1
  rows = []
  ours = jax.jit(jax.value_and_grad(
      lambda s: jnp.sum(w * jaxrank.fast_soft_rank(s, temperature=eps))))
  rows.append((f"jaxrank fast_soft_rank L2 (eps={eps})", timed(ours, jnp.asarray(x),
                                                              repeats=repeats)))
  ours_kl = jax.jit(jax.value_and_grad(
      lambda s: jnp.sum(w * jaxrank.fast_soft_rank(s, temperature=eps, regularization="kl"))))
  rows.append((f"jaxrank fast_soft_rank KL (eps={eps})", timed(ours_kl, jnp.asarray(x),
                                                              repeats=repeats)))
  try:
    import ott
    from ott.tools import soft_sort

    # Implicit differentiation (ott's default) hit a non-finite linear solve here; unrolled
    # backpropagation through the Sinkhorn iterations works.
    ott_fn = jax.jit(jax.value_and_grad(lambda s: jnp.sum(w * soft_sort.ranks(
        -s, axis=-1, epsilon=1e-2, implicit_diff=None))))
    rows.append((f"ott-jax {ott.__version__} soft_sort.ranks (Sinkhorn eps=1e-2, unrolled)",
                 timed(ott_fn, jnp.asarray(x), repeats=max(1, repeats // 2))))
  except ImportError as e:
    rows.append((f"ott-jax: not importable ({e})", float("nan")))
  except Exception as e:  # report the failure in the table
    rows.append((f"ott-jax: failed ({type(e).__name__}: {str(e)[:60]})", float("nan")))
  try:
    import torch
    import torchsort

    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w)

    def torch_step():
      xt.grad = None
      loss = (wt * torchsort.soft_rank(-xt, regularization_strength=eps)).sum()
      loss.backward()
      return xt.grad

    torch_step()
    t = []
    for _ in range(repeats):
      t0 = time.perf_counter()
      torch_step()
      t.append(time.perf_counter() - t0)
    version = importlib.metadata.version("torchsort")
    rows.append((f"torchsort {version} soft_rank L2, CPU extension (torch {torch.__version__})",
                 1e3 * float(np.median(t))))
  except ImportError as e:
    rows.append((f"torchsort: not importable ({e})", float("nan")))
  try:
    import softjax  # noqa: F401
    rows.append(("softjax: imported but not wired in this script", float("nan")))
  except ImportError as e:
    rows.append((f"softjax: not importable ({e})", float("nan")))
  return rows


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
  parser.add_argument("--repeats", type=int, default=5)
  args = parser.parse_args()
  print(f"jax {jax.__version__}, backend {jax.default_backend()}, devices {jax.devices()}")
  sizes = [(64, 500, 16, True), (64, 10_000, 16, False)] if args.quick else [
      (1024, 1000, 16, True), (256, 100_000, 16, False)]
  print("\nsoft NDCG@10 (sigmoid, T=0.1), value and gradient, 16 relevant per list")
  print("| lists x candidates | implementation | time (ms) | compiled memory (MB) |")
  print("|---|---|---|---|")
  for lists, n, relevant, run_n2 in sizes:
    for name, ms, mb in soft_ndcg_rows(lists, n, relevant, args.repeats, run_n2):
      shown = "cannot run" if np.isnan(ms) else f"{ms:,.1f}"
      print(f"| {lists:,} x {n:,} | {name} | {shown} | {mb:,.0f} |")
  fast_sizes = [(64, 100)] if args.quick else [(256, 100), (64, 1000)]
  print("\nfast soft rank, value and gradient of sum(w * ranks)")
  print("| lists x n | implementation | time (ms) |")
  print("|---|---|---|")
  for lists, n in fast_sizes:
    for name, ms in fast_rank_rows(lists, n, args.repeats):
      print(f"| {lists:,} x {n:,} | {name} | {'-' if np.isnan(ms) else f'{ms:,.1f}'} |")


if __name__ == "__main__":
  main()
