"""Vocabularies of ids: :class:`Ids` (the distinct ids of a column, in order of first
appearance) and :class:`Vocab`, the hash table that codes ids while a file is read.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from jaxrank.io._bytes import (
  ERRORS,
  LONG,
  PAD,
  Collision,
  Column,
  check_equal,
  copy_words,
  flat_words,
  hash_ids,
  hash_table,
  index_dtype,
  lookup,
  padded,
  windows,
)


class Vocab:
  """The ids met so far: id -> code (0, 1, ... in order of first appearance), and the ids
  themselves in :class:`Ids`' layout (8-byte words, each id zero-padded, at least one zero byte
  after it), so the vocabulary is ready when the reading ends.

  Codes come from an open-addressing hash table in NumPy (linear probing, kept at most half
  full, grown four times when needed). A block's ids look at their slots all at once: an id
  whose slot holds its hash has its code; ids meeting an empty slot claim it with a provisional
  code (one claim per slot wins); the others move one slot on. The block's new ids then get the
  next codes in order of their first rows and their bytes are copied to the store. A repeated id
  longer than 8 bytes is compared byte for byte with the stored one (:func:`check_equal`;
  shorter ids' hashes are exact); after a hash collision the vocabulary continues with a
  Python dict of the ids' bytes (correct, slower).
  """

  def __init__(self, expected: int) -> None:
    self.bits = max(10, (2 * expected).bit_length())  # at most half full
    self.slots = np.zeros(1 << self.bits, np.int32)  # code + 1; 0: empty
    self.hash, self.len = Column(np.uint64, expected), Column(np.int32, expected)
    self.woff = Column(np.int64, expected + 1)
    self.woff.append(np.zeros(1, np.int64))
    self.words = Column(np.dtype("<u8"), 2 * expected + 2)
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
    return windows(self.words.a.view(np.uint8))

  def _store(self, win: np.ndarray, starts: np.ndarray, lens: np.ndarray, h: np.ndarray) -> None:
    """Appends new ids (codes ``self.n``, ...) to the store."""
    nw = lens // 8 + 1
    woff = self.woff.a[self.n] + np.cumsum(nw)
    total = int(woff[-1]) if woff.size else int(self.woff.a[self.n])
    words = self.words.reserve(total - self.words.n + 2)
    at = woff - nw
    words[self.words.n:total] = 0
    copy_words(words, at, win, starts, lens)
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
                hash_ids(windows(np.zeros(PAD, np.uint8)), nothing, nothing))
    return self.n - 1

  def add(self, buf: np.ndarray, win: np.ndarray, starts: np.ndarray, lens: np.ndarray,
          h: np.ndarray) -> np.ndarray:
    """The codes of the ids at ``starts`` (``lens`` bytes, hashes ``h``) of the padded buffer
    ``buf`` (windows ``win``), giving new ids the next codes."""
    if self.exact is None:
      try:
        return self._add(win, starts, lens, h)
      except Collision:
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
    is_new = codes >= base
    old = np.flatnonzero(~is_new)  # ids seen before: long ones are compared with the store
    if old.size:
      c = codes[old]
      store = self.store_windows()
      check_equal(win, starts[old], lens[old], store, 8 * self.woff.a[c], self.len.a[c])
    if not won_rows:
      return codes
    won_r, won_s = np.concatenate(won_rows), np.concatenate(won_slots)
    new = np.flatnonzero(is_new)
    again = new[codes[new] != base + new]  # a new id's later rows: compared with its first
    if again.size:
      first = codes[again] - base
      check_equal(win, starts[again], lens[again], win, starts[first], lens[first])
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
    exact = self.exact
    assert exact is not None  # add() makes the dict before its first call here
    codes = np.empty(h.size, np.int64)
    for i, (s, k) in enumerate(zip(starts.tolist(), lens.tolist())):
      key = buf[s:s + k].tobytes()
      code = exact.get(key)
      if code is None:
        code = exact[key] = self.n
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

  __slots__ = ("_words", "_woff", "_len", "_hash", "_table", "_origin", "__weakref__")

  def __init__(self, words: np.ndarray, word_offsets: np.ndarray, lengths: np.ndarray,
               hashes: np.ndarray, table: tuple[np.ndarray, int] | None = None,
               origin: tuple[Ids, np.ndarray] | None = None) -> None:
    self._words, self._woff, self._len, self._hash = words, word_offsets, lengths, hashes
    self._table = table  # (slots, bits): the hash table that coded the ids, kept for index()
    # (base, codes): this vocabulary's first codes.size ids are base's ids at codes, and none
    # of its later ids is in base; index() then matches two parts of one base by their codes.
    # The base is held weakly: a small part never keeps a large vocabulary alive.
    self._origin = None if origin is None else (weakref.ref(origin[0]), origin[1])

  def __reduce__(self) -> tuple[Any, ...]:
    # Pickled as its arrays and hash table; the weak link to a vocabulary it was taken from
    # (a shortcut of index()) stays behind.
    return (Ids, (self._words, self._woff, self._len, self._hash, self._table))

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
      copy_words(words, woff[lo:hi], win, starts[lo:hi], lens[lo:hi])
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
    buf, starts, lens = encode_ids(values)
    win, step = windows(buf), 1 << 16
    vocab = Vocab(len(values))
    codes = np.empty(len(values), index_dtype(len(values)))
    for lo in range(0, len(values), step):  # as a file's ids: hashed, coded by the hash table
      s, n = starts[lo:lo + step], lens[lo:lo + step]
      codes[lo:lo + s.size] = vocab.add(buf, win, s, n, hash_ids(win, s, n))
    return vocab.ids(), codes

  @classmethod
  def _from_unique(cls, uniq: list[str]) -> Ids:
    """The vocabulary of distinct strings ``uniq`` (raises :class:`BadId` for a bad one)."""
    buf, starts, lens = encode_ids(uniq)
    win = windows(buf)
    return cls._from_buffer(win, starts, lens, hash_ids(win, starts, lens))

  def __len__(self) -> int:
    return int(self._len.size)

  def __getitem__(self, i: int) -> str:
    k = len(self)
    if not -k <= i < k:
      raise IndexError(f"id index {i} out of range for a vocabulary of {k} ids")
    start = 8 * int(self._woff[i % k])
    return self._words.view(np.uint8)[start:start + int(self._len[i % k])].tobytes().decode(
        "utf-8", ERRORS)

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
    text = self._words.view(np.uint8).tobytes().decode("utf-8", ERRORS)
    if self._len.min() > 0:  # every id is followed by at least one NUL; padding is NULs
      return list(filter(None, text.split("\x00")))
    data = self._words.view(np.uint8)
    return [data[8 * s:8 * s + n].tobytes().decode("utf-8", ERRORS)
            for s, n in zip(self._woff[:-1].tolist(), self._len.tolist())]

  def bytes_array(self) -> np.ndarray:
    """The ids as a NumPy byte-string array (``S`` dtype, as wide as the longest id)."""
    width = max(int(self._len.max()) if len(self) else 1, 1)
    words = (width + 7) // 8
    out = np.zeros((len(self), words), np.dtype("<u8"))
    used = (self._len + 7) // 8  # words holding bytes of the id
    rest, j = np.flatnonzero(used), 0
    while rest.size and 8 * j < LONG:
      out[rest, j] = self._words[self._woff[rest] + j]
      rest, j = rest[used[rest] > j + 1], j + 1
    if rest.size:  # the rest of ids longer than LONG bytes, in one flat pass
      flat = out.reshape(-1)
      for ids, w, _ in flat_words(self._len[rest], j):
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
    (base, mine), (other_base, theirs) = self._part_of(), other._part_of()
    if base is other_base and (theirs is None or theirs.size == len(other)):
      # Two parts of one vocabulary (other's ids all in it): matched by their codes there.
      if mine is None:
        return np.asarray(theirs, np.int64).copy()
      if theirs is not None and mine.size and (mine[1:] > mine[:-1]).all():  # judged chunks
        at = np.minimum(np.searchsorted(mine, theirs), mine.size - 1)
        return np.where(mine[at] == theirs, at, -1)
      at = np.full(len(base), -1, np.int64)
      at[mine] = np.arange(mine.size)
      return at if theirs is None else at[theirs]
    # Probe the ids of one side into the other's hash table: the table the reader built if
    # there is one, else a new one of the smaller vocabulary.
    if self._table is None and other._table is None:
      small, large = (self, other) if len(self) <= len(other) else (other, self)
      at = lookup(*hash_table(small._hash), small._hash, large._hash)
    else:
      small, large = (self, other) if self._table is not None else (other, self)
      assert small._table is not None  # the side chosen for having one
      slots, bits = small._table
      at = lookup(slots, bits, small._hash, large._hash)
    found = np.flatnonzero(at >= 0)
    s_rows, l_rows = at[found], found
    try:  # equal hashes: equal ids, unless one is longer than 8 bytes and they differ
      check_equal(small._windows(), 8 * small._woff[s_rows], small._len[s_rows],
                   large._windows(), 8 * large._woff[l_rows], large._len[l_rows])
    except Collision:
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
    base, at = self._part_of()
    origin = (base, at[codes]) if at is not None and at.size == len(self) else (self, codes)
    return Ids(words, woff, self._len[codes], self._hash[codes], origin=origin)

  def _part_of(self) -> tuple[Ids, np.ndarray | None]:
    """``(base, codes)``: this vocabulary's first ``codes.size`` ids are ``base``'s at
    ``codes`` and its others are not in ``base``; ``(self, None)`` when it was not taken from
    another (:meth:`take`) or that one is gone."""
    if self._origin is not None:
      base = self._origin[0]()
      if base is not None:
        return base, self._origin[1]
    return self, None

  def _joined(self, other: Ids, *, new: bool = False) -> Ids:
    """This vocabulary's ids followed by ``other``'s (codes ``len(self)``, ... for those); the
    caller knows the two share no id. No hash table: :meth:`index` builds one when asked.
    ``new``: the caller also knows that no id of ``other`` is in the vocabulary this one was
    taken from (:meth:`take`), so :meth:`index` can still match by codes."""
    end = int(self._woff[-1])
    base, at = self._part_of()
    origin = (base, at) if new and at is not None and at.size == len(self) else None
    return Ids(np.concatenate([self._words[:end], other._words]),
               np.concatenate([self._woff[:-1], other._woff + end]),
               np.concatenate([self._len, other._len]),
               np.concatenate([self._hash, other._hash]), origin=origin)

  def _index_exactly(self, other: Ids) -> np.ndarray:
    table = {v: i for i, v in enumerate(self.tolist())}
    return np.fromiter((table.get(v, -1) for v in other.tolist()), np.int64, count=len(other))

  def _windows(self) -> np.ndarray:
    """8-byte windows of the store (every id's words lie inside it: no padding needed)."""
    return windows(self._words.view(np.uint8))

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

    def words(at: np.ndarray) -> np.ndarray:  # big-endian: byte order = numeric order
      got: np.ndarray = self._words[at]
      return got.astype(">u8").view(np.uint64)

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


def encode_ids(values: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """The bytes of ``values`` (UTF-8, ``surrogateescape``: as a file's ids are decoded) in one
  padded buffer (NUL between them), and each one's start and length; raises :class:`BadId` for
  a value that is not a ``str``, holds a NUL or a surrogate that does not stand for a byte (one
  outside U+DC80..U+DCFF, or ones whose bytes would read back as other text). One ``join`` and
  one ``encode``: no Python work per value."""
  try:
    text = "\x00".join(values)
  except TypeError:
    raise BadId(next(i for i, v in enumerate(values) if not isinstance(v, str)),
                 "type") from None
  if text.count("\x00") != max(len(values) - 1, 0):
    raise BadId(next(i for i, v in enumerate(values) if "\x00" in v), "nul")
  try:
    data = text.encode("utf-8")
  except UnicodeEncodeError:
    data = _escaped_bytes(text)
  buf = padded(data)
  seps = np.flatnonzero(buf[:len(data)] == 0)
  starts = np.concatenate([[0], seps + 1]) if values else np.zeros(0, np.int64)
  lens = (np.concatenate([seps, [len(data)]]) - starts if values else starts).astype(np.int32)
  return buf, starts, lens


def _escaped_bytes(text: str) -> bytes:
  """``text`` (ids joined by NUL) as bytes, lone surrogates U+DC80..U+DCFF standing for the
  bytes 0x80..0xFF (``surrogateescape``); raises :class:`BadId` for an id with another
  surrogate, or whose bytes would read back as other text (``'\\udcc3\\udca9'`` is the
  UTF-8 of ``'é'``)."""
  try:
    data = text.encode("utf-8", ERRORS)
  except UnicodeEncodeError as e:
    raise BadId(text.count("\x00", 0, e.start), "surrogate") from None
  back = data.decode("utf-8", ERRORS)
  if back != text:
    at = next((i for i, (a, b) in enumerate(zip(back, text)) if a != b), len(back))
    raise BadId(back.count("\x00", 0, at), "surrogate")
  return data


class BadId(Exception):
  """An id that cannot be one: ``reason`` is ``type``, ``nul`` or ``surrogate``."""

  def __init__(self, index: int, reason: str) -> None:
    super().__init__(index, reason)
    self.index, self.reason = index, reason
