"""Beyond-accuracy benchmark: personalization, intra-list diversity and coverage.

Workload (deterministic, numpy seed 0): ``--users`` top-``--k`` lists over a ``--items`` catalog
with ``--dim``-dimensional float32 item embeddings. List u holds ``(a_u + j b_u) mod items``,
j < k, with ``a_u`` skewed towards small ids (popular items) and ``b_u`` in [1, items / k), so
ids never repeat within a list.

Rows (all in one run, on the same data):
* jaxrank: the public call (input validation included: ``check_ids`` copies the ids to the host
  and sorts each row) and the jitted kernel alone, on device arrays; the median of ``--repeats``
  calls after a warm-up (compilation) call.
* NumPy / SciPy / scikit-learn written the obvious way: personalization from the sparse user x item
  matrix ``X @ X.T`` (on ``--pairwise-users`` users: it is O(users^2); the 1M figure is a
  quadratic extrapolation and labelled so); diversity as a chunked gather + per-list Gram matrix
  (all users) and as a per-user ``sklearn.metrics.pairwise.cosine_distances`` loop (on
  ``--loop-users``, extrapolated linearly, labelled); coverage as ``np.unique``.
* Evidently (legacy ``Report`` with ``DiversityMetric``, ``PersonalizationMetric``,
  ``PopularityBias``) on ``--evidently-users`` users (its ``PairwiseDistance`` builds a dense
  item x item matrix over every recommended item: 100,000^2 float64 = 80 GB at full size), plus
  jaxrank on the same subset, and Evidently's ``PersonalizationMetric`` (count-based pandas code)
  on every user. Skipped when Evidently cannot be imported (0.7.x needs pandas < 3).

Usage:
  python bench/bench_beyond.py [--users 1000000] [--items 100000] [--k 10] [--dim 64]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxrank
from jaxrank._core import beyond as _beyond


def version(name: str) -> str:
  try:
    return importlib.metadata.version(name)
  except importlib.metadata.PackageNotFoundError:
    return "not installed"


def workload(users, items, k, dim, seed=0):
  rng = np.random.default_rng(seed)
  a = (items * rng.random(users) ** 3).astype(np.int64)
  b = rng.integers(1, items // k, users)
  ids = ((a[:, None] + np.arange(k) * b[:, None]) % items).astype(np.int32)
  emb = rng.standard_normal((items, dim), dtype=np.float32)
  return ids, emb


def timed(fn, repeats):
  out = jax.block_until_ready(fn())
  ts = []
  for _ in range(repeats):
    t = time.perf_counter()
    out = jax.block_until_ready(fn())
    ts.append(time.perf_counter() - t)
  return statistics.median(ts), out


# ----------------------------------------------------------------------------- obvious ways
def personalization_sparse(ids, items):
  import scipy.sparse as sp
  n, k = ids.shape
  x = sp.csr_matrix((np.ones(ids.size, np.float32), ids.ravel(), np.arange(0, ids.size + 1, k)),
                    shape=(n, items))
  overlap = x @ x.T
  shared = (overlap.sum() - overlap.diagonal().sum()) / 2
  return 1 - shared / (k * n * (n - 1) / 2)


def diversity_numpy(ids, emb, chunk=50_000):
  unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
  k = ids.shape[1]
  iu = np.triu_indices(k, 1)
  out = np.empty(ids.shape[0], np.float32)
  for s in range(0, ids.shape[0], chunk):
    e = unit[ids[s:s + chunk]]
    gram = np.einsum("ukd,ujd->ukj", e, e)
    out[s:s + chunk] = (1 - gram[:, iu[0], iu[1]]).mean(axis=1)
  return out.mean()


def diversity_sklearn_loop(ids, emb):
  from sklearn.metrics.pairwise import cosine_distances
  k = ids.shape[1]
  iu = np.triu_indices(k, 1)
  return np.mean([cosine_distances(emb[row])[iu].mean() for row in ids])


def coverage_numpy(ids, items):
  return np.unique(ids[ids >= 0]).size / items


# ------------------------------------------------------------------------------- Evidently
def evidently_personalization_full(ids):
  """Evidently's personalization is count-based pandas code, so it can run on every user."""
  try:
    import pandas as pd
    from evidently.legacy.metrics import PersonalizationMetric
    from evidently.legacy.pipeline.column_mapping import ColumnMapping, RecomType
    from evidently.legacy.report import Report
  except ImportError as e:
    return [("Evidently PersonalizationMetric, all users", "-", f"skipped: {e}")]
  n, k = ids.shape
  curr = pd.DataFrame({"user_id": np.repeat(np.arange(n), k), "item_id": ids.ravel(),
                       "prediction": np.tile(np.arange(1, k + 1), n), "target": 0})
  metric = PersonalizationMetric(k=k)
  report = Report(metrics=[metric])
  t = time.perf_counter()
  report.run(reference_data=None, current_data=curr,
             column_mapping=ColumnMapping(recommendations_type=RecomType.RANK))
  value = metric.get_result().current_value
  return [(f"Evidently PersonalizationMetric, {n:,} users (DataFrame built outside the timing)",
           f"{time.perf_counter() - t:.3f}", f"{value:.6f}")]


