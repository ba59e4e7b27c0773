"""The bytes of a file: opened (a path, ``"-"``, bytes; gzip recognised by its first bytes)
and read in blocks of whole lines.
"""

from __future__ import annotations

import codecs
import os
import sys
import zlib
from collections.abc import Callable, Iterator
from io import BufferedIOBase, BufferedReader, BytesIO
from typing import cast

import numpy as np

from jaxrank.io._bytes import PAD
from jaxrank.io._errors import TrecFormatError

PathLike = str | os.PathLike[str]
Input = BufferedIOBase  # what open_input gives to read from: BytesIO, a file, GzipFile, stdin
BLOCK = 1 << 20  # bytes per block: the working set of one block stays in the CPU's cache
GZIP_MAGIC = b"\x1f\x8b"  # the first bytes of gzip data
_NAMES = {"-": "<stdin>"}


def open_input(path: PathLike | bytes,
               name: str | None) -> tuple[Input, str, Callable[[], None] | None]:
  """A binary file object reading the content (gzip decompressed), the name for messages, and
  what closes it. A missing file fails here, at once."""
  f: Input
  close: Callable[[], None] | None
  if isinstance(path, (bytes, bytearray, memoryview)):
    f, name, close = BytesIO(bytes(path)), name or "<bytes>", None
  else:
    path = os.fspath(path)
    name = name or _NAMES.get(path, path)
    if path == "-":
      # A BufferedReader (typeshed calls it a BinaryIO, which has no readinto).
      f, close = cast(BufferedIOBase, sys.stdin.buffer), None
    else:
      try:
        f = open(path, "rb")  # closed by the caller
      except OSError as e:
        raise FileNotFoundError(f"cannot read {path}: {e.strerror}") from None
      close = f.close
  if f.seekable():
    head = f.read(2)
    f.seek(0)
  else:
    if not hasattr(f, "peek"):
      f = BufferedReader(f)
    head = f.peek(2)[:2]
  if head == GZIP_MAGIC:
    import gzip
    f = gzip.GzipFile(fileobj=f, mode="rb")
  return f, name, close


def _fill(f: Input | Span, view: memoryview, name: str) -> int:
  """Reads into ``view`` until it is full or the data ends; the number of bytes read."""
  got = 0
  try:
    while got < len(view):
      n = f.readinto(view[got:])
      if not n:
        break
      got += n
  except (OSError, EOFError, zlib.error) as e:  # gzip.BadGzipFile is an OSError
    raise TrecFormatError(f"{name}:1: not readable as gzip data ({e})") from None
  return got


def _last_line_end(buf: np.ndarray, lo: int, end: int, floor: int = 0) -> int:
  """The end of the last whole line in ``buf[lo:end]`` (``lo`` if none). A CR at ``end - 1``
  does not count: its LF may come with the next read. ``buf[:floor]`` is known to hold no line
  end (read before): the search stops there, so a line longer than a block costs one look at
  each byte, not one per read."""
  w = end - 1 if end > lo and buf[end - 1] == 13 else end
  floor, step = max(lo, floor), 65536
  while w > floor:
    start = max(floor, w - step)
    ends = np.flatnonzero(line_ends(buf[start:w], int(buf[w])))
    if ends.size:
      return start + int(ends[-1]) + 1
    w, step = start, 2 * step
  return lo


class Span:
  """Bytes ``start:stop`` of a seekable binary file, read by ``readinto`` (what
  :func:`blocks` reads): a part of a run file, its lines read by another process."""

  def __init__(self, f: BufferedIOBase, start: int, stop: int) -> None:
    f.seek(start)
    self.f, self.left = f, stop - start

  def readinto(self, view: memoryview) -> int:
    n = self.f.readinto(memoryview(view)[:self.left]) if self.left > 0 else 0
    self.left -= n
    return n


def blocks(f: Input | Span, name: str, buffers: int = 1,
           bom: bool = True) -> Iterator[tuple[np.ndarray, int, int]]:
  """The content in blocks of whole lines, ``(buffer, lo, hi)``: lines ``buffer[lo:hi]``, the
  byte after them readable (zero padding at the end). ``buffers`` buffers of about 2 MB are
  used in turn, so a block stays valid until ``buffers - 1`` more were read (a line longer than
  a block grows its buffer); a UTF-8 BOM at the start is skipped (with ``bom``: the content
  is a file's start)."""
  pool = [np.zeros(2 * BLOCK + PAD, np.uint8) for _ in range(buffers)]
  buf, turn = pool[0], 0
  carry, first, eof = 0, True, False
  floor = 0  # the carried bytes below it hold no line end
  while not eof:
    if buf.size < carry + BLOCK + PAD:  # a long line: a larger buffer
      grown = np.zeros(2 * (carry + BLOCK) + PAD, np.uint8)
      grown[:carry] = buf[:carry]
      buf = grown
    got = _fill(f, buf.data[carry:carry + BLOCK], name)
    eof, end = got == 0, carry + got
    buf[end:end + PAD] = 0
    lo = 0
    if first:
      if end < 3 and not eof:
        carry = end
        continue
      first = False
      lo = 3 if bom and bytes(buf[:3]) == codecs.BOM_UTF8 and end >= 3 else 0
    hi = end if eof else _last_line_end(buf, lo, end, floor)
    yielded = hi > lo
    if yielded:
      yield buf, lo, hi
    carry = end - hi
    floor = max(carry - 1, 0)  # all but a last CR (its LF may follow) was searched
    if buffers > 1 and yielded:  # the next buffer: this one's block may still be in use
      turn = (turn + 1) % buffers
      nxt = pool[turn]
      if nxt.size < carry + BLOCK + PAD:
        nxt = pool[turn] = np.zeros(2 * (carry + BLOCK) + PAD, np.uint8)
      nxt[:carry] = buf[hi:end]
      buf = nxt
    elif hi:  # (hi == 0: a line longer than the data read so far stays where it is)
      buf[:carry] = buf[hi:end].copy()


def line_ends(c: np.ndarray, after: int) -> np.ndarray:
  """Whether each byte of ``c`` ends a line: LF, or CR not followed by LF (``after`` is the
  byte after ``c``)."""
  lf: np.ndarray = c == 10
  cr: np.ndarray = c == 13
  if not cr.any():
    return lf
  nxt = np.empty_like(c)
  nxt[:-1], nxt[-1] = c[1:], after
  ends: np.ndarray = lf | (cr & (nxt != 10))
  return ends
