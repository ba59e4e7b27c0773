"""The ``jaxrank`` command: a drop-in for ``trec_eval`` on the rank core.

    jaxrank evaluate QRELS RUN [-m MEASURE ...] [-q] [-c] [-M N] [-l N]
                     [--ties {trec,average,optimistic,pessimistic,first}] [--float32]
                     [--format {trec,json,csv,table}]
    jaxrank evaluate --example [...]      # the small example qrels/run shipped in the package
    jaxrank compare QRELS RUN RUN [...] [-m MEASURE ...] [--test ...]  # see jaxrank.compare

The default output is trec_eval's: ``measure<TAB>qid<TAB>value`` with the name padded to 22
characters and 4 decimals; ``-q`` prints every query before the ``all`` lines. Errors print one
line, ``jaxrank: error: ...``, to stderr and exit non-zero; nothing is printed to stdout unless the
whole evaluation succeeded.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from importlib import resources

from jaxrank import _trec, compare, io

EXAMPLE_QRELS = "example.qrels"
EXAMPLE_RUN = "example.run"


def example_paths() -> tuple[str, str]:
  """Paths of the example qrels and run shipped inside the package.

  Example:
    >>> from jaxrank import cli
    >>> [os.path.basename(p) for p in cli.example_paths()]
    ['example.qrels', 'example.run']
  """
  root = resources.files("jaxrank") / "data"
  return str(root / EXAMPLE_QRELS), str(root / EXAMPLE_RUN)


class _Progress:
  """A one-line progress bar on a terminal's stderr, shown once the work has taken 1.5 s.

  Nothing is written when stderr is not a terminal (logs stay clean) or the work is quick.
  """

  def __init__(self, stream=None, after: float = 1.5):
    self.stream = sys.stderr if stream is None else stream
    self.start = time.monotonic()
    self.after = after
    self.shown = False
    self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())

  def __call__(self, done: int, total: int, what: str = "queries") -> None:
    if not self.enabled or (not self.shown and time.monotonic() - self.start < self.after):
      return
    self.shown = True
    width = 30
    filled = width * done // max(total, 1)
    self.stream.write(f"\rjaxrank: [{'#' * filled}{'.' * (width - filled)}] "
                      f"{done}/{total} {what}")
    self.stream.flush()

  def note(self, text: str) -> None:
    if self.enabled and time.monotonic() - self.start >= self.after:
      self.shown = True
      self.stream.write(f"\rjaxrank: {text}\033[K")
      self.stream.flush()

  def close(self) -> None:
    if self.shown:
      self.stream.write("\r\033[K")
      self.stream.flush()


class _Parser(argparse.ArgumentParser):
  """argparse with one-line errors."""

  def error(self, message: str):
    self.exit(2, f"jaxrank: error: {message} (see `jaxrank evaluate --help`)\n")


def _parser() -> argparse.ArgumentParser:
  top = _Parser(prog="jaxrank", description="Ranking evaluation on jaxrank's rank core.")
  sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
  sub.required = True
  ev = sub.add_parser(
      "evaluate", help="evaluate a TREC run against qrels (trec_eval compatible)",
      description="Evaluate a TREC run file against a qrels file; trec_eval's options and "
      "output. Files: qrels `qid iter docid rel`, run `qid Q0 docid rank score tag`.",
      epilog=_trec.describe(), formatter_class=argparse.RawDescriptionHelpFormatter)
  ev.add_argument("qrels", nargs="?", help="qrels file (qid iter docid rel)")
  ev.add_argument("run", nargs="?", help="run file (qid Q0 docid rank score tag)")
  ev.add_argument("--example", action="store_true",
                  help="use the example qrels and run shipped with jaxrank")
  ev.add_argument("-m", "--measure", action="append", metavar="MEASURE",
                  help="measure(s), e.g. map, P.5,10, ndcg_cut.10, all_trec (default: official)")
  ev.add_argument("-q", "--per-query", action="store_true", help="print per-query values too")
  ev.add_argument("-c", "--complete", action="store_true",
                  help="average over every qrels query; queries missing from the run score 0")
  ev.add_argument("-M", "--max-docs", type=int, metavar="N",
                  help="keep the top N documents of each query")
  ev.add_argument("-l", "--level", type=int, default=1, metavar="N",
                  help="relevant means rel >= N (default 1; ndcg ignores it, as trec_eval)")
  ev.add_argument("--ties", choices=_trec.TIES, default="trec",
                  help="tie order: trec (score desc, then doc id desc; default), first (input "
                  "order), or the exact expectation/bounds over tied orders")
  ev.add_argument("--float32", action="store_true",
                  help="compare scores as float32, like pytrec_eval (default float64, like "
                  "trec_eval 10)")
  ev.add_argument("--format", choices=("trec", "json", "csv", "table"), default="trec",
                  help="output format (default: trec_eval's)")
  compare.add_parser(sub)  # `jaxrank compare`: runs compared with significance tests
  return top


def _number(name: str, value, integer: set[str], quote: bool = False) -> str:
  if isinstance(value, str):
    return f"'{value}'" if quote else value  # trec_eval quotes per-query strings (relstring)
  return str(int(value)) if name in integer else f"{float(value):6.4f}"


def _render(result: _trec.Result, fmt: str, per_query: bool) -> str:
  names = list(result.per_query) if per_query else []
  if fmt in ("trec", "csv"):
    rows = [(n, qid, _number(n, result.per_query[n][i], result.integer, quote=True))
            for i, qid in enumerate(result.qids if per_query else []) for n in names]
    rows += [(n, "all", _number(n, v, result.integer)) for n, v in result.summary.items()]
    if fmt == "trec":
      return "".join(f"{n:<22}\t{q}\t{v}\n" for n, q, v in rows)
    return "measure,qid,value\n" + "".join(f"{n},{_csv(q)},{_csv(v)}\n" for n, q, v in rows)
  if fmt == "json":
    def plain(n, v):
      return v if isinstance(v, str) else int(v) if n in result.integer else float(v)
    out = {"all": {n: plain(n, v) for n, v in result.summary.items()}}
    if per_query:
      out["per_query"] = {qid: {n: plain(n, result.per_query[n][i]) for n in names}
                          for i, qid in enumerate(result.qids)}
    return json.dumps(out, indent=2) + "\n"
  # table: one row per measure, a column per query (with -q) and one for all
  cols = (result.qids if per_query else []) + ["all"]
  rows = []
  for n in result.names:
    if n not in result.summary and n not in names:
      continue
    cells = [_number(n, result.per_query[n][i], result.integer) if n in names else ""
             for i in range(len(cols) - 1)]
    total = _number(n, result.summary[n], result.integer) if n in result.summary else ""
    rows.append([n] + cells + [total])
  widths = [max(len(str(c)) for c in col) for col in zip(["measure"] + cols, *rows)]
  fmt_row = lambda cells: "| " + " | ".join(  # noqa: E731
      (str(c).ljust(w) if j == 0 else str(c).rjust(w)) for j, (c, w) in enumerate(
          zip(cells, widths))) + " |"
  sep = "|" + "|".join("-" * (w + 1) + (":" if j else "-") for j, w in enumerate(widths)) + "|"
  return "\n".join([fmt_row(["measure"] + cols), sep] + [fmt_row(r) for r in rows]) + "\n"


def _csv(text: str) -> str:
  return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text


def evaluate_command(args: argparse.Namespace) -> str:
  """Runs ``jaxrank evaluate`` and returns the complete output text."""
  if args.example:
    if args.qrels or args.run:
      raise ValueError("--example replaces QRELS and RUN; give one or the other")
    args.qrels, args.run = example_paths()
  elif not (args.qrels and args.run):
    raise ValueError("give QRELS and RUN files (or --example)")
  if args.max_docs is not None and args.max_docs <= 0:
    raise ValueError(f"-M must be a positive number of documents, got {args.max_docs}")
  if args.level <= 0:
    raise ValueError(f"-l must be a positive relevance level, got {args.level}")
  specs = args.measure or ["official"]
  requests = _trec.parse_measures(specs)
  if "all_trec" in specs:
    sys.stderr.write("jaxrank: note: all_trec without the trec_eval measures jaxrank does not "
                     f"compute: {', '.join(_trec.UNSUPPORTED)}\n")
  progress = _Progress()
  try:
    progress.note(f"reading {args.qrels}")
    qrels = io.read_qrels(args.qrels)
    progress.note(f"reading {args.run}")
    run = io.read_run(args.run)
    result = _trec.evaluate_run(run, qrels, requests, ties=args.ties, float32=args.float32,
                                max_docs=args.max_docs, complete=args.complete,
                                threshold=args.level, progress=progress,
                                sources=(args.run, args.qrels))
  finally:
    progress.close()
  if not result.qids and not args.complete:
    raise ValueError("no query of the run has judgments in the qrels")
  return _render(result, args.format, args.per_query)


def main(argv: list[str] | None = None) -> int:
  """Entry point of the ``jaxrank`` command; returns the exit status.

  Example:
    >>> from jaxrank import cli
    >>> cli.main(["evaluate", "--example", "-m", "num_q"])  # doctest: +NORMALIZE_WHITESPACE
    num_q all 5
    0
  """
  args = _parser().parse_args(argv)
  try:
    text = compare.command(args) if args.command == "compare" else evaluate_command(args)
  except (ValueError, TypeError, OSError) as e:
    message = " ".join(str(e).split()) or type(e).__name__
    sys.stderr.write(f"jaxrank: error: {message}\n")
    return 1
  except KeyboardInterrupt:
    sys.stderr.write("jaxrank: error: interrupted\n")
    return 130
  except Exception as e:  # never a traceback on the command line
    if os.environ.get("JAXRANK_DEBUG"):
      raise
    message = " ".join(str(e).split())
    sys.stderr.write(f"jaxrank: error: internal error ({type(e).__name__}: {message}); "
                     f"set JAXRANK_DEBUG=1 for a traceback\n")
    return 70
  try:
    sys.stdout.write(text)
    sys.stdout.flush()
  except BrokenPipeError:  # e.g. `jaxrank evaluate ... | head`
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
  return 0


if __name__ == "__main__":  # pragma: no cover
  sys.exit(main())
