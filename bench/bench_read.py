"""Reading TREC files: jaxrank.io (this checkout and an older commit) against ranx, ir_measures
and pytrec_eval's parsers; seconds and peak memory, every reader in a fresh process.

    python bench/bench_read.py [--lines 10000000] [--qrels 1000000] [--baseline a1b6583]
                               [--long-lines 1000000] [--skip ranx,ir_measures,pytrec_eval]

Files (written into a temporary directory, deterministic, never kept):

* ``run``: ``--lines`` lines, 1,000 documents per query, distinct 9-byte doc ids
  (``bench_io.make_run``);
* ``run + comment``: the same with one ``#`` comment line in front (issue 10, item 19);
* ``run.gz``: the run gzip-compressed (level 1), read by its magic bytes (issue 11);
* ``qrels``: ``--qrels`` judgments over the run's queries and documents, grades 0-3;
* ``run, one 500-byte id``: ``--long-lines`` lines of which one doc id has 500 bytes
  (item 18: fixed-width string arrays made this 7.4 GB).

Each reader runs in its own Python process (imports and a first call on a one-line file done
before the clock starts: ranx's numba compilation is not timed); the table gives the wall time
and the CPU time of the read (the CPU time is steadier on a shared machine) and the process's
peak resident memory during the read (``VmHWM`` after resetting it) minus its resident memory
before, i.e. what reading added at its peak. ``--baseline REF`` loads
``jaxrank/io.py`` as it was at git commit REF (the reader before the rewrite) for a same-run
comparison. ir_measures' reader is a generator: it is consumed into a list of its rows.
``jaxrank.io.iter_run_chunks`` (1M-line chunks, each dropped when the next is read: what
``jaxrank evaluate --chunk-lines`` holds) is timed on the runs beside ``read_run``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_io import _digits, make_run  # a sibling script

CHILD = r"""
import gc, json, os, resource, sys, time, importlib.util
kind, reader, path, module = sys.argv[1:5]
def status(key):
  with open("/proc/self/status") as f:
    return next(int(l.split()[1]) * 1024 for l in f if l.startswith(key + ":"))
if reader == "jaxrank":
  if module:
    spec = importlib.util.spec_from_file_location("old_io", module)
    io = importlib.util.module_from_spec(spec)
    sys.modules["old_io"] = io
    spec.loader.exec_module(io)
  else:
    from jaxrank import io
  fn = io.read_run if kind == "run" else io.read_qrels
elif reader == "jaxrank-chunks":
  from jaxrank import io
  fn = lambda p: range(sum(len(c) for c in io.iter_run_chunks(p, max_lines=1_000_000)))
elif reader == "ranx":
  import ranx
  fn = (lambda p: ranx.Run.from_file(p, kind="trec")) if kind == "run" else (
      lambda p: ranx.Qrels.from_file(p, kind="trec"))
elif reader == "ir_measures":
  import ir_measures
  fn = (lambda p: list(ir_measures.read_trec_run(p))) if kind == "run" else (
      lambda p: list(ir_measures.read_trec_qrels(p)))
elif reader == "pytrec_eval":
  import pytrec_eval
  def fn(p):
    with open(p) as f:
      return (pytrec_eval.parse_run if kind == "run" else pytrec_eval.parse_qrel)(f)
warm = os.path.join(os.path.dirname(path), "warm." + kind)
with open(warm, "w") as f:  # a first call on a tiny file: JIT compilation (ranx) is not timed
  f.write("q Q0 d 1 0.5 t\n" if kind == "run" else "q 0 d 1\n")
fn(warm)
gc.collect()
with open("/proc/self/clear_refs", "w") as f:
  f.write("5")  # resets the peak (VmHWM) to the current resident size
before = status("VmRSS")
start, cpu = time.perf_counter(), time.process_time()
result = fn(path)
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"seconds": seconds, "cpu": cpu, "added": status("VmHWM") - before,
                  "rows": len(result)}))
