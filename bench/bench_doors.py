"""Fast doors (issue 11): every user path into jaxrank beside its strongest alternative, one run.

    python bench/bench_doors.py                         # full sizes (2M and 10M lines: minutes)
    python bench/bench_doors.py --quick                 # small sizes, every row, about a minute
    python bench/bench_doors.py --only dicts,topk --repeats 5 --json out.json

Rows (``--only`` takes their names): trec-files, test-files, sweep, dicts, ranked, topk, rect,
kernels, catalog, startup.
Every timing is the median of ``--repeats`` calls after a warm-up call, with
``jax.block_until_ready`` on the outputs (the kernels' calls interleaved with their baseline's,
which each kernel row measures afresh); every row also prints a sanity value from both tools so
agreement is visible. The table's ratio is jaxrank's time over the alternative's (lower is
better): "3x faster" is a target ratio <= 0.33. Only jaxrank's public API is used (``jaxrank.io``,
``jaxrank.numpy``, ``jaxrank.evaluate``/``ndcg``/``from_ranked_ids``/``top_k_ids``, and the
``jaxrank evaluate`` command), and jaxrank is imported from this checkout (the repository root
above this file), in this process and in every child process.
"""

from __future__ import annotations

import argparse
import compileall
import datetime
import gc
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)  # this checkout's jaxrank, not whichever one is installed

import numpy as np  # noqa: E402

FIVE_TREC = ("map", "ndcg_cut_10", "recip_rank", "P_10", "recall_10")
FIVE_TREC_CLI = ("map", "ndcg_cut.10", "recip_rank", "P.10", "recall.10")
FIVE = ("ndcg@10", "map", "mrr", "precision@10", "recall@10")
FIVE_IR = ("nDCG@10", "AP", "RR", "P@10", "R@10")  # the five, as ir_measures names them
FIVE_CUT = ("ndcg@10", "map@10", "mrr@10", "precision@10", "recall@10")
# trec_eval's default measure set (what `trec_eval` and `jaxrank evaluate` print without -m);
# runid (the run's tag, not a per-query value) is left out for pytrec_eval.
OFFICIAL = ("num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
            "recip_rank", "iprec_at_recall", "P")
ROW_NAMES = ("trec-files", "test-files", "sweep", "dicts", "ranked", "topk", "rect", "kernels",
             "catalog", "startup")

SIZES = {  # flag: (full, quick)
    "lines": ("2000000,10000000", "100000"),  # run sizes of the trec-files row
    "docs": (1000, 1000),
    "judgments": (1_000_000, 10_000),
    "dict_queries": (10_000, 300),
    "dict_docs": (1000, 1000),
    "users": (100_000, 10_000),
    "dict_users": (50_000, 5_000),
    "topk_rows": (1024, 128),
    "topk_items": (20_000, 20_000),
    "rect_lists": (10_000, 1000),
    "rect_items": (1000, 1000),
    "kernel_sizes": ("10000x1000,4000x1000", "1000x1000,400x1000"),
    "catalog_sizes": ("4096x200000,20000x50000", "512x20000"),  # users x items, d 64
    "sweep_runs": (100, 20),
    "sweep_lines": (5000, 5000),
}


# ----------------------------------------------------------------------------------------------
# Measuring.


def median_time(fn: Callable[[], Any], repeats: int, warmup: bool = True) -> tuple[float, Any]:
  """Median wall seconds of ``repeats`` calls (after one warm-up call), and the last output."""
  ((seconds, out),) = median_times([fn], repeats, warmup)
  return seconds, out


def median_times(fns: list[Callable[[], Any]], repeats: int,
                 warmup: bool = True) -> list[tuple[float, Any]]:
  """:func:`median_time` of each of ``fns``, their calls interleaved (one of each in turn), so
  a machine slower for a while slows them alike: ``[(seconds, last output), ...]``."""
  import jax
  if warmup:
    jax.block_until_ready([fn() for fn in fns])
  times: list[list[float]] = [[] for _ in fns]
  outs: list[Any] = [None for _ in fns]
  for _ in range(repeats):
    for i, fn in enumerate(fns):
      outs[i] = None
      gc.collect()
      start = time.perf_counter()
      outs[i] = jax.block_until_ready(fn())
      times[i].append(time.perf_counter() - start)
  return [(statistics.median(t), out) for t, out in zip(times, outs)]


def child_env(**extra: str) -> dict[str, str]:
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
  env.update(extra)
  return env


GNU_TIME = "/usr/bin/time"
RSS_MARK = "bench-doors-peak-rss-kb "


def run_child(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
  """Runs ``cmd``; its wall seconds, peak RSS (bytes, this child only), exit code and output.

  The peak RSS comes from GNU time where it is installed: ``wait4``'s ``ru_maxrss`` of a child
  spawned from this process counts this process's memory from before the child's ``exec`` (JAX
  is loaded here), so it never reads below this process's own size."""
  timed = os.access(GNU_TIME, os.X_OK)
  full = [GNU_TIME, "-f", RSS_MARK + "%M", *cmd] if timed else cmd
  with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
    start = time.perf_counter()
    proc = subprocess.Popen(full, stdout=out, stderr=err, env=env or child_env())
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    err.seek(0)
    stderr, rss = err.read().decode(errors="replace"), usage.ru_maxrss * 1024
    if timed and RSS_MARK in stderr:
      stderr, _, kb = stderr.rpartition(RSS_MARK)
      rss = int(kb.split()[0]) * 1024
      if proc.returncode != 0 and stderr.rstrip().endswith(str(proc.returncode)):
        stderr = stderr.rstrip().rpartition("\n")[0] + "\n"  # time's "Command exited with"
    return {"wall": wall, "rss": rss, "rc": proc.returncode,
            "stdout": out.read().decode(errors="replace"), "stderr": stderr}


def tree_peak_rss(cmd: list[str]) -> int | None:
  """The summed peak RSS (bytes) of ``cmd``'s process and its children (the helper processes
  of ``jaxrank evaluate``), read from /proc every few milliseconds during an untimed run; None
  where /proc has no such numbers. A child's peak is its VmHWM when last seen."""
  if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
    return None
  proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          env=child_env())
  peaks: dict[int, int] = {}
  while proc.poll() is None:
    try:
      with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
        pids = [proc.pid, *map(int, f.read().split())]
    except OSError:
      pids = [proc.pid]
    for pid in pids:
      try:
        with open(f"/proc/{pid}/status") as f:
          kb = next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
        peaks[pid] = max(peaks.get(pid, 0), kb * 1024)
      except (OSError, StopIteration):
        pass
    time.sleep(0.002)
  return sum(peaks.values()) if proc.returncode == 0 and peaks else None


