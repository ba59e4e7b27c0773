"""CPU benchmark: jaxrank against pytrec_eval, ranx, Rax, scikit-learn (and metrax if present).

Workload (deterministic, numpy seed 0): ``--lists`` lists x ``--items`` candidates, float32 scores
drawn from a standard normal, about 5% of the items relevant with integer grades 1-3 (every list
gets at least one relevant item), the others 0.

Every tool computes NDCG@10, MAP, MRR, P@10 and R@10 (scikit-learn: NDCG@10 only) on the same
data in the same run. Compilation / JIT warm-up and the construction of each tool's input
structures are reported in their own rows and kept out of the timed rows. Each timed row is the
median (and best) of ``--repeats`` calls. A sanity table compares the metric means across tools.

Usage:
  python bench/bench_cpu.py [--lists 10000] [--items 1000] [--repeats 3]
                            [--ranx-lists N] [--json PATH]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import jaxrank

METRICS = ["ndcg@10", "map", "mrr", "precision@10", "recall@10"]
METRICS_CUT = ["ndcg@10", "map@10", "mrr@10", "precision@10", "recall@10"]
TREC_MEASURES = {"ndcg_cut_10", "map", "recip_rank", "P_10", "recall_10"}
# jaxrank metric name -> trec_eval measure name (for the sanity table).
TREC_NAME = {"ndcg@10": "ndcg_cut_10", "map": "map", "mrr": "recip_rank",
             "precision@10": "P_10", "recall@10": "recall_10", "map@10": "map_cut_10"}
RANX_METRICS = ["ndcg@10", "map", "mrr", "precision@10", "recall@10"]


# ----------------------------------------------------------------------------------------------
# Workload and helpers.


def make_workload(lists: int, items: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
  """float32 normal scores and int32 grades (about 5% in 1..3, at least one per list)."""
  rng = np.random.default_rng(seed)
  scores = rng.standard_normal((lists, items), dtype=np.float32)
  relevant = rng.random((lists, items)) < 0.05
  empty = ~relevant.any(axis=1)
  relevant[empty, rng.integers(0, items, size=int(empty.sum()))] = True
  grades = rng.integers(1, 4, size=(lists, items), dtype=np.int32)
  labels = np.where(relevant, grades, 0).astype(np.int32)
  return scores, labels


def time_calls(fn, repeats: int) -> tuple[object, list[float]]:
  """Calls ``fn`` ``repeats`` times (fn must block until its result is ready)."""
  times, out = [], None
  for _ in range(max(1, repeats)):
    start = time.perf_counter()
    out = fn()
    times.append(time.perf_counter() - start)
  return out, times


def time_once(fn) -> tuple[object, float]:
  out, times = time_calls(fn, 1)
  return out, times[0]


def blocked(fn):
  """Wraps a JAX function so that timing includes the device work."""
  return lambda *a, **kw: jax.block_until_ready(fn(*a, **kw))


def version(dist: str) -> str:
  try:
    return importlib.metadata.version(dist)
  except importlib.metadata.PackageNotFoundError:
    return "not installed"


def environment() -> dict:
  cpu = platform.processor() or "unknown"
  try:
    with open("/proc/cpuinfo") as f:
      for line in f:
        if line.startswith("model name"):
          cpu = line.split(":", 1)[1].strip()
          break
  except OSError:
    pass
  try:
    usable = len(os.sched_getaffinity(0))
  except AttributeError:
    usable = os.cpu_count()
  return {
      "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
      "python": platform.python_version(),
      "jax": jax.__version__, "jaxlib": version("jaxlib"), "numpy": np.__version__,
      "jaxrank": jaxrank.__version__,
      "pytrec_eval": version("pytrec_eval-terrier"), "scikit-learn": version("scikit-learn"),
      "rax": version("rax"), "ranx": version("ranx"), "metrax": version("metrax"),
      "jax_backend": jax.default_backend(), "cpu": cpu,
      "cores": os.cpu_count(), "usable_cores": usable,
  }


class Results:
  """Collects rows; ``ref`` names the jaxrank row a tool's time is divided by."""

  def __init__(self):
    self.rows: list[dict] = []

  def add(self, tool, what, times, *, ref=None, key=None, scale=1.0, note=""):
    times = [t * scale for t in times] if times else []
    row = {"key": key, "tool": tool, "what": what, "ref": ref, "note": note,
           "median_s": statistics.median(times) if times else None,
           "best_s": min(times) if times else None, "runs": len(times), "scale": scale}
    self.rows.append(row)
    return row

  def get(self, key):
    return next(r for r in self.rows if r["key"] == key)

  def markdown(self) -> str:
    lines = ["| tool | what | seconds (median) | best | jaxrank speed-up |",
             "|---|---|---:|---:|---:|"]
    for r in self.rows:
      med = "-" if r["median_s"] is None else f"{r['median_s']:.4f}"
      best = "-" if r["best_s"] is None else f"{r['best_s']:.4f}"
      if r["ref"] == "self":
        speed = "1.0x (reference)"
      elif r["ref"] and r["median_s"] is not None:
        ref = self.get(r["ref"])["median_s"]
        r["speedup"] = r["median_s"] / ref
        speed = f"{r['speedup']:.1f}x"
      else:
        speed = "-"
      what = r["what"] + (f" — {r['note']}" if r["note"] else "")
      lines.append(f"| {r['tool']} | {what} | {med} | {best} | {speed} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# One function per tool. Each adds its rows and returns its metric means for the sanity table.


def bench_jaxrank(res: Results, scores_np, labels_np, repeats: int) -> dict:
  scores, labels = jnp.asarray(scores_np), jnp.asarray(labels_np)
  jax.block_until_ready((scores, labels))
  evaluate = blocked(jaxrank.evaluate)

  _, t = time_once(lambda: evaluate(scores, labels, METRICS))
  res.add("jaxrank", "first call of evaluate (5 metrics), incl. compilation", [t])
  out, times = time_calls(lambda: evaluate(scores, labels, METRICS), repeats)
  res.add("jaxrank", "evaluate ndcg@10, map, mrr, precision@10, recall@10 (device arrays)",
          times, ref="self", key="jr5")

  def from_numpy():
    return evaluate(jnp.asarray(scores_np), jnp.asarray(labels_np), METRICS)
  _, times = time_calls(from_numpy, repeats)
  res.add("jaxrank", "same 5 metrics from numpy, incl. host->device (jnp.asarray)", times)

  evaluate(scores, labels, METRICS_CUT)  # compile
  out_cut, times = time_calls(lambda: evaluate(scores, labels, METRICS_CUT), repeats)
  res.add("jaxrank", "evaluate ndcg@10, map@10, mrr@10, precision@10, recall@10 (cut variant)",
          times, key="jr5cut")

  ndcg = blocked(jaxrank.ndcg)
  ndcg(scores, labels, k=10)  # compile
  _, times = time_calls(lambda: ndcg(scores, labels, k=10), repeats)
  res.add("jaxrank", "jaxrank.ndcg(k=10) alone", times, ref="self", key="jr1")

  per_list = {name: np.asarray(v, dtype=np.float64) for name, v in out.items()}
  per_list["map@10"] = np.asarray(out_cut["map@10"], dtype=np.float64)
  per_list["mrr@10"] = np.asarray(out_cut["mrr@10"], dtype=np.float64)
  return per_list


def build_trec_dicts(res: Results, scores_np, labels_np):
  """qrels/run dicts with string ids, shared by pytrec_eval and ranx (not timed against)."""
  def build():
    doc_ids = [f"d{j}" for j in range(scores_np.shape[1])]
    run = {f"q{i}": dict(zip(doc_ids, row)) for i, row in enumerate(scores_np.tolist())}
    qrels = {}
    for i, row in enumerate(labels_np):
      nz = np.flatnonzero(row)
      qrels[f"q{i}"] = {doc_ids[j]: int(row[j]) for j in nz}
    return qrels, run
  (qrels, run), t = time_once(build)
  res.add("(setup)", "build qrels/run Python dicts with string ids (outside every timing)", [t])
  return qrels, run


def bench_pytrec(res: Results, qrels, run, repeats: int) -> dict | None:
  try:
    import pytrec_eval
  except ImportError:
    res.add("pytrec_eval", "not installed (skipped)", [])
    return None
  evaluator, t_build = time_once(lambda: pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES))
  res.add("pytrec_eval", "RelevanceEvaluator(qrels, 5 measures) construction", [t_build])
  out, times = time_calls(lambda: evaluator.evaluate(run), repeats)
  res.add("pytrec_eval", "evaluate(run): ndcg_cut_10, map, recip_rank, P_10, recall_10", times,
          ref="jr5", key="trec5")
  res.add("pytrec_eval", "construction + evaluate (5 measures)",
          [t_build + t for t in times], ref="jr5")

  single = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"})
  _, times = time_calls(lambda: single.evaluate(run), repeats)
  res.add("pytrec_eval", "evaluate(run): ndcg_cut_10 alone", times, ref="jr1")

  # Sanity only (not timed): the cut variant of AP.
  cut = pytrec_eval.RelevanceEvaluator(qrels, {"map_cut_10"}).evaluate(run)
  qids = sorted(out, key=lambda q: int(q[1:]))
  values = {m: np.array([out[q][TREC_NAME[m]] for q in qids]) for m in METRICS}
  values["map@10"] = np.array([cut[q]["map_cut_10"] for q in qids])
  values["_qids"] = np.array([int(q[1:]) for q in qids])
  return values


