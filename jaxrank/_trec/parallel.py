"""A big run file evaluated by several processes at once, each reading spans of whole queries
(:func:`evaluate_spans`).

The file is cut where queries start (:func:`jaxrank.io.query_spans`) into spans that shrink
along the file (:func:`span_cuts`); this process and helper processes each take the next span
nobody has taken, until none is left (so a process that started late, or shares its core,
takes fewer; the last spans are small, so the processes end at about the same time). Each span
is evaluated as :func:`jaxrank._trec.chunked.evaluate_chunks` evaluates chunks
(:meth:`~jaxrank._trec.chunked.ChunkJob.values`, judged documents coded, no reading thread: the
processes share the cores), and the values are combined here in file order
(:meth:`~jaxrank._trec.chunked.ChunkJob.result`), as the chunks of one process are. A query's
values depend on its own lines only, so the numbers are the one-process numbers (up to the
last-bit rounding by batch shape that :mod:`jaxrank._trec.chunked` describes).

Processes, not threads: the reading and coding of a block is a few dozen NumPy calls, and two
threads of one process spend a fifth of their time handing the interpreter lock back and
forth (bench/RESULTS.md); processes share nothing but the input.

What one process cannot settle alone is settled by evaluating the run again in this process,
as if it had never been cut (:class:`Fallback`): a bad line (reported with its line number in
the file), a query in two spans, a run that needs every document coded
(:class:`jaxrank.io.NeedsFullRead`), a helper that could not start or died. A helper's own
error (a bug) is raised, with its traceback.

A helper is ``python -P`` running :func:`serve`: it reads its job and then span after span (as
pickles) on its standard input and writes each span's values (a pickle) on its standard output,
pipes between this process and its child that no one else can write to. It imports jaxrank from
where this process did, and ends when this process does."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any, cast

from jaxrank import io
from jaxrank._trec.chunked import ChunkJob, Values
from jaxrank._trec.run import Result

PROCESS_BYTES = 32 << 20  # bytes of run file per process (at most MAX_PROCESSES, and the cores)
MAX_PROCESSES = 8
TAIL = 32  # the smallest span is a (TAIL * processes)-th of the file (2M lines, 2 cores: 15 ms)


class Fallback(Exception):
  """Internal: the run is to be evaluated in one process after all (see the module docstring);
  the message says why."""


def processes_for(asked: int | None, size: int) -> int:
  """The number of processes evaluating a run file of ``size`` bytes: ``asked``, or one per
  :data:`PROCESS_BYTES` up to :data:`MAX_PROCESSES` and the cores this process may use (one in
  a frozen, bundled app).

  Example:
    >>> from jaxrank._trec import parallel
    >>> parallel.processes_for(3, 10), parallel.processes_for(None, 1 << 20)
    (3, 1)
  """
  if asked is not None:
    if isinstance(asked, bool) or not isinstance(asked, int) or asked < 1:
      raise ValueError(f"processes must be a positive integer, got {asked!r}")
    return asked
  if getattr(sys, "frozen", False):  # a bundled app: sys.executable is not a Python to run
    return 1
  cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
  return max(1, min(cores or 1, MAX_PROCESSES, size // PROCESS_BYTES))


def span_cuts(size: int, processes: int) -> list[int]:
  """Where a run file of ``size`` bytes is cut for ``processes`` processes (byte offsets, for
  :func:`jaxrank.io.query_spans`): each span is a ``2 * processes``-th of what is left, down to
  a ``TAIL * processes``-th of the file, so that the processes taking the last ones end
  together (guided self-scheduling: the first spans are large and few, the last many and small).

  Example:
    >>> from jaxrank._trec import parallel
    >>> parallel.span_cuts(1000, 2)  # spans of 250, 187, 140, ..., 15 bytes
    [250, 437, 577, 682, 761, 820, 865, 898, 923, 942, 957, 972, 987]
  """
  cuts: list[int] = []
  at, smallest = 0, max(1, size // (TAIL * processes))
  while True:
    at += max((size - at) // (2 * processes), smallest)
    if at >= size:
      return cuts
    cuts.append(at)


class Helpers:
  """Helper processes started ahead: their interpreters start while this one reads the qrels.
  :meth:`take` hands them out (starting more if needed); :meth:`close` lets the others end."""

  def __init__(self, count: int = 0) -> None:
    self.waiting: list[subprocess.Popen] = []
    try:
      self.waiting += [_spawn() for _ in range(count)]
    except Fallback:  # none could start: evaluate_spans will find out, and say so
      pass

  def take(self, count: int) -> list[subprocess.Popen]:
    taken, self.waiting = self.waiting[:count], self.waiting[count:]
    try:
      while len(taken) < count:
        taken.append(_spawn())
    except Fallback:
      for helper in taken:
        helper.kill()
        helper.wait()
      raise
    return taken

  def close(self) -> None:
    for helper in self.waiting:  # no job: it reads the end of its input and ends
      _close(helper)
      helper.wait()
    self.waiting = []


def evaluate_spans(job: ChunkJob, path: str, spans: Sequence[tuple[int, int]], *,
                   max_lines: int, processes: int, helpers: Helpers | None = None,
                   progress: Callable[[int], None] | None = None) -> Result:
  """The result of ``job`` on the run file ``path`` (in file order, ``spans`` of whole
  queries), read in chunks of about ``max_lines`` lines by ``processes`` processes: this one
  (``progress`` hears the lines of each span it reads) and helpers (from ``helpers``, started
  ahead, or started now), each taking the next span until none is left. Raises
  :class:`Fallback` when one process must evaluate the run instead (see the module docstring).

  Example:
    >>> import os, tempfile
    >>> from jaxrank import io
    >>> from jaxrank._trec import chunked, parallel, table
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> with open(path, "wb") as f:
    ...   _ = f.write(b"a Q0 x 1 3 t\\na Q0 y 2 2 t\\nb Q0 x 1 1 t\\nc Q0 z 1 1 u\\n")
    >>> job = chunked.ChunkJob(io.read_qrels(b"a 0 y 1\\nb 0 y 1\\nc 0 z 2\\n"),
    ...                        table.parse_measures(["map", "runid"]), uncoded=True)
    >>> res = parallel.evaluate_spans(job, path, io.query_spans(path, [13, 26]),
    ...                               max_lines=10, processes=2)
    >>> res.qids, res.per_query["map"].tolist(), res.summary
    (['a', 'b', 'c'], [0.5, 0.0, 1.0], {'runid': 'u', 'map': 0.5})
  """
  tasks = _Tasks(spans)
  values: list[Values | None] = [None] * len(spans)
  stopped: list[BaseException] = []  # why the spans stopped early (the first one counts)
  started = (helpers if helpers is not None else Helpers()).take(
      min(processes, len(spans)) - 1)
  drivers = [threading.Thread(target=_drive, args=(h, job, path, max_lines, tasks, values,
                                                   stopped), daemon=True) for h in started]
  for driver in drivers:
    driver.start()
  try:
    judged = io.Judged(job.qrels.docid_vocab)  # built once for this process's spans
    for i, span in tasks:
      values[i] = _span_values(job, judged, path, span, max_lines, progress)
  except (ValueError, io.NeedsFullRead) as e:
    stopped.append(Fallback(str(e)))
  except BaseException as e:
    stopped.append(e)
  finally:
    tasks.stop()
    if stopped:  # no helper's values are wanted now: end them
      for helper in started:
        helper.kill()
    for driver in drivers:
      driver.join()
    for helper in started:
      _close(helper)  # no more spans: a helper ends when its input does (see serve)
      helper.wait()
  if stopped:
    raise stopped[0]
  try:
    return job.result(cast(list[Values], values))
  except ValueError as e:  # a query in two spans, say: one process says what it is
    raise Fallback(str(e)) from None


def _span_values(job: ChunkJob, judged: io.Judged, path: str, span: tuple[int, int],
                 max_lines: int, progress: Callable[[int], None] | None = None) -> Values:
  """The values of one span of the run file, read in this process without a reading thread
  (the processes share the cores); ``judged``: the qrels' lookup, built once per process."""
  return job.values(io.iter_judged_run_chunks(path, job.qrels, max_lines=max_lines, span=span,
                                              threaded=False, judged=judged), progress)


