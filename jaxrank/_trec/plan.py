"""How a run is evaluated: the one planner of :func:`jaxrank.numpy.evaluate_run` and of
``jaxrank evaluate`` (:func:`jaxrank.cli.evaluate_command`).

What is asked. A name is trec_eval's (:func:`is_trec`: one of its measures, or no ir_measures or
jaxrank name, so that trec_eval's reading names the error) or an ir_measures or jaxrank name.
The command reads trec_eval's ``-m`` lists (:func:`split_specs`: sets, ``P.5,10``, the first
parameters of a measure win); the NumPy door asks one value per name (:func:`one_value_each`).

How the run is read. Whole, by default: trec_eval's measures and the other names in one
evaluation (:func:`jaxrank._trec.irnames.evaluate_names`). In chunks of whole queries
(:func:`jaxrank._trec.chunked.evaluate_chunks`, which evaluates each chunk so) when asked (the
command's ``--chunk-lines``) or, by :func:`chunking`, for a big run (a run file of
:data:`AUTO_CHUNK_BYTES`, read :data:`AUTO_CHUNK_LINES` lines at a time by
:func:`evaluate_file`; a run dict of more than a million rows). Where the run can
be read twice (a file, a dict), chunks are read judged first (only judged documents and those
that may tie get a code); when that reading cannot settle a run (:class:`jaxrank.io.NeedsFullRead`:
equal hashes, a document listed twice, a query's lines apart), the door says what comes next:
chunks with every document coded, or the whole run. Chunks chosen by size fall back to the
whole run when the run's queries are scattered (:class:`jaxrank.io.ScatteredQueryError`);
asked ones raise it. A run file read in chunks is shared by several processes (one per
32 MiB, up to the cores and 8, or as asked: :mod:`jaxrank._trec.parallel`), back to one
process where one must settle the run.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from jaxrank import io
from jaxrank._core.irnames import is_name, parse
from jaxrank._trec import chunked as _chunked
from jaxrank._trec import irnames as _irnames
from jaxrank._trec import parallel as _parallel
from jaxrank._trec import table
from jaxrank._trec.run import Result
from jaxrank._trec.table import Request

AUTO_CHUNK_BYTES = 16 << 20  # run files this large are evaluated in chunks unless told otherwise
AUTO_CHUNK_LINES = 250_000  # their lines per chunk (measured: bench/RESULTS.md)


def is_trec(name: Any) -> bool:
  """Whether ``name`` is read as trec_eval's: one of its measures, or neither an ir_measures
  name nor one of jaxrank's (then reading it as trec_eval's names the error). A name that is
  both (``map``, ``ndcg``, ``P``) is trec_eval's.

  Example:
    >>> from jaxrank._trec import plan
    >>> [plan.is_trec(n) for n in ["map", "P_10", "nDCG@10", "ndcg@10", "bogus"]]
    [True, True, False, False, True]
  """
  return name in table.MEASURES or not (is_name(name) or _irnames.is_jaxrank_name(name))


def split_specs(specs: Sequence[str]) -> tuple[list[str], list[str]]:
  """``(trec_eval specs, other names)`` of the command's ``-m`` values: what trec_eval's ``-m``
  reads (``map``, ``P.5,10``, ``P_10``, ``rbp``, ``official``) and the ir_measures or jaxrank
  names (``nDCG@10``, ``RBP(p=0.8)``, ``err@20``); each one's errors now, in order, before any
  file is read.

  Example:
    >>> from jaxrank._trec import plan
    >>> plan.split_specs(["map", "P.5", "ERR@20", "rbp", "rbp@10", "SetP"])
    (['map', 'P.5', 'rbp'], ['ERR@20', 'rbp@10', 'SetP'])
  """
  trec, others = [], []
  for spec in specs:
    if is_trec(spec):
      table.parse_measures([spec])
      trec.append(spec)
    else:
      parse(spec)  # an ir_measures name's errors
      others.append(spec)
  return trec, others


def one_value_each(metrics: Sequence[str]) -> tuple[list[Request], list[str],
                                                    list[tuple[str, str]]]:
  """``(requests, other names, keys)`` of names that each ask one value: trec_eval's measures
  parsed one by one (re-parsing them together would merge ``P.1`` and ``P.2``: the first
  wins), the ir_measures and jaxrank names, and for each name the key of its value in the
  :class:`~jaxrank._trec.run.Result` (a printed trec_eval name, or the name itself).

  Example:
    >>> from jaxrank._trec import plan
    >>> requests, others, keys = plan.one_value_each(["P.5", "nDCG@10", "P_10"])
    >>> [r.names() for r in requests], others, keys
    ([['P_5'], ['P_10']], ['nDCG@10'], [('P.5', 'P_5'), ('nDCG@10', 'nDCG@10'), ('P_10', 'P_10')])
  """
  keys: list[tuple[str, str]] = []
  requests: list[Request] = []
  others = []  # jaxrank's names and ir_measures' (the options written in them apply to them)
  for name in metrics:
    if not is_trec(name):
      keys.append((name, name))
      others.append(name)
      continue
    (request,) = table.parse_measures([name])
    printed = request.names()
    if len(printed) != 1:
      raise ValueError(f"metric {name!r} names {len(printed)} values ({', '.join(printed)}); "
                       f"ask for one, e.g. {printed[0]!r}")
    keys.append((name, printed[0]))
    requests.append(request)
  return requests, others, keys


@dataclasses.dataclass(frozen=True)
class Chunks:
  """A run read in chunks of about ``rows`` lines (whole queries); ``auto``: chosen by the
  run's size, not asked."""

  rows: int
  auto: bool


