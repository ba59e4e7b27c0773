"""A big run file evaluated by several processes at once, each reading its own span of whole
queries (:func:`evaluate_spans`).

The file is cut where a query ends (:func:`jaxrank.io.query_spans`); this process evaluates the
first span and a helper process each of the others, every one as :func:`jaxrank._trec.chunked.
evaluate_chunks` evaluates chunks (:meth:`~jaxrank._trec.chunked.ChunkJob.values`, judged
documents coded, no reading thread: the processes share the cores); their values are combined
here in file order (:meth:`~jaxrank._trec.chunked.ChunkJob.result`), as the chunks of one
process are. A query's values depend on its own lines only, so the numbers are the one-process
numbers (up to the last-bit rounding by batch shape that
:mod:`jaxrank._trec.chunked` describes).

Processes, not threads: the reading and coding of a block is a few dozen NumPy calls, and two
threads of one process spend a fifth of their time handing the interpreter lock back and
forth (bench/RESULTS.md); processes share nothing but the input.

What one process cannot settle alone is settled by evaluating the run again in this process,
as if it had never been cut (:class:`Fallback`): a bad line (reported with its line number in
the file), a query in two spans, a run that needs every document coded
(:class:`jaxrank.io.NeedsFullRead`), a helper that could not start or died. A helper's own
error (a bug) is raised, with its traceback.

A helper is ``python -P`` running :func:`serve`: it reads its job (a pickle) on its standard
input and writes its values (a pickle) on its standard output, pipes between this process and
its child that no one else can write to. It imports jaxrank from where this process did.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from jaxrank import io
from jaxrank._trec.chunked import ChunkJob, Values
from jaxrank._trec.run import Result

PROCESS_BYTES = 32 << 20  # bytes of run file per process (at most MAX_PROCESSES, and the cores)
MAX_PROCESSES = 8


class Fallback(Exception):
  """Internal: the run is to be evaluated in one process after all (see the module docstring);
  the message says why."""


def processes_for(asked: int | None, size: int) -> int:
  """The number of processes evaluating a run file of ``size`` bytes: ``asked``, or one per
  :data:`PROCESS_BYTES` up to :data:`MAX_PROCESSES` and the cores this process may use.

  Example:
    >>> from jaxrank._trec import parallel
    >>> parallel.processes_for(3, 10), parallel.processes_for(None, 1 << 20)
    (3, 1)
  """
  if asked is not None:
    if isinstance(asked, bool) or not isinstance(asked, int) or asked < 1:
      raise ValueError(f"processes must be a positive integer, got {asked!r}")
    return asked
  cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
  return max(1, min(cores or 1, MAX_PROCESSES, size // PROCESS_BYTES))


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
    return taken + [_spawn() for _ in range(count - len(taken))]

  def close(self) -> None:
    for helper in self.waiting:  # no job: it reads the end of its input and ends
      _close(helper)
      helper.wait()
    self.waiting = []


def evaluate_spans(job: ChunkJob, path: str, spans: Sequence[tuple[int, int]], *,
                   max_lines: int, helpers: Helpers | None = None,
                   progress: Callable[[int], None] | None = None) -> Result:
  """The result of ``job`` on the run file ``path`` read in chunks of about ``max_lines``
  lines: ``spans[0]`` read here (``progress`` hears its lines), each other span by a helper
  process (from ``helpers``, started ahead, or started now). Raises :class:`Fallback` when
  one process must evaluate the run instead (see the module docstring).

  Example:
    >>> import os, tempfile
    >>> from jaxrank import io
    >>> from jaxrank._trec import chunked, parallel, table
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> with open(path, "wb") as f:
    ...   _ = f.write(b"a Q0 x 1 3 t\\na Q0 y 2 2 t\\nb Q0 x 1 1 t\\nc Q0 z 1 1 u\\n")
    >>> job = chunked.ChunkJob(io.read_qrels(b"a 0 y 1\\nb 0 y 1\\nc 0 z 2\\n"),
    ...                        table.parse_measures(["map", "runid"]), uncoded=True)
    >>> res = parallel.evaluate_spans(job, path, io.query_spans(path, 2), max_lines=10)
    >>> res.qids, res.per_query["map"].tolist(), res.summary
    (['a', 'b', 'c'], [0.5, 0.0, 1.0], {'runid': 'u', 'map': 0.5})
  """
  def chunks(span: tuple[int, int]) -> Iterator[io.Run]:
    return io.iter_judged_run_chunks(path, job.qrels, max_lines=max_lines, span=span,
                                     threaded=False)

  started: list[subprocess.Popen] = []
  done = False
  try:
    started = (helpers if helpers is not None else Helpers()).take(len(spans) - 1)
    payload = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
    for helper, span in zip(started, spans[1:]):
      head = pickle.dumps((path, span, max_lines), protocol=pickle.HIGHEST_PROTOCOL)
      assert helper.stdin is not None  # made with stdin=PIPE
      # A thread writes the job: a pipe holds little, and this process has its span to read.
      threading.Thread(target=_send, args=(helper.stdin, head, payload), daemon=True).start()
    del payload  # the threads hold it while they write
    try:
      values = [job.values(chunks(spans[0]), progress)]
    except (ValueError, io.NeedsFullRead) as e:
      raise Fallback(str(e)) from None
    values += [_receive(h) for h in started]
    done = True
  finally:
    for h in started:
      if not done:
        h.kill()
      _close(h)  # a helper ends when its input does (see serve)
  try:
    return job.result(values)
  except ValueError as e:  # a query in two spans, say: one process says what it is
    raise Fallback(str(e)) from None
  finally:
    for h in started:  # they have written their values: they are ending
      h.wait()


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


def _send(pipe: IO[bytes], *data: bytes) -> None:
  """Writes a helper's job; the pipe stays open until this process has its values."""
  try:
    for part in data:
      pipe.write(part)
    pipe.flush()
  except (OSError, ValueError):  # the helper is gone (_receive says so), or was let go
    pass


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
  """A helper's work: the job on standard input (the file, its span, the chunk lines, then
  the :class:`ChunkJob`), ``("values", Values)``, ``("fallback", why)`` or ``("error",
  traceback)`` on standard output. ``watch``: end the process when standard input ends
  (the parent has the values, or is gone)."""
  stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
  try:
    path, span, max_lines = pickle.load(stdin)
  except EOFError:  # started ahead and not needed
    return
  try:
    job: ChunkJob = pickle.load(stdin)
    if watch:  # the parent holds this input open until it has the values
      threading.Thread(target=_end_with, args=(stdin,), daemon=True).start()
    reply: tuple[str, Any] = ("values", job.values(io.iter_judged_run_chunks(
        path, job.qrels, max_lines=max_lines, span=span, threaded=False)))
  except (ValueError, io.NeedsFullRead) as e:
    reply = ("fallback", str(e))
  except BaseException:  # handed to the parent, which raises it
    reply = ("error", traceback.format_exc())
  try:
    pickle.dump(reply, stdout, protocol=pickle.HIGHEST_PROTOCOL)
    stdout.flush()
  except OSError:  # the parent is gone (it ended, or was ended): nobody to tell
    pass
  if watch:
    os._exit(0)  # done: no interpreter shutdown to wait for (the watching thread reads on)


def _end_with(stdin: IO[bytes]) -> None:
  """Ends this helper when its parent closes its input: it has the values, or it is gone."""
  while os.read(stdin.fileno(), 1 << 16):  # the file descriptor: no lock of sys.stdin held
    pass
  os._exit(0)