def bench_ranx(res: Results, qrels, run, lists: int, ranx_lists: int | None,
               repeats: int) -> tuple[dict | None, int]:
  try:
    import ranx
  except ImportError:
    res.add("ranx", "not installed (skipped)", [])
    return None, 0
  used = lists if ranx_lists is None else min(ranx_lists, lists)
  scale = lists / used
  note = "" if used == lists else f"SCALED: measured on {used} lists, time x{scale:.2f}"
  if used < lists:
    keep = [f"q{i}" for i in range(used)]
    qrels = {q: qrels[q] for q in keep}
    run = {q: run[q] for q in keep}

  def build(q, r):
    return ranx.Qrels.from_dict(q), ranx.Run.from_dict(r)
  # Compile ranx's numba constructors on a tiny input (16 queries: ranx drops to a single thread,
  # for good, when evaluating fewer than 10).
  tiny = [f"q{i}" for i in range(min(16, used))]
  _, t = time_once(lambda: build({q: qrels[q] for q in tiny}, {q: run[q] for q in tiny}))
  res.add("ranx", "numba JIT of Qrels/Run.from_dict (on 16 lists)", [t])
  (rq, rr), t = time_once(lambda: build(qrels, run))
  res.add("ranx", "Qrels.from_dict + Run.from_dict (outside the timing)", [t], scale=scale,
          note=note)

  _, t = time_once(lambda: ranx.evaluate(rq, rr, RANX_METRICS))
  res.add("ranx", "first evaluate, incl. numba JIT (5 metrics)", [t], note=note + (
      "; not scaled" if note else ""))
  out, times = time_calls(lambda: ranx.evaluate(rq, rr, RANX_METRICS), repeats)
  res.add("ranx", "evaluate(Qrels, Run, ndcg@10, map, mrr, precision@10, recall@10)", times,
          ref="jr5", scale=scale, note=note)

  tq, tr = rq.to_typed_list(), rr.to_typed_list()
  _, times = time_calls(lambda: ranx.evaluate(tq, tr, RANX_METRICS), repeats)
  res.add("ranx", "same on pre-converted numba typed lists (kernels only)", times, ref="jr5",
          scale=scale, note=note)
  return {m: float(v) for m, v in out.items()}, used


