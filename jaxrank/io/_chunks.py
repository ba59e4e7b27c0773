"""Runs read a few whole queries at a time (:func:`iter_run_chunks`), and only their
documents trec_eval's measures can tell apart (:func:`iter_judged_run_chunks`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import BinaryIO

import numpy as np

from jaxrank.io._columns import Qrels, Run
from jaxrank.io._errors import ScatteredQueryError
from jaxrank.io._files import GZIP_MAGIC, PathLike, Span, open_input
from jaxrank.io._judged import Judged, JudgedBuilder
from jaxrank.io._reader import Builder
from jaxrank.io._split import RUN, Block, split_blocks


def iter_run_chunks(path: PathLike | bytes, *, max_lines: int = 1_000_000,
                    name: str | None = None) -> Iterator[Run]:
  """Reads a run a few whole queries at a time, for runs bigger than memory.

  Each :class:`Run` yielded holds whole queries, in file order: once a chunk has
  ``max_lines`` data lines it ends where the query id next changes, so a chunk has
  ``max_lines`` lines plus the rest of the query in progress (the last chunk may have fewer).
  Its codes and vocabularies are its own (a document's code differs between chunks); its
  ``tag`` is the tag of its last line, so the last chunk's is the file's ``runid``. Memory
  stays within the chunk being read, whatever the file's size; gzip and ``"-"`` work as in
  :func:`read_run`, and the file is read once, a block at a time. A query's lines must come
  together: a query id that comes back after its chunk was yielded raises
  :class:`ScatteredQueryError` (a :class:`TrecFormatError`) naming the line (sort the file by
  query, or use :func:`read_run`).
  Errors in the file are raised when the reading reaches them.

  Example:
    >>> from jaxrank import io
    >>> text = b"a Q0 x 1 3 t\\na Q0 y 2 2 t\\nb Q0 x 1 1 t\\nc Q0 z 1 1 u\\n"
    >>> [(r.qid_vocab.tolist(), len(r), r.tag) for r in io.iter_run_chunks(text, max_lines=1)]
    [(['a'], 2, 't'), (['b'], 1, 't'), (['c'], 1, 'u')]
    >>> list(io.iter_run_chunks(b"a Q0 x 1 3 t\\nb Q0 x 1 1 t\\na Q0 y 2 2 t\\n", max_lines=1))
    Traceback (most recent call last):
    ...
    jaxrank.io.ScatteredQueryError: <bytes>:3: query 'a' appears again after its chunk was passed on \
(a run read in chunks needs each query's lines together: sort the file by query, or read it whole \
with io.read_run or `jaxrank evaluate --chunk-lines 0`)
  """
  if isinstance(max_lines, bool) or not isinstance(max_lines, (int, np.integer)) or (
      max_lines < 1):
    raise ValueError(f"max_lines must be a positive integer, got {max_lines!r}")
  f, name, close = open_input(path, name)
  return _chunks(split_blocks(f, name, RUN, threaded=True), name, close, int(max_lines))


def iter_judged_run_chunks(path: PathLike | bytes, qrels: Qrels, *,
                           max_lines: int = 1_000_000, span: tuple[int, int] | None = None,
                           threaded: bool = True, judged: Judged | None = None,
                           ahead: SplitAhead | None = None) -> Iterator[Run]:
  """Internal API (``jaxrank evaluate``'s reader for large runs): :func:`iter_run_chunks`
  that codes only the documents trec_eval's measures can tell apart.

  trec_eval's measures read a document's judgment and, where its score ties with another of
  its query, its id (ties go by id). So a document the qrels judge for no query and whose score
  ties with no other line of its query is read, hashed and checked, but not entered in the
  chunk's vocabulary: coding millions of such ids is most of a large run's reading time. They
  share one code, that of an extra empty id at the end of ``docid_vocab`` (no file holds it).
  Coded: every judged document (matched byte for byte; it takes its qrels code, so no table
  insert), every line whose score may tie with another of its query (as float32: exactly those
  when a block's ties are few, a superset when they are many), and a block's last query. A
  chunk's ``docid_vocab`` lists the judged documents it holds (in the qrels' order), then the
  others it codes, then the empty id. ``rank`` is not kept (zeros). A query listing a document
  twice, a query whose lines are not together and two ids with equal hashes raise
  :class:`NeedsFullRead`: the full readers report or handle them. ``path`` must name a file
  that can be read again.

  ``span``: only bytes ``start:stop`` of the file ``path`` (a part from :func:`query_spans`;
  its line numbers in errors count from ``start``); ``threaded``: split the blocks in a second
  thread (as :func:`split_blocks`; off where processes share the cores); ``judged``:
  ``Judged(qrels.docid_vocab)`` if built already (a process reading several spans); ``ahead``:
  the span's first blocks, split already (:class:`SplitAhead` of this ``path`` and ``span``,
  read on from where it stopped, no reading thread; closed here).

  Example:
    >>> from jaxrank import io
    >>> from jaxrank.io._chunks import iter_judged_run_chunks
    >>> qrels = io.read_qrels(b"q 0 b 1\\n")
    >>> text = b"q Q0 a 1 3 t\\nq Q0 b 2 2 t\\nq Q0 c 3 1 t\\nr Q0 d 1 1 t\\nr Q0 e 2 1 t\\n"
    >>> [(r.docid_vocab.tolist(), r.docid_codes.tolist())
    ...  for r in iter_judged_run_chunks(text, qrels)]  # a, c: neither judged nor tied
    [(['b', 'd', 'e', ''], [3, 0, 3, 1, 2])]
  """
  judged = judged or Judged(qrels.docid_vocab)
  if span is None:
    f, name, close = open_input(path, None)
    return _chunks(split_blocks(f, name, RUN, threaded=threaded), name, close, int(max_lines),
                   judged)
  if isinstance(path, bytes):
    raise TypeError("span needs a file path, got bytes")
  if ahead is None:  # (none split yet)
    ahead = SplitAhead(path, span, threaded=threaded)
  elif (ahead.path, ahead.span) != (os.fspath(path), tuple(span)):
    raise ValueError(f"ahead splits {ahead.path} {ahead.span}, not {path} {span}")
  return _chunks(ahead.blocks(), ahead.path, ahead.close, int(max_lines), judged)


class SplitAhead:
  """Internal API: the first blocks of the span ``span`` of the run file ``path``, split
  before the qrels that code them are known (a helper process splits them while the command
  reads the qrels); :func:`iter_judged_run_chunks` given it as ``ahead`` reads on from where
  it stopped. An error in the file is kept until the reading gets there. ``threaded``: the
  blocks not split ahead are split in a second thread (:func:`split_blocks`).

  Example:
    >>> import os, tempfile
    >>> from jaxrank import io
    >>> from jaxrank.io._chunks import SplitAhead, iter_judged_run_chunks
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> with open(path, "wb") as f:
    ...   _ = f.write(b"q Q0 a 1 3 t\\nq Q0 b 2 2 t\\nr Q0 d 1 1 t\\n")
    >>> ahead = SplitAhead(path, (0, 39))
    >>> ahead.step(), ahead.step(), len(ahead.ready)  # one block: the whole span
    (True, False, 1)
    >>> qrels = io.read_qrels(b"q 0 b 1\\n")
    >>> [len(r) for r in iter_judged_run_chunks(path, qrels, span=(0, 39), ahead=ahead)]
    [3]
  """

  def __init__(self, path: PathLike, span: tuple[int, int], *, threaded: bool = False) -> None:
    self.path, self.span = os.fspath(path), (int(span[0]), int(span[1]))
    self.ready: list[tuple[Block, int]] = []  # blocks split, with the lines before each
    self._file = open(self.path, "rb")  # closed by close()
    self._rest = split_blocks(Span(self._file, *self.span), self.path, RUN, threaded=threaded,
                              bom=self.span[0] == 0)
    self._error: Exception | None = None
    self._done = False

  def step(self) -> bool:
    """Splits the next block; False once none is left (the span's end, or an error)."""
    if self._done:
      return False
    try:
      block, line = next(self._rest)
    except StopIteration:
      self._done = True
      return False
    except Exception as e:  # a bad line, a read error: raised where the reading meets it
      self._error, self._done = e, True
      return False
    self.ready.append((block.own(), line))
    return True

  def blocks(self) -> Generator[tuple[Block, int], None, None]:
    """The span's blocks: those split ahead (let go of as they are passed on), then the rest."""
    while self.ready:
      yield self.ready.pop(0)
    if self._error is not None:
      raise self._error
    yield from self._rest

  def close(self) -> None:
    self._rest.close()
    self._file.close()


def query_spans(path: PathLike, cuts: Sequence[int]) -> list[tuple[int, int]]:
  """Internal API (runs evaluated by several processes): the file ``path`` cut into byte spans
  of whole queries, ``[(0, c1), (c1, c2), ..., (ck, size)]``, near the byte offsets ``cuts``
  (ascending): cut ``i`` is the start of the first line from byte ``cuts[i]`` on whose query id
  (its first field) differs from the one of the data line before it. A cut finding no change
  of query before the next one is dropped (fewer spans), and so is every cut of a gzip file.
  Only LF ends a line here: a file of CR line ends is not cut.

  Example:
    >>> import os, tempfile
    >>> from jaxrank.io._chunks import query_spans
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> with open(path, "wb") as f:
    ...   _ = f.write(b"a Q0 x 1 3 t\\na Q0 y 2 2 t\\nb Q0 x 1 1 t\\nc Q0 z 1 1 u\\n")
    >>> query_spans(path, [20])  # b's line starts at byte 26
    [(0, 26), (26, 52)]
  """
  size = os.path.getsize(path)
  found = [0]
  with open(path, "rb") as f:
    if f.read(2) != GZIP_MAGIC:
      ends = [*cuts[1:], size]
      for cut, limit in zip(cuts, ends):
        at = _query_change(f, max(cut, found[-1] + 1), limit)
        if at is not None and found[-1] < at < size:
          found.append(at)
  return list(zip(found, found[1:] + [size]))


def _query_change(f: BinaryIO, pos: int, limit: int) -> int | None:
  """The start of the first line at or after byte ``pos`` whose query id differs from the one
  of the data line before it (comment and blank lines skipped), before ``limit``; None if there
  is none."""
  back = min(pos, 4096)  # the line before: within the bytes read before pos, or skipped
  step = 1 << 16
  while True:
    f.seek(pos - back)
    data = f.read(back + step)
    lines = data.split(b"\n")
    at = pos - back  # the start of the line in hand (the first may be a part, unless at 0)
    last = None
    for i, line in enumerate(lines[:-1]):  # whole lines: each ends with LF
      field = line.split(None, 1)[:1]
      if (i or at == 0) and field and not field[0].startswith(b"#"):
        if last is not None and field[0] != last and at >= pos:
          return at if at < limit else None
        last = field[0]
      at += len(line) + 1
    if len(data) < back + step or at >= limit:
      return None
    step *= 2


def _chunks(blocks: Generator[tuple[Block, int], None, None], name: str,
            close: Callable[[], None] | None, max_lines: int,
            judged: Judged | None = None) -> Iterator[Run]:
  """Runs of whole queries from ``blocks`` (:func:`split_blocks`' or :meth:`SplitAhead.blocks`;
  closed here, and ``close`` called, when the reading ends)."""
  def builder_for() -> Builder:
    if judged is None:
      return Builder(RUN, max_lines + 1024, lines=True)
    return JudgedBuilder(max_lines + 1024, judged)

  seen: set[str] = set()

  def emit(builder: Builder) -> Run:
    run = builder.run()
    qids = run.qid_vocab.tolist()
    again = seen.intersection(qids)
    if again:
      codes = [i for i, q in enumerate(qids) if q in again]
      row = int(np.flatnonzero(np.isin(run.qid_codes, codes))[0])
      assert builder.lines is not None  # builder_for() keeps the lines
      raise ScatteredQueryError(
          f"{name}:{int(builder.lines.a[row]) + 1}: query {qids[run.qid_codes[row]]!r} appears "
          "again after its chunk was passed on (a run read in chunks needs each query's lines "
          "together: sort the file by query, or read it whole with io.read_run or `jaxrank "
          "evaluate --chunk-lines 0`)")
    seen.update(qids)
    return run

  with contextlib.ExitStack() as stack:
    if close is not None:
      stack.callback(close)
    builder, hint = builder_for(), max_lines
    for b, line in stack.enter_context(contextlib.closing(blocks)):
      pos = 0
      while pos < b.n:
        if len(builder) < max_lines:  # fill up to max_lines
          take = min(b.n, pos + max_lines - len(builder))
          builder.add(b, pos, take, line, hint)
          pos = take
          continue
        h = b.q_hash[pos:]  # then on to the end of the query in progress
        change = np.flatnonzero(h != np.r_[builder.last_q, h[:-1]])
        cut = pos + int(change[0]) if change.size else b.n
        builder.add(b, pos, cut, line, hint)
        pos = cut
        if change.size:
          yield emit(builder)
          builder = builder_for()
    if len(builder):
      yield emit(builder)