def chunking(*, asked: int | None, size: int, auto_size: int, auto_rows: int) -> Chunks | None:
  """How a run is read: in chunks (a :class:`Chunks`) or whole (None).

  ``asked``: the lines per chunk the caller asked for (0: the whole run; None: by size);
  ``size``: the run's size in the unit of ``auto_size`` (a file's bytes, a dict's rows; 0 when
  unknown), from which on a run is read in chunks of ``auto_rows``.

  Example:
    >>> from jaxrank._trec import plan
    >>> plan.chunking(asked=None, size=10**8, auto_size=64 << 20, auto_rows=10**6)
    Chunks(rows=1000000, auto=True)
    >>> plan.chunking(asked=0, size=10**8, auto_size=64 << 20, auto_rows=10**6)
  """
  if asked:
    return Chunks(rows=asked, auto=False)
  if asked is None and size >= auto_size:
    return Chunks(rows=auto_rows, auto=True)
  return None


def evaluate_run(requests: Sequence[Request], names: Sequence[str], qrels: io.Qrels, *,
                 chunks: Chunks | None, read: Callable[[], io.Run],
                 read_chunks: Callable[[bool, int], Iterable[io.Run]], rereadable: bool,
                 after_judged: str, fallback: Callable[[], None] = lambda: None,
                 chunk_progress: Callable[[int], None] | None = None,
                 progress: Callable[[int, int], None] | None = None,
                 spread: Callable[[_chunked.ChunkJob, int], Result] | None = None,
                 where: str, given: dict | None = None,
                 options=None, unique_docs: bool = False, sources=("run", "qrels"),
                 **run_options) -> Result:
  """Evaluates trec_eval ``requests`` and other ``names`` on a run, whole or in ``chunks``
  (:func:`chunking`), as the module docstring says.

  Args:
    read: the whole run.
    read_chunks: ``read_chunks(judged, rows)``: the run in chunks of whole queries, about
      ``rows`` lines each; ``judged``: only the documents the qrels judge and those that may tie
      coded (:func:`jaxrank.io.iter_judged_run_chunks`, :func:`jaxrank.io.iter_dict_chunks`).
    rereadable: the run can be read twice (a file, a dict: not standard input), so chunks are
      read judged first.
    after_judged: what follows a judged reading that cannot settle the run
      (:class:`jaxrank.io.NeedsFullRead`): ``"chunks"`` (every document coded) or ``"whole"``.
    fallback: called when chunks chosen by size give way to the whole run.
    chunk_progress: called after each chunk with the lines read so far; ``progress``: the whole
      run's progress (queries done, queries).
    spread: ``spread(job, rows)``: the judged chunks evaluated by several processes
      (:func:`jaxrank._trec.parallel.evaluate_spans`), tried first when the run can be read
      twice; it raises :class:`jaxrank._trec.parallel.Fallback` where one process must.
    where: how errors about the names name the caller.
    given, options: the formula options as the caller gave them (the names' evaluation, whose
      names may write their own) and as built (the chunks'); None: the defaults.
    unique_docs, sources, run_options: as :func:`jaxrank._trec.run.evaluate_requests`
      (``ties``, ``float32``, ``max_docs``, ``complete``, ``threshold``).
  """
  if after_judged not in ("chunks", "whole"):
    raise ValueError(f"after_judged must be 'chunks' or 'whole', got {after_judged!r}")
  if chunks is not None:
    def job(judged: bool) -> _chunked.ChunkJob:
      return _chunked.ChunkJob(qrels, requests, names=names, given=given, where=where,
                               sources=sources, uncoded=judged, unique_docs=unique_docs,
                               options=options, **run_options)

    def in_chunks(judged: bool) -> Result:
      one = job(judged)
      return one.result([one.values(read_chunks(judged, chunks.rows), chunk_progress)])

    whole = False
    try:
      if rereadable:  # only judged and possibly tied documents coded
        if spread is not None:
          try:
            return spread(job(True), chunks.rows)
          except _parallel.Fallback:
            pass  # one process reads it (and reports what stopped the others)
        try:
          return in_chunks(True)
        except io.NeedsFullRead:
          whole = after_judged == "whole"
      if not whole:
        return in_chunks(False)  # every document coded
    except io.ScatteredQueryError:
      if not chunks.auto:
        raise
    fallback()
  return _irnames.evaluate_names(read(), qrels, names, requests, progress=progress, where=where,
                                 given=given, unique_docs=unique_docs, sources=sources,
                                 **run_options)


