"""``jaxrank compare``: runs compared on the same queries, with significance tests
(:func:`jaxrank.compare.compare_runs`), from the command line."""

from __future__ import annotations

import argparse
import os
from typing import Any

from jaxrank import io, stats
from jaxrank._trec import table as _trec
from jaxrank.cli._args import check_cut_and_level, check_stdin
from jaxrank.compare import DEFAULT_MEASURES, FORMATS, compare_runs, plot_summary


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
  """Registers ``jaxrank compare`` on the ``jaxrank`` command's subparsers."""
  p: argparse.ArgumentParser = subparsers.add_parser(
      "compare", help="compare runs on the same queries, with significance tests",
      description="Evaluate several runs against one qrels file and compare them: one row per "
      "run, one column per measure (the mean over queries), with a letter for each run it is "
      "significantly better than. The first run is the baseline.",
      epilog="The defaults are not ranx's: here every run is tested against the first "
      "(--pairs baseline) and the p-values are corrected with Holm's method at alpha 0.05; "
      "ranx's compare tests all pairs, without correction, at max_p 0.01. "
      "`--pairs all --correction none --alpha 0.01` (--alpha: ranx's max_p) gives ranx's "
      "letters and its t-test p-values (--p-values), and --digits 3 its rounding.")
  p.add_argument("qrels", help="qrels file (qid iter docid rel); - for stdin")
  p.add_argument("runs", nargs="+", metavar="RUN",
                 help="run files (at least two); one of QRELS and the runs may be - (stdin)")
  p.add_argument("-m", "--measure", action="append", metavar="MEASURE",
                 help="measure(s), trec_eval or jaxrank names, e.g. map, P_10, ndcg_cut_10, "
                 f"ndcg@10 (default: {' '.join(DEFAULT_MEASURES)})")
  p.add_argument("--names", metavar="A,B,...",
                 help="run names (default: the file names without extension)")
  p.add_argument("--test", choices=stats.TESTS, default="t",
                 help="t (paired t-test, default), wilcoxon, sign, randomization (Fisher's), "
                 "bootstrap, tukey (Tukey's HSD)")
  p.add_argument("--correction", choices=stats.CORRECTIONS,
                 help="multiple-comparison correction over the pairs of each measure "
                 "(default: holm; none for tukey; ranx: none)")
  p.add_argument("--alpha", type=float, default=0.05,
                 help="significance level (0.05; ranx's max_p, 0.01 there)")
  p.add_argument("--pairs", choices=("baseline", "all"), default="baseline",
                 help="compare every run with the first (default) or all pairs (as ranx)")
  p.add_argument("--alternative", choices=stats.ALTERNATIVES, default="two-sided",
                 help="two-sided (default), greater or less (a run against its reference)")
  p.add_argument("--p-values", action="store_true",
                 help="add the table of pairs: differences, intervals, Cohen's d, p-values")
  p.add_argument("--format", choices=FORMATS, default="table", help="output format (table)")
  p.add_argument("--digits", type=int, default=4, help="decimals of the means (4)")
  p.add_argument("--ci", choices=stats.CI_METHODS, default="t",
                 help="confidence intervals: t (default), percentile or bca bootstrap")
  p.add_argument("--confidence", type=float, default=0.95, help="interval level (0.95)")
  p.add_argument("--n-resamples", type=int, default=10_000, metavar="N",
                 help="randomization/bootstrap resamples (10000)")
  p.add_argument("--seed", type=int, default=0, help="random seed of the resampling (0)")
  p.add_argument("--missing", choices=stats.MISSING, default="error",
                 help="queries some runs lack: error (default), zero (as trec_eval -c), "
                 "intersect")
  p.add_argument("-c", "--complete", action="store_true", help="same as --missing zero")
  p.add_argument("-M", "--max-docs", type=int, metavar="N",
                 help="keep the top N documents of each query")
  p.add_argument("-l", "--level", type=int, default=1, metavar="N",
                 help="relevant means rel >= N (default 1)")
  p.add_argument("--ties", choices=_trec.TIES, default="trec",
                 help="tie order (default trec: doc id descending)")
  p.add_argument("--float32", action="store_true", help="compare scores as float32")
  p.add_argument("--plot", metavar="FILE.png",
                 help="also draw the means with intervals and the per-query differences "
                 "against the first run into FILE (needs matplotlib); its extension picks the "
                 "format (.png, .pdf, .svg, ...); a directory is refused")
  return p


