"""Blocks of whole lines split into fields with NumPy (no Python loop per line), checked, and
their numbers read: :func:`split_blocks`, in a second thread for large inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator

import numpy as np

from jaxrank.io._bytes import ERRORS, PAD, hash_ids, windows
from jaxrank.io._errors import INT64_RANGE, TrecFormatError
from jaxrank.io._files import Input, Span, blocks, line_ends
from jaxrank.io._numbers import parse_floats, parse_ints, pythonic

# parse(buf, win, starts, lens) -> (values, status): parse_ints, parse_floats.
_Parse = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray,
                                                                          np.ndarray]]


class Format:
  """One file format: its fields per line (at least ``min``; exactly ``max`` unless None), the
  name of its integer field (the 4th) in messages, and its float field (None for qrels). The
  ids are the 1st and 3rd fields."""

  def __init__(self, min_fields: int, max_fields: int | None, int_name: str,
               float_field: int | None) -> None:
    self.min, self.max, self.int_name, self.float_field = (min_fields, max_fields, int_name,
                                                           float_field)


RUN = Format(6, None, "the rank (4th field)", 4)
QRELS = Format(4, 4, "the relevance (4th field)", None)
_SCORE = "the score (5th field)"


def _text(buf: np.ndarray, start: int, n: int) -> str:
  return buf[start:start + n].tobytes().decode(errors="replace")


def _regular_fields(c: np.ndarray, eol: np.ndarray, nlines: int, nf: int,
                    lo: int) -> tuple[np.ndarray, np.ndarray] | None:
  """Field bounds ``(starts, lens)``, ``[nf, nlines]`` arrays (row ``j``: field ``j``'s start in
  the buffer and its length), when every line of the block ``c`` (at ``lo``) is ``nf``
  non-empty fields joined by single spaces with an LF at its end (the common file: the caller
  checked that no byte below 32 but LF occurs), else None."""
  sp: np.ndarray = np.flatnonzero(c == 32)  # then [nlines, nf - 1]
  if not nlines or sp.size != (nf - 1) * nlines:
    return None
  # The bytes around each field, a row per field: before the first, the line's start - 1.
  # (int32 when the buffer allows: half the bytes, and each array below a megabyte, the size
  # from which the C allocator maps fresh pages for every block.)
  edge = np.empty((nf + 1, nlines), np.int32 if c.size + lo < 2**31 - 1 else np.int64)
  edge[nf, :eol.size] = eol[:nlines]
  edge[nf, eol.size:] = c.size  # a last line without LF (end of the data)
  edge[0, 0] = -1
  edge[0, 1:] = edge[nf, :-1]
  edge[1:nf] = sp.reshape(nlines, nf - 1).T
  lens = edge[1:] - edge[:-1]
  lens -= 1
  if lens.min() < 1 or (c[edge[0] + 1] == 35).any():  # an empty field, a comment line
    return None
  starts = edge[:-1]
  starts += lo + 1
  return starts, lens


class Block:
  """The data lines of one block: per row the query and document ids (start, length, hash in
  the buffer), the integer and float columns and the line (0-based, in the block); and the
  number of line ends in the block."""

  __slots__ = ("buf", "win", "n", "lines", "q_start", "q_len", "q_hash", "d_start", "d_len",
               "d_hash", "ints", "floats", "nlines", "nbytes", "end")
  buf: np.ndarray  # the padded buffer
  win: np.ndarray  # its 8-byte windows
  n: int  # data rows
  lines: np.ndarray  # each row's line in the block
  q_start: np.ndarray
  q_len: np.ndarray
  q_hash: np.ndarray
  d_start: np.ndarray
  d_len: np.ndarray
  d_hash: np.ndarray
  ints: np.ndarray  # the 4th field
  floats: np.ndarray | None  # the score (None for qrels)
  nlines: int  # line ends in the block
  nbytes: int
  end: int  # where its lines end in the buffer

  def own(self) -> Block:
    """This block, holding a copy of its bytes and its own small arrays: it stays valid while
    the reader reuses its buffer for the next blocks."""
    self.buf = self.buf[:self.end + PAD].copy()
    self.win = windows(self.buf)
    # (views of the [field, row] arrays of every field: copies free the others)
    self.q_start, self.q_len = self.q_start.copy(), self.q_len.copy()
    self.d_start, self.d_len = self.d_start.copy(), self.d_len.copy()
    return self

  def tag(self, row: int) -> str:
    """The run tag (6th field) of row ``row``'s line, read from the end of its document id
    (the ids before it may be long; the fields after it, rank, score and tag, rarely are)."""
    start = stop = int(self.d_start[row]) + int(self.d_len[row])
    step = 256
    while True:
      c = self.buf[stop:stop + step]
      ends = np.flatnonzero((c == 10) | (c == 13) | (c == 0))
      if ends.size or c.size < step:
        stop += int(ends[0]) if ends.size else c.size
        return self.buf[start:stop].tobytes().split()[2].decode("utf-8", ERRORS)
      stop, step = stop + c.size, 2 * step  # a long tag: steps grow, the time stays linear


def _split_block(buf: np.ndarray, lo: int, hi: int, fmt: Format, name: str,
                 line0: int) -> Block:
  """Splits the whole lines ``buf[lo:hi]`` (``line0`` lines before them) into a :class:`Block`.
  Raises :class:`TrecFormatError` for the block's first bad line (encoding problems first
  within a line).

  A block of regular lines (single spaces, LF, a fixed number of fields) is split by the
  positions of its spaces (:func:`_regular_fields`); any other by the edges of its whitespace
  runs. Both give the same fields."""
  win = windows(buf)
  c = buf[lo:hi]
  need = 5 if fmt.float_field is not None else 4  # fields used: qid, -, docid, int, float
  simple = int(np.count_nonzero(c < 32))
  eol_mask = c == 10
  eol = np.flatnonzero(eol_mask)
  nlines = eol.size + int(c.size > 0 and c[-1] != 10)
  regular = None
  if simple == eol.size:  # no byte below 32 but LF: no CR, tab, \v, \f, NUL
    regular = _regular_fields(c, eol, nlines, fmt.max or fmt.min, lo)
  errors: list[tuple[int, int, str]] = []  # (line index in the block, priority, message)
  if regular is None and simple != eol.size:
    eol_mask = line_ends(c, int(buf[hi]))
    eol = np.flatnonzero(eol_mask)
    nlines = eol.size + int(c.size > 0 and not eol_mask[-1])

  def line_col(p: int) -> tuple[int, int]:
    at = int(np.searchsorted(eol, p))
    return at, p - (int(eol[at - 1]) + 1 if at else 0) + 1

  if regular is not None:
    starts, lens = regular
    lines = np.arange(nlines)
  else:
    if not c.all():
      at, col = line_col(int(np.argmin(c)))
      errors.append((at, 0, f"NUL byte at column {col}; a TREC file is text and ids cannot "
                            "hold NUL"))
    ws = (c == 32) | ((c - np.uint8(9)) <= np.uint8(4))  # space, \t, \n, \v, \f, \r
    edges = np.flatnonzero(np.diff(ws.view(np.int8), prepend=np.int8(1), append=np.int8(1)))
    t_starts, t_ends = edges[0::2] + lo, edges[1::2] + lo
    line_starts = np.zeros(nlines, np.int64)
    line_starts[1:] = eol[:nlines - 1] + (lo + 1)
    line_starts[0] = lo
    first = np.searchsorted(t_starts, line_starts)
    count = np.diff(first, append=t_starts.size)
    lines = np.flatnonzero(count)
    lines = lines[buf[t_starts[first[lines]]] != 35]  # '#': a comment line
    count = count[lines]
    bad = (count < fmt.min) if fmt.max is None else (count != fmt.max)
    if bad.any():
      i = int(np.argmax(bad))
      want = f"at least {fmt.min}" if fmt.max is None else f"{fmt.max}"
      errors.append((int(lines[i]), 1, f"expected {want} whitespace-separated fields, got "
                                       f"{int(count[i])}"))
      lines = lines[~bad]
    tok = first[lines] + np.arange(need)[:, None]  # [field, row], as _regular_fields gives
    starts = t_starts[tok]
    lens = t_ends[tok] - starts

  def number(field: int, parse: _Parse, what: str, messages: dict[int, str]) -> np.ndarray:
    s, n = starts[field], lens[field]
    values, status = parse(buf, win, s, n)
    if status.any():
      i = int(np.flatnonzero(status)[0])
      text = _text(buf, int(s[i]), int(n[i]))
      if status[i] == 1 and pythonic(text, parse is parse_ints):
        status[i] = 3  # Python would read it (1_000, full-width digits): say which syntax
      errors.append((int(lines[i]), 1, f"{what} {messages[int(status[i])]}, got {text!r}" +
                     (" (NaN has no order)" if status[i] == 2 and parse is parse_floats else
                      "")))
    return values

  ints = number(3, parse_ints, fmt.int_name,
                {1: "must be an integer", 2: f"must be an integer {INT64_RANGE}",
                 3: "must be an integer in C syntax ([+-]digits)"})
  floats = None if fmt.float_field is None else number(fmt.float_field, parse_floats, _SCORE, {
      1: "must be a number", 2: "must be a number",
      3: "must be a number in C syntax ([+-]digits[.digits][e[+-]digits], or inf)"})
  if errors:
    at, _, message = min(errors)
    raise TrecFormatError(f"{name}:{line0 + at + 1}: {message}")
  b = Block()
  b.buf, b.win, b.n, b.lines, b.nlines = buf, win, lines.size, lines, int(eol.size)
  b.nbytes, b.end = hi - lo, hi
  b.ints, b.floats = ints, floats
  b.q_start, b.q_len = starts[0], lens[0]
  b.q_hash = hash_ids(win, b.q_start, b.q_len)
  b.d_start, b.d_len = starts[2], lens[2]
  b.d_hash = hash_ids(win, b.d_start, b.d_len)
  return b


_AHEAD = 32  # blocks split ahead of the caller (while it evaluates a chunk, say)


def split_blocks(f: Input | Span, name: str, fmt: Format, *, threaded: bool,
                 bom: bool = True) -> Generator[tuple[Block, int], None, None]:
  """The content's blocks split into rows (:func:`_split_block`), with the number of lines
  before each. ``threaded``: a second thread reads and splits the next block while the caller
  codes this one (NumPy releases the GIL in both, so two cores overlap them); errors reach the
  caller in order, at the block they belong to. ``bom``: as :func:`blocks`."""
  def split() -> Iterator[tuple[Block, int]]:
    line = 0
    for buf, lo, hi in blocks(f, name, buffers=_AHEAD + 3 if threaded else 1, bom=bom):
      b = _split_block(buf, lo, hi, fmt, name, line)
      yield b, line
      line += b.nlines

  if not threaded:
    yield from split()
    return
  import queue
  import threading
  # At most _AHEAD blocks wait, one more waits to be put, one is split and one coded: the
  # _AHEAD + 3 buffers are never reused early.
  # (item, None), then (None, None) at the end or (None, error).
  ready: queue.Queue[tuple[tuple[Block, int] | None, BaseException | None]] = queue.Queue(
      maxsize=_AHEAD)
  stop = threading.Event()

  def produce() -> None:
    try:
      for item in split():
        while not stop.is_set():
          try:
            ready.put((item, None), timeout=0.1)
            break
          except queue.Full:
            continue
        if stop.is_set():
          return
    except BaseException as e:  # handed to the consumer, raised there
      ready.put((None, e))
      return
    ready.put((None, None))

  worker = threading.Thread(target=produce, name="jaxrank-trec-reader", daemon=True)
  worker.start()
  try:
    while True:
      item, error = ready.get()
      if error is not None:
        raise error
      if item is None:
        return
      yield item
  finally:
    stop.set()
    while worker.is_alive():  # let a producer blocked on a full queue see the stop
      try:
        ready.get_nowait()
      except queue.Empty:
        pass
      worker.join(0.05)