def file_size(path: str) -> int:
  """The size of the regular file ``path`` in bytes; 0 for ``-`` (standard input), a pipe or
  anything that cannot be read twice."""
  try:
    return os.stat(path).st_size if path != "-" and os.path.isfile(path) else 0
  except (OSError, TypeError, ValueError):
    return 0


def evaluate_file(requests: Sequence[Request], names: Sequence[str], qrels: io.Qrels,
                  path: str, *, asked: int | None = None,
                  note: Callable[[str], None] = lambda text: None,
                  progress: Callable[[int, int], None] | None = None, where: str,
                  given: dict | None = None, options=None, sources=("run", "qrels"),
                  processes: int | None = None, helpers: _parallel.Helpers | None = None,
                  fork: bool = False, **run_options) -> Result:
  """:func:`evaluate_run` on the run file ``path`` (``-``: standard input), read as the command
  reads it: whole, or in chunks of whole queries when asked (``asked`` lines) or when the file
  has :data:`AUTO_CHUNK_BYTES` or more (then :data:`AUTO_CHUNK_LINES` lines at a time, judged
  documents first; read whole after all if the queries' lines are not together). A file read
  in chunks is cut into spans of whole queries evaluated by ``processes`` processes at once
  (:mod:`jaxrank._trec.parallel`; None: by its size, :func:`jaxrank._trec.parallel.
  processes_for`): forked from this one if ``fork`` (the command's, which owns its process)
  where :func:`jaxrank._trec.parallel.can_fork`, else started, some of them ``helpers`` started
  ahead (:func:`helpers_for`; ended here).
  ``note(text)`` hears what is being read; ``requests, names, qrels, progress, where, given,
  options, sources, run_options``: as :func:`evaluate_run`'s.

  Example:
    >>> import os, tempfile
    >>> from jaxrank import io
    >>> from jaxrank._trec import plan, table
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "run.txt")
    >>> with open(path, "wb") as f:
    ...   _ = f.write(b"q Q0 a 1 2.0 t\\nq Q0 b 2 1.0 t\\n")
    >>> res = plan.evaluate_file(table.parse_measures(["map"]), [], io.read_qrels(b"q 0 b 1\\n"),
    ...                          path, where="example")
    >>> res.summary["map"]
    0.5
  """
  size, chunks, count = _reading(path, asked, processes)
  if helpers is not None and helpers.spans is not None:  # forked ahead: these spans
    spans = helpers.spans
  else:
    spans = io.query_spans(path, _parallel.span_cuts(size, count)) if count > 1 else []

  def spread(job: _chunked.ChunkJob, lines: int) -> Result:
    note(f"evaluating {path} in {count} processes")
    try:
      return _parallel.evaluate_spans(job, path, spans, max_lines=lines, processes=count,
                                      helpers=helpers, fork=fork, progress=lambda n: note(
                                          f"evaluating {path}: {n:,} lines of a part"))
    except _parallel.Fallback as e:
      note(f"evaluating {path} in one process: {e}")
      raise

  def read() -> io.Run:
    note(f"reading {path}")
    return io.read_run(path)

  def read_chunks(judged: bool, lines: int) -> Iterable[io.Run]:
    if judged:  # a file: its judged documents first (io.iter_judged_run_chunks)
      return io.iter_judged_run_chunks(path, qrels, max_lines=lines)
    return io.iter_run_chunks(path, max_lines=lines)

  auto = chunks is not None and chunks.auto
  try:
    return evaluate_run(
        requests, names, qrels, chunks=chunks, read=read, read_chunks=read_chunks,
        rereadable=bool(size), after_judged="whole" if auto else "chunks",
        fallback=lambda: note(f"reading {path} whole"),
        chunk_progress=lambda n: note(f"evaluating {path}: {n:,} lines"), progress=progress,
        spread=spread if len(spans) > 1 else None, where=where, given=given, options=options,
        sources=sources, **run_options)
  finally:
    if helpers is not None:
      helpers.close()


