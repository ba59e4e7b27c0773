"""The ``jaxrank`` command: a drop-in for ``trec_eval`` on the rank core.

Usage::

    jaxrank evaluate QRELS RUN [-m MEASURE ...] [-q] [-c] [-M N] [-l N]
                     [--ties {trec,average,optimistic,pessimistic,first}] [--float32]
                     [--format {trec,json,csv,table}] [--chunk-lines N] [--processes N]
    jaxrank evaluate --example [...]      # the small example qrels/run shipped in the package
    jaxrank compare QRELS RUN RUN [...] [-m MEASURE ...] [--test ...]  # see jaxrank.compare
    jaxrank --version                     # also `python -m jaxrank ...` for `jaxrank ...`

The default output is trec_eval's: ``measure<TAB>qid<TAB>value`` with the name padded to 22
characters and 4 decimals; ``-q`` prints every query before the ``all`` lines. Errors print one
line, ``jaxrank: error: ...``, to stderr and exit non-zero; nothing is printed to stdout unless the
whole evaluation succeeded. QRELS or RUN may be ``-`` (standard input, not both) and either may
be gzip-compressed. ``--chunk-lines N`` reads and evaluates the run about N lines (whole queries)
at a time, in memory bounded by N, with the whole file's output (:mod:`jaxrank._trec.chunked`); a run
file of 16 MiB or more is evaluated so by default, 250,000 lines at a time (faster, in a fraction
of the memory; :func:`jaxrank._trec.plan.evaluate_file`), and read whole after all if its
queries' lines are not together. A run file read in chunks is cut into parts of whole queries
that ``--processes N`` processes evaluate at once (default: one per 32 MiB, up to the usable
cores and 8; :mod:`jaxrank._trec.parallel`), with the same output.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import signal
import stat
import sys
import threading
import time
from itertools import chain
from typing import TYPE_CHECKING

from jaxrank._version import __version__
from jaxrank.cli._args import check_cut_and_level, check_stdin

if TYPE_CHECKING:  # imported where used: the command starts without them
  from jaxrank._trec import parallel as _parallel
  from jaxrank._trec import run as _run

# Only the standard library at import time, so that main() catches Ctrl-C (exit_on_interrupt)
# before anything imports JAX; _trec, io and compare are imported when needed (by _parser and
# main).

EXAMPLE_QRELS = "example.qrels"
INTERRUPTED = b"jaxrank: error: interrupted\n"
CLOSED = "it is closed"  # why a standard stream started closed (`>&-`) cannot be used
EXAMPLE_RUN = "example.run"


def example_paths() -> tuple[str, str]:
  """Paths of the example qrels and run shipped inside the package.

  Example:
    >>> from jaxrank import cli
    >>> [os.path.basename(p) for p in cli.example_paths()]
    ['example.qrels', 'example.run']
  """
  from importlib import resources  # here: it costs the command's start-up 7 ms

  root = resources.files("jaxrank") / "data"
  return str(root / EXAMPLE_QRELS), str(root / EXAMPLE_RUN)


def _module_run() -> str | None:
  """``"jaxrank.cli"`` or ``"jaxrank"`` for ``python -m jaxrank.cli`` / ``python -m jaxrank``."""
  argv = list(getattr(sys, "orig_argv", ()))
  if "-m" not in argv:
    return None
  module = argv[argv.index("-m") + 1:argv.index("-m") + 2]
  return module[0] if module and module[0] in ("jaxrank", "jaxrank.cli") else None


def is_command() -> bool:
  """True when this process is the ``jaxrank`` command (the console script, ``python -m
  jaxrank`` or ``python -m jaxrank.cli``), not a Python program that imports jaxrank."""
  name = os.path.basename(sys.argv[0]) if sys.argv else ""
  return name in ("jaxrank", "jaxrank.exe", "jaxrank-script.py") or _module_run() is not None


def hold_closed_streams() -> tuple[int, ...]:
  """Opens ``/dev/null`` on whichever of the file descriptors 0, 1 and 2 the command was
  started without (``jaxrank ... >&-``, ``<&-``), and returns them.

  Python then has ``sys.stdin``/``sys.stdout``/``sys.stderr`` set to None, which the command
  reports as a closed stream (one error line, exit 1); the descriptors themselves must not stay
  free, or the next file opened (a qrels file, a cache entry) would take number 0 or 1 and be
  read as standard input or written to as standard output by whatever writes there.
  """
  held = []
  for fd in (0, 1, 2):
    try:
      os.fstat(fd)
      continue
    except OSError:
      pass
    try:
      new = os.open(os.devnull, os.O_RDWR)
    except OSError:
      break
    if new != fd:  # a lower descriptor was free after all: not ours to fill
      os.close(new)
      break
    held.append(fd)
  return tuple(held)


_exiting = threading.Lock()


def _interrupted(*_) -> None:
  """Ends the process at once: one line on stderr and exit status 130 (128 + SIGINT)."""
  if not _exiting.acquire(blocking=False):
    return  # the other path is already ending the process
  try:
    os.write(2, INTERRUPTED)
  finally:
    os._exit(130)


# marks the handler as jaxrank's (read back from signal.getsignal); __dict__: a function's
# attributes, which its type does not declare
_interrupted.__dict__["jaxrank"] = True


def _watch(fd: int) -> None:
  while True:
    data = os.read(fd, 64)
    if not data or signal.SIGINT in data:
      _interrupted()


def exit_on_interrupt() -> bool:
  """Makes Ctrl-C (SIGINT) end the ``jaxrank`` command within moments, wherever it is.

  Python runs signal handlers in the main thread between bytecodes, so a KeyboardInterrupt waits
  for a long compiled computation (XLA, a big sort) to return, and one raised while jax is being
  imported ends in a traceback. Here the C-level handler writes the signal to a pipe
  (``signal.set_wakeup_fd``) and a daemon thread, blocked on that pipe, prints
  ``jaxrank: error: interrupted`` and exits with status 130 (what shells report for Ctrl-C) as
  soon as it reads it. Installed once, by the command only (:func:`main` when called without
  ``argv``, before anything imports JAX). Returns whether it is (now) installed.
  """
  if getattr(signal.getsignal(signal.SIGINT), "jaxrank", False):  # also set by another copy
    return True
  if threading.current_thread() is not threading.main_thread():
    return False
  read, write = os.pipe()
  os.set_blocking(write, False)
  signal.signal(signal.SIGINT, _interrupted)
  signal.set_wakeup_fd(write)
  threading.Thread(target=_watch, args=(read,), name="jaxrank-interrupt", daemon=True).start()
  return True


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


def keep_freed_memory() -> bool:
  """Tunes this process's C allocator (glibc's, on Linux) for reading big run files: arrays
  up to 4 MiB come from the heap rather than from fresh mappings, and up to 16 MiB freed at the
  top of the heap is kept rather than handed back to the system at once. Reading a run file
  allocates and frees the same few megabytes for every block of lines, and every page the
  system hands back out costs a fault: 2M lines, 2.6% less time; 10M lines, 10% more peak
  memory (``bench/RESULTS.md``). For the command's process only (its helpers, forked after,
  inherit it), never a program's. Returns whether it was done (False elsewhere).

  Example:
    >>> from jaxrank import cli
    >>> cli.keep_freed_memory() in (True, False)
    True
  """
  try:
    if not os.confstr("CS_GNU_LIBC_VERSION"):
      return False
    import ctypes

    mallopt = ctypes.CDLL(None).mallopt
  except (ValueError, OSError, AttributeError, ImportError):  # not glibc, or no ctypes
    return False
  return bool(mallopt(_M_MMAP_THRESHOLD, 4 << 20)) and bool(mallopt(_M_TRIM_THRESHOLD,
                                                                    16 << 20))


def one_blas_thread() -> bool:
  """Asks NumPy's BLAS for a single thread (``OPENBLAS_NUM_THREADS=1``: NumPy's wheels bundle
  OpenBLAS), unless the environment names a number already or NumPy is loaded; returns whether
  it asked. The command does no linear algebra on the host (the kernels that do run in XLA,
  which has threads of its own), while OpenBLAS, as NumPy loads, starts a thread per core that
  spins for about a tenth of a second: on two cores that takes one from the helpers reading
  the run (2M lines: 10% less CPU time, 4% less wall time; ``bench/RESULTS.md``). For the
  command's process only (helpers it starts inherit the setting), never a program's.

  Example:
    >>> from jaxrank import cli
    >>> cli.one_blas_thread()  # NumPy is loaded already here
    False
  """
  if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
    return False
  os.environ["OPENBLAS_NUM_THREADS"] = "1"
  return True


def version() -> str:
  """jaxrank's version (``jaxrank.__version__``), as ``jaxrank --version`` prints it.

  Example:
    >>> from jaxrank import cli
    >>> cli.version().count(".") >= 2
    True
  """
  return __version__


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
    self.exit(2, f"jaxrank: error: {message} (see `{self.prog} --help`)\n")


def _parser(command: str | None = None) -> argparse.ArgumentParser:
  """The command's parser; for ``command="evaluate"`` without ``jaxrank compare``, whose
  arguments take their vocabularies from :mod:`jaxrank.stats`, which imports JAX."""
  from jaxrank._trec import table as _trec

  top = _Parser(prog="jaxrank", description="Ranking evaluation on jaxrank's rank core.")
  top.add_argument("--version", action="version", version=f"jaxrank {version()}",
                   help="print jaxrank's version and exit")
  sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
  sub.required = True
  ev = sub.add_parser(
      "evaluate", help="evaluate a TREC run against qrels (trec_eval compatible)",
      description="Evaluate a TREC run file against a qrels file; trec_eval's options and "
      "output. Files: qrels `qid iter docid rel`, run `qid Q0 docid rank score tag`.",
      epilog=_trec.describe(), formatter_class=argparse.RawDescriptionHelpFormatter)
  ev.add_argument("qrels", nargs="?", help="qrels file (qid iter docid rel); - for stdin; "
                  "gzip is read as such")
  ev.add_argument("runs", nargs="*", metavar="RUN",
                  help="run file(s) (qid Q0 docid rank score tag); - for stdin; gzip is read as "
                  "such. Several runs: one process, the qrels read once, each output line (row) "
                  "led by its run")
  ev.add_argument("--example", action="store_true",
                  help="use the example qrels and run shipped with jaxrank")
  ev.add_argument("-m", "--measure", action="append", metavar="MEASURE",
                  help="measure(s): trec_eval's (map, P.5,10, ndcg_cut.10, all_trec; default: "
                  "official), ir_measures' (nDCG@10, 'P(rel=2)@5', 'RBP(p=0.8)', ERR@20, SetP) "
                  "or jaxrank's (err@20, rbp@10, mrr)")
  ev.add_argument("-q", "--per-query", action="store_true", help="print per-query values too")
  ev.add_argument("-c", "--complete", action="store_true",
                  help="average over every qrels query; queries missing from the run score 0 "
                  "(but num_rel and ideal_dcg: their judgments' values, as trec_eval)")
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
  ev.add_argument("--chunk-lines", type=int, default=None, metavar="N",
                  help="read and evaluate the run about N lines (whole queries) at a time, for "
                  "runs bigger than memory; same output. Each query's lines must come together. "
                  "0: read the whole run at once. Default: run files of 16 MiB or more in chunks "
                  "of 250,000 lines (read whole if their queries' lines are not together), "
                  "smaller ones whole")
  ev.add_argument("--processes", type=int, default=None, metavar="N",
                  help="evaluate a run file read in chunks in N processes at once, each reading "
                  "its own part of whole queries; same output. Default: one per 32 MiB of run, "
                  "up to the usable cores and 8; 1: this process only")
  ev.add_argument("--no-cache", action="store_true",
                  help=f"do not use the persistent compilation cache ({CACHE_ENV}=off does the "
                  f"same; {CACHE_ENV}=DIR moves it)")
  if command != "evaluate":
    from jaxrank.cli import _compare

    _compare.add_parser(sub)  # `jaxrank compare`: runs compared with significance tests
  return top


def _command_of(argv: list[str]) -> str | None:
  """The subcommand ``argv`` names (its first word that is not an option), if any."""
  return next((a for a in argv if not a.startswith("-")), None)


CACHE_ENV = "JAXRANK_CACHE"


def cache_dir(environ=None) -> str | None:
  """Where the command keeps XLA's compiled kernels between runs, or None when it is off.

  ``$JAXRANK_CACHE`` set to ``off`` (or ``0``, ``no``, ``false``, empty) turns the cache off; set
  to a path it is the cache. Otherwise ``$XDG_CACHE_HOME/jaxrank/xla`` or
  ``~/.cache/jaxrank/xla``. A directory that cannot be created or written (a read-only home) turns
  the cache off: the command then compiles as if it had none, and says nothing. One that someone
  else could have written to (see :func:`_use_compilation_cache`) is not used either, with one
  warning line.

  Example:
    >>> from jaxrank import cli
    >>> cli.cache_dir({"JAXRANK_CACHE": "off"}) is None
    True
    >>> cli.cache_dir({"XDG_CACHE_HOME": "/tmp/c"}) == os.path.join("/tmp/c", "jaxrank", "xla")
    True
  """
  env = os.environ if environ is None else environ
  chosen = env.get(CACHE_ENV)
  if chosen is not None and chosen.strip().lower() in ("", "0", "off", "no", "false"):
    return None
  if chosen:
    return os.path.abspath(os.path.expanduser(chosen))
  base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
  return os.path.join(base, "jaxrank", "xla")


def _use_compilation_cache(path: str | None) -> bool:
  """Points JAX's persistent compilation cache at ``path`` (every kernel, however quick to
  compile), and keeps the evaluation kernels' executables in ``path/executables``
  (:mod:`jaxrank._host.executables`); a second ``jaxrank evaluate`` of the same shapes then loads
  instead of tracing and compiling. Entries are written atomically, so concurrent commands share
  the directory safely.

  Loading a compiled kernel runs code from the cache, so the cache is used only if nobody else
  can have written to it: ``path`` (which may be a symbolic link to it) and ``executables/`` must
  be directories owned by the current user and not writable by its group or others (each one
  created here is ``0700``), ``executables/`` not a symbolic link, and JAX's entries in ``path``
  regular files of the user's (see :mod:`jaxrank._host.executables` for its own entries).
  Otherwise one warning line, and the command compiles as if it had no cache. JAX is configured
  when it is first used (:mod:`jaxrank._host.cache`): a run scored on the host never imports it."""
  if path is None:
    return False
  from jaxrank._host import cache

  try:
    reason = cache.check_directory(path)
    real = os.path.realpath(path)
    reason = reason or _unsafe_jax_entry(real)
    if reason is None and not os.access(real, os.W_OK | os.X_OK):
      return False
  except OSError:
    return False
  if reason is not None:
    cache.warn(f"cache directory {path}", reason)
    return False
  if not cache.use_directory(os.path.join(real, "executables")):
    return False
  cache.use_jax_cache(real)
  return True


_JAX_ENTRIES = ("-cache", "-atime")  # jax's LRUCache: KEY-cache, KEY-atime (and .lockfile)


def _unsafe_jax_entry(path: str) -> str | None:
  """Why one of the files JAX's persistent cache would read in ``path`` could have been written
  by someone else (JAX follows symbolic links and blocks on a FIFO), or ``None``. JAX writes its
  entries with the umask's mode: a group-writable one is fine where nobody else can enter
  ``path``."""
  from jaxrank._host import cache

  closed = not os.stat(path).st_mode & 0o011  # nobody else can reach the files inside
  with os.scandir(path) as entries:
    for entry in entries:
      if not (entry.name.endswith(_JAX_ENTRIES) or entry.name == ".lockfile"):
        continue
      st = entry.stat(follow_symlinks=False)
      if stat.S_ISLNK(st.st_mode):
        return f"its entry {entry.name} is a symbolic link"
      if not stat.S_ISREG(st.st_mode):
        return f"its entry {entry.name} is not a regular file"
      reason = cache.unsafe_owner_or_mode(st)
      if reason is not None and not (closed and st.st_uid == os.getuid()):
        return f"its entry {entry.name}: {reason}"
  return None


def _number(name: str, value, integer: set[str], quote: bool = False, full: bool = False) -> str:
  """trec_eval's text of a value (4 decimals), or with ``full`` the shortest text that reads
  back as the same double (csv)."""
  if isinstance(value, str):
    return f"'{value}'" if quote else value  # trec_eval quotes per-query strings (relstring)
  if name in integer:
    return str(int(value))
  return repr(float(value)) if full else f"{float(value):6.4f}"


def _render(result, fmt: str, per_query: bool) -> str:
  names = list(result.per_query) if per_query else []
  if fmt in ("trec", "csv"):
    full = fmt == "csv"
    # a generator, not a list: -q on 100,000 queries is millions of lines (one string at the end)
    rows = chain(((n, qid, _number(n, result.per_query[n][i], result.integer, quote=True,
                                   full=full))
                  for i, qid in enumerate(result.qids if per_query else []) for n in names),
                 ((n, "all", _number(n, v, result.integer, full=full))
                  for n, v in result.summary.items()))
    if fmt == "trec":
      return "".join(f"{n:<22}\t{q}\t{v}\n" for n, q, v in rows)
    return "measure,qid,value\n" + "".join(f"{n},{_csv(q)},{_csv(v)}\n" for n, q, v in rows)
  if fmt == "json":
    return json.dumps(_json_object(result, per_query), indent=2) + "\n"
  # table: one row per measure, a column per query (with -q) and one for all
  cols = result.qids if per_query else []
  return _markdown(["measure", *cols, "all"], _table_rows(result, cols, per_query))


def _render_runs(results: list, fmt: str, per_query: bool) -> str:
  """Several runs' outputs in one format, each line (row, object) led by its run: trec_eval's
  lines with the run first (``RUN<TAB>measure<TAB>qid<TAB>value``), csv with a ``run`` column,
  json as ``{run: {...}}``, the table with a ``run`` column."""
  if fmt == "trec":
    return "".join(f"{run}\t{line}" for run, result in results
                   for line in _render(result, fmt, per_query).splitlines(True))
  if fmt == "csv":
    return "run,measure,qid,value\n" + "".join(
        f"{_csv(run)},{line}" for run, result in results
        for line in _render(result, fmt, per_query).splitlines(True)[1:])
  if fmt == "json":
    return json.dumps({run: _json_object(result, per_query) for run, result in results},
                      indent=2) + "\n"
  cols = list(dict.fromkeys(q for _, result in results
                            for q in (result.qids if per_query else [])))
  rows = [[run, *row] for run, result in results for row in _table_rows(result, cols, per_query)]
  return _markdown(["run", "measure", *cols, "all"], rows, text_columns=2)


def _json_object(result, per_query: bool) -> dict:
  """``{"all": {measure: value}}`` and with ``per_query`` ``"per_query": {qid: {...}}``."""
  def plain(n, v):
    return v if isinstance(v, str) else int(v) if n in result.integer else float(v)
  out = {"all": {n: plain(n, v) for n, v in result.summary.items()}}
  if per_query:
    out["per_query"] = {qid: {n: plain(n, result.per_query[n][i]) for n in result.per_query}
                        for i, qid in enumerate(result.qids)}
  return out


def _table_rows(result, cols: list[str], per_query: bool) -> list[list[str]]:
  """One row per measure: its name, its value for each query of ``cols`` (empty where it has
  none or without ``per_query``) and its ``all`` value."""
  place = {q: i for i, q in enumerate(result.qids)}
  shown = set(result.per_query) if per_query else set()
  rows = []
  for n in result.names:
    if n not in result.summary and n not in shown:
      continue
    cells = [_number(n, result.per_query[n][place[q]], result.integer)
             if n in shown and q in place else "" for q in cols]
    total = _number(n, result.summary[n], result.integer) if n in result.summary else ""
    rows.append([n, *cells, total])
  return rows


def _markdown(header: list[str], rows: list[list[str]], text_columns: int = 1) -> str:
  """A markdown table: the first ``text_columns`` left-aligned, the others right-aligned."""
  widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]

  def line(cells: list[str]) -> str:
    return "| " + " | ".join(str(c).ljust(w) if j < text_columns else str(c).rjust(w)
                             for j, (c, w) in enumerate(zip(cells, widths))) + " |"

  sep = "|" + "|".join("-" * (w + 1) + ("-" if j < text_columns else ":")
                       for j, w in enumerate(widths)) + "|"
  return "\n".join([line(header), sep] + [line(r) for r in rows]) + "\n"


def _csv(text: str) -> str:
  return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text


def evaluate_command(args: argparse.Namespace) -> str:
  """Runs ``jaxrank evaluate`` and returns the complete output text."""
  from jaxrank import io
  from jaxrank._trec import plan as _plan
  from jaxrank._trec import table as _trec

  if args.example:
    if args.qrels or args.runs:
      raise ValueError("--example replaces QRELS and RUN; give one or the other")
    args.qrels, example_run = example_paths()
    args.runs = [example_run]
  elif not (args.qrels and args.runs):
    raise ValueError("give QRELS and RUN files (or --example)")
  if args.qrels == "-" and args.runs == ["-"]:
    raise ValueError("QRELS and RUN cannot both be standard input ('-'); give one as a file")
  if len(set(args.runs)) < len(args.runs):
    twice = next(r for r in args.runs if args.runs.count(r) > 1)
    raise ValueError(f"RUN {twice} is given twice: each run is evaluated once")
  labels = ["RUN"] if len(args.runs) == 1 else [f"RUN {r}" for r in args.runs]
  check_stdin({"QRELS": args.qrels, **dict(zip(labels, args.runs))})
  if args.chunk_lines is not None and args.chunk_lines < 0:
    raise ValueError(f"--chunk-lines must be a positive number of lines (or 0: the whole run), "
                     f"got {args.chunk_lines}")
  if args.processes is not None and args.processes < 1:
    raise ValueError(f"--processes must be a positive number of processes, got "
                     f"{args.processes}")
  check_cut_and_level(args)
  specs = args.measure or ["official"]
  trec_specs, names = _plan.split_specs(specs)  # trec_eval's measures; ir_measures', jaxrank's
  requests = _trec.parse_measures(trec_specs) if trec_specs else []
  if "all_trec" in specs:
    _say("jaxrank: note: all_trec without the trec_eval measures jaxrank does not "
         f"compute: {', '.join(_trec.UNSUPPORTED)}\n")
  progress = _Progress()
  fork = is_command()  # helpers forked: the command's process is its own (not a program's)
  if fork and _plan.file_size(args.runs[0]) >= _plan.AUTO_CHUNK_BYTES:  # a big run
    keep_freed_memory()

  def evaluate(path: str, helpers: _parallel.Helpers | None) -> _run.Result:
    return _plan.evaluate_file(
        requests, names, qrels, path, asked=args.chunk_lines, note=progress.note,
        progress=progress, where="`jaxrank evaluate`", ties=args.ties, float32=args.float32,
        max_docs=args.max_docs, complete=args.complete, threshold=args.level,
        sources=(path, args.qrels), processes=args.processes, helpers=helpers, fork=fork)

  # The first run's helper processes are made now, while the qrels are read (forked ones split
  # their first spans meanwhile).
  helpers = _plan.helpers_for(args.runs[0], asked=args.chunk_lines, processes=args.processes,
                              fork=fork)
  try:
    progress.note(f"reading {args.qrels}")
    qrels = io.read_qrels(args.qrels)
    results = [(path, evaluate(path, helpers if i == 0 else None))
               for i, path in enumerate(args.runs)]
  finally:
    if helpers is not None:
      helpers.close()
    progress.close()
  if len(results) == 1:
    return _render(results[0][1], args.format, args.per_query)
  return _render_runs(results, args.format, args.per_query)


def main(argv: list[str] | None = None) -> int:
  """Entry point of the ``jaxrank`` command; returns the exit status.

  The command itself (``argv`` None in the command's process, :func:`is_command`) ends its
  process here once its output is flushed, when nothing is left to do at exit (no exit
  handler registered, no profiler or tracer such as ``python -m cProfile`` or coverage, JAX not
  imported): the interpreter's tidying up (freeing every object and module one by one) would
  take longer than a small run's evaluation (25 ms after a 2M-line run).

  Example:
    >>> from jaxrank import cli
    >>> cli.main(["evaluate", "--example", "-m", "num_q"])  # doctest: +NORMALIZE_WHITESPACE
    num_q all 5
    0
  """
  code = _main(argv)
  if argv is None and is_command() and _nothing_at_exit():
    for stream in (sys.stdout, sys.stderr):
      with contextlib.suppress(OSError, ValueError, AttributeError):
        stream.flush()  # (written and flushed already: this only makes sure)
    os._exit(code)
  return code


def _nothing_at_exit() -> bool:
  """Whether this process has nothing to do at exit but free its memory: no exit handler, no
  profiler or tracer, and JAX (which registers its own) not imported."""
  handlers = getattr(atexit, "_ncallbacks", None)  # (CPython's count of the exit handlers)
  return (handlers is not None and handlers() == 0 and sys.getprofile() is None
          and sys.gettrace() is None and "jax" not in sys.modules)


def _main(argv: list[str] | None) -> int:
  if argv is None:  # the command itself: Ctrl-C ends it at once, even inside XLA
    hold_closed_streams()
    exit_on_interrupt()
    if is_command():
      one_blas_thread()
  try:
    try:
      words = sys.argv[1:] if argv is None else argv
      args = _parser(_command_of(words)).parse_args(words)
    except SystemExit as e:  # --help, --version (printed on stdout), or a usage error (stderr)
      if not e.code and sys.stdout is not None and not _flushed():
        return 1  # (with stdout closed, argparse has printed the help on stderr)
      raise
    if sys.stdout is None:  # `>&-`: say so now, before the work whose output has nowhere to go
      _say(f"jaxrank: error: cannot write the output to stdout: {CLOSED}\n")
      return 1
    if is_command() and not getattr(args, "no_cache", False):
      _use_compilation_cache(cache_dir())
    if args.command == "compare":
      from jaxrank._host import cache
      from jaxrank.cli import _compare

      cache.configure_jax()  # _compare has imported JAX
      text = _compare.command(args)
    else:
      text = evaluate_command(args)
  except (ValueError, TypeError, OSError) as e:
    message = " ".join(str(e).split()) or type(e).__name__
    _say(f"jaxrank: error: {message}\n")
    return 1
  except KeyboardInterrupt:
    _say("jaxrank: error: interrupted\n")
    return 130
  except Exception as e:  # never a traceback on the command line
    if os.environ.get("JAXRANK_DEBUG"):
      raise
    message = " ".join(str(e).split())
    _say(f"jaxrank: error: internal error ({type(e).__name__}: {message}); "
         f"set JAXRANK_DEBUG=1 for a traceback\n")
    return 70
  return 0 if _flushed(text) else 1


def _flushed(text: str = "") -> bool:
  """Writes ``text`` and flushes stdout; on a full disk, a closed pipe (`| head -c0`), ... says
  so in one line and returns False."""
  try:
    if sys.stdout is None:  # started with stdout closed (`>&-`)
      raise OSError(CLOSED)
    try:
      sys.stdout.write(text)
    except UnicodeEncodeError:  # query ids that are not UTF-8 (or not the terminal's encoding):
      sys.stdout.flush()  # their bytes as read, as trec_eval prints them
      sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
    sys.stdout.flush()
    return True
  except (OSError, ValueError) as e:  # ValueError: sys.stdout itself was closed
    _discard_stdout()
    reason = (e.strerror if isinstance(e, OSError) else None) or str(e) or type(e).__name__
    _say(f"jaxrank: error: cannot write the output to stdout: {reason}\n")
    return False


def _discard_stdout() -> None:
  """Points stdout at /dev/null, so the interpreter's last flush of what could not be written
  fails no more (it would print 'Exception ignored ...')."""
  try:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
  except (OSError, ValueError, AttributeError):
    pass


def _say(text: str) -> None:
  """Writes ``text`` on stderr, if there is one (not with ``2>&-``)."""
  try:
    sys.stderr.write(text)
    sys.stderr.flush()
  except (OSError, ValueError, AttributeError):
    pass


if __name__ == "__main__":  # pragma: no cover
  sys.exit(main())