"""


def make_qrels(path: str, lines: int, queries: int, docs: int, seed: int = 1) -> None:
  """``qNNNNNN 0 DNNNNNNNN g`` lines: ``lines`` judgments spread over the run's queries, half
  of them on documents the run retrieved (``D...``), half on others (``E...``)."""
  rng = np.random.default_rng(seed)
  per = max(1, lines // queries)
  with open(path, "wb") as f:
    for lo in range(0, lines, 1_000_000):
      n = min(1_000_000, lines - lo)
      row = np.arange(lo, lo + n, dtype=np.int64)
      q = (row // per) % queries
      i = row % per  # the i-th judgment of query q: even ones on the run's documents
      run_row = q * docs + (i // 2) % docs
      doc = np.where(i % 2 == 0, (run_row * 48271 + 12345) % 10**8, row % 10**8)
      letter = np.where(i % 2 == 0, ord("D"), ord("E")).astype(np.uint8)[:, None]
      parts = [np.full((n, 1), ord("q"), np.uint8), _digits(q, 6),
               np.frombuffer(b" 0 ", np.uint8)[None].repeat(n, 0), letter, _digits(doc, 8),
               np.full((n, 1), ord(" "), np.uint8),
               (rng.integers(0, 4, n) + ord("0")).astype(np.uint8)[:, None],
               np.full((n, 1), ord("\n"), np.uint8)]
      f.write(np.concatenate(parts, axis=1).tobytes())


def make_long(path: str, lines: int) -> None:
  make_run(path, lines, 1000)
  with open(path, "r+b") as f:  # the first doc id becomes 500 bytes long
    first = f.readline()
    rest = f.read()
    q, q0, doc, *tail = first.split(b" ")
    f.seek(0)
    f.write(b" ".join([q, q0, b"D" * 500, *tail]) + rest)


def run_child(kind: str, reader: str, path: str, module: str) -> dict:
  out = subprocess.run([sys.executable, "-c", CHILD, kind, reader, path, module],
                       capture_output=True, text=True)
  if out.returncode:
    return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
  return json.loads(out.stdout)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--lines", type=int, default=10_000_000)
  parser.add_argument("--qrels", type=int, default=1_000_000)
  parser.add_argument("--long-lines", type=int, default=1_000_000)
  parser.add_argument("--baseline", default="a1b6583", help="git commit of the older reader "
                      "('' to skip)")
  parser.add_argument("--skip", default="", help="comma-separated: ranx, ir_measures, "
                      "pytrec_eval")
  parser.add_argument("--json", help="also write the rows here")
  args = parser.parse_args()
  skip = set(filter(None, args.skip.split(",")))
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

  with tempfile.TemporaryDirectory() as tmp:
    module = ""
    if args.baseline:
      module = os.path.join(tmp, "old_io.py")
      with open(module, "w") as f:
        f.write(subprocess.run(["git", "-C", root, "show", f"{args.baseline}:jaxrank/io.py"],
                               check=True, capture_output=True, text=True).stdout)
    files = {"run": os.path.join(tmp, "run.txt"), "run + comment": os.path.join(tmp, "c.txt"),
             "run.gz": os.path.join(tmp, "run.gz"),
             "qrels": os.path.join(tmp, "qrels.txt"),
             "run, one 500-byte id": os.path.join(tmp, "long.txt")}
    make_run(files["run"], args.lines, 1000)
    with open(files["run + comment"], "wb") as out, open(files["run"], "rb") as src:
      out.write(b"# a comment line\n")
      shutil.copyfileobj(src, out, 1 << 24)
    with gzip.open(files["run.gz"], "wb", compresslevel=1) as out, open(files["run"], "rb") as src:
      shutil.copyfileobj(src, out, 1 << 24)
    make_qrels(files["qrels"], args.qrels, max(1, args.lines // 1000), 1000)
    make_long(files["run, one 500-byte id"], args.long_lines)
    readers = [("jaxrank.io (this checkout)", "jaxrank", ""),
               ("jaxrank.io.iter_run_chunks, 1M lines", "jaxrank-chunks", "")]
    if module:
      readers.append((f"jaxrank.io at {args.baseline}", "jaxrank", module))
    for tool in ("ranx", "ir_measures", "pytrec_eval"):
      if tool in skip:
        continue
      try:
        __import__(tool)
        readers.append((tool, tool, ""))
      except ImportError:
        print(f"{tool} is not installed: skipped")
    rows = []
    print(f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs; "
          f"files: " + ", ".join(f"{k} {os.path.getsize(v) / 2**20:.0f} MiB"
                                 for k, v in files.items()) + "\n")
    print("| file | reader | wall s | CPU s | memory added (GB) |")
    print("|---|---|---:|---:|---:|")
    for label, path in files.items():
      kind = "qrels" if label == "qrels" else "run"
      for name, reader, mod in readers:
        if reader == "jaxrank-chunks" and kind != "run":
          continue
        if not reader.startswith("jaxrank") and label not in ("run", "qrels"):
          continue  # the other tools on the plain run and the qrels only
        r = run_child(kind, reader, path, mod)
        rows.append({"file": label, "reader": name, **r})
        if "error" in r:
          print(f"| {label} | {name} | error: {r['error'][:60]} | | |")
        else:
          print(f"| {label} | {name} | {r['seconds']:.2f} | {r['cpu']:.2f} | "
                f"{r['added'] / 1e9:.2f} |", flush=True)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(rows, f, indent=1)


if __name__ == "__main__":
  main()
