"""Deterministic TREC run and qrels files for the benchmarks (generated on demand, never committed).

    python bench/make_trec_data.py OUTDIR [--lines 10000000] [--docs 1000] [--judgments 1000000]

The run is ``bench_io.make_run``'s format (``qNNNNNN Q0 DNNNNNNNN rank 0.XXXXXX bench``: string
ids, ``--docs`` documents per query, 6-decimal scores whose last digit is 0, so some scores tie).
The qrels (``qNNNNNN 0 DNNNNNNNN grade``) judge ``--judgments / queries`` documents per query,
graded 0-3 (50%, 25%, 15%, 10%): 90% of them are documents the run retrieved for that query, 10%
are documents it did not retrieve (relevant ones lower recall). Same seed, same bytes.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from bench_io import make_run

__all__ = ["make_qrels", "make_run", "make_trec_files", "doc_numbers"]

GRADES = np.array([0, 1, 2, 3])
GRADE_P = np.array([0.5, 0.25, 0.15, 0.1])


def doc_numbers(rows: np.ndarray) -> np.ndarray:
  """The numeric part of the doc id that ``make_run`` writes on run line ``rows`` (0-based)."""
  return (rows * 48271 + 12345) % 10**8


def digits(values: np.ndarray, width: int) -> np.ndarray:
  """Zero-padded decimal digits of non-negative ints, as an ``[n, width]`` uint8 array."""
  powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
  return ((values[:, None] // powers) % 10 + ord("0")).astype(np.uint8)


def _bytes(text: bytes, n: int) -> np.ndarray:
  return np.frombuffer(text, np.uint8)[None].repeat(n, 0)


def make_qrels(path: str, *, lines: int, docs: int, judgments: int, seed: int = 0,
               unretrieved: float = 0.1) -> int:
  """Writes qrels for the run ``make_run(path, lines, docs)``; returns the number of lines."""
  if lines % docs:
    raise ValueError(f"lines must be a multiple of docs={docs}, got {lines}")
  queries = lines // docs
  judged = max(1, round(judgments / queries))
  if judged > docs:
    raise ValueError(f"judgments per query must be <= docs={docs}, got {judged}")
  out_of_run = int(round(judged * unretrieved))
  in_run = judged - out_of_run
  if lines + queries * out_of_run > 10**8:  # rows 0 .. lines + queries * out_of_run - 1
    raise ValueError("too many lines for 8-digit doc ids")
  rng = np.random.default_rng(seed + 1)
  with open(path, "wb") as f:
    for lo in range(0, queries, 1000):
      q = np.arange(lo, min(lo + 1000, queries), dtype=np.int64)
      # in_run distinct positions per query among its docs, then out_of_run docs after the run
      pos = np.argpartition(rng.random((q.size, docs)), in_run - 1, axis=1)[:, :in_run]
      rows = np.concatenate(
          [q[:, None] * docs + pos,
           lines + q[:, None] * out_of_run + np.arange(out_of_run)[None]], axis=1)
      qid = np.repeat(q, judged)
      n = qid.size
      grade = rng.choice(GRADES, size=n, p=GRADE_P)
      parts = [_bytes(b"q", n), digits(qid, 6), _bytes(b" 0 D", n),
               digits(doc_numbers(rows.reshape(-1)), 8), _bytes(b" ", n), digits(grade, 1),
               _bytes(b"\n", n)]
      f.write(np.concatenate(parts, axis=1).tobytes())
  return queries * judged


def make_trec_files(outdir: str, *, lines: int, docs: int, judgments: int,
                    seed: int = 0) -> tuple[str, str]:
  """Writes ``run.txt`` and ``qrels.txt`` into ``outdir`` (once: kept if they already exist)."""
  os.makedirs(outdir, exist_ok=True)
  tag = f"{lines}-{docs}-{judgments}-{seed}"
  run, qrels = os.path.join(outdir, f"run-{tag}.txt"), os.path.join(outdir, f"qrels-{tag}.txt")
  if not os.path.exists(run):
    make_run(run + ".part", lines, docs, seed)
    os.replace(run + ".part", run)
  if not os.path.exists(qrels):
    make_qrels(qrels + ".part", lines=lines, docs=docs, judgments=judgments, seed=seed)
    os.replace(qrels + ".part", qrels)
  return run, qrels


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("outdir")
  parser.add_argument("--lines", type=int, default=10_000_000)
  parser.add_argument("--docs", type=int, default=1000, help="documents per query")
  parser.add_argument("--judgments", type=int, default=1_000_000)
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args()
  start = time.perf_counter()
  run, qrels = make_trec_files(args.outdir, lines=args.lines, docs=args.docs,
                               judgments=args.judgments, seed=args.seed)
  print(f"{run} ({os.path.getsize(run) / 2**20:.0f} MiB)\n{qrels} "
        f"({os.path.getsize(qrels) / 2**20:.0f} MiB)\nin {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
  main()