class _Tasks:
  """The spans not taken yet, handed out in file order to whoever asks (under a lock)."""

  def __init__(self, spans: Sequence[tuple[int, int]]) -> None:
    self.spans, self.next, self.lock = list(spans), 0, threading.Lock()

  def __iter__(self) -> Iterator[tuple[int, tuple[int, int]]]:
    while True:
      with self.lock:
        i = self.next
        if i >= len(self.spans):
          return
        self.next += 1
      yield i, self.spans[i]

  def stop(self) -> None:
    with self.lock:
      self.next = len(self.spans)


def _drive(helper: subprocess.Popen, job: ChunkJob, path: str, max_lines: int, tasks: _Tasks,
           values: list[Values | None], stopped: list[BaseException]) -> None:
  """A thread of this process giving ``helper`` the job, then span after span, and keeping
  the values it sends back; what stops it goes to ``stopped`` (and stops the others)."""
  assert helper.stdin is not None  # made with stdin=PIPE
  try:
    _send(helper.stdin, job)  # its arrays' bytes go straight to the pipe
    for i, span in tasks:
      _send(helper.stdin, (path, span, max_lines))
      values[i] = _receive(helper)
  except BaseException as e:
    if not stopped:  # (a helper ended by the one who stopped first fails too: no news)
      stopped.append(e if isinstance(e, (Fallback, RuntimeError)) else Fallback(
          f"a helper process could not be given its spans ({e})"))
    tasks.stop()