def helpers_for(path: str, *, asked: int | None = None, processes: int | None = None,
                fork: bool = False) -> _parallel.Helpers | None:
  """The helper processes :func:`evaluate_file` (same ``asked``, ``processes``, ``fork``) will
  want for the run file ``path``, made now, while this process reads the qrels: forked if
  ``fork`` where :func:`jaxrank._trec.parallel.can_fork` (each splits its first span of the
  file meanwhile), else started (their interpreters start meanwhile). None when it will read
  the file in this process alone.

  Example:
    >>> from jaxrank._trec import plan
    >>> plan.helpers_for("-") is None  # standard input is read here
    True
  """
  size, _, count = _reading(path, asked, processes)
  if count < 2:
    return None
  if fork and _parallel.can_fork():
    try:
      spans = io.query_spans(path, _parallel.span_cuts(size, count))
    except OSError:  # said when the run is read, after the qrels (as without helpers)
      return None
    if len(spans) < 2:
      return None
    return _parallel.Helpers.forked(path, spans, min(count, len(spans)) - 1)
  return _parallel.Helpers(count - 1)


def _reading(path: str, asked: int | None,
             processes: int | None) -> tuple[int, Chunks | None, int]:
  """How :func:`evaluate_file` reads the run file ``path``: its size (0: not a file that can be
  read twice), its chunks (None: whole), and the processes sharing them (1 for a run read
  whole or not from a file)."""
  size = file_size(path)
  chunks = chunking(asked=asked, size=size, auto_size=AUTO_CHUNK_BYTES,
                    auto_rows=AUTO_CHUNK_LINES)
  count = _parallel.processes_for(processes, size)
  return size, chunks, count if chunks is not None and size else 1