def bench_rax(res: Results, scores_np, labels_np, rax_lists: int | None, chunk: int,
              repeats: int) -> tuple[dict | None, int]:
  try:
    import rax
  except ImportError:
    res.add("rax", "not installed (skipped)", [])
    return None, 0
  lists = scores_np.shape[0]
  used = lists if rax_lists is None else min(rax_lists, lists)
  scale = lists / used
  note = "" if used == lists else f"SCALED: measured on {used} lists, time x{scale:.2f}"
  scores = jnp.asarray(scores_np[:used])
  labels = jnp.asarray(labels_np[:used], dtype=jnp.float32)

  def per_list(sl):
    s, lab = sl
    # Linear gain, as trec_eval / jaxrank / ranx (Rax's default gain is 2**label - 1).
    return {"ndcg@10": rax.ndcg_metric(s, lab, topn=10, gain_fn=lambda g: g, reduce_fn=None),
            "map": rax.ap_metric(s, lab, reduce_fn=None),
            "mrr": rax.mrr_metric(s, lab, reduce_fn=None),
            "precision@10": rax.precision_metric(s, lab, topn=10, reduce_fn=None),
            "recall@10": rax.recall_metric(s, lab, topn=10, reduce_fn=None)}

  @jax.jit
  def five(s, lab):
    # rax.ap_metric builds an [n, n] pairwise array per list (40 GB of temporaries for 10,000 x
    # 1,000 at once), so the lists go through lax.map in chunks; the mean is taken at the end.
    values = jax.lax.map(per_list, (s, lab), batch_size=chunk)
    return {m: jnp.mean(v) for m, v in values.items()}

  run = blocked(five)
  _, t = time_once(lambda: run(scores, labels))
  res.add("rax", "first call incl. compilation (5 metrics)", [t], scale=scale, note=note)
  out, times = time_calls(lambda: run(scores, labels), repeats)
  res.add("rax", f"one jit: ndcg@10 [linear gain], ap, mrr, precision@10, recall@10 "
          f"(lax.map, {chunk} lists per chunk)", times, ref="jr5", scale=scale, note=note)
  return {m: float(v) for m, v in out.items()}, used


