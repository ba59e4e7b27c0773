"""Reading a whole run or qrels file: the rows of its blocks coded into a :class:`Run` or
:class:`Qrels` (:func:`read_run`, :func:`read_qrels`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from io import BytesIO
from typing import Any

import numpy as np

from jaxrank.io._bytes import Collision, Column, check_equal
from jaxrank.io._columns import Qrels, Run
from jaxrank.io._files import BLOCK, Input, PathLike, open_input
from jaxrank.io._ids import Ids, Vocab
from jaxrank.io._split import QRELS, RUN, Block, Format, split_blocks


class Builder:
  """The rows of a run or qrels being read (appended a block, or part of one, at a time): codes
  into two :class:`Vocab` s, and the integer and float columns."""

  coded_share = 1  # about one document in this many gets a code of its own: the table's size

  def __init__(self, fmt: Format, rows: int, *, lines: bool = False,
               keep_ints: bool = True) -> None:
    self.fmt, self.rows = fmt, rows
    self.q = Vocab(1024)
    self.d: Vocab | None = None  # made by the first add(), which knows how many to expect
    self.q_codes, self.d_codes = Column(np.int32, rows), Column(np.int32, rows)
    self.ints = Column(np.int64, rows) if keep_ints else None
    self.floats = Column(np.float64, rows) if fmt.float_field is not None else None
    self.lines = Column(np.int64, rows) if lines else None
    self.tag = "jaxrank"  # the last row's tag
    self.last_q: np.uint64 | None = None  # the last row's query hash

  def __len__(self) -> int:
    return self.q_codes.n

  def add(self, b: Block, lo: int, hi: int, line0: int, expected_docs: int) -> None:
    """Appends rows ``lo:hi`` of block ``b`` (which starts after ``line0`` lines)."""
    if hi <= lo:
      return
    if self.d is None:
      self.d = Vocab(max(1024, expected_docs // self.coded_share))
    if self.q_codes.n + hi - lo > 2**31 - 1:
      raise ValueError("more than 2**31 - 1 lines: not supported")
    s, n, h = b.q_start[lo:hi], b.q_len[lo:hi], b.q_hash[lo:hi]
    same = np.flatnonzero(h[1:] == h[:-1]) + 1  # a query's lines come together: streaks
    try:
      if int(n.max()) > 8:  # ids of at most 8 bytes have equal hashes only if equal
        check_equal(b.win, s[same], n[same], b.win, s[same - 1], n[same - 1])
    except Collision:  # two queries' ids with one hash: the vocabulary sorts it out
      same = same[:0]
    if same.size:
      head = np.ones(h.size, bool)
      head[same] = False
      heads = np.flatnonzero(head)
      codes = self.q.add(b.buf, b.win, s[heads], n[heads], h[heads])[np.cumsum(head) - 1]
    else:
      codes = self.q.add(b.buf, b.win, s, n, h)
    self.q_codes.append(codes)
    self.d_codes.append(self._doc_codes(b, lo, hi, codes))
    if self.ints is not None:
      self.ints.append(b.ints[lo:hi])
    if self.floats is not None:
      assert b.floats is not None  # the block's format is the builder's: it has scores
      self.floats.append(b.floats[lo:hi])
      self.tag = b.tag(hi - 1)
    if self.lines is not None:
      self.lines.append(b.lines[lo:hi] + line0)
    self.last_q = h[-1]

  def _doc_codes(self, b: Block, lo: int, hi: int, q_codes: np.ndarray) -> np.ndarray:
    """The codes of rows ``lo:hi``'s documents (``q_codes``: their queries')."""
    assert self.d is not None  # made by add() before it calls this
    return self.d.add(b.buf, b.win, b.d_start[lo:hi], b.d_len[lo:hi], b.d_hash[lo:hi])

  def docid_vocab(self) -> Ids:
    return self.d.ids() if self.d is not None else Ids.from_strings([])[0]

  def run(self) -> Run:
    assert self.floats is not None  # a builder of the run format
    return Run(qid_codes=self.q_codes.view(), qid_vocab=self.q.ids(),
               docid_codes=self.d_codes.view(), docid_vocab=self.docid_vocab(),
               score=self.floats.view(), rank=None if self.ints is None else self.ints.view(),
               tag=self.tag)

  def qrels(self) -> Qrels:
    assert self.ints is not None  # a builder of the qrels format keeps the grades
    return Qrels(qid_codes=self.q_codes.view(), qid_vocab=self.q.ids(),
                 docid_codes=self.d_codes.view(), docid_vocab=self.docid_vocab(),
                 rel=self.ints.view())


_PIPELINE = 8 * BLOCK  # inputs at least this large are split in a second thread


def _size_of(f: Input) -> int | None:
  try:
    return os.fstat(f.fileno()).st_size if f.seekable() and not hasattr(f, "mtime") else None
  except (OSError, AttributeError, ValueError):
    return None


def _read(path: PathLike | bytes, name: str | None, fmt: Format) -> Builder:
  f, name, close = open_input(path, name)
  try:
    size = _size_of(f)
    if size is None and isinstance(f, BytesIO):
      size = len(f.getbuffer())
    rows = (size + 1) // (2 * fmt.min) + 1 if size is not None else 1 << 20  # an upper bound
    builder = Builder(fmt, rows)
    blocks = split_blocks(f, name, fmt, threaded=size is None or size >= _PIPELINE)
    with contextlib.closing(blocks):  # an error here stops the reading thread at once
      for b, line in blocks:
        expected = rows if size is None else max(
            1024, int(b.n * size / max(b.nbytes, 1) * 1.1))
        builder.add(b, 0, b.n, line, min(expected, rows))
    return builder
  finally:
    if close is not None:
      close()


def read_run(path: PathLike | bytes, *, name: str | None = None) -> Run:
  """Reads a TREC run file ``qid Q0 docid rank score tag [ignored ...]``.

  The format rules (bytes, separators, line ends, C number syntax) are in the module
  docstring; gzip content is decompressed, ``"-"`` reads standard input. Reads a block of
  about a megabyte at a time: memory holds the result, not the file.

  Args:
    path: a file path, ``"-"``, or the file's content as bytes.
    name: the name used in error messages (default: the path).

  Returns:
    A :class:`Run` (rows in file order; ``tag`` from the last line, trec_eval's ``runid``).

  Example:
    >>> from jaxrank import io
    >>> run = io.read_run(b"q1 Q0 d#1 1 2.5 bm25\\n# a comment\\n\\nq1 Q0 d2 2 1.5 bm25\\n")
    >>> run.docid_vocab.tolist(), run.docid_codes.tolist(), run.score.tolist(), run.tag
    (['d#1', 'd2'], [0, 1], [2.5, 1.5], 'bm25')
  """
  return _read(path, name, RUN).run()


def read_runs(paths: Sequence[PathLike] | Mapping[str, PathLike | bytes]) -> dict[str, Run]:
  """Reads several run files (a sweep, the systems of a track), each by :func:`read_run`.

  Args:
    paths: run file paths, each keyed by its path as given (``os.fspath``), or a ``{name:
      path or bytes}`` mapping; ``"-"`` (standard input) at most once.

  Returns:
    ``{name: Run}`` in the order given, for :func:`jaxrank.numpy.evaluate_runs`.

  Example:
    >>> from jaxrank import io
    >>> runs = io.read_runs({"bm25": b"q1 Q0 d1 1 2.5 bm25\\n", "dense": b"q1 Q0 d2 1 0.9 e5\\n"})
    >>> {name: (run.docid_vocab.tolist(), run.tag) for name, run in runs.items()}
    {'bm25': (['d1'], 'bm25'), 'dense': (['d2'], 'e5')}
  """
  if isinstance(paths, (str, bytes, os.PathLike)):
    raise TypeError(f"paths must be a list of run files or a {{name: path}} mapping, got "
                    f"{type(paths).__name__} {paths!r}: for one run use read_run")
  return {name: read_run(path, name=name if isinstance(path, bytes) else None)
          for name, path in named_paths(paths, "paths").items()}


def named_paths(paths: Iterable[Any] | Mapping[str, Any], what: str) -> dict[str, Any]:
  """Internal API (:func:`read_runs`, ``jaxrank.numpy.evaluate_runs``): runs by name, a list of
  paths keyed by each path as given (``os.fspath``). A name given twice, or standard input
  (``"-"``) twice, is an error naming ``what``.

  Example:
    >>> from jaxrank.io._reader import named_paths
    >>> named_paths(["a.run", "b.run"], "paths")
    {'a.run': 'a.run', 'b.run': 'b.run'}
  """
  if isinstance(paths, Mapping):
    named = dict(paths)
  else:
    named = {}
    for path in paths:
      if os.fspath(path) in named:
        raise ValueError(f"{what}: each run must have its own name, got {os.fspath(path)!r} "
                         "twice")
      named[os.fspath(path)] = path
  if sum(isinstance(p, str) and p == "-" for p in named.values()) > 1:
    raise ValueError(f"{what}: standard input ('-') can be read only once")
  return named


def read_qrels(path: PathLike | bytes, *, name: str | None = None) -> Qrels:
  """Reads a TREC qrels file ``qid iter docid rel`` (integer ``rel``; ``-1`` = unjudged).

  Same rules and arguments as :func:`read_run`.

  Example:
    >>> from jaxrank import io
    >>> qrels = io.read_qrels(b"q1 0 d1 2\\nq1 0 d2 0\\n")
    >>> qrels.docid_vocab.tolist(), qrels.rel.tolist()
    (['d1', 'd2'], [2, 0])
  """
  return _read(path, name, QRELS).qrels()
