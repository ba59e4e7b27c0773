"""Runs read a few whole queries at a time (:func:`iter_run_chunks`), and only their
documents trec_eval's measures can tell apart (:func:`iter_judged_run_chunks`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import numpy as np

from jaxrank.io._columns import Qrels, Run
from jaxrank.io._errors import ScatteredQueryError
from jaxrank.io._files import Input, PathLike, open_input
from jaxrank.io._judged import Judged, JudgedBuilder
from jaxrank.io._reader import Builder
from jaxrank.io._split import RUN, split_blocks


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
  return _chunks(f, name, close, int(max_lines))


def iter_judged_run_chunks(path: PathLike | bytes, qrels: Qrels, *,
                           max_lines: int = 1_000_000) -> Iterator[Run]:
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

  Example:
    >>> from jaxrank import io
    >>> from jaxrank.io._chunks import iter_judged_run_chunks
    >>> qrels = io.read_qrels(b"q 0 b 1\\n")
    >>> text = b"q Q0 a 1 3 t\\nq Q0 b 2 2 t\\nq Q0 c 3 1 t\\nr Q0 d 1 1 t\\nr Q0 e 2 1 t\\n"
    >>> [(r.docid_vocab.tolist(), r.docid_codes.tolist())
    ...  for r in iter_judged_run_chunks(text, qrels)]  # a, c: neither judged nor tied
    [(['b', 'd', 'e', ''], [3, 0, 3, 1, 2])]
  """
  judged = Judged(qrels.docid_vocab)
  f, name, close = open_input(path, None)
  return _chunks(f, name, close, int(max_lines), judged)


def _chunks(f: Input, name: str, close: Callable[[], None] | None, max_lines: int,
            judged: Judged | None = None) -> Iterator[Run]:
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
    blocks = stack.enter_context(contextlib.closing(split_blocks(f, name, RUN, threaded=True)))
    for b, line in blocks:
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
