"""TREC run and qrels files, pytrec_eval-style dicts and pandas DataFrames, in and out.

A run file has one retrieved document per line, ``qid Q0 docid rank score tag`` (extra trailing
columns are ignored, as by trec_eval); a qrels file has one judgment per line, ``qid iter docid
rel`` with an integer grade (``-1`` = pooled but unjudged). The rules, the same for every file:

* **Bytes.** Ids are the exact bytes between separators, compared byte for byte (trec_eval's
  ``strcmp``), whatever the encoding: any byte but NUL and the separators is part of an id. In
  Python an id is a ``str``: its UTF-8 decoded, each byte that is not part of valid UTF-8 as a
  lone surrogate U+DC80..U+DCFF (``surrogateescape``: latin-1 ``caf\\xe9`` reads as
  ``'caf\\udce9'``), and the writers write those bytes back, so ``write_run(read_run(f))``
  keeps every id's bytes. A UTF-8 byte order mark at the start of a file is skipped; a NUL byte
  is an error naming the line (C tools end a string there).
* **Separators** are trec_eval's (C ``isspace``): space, tab, ``\\v``, ``\\f`` and ``\\r``.
  Nothing else separates: no-break spaces, U+0085, U+2028 and ASCII control characters such as
  ``\\x1c`` are part of an id (Python's ``str.split`` would split there; trec_eval does not).
* **Lines** end with LF, CRLF or a lone CR (old Mac files); line numbers count them so.
  Blank lines are skipped; a line whose first field starts with ``#`` is a comment; a ``#``
  anywhere else (inside an id) is data.
* **Numbers** are read strictly in C syntax, the whole field: a score is ``[+-]digits[.digits]
  [(e|E)[+-]digits]``, or ``inf``/``infinity`` (any case), correctly rounded like ``strtod``
  (``1e400`` is ``inf``); ranks and grades are ``[+-]digits`` within int64. Where trec_eval's
  ``atof`` would silently read a prefix (``1_000`` as 1, ``1e`` as 1, ``0x1p3`` as 8), jaxrank
  reports the line. NaN scores are errors (NaN has no order).

Any other input raises :class:`TrecFormatError`, one line starting ``file:line:``. A path may be
``"-"`` (standard input), and gzip-compressed content is recognised by its first bytes and
decompressed, whatever the file is called.

**Representation.** :class:`Run` and :class:`Qrels` hold one integer code per row for the query
id and the document id (``qid_codes``, ``docid_codes``, int32) and the distinct ids once, as
:class:`Ids` vocabularies (``qid_vocab``, ``docid_vocab``; ids in order of first appearance):
``qid_vocab[qid_codes[i]]`` is row ``i``'s query id. Ids become integers once, while the file is
read: each id is hashed from its bytes (64 bits; an id of at most 8 bytes hashes to a bijection
of its bytes, so such ids never collide), a hash table in NumPy gives the codes, and a repeated
longer id is compared byte for byte with the stored one, so no string is ever sorted and a hash
collision costs time, never a wrong id. Dicts (:func:`as_run`, :func:`as_qrels`) go through the
same table. To match the documents of a run with those of the qrels,
``run.docid_vocab.index(qrels.docid_vocab)`` gives each qrels document's run code (``-1`` where
the run never retrieved it), by hash, in time linear in the two vocabularies; ``Ids.argsort``
gives the byte (``strcmp``) order that trec_eval's tie-breaking and query order use. The former
columns ``qid``/``docid`` (NumPy byte strings) are still there, built from the codes when first
used; they are as wide as the longest id, so new code should use the codes.

Reading goes through the file once, a block of about a megabyte of whole lines at a time, with
NumPy (no Python loop per line): a block of regular lines (fields joined by single spaces) is
split by the positions of its spaces, any other by the edges of its whitespace runs; numbers
are read eight bytes at a time (SWAR in uint64 words). Memory holds the result (codes, numbers,
the distinct ids), not the file; time and memory grow with the file's size, never with lines
times the longest id (``bench/bench_read.py``). :func:`iter_run_chunks` yields a run a few
whole queries at a time, for runs bigger than memory.

The DataFrame adapters (:func:`run_from_frame`, :func:`qrels_from_frame`, :func:`run_to_frame`,
:func:`qrels_to_frame`) import pandas when called; ``import jaxrank`` never does.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import re
import stat
import sys
import zlib
from collections.abc import Iterable, Iterator, Mapping
from io import BufferedReader, BytesIO
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pandas is optional and imported only when an adapter is called
  import pandas

__all__ = [
    "Ids", "Qrels", "Run", "ScatteredQueryError", "TrecFormatError", "as_qrels", "as_run",
    "iter_run_chunks", "qrels_from_frame", "qrels_to_frame", "read_qrels", "read_run",
    "run_from_frame", "run_to_frame", "write_qrels", "write_run",
]

PathLike = str | os.PathLike
INT64_RANGE = "between -9223372036854775808 and 9223372036854775807"


class TrecFormatError(ValueError):
  """A malformed line in a run or qrels file; the message starts with ``file:line:``.

  A ``ValueError``, so ``except ValueError`` catches it too.

  Example:
    >>> from jaxrank import io
    >>> try:
    ...   io.read_run(b"q1 Q0 d1 1 high mine\\n", name="run.txt")
    ... except io.TrecFormatError as e:
    ...   print(e)
    run.txt:1: the score (5th field) must be a number, got 'high'
  """


class ScatteredQueryError(TrecFormatError):
  """A query's lines do not come together in a run read in chunks (:func:`iter_run_chunks`):
  the query came back after its chunk was passed on. A :class:`TrecFormatError`.

  Example:
    >>> from jaxrank import io
    >>> run = b"q1 Q0 d1 1 2 r\\nq2 Q0 d1 1 2 r\\nq1 Q0 d2 2 1 r\\n"
    >>> try:
    ...   chunks = list(io.iter_run_chunks(run, max_lines=1, name="run.txt"))
    ... except io.ScatteredQueryError as e:
    ...   print(str(e).split(" (")[0])
    run.txt:3: query 'q1' appears again after its chunk was passed on
  """


# ----------------------------------------------------------------------------------------------
# Ids as bytes in NumPy buffers: 8-byte windows, hashes, comparisons.

_PAD = 16  # zero bytes after every buffer, so an 8-byte window at any id's start stays inside
_MASK = np.array([(1 << (8 * r)) - 1 for r in range(8)] + [(1 << 64) - 1], np.uint64)
_K0 = np.uint64(0x9E3779B97F4A7C15)
_K1 = np.uint64(0xFF51AFD7ED558CCD)
_K2 = np.uint64(0xC4CEB9FE1A85EC53)
_S29, _S33 = np.uint64(29), np.uint64(33)
_LONG = 256  # bytes of each id read a word per NumPy round (<= 32); the rest of longer ids flat
_FLAT = 1 << 18  # words per slice of a flat pass (temporaries of a few megabytes)
_ERRORS = "surrogateescape"  # ids are bytes: those that are not UTF-8 read as U+DC80..U+DCFF


def _padded(data: bytes | bytearray | memoryview) -> np.ndarray:
  """A uint8 copy of ``data`` followed by ``_PAD`` zero bytes."""
  buf = np.zeros(len(data) + _PAD, np.uint8)
  buf[:len(data)] = np.frombuffer(data, np.uint8)
  return buf


def _windows(buf: np.ndarray) -> np.ndarray:
  """``w[i]`` = bytes ``i .. i+7`` of ``buf`` as one little-endian uint64 (a strided view)."""
  return np.ndarray((buf.size - 7,), np.dtype("<u8"), buffer=buf, strides=(1,))


def _word(win: np.ndarray, starts: np.ndarray, lens: np.ndarray, j: Any) -> np.ndarray:
  """Word ``j`` (bytes ``8j .. 8j+7``, zero past the id's end) of the ids at ``starts``, each
  longer than ``8j`` bytes."""
  return win[starts + 8 * j] & _MASK[np.minimum(lens - 8 * j, 8)]


def _flat_words(lens: np.ndarray, first: int) -> Iterator[tuple[np.ndarray, np.ndarray,
                                                                np.ndarray]]:
  """The words from word ``first`` on of ids of ``lens`` bytes (each longer than ``8 * first``)
  as one sequence, at most ``_FLAT`` words at a time: ``(ids, j, heads)``, each word's id (an
  index into ``lens``) and number in that id, and where each id's words begin in the slice (for
  ``np.ufunc.reduceat``). Time and memory grow with the words, whatever the lengths: this is how
  ids longer than ``_LONG`` bytes are read, never a NumPy round per word."""
  nw = (lens.astype(np.int64) + 7) // 8 - first
  off = np.zeros(nw.size + 1, np.int64)
  np.cumsum(nw, out=off[1:])
  total = int(off[-1])
  for a in range(0, total, _FLAT):
    b = min(total, a + _FLAT)
    i0, i1 = int(np.searchsorted(off, a, "right")) - 1, int(np.searchsorted(off, b, "left"))
    lo = np.maximum(off[i0:i1], a)
    ids = np.repeat(np.arange(i0, i1), np.minimum(off[i0 + 1:i1 + 1], b) - lo)
    yield ids, np.arange(a, b) - off[ids] + first, lo - a


def _hash_ids(win: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
  """64-bit hashes of the byte strings at ``starts`` (``lens`` bytes each) of a padded buffer.

  An id of at most 8 bytes hashes to a bijective mix (multiply by an odd number, xor-shift,
  MurmurHash3's finaliser) of its zero-padded bytes: as ids hold no NUL, two such ids hash equal
  only if they are equal. Longer ids mix in their length and every further 8-byte word, one
  round per word for all ids at once up to ``_LONG`` bytes; an id longer than that adds the sum
  of its further words' mixes (each mixed with its position), computed in one flat pass over
  those words (:func:`_flat_words`), so the time is linear in the bytes whatever the longest
  id. Equal hashes of ids longer than 8 bytes are checked byte by byte (:func:`_check_equal`)."""
  h = win[starts] & _MASK[np.minimum(lens, 8)]
  rest = np.flatnonzero(lens > 8)
  h[rest] ^= lens[rest].astype(np.uint64) * _K0
  h *= _K1
  h ^= h >> _S29
  j = 8
  while rest.size and j < _LONG:
    left = lens[rest] - j
    x = h[rest] ^ (win[starts[rest] + j] & _MASK[np.minimum(left, 8)])
    x *= _K1
    x ^= x >> _S29
    h[rest] = x
    rest, j = rest[left > 8], j + 8
  if rest.size:  # ids longer than _LONG bytes: their other words in one flat pass
    s, n, tail = starts[rest], lens[rest], np.zeros(rest.size, np.uint64)
    for ids, w, heads in _flat_words(n, j // 8):
      x = _word(win, s[ids], n[ids], w) ^ (w.astype(np.uint64) * _K2)
      x *= _K1
      x ^= x >> _S33
      x *= _K2
      x ^= x >> _S29
      tail[ids[heads]] += np.add.reduceat(x, heads)  # wraps modulo 2**64
    x = h[rest] ^ tail
    x *= _K1
    x ^= x >> _S29
    h[rest] = x
  h ^= h >> _S33
  h *= _K1
  h ^= h >> _S33
  h *= _K2
  h ^= h >> _S33
  return h


def _equal_bytes(win_a: np.ndarray, starts_a: np.ndarray, win_b: np.ndarray,
                 starts_b: np.ndarray, lens: np.ndarray) -> np.ndarray:
  """Whether the strings at ``starts_a`` and ``starts_b`` (both ``lens`` bytes) are equal."""
  equal = np.ones(lens.size, bool)
  rest, j = np.arange(lens.size), 0
  while rest.size and j < _LONG:
    left = lens[rest] - j
    mask = _MASK[np.clip(left, 0, 8)]
    same = (win_a[starts_a[rest] + j] & mask) == (win_b[starts_b[rest] + j] & mask)
    equal[rest[~same]] = False
    rest, j = rest[same & (left > 8)], j + 8
  if rest.size:  # equal so far and longer than _LONG bytes: the other words in one flat pass
    a, b, n = starts_a[rest], starts_b[rest], lens[rest]
    for ids, w, heads in _flat_words(n, j // 8):
      same = _word(win_a, a[ids], n[ids], w) == _word(win_b, b[ids], n[ids], w)
      equal[rest[ids[heads]]] &= np.logical_and.reduceat(same, heads)
  return equal


def _copy_words(dst: np.ndarray, at: np.ndarray, win: np.ndarray, starts: np.ndarray,
                lens: np.ndarray) -> None:
  """Writes the ids at ``starts`` (``lens`` bytes) of the windows ``win`` to the words
  ``dst[at]``, ``dst[at + 1]``, ... (the last one zero-padded): a round per word up to
  ``_LONG`` bytes, the rest of longer ids in one flat pass."""
  dst[at] = win[starts] & _MASK[np.minimum(lens, 8)]
  rest, j = np.flatnonzero(lens > 8), 1
  while rest.size and 8 * j < _LONG:
    left = lens[rest] - 8 * j
    dst[at[rest] + j] = win[starts[rest] + 8 * j] & _MASK[np.minimum(left, 8)]
    rest, j = rest[left > 8], j + 1
  if rest.size:
    a, s, n = at[rest], starts[rest], lens[rest]
    for ids, w, _ in _flat_words(n, j):
      dst[a[ids] + w] = _word(win, s[ids], n[ids], w)


def _index_dtype(n: int) -> type:
  return np.int32 if n < 2**31 - 1 else np.int64


class _Collision(Exception):
  """Two different ids with one 64-bit hash: the reader starts again, comparing ids exactly."""


def _check_equal(win_a: np.ndarray, a_starts: np.ndarray, a_lens: np.ndarray, win_b: np.ndarray,
                 b_starts: np.ndarray, b_lens: np.ndarray) -> None:
  """Raises :class:`_Collision` unless the ids at ``a_starts`` and ``b_starts`` (equal hashes)
  are equal. Ids of at most 8 bytes on both sides are (their hashes are exact): only pairs with
  a longer id are read."""
  long = np.flatnonzero((a_lens > 8) | (b_lens > 8))
  if long.size and not (np.array_equal(a_lens[long], b_lens[long]) and _equal_bytes(
      win_a, a_starts[long], win_b, b_starts[long], a_lens[long]).all()):
    raise _Collision


class _Column:
  """A growing 1-D array (``append``), allocated with room to spare: pages never written cost
  no memory, so a generous first capacity is free."""

  def __init__(self, dtype: Any, capacity: int = 1 << 16) -> None:
    self.a, self.n = np.empty(max(capacity, 16), dtype), 0

  def reserve(self, extra: int) -> np.ndarray:
    if self.n + extra > self.a.size:
      grown = np.empty(max(2 * self.a.size, self.n + extra), self.a.dtype)
      grown[:self.n] = self.a[:self.n]
      self.a = grown
    return self.a

  def append(self, values: np.ndarray) -> None:
    self.reserve(values.size)[self.n:self.n + values.size] = values
    self.n += values.size

  def view(self) -> np.ndarray:
    return self.a[:self.n]


class _Vocab:
  """The ids met so far: id -> code (0, 1, ... in order of first appearance), and the ids
  themselves in :class:`Ids`' layout (8-byte words, each id zero-padded, at least one zero byte
  after it), so the vocabulary is ready when the reading ends.

  Codes come from an open-addressing hash table in NumPy (linear probing, kept at most half
  full, grown four times when needed). A block's ids look at their slots all at once: an id
  whose slot holds its hash has its code; ids meeting an empty slot claim it with a provisional
  code (one claim per slot wins); the others move one slot on. The block's new ids then get the
  next codes in order of their first rows and their bytes are copied to the store. A repeated id
  longer than 8 bytes is compared byte for byte with the stored one (:func:`_check_equal`;
  shorter ids' hashes are exact); after a hash collision the vocabulary continues with a
  Python dict of the ids' bytes (correct, slower).
  """

  def __init__(self, expected: int) -> None:
    self.bits = max(10, (2 * expected).bit_length())  # at most half full
    self.slots = np.zeros(1 << self.bits, np.int32)  # code + 1; 0: empty
    self.hash, self.len = _Column(np.uint64, expected), _Column(np.int32, expected)
    self.woff = _Column(np.int64, expected + 1)
    self.woff.append(np.zeros(1, np.int64))
    self.words = _Column(np.dtype("<u8"), 2 * expected + 2)
    self.n = 0
    self.exact: dict[bytes, int] | None = None

  def _grow(self, need: int) -> None:
    bits = self.bits
    while 2 * need > (1 << bits):
      bits += 2
    if bits == self.bits:
      return
    self.bits, mask = bits, (1 << bits) - 1
    self.slots = np.zeros(1 << bits, np.int32)
    codes = np.arange(self.n)
    slots = (self.hash.view() >> np.uint64(64 - bits)).astype(np.int64)
    while codes.size:  # the codes' hashes are distinct: each finds a slot of its own
      free = self.slots[slots] == 0
      self.slots[slots[free]] = codes[free] + 1
      won = np.zeros(codes.size, bool)
      won[free] = self.slots[slots[free]] == codes[free] + 1
      codes, slots = codes[~won], (slots[~won] + 1) & mask

  def store_windows(self) -> np.ndarray:
    self.words.reserve(2)  # a word of slack after the last id
    return _windows(self.words.a.view(np.uint8))

  def _store(self, win: np.ndarray, starts: np.ndarray, lens: np.ndarray, h: np.ndarray) -> None:
    """Appends new ids (codes ``self.n``, ...) to the store."""
    nw = lens // 8 + 1
    woff = self.woff.a[self.n] + np.cumsum(nw)
    total = int(woff[-1]) if woff.size else int(self.woff.a[self.n])
    words = self.words.reserve(total - self.words.n + 2)
    at = woff - nw
    words[self.words.n:total] = 0
    _copy_words(words, at, win, starts, lens)
    self.words.n = total
    self.woff.append(woff)
    self.hash.append(h)
    self.len.append(lens.astype(np.int32))
    self.n += lens.size

  def add_uncoded(self) -> int:
    """Appends an empty id (no file holds one) without entering it in the hash table; returns
    its code, the one of the documents a judged-only reader leaves uncoded."""
    nothing = np.zeros(1, np.int64)
    self._store(self.store_windows(), nothing, nothing,
                _hash_ids(_windows(np.zeros(_PAD, np.uint8)), nothing, nothing))
    return self.n - 1

  def add(self, buf: np.ndarray, win: np.ndarray, starts: np.ndarray, lens: np.ndarray,
          h: np.ndarray) -> np.ndarray:
    """The codes of the ids at ``starts`` (``lens`` bytes, hashes ``h``) of the padded buffer
    ``buf`` (windows ``win``), giving new ids the next codes."""
    if self.exact is None:
      try:
        return self._add(win, starts, lens, h)
      except _Collision:
        data = self.words.a.view(np.uint8)
        self.exact = {data[8 * o:8 * o + k].tobytes(): i for i, (o, k) in enumerate(zip(
            self.woff.view()[:-1].tolist(), self.len.view().tolist()))}
    return self._add_exactly(buf, win, starts, lens, h)

  def _add(self, win: np.ndarray, starts: np.ndarray, lens: np.ndarray,
           h: np.ndarray) -> np.ndarray:
    n = h.size
    self._grow(self.n + n)
    mask, base = (1 << self.bits) - 1, self.n
    hashes = self.hash.reserve(n)
    codes = np.empty(n, np.int64)
    rows, slots = np.arange(n), (h >> np.uint64(64 - self.bits)).astype(np.int64)
    won_rows, won_slots = [], []
    while rows.size:
      got = self.slots[slots].astype(np.int64) - 1
      empty = np.flatnonzero(got < 0)
      if empty.size:  # claim with a provisional code, base + row: one claim per slot wins
        s, r = slots[empty], rows[empty]
        self.slots[s] = base + r + 1
        won = self.slots[s] == base + r + 1
        hashes[base + r[won]] = h[r[won]]
        won_rows.append(r[won])
        won_slots.append(s[won])
        got[empty[won]] = base + r[won]
        lost = empty[~won]
        got[lost] = self.slots[slots[lost]] - 1
      hit = hashes[got] == h[rows]
      codes[rows[hit]] = got[hit]
      rows, slots = rows[~hit], (slots[~hit] + 1) & mask
    new = codes >= base
    old = np.flatnonzero(~new)  # ids seen before: long ones are compared with the store
    if old.size:
      c = codes[old]
      store = self.store_windows()
      _check_equal(win, starts[old], lens[old], store, 8 * self.woff.a[c], self.len.a[c])
    if not won_rows:
      return codes
    won_r, won_s = np.concatenate(won_rows), np.concatenate(won_slots)
    new = np.flatnonzero(new)
    again = new[codes[new] != base + new]  # a new id's later rows: compared with its first
    if again.size:
      first = codes[again] - base
      _check_equal(win, starts[again], lens[again], win, starts[first], lens[first])
      first_row = np.full(n, n)
      np.minimum.at(first_row, codes[new] - base, new)
      first_row = first_row[won_r]
    else:
      first_row = won_r
    if (first_row[1:] < first_row[:-1]).any():  # codes in order of first appearance
      order = np.argsort(first_row, kind="stable")
      won_r, won_s, first_row = won_r[order], won_s[order], first_row[order]
    final = base + np.arange(won_r.size)
    moved = np.flatnonzero(final != base + won_r)
    if moved.size:
      self.slots[won_s[moved]] = final[moved] + 1
      remap = np.empty(n, np.int64)
      remap[won_r] = final
      codes[new] = remap[codes[new] - base]
    self._store(win, starts[first_row], lens[first_row], h[won_r])
    return codes

  def _add_exactly(self, buf: np.ndarray, win: np.ndarray, starts: np.ndarray, lens: np.ndarray,
                   h: np.ndarray) -> np.ndarray:
    codes = np.empty(h.size, np.int64)
    for i, (s, k) in enumerate(zip(starts.tolist(), lens.tolist())):
      key = buf[s:s + k].tobytes()
      code = self.exact.get(key)
      if code is None:
        code = self.exact[key] = self.n
        self._store(win, starts[i:i + 1], lens[i:i + 1], h[i:i + 1])
      codes[i] = code
    return codes

  def ids(self) -> Ids:
    table = (self.slots, self.bits) if self.exact is None else None
    return Ids(self.words.view(), self.woff.view(), self.len.view(), self.hash.view(), table)


class Ids:
  """A vocabulary: distinct ids (byte strings, shown as ``str``: UTF-8, other bytes as
  U+DC80..U+DCFF by ``surrogateescape``), the values behind a :class:`Run`'s or
  :class:`Qrels`' integer codes, in order of first appearance.

  Stored without a Python object per id: one buffer of 8-byte words, each id zero-padded to
  whole words, with their offsets, byte lengths and 64-bit hashes. ``ids[i]`` and
  :meth:`tolist` give text (``str``); :meth:`index` matches two vocabularies by hash and bytes;
  :meth:`argsort` gives their byte order (trec_eval's ``strcmp``).

  Example:
    >>> from jaxrank import io
    >>> vocab, codes = io.Ids.from_strings(["d2", "d1", "d2", "città"])
    >>> len(vocab), vocab.tolist(), codes.tolist(), vocab[2]
    (3, ['d2', 'd1', 'città'], [0, 1, 0, 2], 'città')
    >>> vocab.index(io.Ids.from_strings(["città", "d3", "d1"])[0]).tolist()
    [2, -1, 1]
    >>> vocab.argsort().tolist()  # 'città' < 'd1' < 'd2'
    [2, 1, 0]
  """

  __slots__ = ("_words", "_woff", "_len", "_hash", "_table")

  def __init__(self, words: np.ndarray, word_offsets: np.ndarray, lengths: np.ndarray,
               hashes: np.ndarray, table: tuple[np.ndarray, int] | None = None) -> None:
    self._words, self._woff, self._len, self._hash = words, word_offsets, lengths, hashes
    self._table = table  # (slots, bits): the hash table that coded the ids, kept for index()

  @classmethod
  def _from_buffer(cls, win: np.ndarray, starts: np.ndarray, lens: np.ndarray,
                   hashes: np.ndarray) -> Ids:
    """The ids at ``starts`` of a padded buffer (its windows ``win``), given their hashes;
    copied a block of ids at a time (small temporaries)."""
    k = lens.size
    woff = np.zeros(k + 1, np.int64)
    np.cumsum(lens // 8 + 1, out=woff[1:])  # at least one zero byte after every id
    words = np.zeros(int(woff[-1]) + 1, np.dtype("<u8"))
    for lo in range(0, k, 1 << 16):
      hi = min(k, lo + (1 << 16))
      _copy_words(words, woff[lo:hi], win, starts[lo:hi], lens[lo:hi])
    return cls(words, woff, lens, hashes)

  @classmethod
  def from_strings(cls, values: Iterable[str]) -> tuple[Ids, np.ndarray]:
    """Factorizes ``values``: ``(vocabulary, codes)`` with ``vocabulary[codes[i]] ==
    values[i]`` (distinct values in order of first appearance).

    Raises ``TypeError`` for a value that is not a ``str`` and ``ValueError`` for one that
    holds a NUL character or a lone surrogate that stands for no byte (see :func:`as_run`): ids
    must be what a TREC file can hold.

    Example:
      >>> from jaxrank import io
      >>> vocab, codes = io.Ids.from_strings(["b", "a", "b"])
      >>> vocab.tolist(), codes.tolist()
      (['b', 'a'], [0, 1, 0])
    """
    values = values if isinstance(values, list) else list(values)
    buf, starts, lens = _encode_ids(values)
    win, step = _windows(buf), 1 << 16
    vocab = _Vocab(len(values))
    codes = np.empty(len(values), _index_dtype(len(values)))
    for lo in range(0, len(values), step):  # as a file's ids: hashed, coded by the hash table
      s, n = starts[lo:lo + step], lens[lo:lo + step]
      codes[lo:lo + s.size] = vocab.add(buf, win, s, n, _hash_ids(win, s, n))
    return vocab.ids(), codes

  @classmethod
  def _from_unique(cls, uniq: list) -> Ids:
    """The vocabulary of distinct strings ``uniq`` (raises :class:`_BadId` for a bad one)."""
    buf, starts, lens = _encode_ids(uniq)
    win = _windows(buf)
    return cls._from_buffer(win, starts, lens, _hash_ids(win, starts, lens))

  def __len__(self) -> int:
    return int(self._len.size)

  def __getitem__(self, i: int) -> str:
    k = len(self)
    if not -k <= i < k:
      raise IndexError(f"id index {i} out of range for a vocabulary of {k} ids")
    start = 8 * int(self._woff[i % k])
    return self._words.view(np.uint8)[start:start + int(self._len[i % k])].tobytes().decode(
        "utf-8", _ERRORS)

  def __iter__(self) -> Iterator[str]:
    return iter(self.tolist())

  def __repr__(self) -> str:
    head = ", ".join(repr(self[i]) for i in range(min(len(self), 3)))
    return f"Ids({len(self)} ids: [{head}{', ...' if len(self) > 3 else ''}])"

  @property
  def lengths(self) -> np.ndarray:
    """Each id's length in bytes."""
    return self._len

  def tolist(self) -> list[str]:
    """The ids as a list of ``str``, in code order."""
    if not len(self):
      return []
    text = self._words.view(np.uint8).tobytes().decode("utf-8", _ERRORS)
    if self._len.min() > 0:  # every id is followed by at least one NUL; padding is NULs
      return list(filter(None, text.split("\x00")))
    data = self._words.view(np.uint8)
    return [data[8 * s:8 * s + n].tobytes().decode("utf-8", _ERRORS)
            for s, n in zip(self._woff[:-1].tolist(), self._len.tolist())]

  def bytes_array(self) -> np.ndarray:
    """The ids as a NumPy byte-string array (``S`` dtype, as wide as the longest id)."""
    width = max(int(self._len.max()) if len(self) else 1, 1)
    words = (width + 7) // 8
    out = np.zeros((len(self), words), np.dtype("<u8"))
    used = (self._len + 7) // 8  # words holding bytes of the id
    rest, j = np.flatnonzero(used), 0
    while rest.size and 8 * j < _LONG:
      out[rest, j] = self._words[self._woff[rest] + j]
      rest, j = rest[used[rest] > j + 1], j + 1
    if rest.size:  # the rest of ids longer than _LONG bytes, in one flat pass
      flat = out.reshape(-1)
      for ids, w, _ in _flat_words(self._len[rest], j):
        r = rest[ids]
        flat[r * words + w] = self._words[self._woff[r] + w]
    return out.view(f"S{8 * words}").reshape(-1).astype(f"S{width}")

  def index(self, other: Ids) -> np.ndarray:
    """For each id of ``other``, its code in this vocabulary, or ``-1`` where it is absent.

    Matches by hash (a hash table built on the smaller vocabulary) and checks every match byte
    for byte; no string is sorted. This is how a run's and a qrels' documents meet:
    ``run.docid_vocab.index(qrels.docid_vocab)[qrels.docid_codes]`` is each judgment's run
    document code (``-1``: not retrieved).

    Example:
      >>> from jaxrank import io
      >>> run = io.read_run(b"q Q0 a 1 2 t\\nq Q0 b 2 1 t\\n")
      >>> qrels = io.read_qrels(b"q 0 b 1\\nq 0 z 1\\n")
      >>> run.docid_vocab.index(qrels.docid_vocab).tolist()
      [1, -1]
    """
    if not isinstance(other, Ids):
      raise TypeError(f"other must be an io.Ids vocabulary, got {type(other).__name__}")
    out = np.full(len(other), -1, np.int64)
    if other is self:
      return np.arange(len(self), dtype=np.int64)
    if not len(self) or not len(other):
      return out
    # Probe the ids of one side into the other's hash table: the table the reader built if
    # there is one, else a new one of the smaller vocabulary.
    if self._table is None and other._table is None:
      small, large = (self, other) if len(self) <= len(other) else (other, self)
      at = _lookup(*_table(small._hash), small._hash, large._hash)
    else:
      small, large = (self, other) if self._table is not None else (other, self)
      at = _lookup(*small._table, small._hash, large._hash)
    found = np.flatnonzero(at >= 0)
    s_rows, l_rows = at[found], found
    try:  # equal hashes: equal ids, unless one is longer than 8 bytes and they differ
      _check_equal(small._windows(), 8 * small._woff[s_rows], small._len[s_rows],
                   large._windows(), 8 * large._woff[l_rows], large._len[l_rows])
    except _Collision:
      return self._index_exactly(other)
    mine, theirs = (s_rows, l_rows) if small is self else (l_rows, s_rows)
    out[theirs] = mine
    return out

  def take(self, codes: Iterable[int] | np.ndarray) -> Ids:
    """The vocabulary of the ids at ``codes`` (distinct), in that order: ``take(c)[i] ==
    self[c[i]]``. Copies their words only (no string is made), so a part of a large vocabulary
    costs what that part holds.

    Example:
      >>> from jaxrank import io
      >>> vocab, _ = io.Ids.from_strings(["a", "bb", "a-long-identifier", "d"])
      >>> vocab.take([2, 0]).tolist()
      ['a-long-identifier', 'a']
    """
    codes = np.asarray(codes, np.int64).reshape(-1)
    if codes.size and (codes.min() < 0 or codes.max() >= len(self)):
      raise IndexError(f"codes must lie in [0, {len(self)}), got values from {codes.min()} to "
                       f"{codes.max()}")
    nw = self._woff[codes + 1] - self._woff[codes]
    woff = np.zeros(codes.size + 1, np.int64)
    np.cumsum(nw, out=woff[1:])
    src = np.repeat(self._woff[:-1][codes] - woff[:-1], nw) + np.arange(int(woff[-1]))
    words = np.zeros(int(woff[-1]) + 1, np.dtype("<u8"))  # a word of slack, as the reader's
    words[:-1] = self._words[src]
    return Ids(words, woff, self._len[codes], self._hash[codes])

  def _joined(self, other: Ids) -> Ids:
    """This vocabulary's ids followed by ``other``'s (codes ``len(self)``, ... for those); the
    caller knows the two share no id. No hash table: :meth:`index` builds one when asked."""
    end = int(self._woff[-1])
    return Ids(np.concatenate([self._words[:end], other._words]),
               np.concatenate([self._woff[:-1], other._woff + end]),
               np.concatenate([self._len, other._len]),
               np.concatenate([self._hash, other._hash]))

  def _index_exactly(self, other: Ids) -> np.ndarray:
    table = {v: i for i, v in enumerate(self.tolist())}
    return np.fromiter((table.get(v, -1) for v in other.tolist()), np.int64, count=len(other))

  def _windows(self) -> np.ndarray:
    """8-byte windows of the store (every id's words lie inside it: no padding needed)."""
    return _windows(self._words.view(np.uint8))

  def byte_rank(self) -> np.ndarray:
    """Each code's position in byte order (the inverse of :meth:`argsort`).

    Example:
      >>> from jaxrank import io
      >>> io.Ids.from_strings(["b", "a", "c"])[0].byte_rank().tolist()
      [1, 0, 2]
    """
    rank = np.empty(len(self), np.int64)
    rank[self.argsort()] = np.arange(len(self))
    return rank

  def argsort(self, codes: np.ndarray | None = None) -> np.ndarray:
    """The codes (default: every code) in byte order of their ids (bytes compared unsigned,
    trec_eval's ``strcmp``; a prefix comes first). Sorts 8-byte words, refining ties word by
    word; only the words of ``codes`` are read, and a few ids still tied are sorted by their
    bytes at once (a long shared prefix costs no round per word).

    Example:
      >>> from jaxrank import io
      >>> vocab, _ = io.Ids.from_strings(["b", "ab", "a", "abcdefghij", "abcdefghi"])
      >>> [vocab[i] for i in vocab.argsort()]
      ['a', 'ab', 'abcdefghi', 'abcdefghij', 'b']
      >>> vocab.argsort([0, 3, 2]).tolist()  # 'a' < 'abcdefghij' < 'b'
      [2, 3, 0]
    """
    codes = (np.arange(len(self), dtype=np.int64) if codes is None
             else np.asarray(codes, np.int64).reshape(-1))
    k = codes.size
    if k < 2:
      return codes.copy()
    start, nw = self._woff[codes], self._woff[codes + 1] - self._woff[codes]

    def words(at):  # big-endian: byte order = numeric order
      return self._words[at].astype(">u8").view(np.uint64)

    first = words(start)
    order = np.argsort(first, kind="stable")
    key = first[order]
    bound = np.ones(k, bool)
    bound[1:] = key[1:] != key[:-1]
    pos, seg = _tied(bound, nw[order], 1)  # positions in order still tied, and their groups
    j = 1
    while pos.size:
      ids = order[pos]
      if pos.size <= _FEW_TIED:  # a few ids tie: Python compares their bytes (memcmp), so a
        data = self._words.view(np.uint8)  # long shared prefix costs no NumPy round per word
        keys = [data[8 * s:8 * s + n].tobytes() for s, n in zip(
            start[ids].tolist(), self._len[codes[ids]].tolist())]
        order[pos] = ids[sorted(range(ids.size), key=lambda i: (seg[i], keys[i]))]
        break
      word = np.where(nw[ids] > j, words(start[ids] + np.minimum(j, nw[ids] - 1)), 0)
      o = np.lexsort((word, seg))
      ids, word, seg = ids[o], word[o], seg[o]
      order[pos] = ids
      new = np.ones(pos.size, bool)
      new[1:] = (word[1:] != word[:-1]) | (seg[1:] != seg[:-1])
      j += 1
      sub, seg = _tied(new, nw[ids], j)
      pos = pos[sub]
    return codes[order]


_FEW_TIED = 256  # Ids.argsort sorts at most this many still tied ids in Python


def _tied(bound: np.ndarray, nw: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray]:
  """Of items in sorted order (groups of equal keys starting where ``bound``; ``nw`` words
  each), those in groups of two or more of which some item has more than ``j`` words: their
  indices and group numbers (increasing)."""
  seg = np.cumsum(bound) - 1
  heads = np.flatnonzero(bound)
  size = np.diff(np.append(heads, bound.size))
  longest = np.maximum.reduceat(nw, heads)
  keep = np.flatnonzero((size[seg] > 1) & (longest[seg] > j))
  return keep, seg[keep]


def _table(keys: np.ndarray) -> tuple[np.ndarray, int]:
  """An open-addressing table (at most half full; slot: row + 1, 0 empty) of distinct uint64
  keys, filled a block of keys at a time."""
  n, step = keys.size, 1 << 16
  bits = max(3, (2 * n).bit_length())
  mask = (1 << bits) - 1
  table = np.zeros(1 << bits, _index_dtype(n + 1))
  for lo in range(0, n, step):  # distinct keys: every row finds an empty slot of its own
    rows = np.arange(lo, min(n, lo + step))
    slots = (keys[rows] >> np.uint64(64 - bits)).astype(np.int64)
    while rows.size:
      empty = table[slots] == 0
      table[slots[empty]] = rows[empty] + 1
      won = np.zeros(rows.size, bool)
      won[empty] = table[slots[empty]] == rows[empty] + 1
      rows, slots = rows[~won], (slots[~won] + 1) & mask
  return table, bits


def _lookup(table: np.ndarray, bits: int, keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
  """For each query, the row of ``keys`` holding it in ``table`` (see :func:`_table`), or -1."""
  mask, step = (1 << bits) - 1, 1 << 16
  out = np.full(queries.size, -1, np.int64)
  for lo in range(0, queries.size, step):
    rows = np.arange(lo, min(queries.size, lo + step))
    slots = (queries[rows] >> np.uint64(64 - bits)).astype(np.int64)
    while rows.size:
      got = table[slots].astype(np.int64) - 1
      live = got >= 0
      hit = np.zeros(rows.size, bool)
      hit[live] = keys[got[live]] == queries[rows[live]]
      out[rows[hit]] = got[hit]
      more = live & ~hit
      rows, slots = rows[more], (slots[more] + 1) & mask
  return out


def _encode_ids(values: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """The bytes of ``values`` (UTF-8, ``surrogateescape``: as a file's ids are decoded) in one
  padded buffer (NUL between them), and each one's start and length; raises :class:`_BadId` for
  a value that is not a ``str``, holds a NUL or a surrogate that does not stand for a byte (one
  outside U+DC80..U+DCFF, or ones whose bytes would read back as other text). One ``join`` and
  one ``encode``: no Python work per value."""
  try:
    text = "\x00".join(values)
  except TypeError:
    raise _BadId(next(i for i, v in enumerate(values) if not isinstance(v, str)),
                 "type") from None
  if text.count("\x00") != max(len(values) - 1, 0):
    raise _BadId(next(i for i, v in enumerate(values) if "\x00" in v), "nul")
  try:
    data = text.encode("utf-8")
  except UnicodeEncodeError:
    data = _escaped_bytes(text)
  buf = _padded(data)
  seps = np.flatnonzero(buf[:len(data)] == 0)
  starts = np.concatenate([[0], seps + 1]) if values else np.zeros(0, np.int64)
  lens = (np.concatenate([seps, [len(data)]]) - starts if values else starts).astype(np.int32)
  return buf, starts, lens


def _escaped_bytes(text: str) -> bytes:
  """``text`` (ids joined by NUL) as bytes, lone surrogates U+DC80..U+DCFF standing for the
  bytes 0x80..0xFF (``surrogateescape``); raises :class:`_BadId` for an id with another
  surrogate, or whose bytes would read back as other text (``'\\udcc3\\udca9'`` is the
  UTF-8 of ``'é'``)."""
  try:
    data = text.encode("utf-8", _ERRORS)
  except UnicodeEncodeError as e:
    raise _BadId(text.count("\x00", 0, e.start), "surrogate") from None
  back = data.decode("utf-8", _ERRORS)
  if back != text:
    at = next((i for i, (a, b) in enumerate(zip(back, text)) if a != b), len(back))
    raise _BadId(back.count("\x00", 0, at), "surrogate")
  return data


class _BadId(Exception):
  """An id that cannot be one: ``reason`` is ``type``, ``nul`` or ``surrogate``."""

  def __init__(self, index: int, reason: str) -> None:
    super().__init__(index, reason)
    self.index, self.reason = index, reason


def _bad_id_message(what: str, value: Any, reason: str, qid: Any = None) -> str:
  where = f" (query {qid!r})" if qid is not None else ""
  if reason == "type":
    return f"{what}s must be strings, got {value!r} of type {type(value).__name__}"
  if reason == "nul":
    return (f"{what} {value!r}{where} contains a NUL character, which no TREC file can hold "
            "(and would make it equal to another id in C tools)")
  return (f"{what} {value!r}{where} is not valid Unicode: it holds a lone surrogate that does "
          "not stand for a byte (an id's bytes that are not UTF-8 read as U+DC80..U+DCFF, "
          "Python's 'surrogateescape'; other surrogates, or ones making valid UTF-8, cannot be "
          "written)")


def _column_ids(values: Any, what: str) -> tuple[np.ndarray, Ids]:
  """Codes and vocabulary of a column of ids given as ``str`` or ``bytes`` (any bytes but NUL,
  decoded as a file's ids are)."""
  vals = values.tolist() if isinstance(values, np.ndarray) else list(values)
  text: dict[Any, str] = {}
  for v in dict.fromkeys(vals):
    if isinstance(v, (bytes, np.bytes_)):
      text[v] = bytes(v).decode("utf-8", _ERRORS)
    elif isinstance(v, str):
      text[v] = v
    else:
      raise TypeError(_bad_id_message(what, v, "type"))
  try:
    vocab, codes = Ids.from_strings([text[v] for v in vals])
  except _BadId as e:
    raise ValueError(_bad_id_message(what, vals[e.index], e.reason)) from None
  return codes, vocab


def _rows_of(codes: np.ndarray | None, vocab: Ids | None, values: Any, what: str):
  if values is not None:
    if codes is not None or vocab is not None:
      raise TypeError(f"give {what} or {what}_codes with {what}_vocab, not both")
    return _column_ids(values, what)
  if codes is None or vocab is None:
    raise TypeError(f"give {what} (ids) or {what}_codes with {what}_vocab")
  if not isinstance(vocab, Ids):
    raise TypeError(f"{what}_vocab must be an io.Ids, got {type(vocab).__name__}")
  codes = np.asarray(codes)
  if codes.ndim != 1 or codes.dtype.kind not in "iu":
    raise TypeError(f"{what}_codes must be a 1-D integer array, got {codes.dtype} with shape "
                    f"{codes.shape}")
  if codes.size and (codes.min() < 0 or codes.max() >= len(vocab)):
    raise ValueError(f"{what}_codes must lie in [0, {len(vocab)}), got values from "
                     f"{codes.min()} to {codes.max()}")
  return codes, vocab


class _Columns:
  """What :class:`Run` and :class:`Qrels` share: codes, vocabularies, the legacy columns."""

  __slots__ = ("qid_codes", "qid_vocab", "docid_codes", "docid_vocab", "_cache")

  def __setattr__(self, name: str, value: Any) -> None:
    raise AttributeError(f"{type(self).__name__} is immutable (cannot set {name!r})")

  def _set(self, **values: Any) -> None:
    for k, v in values.items():
      object.__setattr__(self, k, v)

  def __len__(self) -> int:
    return int(self.qid_codes.shape[0])

  @property
  def qid(self) -> np.ndarray:
    """``[N]`` query ids as byte strings (built on first use from the codes)."""
    if "qid" not in self._cache:
      self._cache["qid"] = self.qid_vocab.bytes_array()[self.qid_codes]
    return self._cache["qid"]

  @property
  def docid(self) -> np.ndarray:
    """``[N]`` document ids as byte strings (built on first use from the codes)."""
    if "docid" not in self._cache:
      self._cache["docid"] = self.docid_vocab.bytes_array()[self.docid_codes]
    return self._cache["docid"]

  def _nested(self, values: list) -> dict:
    qs, ds = self.qid_vocab.tolist(), self.docid_vocab.tolist()
    out: dict[str, dict] = {}
    for q, d, v in zip(map(qs.__getitem__, self.qid_codes.tolist()),
                       map(ds.__getitem__, self.docid_codes.tolist()), values):
      out.setdefault(q, {})[d] = v
    return out


class Run(_Columns):
  """A run in columns, one row per retrieved document (in file order).

  * ``qid_codes``, ``docid_codes``: ``[N]`` int32 codes into ``qid_vocab``, ``docid_vocab``
    (:class:`Ids`, distinct ids in order of first appearance);
  * ``score``: ``[N]`` float64; ``rank``: ``[N]`` int64 (trec_eval ignores it; so does jaxrank's
    evaluation); ``tag``: the run tag of the last line (trec_eval's ``runid``);
  * ``qid``, ``docid``: the same ids as ``[N]`` byte strings (NumPy ``S`` arrays), built
    from the codes on first use, for code written before the codes existed.

  ``Run(qid, docid, score, rank=None, tag="jaxrank")`` takes columns of ids (``str`` or
  ``bytes``); ``Run(qid_codes=..., qid_vocab=..., docid_codes=..., docid_vocab=...,
  score=...)`` takes codes. Immutable. A run's and a qrels' documents meet by code:
  ``run.docid_vocab.index(qrels.docid_vocab)`` maps each qrels document to its run code
  (``-1``: never retrieved), and ``qid_vocab.argsort()`` / ``docid_vocab.argsort()`` give
  trec_eval's byte order of the queries and of the tie-breaking document ids.

  Example:
    >>> from jaxrank import io
    >>> run = io.read_run(b"q1 Q0 d1 1 0.5 mine\\nq1 Q0 d2 2 0.25 mine\\nq2 Q0 d1 1 1 mine\\n")
    >>> len(run), run.tag, run.qid_codes.tolist(), run.docid_codes.tolist()
    (3, 'mine', [0, 0, 1], [0, 1, 0])
    >>> run.qid_vocab.tolist(), run.docid_vocab.tolist(), run.docid.tolist()
    (['q1', 'q2'], ['d1', 'd2'], [b'd1', b'd2', b'd1'])
    >>> run.to_dict()
    {'q1': {'d1': 0.5, 'd2': 0.25}, 'q2': {'d1': 1.0}}
  """

  __slots__ = ("score", "rank", "tag")

  def __init__(self, qid: Any = None, docid: Any = None, score: Any = None, rank: Any = None,
               tag: str = "jaxrank", *, qid_codes: Any = None, qid_vocab: Ids | None = None,
               docid_codes: Any = None, docid_vocab: Ids | None = None) -> None:
    qc, qv = _rows_of(qid_codes, qid_vocab, qid, "qid")
    dc, dv = _rows_of(docid_codes, docid_vocab, docid, "docid")
    score = np.asarray([] if score is None else score, np.float64)
    rank = np.zeros(score.shape, np.int64) if rank is None else np.asarray(rank, np.int64)
    if not (qc.shape == dc.shape == score.shape == rank.shape) or score.ndim != 1:
      raise ValueError(f"Run columns must be 1-D of one length, got qid {qc.shape}, docid "
                       f"{dc.shape}, score {score.shape}, rank {rank.shape}")
    if not isinstance(tag, str):
      raise TypeError(f"tag must be a str, got {type(tag).__name__}")
    self._set(qid_codes=qc, qid_vocab=qv, docid_codes=dc, docid_vocab=dv, score=score,
              rank=rank, tag=tag, _cache={})

  def __repr__(self) -> str:
    return (f"Run({len(self)} rows, {len(self.qid_vocab)} queries, {len(self.docid_vocab)} "
            f"documents, tag={self.tag!r})")

  def to_dict(self) -> dict[str, dict[str, float]]:
    """``{qid: {docid: score}}`` (pytrec_eval's run form)."""
    return self._nested(self.score.tolist())


class Qrels(_Columns):
  """Relevance judgments in columns, one row per judgment (in file order).

  ``qid_codes``, ``docid_codes``, ``qid_vocab``, ``docid_vocab``, ``qid``, ``docid``: as in
  :class:`Run`; ``rel``: ``[N]`` int64 grades. ``Qrels(qid, docid, rel)`` takes columns of
  ids; ``Qrels(qid_codes=..., qid_vocab=..., docid_codes=..., docid_vocab=..., rel=...)``
  codes. To find each judgment's document in a run:
  ``run.docid_vocab.index(qrels.docid_vocab)[qrels.docid_codes]`` (``-1``: not retrieved).

  Example:
    >>> from jaxrank import io
    >>> qrels = io.read_qrels(b"q1 0 d1 2\\nq1 0 d2 0\\n")
    >>> len(qrels), qrels.rel.tolist(), qrels.to_dict()
    (2, [2, 0], {'q1': {'d1': 2, 'd2': 0}})
  """

  __slots__ = ("rel",)

  def __init__(self, qid: Any = None, docid: Any = None, rel: Any = None, *,
               qid_codes: Any = None, qid_vocab: Ids | None = None, docid_codes: Any = None,
               docid_vocab: Ids | None = None) -> None:
    qc, qv = _rows_of(qid_codes, qid_vocab, qid, "qid")
    dc, dv = _rows_of(docid_codes, docid_vocab, docid, "docid")
    rel = np.asarray([] if rel is None else rel)
    if rel.size and rel.dtype.kind not in "iub":
      raise TypeError(f"rel must hold integer grades, got dtype {rel.dtype}")
    rel = rel.astype(np.int64)
    if not (qc.shape == dc.shape == rel.shape) or rel.ndim != 1:
      raise ValueError(f"Qrels columns must be 1-D of one length, got qid {qc.shape}, docid "
                       f"{dc.shape}, rel {rel.shape}")
    self._set(qid_codes=qc, qid_vocab=qv, docid_codes=dc, docid_vocab=dv, rel=rel, _cache={})

  def __repr__(self) -> str:
    return (f"Qrels({len(self)} judgments, {len(self.qid_vocab)} queries, "
            f"{len(self.docid_vocab)} documents)")

  def to_dict(self) -> dict[str, dict[str, int]]:
    """``{qid: {docid: grade}}`` (pytrec_eval's qrels form)."""
    return self._nested(self.rel.tolist())


# ----------------------------------------------------------------------------------------------
# Reading: the bytes of a file, then blocks of whole lines split into fields with NumPy.

_BLOCK = 1 << 20  # bytes per block: the working set of one block stays in the CPU's cache
_POW10 = np.array([10**i for i in range(20)], np.uint64)
_POW10_F = np.array([10.0**i for i in range(23)])  # exact doubles
_EXTENDED = np.finfo(np.longdouble).nmant >= 63  # x86's 80-bit long double (or wider)
_POW10_L = np.cumprod(np.r_[np.longdouble(1), np.full(27, 10, np.longdouble)])  # exact to 1e27
_NAMES = {"-": "<stdin>"}


def _open(path: PathLike | bytes, name: str | None) -> tuple[Any, str, Any]:
  """A binary file object reading the content (gzip decompressed), the name for messages, and
  what closes it. A missing file fails here, at once."""
  if isinstance(path, (bytes, bytearray, memoryview)):
    f, name, close = BytesIO(bytes(path)), name or "<bytes>", None
  else:
    path = os.fspath(path)
    name = name or _NAMES.get(path, path)
    if path == "-":
      f, close = sys.stdin.buffer, None
    else:
      try:
        f = open(path, "rb")  # noqa: SIM115 - closed by the caller
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
  if head == b"\x1f\x8b":
    import gzip
    f = gzip.GzipFile(fileobj=f, mode="rb")
  return f, name, close


def _fill(f: Any, view: memoryview, name: str) -> int:
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
    ends = np.flatnonzero(_line_ends(buf[start:w], int(buf[w])))
    if ends.size:
      return start + int(ends[-1]) + 1
    w, step = start, 2 * step
  return lo


def _blocks(f: Any, name: str, buffers: int = 1) -> Iterator[tuple[np.ndarray, int, int]]:
  """The content in blocks of whole lines, ``(buffer, lo, hi)``: lines ``buffer[lo:hi]``, the
  byte after them readable (zero padding at the end). ``buffers`` buffers of about 2 MB are
  used in turn, so a block stays valid until ``buffers - 1`` more were read (a line longer than
  a block grows its buffer); a UTF-8 BOM at the start is skipped."""
  pool = [np.zeros(2 * _BLOCK + _PAD, np.uint8) for _ in range(buffers)]
  buf, turn = pool[0], 0
  carry, first, eof = 0, True, False
  floor = 0  # the carried bytes below it hold no line end
  while not eof:
    if buf.size < carry + _BLOCK + _PAD:  # a long line: a larger buffer
      grown = np.zeros(2 * (carry + _BLOCK) + _PAD, np.uint8)
      grown[:carry] = buf[:carry]
      buf = grown
    got = _fill(f, memoryview(buf)[carry:carry + _BLOCK], name)
    eof, end = got == 0, carry + got
    buf[end:end + _PAD] = 0
    lo = 0
    if first:
      if end < 3 and not eof:
        carry = end
        continue
      first = False
      lo = 3 if bytes(buf[:3]) == codecs.BOM_UTF8 and end >= 3 else 0
    hi = end if eof else _last_line_end(buf, lo, end, floor)
    yielded = hi > lo
    if yielded:
      yield buf, lo, hi
    carry = end - hi
    floor = max(carry - 1, 0)  # all but a last CR (its LF may follow) was searched
    if buffers > 1 and yielded:  # the next buffer: this one's block may still be in use
      turn = (turn + 1) % buffers
      nxt = pool[turn]
      if nxt.size < carry + _BLOCK + _PAD:
        nxt = pool[turn] = np.zeros(2 * (carry + _BLOCK) + _PAD, np.uint8)
      nxt[:carry] = buf[hi:end]
      buf = nxt
    elif hi:  # (hi == 0: a line longer than the data read so far stays where it is)
      buf[:carry] = buf[hi:end].copy()


def _line_ends(c: np.ndarray, after: int) -> np.ndarray:
  """Whether each byte of ``c`` ends a line: LF, or CR not followed by LF (``after`` is the
  byte after ``c``)."""
  lf = c == 10
  cr = c == 13
  if not cr.any():
    return lf
  nxt = np.empty_like(c)
  nxt[:-1], nxt[-1] = c[1:], after
  return lf | (cr & (nxt != 10))


class _Format:
  """One file format: its fields per line (at least ``min``; exactly ``max`` unless None), the
  name of its integer field (the 4th) in messages, and its float field (None for qrels). The
  ids are the 1st and 3rd fields."""

  def __init__(self, min_fields: int, max_fields: int | None, int_name: str,
               float_field: int | None) -> None:
    self.min, self.max, self.int_name, self.float_field = (min_fields, max_fields, int_name,
                                                           float_field)


_RUN = _Format(6, None, "the rank (4th field)", 4)
_QRELS = _Format(4, 4, "the relevance (4th field)", None)
_SCORE = "the score (5th field)"


def _text(buf: np.ndarray, start: int, n: int) -> str:
  return buf[start:start + n].tobytes().decode(errors="replace")


# SWAR ("SIMD within a register"): eight bytes of a field at once, as one uint64 (little-endian:
# the field's first byte is the lowest).
_W_ONES = np.uint64(0x0101010101010101)
_W_HIGH = np.uint64(0x8080808080808080)
_W_ZERO = np.uint64(0x3030303030303030)  # "00000000"
_W_F0 = np.uint64(0xF0F0F0F0F0F0F0F0)
_W_SIX = np.uint64(0x0606060606060606)
_W_CASE = np.uint64(0x2020202020202020)  # | lower-cases ASCII letters
_W_DOT = np.uint64(0x2E2E2E2E2E2E2E2E)
_W_E = np.uint64(0x6565656565656565)
_W_INF, _W_NAN, _W_INFINITY = (np.uint64(int.from_bytes(w, "little"))
                               for w in (b"inf", b"nan", b"infinity"))
_ZERO_FILL = np.array([0x3030303030303030 & ((1 << (8 * m)) - 1) for m in range(9)], np.uint64)
_LANES = (np.uint64(0x00FF00FF00FF00FF), np.uint64(0x0000FFFF0000FFFF), np.uint64(0xFFFFFFFF))


def _eight_digits(w: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """The values of the ``k`` (0-8) ASCII digits in the low bytes of ``w`` (zeros above them),
  and whether they all are digits: right-aligned and '0'-filled, checked bytewise, then summed
  in lanes of 2, 4 and 8 digits (three multiply-adds)."""
  x = (w << ((8 - k) * 8).astype(np.uint64)) | _ZERO_FILL[8 - k]
  ok = ((x & _W_F0) == _W_ZERO) & (((x + _W_SIX) & _W_F0) == _W_ZERO)
  x -= _W_ZERO
  x = (x * np.uint64(10) + (x >> np.uint64(8))) & _LANES[0]
  x = (x * np.uint64(100) + (x >> np.uint64(16))) & _LANES[1]
  x = (x * np.uint64(10000) + (x >> np.uint64(32))) & _LANES[2]
  return x, ok


def _digit_run(win: np.ndarray, starts: np.ndarray, k: np.ndarray) -> tuple[np.ndarray,
                                                                            np.ndarray]:
  """Values (uint64) of the ``k``-digit strings (``k`` <= 19) at ``starts``, and whether they
  are all digits; the last 8 digits, the 8 before, and up to 3 before those."""
  low = np.minimum(k, 8)
  v, ok = _eight_digits(win[starts + k - low] & _MASK[low], low)
  more = np.flatnonzero(k > 8)
  if more.size:
    s, km = starts[more], k[more]
    mid = np.minimum(km - 8, 8)
    vm, okm = _eight_digits(win[s + km - 8 - mid] & _MASK[mid], mid)
    top = np.maximum(km - 16, 0)
    vt, okt = _eight_digits(win[s] & _MASK[top], top)
    v[more] += vm * np.uint64(10**8) + vt * np.uint64(10**16)
    ok[more] &= okm & okt
  return v, ok


def _first_byte(win: np.ndarray, starts: np.ndarray, lens: np.ndarray, pattern: np.uint64,
                fold: bool = False) -> np.ndarray:
  """The position of the first byte equal to ``pattern``'s (after lower-casing if ``fold``)
  in each field, or the field's length: a zero byte of ``w ^ pattern`` found by the borrow
  trick, its place by the exponent of the lowest set bit."""
  pos = lens.astype(np.int64)
  rest, j = np.flatnonzero(lens > 0), 0
  while rest.size:
    left = lens[rest] - j
    w = win[starts[rest] + j]
    x = (w | _W_CASE if fold else w) ^ pattern
    z = (x - _W_ONES) & ~x & _W_HIGH & _MASK[np.minimum(left, 8)]
    found = z != 0
    if found.any():
      bit = np.frexp((z[found] & (~z[found] + np.uint64(1))).astype(np.float64))[1]
      pos[rest[found]] = j + (bit - 8) // 8
    rest, j = rest[~found & (left > 8)], j + 8
  return pos


def _sign(win: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray,
                                                                          np.ndarray]:
  first = win[starts] & np.uint64(0xFF)
  neg = (first == 45) & (lens > 0)
  return neg, neg | ((first == 43) & (lens > 0))


def _parse_ints(buf: np.ndarray, win: np.ndarray, starts: np.ndarray,
                lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """int64 values of ``[+-]digits`` fields, and a status per field (0 ok, 1 not an integer,
  2 outside int64's range). Up to 8 unsigned digits (ranks, grades) take one 8-byte word."""
  w = win[starts] & _MASK[np.clip(lens, 0, 8)]
  v, ok = _eight_digits(w, np.clip(lens, 0, 8))
  ok &= (lens >= 1) & (lens <= 8)
  values = v.view(np.int64)
  status = np.where(ok, 0, 1).astype(np.int8)
  rest = np.flatnonzero(~ok)
  if rest.size:  # signs, more digits
    s, n = starts[rest], lens[rest]
    neg, signed = _sign(win, s, n)
    k = n - signed
    fits = (k >= 1) & (k <= 19)
    v, ok = _digit_run(win, s + signed, np.where(fits, k, 0))
    in_range = v <= np.where(neg, 2**63, 2**63 - 1).astype(np.uint64)
    values[rest] = np.where(neg, np.uint64(0) - v, v).view(np.int64)
    status[rest] = np.where(ok & fits, np.where(in_range, 0, 2), 1)
    for i in rest[k > 19].tolist():  # leading zeros, or too big
      text = buf[starts[i]:starts[i] + lens[i]].tobytes()
      body = text[1:] if text[:1] in (b"+", b"-") else text
      if not (body.isdigit() and body.isascii()):
        status[i] = 1
      elif -2**63 <= int(text) < 2**63:
        values[i], status[i] = int(text), 0
      else:
        status[i] = 2
  return values, status


def _decimal_value(m: np.ndarray, e: np.ndarray, neg: np.ndarray, slow_text) -> np.ndarray:
  """``-+m * 10**e`` correctly rounded (``m`` < 10**19 uint64, ``e`` int64): Clinger's fast path
  in doubles for ``m <= 2**53``, ``|e| <= 22`` (both factors exact, one rounding); x86's 80-bit
  long double for ``|e| <= 27`` unless its result lies exactly halfway between two doubles
  (then a second rounding could differ); Python's parser (``slow_text(i)``) for the rest."""
  v = np.zeros(m.size)
  zero = m == 0
  fast = ~zero & (m <= 2**53) & (np.abs(e) <= 22)
  mf, p = m.astype(np.float64), _POW10_F[np.clip(np.abs(e), 0, 22)]
  v[fast] = np.where(e >= 0, mf * p, mf / p)[fast]
  slow = ~zero & ~fast
  if _EXTENDED and slow.any():
    ext = np.flatnonzero(slow & (np.abs(e) <= 27))
    ml, pl = m[ext].astype(np.longdouble), _POW10_L[np.abs(e[ext])]
    q = np.where(e[ext] >= 0, ml * pl, ml / pl)
    d = q.astype(np.float64)
    r = np.abs(q - d.astype(np.longdouble))
    half = np.spacing(d).astype(np.longdouble) / 2
    exact = (r != half) & (r != half / 2)
    v[ext[exact]] = d[exact]
    slow[ext[exact]] = False
  v = np.where(neg, -v, v)
  for i in np.flatnonzero(slow).tolist():
    v[i] = slow_text(i)
  return v


def _parse_floats(buf: np.ndarray, win: np.ndarray, starts: np.ndarray,
                  lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """float64 values of C-syntax numbers (see the module docstring) and a status per field (0
  ok, 1 not a number, 2 NaN). Fields of at most 8 bytes after the sign with at most one dot
  (``0.850620``, ``-12.5``, ``17``) take one 8-byte word: the dot found by the borrow trick,
  the bytes after it shifted down over it, the digits read at once (:func:`_eight_digits`),
  ``M / 10**digits after the dot`` (exact: Clinger). Other decimals ``[+-]I[.F][e[+-]X]``,
  ``I`` and ``F`` up to 19 digits together and ``X`` up to 5, read each part so
  (:func:`_decimal_parts`); ``inf``, ``infinity`` and ``nan`` (any case) by comparing words;
  anything else (more digits, longer exponents, not a number) one by one by
  :func:`_python_float`."""
  neg, signed = _sign(win, starts, lens)
  s, n = starts + signed, lens - signed
  values = np.zeros(lens.size)
  ok = (n >= 1) & (n <= 8)
  w = win[s] & _MASK[np.clip(n, 0, 8)]
  x = w ^ _W_DOT
  z = (x - _W_ONES) & ~x & _W_HIGH & _MASK[np.clip(n, 0, 8)]
  has_dot = z != 0
  dot = np.where(has_dot, (np.frexp((z & (~z + np.uint64(1))).astype(np.float64))[1] - 8) // 8,
                 n).astype(np.int64)
  low = _MASK[np.clip(dot, 0, 8)]
  digits = np.where(has_dot, (w & low) | ((w >> np.uint64(8)) & ~low), w)
  k = np.where(has_dot, n - 1, n)
  m, good = _eight_digits(digits, np.clip(k, 0, 8))
  ok &= good & (k >= 1)
  nf = np.where(has_dot, n - 1 - dot, 0)
  v = m.astype(np.float64) / _POW10_F[np.clip(nf, 0, 8)]
  values[ok] = np.where(neg, -v, v)[ok]
  status = np.zeros(lens.size, np.int8)
  rest = np.flatnonzero(~ok)
  if rest.size:
    values[rest], status[rest] = _decimal_parts(buf, win, starts[rest], lens[rest], neg[rest],
                                                s[rest], n[rest])
  return values, status


def _decimal_parts(buf: np.ndarray, win: np.ndarray, starts: np.ndarray, lens: np.ndarray,
                   neg: np.ndarray, s: np.ndarray, n: np.ndarray) -> tuple[np.ndarray,
                                                                           np.ndarray]:
  """:func:`_parse_floats` for the fields its one-word path left (``s``, ``n``: after the
  sign): the integer, fraction and exponent digits found and read separately."""
  epos = _first_byte(win, s, n, _W_E, fold=True)
  dot = _first_byte(win, s, epos, _W_DOT)
  has_dot, has_e = dot < epos, epos < n
  ni, nf = dot, np.where(has_dot, epos - dot - 1, 0)
  es = s + epos + 1
  eneg, esigned = _sign(win, es, np.where(has_e, n - epos - 1, 0))
  ek = np.where(has_e, n - epos - 1 - esigned, 0)
  ok = (ni + nf >= 1) & (ni <= 19) & (nf <= 19) & (~has_e | ((ek >= 1) & (ek <= 5)))
  vi, oki = _digit_run(win, s, np.where(ok, ni, 0))
  vf, okf = _digit_run(win, s + dot + 1, np.where(ok, nf, 0))
  vx, okx = _digit_run(win, es + esigned, np.where(ok, ek, 0))
  ok &= oki & okf & okx & ((ni + nf <= 19) | (vi == 0))  # M below 10**19
  nf = np.where(ok, nf, 0)
  x = vx.astype(np.int64)
  e = np.where(eneg, -x, x) - nf
  m = np.where(ok, vi * _POW10[nf] + vf, 0)
  values = _decimal_value(m, np.where(ok, e, 0), neg, lambda i: float(
      buf[starts[i]:starts[i] + lens[i]].tobytes()))
  status = np.zeros(lens.size, np.int8)
  rest = np.flatnonzero(~ok)
  if rest.size:
    word = (win[s[rest]] | _W_CASE) & _MASK[np.clip(n[rest], 0, 8)]
    inf = ((n[rest] == 3) & (word == _W_INF)) | ((n[rest] == 8) & (word == _W_INFINITY))
    nan = (n[rest] == 3) & (word == _W_NAN)
    values[rest[inf]] = np.where(neg[rest[inf]], -np.inf, np.inf)
    status[rest[nan]] = 2
    for i in rest[~inf & ~nan].tolist():  # longer numbers, or not numbers: one by one
      values[i], status[i] = _python_float(buf[starts[i]:starts[i] + lens[i]].tobytes())
  return values, status


_DECIMAL = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")  # C's syntax


def _python_float(text: bytes) -> tuple[float, int]:
  """``(value, status)`` of one field (status 0 ok, 1 not a number, 2 NaN), read by Python's
  correctly rounded parser once the field is known to be in C's syntax."""
  if _DECIMAL.fullmatch(text):
    return float(text), 0
  signed = text[:1] in (b"+", b"-")
  body = (text[1:] if signed else text).lower()
  if body in (b"inf", b"infinity"):
    return (-np.inf if text[:1] == b"-" else np.inf), 0
  return (np.nan, 2) if body == b"nan" else (0.0, 1)


def _pythonic(text: str, integer: bool) -> bool:
  """Whether Python's ``int``/``float`` would accept ``text`` (which C's syntax does not)."""
  try:
    (int if integer else float)(text)
  except ValueError:
    return False
  return True


def _regular_fields(c: np.ndarray, eol: np.ndarray, nlines: int, nf: int,
                    lo: int) -> tuple[list, list] | None:
  """Field bounds (lists of start and end arrays, one per field, in the buffer) when every line
  of the block ``c`` (at ``lo``) is ``nf`` non-empty fields joined by single spaces with an LF
  at its end (the common file: the caller checked that no byte below 32 but LF occurs), else
  None."""
  sp = np.flatnonzero(c == 32)
  if not nlines or sp.size != (nf - 1) * nlines or (np.diff(sp) < 2).any():
    return None
  sp = sp.reshape(nlines, nf - 1)
  line_end = np.empty(nlines, np.int64)
  line_end[:eol.size] = eol[:nlines]
  line_end[eol.size:] = c.size  # a last line without LF (end of the data)
  line_start = np.zeros(nlines, np.int64)
  line_start[1:] = line_end[:-1] + 1
  if not ((sp[:, 0] > line_start).all() and (sp[:, -1] + 1 < line_end).all() and
          (c[line_start] != 35).all()):
    return None
  starts = [line_start + lo] + [sp[:, j] + (lo + 1) for j in range(nf - 1)]
  ends = [sp[:, j] + lo for j in range(nf - 1)] + [line_end + lo]
  return starts, ends


class _Block:
  """The data lines of one block: per row the query and document ids (start, length, hash in
  the buffer), the integer and float columns and the line (0-based, in the block); and the
  number of line ends in the block."""

  __slots__ = ("buf", "win", "n", "lines", "q_start", "q_len", "q_hash", "d_start", "d_len",
               "d_hash", "ints", "floats", "nlines", "nbytes", "judged")

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
        return self.buf[start:stop].tobytes().split()[2].decode("utf-8", _ERRORS)
      stop, step = stop + c.size, 2 * step  # a long tag: steps grow, the time stays linear


def _split_block(buf: np.ndarray, lo: int, hi: int, fmt: _Format, name: str,
                 line0: int) -> _Block:
  """Splits the whole lines ``buf[lo:hi]`` (``line0`` lines before them) into a :class:`_Block`.
  Raises :class:`TrecFormatError` for the block's first bad line (encoding problems first
  within a line).

  A block of regular lines (single spaces, LF, a fixed number of fields) is split by the
  positions of its spaces (:func:`_regular_fields`); any other by the edges of its whitespace
  runs. Both give the same fields."""
  win = _windows(buf)
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
    eol_mask = _line_ends(c, int(buf[hi]))
    eol = np.flatnonzero(eol_mask)
    nlines = eol.size + int(c.size > 0 and not eol_mask[-1])

  def line_col(p: int) -> tuple[int, int]:
    at = int(np.searchsorted(eol, p))
    return at, p - (int(eol[at - 1]) + 1 if at else 0) + 1

  if regular is not None:
    starts, ends = regular
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
    tok = first[lines]
    starts = [t_starts[tok + j] for j in range(need)]
    ends = [t_ends[tok + j] for j in range(need)]

  def number(field: int, parse, what: str, messages: dict[int, str]) -> np.ndarray:
    s = starts[field]
    n = ends[field] - s
    values, status = parse(buf, win, s, n)
    if status.any():
      i = int(np.flatnonzero(status)[0])
      text = _text(buf, int(s[i]), int(n[i]))
      if status[i] == 1 and _pythonic(text, parse is _parse_ints):
        status[i] = 3  # Python would read it (1_000, full-width digits): say which syntax
      errors.append((int(lines[i]), 1, f"{what} {messages[int(status[i])]}, got {text!r}" +
                     (" (NaN has no order)" if status[i] == 2 and parse is _parse_floats else
                      "")))
    return values

  ints = number(3, _parse_ints, fmt.int_name,
                {1: "must be an integer", 2: f"must be an integer {INT64_RANGE}",
                 3: "must be an integer in C syntax ([+-]digits)"})
  floats = None if fmt.float_field is None else number(fmt.float_field, _parse_floats, _SCORE, {
      1: "must be a number", 2: "must be a number",
      3: "must be a number in C syntax ([+-]digits[.digits][e[+-]digits], or inf)"})
  if errors:
    at, _, message = min(errors)
    raise TrecFormatError(f"{name}:{line0 + at + 1}: {message}")
  b = _Block()
  b.buf, b.win, b.n, b.lines, b.nlines = buf, win, lines.size, lines, int(eol.size)
  b.nbytes = hi - lo
  b.ints, b.floats = ints, floats
  for key, field in (("q", 0), ("d", 2)):
    s, n = starts[field], ends[field] - starts[field]
    setattr(b, key + "_start", s)
    setattr(b, key + "_len", n)
    setattr(b, key + "_hash", _hash_ids(win, s, n))
  return b


class _Builder:
  """The rows of a run or qrels being read (appended a block, or part of one, at a time): codes
  into two :class:`_Vocab` s, and the integer and float columns."""

  def __init__(self, fmt: _Format, rows: int, *, lines: bool = False,
               keep_ints: bool = True) -> None:
    self.fmt, self.rows = fmt, rows
    self.q, self.d = _Vocab(1024), None
    self.q_codes, self.d_codes = _Column(np.int32, rows), _Column(np.int32, rows)
    self.ints = _Column(np.int64, rows) if keep_ints else None
    self.floats = _Column(np.float64, rows) if fmt.float_field is not None else None
    self.lines = _Column(np.int64, rows) if lines else None
    self.tag, self.last_q = "jaxrank", None  # the last row's tag and query hash

  def __len__(self) -> int:
    return self.q_codes.n

  def add(self, b: _Block, lo: int, hi: int, line0: int, expected_docs: int) -> None:
    """Appends rows ``lo:hi`` of block ``b`` (which starts after ``line0`` lines)."""
    if hi <= lo:
      return
    if self.d is None:
      self.d = _Vocab(expected_docs)
    if self.q_codes.n + hi - lo > 2**31 - 1:
      raise ValueError("more than 2**31 - 1 lines: not supported")
    s, n, h = b.q_start[lo:hi], b.q_len[lo:hi], b.q_hash[lo:hi]
    same = np.flatnonzero(h[1:] == h[:-1]) + 1  # a query's lines come together: streaks
    try:
      _check_equal(b.win, s[same], n[same], b.win, s[same - 1], n[same - 1])
    except _Collision:  # two queries' ids with one hash: the vocabulary sorts it out
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
      self.floats.append(b.floats[lo:hi])
      self.tag = b.tag(hi - 1)
    if self.lines is not None:
      self.lines.append(b.lines[lo:hi] + line0)
    self.last_q = h[-1]

  def _doc_codes(self, b: _Block, lo: int, hi: int, q_codes: np.ndarray) -> np.ndarray:
    """The codes of rows ``lo:hi``'s documents (``q_codes``: their queries')."""
    return self.d.add(b.buf, b.win, b.d_start[lo:hi], b.d_len[lo:hi], b.d_hash[lo:hi])

  def _vocab(self, key: str) -> Ids:
    vocab = getattr(self, key)
    return vocab.ids() if vocab is not None else Ids.from_strings([])[0]

  def run(self) -> Run:
    return Run(qid_codes=self.q_codes.view(), qid_vocab=self._vocab("q"),
               docid_codes=self.d_codes.view(), docid_vocab=self._vocab("d"),
               score=self.floats.view(), rank=None if self.ints is None else self.ints.view(),
               tag=self.tag)

  def qrels(self) -> Qrels:
    return Qrels(qid_codes=self.q_codes.view(), qid_vocab=self._vocab("q"),
                 docid_codes=self.d_codes.view(), docid_vocab=self._vocab("d"),
                 rel=self.ints.view())


class NeedsFullRead(Exception):
  """Internal: :func:`iter_judged_run_chunks` met what only the full reader handles exactly (a
  query whose lines are not together, a query listing a document twice, equal hashes of two
  ids). The caller reads the run with :func:`read_run` or :func:`iter_run_chunks` instead,
  which evaluates or reports it."""


_MIX = np.uint64(0xD6E8FEB86659FD93)  # an odd constant mixing a query code into a key
_FILTER_BITS = 25  # the judged documents' bitmap: 2**25 bits, 4 MB
_BUCKET_BITS = 17  # buckets counting a block's keys (1 MB of counts)


def _repeated(keys: np.ndarray) -> np.ndarray:
  """A mask of the ``keys`` that may occur twice: those sharing a bucket with another key in
  each of two bucketings (2**17 buckets by the top bits of two multiplicative mixes). Every
  repeated key is in it, and a few percent of the others (fewer than 1% in a block)."""
  may = np.ones(keys.size, bool)
  for mix in (_MIX, _K1):
    bucket = ((keys * mix) >> np.uint64(64 - _BUCKET_BITS)).astype(np.intp)
    may &= np.bincount(bucket, minlength=1 << _BUCKET_BITS)[bucket] > 1
  return may


def _score_keys(scores: np.ndarray, qk: np.ndarray) -> np.ndarray:
  """Keys equal for two rows of one query (``qk``: their query codes times ``_MIX``) whose
  scores tie as float32, a superset of float64's ties (-0.0 ties with 0.0)."""
  f32 = scores.astype(np.float32)
  f32 += np.float32(0.0)
  return f32.view(np.uint32).astype(np.uint64) ^ qk


class _Judged:
  """The documents of a qrels, to look a run's up in: their hash table and a bitmap of their
  hashes' top bits (a few percent full: most documents of a large run are judged for no query,
  and one look at 4 MB rules them out before the table)."""

  def __init__(self, vocab: Ids) -> None:
    if not len(vocab):  # nothing judged: a table with no id
      vocab = Ids.from_strings([])[0]
    if vocab._table is None:  # the qrels' ids collided: no table to look them up in
      raise NeedsFullRead("the qrels' document ids have equal hashes")
    self.vocab, (self.table, self.bits) = vocab, vocab._table
    self.win = vocab._windows() if vocab._words.size else _windows(np.zeros(_PAD, np.uint8))
    self.filter = np.zeros(1 << (_FILTER_BITS - 3), np.uint8)
    for lo in range(0, len(vocab), 1 << 20):  # a slice at a time: temporaries stay small
      top = vocab._hash[lo:lo + (1 << 20)] >> np.uint64(64 - _FILTER_BITS)
      np.bitwise_or.at(self.filter, (top >> np.uint64(3)).astype(np.intp),
                       np.left_shift(np.uint8(1), (top & np.uint64(7)).astype(np.uint8)))

  def rows_of(self, win: np.ndarray, starts: np.ndarray, lens: np.ndarray,
              h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, codes)``: the indices of the ids at ``starts`` (``lens`` bytes, hashes ``h``)
    of the windows ``win`` that are judged, checked byte for byte, and their codes in the
    qrels' vocabulary."""
    top = h >> np.uint64(64 - _FILTER_BITS)
    maybe = np.flatnonzero((self.filter[(top >> np.uint64(3)).astype(np.intp)] >> (
        top & np.uint64(7)).astype(np.uint8)) & np.uint8(1))
    v = self.vocab
    at = _lookup(self.table, self.bits, v._hash, h[maybe])
    found = at >= 0
    hit, at = maybe[found], at[found]
    try:
      _check_equal(win, starts[hit], lens[hit], self.win, 8 * v._woff[at], v._len[at])
    except _Collision:
      raise NeedsFullRead("a document id's hash equals a judged one's") from None
    return hit, at

  def code(self, buf: np.ndarray, win: np.ndarray, starts: np.ndarray, lens: np.ndarray,
           h: np.ndarray, keep: np.ndarray, own: _Vocab,
           found: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Codes of the ids at ``starts`` of the padded buffer ``buf`` (windows ``win``; as
    :meth:`rows_of`, whose result ``found`` is if given) that a judged-only reader codes:
    the judged ones (their qrels code: no table insert) and the others where ``keep`` (``n +``
    their code in ``own``, ``n`` the qrels' number of documents); -1 for the rest. A document
    is judged or not wherever it occurs, so it gets one code. ``keep`` is cleared at the judged
    rows. :meth:`vocabulary` makes them codes of one :class:`Ids`."""
    codes = np.full(h.size, -1, np.int64)
    hit, at = self.rows_of(win, starts, lens, h) if found is None else found
    codes[hit] = at
    keep[hit] = False
    rest = np.flatnonzero(keep)
    if rest.size:
      codes[rest] = len(self.vocab) + own.add(buf, win, starts[rest], lens[rest], h[rest])
    return codes

  def vocabulary(self, codes: np.ndarray, own: _Vocab) -> Ids:
    """Turns the codes from :meth:`code` (in place; -1 becomes the code of an empty id, the
    last of the vocabulary) into codes of the returned vocabulary: the judged documents used,
    in qrels order, then ``own``'s, then the empty id."""
    n = len(self.vocab)
    judged = codes < n
    judged &= codes >= 0
    used = np.zeros(n, bool)
    used[codes[judged]] = True
    used = np.flatnonzero(used)
    remap = np.empty(n, codes.dtype)
    remap[used] = np.arange(used.size)
    codes[judged] = remap[codes[judged]]
    codes[codes >= n] += used.size - n
    codes[codes < 0] = used.size + own.add_uncoded()
    return self.vocab.take(used)._joined(own.ids())


class _JudgedBuilder(_Builder):
  """A run's rows with only the documents trec_eval's measures can tell apart coded (see
  :func:`iter_judged_run_chunks`): those the qrels judge for some query, those that may tie
  with another line of their query, and the lines of a block's last query. Every other row gets
  code -1 until :meth:`run`. A block at a time it also checks that each query's lines come
  together and list each document once (by hash: an equal pair, a duplicate or a collision,
  raises :class:`NeedsFullRead`)."""

  def __init__(self, rows: int, judged: _Judged) -> None:
    super().__init__(_RUN, rows, lines=True, keep_ints=False)
    self.judged = judged
    # The query of the previous block's last lines, and their document and score keys.
    self.open_q = -1
    self.open_doc = self.open_score = np.zeros(0, np.uint64)

  def _doc_codes(self, b: _Block, lo: int, hi: int, q_codes: np.ndarray) -> np.ndarray:
    heads = np.flatnonzero(np.r_[True, q_codes[1:] != q_codes[:-1]])
    going_on = q_codes[0] == self.open_q  # the first lines continue the previous block's query
    fresh = q_codes[heads[1:]] if going_on else q_codes[heads]
    if not np.array_equal(fresh, np.arange(self.q.n - fresh.size, self.q.n)):
      raise NeedsFullRead("a query's lines are not together")  # a query seen before, again
    qk = q_codes.astype(np.uint64) * _MIX
    doc_key = b.d_hash[lo:hi] ^ qk
    score_key = _score_keys(b.floats[lo:hi], qk)
    carried = self.open_doc.size if going_on else 0
    if carried:
      doc_key = np.concatenate([self.open_doc, doc_key])
      score_key = np.concatenate([self.open_score, score_key])
    again = np.flatnonzero(_repeated(doc_key))
    if again.size:
      k = np.sort(doc_key[again])
      if (k[1:] == k[:-1]).any():
        raise NeedsFullRead("a query lists a document twice (or two ids' hashes are equal)")
    keep = _repeated(score_key)[carried:]  # may tie with another line of its query
    last = int(heads[-1])
    keep[last:] = True  # the last query's ties may come in the next block
    if going_on and heads.size == 1:  # the query goes on past this block
      if doc_key.size > 1 << 20:
        raise NeedsFullRead("a query of more than a million lines")
      self.open_doc, self.open_score = doc_key, score_key
    else:
      self.open_q = int(q_codes[-1])
      self.open_doc, self.open_score = doc_key[carried + last:], score_key[carried + last:]
    rows, at = b.judged  # found by the reading thread
    i, j = np.searchsorted(rows, [lo, hi])
    return self.judged.code(b.buf, b.win, b.d_start[lo:hi], b.d_len[lo:hi], b.d_hash[lo:hi],
                            keep, self.d, found=(rows[i:j] - lo, at[i:j]))

  def run(self) -> Run:
    if self.d is None:
      self.d = _Vocab(1)
    return Run(qid_codes=self.q_codes.view(), qid_vocab=self._vocab("q"),
               docid_codes=self.d_codes.view(),
               docid_vocab=self.judged.vocabulary(self.d_codes.view(), self.d),
               score=self.floats.view(), tag=self.tag)


_PIPELINE = 8 * _BLOCK  # inputs at least this large are split in a second thread
_AHEAD = 32  # blocks split ahead of the caller (while it evaluates a chunk, say)


def _split_blocks(f: Any, name: str, fmt: _Format, *, threaded: bool,
                  judged: _Judged | None = None) -> Iterator[tuple[_Block, int]]:
  """The content's blocks split into rows (:func:`_split_block`), with the number of lines
  before each. ``threaded``: a second thread reads and splits the next block while the caller
  codes this one (NumPy releases the GIL in both, so two cores overlap them); errors reach the
  caller in order, at the block they belong to. ``judged``: the same thread also finds each
  block's judged documents (``b.judged``, :meth:`_Judged.rows_of`)."""
  def split() -> Iterator[tuple[_Block, int]]:
    line = 0
    for buf, lo, hi in _blocks(f, name, buffers=_AHEAD + 3 if threaded else 1):
      b = _split_block(buf, lo, hi, fmt, name, line)
      if judged is not None:
        b.judged = judged.rows_of(b.win, b.d_start, b.d_len, b.d_hash)
      yield b, line
      line += b.nlines

  if not threaded:
    yield from split()
    return
  import queue
  import threading
  # At most _AHEAD blocks wait, one more waits to be put, one is split and one coded: the
  # _AHEAD + 3 buffers are never reused early.
  ready: queue.Queue = queue.Queue(maxsize=_AHEAD)
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
    except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
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


def _size_of(f: Any) -> int | None:
  try:
    return os.fstat(f.fileno()).st_size if f.seekable() and not hasattr(f, "mtime") else None
  except (OSError, AttributeError, ValueError):
    return None


def _read(path: PathLike | bytes, name: str | None, fmt: _Format) -> _Builder:
  f, name, close = _open(path, name)
  try:
    size = _size_of(f)
    if size is None and isinstance(f, BytesIO):
      size = len(f.getbuffer())
    rows = (size + 1) // (2 * fmt.min) + 1 if size is not None else 1 << 20  # an upper bound
    builder = _Builder(fmt, rows)
    blocks = _split_blocks(f, name, fmt, threaded=size is None or size >= _PIPELINE)
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
  return _read(path, name, _RUN).run()


def read_qrels(path: PathLike | bytes, *, name: str | None = None) -> Qrels:
  """Reads a TREC qrels file ``qid iter docid rel`` (integer ``rel``; ``-1`` = unjudged).

  Same rules and arguments as :func:`read_run`.

  Example:
    >>> from jaxrank import io
    >>> qrels = io.read_qrels(b"q1 0 d1 2\\nq1 0 d2 0\\n")
    >>> qrels.docid_vocab.tolist(), qrels.rel.tolist()
    (['d1', 'd2'], [2, 0])
  """
  return _read(path, name, _QRELS).qrels()


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
  f, name, close = _open(path, name)
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
  insert), every line whose score may tie with another of its query (a superset: keys sharing
  a hash bucket), and a block's last query. A chunk's ``docid_vocab`` lists the judged
  documents it holds (in the qrels' order), then the others it codes, then the empty id.
  ``rank`` is not kept (zeros). A query listing a document twice, a query whose lines are not
  together and two ids with equal hashes raise :class:`NeedsFullRead`: the full readers report
  or handle them. ``path`` must name a file that can be read again.

  Example:
    >>> from jaxrank import io
    >>> qrels = io.read_qrels(b"q 0 b 1\\n")
    >>> text = b"q Q0 a 1 3 t\\nq Q0 b 2 2 t\\nq Q0 c 3 1 t\\nr Q0 d 1 1 t\\nr Q0 e 2 1 t\\n"
    >>> [(r.docid_vocab.tolist(), r.docid_codes.tolist())
    ...  for r in io.iter_judged_run_chunks(text, qrels)]  # a, c: neither judged nor tied
    [(['b', 'd', 'e', ''], [3, 0, 3, 1, 2])]
  """
  judged = _Judged(qrels.docid_vocab)
  f, name, close = _open(path, None)
  return _chunks(f, name, close, int(max_lines), judged)


_TIE_SLICE = 1 << 15  # rows of a dict chunk whose score keys are bucketed together


def iter_dict_chunks(run: Mapping[str, Mapping[str, float]], *, max_rows: int = 1_000_000,
                     qrels: Qrels | None = None) -> Iterator[Run]:
  """Internal API (``jaxrank.numpy.evaluate_run``'s conversion of large dicts): a
  pytrec_eval-style ``{qid: {docid: score}}`` dict as :class:`Run` s of whole queries,
  ``max_rows`` rows or a little more each, in the dict's order. Each chunk's ids are coded on
  their own, so its hash table and sorts stay in cache.

  With ``qrels``, only the documents trec_eval's measures can tell apart are coded, as in
  :func:`iter_judged_run_chunks`: the judged ones and those whose score (as float32) may tie
  with another of their query (judged ones first in ``docid_vocab``, in the qrels' order); the
  others share the code of an extra empty id at the end of ``docid_vocab``. A judged id's hash
  met by another id, or an empty id in the qrels, raises :class:`NeedsFullRead` (convert
  without ``qrels`` then). Errors name the query and the document, as :func:`as_run`'s.

  Example:
    >>> from jaxrank import io
    >>> run = {"q": {"a": 3.0, "b": 2.0, "c": 2.0, "d": 1.0}, "r": {"e": 1.0}}
    >>> [(c.docid_vocab.tolist(), c.docid_codes.tolist())
    ...  for c in io.iter_dict_chunks(run, qrels=io.as_qrels({"q": {"d": 1}}))]  # b, c tie
    [(['d', 'b', 'c', ''], [3, 1, 2, 0, 3])]
  """
  if isinstance(max_rows, bool) or not isinstance(max_rows, (int, np.integer)) or max_rows < 1:
    raise ValueError(f"max_rows must be a positive int, got {max_rows!r}")
  judged = None
  if qrels is not None:
    if (qrels.docid_vocab._len == 0).any():
      raise NeedsFullRead("the qrels judge an empty document id")
    judged = _Judged(qrels.docid_vocab)
  group: dict[Any, Any] = {}
  rows = 0
  for qid, docs in run.items():
    group[qid] = docs
    rows += len(docs) if isinstance(docs, Mapping) else 0
    if rows >= max_rows:
      yield as_run(group) if judged is None else _judged_run(group, judged)
      group, rows = {}, 0
  if group:
    yield as_run(group) if judged is None else _judged_run(group, judged)


def _judged_run(run: Mapping[str, Mapping[str, float]], judged: _Judged) -> Run:
  """:func:`as_run`, coding only the documents :func:`iter_dict_chunks` codes."""
  qvocab, counts, docids, values, locate, bad_doc = _unpack(run, "run")
  try:
    buf, starts, lens = _encode_ids(docids)
  except _BadId as e:
    raise bad_doc(e) from None
  score = _scores(values, locate, "run")
  win = _windows(buf)
  h = _hash_ids(win, starts, lens)
  qcodes = np.repeat(np.arange(len(qvocab), dtype=np.int32), counts)
  key = _score_keys(score, qcodes.astype(np.uint64) * _MIX)
  keep = np.zeros(len(docids), bool)
  ends = np.cumsum(counts)
  lo = 0
  while lo < keep.size:  # slices of whole queries: a query's ties are in one slice
    hi = int(ends[min(np.searchsorted(ends, lo + _TIE_SLICE), ends.size - 1)])
    keep[lo:hi] = _repeated(key[lo:hi])
    lo = hi
  vocab, step = _Vocab(int(keep.sum())), 1 << 16  # coded a slice at a time: small temporaries
  codes = np.concatenate([np.zeros(0, np.int64)] + [judged.code(
      buf, win, starts[i:i + step], lens[i:i + step], h[i:i + step], keep[i:i + step], vocab)
      for i in range(0, keep.size, step)])
  return Run(qid_codes=qcodes, qid_vocab=qvocab, docid_codes=codes,
             docid_vocab=judged.vocabulary(codes, vocab), score=score, tag="jaxrank")


def _chunks(f: Any, name: str, close: Any, max_lines: int,
            judged: _Judged | None = None) -> Iterator[Run]:
  def builder_for() -> _Builder:
    if judged is None:
      return _Builder(_RUN, max_lines + 1024, lines=True)
    return _JudgedBuilder(max_lines + 1024, judged)

  seen: set[str] = set()

  def emit(builder: _Builder) -> Run:
    run = builder.run()
    qids = run.qid_vocab.tolist()
    again = seen.intersection(qids)
    if again:
      codes = [i for i, q in enumerate(qids) if q in again]
      row = int(np.flatnonzero(np.isin(run.qid_codes, codes))[0])
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
    blocks = stack.enter_context(contextlib.closing(_split_blocks(f, name, _RUN, threaded=True,
                                                                  judged=judged)))
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


# ----------------------------------------------------------------------------------------------
# Writing.


_WRITE_ROWS = 1 << 16  # rows formatted and written at a time


def _write_lines(path: PathLike, rows: int, text: Any) -> None:
  """Writes ``text(lo, hi)`` for consecutive slices of ``rows`` rows to ``path``, the ids'
  bytes as read (UTF-8, ``surrogateescape``), atomically: into a new file beside the target,
  renamed over it once complete, so a failure at any point (a full disk, an interrupt) leaves
  the target as it was and no other file. A new file gets the usual permissions (0666 less the
  umask), a replaced one keeps its mode; a symbolic link stays a link (its target is
  replaced); a device or a pipe (``/dev/stdout``) is written in place."""
  path = os.fspath(path)
  try:
    st = os.stat(path)
  except FileNotFoundError:
    st = None
  if st is not None and not stat.S_ISREG(st.st_mode):  # a device, a FIFO: nothing to replace
    with open(path, "w", encoding="utf-8", errors=_ERRORS, newline="\n") as f:
      for lo in range(0, rows, _WRITE_ROWS):
        f.write(text(lo, min(rows, lo + _WRITE_ROWS)))
    return
  target = path if st is None else os.path.realpath(path)
  if st is not None and not os.access(target, os.W_OK):  # as writing in place would
    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
  head, tail = os.path.split(target)
  mode = 0o666 if st is None else stat.S_IMODE(st.st_mode)
  for _ in range(100):
    tmp = os.path.join(head, f".{tail}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
      fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode)
      break
    except FileExistsError:
      continue
    except OSError as e:  # no such directory, no permission: name the target, as open() would
      raise type(e)(e.errno, e.strerror, path) from None
  else:  # pragma: no cover - 100 random names taken
    raise FileExistsError(errno.EEXIST, "cannot create a temporary file beside it", path)
  try:
    with os.fdopen(fd, "w", encoding="utf-8", errors=_ERRORS, newline="\n") as f:
      for lo in range(0, rows, _WRITE_ROWS):
        f.write(text(lo, min(rows, lo + _WRITE_ROWS)))
    if st is not None:
      os.chmod(tmp, mode)  # the replaced file's mode, whatever the umask
    os.replace(tmp, target)
  except BaseException:
    with contextlib.suppress(OSError):
      os.unlink(tmp)
    raise


def _check_writable(vocab: Ids, what: str, qid: bool) -> None:
  """Ids that would not read back: empty, with a separator byte, or a qid starting with '#'."""
  if not len(vocab):
    return
  data = vocab._words.view(np.uint8)
  heads = 8 * vocab._woff[:-1]
  ws = (data == 32) | ((data - np.uint8(9)) <= np.uint8(4))
  bad = np.logical_or.reduceat(ws, heads) | (vocab.lengths == 0)
  if qid:
    bad |= data[heads] == 35
  if bad.any():
    v = vocab[int(np.argmax(bad))]
    raise ValueError(f"{what} {v!r} cannot be written to a TREC file: ids must be non-empty, "
                     "without whitespace (space, \\t, \\n, \\v, \\f, \\r), and a qid must not "
                     "start with '#'")


def write_run(run: Run | Mapping[str, Mapping[str, float]], path: PathLike, *,
              tag: str | None = None) -> None:
  """Writes a run as ``qid Q0 docid rank score tag``, ranks 1.. in trec_eval's order per query
  (score descending, then doc id descending), queries in byte order; scores are written with
  ``repr``, so they read back exactly, and ids as the bytes they were read from (ids that are
  not UTF-8 included: the module's **Bytes** rule). The file is written beside ``path`` and
  renamed over it once complete, so a failure (a full disk, an interrupt) leaves ``path`` as
  it was and no partial file; a new file gets the usual permissions (0666 less the umask), a
  replaced one keeps its mode, and a device or pipe such as ``/dev/stdout`` is written in place.

  Example:
    >>> import os, tempfile
    >>> from jaxrank import io
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> io.write_run({"q1": {"a": 0.5, "b": 0.9}}, path, tag="demo")
    >>> open(path).read()
    'q1 Q0 b 1 0.9 demo\\nq1 Q0 a 2 0.5 demo\\n'
  """
  run = as_run(run)
  _check_writable(run.qid_vocab, "run qid", True)
  _check_writable(run.docid_vocab, "run docid", False)
  tag = run.tag if tag is None else tag
  if not isinstance(tag, str) or not tag or any(c in " \t\n\v\f\r" for c in tag):
    raise ValueError(f"tag must be a non-empty string without whitespace, got {tag!r}")
  qrank = run.qid_vocab.byte_rank()[run.qid_codes]
  order = np.lexsort((-run.docid_vocab.byte_rank()[run.docid_codes], -run.score, qrank))
  q = qrank[order]
  start = np.r_[True, q[1:] != q[:-1]] if q.size else np.zeros(0, bool)
  rank = np.arange(q.size) - np.flatnonzero(start)[np.cumsum(start) - 1] + 1
  qs, ds = run.qid_vocab.tolist(), run.docid_vocab.tolist()
  _write_lines(path, order.size, lambda lo, hi: "".join(
      f"{qs[a]} Q0 {ds[b]} {r} {v!r} {tag}\n" for a, b, r, v in zip(
          run.qid_codes[order[lo:hi]].tolist(), run.docid_codes[order[lo:hi]].tolist(),
          rank[lo:hi].tolist(), run.score[order[lo:hi]].tolist())))


def write_qrels(qrels: Qrels | Mapping[str, Mapping[str, int]], path: PathLike) -> None:
  """Writes qrels as ``qid 0 docid rel``, sorted by qid then docid (byte order); ids as their
  bytes, and atomically, as :func:`write_run` writes.

  Example:
    >>> import os, tempfile
    >>> from jaxrank import io
    >>> path = os.path.join(tempfile.mkdtemp(), "qrels.txt")
    >>> io.write_qrels({"q1": {"b": 0, "a": 2}}, path)
    >>> open(path).read()
    'q1 0 a 2\\nq1 0 b 0\\n'
  """
  qrels = as_qrels(qrels)
  _check_writable(qrels.qid_vocab, "qrels qid", True)
  _check_writable(qrels.docid_vocab, "qrels docid", False)
  order = np.lexsort((qrels.docid_vocab.byte_rank()[qrels.docid_codes],
                      qrels.qid_vocab.byte_rank()[qrels.qid_codes]))
  qs, ds = qrels.qid_vocab.tolist(), qrels.docid_vocab.tolist()
  _write_lines(path, order.size, lambda lo, hi: "".join(
      f"{qs[a]} 0 {ds[b]} {r}\n" for a, b, r in zip(
          qrels.qid_codes[order[lo:hi]].tolist(), qrels.docid_codes[order[lo:hi]].tolist(),
          qrels.rel[order[lo:hi]].tolist())))


# ----------------------------------------------------------------------------------------------
# Conversions from Python dicts (pytrec_eval's form).

_NUMBER = (int, float, np.integer, np.floating)
_BOOL = (bool, np.bool_)


def _unpack(mapping: Any, what: str):
  """``(qid vocabulary, rows per query, doc ids, values, locate, bad_doc)`` of a ``{qid:
  {docid: value}}`` dict (queries without rows left out); ``locate(i)`` gives row ``i``'s
  ``(qid, docid, value)``, ``bad_doc`` the error for a :class:`_BadId` of the doc ids."""
  if not isinstance(mapping, Mapping):
    raise TypeError(f"{what} must be a dict {{qid: {{docid: value}}}}, got "
                    f"{type(mapping).__name__}")
  qids, inner = list(mapping), list(mapping.values())
  for q, docs in zip(qids, inner):
    if not isinstance(docs, Mapping):
      raise TypeError(f"{what}[{q!r}] must be a dict {{docid: value}}, got "
                      f"{type(docs).__name__}")
  counts = np.fromiter(map(len, inner), np.int64, count=len(inner))
  keep = [q for q, n in zip(qids, counts.tolist()) if n]
  try:
    qvocab = Ids._from_unique(keep)
  except _BadId as e:
    raise (TypeError if e.reason == "type" else ValueError)(
        _bad_id_message(f"{what} qid", keep[e.index], e.reason)) from None
  docids = list(chain.from_iterable(inner))
  values = list(chain.from_iterable(d.values() for d in inner))
  ends = np.cumsum(counts)

  def locate(i: int) -> tuple[Any, Any, Any]:
    return qids[int(np.searchsorted(ends, i, "right"))], docids[i], values[i]

  def bad_doc(e: _BadId) -> Exception:
    q, d, _ = locate(e.index)
    return (TypeError if e.reason == "type" else ValueError)(
        _bad_id_message(f"{what} doc id", d, e.reason, q))

  return qvocab, counts[counts > 0], docids, values, locate, bad_doc


def _flatten(mapping: Any, what: str):
  """``(qid codes, qid vocabulary, doc codes, doc vocabulary, values, locate)`` of a
  ``{qid: {docid: value}}`` dict; ``locate(i)`` gives row ``i``'s ``(qid, docid, value)``."""
  qvocab, counts, docids, values, locate, bad_doc = _unpack(mapping, what)
  try:
    dvocab, dcodes = Ids.from_strings(docids)
  except _BadId as e:
    raise bad_doc(e) from None
  qcodes = np.repeat(np.arange(len(qvocab), dtype=dcodes.dtype), counts)
  return qcodes, qvocab, dcodes, dvocab, values, locate


def _first_bad(values: list, ok) -> int:
  return next(i for i, v in enumerate(values) if not ok(v))


def _scores(values: list, locate, what: str) -> np.ndarray:
  def number(v: Any) -> bool:
    return isinstance(v, _NUMBER) and not isinstance(v, _BOOL)

  types = set(map(type, values))
  if not all(issubclass(t, _NUMBER) and not issubclass(t, _BOOL) for t in types):
    q, d, v = locate(_first_bad(values, number))
    raise ValueError(f"{what}[{q!r}][{d!r}] must be a number (the score), got {v!r}")
  try:
    scores = np.array(values, np.float64)
  except OverflowError:
    q, d, v = locate(_first_bad(values, lambda v: abs(v) <= sys.float_info.max))
    raise ValueError(f"{what}[{q!r}][{d!r}] must be a number (the score) within float64's "
                     f"range, got {v!r}") from None
  nan = np.flatnonzero(np.isnan(scores))
  if nan.size:
    q, d, v = locate(int(nan[0]))
    raise ValueError(f"{what}[{q!r}][{d!r}] must be a number (the score), not NaN (NaN has no "
                     f"order), got {v!r}")
  return scores


def _grade_ok(v: Any) -> bool:
  if isinstance(v, (int, np.integer)):  # bool too: True/False are 1/0
    return -2**63 <= int(v) < 2**63
  if isinstance(v, (float, np.floating)):
    return bool(np.isfinite(v)) and float(v).is_integer() and -2.0**63 <= float(v) < 2.0**63
  return False


def _grades(values: list, locate, what: str) -> np.ndarray:
  types = set(map(type, values))
  try:
    if all(issubclass(t, (int, np.integer)) for t in types) and not any(
        issubclass(t, np.unsignedinteger) for t in types):
      return np.array(values, np.int64)
    if all(issubclass(t, (float, np.floating)) for t in types):
      grades = np.array(values, np.float64)
      if (np.isfinite(grades) & (grades == np.round(grades)) & (grades >= -2.0**63) &
          (grades < 2.0**63)).all():
        return grades.astype(np.int64)
    elif all(map(_grade_ok, values)):
      return np.array([int(v) for v in values], np.int64)
  except OverflowError:
    pass
  q, d, v = locate(_first_bad(values, _grade_ok))
  integral = isinstance(v, (int, np.integer)) or (
      isinstance(v, (float, np.floating)) and np.isfinite(v) and float(v).is_integer())
  raise ValueError(f"{what}[{q!r}][{d!r}] must be an integer grade"
                   f"{' ' + INT64_RANGE if integral else ''}, got {v!r}")


def as_run(run: Run | Mapping[str, Mapping[str, float]]) -> Run:
  """A :class:`Run` from a Run or a pytrec_eval-style ``{qid: {docid: score}}`` dict.

  Ids must be ``str`` without NUL characters, and without lone surrogates but those that stand
  for bytes that are not UTF-8 (U+DC80..U+DCFF, ``surrogateescape``, as the readers give them;
  ``'\\udcc3\\udca9'``, the bytes of ``'é'``, is refused): what a TREC file can hold. Scores
  are numbers (not ``bool``, not NaN) within float64's range; infinite scores are kept
  (``-inf`` ranks last). Errors name the query and the document.

  Example:
    >>> from jaxrank import io
    >>> run = io.as_run({"q1": {"d1": 0.5, "d2": 1}})
    >>> run.qid.tolist(), run.docid_vocab.tolist(), run.score.tolist()
    ([b'q1', b'q1'], ['d1', 'd2'], [0.5, 1.0])
  """
  if isinstance(run, Run):
    return run
  qc, qv, dc, dv, values, locate = _flatten(run, "run")
  return Run(qid_codes=qc, qid_vocab=qv, docid_codes=dc, docid_vocab=dv,
             score=_scores(values, locate, "run"), tag="jaxrank")


def as_qrels(qrels: Qrels | Mapping[str, Mapping[str, int]]) -> Qrels:
  """A :class:`Qrels` from a Qrels or a pytrec_eval-style ``{qid: {docid: grade}}`` dict.

  Grades must be integers within int64 (``True``/``False`` count as 1/0, integral floats are
  accepted); ``-1`` marks unjudged, as in TREC. Ids as in :func:`as_run`.

  Example:
    >>> from jaxrank import io
    >>> io.as_qrels({"q1": {"d1": 2, "d2": 0}}).rel.tolist()
    [2, 0]
  """
  if isinstance(qrels, Qrels):
    return qrels
  qc, qv, dc, dv, values, locate = _flatten(qrels, "qrels")
  return Qrels(qid_codes=qc, qid_vocab=qv, docid_codes=dc, docid_vocab=dv,
               rel=_grades(values, locate, "qrels"))


# ----------------------------------------------------------------------------------------------
# pandas adapters (pandas is imported only here, when called).


def _pandas():
  try:
    import pandas
  except ImportError:  # pragma: no cover - depends on the environment
    raise ImportError("the DataFrame adapters need pandas: pip install 'jaxrank[pandas]'") from None
  return pandas


def _strings(codes: np.ndarray, vocab: Ids) -> list[str]:
  return np.array(vocab.tolist() or [""], dtype=object)[codes].tolist()


def _column(frame, name: str, what: str):
  if name not in frame.columns:
    raise ValueError(f"{what}: the DataFrame has no column {name!r} (columns: "
                     f"{list(frame.columns)})")
  return frame[name]


def _id_column(frame, name: str, what: str) -> tuple[np.ndarray, Ids]:
  values = _column(frame, name, what)
  if values.isna().any():
    row = int(np.flatnonzero(values.isna().to_numpy())[0])
    raise ValueError(f"{what}: column {name!r} has a missing value at row {row}")
  return _column_ids([str(v) for v in values.tolist()], f"{what}: column {name!r} id")


def run_from_frame(frame: pandas.DataFrame, *, user_col: str = "user_id", item_col: str = "item_id",
                   score_col: str | None = "score", rank_col: str | None = None) -> Run:
  """A :class:`Run` from a DataFrame of recommendations (Evidently's / RecBole's layout).

  Give ``score_col`` (higher is better) or ``rank_col`` (1 = best; turned into the score
  ``-rank``). Ids are converted with ``str``.

  Example:
    >>> import pandas as pd
    >>> from jaxrank import io
    >>> df = pd.DataFrame({"user_id": [1, 1], "item_id": [10, 20], "rank": [2, 1]})
    >>> io.run_from_frame(df, score_col=None, rank_col="rank").to_dict()
    {'1': {'10': -2.0, '20': -1.0}}
  """
  _pandas()
  what = "run_from_frame"
  if (score_col is None) == (rank_col is None):
    raise ValueError(f"{what}: give exactly one of score_col and rank_col")
  if score_col is not None:
    score = _column(frame, score_col, what).to_numpy(np.float64)
    if np.isnan(score).any():
      raise ValueError(f"{what}: column {score_col!r} has a missing or NaN score at row "
                       f"{int(np.flatnonzero(np.isnan(score))[0])}")
    rank = np.zeros(score.shape, np.int64)
  else:
    rank = _column(frame, rank_col, what).to_numpy(np.float64)
    if np.isnan(rank).any():
      raise ValueError(f"{what}: column {rank_col!r} has a missing value at row "
                       f"{int(np.flatnonzero(np.isnan(rank))[0])}")
    score, rank = -rank, rank.astype(np.int64)
  (qc, qv), (dc, dv) = _id_column(frame, user_col, what), _id_column(frame, item_col, what)
  return Run(qid_codes=qc, qid_vocab=qv, docid_codes=dc, docid_vocab=dv, score=score, rank=rank)


def qrels_from_frame(frame: pandas.DataFrame, *, user_col: str = "user_id",
                     item_col: str = "item_id", target_col: str = "target") -> Qrels:
  """A :class:`Qrels` from a DataFrame of interactions with an integer (or bool) target.

  Example:
    >>> import pandas as pd
    >>> from jaxrank import io
    >>> df = pd.DataFrame({"user_id": ["u"], "item_id": ["i"], "target": [1]})
    >>> io.qrels_from_frame(df).to_dict()
    {'u': {'i': 1}}
  """
  _pandas()
  what = "qrels_from_frame"
  target = _column(frame, target_col, what).to_numpy()
  rel = np.asarray(target, np.float64)
  bad = np.flatnonzero(~np.isfinite(rel) | (rel != np.round(rel)))
  if bad.size:
    raise ValueError(f"{what}: column {target_col!r} must hold integer grades, got "
                     f"{target[bad[0]]!s} at row {int(bad[0])}")
  (qc, qv), (dc, dv) = _id_column(frame, user_col, what), _id_column(frame, item_col, what)
  return Qrels(qid_codes=qc, qid_vocab=qv, docid_codes=dc, docid_vocab=dv,
               rel=rel.astype(np.int64))


def run_to_frame(run: Run | Mapping, *, user_col: str = "user_id", item_col: str = "item_id",
                 score_col: str = "score") -> pandas.DataFrame:
  """A DataFrame ``(user_col, item_col, score_col)`` with string ids, in the run's row order.

  Example:
    >>> from jaxrank import io
    >>> io.run_to_frame({"u1": {"i1": 0.5}}).to_dict("records")
    [{'user_id': 'u1', 'item_id': 'i1', 'score': 0.5}]
  """
  pd = _pandas()
  run = as_run(run)
  return pd.DataFrame({user_col: _strings(run.qid_codes, run.qid_vocab),
                       item_col: _strings(run.docid_codes, run.docid_vocab), score_col: run.score})


def qrels_to_frame(qrels: Qrels | Mapping, *, user_col: str = "user_id",
                   item_col: str = "item_id", target_col: str = "target") -> pandas.DataFrame:
  """A DataFrame ``(user_col, item_col, target_col)`` with string ids.

  Example:
    >>> from jaxrank import io
    >>> io.qrels_to_frame({"u1": {"i1": 1}}).to_dict("records")
    [{'user_id': 'u1', 'item_id': 'i1', 'target': 1}]
  """
  pd = _pandas()
  qrels = as_qrels(qrels)
  return pd.DataFrame({user_col: _strings(qrels.qid_codes, qrels.qid_vocab),
                       item_col: _strings(qrels.docid_codes, qrels.docid_vocab),
                       target_col: qrels.rel})