def checked(res: dict[str, Any], what: str) -> dict[str, Any]:
  if res["rc"] != 0:
    tail = (res["stderr"].strip().splitlines() or ["(no stderr)"])[-1]
    raise RuntimeError(f"{what} exited with {res['rc']}: {tail}")
  return res


def child_runs(cmd: list[str], repeats: int, what: str, env=None,
               warmup: bool = True) -> list[dict[str, Any]]:
  """One warm-up run (page cache, compilation cache) then ``repeats`` runs of a command."""
  if warmup:
    checked(run_child(cmd, env), what)
  return [checked(run_child(cmd, env), what) for _ in range(repeats)]


def json_line(text: str) -> dict[str, Any]:
  return json.loads(text.strip().splitlines()[-1])


def jaxrank_command() -> list[str]:
  """The ``jaxrank`` console script next to this Python (no pyenv shim), else ``-m``."""
  exe = os.path.join(os.path.dirname(sys.executable), "jaxrank")
  if os.path.exists(exe):
    return [exe]
  found = shutil.which("jaxrank")
  return [found] if found else [sys.executable, "-m", "jaxrank.cli"]


def cli_value(stdout: str, measure: str) -> float:
  """The ``all`` value of ``measure`` in trec_eval-format output."""
  for line in stdout.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[0] == measure and parts[1] == "all":
      return float(parts[2])
  return math.nan


