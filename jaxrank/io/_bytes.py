"""Ids as bytes in NumPy buffers: 8-byte windows, hashes, comparisons, hash tables of hashes,
growing columns. Everything here is NumPy: no Python work per id.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

PAD = 16  # zero bytes after every buffer, so an 8-byte window at any id's start stays inside
_ALL = np.uint64((1 << 64) - 1)
_K0 = np.uint64(0x9E3779B97F4A7C15)
K1 = np.uint64(0xFF51AFD7ED558CCD)
_K2 = np.uint64(0xC4CEB9FE1A85EC53)
_S29, _S33 = np.uint64(29), np.uint64(33)
LONG = 256  # bytes of each id read a word per NumPy round (<= 32); the rest of longer ids flat
_FLAT = 1 << 18  # words per slice of a flat pass (temporaries of a few megabytes)
ERRORS = "surrogateescape"  # ids are bytes: those that are not UTF-8 read as U+DC80..U+DCFF


def padded(data: bytes | bytearray | memoryview) -> np.ndarray:
  """A uint8 copy of ``data`` followed by ``PAD`` zero bytes."""
  buf = np.zeros(len(data) + PAD, np.uint8)
  buf[:len(data)] = np.frombuffer(data, np.uint8)
  return buf


def windows(buf: np.ndarray) -> np.ndarray:
  """``w[i]`` = bytes ``i .. i+7`` of ``buf`` as one little-endian uint64 (a strided view)."""
  return np.ndarray((buf.size - 7,), np.dtype("<u8"), buffer=buf, strides=(1,))


def low_bytes(n: np.ndarray) -> np.ndarray:
  """Word masks of the low ``min(n, 8)`` bytes (none for ``n <= 0``): all ones shifted right
  by ``64 - 8 min(n, 8)`` bits (NumPy's shifts by 64 or more give zero), twice as fast as
  gathering the masks from a table of nine."""
  shift = np.maximum(8 - n, 0).astype(np.uint64)
  shift <<= np.uint64(3)
  mask: np.ndarray = _ALL >> shift
  return mask


def _word(win: np.ndarray, starts: np.ndarray, lens: np.ndarray, j: Any) -> np.ndarray:
  """Word ``j`` (bytes ``8j .. 8j+7``, zero past the id's end) of the ids at ``starts``, each
  longer than ``8j`` bytes."""
  word: np.ndarray = win[starts + 8 * j] & low_bytes(lens - 8 * j)
  return word


def flat_words(lens: np.ndarray, first: int) -> Iterator[tuple[np.ndarray, np.ndarray,
                                                                np.ndarray]]:
  """The words from word ``first`` on of ids of ``lens`` bytes (each longer than ``8 * first``)
  as one sequence, at most ``_FLAT`` words at a time: ``(ids, j, heads)``, each word's id (an
  index into ``lens``) and number in that id, and where each id's words begin in the slice (for
  ``np.ufunc.reduceat``). Time and memory grow with the words, whatever the lengths: this is how
  ids longer than ``LONG`` bytes are read, never a NumPy round per word."""
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


def hash_ids(win: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
  """64-bit hashes of the byte strings at ``starts`` (``lens`` bytes each) of a padded buffer.

  An id of at most 8 bytes hashes to a bijective mix (multiply by an odd number, xor-shift,
  MurmurHash3's finaliser) of its zero-padded bytes: as ids hold no NUL, two such ids hash equal
  only if they are equal. Longer ids mix in their length and every further 8-byte word, one
  round per word for all ids at once up to ``LONG`` bytes; an id longer than that adds the sum
  of its further words' mixes (each mixed with its position), computed in one flat pass over
  those words (:func:`flat_words`), so the time is linear in the bytes whatever the longest
  id. Equal hashes of ids longer than 8 bytes are checked byte by byte (:func:`check_equal`)."""
  h: np.ndarray = win[starts]
  h &= low_bytes(lens)
  rest = np.flatnonzero(lens > 8)
  whole = rest.size == lens.size > 0  # every id longer than 8 bytes: whole arrays, not rows
  if whole:
    h ^= lens.astype(np.uint64) * _K0
  else:
    h[rest] ^= lens[rest].astype(np.uint64) * _K0
  h *= K1
  h ^= h >> _S29
  j = 8
  while whole and j < LONG:  # (ids of equal lengths, the usual file, stay here)
    left = lens - j
    x = win[starts + j]
    x &= low_bytes(left)
    h ^= x
    h *= K1
    h ^= h >> _S29
    longer = left > 8
    j += 8
    if not longer.all():
      rest, whole = np.flatnonzero(longer), False
  while rest.size and j < LONG:
    left = lens[rest] - j
    x = h[rest] ^ (win[starts[rest] + j] & low_bytes(left))
    x *= K1
    x ^= x >> _S29
    h[rest] = x
    rest, j = rest[left > 8], j + 8
  if rest.size:  # ids longer than LONG bytes: their other words in one flat pass
    s, n, tail = starts[rest], lens[rest], np.zeros(rest.size, np.uint64)
    for ids, w, heads in flat_words(n, j // 8):
      x = _word(win, s[ids], n[ids], w) ^ (w.astype(np.uint64) * _K2)
      x *= K1
      x ^= x >> _S33
      x *= _K2
      x ^= x >> _S29
      tail[ids[heads]] += np.add.reduceat(x, heads)  # wraps modulo 2**64
    x = h[rest] ^ tail
    x *= K1
    x ^= x >> _S29
    h[rest] = x
  h ^= h >> _S33
  h *= K1
  h ^= h >> _S33
  h *= _K2
  h ^= h >> _S33
  return h


def _equal_bytes(win_a: np.ndarray, starts_a: np.ndarray, win_b: np.ndarray,
                 starts_b: np.ndarray, lens: np.ndarray) -> np.ndarray:
  """Whether the strings at ``starts_a`` and ``starts_b`` (both ``lens`` bytes) are equal."""
  equal = np.ones(lens.size, bool)
  rest, j = np.arange(lens.size), 0
  while rest.size and j < LONG:
    left = lens[rest] - j
    mask = low_bytes(left)
    same = (win_a[starts_a[rest] + j] & mask) == (win_b[starts_b[rest] + j] & mask)
    equal[rest[~same]] = False
    rest, j = rest[same & (left > 8)], j + 8
  if rest.size:  # equal so far and longer than LONG bytes: the other words in one flat pass
    a, b, n = starts_a[rest], starts_b[rest], lens[rest]
    for ids, w, heads in flat_words(n, j // 8):
      same = _word(win_a, a[ids], n[ids], w) == _word(win_b, b[ids], n[ids], w)
      equal[rest[ids[heads]]] &= np.logical_and.reduceat(same, heads)
  return equal


def copy_words(dst: np.ndarray, at: np.ndarray, win: np.ndarray, starts: np.ndarray,
                lens: np.ndarray) -> None:
  """Writes the ids at ``starts`` (``lens`` bytes) of the windows ``win`` to the words
  ``dst[at]``, ``dst[at + 1]``, ... (the last one zero-padded): a round per word up to
  ``LONG`` bytes, the rest of longer ids in one flat pass."""
  dst[at] = win[starts] & low_bytes(lens)
  rest, j = np.flatnonzero(lens > 8), 1
  while rest.size and 8 * j < LONG:
    left = lens[rest] - 8 * j
    dst[at[rest] + j] = win[starts[rest] + 8 * j] & low_bytes(left)
    rest, j = rest[left > 8], j + 1
  if rest.size:
    a, s, n = at[rest], starts[rest], lens[rest]
    for ids, w, _ in flat_words(n, j):
      dst[a[ids] + w] = _word(win, s[ids], n[ids], w)


def index_dtype(n: int) -> type[np.int32] | type[np.int64]:
  return np.int32 if n < 2**31 - 1 else np.int64


class Collision(Exception):
  """Two different ids with one 64-bit hash: the reader starts again, comparing ids exactly."""


def check_equal(win_a: np.ndarray, a_starts: np.ndarray, a_lens: np.ndarray, win_b: np.ndarray,
                 b_starts: np.ndarray, b_lens: np.ndarray) -> None:
  """Raises :class:`Collision` unless the ids at ``a_starts`` and ``b_starts`` (equal hashes)
  are equal. Ids of at most 8 bytes on both sides are (their hashes are exact): only pairs with
  a longer id are read."""
  long = (a_lens > 8) | (b_lens > 8)
  if not long.size:
    return
  if not long.all():
    rows = np.flatnonzero(long)
    if not rows.size:
      return
    a_starts, a_lens, b_starts, b_lens = (x[rows] for x in (a_starts, a_lens, b_starts, b_lens))
  if not np.array_equal(a_lens, b_lens):
    raise Collision
  j = 0
  while j < LONG:  # a word of every pair at a time, the pairs whose ids go on
    mask = low_bytes(a_lens - j)
    if not ((win_a[a_starts + j] & mask) == (win_b[b_starts + j] & mask)).all():
      raise Collision
    j += 8
    going = a_lens > j
    if not going.all():
      if not going.any():
        return
      a_starts, a_lens, b_starts = a_starts[going], a_lens[going], b_starts[going]
  if not _equal_bytes(win_a, a_starts, win_b, b_starts, a_lens).all():  # longer than LONG
    raise Collision


def hash_table(keys: np.ndarray) -> tuple[np.ndarray, int]:
  """An open-addressing table (at most half full; slot: row + 1, 0 empty) of distinct uint64
  keys, filled a block of keys at a time."""
  n, step = keys.size, 1 << 16
  bits = max(3, (2 * n).bit_length())
  mask = (1 << bits) - 1
  table = np.zeros(1 << bits, index_dtype(n + 1))
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


def lookup(table: np.ndarray, bits: int, keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
  """For each query, the row of ``keys`` holding it in ``table`` (see :func:`hash_table`), or -1."""
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


class Column:
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