def _spawn() -> subprocess.Popen:
  """A helper process running :func:`serve` (it waits for its job)."""
  here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  # Ctrl-C ends a helper at once and quietly (the command says "interrupted").
  code = (f"import signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
          f"sys.path.insert(0, {here!r}); from jaxrank._trec.parallel import serve; serve()")
  try:
    return subprocess.Popen([sys.executable, "-P", "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
  except OSError as e:
    raise Fallback(f"a helper process could not start ({e})") from None


def _send(pipe: IO[bytes], data: Any) -> None:
  """Writes ``data`` to a helper, pickled."""
  pickle.dump(data, pipe, protocol=pickle.HIGHEST_PROTOCOL)
  pipe.flush()


def _close(helper: subprocess.Popen) -> None:
  try:
    assert helper.stdin is not None  # made with stdin=PIPE
    helper.stdin.close()
  except OSError:  # already gone
    pass


def _receive(helper: subprocess.Popen) -> Values:
  """The values a helper wrote, or :class:`Fallback` if it could not give them."""
  assert helper.stdout is not None  # made with stdout=PIPE
  try:
    kind, value = pickle.load(helper.stdout)
  except (EOFError, pickle.UnpicklingError, OSError):
    raise Fallback(f"a helper process ended without its values (exit status "
                   f"{helper.wait()})") from None
  if kind == "values":
    return value
  if kind == "fallback":
    raise Fallback(value)
  raise RuntimeError(f"jaxrank internal error in a helper process:\n{value}")


def serve(*, watch: bool = True) -> None:
  """A helper's work: on standard input its :class:`ChunkJob`, then spans ``(path, (start,
  stop), max_lines)`` until ``None`` or the end; on standard output, for each span,
  ``("values", Values)``, ``("fallback", why)`` or ``("error", traceback)``. ``watch``: end the
  process with its parent (or when its input ends)."""
  stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
  try:
    job: ChunkJob = pickle.load(stdin)
  except EOFError:  # started ahead and not needed
    return
  if watch:
    threading.Thread(target=_end_with, args=(os.getppid(),), daemon=True).start()
  judged = io.Judged(job.qrels.docid_vocab)
  while True:
    try:
      task = pickle.load(stdin)
    except EOFError:
      task = None
    if task is None:
      break
    path, span, max_lines = task
    try:
      reply: tuple[str, Any] = ("values", _span_values(job, judged, path, span, max_lines))
    except (ValueError, io.NeedsFullRead) as e:
      reply = ("fallback", str(e))
    except BaseException:  # handed to the parent, which raises it
      reply = ("error", traceback.format_exc())
    try:
      _send(stdout, reply)
    except OSError:  # the parent is gone (it ended, or was ended): nobody to tell
      break
  if watch:
    os._exit(0)  # done: no interpreter shutdown to wait for (the watching thread sleeps on)


def _end_with(parent: int) -> None:
  """Ends this helper when its parent is gone (it was ended: the helper is someone else's
  child now)."""
  while os.getppid() == parent:
    time.sleep(0.1)
  os._exit(0)
