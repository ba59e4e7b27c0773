"""Loading a large TREC run file: jaxrank.io.read_run against ranx and ir_measures.

    python bench/bench_io.py [--lines 10000000] [--docs 1000] [--repeat 1] [--skip ranx,...]

Writes a deterministic run (``--lines`` lines, ``--docs`` documents per query, string ids,
6-decimal scores with some ties) into a temporary directory, then times each reader loading it,
one after the other in this process, and prints a Markdown table. What each row measures:

* ``jaxrank.io.read_run``: the file parsed into columns (qid, docid, score, rank arrays; tag).
* ``ranx Run.from_file``: ranx's ``Run`` (a dict of dicts, then its numba typed form).
* ``ir_measures.read_trec_run``: its generator consumed without keeping the rows (a lower bound
  for any use of them).

Use ``--lines 100000`` for a quick smoke run.
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import platform
import tempfile
import time
from importlib import metadata

import numpy as np


def _digits(values: np.ndarray, width: int) -> np.ndarray:
  """Zero-padded decimal digits of non-negative ints, as an ``[n, width]`` uint8 array."""
  powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
  return ((values[:, None] // powers) % 10 + ord("0")).astype(np.uint8)


def make_run(path: str, lines: int, docs: int, seed: int = 0) -> None:
  """``qNNNNN Q0 DNNNNNNNN RRRRR 0.XXXXXX bench`` lines, written in blocks with NumPy."""
  rng = np.random.default_rng(seed)
  with open(path, "wb") as f:
    for lo in range(0, lines, 1_000_000):
      n = min(1_000_000, lines - lo)
      row = np.arange(lo, lo + n, dtype=np.int64)
      parts = [
          np.full((n, 1), ord("q"), np.uint8), _digits(row // docs, 6),
          np.frombuffer(b" Q0 D", np.uint8)[None].repeat(n, 0),
          _digits((row * 48271 + 12345) % 10**8, 8),  # distinct doc ids (48271 is coprime
          np.full((n, 1), ord(" "), np.uint8),        # with 10**8), in a scrambled order
          _digits(row % docs + 1, 5), np.frombuffer(b" 0.", np.uint8)[None].repeat(n, 0),
          _digits(rng.integers(0, 10**6, n) // 10 * 10, 6),  # last digit 0: some ties
          np.frombuffer(b" bench\n", np.uint8)[None].repeat(n, 0)]
      f.write(np.concatenate(parts, axis=1).tobytes())


def _time(fn, repeat: int) -> float:
  best = float("inf")
  for _ in range(repeat):
    gc.collect()
    start = time.perf_counter()
    result = fn()
    best = min(best, time.perf_counter() - start)
    del result
  return best


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--lines", type=int, default=10_000_000)
  parser.add_argument("--docs", type=int, default=1000, help="documents per query")
  parser.add_argument("--repeat", type=int, default=1, help="best of this many loads")
  parser.add_argument("--skip", default="", help="comma-separated: ranx, ir_measures")
  args = parser.parse_args()
  skip = set(filter(None, args.skip.split(",")))

  from jaxrank import io

  readers = {"jaxrank.io.read_run": (lambda p: io.read_run(p), "jaxrank")}
  if "ranx" not in skip:
    try:
      import ranx
      readers["ranx Run.from_file"] = (lambda p: ranx.Run.from_file(p, kind="trec"), "ranx")
    except ImportError:
      print("ranx is not installed: skipped")
  if "ir_measures" not in skip:
    try:
      import ir_measures
      readers["ir_measures.read_trec_run"] = (
          lambda p: collections.deque(ir_measures.read_trec_run(p), maxlen=0), "ir_measures")
    except ImportError:
      print("ir_measures is not installed: skipped")

  with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "run.txt")
    start = time.perf_counter()
    make_run(path, args.lines, args.docs)
    size = os.path.getsize(path)
    print(f"{args.lines:,} lines ({size / 2**20:.0f} MiB, {args.lines // args.docs:,} queries x "
          f"{args.docs} docs) written in {time.perf_counter() - start:.1f} s\n")
    run = io.read_run(path)  # checks the file parses, and warms the page cache
    assert len(run) == args.lines
    del run
    times = {name: _time(lambda: fn(path), args.repeat) for name, (fn, _) in readers.items()}

  base = times["jaxrank.io.read_run"]
  print(f"python {platform.python_version()}, numpy {np.__version__}, " + ", ".join(
      f"{pkg} {metadata.version(pkg)}" for _, pkg in readers.values()))
  print(f"best of {args.repeat}\n")
  print("| reader | seconds | lines/s | vs jaxrank |")
  print("|---|---:|---:|---:|")
  for name, t in times.items():
    print(f"| {name} | {t:.2f} | {args.lines / t:,.0f} | {t / base:.1f}x |")


if __name__ == "__main__":
  main()