def run_names(paths: list[str], names: str | None) -> list[str]:
  if names is not None:
    out = [n.strip() for n in names.split(",")]
    if len(out) != len(paths) or not all(out):
      raise ValueError(f"--names must give {len(paths)} non-empty names, got {names!r}")
  else:
    out = [os.path.splitext(os.path.basename(p))[0] or os.path.basename(p) for p in paths]
    if len(set(out)) < len(out):
      out = list(paths)
  if len(set(out)) < len(out):
    raise ValueError(f"run names must differ, got {out}" + ("" if names else "; give --names"))
  return out


def command(args: argparse.Namespace) -> str:
  """Runs ``jaxrank compare`` and returns the output text (writes ``--plot`` if asked)."""
  if len(args.runs) < 2:
    raise ValueError(f"give at least two runs to compare, got {len(args.runs)}")
  check_cut_and_level(args)
  check_stdin({"QRELS": args.qrels,
                   **{f"RUN {i}": path for i, path in enumerate(args.runs, start=1)}})
  missing = "zero" if args.complete else args.missing
  if args.complete and args.missing not in ("error", "zero"):
    raise ValueError(f"-c means --missing zero; it contradicts --missing {args.missing}")
  names = run_names(args.runs, args.names)
  if args.plot is not None:  # before the work, not after it
    _check_plot_path(args.plot)
  qrels = io.read_qrels(args.qrels)
  runs = {name: io.read_run(path) for name, path in zip(names, args.runs)}
  try:
    report = compare_runs(runs, qrels, args.measure or list(DEFAULT_MEASURES),
                          missing=missing, ties=args.ties, float32=args.float32,
                          max_docs=args.max_docs, threshold=args.level, test=args.test,
                          pairs=args.pairs, correction=args.correction, alpha=args.alpha,
                          alternative=args.alternative, confidence=args.confidence, ci=args.ci,
                          key=args.seed, n_resamples=args.n_resamples)
  except ValueError as e:  # the library's option names, as the command spells them
    message = str(e)
    for api, option in _OPTIONS.items():
      message = message.replace(api, option)
    raise ValueError(message) from None
  text = report.to_string(args.format, pvalues=args.p_values, digits=args.digits)
  if args.plot is not None:
    plot_summary(report, args.plot)
  return text


# The library's words in compare_runs' errors, and the command's options that say the same.
_OPTIONS = {"missing='zero' (trec_eval -c)": "--missing zero (or -c, as trec_eval)",
            "missing='zero'": "--missing zero", "missing='intersect'": "--missing intersect"}


def _check_plot_path(path: str) -> None:
  """``--plot FILE``: a file name whose extension matplotlib can write, in a directory that
  exists; matplotlib is imported here (and set to draw into files, never a window)."""
  if not path.strip():
    raise ValueError(f"--plot must name a file (FILE.png, .pdf, .svg, ...), got {path!r}")
  if os.path.isdir(path):
    raise ValueError(f"--plot must name a file (FILE.png, .pdf, .svg, ...), got the "
                     f"directory {path!r}; give e.g. {os.path.join(path, 'comparison.png')!r}")
  try:
    import matplotlib
  except ImportError:
    raise ValueError("--plot needs matplotlib: pip install 'jaxrank[plot]'") from None
  matplotlib.use("Agg")  # a file, never a window
  from matplotlib.backend_bases import FigureCanvasBase

  formats = FigureCanvasBase.get_supported_filetypes()
  extension = os.path.splitext(path)[1].lstrip(".").lower()
  if extension not in formats:
    raise ValueError(f"--plot FILE's extension picks the image format, one of "
                     f"{', '.join('.' + f for f in sorted(formats))}; got {path!r}")
  folder = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(folder):
    raise ValueError(f"--plot {path!r}: the directory {folder!r} does not exist")