def bench_sklearn(res: Results, scores_np, labels_np, repeats: int) -> float | None:
  try:
    from sklearn.metrics import ndcg_score
  except ImportError:
    res.add("scikit-learn", "not installed (skipped)", [])
    return None
  out, times = time_calls(lambda: ndcg_score(labels_np, scores_np, k=10), repeats)
  res.add("scikit-learn", "metrics.ndcg_score(labels, scores, k=10) (NDCG@10 only)", times,
          ref="jr1")
  return float(out)


def bench_metrax(res: Results) -> None:
  try:
    import metrax  # noqa: F401
  except ImportError:
    res.add("metrax", "not installable here (skipped)", [])
    return
  res.add("metrax", "installed, but not benchmarked by this script (skipped)", [])


# ----------------------------------------------------------------------------------------------
# Sanity table.


def sanity_table(jr: dict, trec: dict | None, ranx_means: dict | None, ranx_lists: int,
                 rax_means: dict | None, rax_lists: int, sk: float | None,
                 num_ties: int) -> tuple[str, dict]:
  def fmt(x):
    return "-" if x is None else f"{x:.6f}"

  def diff(a, b):
    return "-" if a is None or b is None else f"{abs(a - b):.1e}"

  names = METRICS + ["map@10"]
  lines = ["| metric | jaxrank | pytrec_eval | abs diff | max per-list diff | ranx | "
           "abs diff | rax | abs diff | sklearn | abs diff |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
  data = {}
  for m in names:
    mean = float(np.mean(jr[m]))
    t = t_jr = t_list = None
    if trec is not None:  # trec_eval reports only the queries it has qrels for
      q = trec["_qids"]
      t, t_jr = float(np.mean(trec[m])), float(np.mean(jr[m][q]))
      t_list = float(np.max(np.abs(jr[m][q] - trec[m])))
    rx = None if ranx_means is None else ranx_means.get(m)
    rx_jr = float(np.mean(jr[m][:ranx_lists])) if ranx_lists else None
    ra = None if rax_means is None else rax_means.get(m)
    ra_jr = float(np.mean(jr[m][:rax_lists])) if rax_lists else None
    sk_m = sk if m == "ndcg@10" else None
    data[m] = {"jaxrank": mean, "pytrec_eval": t, "pytrec_eval_max_list_diff": t_list,
               "ranx": rx, "rax": ra, "sklearn": sk_m}
    lines.append(f"| {m} | {fmt(mean)} | {fmt(t)} | {diff(t_jr, t)} | "
                 f"{'-' if t_list is None else f'{t_list:.1e}'} | {fmt(rx)} | {diff(rx_jr, rx)} | "
                 f"{fmt(ra)} | {diff(ra_jr, ra)} | {fmt(sk_m)} | {diff(mean, sk_m)} |")
  lines.append("")
  lines.append("Each abs diff compares with jaxrank on the same lists (ranx/rax may run on the "
               "first N lists only). "
               f"map@10 is compared with trec_eval map_cut_10. Lists holding at least one tied "
               f"score pair: {num_ties} (jaxrank averages over tie orders, trec_eval/ranx break "
               f"ties by doc id, so a per-list difference can appear only in such lists).")
  return "\n".join(lines), data


def count_tied_lists(scores_np) -> int:
  s = np.sort(scores_np, axis=1)
  return int(np.any(s[:, 1:] == s[:, :-1], axis=1).sum())


# ----------------------------------------------------------------------------------------------


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--lists", type=int, default=10_000)
  parser.add_argument("--items", type=int, default=1_000)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--ranx-lists", type=int, default=None,
                      help="run ranx on the first N lists only and scale its times (default: all)")
  parser.add_argument("--rax-lists", type=int, default=None,
                      help="run Rax on the first N lists only and scale its times (default: all)")
  parser.add_argument("--rax-chunk", type=int, default=250,
                      help="lists per lax.map chunk for Rax (its AP is O(n^2) memory per list)")
  parser.add_argument("--json", type=str, default=None, help="write the results to this file")
  args = parser.parse_args(argv)
  warnings.filterwarnings("ignore", message="unsafe cast")  # numba, inside ranx's ndcg

  env = environment()
  print("## Environment\n")
  for k, v in env.items():
    print(f"- {k}: {v}")
  print(f"\nWorkload: {args.lists} lists x {args.items} candidates, float32 N(0,1) scores, ~5% "
        f"relevant with grades 1-3 (numpy seed 0); {args.repeats} timed repeat(s) per row.\n")

  scores_np, labels_np = make_workload(args.lists, args.items)
  res = Results()
  jr = bench_jaxrank(res, scores_np, labels_np, args.repeats)
  rax_means, rax_lists = bench_rax(res, scores_np, labels_np, args.rax_lists, args.rax_chunk,
                                   args.repeats)
  sk = bench_sklearn(res, scores_np, labels_np, args.repeats)
  qrels, run = build_trec_dicts(res, scores_np, labels_np)
  trec = bench_pytrec(res, qrels, run, args.repeats)
  ranx_means, ranx_lists = bench_ranx(res, qrels, run, args.lists, args.ranx_lists,
                                      args.repeats)
  del qrels, run
  bench_metrax(res)

  order = ["jaxrank", "pytrec_eval", "ranx", "rax", "scikit-learn", "metrax", "(setup)"]
  res.rows.sort(key=lambda r: order.index(r["tool"]))
  print("## Timings\n")
  print(res.markdown())
  print("\nSpeed-up = tool median / jaxrank median: five-metric rows are divided by the jaxrank "
        "5-metric row, NDCG@10-only rows by the jaxrank.ndcg(k=10) row. '-' = not compared.\n")

  table, sanity = sanity_table(jr, trec, ranx_means, ranx_lists, rax_means, rax_lists, sk,
                               count_tied_lists(scores_np))
  print("## Sanity: mean of each metric\n")
  print(table)

  if args.json:
    with open(args.json, "w") as f:
      json.dump({"environment": env, "config": vars(args), "rows": res.rows, "sanity": sanity},
                f, indent=2)
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
  main()
