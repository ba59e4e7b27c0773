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

A helper reads span after span (pickles) on a pipe from this process and writes each span's
values (a pickle) on a pipe back, pipes between this process and its child that no one else can
write to; it ends when this process does. The command forks its helpers (:func:`can_fork`),
with this process's imports. For its first run it forks them before it reads the qrels
(:meth:`Helpers.forked`): each splits the blocks of a span set aside for it
(:class:`jaxrank.io.SplitAhead`, which needs no qrels) on the core the qrels reading leaves
idle, until its job (the qrels and measures, pickled) comes, then evaluates that span from
there. For its other runs a fork has the job and lookup already. Elsewhere a helper is
``python -P`` running :func:`serve`, importing jaxrank from where this process did and given
its job first; these are started ahead too (:class:`Helpers`), while this process reads the
qrels."""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings
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
  """Helper processes made ahead, while this process reads the qrels: started interpreters,
  or (:meth:`forked`) forks splitting their first spans already. :meth:`take` hands them out
  (starting more if needed); :meth:`close` lets the others end."""

  def __init__(self, count: int = 0) -> None:
    self.waiting: list[Helper] = []
    self.spans: list[tuple[int, int]] | None = None  # the spans of forks made ahead
    try:
      self.waiting += [_spawn() for _ in range(count)]
    except Fallback:  # none could start: evaluate_spans will find out, and say so
      pass

  @classmethod
  def forked(cls, path: str, spans: Sequence[tuple[int, int]], count: int) -> Helpers:
    """``count`` helpers forked from this process (it must :func:`can_fork`) for the run file
    ``path`` cut into ``spans``, for spans 1, 2, ..., ``count``: each splits its span
    (:class:`jaxrank.io.SplitAhead`) until its job comes, then evaluates it first. If one
    cannot be forked, :meth:`take` raises :class:`Fallback`."""
    helpers = cls()
    helpers.spans = list(spans)
    forked: list[_Forked] = []
    try:
      for i in range(1, count + 1):
        forked.append(_Forked(functools.partial(_serve_ahead, path, spans[i]), forked,
                              first=i))
    except OSError:
      pass  # fewer helpers: take() says so
    helpers.waiting += forked
    return helpers

  def take(self, count: int) -> list[Helper]:
    taken, self.waiting = self.waiting[:count], self.waiting[count:]
    try:
      while len(taken) < count:
        if self.spans is not None:
          raise Fallback("a helper process could not be forked")
        taken.append(_spawn())
    except Fallback:
      for helper in taken:
        helper.kill()
        _end(helper)
      raise
    return taken

  def close(self) -> None:
    for helper in self.waiting:  # no job: it reads the end of its input and ends
      _end(helper)
    self.waiting = []


def can_fork() -> bool:
  """Whether this process may fork its helpers (:func:`evaluate_spans`' ``fork``): on Linux,
  where a fork is cheap and the command's process has no threads of its own but NumPy's idle
  BLAS workers (fork-safe) and its interrupt watcher (blocked in a read), and while JAX is not
  imported (its threads would not survive a fork; it warns of one).

  Example:
    >>> import sys
    >>> from jaxrank._trec import parallel
    >>> parallel.can_fork() == (sys.platform.startswith("linux") and "jax" not in sys.modules)
    True
  """
  return (sys.platform.startswith("linux") and hasattr(os, "fork") and "jax" not in sys.modules
          and not getattr(sys, "frozen", False))


def evaluate_spans(job: ChunkJob, path: str, spans: Sequence[tuple[int, int]], *,
                   max_lines: int, processes: int, helpers: Helpers | None = None,
                   fork: bool = False,
                   progress: Callable[[int], None] | None = None) -> Result:
  """The result of ``job`` on the run file ``path`` (in file order, ``spans`` of whole
  queries), read in chunks of about ``max_lines`` lines by ``processes`` processes: this one
  (``progress`` hears the lines of each span it reads) and helpers, each taking the next span
  until none is left. The helpers are forked from this process if ``fork`` and
  :func:`can_fork` (``helpers`` started ahead are then ended unused), else taken from
  ``helpers`` or started now. Raises :class:`Fallback` when one process must evaluate the run
  instead (see the module docstring).

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
  values: list[Values | None] = [None] * len(spans)
  stopped: list[BaseException] = []  # why the spans stopped early (the first one counts)
  count = min(processes, len(spans)) - 1
  judged: io.Judged | None = None  # the qrels' lookup, built once for this process's spans
  started: list[Helper]
  if helpers is not None and helpers.spans is not None:  # forked ahead, for these spans
    if helpers.spans != list(spans):
      raise ValueError("helpers forked for other spans")
    started = helpers.take(count)
  elif fork and can_fork():
    if helpers is not None:
      helpers.close()  # (before the forks: their pipes' ends must not live on in them)
    judged = io.Judged(job.qrels.docid_vocab)  # before the forks, which share it
    started = _fork(job, judged, count)
  else:
    started = list((helpers if helpers is not None else Helpers()).take(count))
  tasks = _Tasks(spans, [h.first for h in started
                         if isinstance(h, _Forked) and h.first is not None])
  drivers = [threading.Thread(target=_drive, args=(h, job, path, max_lines, tasks, values,
                                                   stopped), daemon=True) for h in started]
  for driver in drivers:
    driver.start()
  try:
    if judged is None:  # built while the drivers send started helpers their job
      judged = io.Judged(job.qrels.docid_vocab)
    for i, span in tasks.take():
      values[i] = _span_values(job, judged, path, span, max_lines, progress)
  except (ValueError, io.NeedsFullRead) as e:
    stopped.append(Fallback(str(e)))
  except BaseException as e:
    stopped.append(e)
  finally:
    if stopped:  # no helper's values are wanted now: end them (a helper's reserved span too)
      tasks.stop()
      for helper in started:
        helper.kill()
    for driver in drivers:
      driver.join()
    for helper in started:
      _end(helper)  # no more spans: a helper ends when its input does (see serve)
  if stopped:
    raise stopped[0]
  try:
    return job.result(cast(list[Values], values))
  except ValueError as e:  # a query in two spans, say: one process says what it is
    raise Fallback(str(e)) from None


def _span_values(job: ChunkJob, judged: io.Judged, path: str, span: tuple[int, int],
                 max_lines: int, progress: Callable[[int], None] | None = None,
                 ahead: io.SplitAhead | None = None) -> Values:
  """The values of one span of the run file, read in this process without a reading thread
  (the processes share the cores); ``judged``: the qrels' lookup, built once per process;
  ``ahead``: the span's first blocks, split already."""
  return job.values(io.iter_judged_run_chunks(path, job.qrels, max_lines=max_lines, span=span,
                                              threaded=False, judged=judged, ahead=ahead),
                    progress)


class _Tasks:
  """The spans not taken yet, handed out in file order to whoever asks (under a lock); the
  ``reserved`` ones only to the helper that splits it ahead, first."""

  def __init__(self, spans: Sequence[tuple[int, int]], reserved: Sequence[int] = ()) -> None:
    self.spans, self.lock, self.stopped = list(spans), threading.Lock(), False
    self.left = sorted(set(range(len(self.spans))) - set(reserved))
    self.next = 0

  def take(self, first: int | None = None) -> Iterator[tuple[int, tuple[int, int]]]:
    """Spans for one process: ``first`` (its reserved span), then the next ones left."""
    if first is not None and not self.stopped:
      yield first, self.spans[first]
    while True:
      with self.lock:
        if self.next >= len(self.left):
          return
        i = self.left[self.next]
        self.next += 1
      yield i, self.spans[i]

  def stop(self) -> None:
    with self.lock:
      self.next, self.stopped = len(self.left), True


def _drive(helper: Helper, job: ChunkJob, path: str, max_lines: int, tasks: _Tasks,
           values: list[Values | None], stopped: list[BaseException]) -> None:
  """A thread of this process giving ``helper`` the job, then span after span, and keeping
  the values it sends back; what stops it goes to ``stopped`` (and stops the others)."""
  assert helper.stdin is not None  # made with stdin=PIPE
  first = helper.first if isinstance(helper, _Forked) else None
  try:
    if first is not None or not isinstance(helper, _Forked):  # (a fork with its job has it)
      _send(helper.stdin, job)  # its arrays' bytes go straight to the pipe
    for i, span in tasks.take(first):
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


def _end(helper: Helper) -> None:
  """Closes the helper's input (it ends when its input does), waits for it, closes its
  output."""
  assert helper.stdin is not None and helper.stdout is not None  # made with both pipes
  with contextlib.suppress(OSError):  # already gone
    helper.stdin.close()
  helper.wait()
  helper.stdout.close()


def _receive(helper: Helper) -> Values:
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
  """A started helper's work: on standard input its :class:`ChunkJob`, then spans as
  :func:`_serve_spans` reads them, replies on standard output. ``watch``: end the process with
  its parent (or when its input ends)."""
  stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
  try:
    job: ChunkJob = pickle.load(stdin)
  except EOFError:  # started ahead and not needed
    return
  if watch:
    threading.Thread(target=_end_with, args=(os.getppid(),), daemon=True).start()
  _serve_spans(job, io.Judged(job.qrels.docid_vocab), stdin, stdout)
  if watch:
    os._exit(0)  # done: no interpreter shutdown to wait for (the watching thread sleeps on)


def _serve_spans(job: ChunkJob, judged: io.Judged, tasks: IO[bytes], replies: IO[bytes],
                 ahead: io.SplitAhead | None = None) -> None:
  """A helper's loop: spans ``(path, (start, stop), max_lines)`` read from ``tasks`` until
  ``None`` or the end; for each, ``("values", Values)``, ``("fallback", why)`` or ``("error",
  traceback)`` written to ``replies``. ``ahead``: the first span's first blocks, split
  already."""
  while True:
    try:
      task = pickle.load(tasks)
    except EOFError:
      task = None
    if task is None:
      return
    path, span, max_lines = task
    use = ahead if ahead is not None and (ahead.path, ahead.span) == (path, span) else None
    ahead = None  # (for the first span only)
    try:
      reply: tuple[str, Any] = ("values", _span_values(job, judged, path, span, max_lines,
                                                       ahead=use))
    except (ValueError, io.NeedsFullRead) as e:
      reply = ("fallback", str(e))
    except BaseException:  # handed to the parent, which raises it
      reply = ("error", traceback.format_exc())
    try:
      _send(replies, reply)
    except OSError:  # the parent is gone (it ended, or was ended): nobody to tell
      return


class _Forked:
  """A helper forked from this process, running ``serve(tasks, replies)`` on a pair of pipes
  (:func:`_serve_spans` with this process's job and lookup, or :func:`_serve_ahead`, which is
  sent its job and whose first span is ``first``); ``stdin``, ``stdout``, ``wait`` and ``kill``
  as a :class:`subprocess.Popen`'s. ``others``: the helpers forked before it, whose pipes' ends
  it closes (it would hold their input open)."""

  stdin: IO[bytes]
  stdout: IO[bytes]
  returncode: int | None

  def __init__(self, serve: Callable[[IO[bytes], IO[bytes]], None], others: Sequence[_Forked],
               *, first: int | None = None) -> None:
    self.first = first
    tasks_r, tasks_w = os.pipe()
    replies_r, replies_w = os.pipe()
    parent = os.getpid()
    try:
      with warnings.catch_warnings():  # Python 3.12+ warns of a fork beside threads: can_fork
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    except OSError:
      for fd in (tasks_r, tasks_w, replies_r, replies_w):
        os.close(fd)
      raise
    if pid == 0:  # the helper: a copy of this process, which must never return to the caller
      status = 1
      try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it at once and quietly
        with contextlib.suppress(ValueError):
          signal.set_wakeup_fd(-1)  # the parent's interrupt watcher is not here
        for fd in [tasks_w, replies_r, *(f.stdin.fileno() for f in others),
                   *(f.stdout.fileno() for f in others)]:
          os.close(fd)
        threading.Thread(target=_end_with, args=(parent,), daemon=True).start()
        with os.fdopen(tasks_r, "rb") as tasks, os.fdopen(replies_w, "wb") as replies:
          serve(tasks, replies)
        status = 0
      finally:
        os._exit(status)
    os.close(tasks_r)
    os.close(replies_w)
    self.pid, self.returncode = pid, None
    self.stdin, self.stdout = os.fdopen(tasks_w, "wb"), os.fdopen(replies_r, "rb")

  def wait(self) -> int:
    if self.returncode is None:
      self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
    return self.returncode

  def kill(self) -> None:
    if self.returncode is None:
      with contextlib.suppress(ProcessLookupError):
        os.kill(self.pid, signal.SIGKILL)


Helper = subprocess.Popen | _Forked  # a helper process, started or forked


def _fork(job: ChunkJob, judged: io.Judged, count: int) -> list[Helper]:
  """``count`` helpers forked from this process, or :class:`Fallback` if one cannot be."""
  forked: list[_Forked] = []
  try:
    while len(forked) < count:
      forked.append(_Forked(functools.partial(_serve_spans, job, judged), forked))
  except OSError as e:
    for helper in forked:
      _end(helper)
    raise Fallback(f"a helper process could not start ({e})") from None
  return list(forked)


AHEAD_BLOCKS = 16  # blocks a helper forked ahead splits while it waits for its job (~16 MB)


def _serve_ahead(path: str, span: tuple[int, int], tasks: IO[bytes], replies: IO[bytes]) -> None:
  """A helper forked before the qrels are read: splits the span ``span`` of the run file
  ``path`` (:class:`jaxrank.io.SplitAhead`, up to :data:`AHEAD_BLOCKS` blocks) until its job
  comes on ``tasks``, then serves spans as :func:`_serve_spans`, that one first. Ends quietly
  if its input ends first (the command stopped before)."""
  ahead = io.SplitAhead(path, span)
  try:
    while (len(ahead.ready) < AHEAD_BLOCKS and not select.select([tasks], [], [], 0)[0]
           and ahead.step()):
      pass
    try:
      job: ChunkJob = pickle.load(tasks)
    except EOFError:
      return
    _serve_spans(job, io.Judged(job.qrels.docid_vocab), tasks, replies, ahead)
  finally:
    ahead.close()


def _end_with(parent: int) -> None:
  """Ends this helper when its parent is gone (it was ended: the helper is someone else's
  child now)."""
  while os.getppid() == parent:
    time.sleep(0.1)
  os._exit(0)
