"""Writes the small example qrels and run shipped in ``jaxrank/data/`` (deterministic).

    python scripts/make_example_data.py [--out jaxrank/data]

Five queries with string ids, 25 retrieved documents each, graded judgments 0-2 (and -1 for a
pooled, unjudged document), scores rounded to two decimals so some of them tie, a relevant
document that the run misses, and a ``#`` inside one doc id (data, not a comment). The same
seed always gives the same files; `jaxrank evaluate --example` reads them.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

QUERIES = ("q101", "q102", "q103", "q104", "q105")
DOCS_PER_QUERY = 25


def make(seed: int = 20261123) -> tuple[str, str]:
  rng = random.Random(seed)
  qrels = ["# example judgments: qid iter docid rel (rel -1 = pooled but unjudged)"]
  run = []
  for q in QUERIES:
    docs = [f"D{q[1:]}-{i:03d}" for i in range(40)]
    if q == "q103":
      docs[7] = "D103#007"  # a '#' inside an id is data
    grades = {d: rng.choices((0, 1, 2), weights=(6, 3, 1))[0] for d in docs[:30]}
    grades[docs[31]] = 2  # judged relevant, never retrieved
    grades[docs[3]] = -1
    qrels += [f"{q} 0 {d} {g}" for d, g in grades.items()]
    retrieved = rng.sample(docs[:36], DOCS_PER_QUERY)
    scored = [(round(max(grades.get(d, 0), 0) * 0.8 + rng.gauss(0, 1), 1), d) for d in retrieved]
    scored.sort(key=lambda t: -t[0])
    run += [f"{q} Q0 {d} {i + 1} {s:.2f} example" for i, (s, d) in enumerate(scored)]
  return "\n".join(qrels) + "\n", "\n".join(run) + "\n"


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "jaxrank" /
                                           "data"))
  args = parser.parse_args()
  out = Path(args.out)
  out.mkdir(parents=True, exist_ok=True)
  qrels, run = make()
  (out / "example.qrels").write_text(qrels)
  (out / "example.run").write_text(run)
  print(f"wrote {out / 'example.qrels'} and {out / 'example.run'}")


if __name__ == "__main__":
  main()