def evidently_rows(ids, emb, items, repeats):
  try:
    import pandas as pd
    from evidently.legacy.metrics import DiversityMetric, PersonalizationMetric, PopularityBias
    from evidently.legacy.pipeline.column_mapping import ColumnMapping, RecomType
    from evidently.legacy.report import Report
  except ImportError as e:
    return [("Evidently", "-", f"skipped: {e}")]
  n, k = ids.shape
  feats = [f"f{i}" for i in range(emb.shape[1])]
  curr = pd.DataFrame({"user_id": np.repeat(np.arange(n), k), "item_id": ids.ravel(),
                       "prediction": np.tile(np.arange(1, k + 1), n), "target": 0})
  curr = pd.concat([curr, pd.DataFrame(emb[ids.ravel()], columns=feats)], axis=1)
  train = pd.DataFrame({"user_id": np.arange(items), "item_id": np.arange(items)})
  mapping = ColumnMapping(recommendations_type=RecomType.RANK)

  def run(metric, extra=None):
    report = Report(metrics=[metric])
    report.run(reference_data=None, current_data=curr, column_mapping=mapping,
               additional_data=extra)
    return metric.get_result()

  rows = []
  for name, make, extra, value in [
      ("DiversityMetric", lambda: DiversityMetric(k=k, item_features=feats), None,
       lambda r: r.current_value),
      ("PersonalizationMetric", lambda: PersonalizationMetric(k=k), None,
       lambda r: r.current_value),
      ("PopularityBias (coverage)", lambda: PopularityBias(k=k),
       {"current_train_data": train}, lambda r: r.current_coverage)]:
    ts = []
    for _ in range(repeats):
      t = time.perf_counter()
      res = run(make(), extra)
      ts.append(time.perf_counter() - t)
    rows.append((f"Evidently {name}, {n:,} users", f"{statistics.median(ts):.3f}",
                 f"{value(res):.6f}"))
  return rows


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  ap.add_argument("--users", type=int, default=1_000_000)
  ap.add_argument("--items", type=int, default=100_000)
  ap.add_argument("--k", type=int, default=10)
  ap.add_argument("--dim", type=int, default=64)
  ap.add_argument("--repeats", type=int, default=3)
  ap.add_argument("--pairwise-users", type=int, default=50_000)
  ap.add_argument("--loop-users", type=int, default=10_000)
  ap.add_argument("--evidently-users", type=int, default=1_000)
  args = ap.parse_args()
  n, items, k = args.users, args.items, args.k
  print(f"# beyond accuracy, {n:,} users x top-{k} over {items:,} items, {args.dim}-d embeddings;"
        f" jax {jax.__version__} ({jax.default_backend()}), numpy {np.__version__}, scipy "
        f"{version('scipy')}, scikit-learn {version('scikit-learn')}, evidently "
        f"{version('evidently')}, pandas {version('pandas')}")
  ids_np, emb_np = workload(n, items, k, args.dim)
  ids, emb = jax.device_put(ids_np), jax.device_put(emb_np)
  r = args.repeats
  rows = []

  def add(name, seconds, value):
    rows.append((name, f"{seconds:.3f}", f"{float(value):.6f}"))

  # jaxrank, public calls and kernels alone.
  add(f"jaxrank personalization, {n:,} users",
      *timed(lambda: jaxrank.personalization(ids, num_items=items), r))
  add("  kernel alone (no input validation)",
      *timed(lambda: _beyond._personalization(ids, None, num_items=items, normalize="lists"), r))
  add(f"jaxrank intra_list_diversity + mean, {n:,} users",
      *timed(lambda: jnp.mean(jaxrank.intra_list_diversity(ids, emb)), r))
  add("  kernel alone (no input validation)",
      *timed(lambda: jnp.mean(_beyond._diversity(ids, emb, normalize="pairs")), r))
  add(f"jaxrank coverage, {n:,} users", *timed(lambda: jaxrank.coverage(ids, num_items=items), r))
  add("  kernel alone (no input validation)",
      *timed(lambda: _beyond._coverage(ids, None, num_items=items), r))

  # The obvious ways.
  m = min(args.pairwise_users, n)
  t, v = timed(lambda: personalization_sparse(ids_np[:m], items), r)
  add(f"SciPy sparse X @ X.T personalization, {m:,} users", t, v)
  rows.append((f"  extrapolated to {n:,} users (x {(n / m) ** 2:,.0f}, quadratic; not run)",
               f"~{t * (n / m) ** 2:,.1f}", "-"))
  t, v = timed(lambda: diversity_numpy(ids_np, emb_np), 1)
  add(f"NumPy gather + per-list Gram diversity, {n:,} users", t, v)
  m = min(args.loop_users, n)
  t, v = timed(lambda: diversity_sklearn_loop(ids_np[:m], emb_np), 1)
  add(f"scikit-learn cosine_distances per-user loop, {m:,} users", t, v)
  rows.append((f"  extrapolated to {n:,} users (x {n / m:,.0f}, linear; not run)",
               f"~{t * n / m:,.1f}", "-"))
  add(f"NumPy np.unique coverage, {n:,} users", *timed(lambda: coverage_numpy(ids_np, items), r))

  # Evidently and jaxrank on the same subset.
  m = min(args.evidently_users, n)
  sub, sub_np = ids[:m], ids_np[:m]
  add(f"jaxrank personalization, {m:,} users",
      *timed(lambda: jaxrank.personalization(sub, num_items=items), r))
  add(f"jaxrank intra_list_diversity (normalize='evidently') + mean, {m:,} users",
      *timed(lambda: jnp.mean(jaxrank.intra_list_diversity(sub, emb, normalize="evidently")), r))
  add(f"jaxrank coverage, {m:,} users", *timed(lambda: jaxrank.coverage(sub, num_items=items), r))
  rows.extend(evidently_rows(sub_np, emb_np, items, 1))
  rows.extend(evidently_personalization_full(ids_np))

  print("| implementation | time (s) | value |")
  print("|---|---|---|")
  for row in rows:
    print(f"| {row[0]} | {row[1]} | {row[2]} |")


if __name__ == "__main__":
  main()
