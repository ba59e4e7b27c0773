"""Significance tests and bootstrap intervals (issue 15): jaxrank.stats against ranx and SciPy.

Workloads (deterministic, numpy seed 0): per-query values of ``--systems`` systems on
``--queries`` queries, uniform in [0, 1) rounded to 2 decimals (ties, as graded metrics have)
plus a per-system shift of up to 0.02 (some pairs differ, most do not). Generating them is not
timed; jaxrank's first call (compilation) is reported on its own row.

1. Fisher's randomization test of all pairs, ``--permutations`` sign flips (default 20 systems x
   5,000 queries, 190 pairs, 10,000 permutations):
   * jaxrank: ``stats.pairwise(x, test="randomization", n_resamples=R, correction="none")`` --
     all pairs in one call, which also computes each pair's t interval and Cohen's d;
   * ranx: ``ranx.statistical_tests.compute_statistical_significance(names, scores, "fisher",
     n_permutations=R)``, the statistics step of ``ranx.compare`` (its metric evaluation is not
     timed); ranx tests every *ordered* pair, 380 tests for 20 systems. Timed on
     ``--ranx-systems`` systems (3: 6 tests) and extrapolated linearly to 380 tests unless
     ``--full``; its numba compilation (first call) is excluded;
   * SciPy: ``scipy.stats.permutation_test((a, b), mean difference, permutation_type="samples",
     n_resamples=R, vectorized=True)`` in a loop over pairs, timed on ``--scipy-pairs`` pairs (2)
     and extrapolated to all pairs unless ``--full``.
2. BCa bootstrap 95% intervals of every system's mean, ``--resamples`` resamples (default
   50 systems x 5,000 queries, 10,000 resamples):
   * jaxrank: ``stats.confidence_interval(x, method="bca", n_resamples=R)`` (all systems share
     the resamples, one matrix product per chunk), and ``method="percentile"``;
   * SciPy: ``scipy.stats.bootstrap((x[i],), np.mean, method="BCa", n_resamples=R)`` per system,
     timed on ``--scipy-systems`` systems (2) and extrapolated unless ``--full``; and one
     vectorised call on all systems (``x`` 2-D, ``batch=100``: the same resamples for all, as
     jaxrank).

Agreement is printed too: the largest p-value difference to ranx (Monte-Carlo error expected,
ranx uses p = #/R, compared with jaxrank's ``pvalue="ranx"``) and the largest interval-endpoint
difference to SciPy in units of the interval width.

Usage:
  python bench/bench_stats.py                   # the issue's sizes (ranx/SciPy extrapolated)
  python bench/bench_stats.py --queries 500 --permutations 1000 --resamples 1000   # smoke run
  python bench/bench_stats.py --full            # time ranx and SciPy on every pair/system
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import platform
import statistics
import time

import jax
import numpy as np

from jaxrank import stats


def version(name: str) -> str:
  try:
    return importlib.metadata.version(name)
  except importlib.metadata.PackageNotFoundError:
    return "not installed"


def values(systems: int, queries: int, seed: int = 0) -> np.ndarray:
  rng = np.random.default_rng(seed)
  shift = np.linspace(0, 0.02, systems)[:, None]
  return np.round(rng.random((systems, queries)), 2) + shift


def timed(fn, repeats: int) -> tuple[float, list[float], object]:
  times, out = [], None
  for _ in range(repeats):
    t = time.perf_counter()
    out = fn()
    times.append(time.perf_counter() - t)
  return statistics.median(times), times, out


def row(name: str, seconds: float, note: str = "") -> dict:
  print(f"| {name} | {seconds:,.3f} s | {note} |")
  return {"name": name, "seconds": seconds, "note": note}


def bench_randomization(args, rows: list) -> None:
  x = values(args.systems, args.queries)
  s, q, r = args.systems, args.queries, args.permutations
  pairs = s * (s - 1) // 2
  print(f"\n### Randomization test, all pairs: {s} systems x {q:,} queries ({pairs} pairs), "
        f"{r:,} permutations\n")
  print("| implementation | time | note |\n|---|---|---|")

  def ours():
    return stats.pairwise(x, test="randomization", n_resamples=r, correction="none",
                          pvalue="ranx")

  t = time.perf_counter()
  ours()
  rows.append(row("jaxrank first call (compilation)", time.perf_counter() - t))
  median, _, res = timed(ours, args.repeats)
  rows.append(row("jaxrank `stats.pairwise(test='randomization')`", median,
                  f"median of {args.repeats}; {pairs} pairs"))
  jax_seconds = median
  try:
    from ranx.statistical_tests import compute_statistical_significance
  except ImportError:
    print("| ranx | - | not installed |")
  else:
    k = s if args.full else min(args.ranx_systems, s)
    names = [f"s{i}" for i in range(k)]
    scores = {n: {"m": x[i]} for i, n in enumerate(names)}
    compute_statistical_significance(names[:2], {n: {"m": x[i, :50]} for i, n in
                                                 enumerate(names[:2])}, "fisher", 10)  # JIT
    t = time.perf_counter()
    out = compute_statistical_significance(names, scores, "fisher", n_permutations=r)
    seconds = time.perf_counter() - t
    tests = k * (k - 1)
    total = seconds * s * (s - 1) / tests
    note = (f"measured on {k} systems ({tests} ordered tests, {seconds:.2f} s), "
            f"extrapolated to {s * (s - 1)} tests" if k < s else f"{tests} ordered tests")
    rows.append(row("ranx `compute_statistical_significance(..., 'fisher')`", total, note))
    print(f"| speed-up jaxrank vs ranx | {total / jax_seconds:,.1f}x | |")
    worst = 0.0
    for i in range(k):
      for j in range(i + 1, k):
        pick = (res.reference == i) & (res.system == j)
        worst = max(worst, abs(float(res.pvalue[pick][0])
                               - float(out[frozenset([names[i], names[j]])]["m"]["p_value"])))
    print(f"| largest p-value difference to ranx | {worst:.4f} | Monte-Carlo error: "
          f"sd <= {0.5 / np.sqrt(r):.4f} per p-value |")
  try:
    from scipy import stats as ss
  except ImportError:
    print("| SciPy | - | not installed |")
    return
  n = pairs if args.full else min(args.scipy_pairs, pairs)
  ref, sys = np.triu_indices(s, 1)
  t = time.perf_counter()
  for i, j in list(zip(ref, sys))[:n]:
    ss.permutation_test((x[j], x[i]), lambda a, b, axis: np.mean(a - b, axis=axis),
                        permutation_type="samples", n_resamples=r, vectorized=True, rng=0)
  seconds = time.perf_counter() - t
  note = (f"measured on {n} pairs ({seconds:.2f} s), extrapolated to {pairs}" if n < pairs
          else f"{pairs} pairs")
  rows.append(row("SciPy `permutation_test` per pair", seconds * pairs / n, note))
  print(f"| speed-up jaxrank vs SciPy | {seconds * pairs / n / jax_seconds:,.1f}x | |")


def bench_bootstrap(args, rows: list) -> None:
  x = values(args.boot_systems, args.queries, seed=1)
  s, q, r = args.boot_systems, args.queries, args.resamples
  print(f"\n### BCa bootstrap 95% intervals of the mean: {s} systems x {q:,} queries, "
        f"{r:,} resamples\n")
  print("| implementation | time | note |\n|---|---|---|")
  t = time.perf_counter()
  stats.confidence_interval(x, method="bca", n_resamples=r)
  rows.append(row("jaxrank first call (compilation)", time.perf_counter() - t))
  median, _, ci = timed(lambda: stats.confidence_interval(x, method="bca", n_resamples=r),
                        args.repeats)
  rows.append(row("jaxrank `confidence_interval(method='bca')`", median,
                  f"median of {args.repeats}"))
  jax_seconds = median
  stats.confidence_interval(x, method="percentile", n_resamples=r)  # its own compilation
  median, _, _ = timed(lambda: stats.confidence_interval(x, method="percentile", n_resamples=r),
                       args.repeats)
  rows.append(row("jaxrank `confidence_interval(method='percentile')`", median,
                  f"median of {args.repeats}"))
  try:
    from scipy import stats as ss
  except ImportError:
    print("| SciPy | - | not installed |")
    return
  n = s if args.full else min(args.scipy_systems, s)
  worst = 0.0
  t = time.perf_counter()
  for i in range(n):
    ref = ss.bootstrap((x[i],), np.mean, method="BCa", n_resamples=r, rng=i).confidence_interval
    width = ref.high - ref.low
    worst = max(worst, abs(ci.low[i] - ref.low) / width, abs(ci.high[i] - ref.high) / width)
  seconds = time.perf_counter() - t
  note = (f"measured on {n} systems ({seconds:.2f} s), extrapolated to {s}" if n < s
          else f"{s} systems")
  rows.append(row("SciPy `bootstrap(method='BCa')` per system", seconds * s / n, note))
  print(f"| speed-up jaxrank vs SciPy per system | {seconds * s / n / jax_seconds:,.1f}x | |")
  t = time.perf_counter()
  ss.bootstrap((x,), np.mean, method="BCa", n_resamples=r, batch=100, axis=-1, rng=0)
  seconds = time.perf_counter() - t
  rows.append(row("SciPy `bootstrap(method='BCa')`, all systems in one call", seconds,
                  "batch=100"))
  print(f"| speed-up jaxrank vs SciPy vectorised | {seconds / jax_seconds:,.1f}x | |")
  print(f"| largest endpoint difference to SciPy | {worst:.3f} interval widths | different "
        "resamples: Monte-Carlo error |")


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--systems", type=int, default=20)
  parser.add_argument("--queries", type=int, default=5000)
  parser.add_argument("--permutations", type=int, default=10_000)
  parser.add_argument("--boot-systems", type=int, default=50)
  parser.add_argument("--resamples", type=int, default=10_000)
  parser.add_argument("--ranx-systems", type=int, default=3)
  parser.add_argument("--scipy-pairs", type=int, default=2)
  parser.add_argument("--scipy-systems", type=int, default=2)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--full", action="store_true",
                      help="time ranx and SciPy on every pair/system (slow: minutes)")
  parser.add_argument("--json", help="also write the rows to this JSON file")
  args = parser.parse_args()
  print(f"jaxrank stats benchmark: {platform.processor() or platform.machine()}, "
        f"backend {jax.default_backend()}, jax {jax.__version__}, scipy {version('scipy')}, "
        f"ranx {version('ranx')}, numba {version('numba')}")
  rows: list = []
  bench_randomization(args, rows)
  bench_bootstrap(args, rows)
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"args": vars(args), "rows": rows}, f, indent=2)


if __name__ == "__main__":
  main()