class Table:
  """The rows of the report: jaxrank path, alternative, times, ratio, target, sanity."""

  def __init__(self):
    self.rows: list[dict[str, Any]] = []
    self.bytes: list[dict[str, Any]] = []

  def add(self, row: str, path: str, seconds: float | None, alt: str, alt_seconds: float | None,
          target: float | None, sanity: str = "", target_text: str | None = None,
          absolute: bool = False, unit: str = "s", **extra: Any) -> None:
    """``target``: the largest allowed jaxrank/alternative ratio, or (``absolute``) value."""
    ratio = (seconds / alt_seconds if seconds is not None and alt_seconds
             and not absolute else None)
    value = seconds if absolute else ratio
    met = None if target is None or value is None else bool(value <= target)
    if target_text is None and target is not None:
      target_text = f"<= {target:g} {unit}" if absolute else f"<= {target:.3g}"
    self.rows.append(dict(row=row, path=path, seconds=seconds, alt=alt, alt_seconds=alt_seconds,
                          ratio=ratio, target=target, target_text=target_text or "-", met=met,
                          sanity=sanity, unit=unit, **extra))
    self.show(self.rows[-1])

  def fail(self, row: str, err: BaseException) -> None:
    text = " ".join(f"{type(err).__name__}: {err}".split())[:200]
    self.rows.append(dict(row=row, path="(row failed)", seconds=None, alt="-", alt_seconds=None,
                          ratio=None, target=None, target_text="-", met=None, sanity=text,
                          unit="s"))
    self.show(self.rows[-1])

  @staticmethod
  def _num(x: float | None, unit: str) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
      return "-"
    if unit == "MB":
      return f"{x / 1e6:,.0f} MB"
    return f"{x:.4f}" if x < 0.1 else f"{x:.3f}" if x < 10 else f"{x:.1f}"

  def line(self, r: dict[str, Any]) -> str:
    met = {True: "met", False: "**not met**", None: "-"}[r["met"]]
    ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
    return (f"| {r['row']} | {r['path']} | {self._num(r['seconds'], r['unit'])} | {r['alt']} | "
            f"{self._num(r['alt_seconds'], r['unit'])} | {ratio} | {r['target_text']} | {met} | "
            f"{r['sanity']} |")

  def show(self, r: dict[str, Any]) -> None:
    print("  " + self.line(r), file=sys.stderr, flush=True)

  def markdown(self) -> str:
    head = ("| row | jaxrank path | jaxrank | alternative | alt. | jaxrank/alt | target | "
            "met? | sanity (jaxrank / alternative) |\n|---|---|---:|---|---:|---:|---|---|---|")
    lines = [head] + [self.line(r) for r in self.rows]
    if self.bytes:
      lines += ["", "XLA cost analysis of the compiled kernels (CPU), against one read of the "
                "inputs (scores float32 + labels int32):", "",
                "| kernel | size | bytes accessed | one read of the inputs | ratio |",
                "|---|---|---:|---:|---:|"]
      for b in self.bytes:
        acc = "-" if b["accessed"] is None else f"{b['accessed'] / 1e6:,.1f} MB"
        ratio = "-" if b["accessed"] is None else f"{b['accessed'] / b['inputs']:.2f}"
        lines.append(f"| {b['kernel']} | {b['size']} | {acc} | {b['inputs'] / 1e6:,.1f} MB | "
                     f"{ratio} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# Child processes of the trec-files row (one tool per process, so peak RSS is per tool).


def child_api(spec: dict[str, Any]) -> None:
  """jaxrank: io.read_run + io.read_qrels + jrn.evaluate_run, a warm-up then ``repeats`` times;
  then jrn.evaluate_run on the two paths, as often."""
  from jaxrank import io
  from jaxrank import numpy as jrn
  reads, evals, first, mean_map = [], [], None, math.nan
  for i in range(spec["repeats"] + 1):
    gc.collect()
    start = time.perf_counter()
    run, qrels = io.read_run(spec["run"]), io.read_qrels(spec["qrels"])
    mid = time.perf_counter()
    out = jrn.evaluate_run(run, qrels, spec["measures"])
    end = time.perf_counter()
    mean_map = float(np.mean(list(out["map"].values())))
    if i == 0:
      first = end - start
    else:
      reads.append(mid - start)
      evals.append(end - mid)
    del run, qrels, out
  paths = []  # the same from the file paths (read in chunks from 16 MiB on, as the command)
  for i in range(spec["repeats"] + 1):
    gc.collect()
    start = time.perf_counter()
    out = jrn.evaluate_run(spec["run"], spec["qrels"], spec["measures"])
    if i:
      paths.append(time.perf_counter() - start)
    del out
  print(json.dumps({"read": statistics.median(reads), "evaluate": statistics.median(evals),
                    "paths": statistics.median(paths), "first": first, "map": mean_map}))


def child_api_once(spec: dict[str, Any]) -> None:
  """jaxrank's Python door as a user's script: import, read both files, ``jrn.evaluate_run`` of
  every trec_eval measure jaxrank computes (``all_trec``'s values), once; prints the MAP."""
  from jaxrank import io
  from jaxrank import numpy as jrn
  from jaxrank._trec import table
  names = [n for r in table.parse_measures(["all_trec"]) for n in r.names()]
  out = jrn.evaluate_run(io.read_run(spec["run"]), io.read_qrels(spec["qrels"]), names)
  print(json.dumps({"map": float(np.mean(list(out["map"].values()))),
                    "jax": "jax" in sys.modules}))


def child_pytrec(spec: dict[str, Any]) -> None:
  """pytrec_eval as a one-shot job: parse both files, construct, evaluate, average."""
  import pytrec_eval
  start = time.perf_counter()
  parse_run = getattr(pytrec_eval, "parse_run", None)
  parse_qrel = getattr(pytrec_eval, "parse_qrel", None) or getattr(pytrec_eval, "parse_qrels",
                                                                   None)
  if parse_run and parse_qrel:
    with open(spec["run"]) as f:
      run = parse_run(f)
    with open(spec["qrels"]) as f:
      qrels = parse_qrel(f)
    parser = "pytrec_eval.parse_run/parse_qrel"
  else:  # a plain Python parse into dicts
    run, qrels = {}, {}
    with open(spec["run"]) as f:
      for line in f:
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    with open(spec["qrels"]) as f:
      for line in f:
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    parser = "plain Python split() into dicts"
  mid = time.perf_counter()
  per_query = pytrec_eval.RelevanceEvaluator(qrels, set(spec["measures"])).evaluate(run)
  end = time.perf_counter()
  means = {m: float(np.mean([v[m] for v in per_query.values()]))
           for m in next(iter(per_query.values()))}
  print(json.dumps({"parse": mid - start, "evaluate": end - mid, "map": means.get("map"),
                    "parser": parser}))


def child_command(kind: str, spec: dict[str, Any]) -> list[str]:
  return [sys.executable, os.path.abspath(__file__), "--child", kind, json.dumps(spec)]


# ----------------------------------------------------------------------------------------------
# Rows.


def row_trec_files(t: Table, a: argparse.Namespace, tmp: str) -> None:
  """The rows below at each of ``--lines``' sizes, the judgments in proportion (``--judgments``
  for the largest)."""
  for lines in a.line_sizes:
    trec_files_at(t, a, tmp, lines, max(1, round(a.judgments * lines / a.lines)))


def trec_files_at(t: Table, a: argparse.Namespace, tmp: str, lines: int,
                  judgments: int) -> None:
  from make_trec_data import make_trec_files
  start = time.perf_counter()
  run, qrels = make_trec_files(a.data_dir or tmp, lines=lines, docs=a.docs,
                               judgments=judgments, seed=0)
  print(f"trec-files: {lines:,} run lines ({os.path.getsize(run) / 2**20:,.0f} MiB, "
        f"{lines // a.docs:,} queries x {a.docs} docs), "
        f"{sum(1 for _ in open(qrels, 'rb')):,} judgments, ready in "
        f"{time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
  size = f"{lines / 1e6:g}M lines"
  try:
    import pytrec_eval  # noqa: F401
    have_pytrec = True
  except ImportError:
    have_pytrec = False
    print("pytrec_eval is not installed (pip install pytrec_eval-terrier): its columns are "
          "empty", file=sys.stderr)

  def pytrec(measures):
    if not have_pytrec:
      return None, None
    runs = child_runs(child_command("pytrec", dict(run=run, qrels=qrels, measures=measures)),
                      a.process_repeats, "pytrec_eval child", warmup=a.process_warmup)
    outs = [json_line(r["stdout"]) for r in runs]
    return outs, dict(
        job=statistics.median(o["parse"] + o["evaluate"] for o in outs),
        parse=statistics.median(o["parse"] for o in outs),
        evaluate=statistics.median(o["evaluate"] for o in outs),
        wall=statistics.median(r["wall"] for r in runs), rss=max(r["rss"] for r in runs),
        map=outs[0]["map"], parser=outs[0]["parser"])

  # Five measures: the Python API, the command, pytrec_eval.
  _, p = pytrec(list(FIVE_TREC))
  api = run_child(child_command("api", dict(run=run, qrels=qrels, measures=list(FIVE_TREC),
                                           repeats=a.process_repeats)))
  api_out = json_line(checked(api, "jaxrank API child")["stdout"])
  pj = p or {}
  t.add("trec-files", f"{size}, five measures: `io.read_run`+`read_qrels` "
        f"{api_out['read']:.2f} s + `jrn.evaluate_run` {api_out['evaluate']:.2f} s "
        f"(first call {api_out['first']:.2f} s)", api_out["read"] + api_out["evaluate"],
        f"pytrec_eval parse {pj.get('parse', math.nan):.2f} s + construct/evaluate "
        f"{pj.get('evaluate', math.nan):.2f} s ({pj.get('parser', '-')})", pj.get("job"),
        1 / 3, target_text="<= 0.33 (3x faster; implied by the command's)",
        sanity=f"MAP {api_out['map']:.4f} / {pj.get('map', math.nan):.4f}")
  t.add("trec-files", f"{size}, five measures: `jrn.evaluate_run(run_path, qrels_path)`",
        api_out["paths"], "pytrec_eval parse + construct/evaluate", pj.get("job"), 1 / 3,
        target_text="<= 0.33 (3x faster)")
  t.add("trec-files", f"{size}: peak RSS of the API child above (both ways; its largest "
        "process)", api["rss"], "pytrec_eval child", pj.get("rss"), None, unit="MB")
  cmd = jaxrank_command() + ["evaluate"] + [x for m in FIVE_TREC_CLI for x in ("-m", m)]
  cli = child_runs(cmd + [qrels, run], a.process_repeats, "jaxrank evaluate",
                   warmup=a.process_warmup)
  wall, rss = statistics.median(r["wall"] for r in cli), max(r["rss"] for r in cli)
  t.add("trec-files", f"{size}, five measures: `jaxrank evaluate -m ...` end to end "
        "(process wall)", wall, "pytrec_eval parse + evaluate (its process: "
        f"{pj.get('wall', math.nan):.2f} s wall)", pj.get("job"), 1 / 3,
        target_text="<= 0.33 (3x faster)",
        sanity=f"MAP {cli_value(cli[0]['stdout'], 'map'):.4f} / {pj.get('map', math.nan):.4f}")
  t.add("trec-files", f"{size}, five measures: peak RSS of `jaxrank evaluate`, its helper "
        "processes' added", tree_peak_rss(cmd + [qrels, run]) or rss,
        f"pytrec_eval process (jaxrank's largest process alone: {rss / 1e6:.0f} MB)",
        pj.get("rss"), 1.0, unit="MB")
  ir = child_runs(jaxrank_command() + ["evaluate"] + [x for m in FIVE_IR for x in ("-m", m)] +
                  [qrels, run], a.process_repeats, "jaxrank evaluate (ir_measures names)",
                  warmup=a.process_warmup)
  t.add("trec-files", f"{size}, the five as ir_measures names (`-m nDCG@10 -m AP ...`): "
        "`jaxrank evaluate` end to end (process wall; peak RSS "
        f"{max(r['rss'] for r in ir) / 1e6:.0f} MB)", statistics.median(r["wall"] for r in ir),
        "pytrec_eval parse + evaluate of the five", pj.get("job"), 1 / 3,
        target_text="<= 0.33 (3x faster)",
        sanity=f"AP {cli_value(ir[0]['stdout'], 'AP'):.4f} / {pj.get('map', math.nan):.4f}")

  # trec_eval's default (official) set.
  if "official" in a.trec_sets:
    _, p = pytrec(list(OFFICIAL))
    pj = p or {}
    cli = child_runs(jaxrank_command() + ["evaluate", qrels, run], a.process_repeats,
                     "jaxrank evaluate", warmup=a.process_warmup)
    wall, rss = statistics.median(r["wall"] for r in cli), max(r["rss"] for r in cli)
    t.add("trec-files", f"{size}, default (official) set: `jaxrank evaluate qrels run` end to "
          "end", wall, f"pytrec_eval parse + evaluate of {len(OFFICIAL)} official measures "
          f"(process: {pj.get('wall', math.nan):.2f} s wall)", pj.get("job"), 0.5,
          target_text="<= 0.5 (2x faster)",
          sanity=f"MAP {cli_value(cli[0]['stdout'], 'map'):.4f} / {pj.get('map', math.nan):.4f}")
    t.add("trec-files", f"{size}, official set: peak RSS of `jaxrank evaluate`, its helper "
          "processes' added", tree_peak_rss(jaxrank_command() + ["evaluate", qrels, run]) or rss,
          f"pytrec_eval process (jaxrank's largest process alone: {rss / 1e6:.0f} MB)",
          pj.get("rss"), 1.0, unit="MB")


def row_test_files(t: Table, a: argparse.Namespace, tmp: str) -> None:
  """trec_eval's own test files, every measure per query: the command against a pytrec_eval
  process computing every measure it supports (what a user running the test suite pays)."""
  files = trec_eval_test_files()
  if files is None:
    raise FileNotFoundError("qrels.test/results.test not found under tests/data/trec_eval")
  qrels, run = files
  cmd = jaxrank_command() + ["evaluate", "-q", "-m", "all_trec", qrels, run]
  cli = child_runs(cmd, a.process_repeats, "jaxrank evaluate", warmup=True)
  wall, rss = statistics.median(r["wall"] for r in cli), max(r["rss"] for r in cli)
  alt, alt_wall, alt_rss, pmap = "pytrec_eval: not installed", None, None, math.nan
  try:
    import pytrec_eval
    res = child_runs(child_command("pytrec", dict(run=run, qrels=qrels, measures=sorted(
        pytrec_eval.supported_measures))), a.process_repeats, "pytrec_eval child", warmup=True)
    alt_wall = statistics.median(r["wall"] for r in res)
    alt_rss, pmap = max(r["rss"] for r in res), json_line(res[0]["stdout"])["map"]
    alt = "pytrec_eval process: parse, every supported measure, per query"
  except ImportError:
    pass
  t.add("test-files", "`jaxrank evaluate -q -m all_trec qrels.test results.test`, warm, "
        "process wall", wall, alt, alt_wall, 2.0, target_text="<= 2 (within 2x)",
        sanity=f"MAP {cli_value(cli[0]['stdout'], 'map'):.4f} / {pmap:.4f}")
  t.add("test-files", "peak RSS of the command above", rss, "pytrec_eval process", alt_rss,
        None, unit="MB")
  api = child_runs(child_command("api-once", dict(run=run, qrels=qrels)), a.process_repeats,
                   "jaxrank Python door", warmup=True)
  out = json_line(api[0]["stdout"])
  t.add("test-files", "a Python script: `from jaxrank import io, numpy`, `io.read_run`/"
        "`read_qrels`, `jrn.evaluate_run` of all_trec's values, process wall"
        f"{' (JAX imported)' if out['jax'] else ''}", statistics.median(r["wall"] for r in api),
        alt, alt_wall, 2.0, target_text="<= 2 (within 2x)",
        sanity=f"MAP {out['map']:.4f} / {pmap:.4f}")
  t.add("test-files", "peak RSS of the script above", max(r["rss"] for r in api),
        "pytrec_eval process", alt_rss, None, unit="MB")


def row_sweep(t: Table, a: argparse.Namespace, tmp: str) -> None:
  """A sweep: ``--sweep-runs`` small runs against one qrels, in one command or one per run."""
  from make_trec_data import make_qrels, make_run
  docs = 100
  folder = os.path.join(a.data_dir or tmp, f"sweep-{a.sweep_runs}-{a.sweep_lines}")
  os.makedirs(folder, exist_ok=True)
  qrels = os.path.join(folder, "qrels.txt")
  if not os.path.exists(qrels):
    make_qrels(qrels, lines=a.sweep_lines, docs=docs, judgments=a.sweep_lines // 4, seed=0)
  runs = []
  for i in range(a.sweep_runs):
    runs.append(os.path.join(folder, f"run{i:04d}.txt"))
    if not os.path.exists(runs[-1]):
      make_run(runs[-1], a.sweep_lines, docs, seed=i)
  measures = [x for m in FIVE_TREC_CLI for x in ("-m", m)]
  one = child_runs(jaxrank_command() + ["evaluate", *measures, qrels, *runs],
                   a.process_repeats, "jaxrank evaluate QRELS RUN...", warmup=True)
  each = []
  for _ in range(a.process_repeats):
    start = time.perf_counter()
    outs = [checked(run_child(jaxrank_command() + ["evaluate", *measures, qrels, r]),
                    "jaxrank evaluate") for r in runs]
    each.append((time.perf_counter() - start, outs))
  one_wall = statistics.median(r["wall"] for r in one)
  each_wall = statistics.median(w for w, _ in each)
  first = [line for line in one[0]["stdout"].splitlines() if line.split()[1:3] == ["map", "all"]]
  t.add("sweep", f"{a.sweep_runs} runs of {a.sweep_lines:,} lines, five measures: one "
        f"`jaxrank evaluate QRELS RUN1 ... RUN{a.sweep_runs}`", one_wall,
        f"{a.sweep_runs} `jaxrank evaluate QRELS RUN` commands, one after the other", each_wall,
        0.1, target_text="<= 0.1 (10x faster)",
        sanity=f"MAP of run 0 {float(first[0].split()[-1]):.4f} / "
        f"{cli_value(each[0][1][0]['stdout'], 'map'):.4f}")


def run_dicts(rng: np.random.Generator, queries: int, docs: int, judged: int):
  """``{qid: {docid: score}}`` (5-decimal scores: ties) and ``{qid: {docid: grade}}``."""
  run, qrels = {}, {}
  for q in range(queries):
    ids = rng.choice(10**7, size=docs + judged // 10, replace=False)
    names = [f"d{i}" for i in ids.tolist()]
    scores = np.round(rng.random(docs), 5).tolist()
    run[f"q{q}"] = dict(zip(names[:docs], scores))
    pick = rng.choice(docs, size=judged - judged // 10, replace=False).tolist()
    judged_names = [names[i] for i in pick] + names[docs:]
    grades = rng.choice(4, size=len(judged_names), p=[0.5, 0.25, 0.15, 0.1]).tolist()
    qrels[f"q{q}"] = dict(zip(judged_names, grades))
  return run, qrels


def row_dicts(t: Table, a: argparse.Namespace, tmp: str) -> None:
  from jaxrank import numpy as jrn
  rng = np.random.default_rng(0)
  judged = max(1, round(a.judgments / max(1, a.lines // a.docs)))
  run, qrels = run_dicts(rng, a.dict_queries, a.dict_docs, judged)
  jt, jout = median_time(lambda: jrn.evaluate_run(run, qrels, list(FIVE_TREC)), a.repeats)
  jmap = float(np.mean(list(jout["map"].values())))
  try:
    import pytrec_eval
    pt, pout = median_time(lambda: pytrec_eval.RelevanceEvaluator(
        qrels, set(FIVE_TREC)).evaluate(run), a.repeats)
    pmap = float(np.mean([v["map"] for v in pout.values()]))
  except ImportError:
    pt, pmap = None, math.nan
  t.add("dicts", f"{a.dict_queries:,} x {a.dict_docs:,} `{{qid: {{doc: score}}}}` dicts, "
        f"{judged} judged/query: `jrn.evaluate_run`, five measures", jt,
        "pytrec_eval `RelevanceEvaluator(...).evaluate` (construction included)", pt, 1.0,
        sanity=f"MAP {jmap:.4f} / {pmap:.4f}")


def ranked_data(users: int, seed: int = 0, items: int = 2**16, k: int = 20, max_rel: int = 10):
  """Top-k id lists (distinct ids per user) and -1-padded relevant ids, as NumPy arrays."""
  rng = np.random.default_rng(seed)
  base = rng.integers(0, items, users)
  step = 2 * rng.integers(0, items // 2, users) + 1  # odd: k distinct ids mod 2**16
  prog = (base[:, None] + np.arange(k + max_rel)[None] * step[:, None]) % items
  rec = prog[:, :k]
  n_in = rng.integers(0, 6, users)
  n_out = np.maximum(rng.integers(0, max_rel - 5 + 1, users), (n_in == 0).astype(int))
  hit_pos = np.argsort(rng.random((users, k)), axis=1)[:, :5]
  rel = np.full((users, max_rel), -1, np.int64)
  cols = np.arange(max_rel)[None]
  rel = np.where(cols < n_in[:, None], np.take_along_axis(rec, np.pad(
      hit_pos, ((0, 0), (0, max_rel - 5))), axis=1), rel)
  out_ids = prog[:, k:]  # ids after the list: relevant, never recommended
  shifted = np.take_along_axis(out_ids, np.clip(cols - n_in[:, None], 0, max_rel - 1), axis=1)
  rel = np.where((cols >= n_in[:, None]) & (cols < (n_in + n_out)[:, None]), shifted, rel)
  return rec.astype(np.int32), rel.astype(np.int32)


def python_loop(rec: list[list[int]], rel: list[list[int]]) -> dict[str, float]:
  """The five metrics (binary relevance) per user in plain Python; returns their means."""
  disc = [1 / math.log2(i + 2) for i in range(len(rec[0]) if rec else 0)]
  tot = dict.fromkeys(FIVE, 0.0)
  for ranked, relevant in zip(rec, rel):
    relevant = set(relevant)
    hits = [d in relevant for d in ranked]
    n_rel = len(relevant)
    if not n_rel:
      continue
    dcg = sum(d for d, h in zip(disc[:10], hits[:10]) if h)
    tot["ndcg@10"] += dcg / sum(disc[:min(n_rel, 10)])
    found, ap = 0, 0.0
    for i, h in enumerate(hits):
      if h:
        found += 1
        ap += found / (i + 1)
    tot["map"] += ap / n_rel
    tot["mrr"] += next((1 / (i + 1) for i, h in enumerate(hits) if h), 0.0)
    tot["precision@10"] += sum(hits[:10]) / 10
    tot["recall@10"] += sum(hits[:10]) / n_rel
  return {m: v / max(1, len(rec)) for m, v in tot.items()}


def row_ranked(t: Table, a: argparse.Namespace, tmp: str) -> None:
  import jax
  import jax.numpy as jnp

  import jaxrank
  from jaxrank import numpy as jrn
  jitted = jax.jit(lambda r, t_: jaxrank.evaluate(jaxrank.from_ranked_ids(r, t_),
                                                  metrics=list(FIVE)))

  def one_size(users: int, forms: tuple[str, ...], extra_alts: bool) -> None:
    rec, rel = ranked_data(users)
    rec_list = rec.tolist()
    rel_list = [[i for i in row if i >= 0] for row in rel.tolist()]
    inputs = {
        "dict": ({f"u{i}": r for i, r in enumerate(rec_list)},
                 {f"u{i}": r for i, r in enumerate(rel_list)}),
        "list": (rec_list, rel_list),
        "2-D NumPy": (rec, rel),
    }
    jt_alt, alt_out = median_time(lambda: jitted(jnp.asarray(rec), jnp.asarray(rel)), a.repeats)
    alt_ndcg = float(np.mean(alt_out["ndcg@10"]))

    def padded(rows):  # the plain way to pad ragged id lists with -1
      out = np.full((len(rows), max(map(len, rows), default=1)), -1, np.int32)
      for i, row in enumerate(rows):
        out[i, :len(row)] = row
      return out

    convert = {  # the alternative's own host conversion of each input form
        "dict": lambda r, t_: (padded(list(r.values())), padded(list(t_.values()))),
        "list": lambda r, t_: (padded(r), padded(t_)),
        "2-D NumPy": lambda r, t_: (r, t_),
    }
    for form in forms:
      r_in, t_in = inputs[form]
      jt_alt, _ = median_time(lambda: jitted(*map(jnp.asarray, convert[form](r_in, t_in))),
                              a.repeats)
      try:
        jt, out = median_time(lambda: jrn.evaluate_ranked(r_in, t_in, list(FIVE),
                                                          reduce="mean"), a.repeats)
        sanity = f"NDCG@10 {out['ndcg@10']:.4f} / {alt_ndcg:.4f}"
      except (TypeError, ValueError) as e:
        jt, sanity = None, f"not accepted: {type(e).__name__}: {str(e)[:90]}"
      t.add("ranked", f"{users:,} users' top-20, five metrics: `jrn.evaluate_ranked`, {form} "
            "input", jt, "`jit(evaluate(from_ranked_ids(r, t)))` incl. padding the same input "
            "into arrays and `jnp.asarray`", jt_alt, 2.0, sanity=sanity)
    if extra_alts:
      lt, lout = median_time(lambda: python_loop(rec_list, rel_list), max(1, a.repeats // 2),
                             warmup=False)
      t.add("ranked", f"{users:,} users: the jitted ranked-ids path (above)", jt_alt,
            "a plain Python loop over list input", lt, None,
            sanity=f"NDCG@10 {alt_ndcg:.4f} / {lout['ndcg@10']:.4f}")

  one_size(a.users, ("dict", "list", "2-D NumPy"), True)
  one_size(a.dict_users, ("dict",), False)


def row_topk(t: Table, a: argparse.Namespace, tmp: str) -> None:
  import jax
  import jax.numpy as jnp

  import jaxrank
  scores = jnp.asarray(np.random.default_rng(0).standard_normal(
      (a.topk_rows, a.topk_items), dtype=np.float32))
  jt, ids = median_time(lambda: jaxrank.top_k_ids(scores, 20), a.repeats)
  top_k = jax.jit(lambda s: jax.lax.top_k(s, 20)[1])
  lt, ref = median_time(lambda: top_k(scores), a.repeats)
  same = float(np.mean(np.asarray(ids) == np.asarray(ref)))
  t.add("topk", f"`top_k_ids(scores, 20)`, {a.topk_rows:,} x {a.topk_items:,} float32 (device)",
        jt, "`jit(lax.top_k(s, 20)[1])`", lt, 1.5, sanity=f"same ids: {same:.4%}")


def graded_data(lists: int, items: int, seed: int = 0):
  """float32 N(0,1) scores, ~5% relevant graded 1-3 (int32), as in bench_cpu.py."""
  rng = np.random.default_rng(seed)
  scores = rng.standard_normal((lists, items), dtype=np.float32)
  relevant = rng.random((lists, items)) < 0.05
  relevant[np.arange(lists), rng.integers(0, items, lists)] |= ~relevant.any(axis=1)
  labels = np.where(relevant, rng.integers(1, 4, (lists, items)), 0).astype(np.int32)
  return scores, labels


def row_rect(t: Table, a: argparse.Namespace, tmp: str) -> None:
  import jax.numpy as jnp

  import jaxrank
  from jaxrank import numpy as jrn
  s, y = graded_data(a.rect_lists, a.rect_items)
  ds, dy = jnp.asarray(s), jnp.asarray(y)
  nt, nout = median_time(lambda: jrn.evaluate(s, y, list(FIVE)), a.repeats)
  jt, jout = median_time(lambda: jaxrank.evaluate(ds, dy, list(FIVE)), a.repeats)
  ht, _ = median_time(lambda: jaxrank.evaluate(jnp.asarray(s), jnp.asarray(y), list(FIVE)),
                      a.repeats)
  t.add("rect", f"`jrn.evaluate` on NumPy {a.rect_lists:,} x {a.rect_items:,}, five metrics",
        nt, f"`jaxrank.evaluate` on device arrays (from NumPy incl. `jnp.asarray`: {ht:.3f} s)",
        jt, 1.2, sanity=f"MAP {np.mean(nout['map']):.4f} / {float(jnp.mean(jout['map'])):.4f}")


def plain_ndcg10(scores, labels):
  """NDCG@10 ignoring ties: top_k of the scores, gains gathered, ideal from top_k of labels.

  The labels are cast to float32 first: XLA's CPU ``top_k`` on int32 is ~100x slower (a sort).
  """
  import jax
  import jax.numpy as jnp
  disc = 1 / jnp.log2(jnp.arange(2, 12, dtype=jnp.float32))
  labels = labels.astype(jnp.float32)
  idx = jax.lax.top_k(scores, 10)[1]
  gains = jnp.take_along_axis(labels, idx, axis=-1)
  ideal = jax.lax.top_k(labels, 10)[0]
  dcg, idcg = gains @ disc, ideal @ disc
  return jnp.where(idcg > 0, dcg / jnp.where(idcg > 0, idcg, 1), 0.0)


def bytes_accessed(fn, *args) -> float | None:
  import jax
  try:
    cost = jax.jit(fn).lower(*args).compile().cost_analysis()
  except Exception:  # a kernel that does not trace shows "-"
    return None
  if isinstance(cost, (list, tuple)):
    cost = cost[0] if cost else {}
  return float(cost["bytes accessed"]) if cost and "bytes accessed" in cost else None


def row_kernels(t: Table, a: argparse.Namespace, tmp: str) -> None:
  import jax
  import jax.numpy as jnp

  import jaxrank
  base_fn = jax.jit(plain_ndcg10)
  for size in a.kernel_sizes.split(","):
    lists, items = (int(x) for x in size.lower().split("x"))
    s, y = graded_data(lists, items)
    ds, dy = jnp.asarray(s), jnp.asarray(y)
    kernels = [
        ("`ndcg(k=10)`, average ties", lambda s_, y_: jaxrank.ndcg(s_, y_, k=10), 1.2,
         lambda o: float(jnp.mean(o))),
        ("`evaluate` cut-off five (ndcg@10, map@10, mrr@10, precision@10, recall@10)",
         lambda s_, y_: jaxrank.evaluate(s_, y_, list(FIVE_CUT)), 1.5,
         lambda o: float(jnp.mean(o["ndcg@10"]))),
        ("`evaluate` five with full map, mrr", lambda s_, y_: jaxrank.evaluate(
            s_, y_, list(FIVE)), 3.0, lambda o: float(jnp.mean(o["ndcg@10"]))),
    ]
    inputs = s.nbytes + y.nbytes
    t.bytes.append(dict(kernel="plain `lax.top_k` NDCG@10", size=size,
                        accessed=bytes_accessed(plain_ndcg10, ds, dy), inputs=inputs))
    # Under jit the labels are traced: without max_relevant, one slot per item (no target).
    kernels.append(("`jit(ndcg(k=10))` without `max_relevant` (one slot per item)",
                    jax.jit(lambda s_, y_: jaxrank.ndcg(s_, y_, k=10)), None,
                    lambda o: float(jnp.mean(o))))
    for name, fn, target, ndcg_of in kernels:  # each beside the baseline, calls interleaved
      (kt, out), (bt, bout) = median_times([lambda: fn(ds, dy), lambda: base_fn(ds, dy)],
                                           a.repeats)
      base_mean = float(jnp.mean(bout))
      t.add("kernels", f"{size}: {name}", kt, "plain jitted `lax.top_k` NDCG@10 ignoring ties",
            bt, target, sanity=f"NDCG@10 {ndcg_of(out):.4f} / {base_mean:.4f}")
      t.bytes.append(dict(kernel=name, size=size, accessed=bytes_accessed(fn, ds, dy),
                          inputs=inputs))


def row_catalog(t: Table, a: argparse.Namespace, tmp: str) -> None:
  """``catalog.evaluate`` (five metrics, every held-out item's exact rank, the top-20 ids) on
  users x items embeddings (d 64, 10 held-out and 50 seen items per user), beside the same
  tiles by hand (jitted matmul, seen items masked, ``lax.top_k`` merged: ids only) and NumPy by
  hand (matmul blocks, ``argpartition``, counted ranks: the five metrics); the workload and
  both alternatives are ``bench_catalog.py``'s."""
  import jax.numpy as jnp

  import bench_catalog as bc
  from jaxrank import catalog
  k, relevant, seen_n = 20, 10, 50
  for size in a.catalog_sizes.split(","):
    users, items = (int(x) for x in size.lower().split("x"))
    q, it, rel, seen = bc.workload(users, items, 64, relevant, seen_n)
    ub, ib = catalog.default_block_sizes(users, items, relevant=relevant, k=k)
    qd, itd, reld, seend = (jnp.asarray(x) for x in (q, it, rel, seen))
    by_hand = bc.blocked_top_k(qd, itd, seend, ub, ib, k)
    (ct, out), (ht, _) = median_times([lambda: catalog.evaluate(
        qd, itd, reld, list(bc.METRICS), exclude_ids=seend, top_k=k, reduce="mean",
        user_block=ub, item_block=ib), by_hand], a.repeats)
    start = time.perf_counter()
    np_out = bc.numpy_eval(q, it, rel, seen, k, 1000)
    nt = time.perf_counter() - start
    what = (f"{users:,} users x {items:,} items, d 64, {relevant} held-out + {seen_n} seen: "
            f"`catalog.evaluate`, five metrics + top-{k} ids (tiles {ub} x {ib})")
    t.add("catalog", what, ct, "the same tiles by hand: jitted matmul + `lax.top_k` (ids "
          "only, no ranks)", ht, 1.5, sanity=f"MRR {float(out.metrics['mrr']):.4f}")
    t.add("catalog", what, ct, "NumPy by hand: matmul blocks of 1,000 users + `argpartition` + "
          "counted ranks (one call)", nt, 1.0,
          sanity=f"MRR {float(out.metrics['mrr']):.4f} / {np_out[2]:.4f}")


def trec_eval_test_files() -> tuple[str, str] | None:
  for folder in (os.path.join(ROOT, "tests", "data"), os.path.join(ROOT, "tests", "data",
                 "trec_eval"), "/work/shared/data/trec_eval"):
    q, r = os.path.join(folder, "qrels.test"), os.path.join(folder, "results.test")
    if os.path.exists(q) and os.path.exists(r):
      return q, r
  return None


def row_startup(t: Table, a: argparse.Namespace, tmp: str) -> None:
  files = trec_eval_test_files()
  if files is None:
    raise FileNotFoundError("qrels.test/results.test not found under tests/data or "
                            "/work/shared/data/trec_eval")
  cache = tempfile.mkdtemp(dir=tmp, prefix="xdg-cache-")
  env = child_env(XDG_CACHE_HOME=cache)  # a fresh per-user cache dir: the first call is cold
  cmd = jaxrank_command() + ["evaluate", *files]
  first = checked(run_child(cmd, env), "jaxrank evaluate")
  later = [checked(run_child(cmd, env), "jaxrank evaluate") for _ in range(a.process_repeats)]
  second = statistics.median(r["wall"] for r in later)
  trec_eval = shutil.which("trec_eval")
  tt, tmap = None, math.nan
  if trec_eval:
    res = child_runs([trec_eval, *files], a.process_repeats, "trec_eval",
                     warmup=a.process_warmup)
    tt = statistics.median(r["wall"] for r in res)
    tmap = cli_value(res[0]["stdout"], "map")
  alt = "trec_eval" if trec_eval else "trec_eval: not on PATH"
  jmap = cli_value(later[0]["stdout"], "map")
  t.add("startup", "`jaxrank evaluate qrels.test results.test`, first call (fresh "
        f"XDG_CACHE_HOME: {first['wall']:.2f} s); median of later calls", second, alt, tt, 1.0,
        absolute=True, sanity=f"MAP {jmap:.4f} / {tmap:.4f}")
  imp = child_runs([sys.executable, "-c", "import jaxrank"], a.process_repeats, "import jaxrank",
                   warmup=a.process_warmup)
  bare = child_runs([sys.executable, "-c", "pass"], a.process_repeats, "python -c pass",
                    warmup=a.process_warmup)
  t.add("startup", "`python -c 'import jaxrank'` wall", statistics.median(r["wall"] for r in imp),
        "`python -c pass`", statistics.median(r["wall"] for r in bare), None,
        sanity="0.66 s in the issue")


ROWS: dict[str, Callable[[Table, argparse.Namespace, str], None]] = {
    "trec-files": row_trec_files, "test-files": row_test_files, "sweep": row_sweep,
    "dicts": row_dicts, "ranked": row_ranked, "topk": row_topk,
    "rect": row_rect, "kernels": row_kernels, "catalog": row_catalog,
    "startup": row_startup}


# ----------------------------------------------------------------------------------------------
# The machine.


def machine() -> dict[str, Any]:
  model = platform.processor() or platform.machine()
  try:
    with open("/proc/cpuinfo") as f:
      model = next((line.split(":", 1)[1].strip() for line in f
                    if line.startswith("model name")), model)
  except OSError:
    pass
  try:
    with open("/proc/meminfo") as f:
      mem = int(f.readline().split()[1]) * 1024
  except (OSError, ValueError, IndexError):
    mem = None
  versions = {"python": platform.python_version()}
  for pkg in ("jax", "jaxlib", "numpy", "pytrec_eval-terrier", "pytrec_eval"):
    try:
      versions[pkg] = metadata.version(pkg)
    except metadata.PackageNotFoundError:
      pass
  import jax

  import jaxrank
  versions["jaxrank"] = getattr(jaxrank, "__version__", "?")
  try:
    commit = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%h %s"],
                            capture_output=True, text=True, timeout=10).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "jaxrank"],
                           capture_output=True, text=True, timeout=10).stdout.strip()
  except (OSError, subprocess.SubprocessError):
    commit, dirty = "", ""
  return dict(date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              cpu=model, cores=os.cpu_count(), usable_cores=len(os.sched_getaffinity(0)),
              memory=mem, platform=platform.platform(), backend=jax.default_backend(),
              versions=versions, jaxrank_file=jaxrank.__file__,
              commit=commit + (" (jaxrank/ modified)" if dirty else ""),
              jaxrank_command=" ".join(jaxrank_command()))


def main() -> None:
  if sys.argv[1:2] == ["--child"]:
    {"api": child_api, "api-once": child_api_once,
     "pytrec": child_pytrec}[sys.argv[2]](json.loads(sys.argv[3]))
    return
  parser = argparse.ArgumentParser(
      description=__doc__.splitlines()[0],
      formatter_class=argparse.ArgumentDefaultsHelpFormatter)
  parser.add_argument("--only", default=",".join(ROW_NAMES),
                      help=f"comma-separated rows: {', '.join(ROW_NAMES)}")
  parser.add_argument("--quick", action="store_true",
                      help="small sizes (for every size flag not given), 1 run of each child "
                      "process and no warm-up run")
  parser.add_argument("--repeats", type=int, default=3,
                      help="timed in-process calls per row, after one warm-up call")
  parser.add_argument("--process-repeats", type=int, default=None,
                      help="timed runs of each child process (the command, pytrec_eval, "
                      "import), after one warm-up run (default: --repeats; --quick: 1)")
  parser.add_argument("--json", metavar="PATH", help="also write every number to this file")
  parser.add_argument("--data-dir", metavar="DIR", help="keep the generated TREC files here "
                      "(reused when present) instead of a temporary directory")
  parser.add_argument("--trec-sets", default="five,official",
                      help="trec-files measure sets: five and/or official")
  for name, (full, quick) in SIZES.items():
    parser.add_argument("--" + name.replace("_", "-"), type=type(full), default=None,
                        help=f"{full} ({quick} with --quick)")
  a = parser.parse_args()
  for name, (full, quick) in SIZES.items():
    if getattr(a, name) is None:
      setattr(a, name, quick if a.quick else full)
  if a.process_repeats is None:
    a.process_repeats = 1 if a.quick else a.repeats
  a.process_warmup = not a.quick  # quick: the files were just written, so they are cached
  for flag in ("repeats", "process_repeats"):
    if getattr(a, flag) < 1:
      parser.error(f"--{flag.replace('_', '-')} must be >= 1, got {getattr(a, flag)}")
  rows = [r.strip() for r in a.only.split(",") if r.strip()]
  unknown = [r for r in rows if r not in ROWS]
  if unknown:
    parser.error(f"--only: unknown row(s) {', '.join(unknown)}; choose from "
                 f"{', '.join(ROW_NAMES)}")
  a.trec_sets = set(a.trec_sets.split(","))
  try:
    a.line_sizes = [int(x) for x in str(a.lines).split(",")]
  except ValueError:
    parser.error(f"--lines must be line counts separated by commas, got {a.lines!r}")
  a.lines = max(a.line_sizes)  # the size the other rows scale by

  env = machine()
  # An installed package has its bytecode (pip compiles it); a checkout run with
  # PYTHONDONTWRITEBYTECODE=1 would compile every module in every child (~60 ms a command).
  compileall.compile_dir(os.path.join(ROOT, "jaxrank"), quiet=1)
  started = time.perf_counter()
  table = Table()
  with tempfile.TemporaryDirectory(prefix="bench-doors-") as tmp:
    for name in rows:
      print(f"[{name}]", file=sys.stderr, flush=True)
      try:
        ROWS[name](table, a, tmp)
      except Exception as e:  # one failed row must not hide the others
        table.fail(name, e)
  total = time.perf_counter() - started

  v = env["versions"]
  print(f"## bench_doors.py{' --quick' if a.quick else ''} - {env['date']}\n")
  mem = f", {env['memory'] / 2**30:.0f} GiB RAM" if env["memory"] else ""
  print(f"Machine: {env['cpu']}, {env['usable_cores']} usable cores ({env['cores']} online)"
        f"{mem}, {env['platform']}; JAX backend {env['backend']}.")
  print("Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".")
  print(f"jaxrank: {env['jaxrank_file']} at {env['commit'] or '?'}; command "
        f"`{env['jaxrank_command']}`.")
  warm = "after a warm-up run" if a.process_warmup else "without a warm-up run"
  print(f"Median of {a.repeats} in-process calls after a warm-up call, of {a.process_repeats} "
        f"run(s) of each child process {warm}; ratio = jaxrank / alternative (lower is "
        f"better); jaxrank's bytecode compiled first, as pip does; {total:.0f} s in all.\n")
  print(table.markdown())
  if a.json:
    with open(a.json, "w") as f:
      json.dump({"machine": env, "args": {k: (sorted(val) if isinstance(val, set) else val)
                                          for k, val in vars(a).items()},
                 "seconds": total, "rows": table.rows, "bytes": table.bytes}, f, indent=1)


if __name__ == "__main__":
  main()
