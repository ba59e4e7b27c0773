"""TREC run and qrels files, pytrec_eval-style dicts and pandas DataFrames, in and out.

A run file has one retrieved document per line, ``qid Q0 docid rank score tag`` (extra trailing
columns are ignored, as by trec_eval); a qrels file has one judgment per line, ``qid iter docid
rel`` with an integer grade (``-1`` = pooled but unjudged). The rules, the same for every file:

* **Text.** A file is UTF-8 (a UTF-8 byte order mark at its start is skipped); ids are the exact
  text between separators, compared byte for byte (trec_eval's ``strcmp``). Invalid UTF-8 and
  NUL bytes are errors naming the line.
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
:class:`Ids` vocabularies (``qid_vocab``, ``docid_vocab``): ``qid_vocab[qid_codes[i]]`` is row
``i``'s query id. Ids become integers once, while the file is read: each id is hashed from its
bytes (64 bits), equal hashes are grouped by a hash table in NumPy and every grouped id is
compared byte for byte with its group's first, so no string is ever sorted and a hash collision
costs time, never a wrong id. A vocabulary lists its ids in order of first appearance. To match
the documents of a run with those of the qrels, ``run.docid_vocab.index(qrels.docid_vocab)``
gives each qrels document's run code (``-1`` where the run never retrieved it);
``Ids.argsort`` gives the byte (``strcmp``) order that trec_eval's tie-breaking and query order
use. The former columns ``qid``/``docid`` (NumPy byte strings) are still there, built from the
codes when first used; they are as wide as the longest id, so new code should use the codes.

Reading is vectorised with NumPy over blocks of about a megabyte (no Python loop per line), in
time and memory proportional to the file's size (``bench/bench_read.py``).
:func:`iter_run_chunks` reads a run a few queries at a time, for runs bigger than memory.

The DataFrame adapters (:func:`run_from_frame`, :func:`qrels_from_frame`, :func:`run_to_frame`,
:func:`qrels_to_frame`) import pandas when called; ``import jaxrank`` never does.
"""

from __future__ import annotations

import codecs
import functools
import os
import sys
import zlib
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pandas is optional and imported only when an adapter is called
  import pandas

__all__ = [
    "Ids", "Qrels", "Run", "TrecFormatError", "as_qrels", "as_run", "iter_run_chunks",
    "qrels_from_frame", "qrels_to_frame", "read_qrels", "read_run", "run_from_frame",
    "run_to_frame", "write_qrels", "write_run",
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


# ----------------------------------------------------------------------------------------------
# Ids as bytes in NumPy buffers: 8-byte windows, hashes, comparisons.

_PAD = 16  # zero bytes after every buffer, so an 8-byte window at any id's start stays inside
_MASK = np.array([(1 << (8 * r)) - 1 for r in range(8)] + [(1 << 64) - 1], np.uint64)
_K0 = np.uint64(0x9E3779B97F4A7C15)
_K1 = np.uint64(0xFF51AFD7ED558CCD)
_K2 = np.uint64(0xC4CEB9FE1A85EC53)
_S29, _S33 = np.uint64(29), np.uint64(33)


def _padded(data: bytes | bytearray | memoryview) -> np.ndarray:
  """A uint8 copy of ``data`` followed by ``_PAD`` zero bytes."""
  buf = np.zeros(len(data) + _PAD, np.uint8)
  buf[:len(data)] = np.frombuffer(data, np.uint8)
  return buf


def _windows(buf: np.ndarray) -> np.ndarray:
  """``w[i]`` = bytes ``i .. i+7`` of ``buf`` as one little-endian uint64 (a strided view)."""
  return np.ndarray((buf.size - 7,), np.dtype("<u8"), buffer=buf, strides=(1,))


def _hash_ids(win: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
  """64-bit hashes of the byte strings at ``starts`` (``lens`` bytes each) of a padded buffer.

  Each 8-byte word is mixed in (multiply, xor-shift), then MurmurHash3's finaliser; the length
  is the seed. Equal strings hash equal; unequal ones are told apart by a byte comparison."""
  h = lens.astype(np.uint64) * _K0
  h ^= win[starts] & _MASK[np.minimum(lens, 8)]
  h *= _K1
  h ^= h >> _S29
  rest, j = np.flatnonzero(lens > 8), 8
  while rest.size:
    left = lens[rest] - j
    x = h[rest] ^ (win[starts[rest] + j] & _MASK[np.minimum(left, 8)])
    x *= _K1
    x ^= x >> _S29
    h[rest] = x
    rest, j = rest[left > 8], j + 8
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
  while rest.size:
    left = lens[rest] - j
    mask = _MASK[np.clip(left, 0, 8)]
    same = (win_a[starts_a[rest] + j] & mask) == (win_b[starts_b[rest] + j] & mask)
    equal[rest[~same]] = False
    rest, j = rest[same & (left > 8)], j + 8
  return equal


def _index_dtype(n: int) -> type:
  return np.int32 if n < 2**31 - 1 else np.int64


def _group_hashes(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Groups equal values of ``h`` (uint64): ``(codes, first)`` with ``codes[i]`` the group of
  row ``i`` (groups numbered in order of first appearance) and ``first[g]`` group ``g``'s first
  row. An open-addressing hash table in NumPy (linear probing, at most half full): each round
  every pending row looks at its slot, claims it if empty (the smallest row wins), stops if the
  slot's owner has its hash, or moves one slot on. No sorting; O(n) expected."""
  n = h.size
  itype = _index_dtype(n)
  if n == 0:
    return np.zeros(0, itype), np.zeros(0, itype)
  bits = max(3, (2 * n - 1).bit_length())
  mask = (1 << bits) - 1
  owner = np.full(1 << bits, n, itype)
  rows = np.arange(n, dtype=itype)
  slots = (h >> np.uint64(64 - bits)).astype(itype)
  owner_of = np.empty(n, itype)
  while rows.size:
    got = owner[slots]
    empty = got == n
    if empty.any():
      np.minimum.at(owner, slots[empty], rows[empty])
      got[empty] = owner[slots[empty]]
    hit = got == rows
    other = np.flatnonzero(~hit)
    hit[other] = h[got[other]] == h[rows[other]]
    owner_of[rows[hit]] = got[hit]
    miss = ~hit
    rows, slots = rows[miss], (slots[miss] + 1) & mask
  is_first = owner_of == np.arange(n, dtype=itype)
  code_of_row = np.cumsum(is_first, dtype=itype) - 1
  return code_of_row[owner_of], np.flatnonzero(is_first).astype(itype)


class _Collision(Exception):
  """Two different ids with one 64-bit hash: the caller takes the exact (slower) path."""


def _group_ids(win: np.ndarray, starts: np.ndarray, lens: np.ndarray,
               h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """``(codes, first)`` of the byte strings at ``starts`` (as :func:`_group_hashes`), every
  grouped string checked against its group's first; raises :class:`_Collision` otherwise."""
  n = h.size
  heads = None
  if n > 1:  # equal ids in a row (a run's qids): group the first of each streak only
    same = np.flatnonzero(h[1:] == h[:-1]) + 1
    if same.size:
      if not (np.array_equal(lens[same], lens[same - 1]) and
              _equal_bytes(win, starts[same], win, starts[same - 1], lens[same]).all()):
        raise _Collision
      if same.size > n // 8:
        heads = np.ones(n, bool)
        heads[same] = False
  if heads is not None:
    head_rows = np.flatnonzero(heads)
    codes, first = _group_ids(win, starts[head_rows], lens[head_rows], h[head_rows])
    return codes[np.cumsum(heads) - 1], head_rows[first].astype(codes.dtype)
  codes, first = _group_hashes(h)
  rep = first[codes]
  dup = np.flatnonzero(rep != np.arange(n, dtype=rep.dtype))
  if dup.size:
    r = rep[dup]
    if not (np.array_equal(lens[dup], lens[r]) and
            _equal_bytes(win, starts[dup], win, starts[r], lens[dup]).all()):
      raise _Collision
  return codes, first


def _group_ids_exactly(buf: np.ndarray, starts: np.ndarray,
                       lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """:func:`_group_ids` with a Python dict of the ids' bytes (after a hash collision only)."""
  table: dict[bytes, int] = {}
  codes = np.empty(starts.size, _index_dtype(starts.size))
  first = []
  for i, (s, n) in enumerate(zip(starts.tolist(), lens.tolist())):
    key = buf[s:s + n].tobytes()
    code = table.setdefault(key, len(table))
    if code == len(first):
      first.append(i)
    codes[i] = code
  return codes, np.asarray(first, codes.dtype)


def _factorize(buf: np.ndarray, starts: np.ndarray, lens: np.ndarray,
               h: np.ndarray | None = None) -> tuple[np.ndarray, Ids]:
  """Codes and the vocabulary of the byte strings at ``starts`` in the padded buffer ``buf``."""
  win = _windows(buf)
  h = _hash_ids(win, starts, lens) if h is None else h
  try:
    codes, first = _group_ids(win, starts, lens, h)
  except _Collision:
    codes, first = _group_ids_exactly(buf, starts, lens)
  return codes, Ids._from_buffer(win, starts[first], lens[first], h[first])


class Ids:
  """A vocabulary: distinct ids (UTF-8 text), the values behind a :class:`Run`'s or
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

  __slots__ = ("_words", "_woff", "_len", "_hash")

  def __init__(self, words: np.ndarray, word_offsets: np.ndarray, lengths: np.ndarray,
               hashes: np.ndarray) -> None:
    self._words, self._woff, self._len, self._hash = words, word_offsets, lengths, hashes

  @classmethod
  def _from_buffer(cls, win: np.ndarray, starts: np.ndarray, lens: np.ndarray,
                   hashes: np.ndarray) -> Ids:
    """The ids at ``starts`` of a padded buffer (its windows ``win``), given their hashes."""
    lens = lens.astype(np.int64)
    woff = np.zeros(lens.size + 1, np.int64)
    np.cumsum(lens // 8 + 1, out=woff[1:])  # at least one zero byte after every id
    words = np.zeros(int(woff[-1]) + 1, np.dtype("<u8"))
    rest, j = np.arange(lens.size), 0
    while rest.size:
      left = lens[rest] - 8 * j
      words[woff[rest] + j] = win[starts[rest] + 8 * j] & _MASK[np.clip(left, 0, 8)]
      rest, j = rest[left > 8], j + 1
    return cls(words, woff, lens, hashes)

  @classmethod
  def from_strings(cls, values: Iterable[str]) -> tuple[Ids, np.ndarray]:
    """Factorizes ``values``: ``(vocabulary, codes)`` with ``vocabulary[codes[i]] ==
    values[i]`` (distinct values in order of first appearance).

    Raises ``TypeError`` for a value that is not a ``str`` and ``ValueError`` for one that
    holds a NUL character or is not valid Unicode (a lone surrogate): ids must be text that a
    TREC file can hold.

    Example:
      >>> from jaxrank import io
      >>> vocab, codes = io.Ids.from_strings(["b", "a", "b"])
      >>> vocab.tolist(), codes.tolist()
      (['b', 'a'], [0, 1, 0])
    """
    values = values if isinstance(values, list) else list(values)
    try:
      uniq = list(dict.fromkeys(values))
    except TypeError:
      bad = next(v for v in values if not isinstance(v, str))
      raise _BadId(values.index(bad), "type") from None
    lookup = dict(zip(uniq, range(len(uniq))))
    codes = np.fromiter(map(lookup.__getitem__, values), _index_dtype(len(uniq)),
                        count=len(values))
    try:
      vocab = cls._from_unique(uniq)
    except _BadId as e:
      raise _BadId(int(np.flatnonzero(codes == e.index)[0]), e.reason) from None
    return vocab, codes

  @classmethod
  def _from_unique(cls, uniq: list) -> Ids:
    """The vocabulary of distinct strings ``uniq`` (raises :class:`_BadId` for a bad one)."""
    try:
      text = "\x00".join(uniq)
    except TypeError:
      raise _BadId(next(i for i, v in enumerate(uniq) if not isinstance(v, str)),
                   "type") from None
    if text.count("\x00") != max(len(uniq) - 1, 0):
      raise _BadId(next(i for i, v in enumerate(uniq) if "\x00" in v), "nul")
    try:
      data = text.encode("utf-8")
    except UnicodeEncodeError as e:
      raise _BadId(text.count("\x00", 0, e.start), "surrogate") from None
    buf = _padded(data)
    seps = np.flatnonzero(buf[:len(data)] == 0)
    starts = np.concatenate([[0], seps + 1]) if uniq else np.zeros(0, np.int64)
    lens = np.concatenate([seps, [len(data)]]) - starts if uniq else starts
    win = _windows(buf)
    return cls._from_buffer(win, starts, lens, _hash_ids(win, starts, lens))

  def __len__(self) -> int:
    return int(self._len.size)

  def __getitem__(self, i: int) -> str:
    k = len(self)
    if not -k <= i < k:
      raise IndexError(f"id index {i} out of range for a vocabulary of {k} ids")
    start = 8 * int(self._woff[i % k])
    return self._words.view(np.uint8)[start:start + int(self._len[i % k])].tobytes().decode()

  def __iter__(self) -> Iterator[str]:
    return iter(self.tolist())

  def __repr__(self) -> str:
    head = ", ".join(repr(self[i]) for i in range(min(len(self), 3)))
    return f"Ids({len(self)} ids: [{head}{', ...' if len(self) > 3 else ''}])"

  @property
  def lengths(self) -> np.ndarray:
    """Each id's length in bytes (UTF-8)."""
    return self._len

  def tolist(self) -> list[str]:
    """The ids as a list of ``str``, in code order."""
    if not len(self):
      return []
    text = self._words.view(np.uint8).tobytes().decode()
    if self._len.min() > 0:  # every id is followed by at least one NUL; padding is NULs
      return list(filter(None, text.split("\x00")))
    data = self._words.view(np.uint8)
    return [data[8 * s:8 * s + n].tobytes().decode()
            for s, n in zip(self._woff[:-1].tolist(), self._len.tolist())]

  def bytes_array(self) -> np.ndarray:
    """The ids as a NumPy byte-string array (``S`` dtype, as wide as the longest id)."""
    width = int(self._len.max()) if len(self) else 1
    words = (width + 7) // 8
    out = np.zeros((len(self), words), np.dtype("<u8"))
    used = (self._len + 7) // 8  # words holding bytes of the id
    rest, j = np.flatnonzero(used), 0
    while rest.size:
      out[rest, j] = self._words[self._woff[rest] + j]
      rest, j = rest[used[rest] > j + 1], j + 1
    return out.view(f"S{8 * words}").reshape(-1).astype(f"S{max(width, 1)}")

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
    small, large = (self, other) if len(self) <= len(other) else (other, self)
    codes, first = _group_hashes(small._hash)
    if first.size != len(small):  # two ids of one vocabulary share a hash
      return self._index_exactly(other)
    at = _probe(small._hash, large._hash)
    found = np.flatnonzero(at >= 0)
    s_rows, l_rows = at[found], found
    ok = small._len[s_rows] == large._len[l_rows]
    ok[ok] = _equal_bytes(small._windows(), 8 * small._woff[s_rows[ok]], large._windows(),
                          8 * large._woff[l_rows[ok]], small._len[s_rows[ok]])
    if not ok.all():  # equal hashes, different ids: rare, exact
      return self._index_exactly(other)
    mine, theirs = (s_rows, l_rows) if small is self else (l_rows, s_rows)
    out[theirs] = mine
    return out

  def _index_exactly(self, other: Ids) -> np.ndarray:
    table = {v: i for i, v in enumerate(self.tolist())}
    return np.fromiter((table.get(v, -1) for v in other.tolist()), np.int64, count=len(other))

  def _windows(self) -> np.ndarray:
    return _windows(np.concatenate([self._words.view(np.uint8), np.zeros(8, np.uint8)]))

  def argsort(self) -> np.ndarray:
    """The codes in byte order of their ids (UTF-8 bytes compared unsigned, trec_eval's
    ``strcmp``; a prefix comes first). Sorts 8-byte words, refining ties word by word.

    Example:
      >>> from jaxrank import io
      >>> vocab, _ = io.Ids.from_strings(["b", "ab", "a", "abcdefghij", "abcdefghi"])
      >>> [vocab[i] for i in vocab.argsort()]
      ['a', 'ab', 'abcdefghi', 'abcdefghij', 'b']
    """
    k = len(self)
    if k < 2:
      return np.arange(k, dtype=np.int64)
    big = self._words.astype(">u8").view(np.uint64)  # byte order = numeric order
    start, nw = self._woff[:-1], np.diff(self._woff)
    order = np.argsort(big[start], kind="stable")
    key = big[start][order]
    bound = np.ones(k, bool)
    bound[1:] = key[1:] != key[:-1]
    j = 1
    while True:
      seg = np.cumsum(bound) - 1
      size = np.bincount(seg)
      longest = np.maximum.reduceat(nw[order], np.flatnonzero(bound))
      pos = np.flatnonzero((size[seg] > 1) & (longest[seg] > j))
      if not pos.size:
        return order
      ids = order[pos]
      word = np.where(nw[ids] > j, big[start[ids] + np.minimum(j, nw[ids] - 1)], 0)
      o = np.lexsort((word, seg[pos]))
      order[pos], word, sp = ids[o], word[o], seg[pos][o]
      new = np.ones(pos.size, bool)
      new[1:] = (word[1:] != word[:-1]) | (sp[1:] != sp[:-1])
      bound[pos] |= new
      j += 1


def _probe(keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
  """For each query hash, the row of ``keys`` (distinct uint64) holding it, or -1."""
  n = keys.size
  bits = max(3, (2 * n - 1).bit_length())
  mask = (1 << bits) - 1
  table = np.full(1 << bits, -1, np.int64)
  rows, slots = np.arange(n), (keys >> np.uint64(64 - bits)).astype(np.int64)
  while rows.size:  # insert (keys are distinct: every row finds an empty slot)
    empty = table[slots] < 0
    table[slots[empty]] = rows[empty]
    won = np.zeros(rows.size, bool)
    won[empty] = table[slots[empty]] == rows[empty]
    rows, slots = rows[~won], (slots[~won] + 1) & mask
  out = np.full(queries.size, -1, np.int64)
  rows, slots = np.arange(queries.size), (queries >> np.uint64(64 - bits)).astype(np.int64)
  while rows.size:
    got = table[slots]
    live = got >= 0
    hit = np.zeros(rows.size, bool)
    hit[live] = keys[got[live]] == queries[rows[live]]
    out[rows[hit]] = got[hit]
    more = live & ~hit
    rows, slots = rows[more], (slots[more] + 1) & mask
  return out


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
  return (f"{what} {value!r}{where} is not valid Unicode (a lone surrogate cannot be written "
          "as UTF-8)")


def _column_ids(values: Any, what: str) -> tuple[np.ndarray, Ids]:
  """Codes and vocabulary of a column of ids given as ``str`` or UTF-8 ``bytes``."""
  vals = values.tolist() if isinstance(values, np.ndarray) else list(values)
  text: dict[Any, str] = {}
  for v in dict.fromkeys(vals):
    if isinstance(v, (bytes, np.bytes_)):
      try:
        text[v] = bytes(v).decode()
      except UnicodeDecodeError:
        raise ValueError(f"{what} {bytes(v)!r} is not valid UTF-8") from None
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
    """``[N]`` query ids as UTF-8 byte strings (built on first use from the codes)."""
    if "qid" not in self._cache:
      self._cache["qid"] = self.qid_vocab.bytes_array()[self.qid_codes]
    return self._cache["qid"]

  @property
  def docid(self) -> np.ndarray:
    """``[N]`` document ids as UTF-8 byte strings (built on first use from the codes)."""
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
  * ``qid``, ``docid``: the same ids as ``[N]`` UTF-8 byte strings (NumPy ``S`` arrays), built
    from the codes on first use, for code written before the codes existed.

  ``Run(qid, docid, score, rank=None, tag="jaxrank")`` takes columns of ids (``str`` or UTF-8
  ``bytes``); ``Run(qid_codes=..., qid_vocab=..., docid_codes=..., docid_vocab=...,
  score=...)`` takes codes. Immutable.

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
_LONG = 64  # numbers longer than this (in bytes) are read one by one with Python's parser
_POW10 = np.array([10**i for i in range(19)], np.uint64)
_POW10_EXP = np.array([10**i for i in range(6)], np.int64)
_POW10_F = np.array([10.0**i for i in range(23)])  # exact doubles
_EXTENDED = np.finfo(np.longdouble).nmant >= 63  # x86's 80-bit long double (or wider)
_POW10_L = np.cumprod(np.r_[np.longdouble(1), np.full(27, 10, np.longdouble)])  # exact to 1e27
_NAMES = {"-": "<stdin>"}


def _decompress(data: np.ndarray, name: str) -> bytes:
  return b"".join(_gunzip([data.tobytes()], name))


def _load(path: PathLike | bytes, name: str | None) -> tuple[np.ndarray, int, int, str]:
  """The whole content, zero-padded: ``(buffer, first byte after a BOM, end, name)``."""
  if isinstance(path, (bytes, bytearray, memoryview)):
    name = name or "<bytes>"
    buf = _padded(path)
  else:
    path = os.fspath(path)
    name = name or _NAMES.get(path, path)
    if path == "-":
      buf = _padded(sys.stdin.buffer.read())
    else:
      try:
        with open(path, "rb") as f:
          size = os.fstat(f.fileno()).st_size
          buf = np.zeros(size + _PAD, np.uint8)
          view, got = memoryview(buf), 0
          while got < size:
            n = f.readinto(view[got:size])
            if not n:
              break
            got += n
          more = f.read()  # a file that grew, or a pipe with no size
          if more or got < size:
            buf = _padded(bytes(buf[:got]) + more)
      except OSError as e:
        raise FileNotFoundError(f"cannot read {path}: {e.strerror}") from None
  end = buf.size - _PAD
  if end >= 2 and buf[0] == 0x1F and buf[1] == 0x8B:
    buf = _padded(_decompress(buf[:end], name))
    end = buf.size - _PAD
  begin = 3 if end >= 3 and bytes(buf[:3]) == codecs.BOM_UTF8 else 0
  return buf, begin, end, name


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


def _count_lines(buf: np.ndarray, lo: int, hi: int) -> int:
  """The number of line ends in ``buf[lo:hi]``."""
  return int(np.count_nonzero(_line_ends(buf[lo:hi], int(buf[hi]))))


def _block_end(buf: np.ndarray, lo: int, hi: int, end: int) -> int:
  """The end of the last whole line in ``buf[lo:hi]`` (or, for a longer line, the end of the
  line that goes past ``hi``; ``end`` at the end of the data)."""
  if hi >= end:
    return end
  w = max(lo, hi - 4096)
  while True:
    ends = np.flatnonzero(_line_ends(buf[w:hi], int(buf[hi])))
    if ends.size:
      return w + int(ends[-1]) + 1
    if w == lo:
      break
    w = max(lo, w - (hi - w))
  while hi < end:  # a line longer than the block
    nxt = min(end, hi + _BLOCK)
    ends = np.flatnonzero(_line_ends(buf[hi:nxt], int(buf[nxt])))
    if ends.size:
      return hi + int(ends[0]) + 1
    hi = nxt
  return end


class _Format:
  """The columns of one file format: ``(name, min fields, max fields or None, id fields,
  integer field and its name, float field or None)``."""

  def __init__(self, min_fields: int, max_fields: int | None, int_name: str,
               float_field: int | None) -> None:
    self.min, self.max, self.int_name, self.float_field = (min_fields, max_fields, int_name,
                                                           float_field)


_RUN = _Format(6, None, "the rank (4th field)", 4)
_QRELS = _Format(4, 4, "the relevance (4th field)", None)
_SCORE = "the score (5th field)"


def _field_bytes(win: np.ndarray, starts: np.ndarray, lens: np.ndarray, width: int) -> np.ndarray:
  """``[n, width]`` uint8: the first ``width`` bytes of each field, zeros after its end."""
  words = (width + 7) // 8
  if words == 1:
    g = win[starts].view(np.uint8).reshape(-1, 8)
  else:
    at = np.minimum(starts[:, None] + 8 * np.arange(words), win.size - 1)  # past the end: zeroed
    g = win[at].view(np.uint8).reshape(-1, 8 * words)
  g = g[:, :width]
  g[np.arange(width) >= lens[:, None]] = 0
  return g


def _text(buf: np.ndarray, start: int, n: int) -> str:
  return buf[start:start + n].tobytes().decode(errors="replace")


def _parse_ints(buf: np.ndarray, win: np.ndarray, starts: np.ndarray,
                lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """int64 values of ``[+-]digits`` fields, and a status per field (0 ok, 1 not an integer,
  2 outside int64's range)."""
  n = lens.size
  values = np.zeros(n, np.int64)
  status = np.zeros(n, np.int8)
  short = np.flatnonzero(lens <= _LONG)
  if short.size:
    s, ln = starts[short], lens[short]
    g = _field_bytes(win, s, ln, int(ln.max()))
    neg = g[:, 0] == 45
    signed = neg | (g[:, 0] == 43)
    col = np.arange(g.shape[1])
    inside = (col >= signed[:, None]) & (col < ln[:, None])
    digit = g - np.uint8(48)
    is_digit = digit < 10
    syntax = (is_digit | ~inside).all(1) & (ln > signed)
    digit[~(inside & is_digit)] = 0
    power = (ln - 1)[:, None] - col
    top = np.where(digit > 0, power, -1).max(1)
    v = (digit * _POW10[np.clip(power, 0, 18)]).sum(1, dtype=np.uint64)
    fits = (top < 19) & (v <= np.where(neg, 2**63, 2**63 - 1).astype(np.uint64))
    values[short] = np.where(neg, np.uint64(0) - v, v).view(np.int64)
    status[short] = np.where(~syntax, 1, np.where(fits, 0, 2))
  for i in np.flatnonzero(lens > _LONG).tolist():
    text = buf[starts[i]:starts[i] + lens[i]].tobytes()
    body = text[1:] if text[:1] in (b"+", b"-") else text
    if not (body and body.isdigit() and body.isascii()):
      status[i] = 1
    elif -2**63 <= int(text) < 2**63:
      values[i] = int(text)
    else:
      status[i] = 2
  return values, status


_DECIMAL = None  # compiled on first use: the C syntax of a finite decimal number


def _python_float(text: bytes) -> tuple[float, int]:
  """``(value, status)`` of one field read by Python's (correctly rounded) parser."""
  import re
  global _DECIMAL
  if _DECIMAL is None:
    _DECIMAL = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
  if _DECIMAL.fullmatch(text):
    return float(text), 0
  body = text.lstrip(b"+-")[:9].lower() if text[:1] in (b"+", b"-") and len(text) > 1 else (
      text.lower())
  if len(text) - len(body) <= 1 and body in (b"inf", b"infinity"):
    return (-np.inf if text[:1] == b"-" else np.inf), 0
  if len(text) - len(body) <= 1 and body == b"nan":
    return np.nan, 2
  return 0.0, 1


def _parse_floats(buf: np.ndarray, win: np.ndarray, starts: np.ndarray,
                  lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """float64 values of C-syntax decimal fields (see the module docstring), and a status per
  field (0 ok, 1 not a number, 2 NaN). Exact: a field with at most 19 significant digits and a
  decimal exponent within +-22 is ``M * 10**E`` or ``M / 10**-E`` in doubles (both exact, one
  rounding; Clinger's fast path), within +-27 the same in x86's 80-bit long double unless the
  result lies exactly halfway between two doubles; anything else goes to Python's parser."""
  n = lens.size
  values = np.zeros(n, np.float64)
  status = np.zeros(n, np.int8)
  short = np.flatnonzero(lens <= _LONG)
  if short.size:
    s, ln = starts[short], lens[short]
    g = _field_bytes(win, s, ln, max(8, int(ln.max())))
    w = g.shape[1]
    col = np.arange(w)
    inside = col < ln[:, None]
    neg = g[:, 0] == 45
    signed = neg | (g[:, 0] == 43)
    digit = g - np.uint8(48)
    is_digit = (digit < 10) & inside
    is_dot = g == 46
    is_e = ((g | 32) == 101) & inside
    has_e = is_e.any(1)
    epos = np.where(has_e, is_e.argmax(1), ln)
    mant = inside & (col >= signed[:, None]) & (col < epos[:, None])
    mdig = mant & is_digit
    mdot = mant & is_dot
    ndot = mdot.sum(1)
    ok = ~(mant & ~is_digit & ~is_dot).any(1) & (ndot <= 1) & mdig.any(1)
    rows = np.arange(short.size)
    after_e = g[rows, np.minimum(epos + 1, w - 1)]
    esigned = has_e & (epos + 1 < ln) & ((after_e == 43) | (after_e == 45))
    edig = inside & (col > (epos + esigned)[:, None])
    ok &= ~has_e | (~(edig & ~is_digit).any(1) & edig.any(1))
    # M: the mantissa's digits as one integer; E: its decimal exponent.
    right = np.cumsum(mdig[:, ::-1], axis=1, dtype=np.int16)[:, ::-1] - mdig
    mdv = np.where(mdig, digit, 0)
    top = np.where(mdv > 0, right, -1).max(1)
    m = (mdv * _POW10[np.clip(right, 0, 18)]).sum(1, dtype=np.uint64)
    dot = np.where(ndot > 0, mdot.argmax(1), epos)
    nfrac = (mdig & (col > dot[:, None])).sum(1)
    epow = (ln - 1)[:, None] - col
    edv = np.where(edig, digit, 0)
    etop = np.where(edv > 0, epow, -1).max(1)
    x = (edv * _POW10_EXP[np.clip(epow, 0, 5)]).sum(1, dtype=np.int64)
    e = np.where(esigned & (after_e == 45), -x, x) - nfrac
    small = (top < 19) & (etop < 6)
    zero = ok & (top < 0)
    fast = ok & small & ~zero & (m <= 2**53) & (np.abs(e) <= 22)
    v = np.zeros(short.size)
    mf, p = m.astype(np.float64), _POW10_F[np.clip(np.abs(e), 0, 22)]
    v[fast] = np.where(e >= 0, mf * p, mf / p)[fast]
    slow = ok & ~zero & ~fast
    if _EXTENDED and slow.any():
      ext = np.flatnonzero(slow & small & (np.abs(e) <= 27))
      ml, pl = m[ext].astype(np.longdouble), _POW10_L[np.abs(e[ext])]
      q = np.where(e[ext] >= 0, ml * pl, ml / pl)
      d = q.astype(np.float64)
      r = np.abs(q - d.astype(np.longdouble))
      half = np.spacing(d).astype(np.longdouble) / 2
      exact = (r != half) & (r != half / 2)
      v[ext[exact]] = d[exact]
      slow[ext[exact]] = False
    v = np.where(neg, -v, v)
    for i in np.flatnonzero(slow).tolist():  # with their sign
      v[i], _ = _python_float(buf[s[i]:s[i] + ln[i]].tobytes())
    values[short] = v
    st = np.where(ok, 0, 1).astype(np.int8)
    for i in np.flatnonzero(~ok).tolist():  # inf, infinity, nan, or not a number
      v_i, st[i] = _python_float(buf[s[i]:s[i] + ln[i]].tobytes())
      values[short[i]] = v_i
    status[short] = st
  for i in np.flatnonzero(lens > _LONG).tolist():
    values[i], status[i] = _python_float(buf[starts[i]:starts[i] + lens[i]].tobytes())
  return values, status


_KEYS = ("q_start", "q_len", "q_hash", "d_start", "d_len", "d_hash", "int", "float")


def _pythonic(text: str, integer: bool) -> bool:
  """Whether Python's ``int``/``float`` would accept ``text`` (which C's syntax does not)."""
  try:
    (int if integer else float)(text)
  except ValueError:
    return False
  return True


def _parse_block(buf: np.ndarray, win: np.ndarray, lo: int, hi: int, fmt: _Format, name: str,
                 line0: int) -> tuple[dict[str, np.ndarray], int]:
  """The data lines of ``buf[lo:hi]`` (whole lines; ``line0`` lines come before it) as columns,
  and the number of line ends in it. Raises :class:`TrecFormatError` for its first bad line."""
  c = buf[lo:hi]
  eol_mask = _line_ends(c, int(buf[hi]))
  eol = np.flatnonzero(eol_mask)
  errors: list[tuple[int, int, str]] = []  # (line index in the block, priority, message)

  def line_col(p: int) -> tuple[int, int]:
    at = int(np.searchsorted(eol, p))
    return at, p - (int(eol[at - 1]) + 1 if at else 0) + 1

  if not c.all():
    at, col = line_col(int(np.argmin(c)))
    errors.append((at, 0, f"NUL byte at column {col}; a TREC file is text and ids cannot hold "
                          "NUL"))
  if c.size and c.max() >= 128:
    try:
      codecs.utf_8_decode(c.data, "strict", True)
    except UnicodeDecodeError as e:
      at, col = line_col(e.start)
      errors.append((at, 0, f"invalid UTF-8 (byte 0x{int(c[e.start]):02x} at column {col}); "
                            "TREC files are read as UTF-8"))
  ws = (c == 32) | ((c - np.uint8(9)) <= np.uint8(4))  # space, \t, \n, \v, \f, \r
  edges = np.flatnonzero(np.diff(ws.view(np.int8), prepend=np.int8(1), append=np.int8(1)))
  starts, ends = edges[0::2], edges[1::2]
  nlines = eol.size + int(c.size > 0 and not eol_mask[-1])
  line_starts = np.zeros(nlines, np.int64)
  line_starts[1:] = eol[:nlines - 1] + 1
  first = np.searchsorted(starts, line_starts)
  count = np.diff(first, append=starts.size)
  lines = np.flatnonzero(count)
  lines = lines[c[starts[first[lines]]] != 35]  # '#': a comment line
  count = count[lines]
  bad = (count < fmt.min) if fmt.max is None else (count != fmt.max)
  if bad.any():
    i = int(np.argmax(bad))
    want = f"at least {fmt.min}" if fmt.max is None else f"{fmt.max}"
    errors.append((int(lines[i]), 1, f"expected {want} whitespace-separated fields, got "
                                     f"{int(count[i])}"))
    lines = lines[~bad]
  tok = first[lines]
  out: dict[str, np.ndarray] = {}
  for key, field in (("q", 0), ("d", 2)):
    s = starts[tok + field] + lo
    n = (ends[tok + field] + lo - s).astype(np.int32)
    out[key + "_start"], out[key + "_len"], out[key + "_hash"] = s, n, _hash_ids(win, s, n)

  def number(field: int, parse, what: str, messages: dict[int, str]) -> np.ndarray:
    s = starts[tok + field] + lo
    n = (ends[tok + field] + lo - s).astype(np.int64)
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

  out["int"] = number(3, _parse_ints, fmt.int_name,
                      {1: "must be an integer", 2: f"must be an integer {INT64_RANGE}",
                       3: "must be an integer in C syntax ([+-]digits)"})
  if fmt.float_field is not None:
    out["float"] = number(fmt.float_field, _parse_floats, _SCORE, {
        1: "must be a number", 2: "must be a number",
        3: "must be a number in C syntax ([+-]digits[.digits][e[+-]digits], or inf)"})
  if errors:
    at, _, message = min(errors)
    raise TrecFormatError(f"{name}:{line0 + at + 1}: {message}")
  return out, int(eol.size)


class _Rows:
  """The data lines of a buffer, parsed: per row the query and document ids (start, length,
  hash in the buffer), the integer column and the float column (runs)."""

  def __init__(self, buf: np.ndarray, parts: list[dict[str, np.ndarray]], fmt: _Format) -> None:
    self.buf = buf
    empty = {"q_start": np.int64, "q_len": np.int32, "q_hash": np.uint64, "d_start": np.int64,
             "d_len": np.int32, "d_hash": np.uint64, "int": np.int64, "float": np.float64}
    for key in _KEYS:
      if key == "float" and fmt.float_field is None:
        continue
      arrays = [p[key] for p in parts]
      setattr(self, key, np.concatenate(arrays) if arrays else np.zeros(0, empty[key]))

  def __len__(self) -> int:
    return int(self.q_start.size)

  def line_of(self, row: int) -> bytes:
    """The text of the line holding row ``row`` (from its query id to the line's end)."""
    start, end = int(self.q_start[row]), self.buf.size - _PAD
    stop = start
    while stop < end:
      nxt = min(end, stop + 4096)
      hit = np.flatnonzero((self.buf[stop:nxt] == 10) | (self.buf[stop:nxt] == 13))
      if hit.size:
        return self.buf[start:stop + int(hit[0])].tobytes()
      stop = nxt
    return self.buf[start:end].tobytes()

  def ids(self, key: str, lo: int, hi: int) -> tuple[np.ndarray, Ids]:
    """Codes and vocabulary of the query (``key="q"``) or document ids of rows ``lo:hi``."""
    rows = slice(lo, hi)
    return _factorize(self.buf, getattr(self, key + "_start")[rows],
                      getattr(self, key + "_len")[rows], getattr(self, key + "_hash")[rows])


def _parse(buf: np.ndarray, begin: int, end: int, name: str, fmt: _Format,
           line0: int = 0) -> _Rows:
  """Every data line of ``buf[begin:end]``, one block of whole lines at a time."""
  win = _windows(buf)
  parts, lo, line = [], begin, line0
  while lo < end:
    hi = _block_end(buf, lo, min(lo + _BLOCK, end), end)
    part, nlines = _parse_block(buf, win, lo, hi, fmt, name, line)
    parts.append(part)
    lo, line = hi, line + nlines
  return _Rows(buf, parts, fmt)


def _run_of(rows: _Rows, lo: int, hi: int) -> Run:
  qc, qv = rows.ids("q", lo, hi)
  dc, dv = rows.ids("d", lo, hi)
  tag = rows.line_of(hi - 1).split()[5].decode() if hi > lo else "jaxrank"
  return Run(qid_codes=qc, qid_vocab=qv, docid_codes=dc, docid_vocab=dv,
             score=rows.float[lo:hi], rank=rows.int[lo:hi], tag=tag)


def read_run(path: PathLike | bytes, *, name: str | None = None) -> Run:
  """Reads a TREC run file ``qid Q0 docid rank score tag [ignored ...]``.

  The format rules (separators, line ends, UTF-8, C number syntax) are in the module
  docstring; gzip content is decompressed, ``"-"`` reads standard input.

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
  buf, begin, end, name = _load(path, name)
  rows = _parse(buf, begin, end, name, _RUN)
  return _run_of(rows, 0, len(rows))


def read_qrels(path: PathLike | bytes, *, name: str | None = None) -> Qrels:
  """Reads a TREC qrels file ``qid iter docid rel`` (integer ``rel``; ``-1`` = unjudged).

  Same rules and arguments as :func:`read_run`.

  Example:
    >>> from jaxrank import io
    >>> qrels = io.read_qrels(b"q1 0 d1 2\\nq1 0 d2 0\\n")
    >>> qrels.docid_vocab.tolist(), qrels.rel.tolist()
    (['d1', 'd2'], [2, 0])
  """
  buf, begin, end, name = _load(path, name)
  rows = _parse(buf, begin, end, name, _QRELS)
  qc, qv = rows.ids("q", 0, len(rows))
  dc, dv = rows.ids("d", 0, len(rows))
  return Qrels(qid_codes=qc, qid_vocab=qv, docid_codes=dc, docid_vocab=dv, rel=rows.int)


def _pieces(path: PathLike | bytes, name: str | None,
            size: int = 1 << 24) -> tuple[Iterator[bytes], str]:
  """The content in pieces of about ``size`` bytes (gzip decompressed, a leading BOM removed),
  and the name for messages. The file is opened now (so a missing one fails at once)."""
  close = None
  if isinstance(path, (bytes, bytearray, memoryview)):
    name = name or "<bytes>"
    data = bytes(path)
    read = iter([data[i:i + size] for i in range(0, len(data), size)]).__next__
  else:
    path = os.fspath(path)
    name = name or _NAMES.get(path, path)
    try:
      f = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as e:
      raise FileNotFoundError(f"cannot read {path}: {e.strerror}") from None
    close = None if path == "-" else f.close

    def read() -> bytes:
      piece = f.read(size)
      if not piece:
        raise StopIteration
      return piece

  def raw() -> Iterator[bytes]:
    try:
      while True:
        try:
          yield read()
        except StopIteration:
          return
    finally:
      if close is not None:
        close()

  def decoded() -> Iterator[bytes]:
    source = raw()
    first = b""
    for piece in source:
      first += piece
      if len(first) >= 3:
        break
    stream = chain([first], source)
    if first[:2] == b"\x1f\x8b":
      stream = _gunzip(stream, name)
      first = b""
      for piece in stream:
        first += piece
        if len(first) >= 3:
          break
      stream = chain([first], stream)
    head = next(stream, b"")
    if head.startswith(codecs.BOM_UTF8):
      head = head[3:]
    yield head
    yield from stream

  return decoded(), name


def _gunzip(stream: Iterable[bytes], name: str) -> Iterator[bytes]:
  """gzip members one after another, decompressed as they come (as ``gzip -d`` reads them)."""
  d = None
  for raw in stream:
    while raw:
      if d is None:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
      try:
        out = d.decompress(raw)
      except zlib.error as e:
        raise TrecFormatError(f"{name}:1: not a readable gzip file ({e})") from None
      if out:
        yield out
      raw, d = (d.unused_data, None) if d.eof else (b"", d)
  if d is not None:
    raise TrecFormatError(f"{name}:1: the gzip data ends early (a truncated file?)")


def _last_line_end(buf: np.ndarray, n: int) -> int:
  """The end of the last whole line in ``buf[:n]`` (0 if none). A CR at ``n - 1`` does not
  count: its LF may be in the next piece."""
  w = n - 1 if n and buf[n - 1] == 13 else n
  while w > 0:
    lo = max(0, w - 65536)
    ends = np.flatnonzero(_line_ends(buf[lo:w], int(buf[w])))
    if ends.size:
      return lo + int(ends[-1]) + 1
    w = lo
  return 0


def iter_run_chunks(path: PathLike | bytes, *, max_lines: int = 1_000_000,
                    name: str | None = None) -> Iterator[Run]:
  """Reads a run a few whole queries at a time, for runs bigger than memory.

  Each :class:`Run` yielded holds whole queries (all their lines), at most ``max_lines`` data
  lines unless one query alone has more (then it comes alone), in file order. Its codes and
  vocabularies are its own (a document's code differs between chunks); its ``tag`` is the tag
  of its last line, so the last chunk's is the file's ``runid``. Memory stays within a few
  times ``max_lines`` lines, whatever the file's size; gzip and ``"-"`` work as in
  :func:`read_run`. A query's lines must come together: a query id that comes back after its
  chunk was yielded raises :class:`TrecFormatError` naming the line (sort the file by query,
  or use :func:`read_run`). Errors in the file are raised when the reading reaches them.

  Example:
    >>> from jaxrank import io
    >>> text = b"a Q0 x 1 3 t\\na Q0 y 2 2 t\\nb Q0 x 1 1 t\\nc Q0 z 1 1 u\\n"
    >>> [(r.qid_vocab.tolist(), len(r), r.tag) for r in io.iter_run_chunks(text, max_lines=2)]
    [(['a'], 2, 't'), (['b', 'c'], 2, 'u')]
    >>> list(io.iter_run_chunks(b"a Q0 x 1 3 t\\nb Q0 x 1 1 t\\na Q0 y 2 2 t\\n", max_lines=1))
    Traceback (most recent call last):
    ...
    jaxrank.io.TrecFormatError: <bytes>:3: query 'a' appears again after its chunk was passed on \
(iter_run_chunks needs each query's lines together: sort the file by query, or use read_run)
  """
  if isinstance(max_lines, bool) or not isinstance(max_lines, (int, np.integer)) or (
      max_lines < 1):
    raise ValueError(f"max_lines must be a positive integer, got {max_lines!r}")
  pieces, name = _pieces(path, name)
  return _chunks(pieces, name, int(max_lines))


def _count_ends(data: bytes | bytearray) -> int:
  return data.count(b"\n") or data.count(b"\r")


def _chunks(pieces: Iterator[bytes], name: str, max_lines: int) -> Iterator[Run]:
  pending, line0, want, eof, seen = bytearray(), 0, max_lines, False, set()
  ends = 0
  while True:
    while not eof and ends <= want:
      piece = next(pieces, None)
      if piece is None:
        eof = True
      else:
        pending += piece
        ends += _count_ends(piece)
    buf = _padded(pending)
    rows = _parse(buf, 0, len(pending) if eof else _last_line_end(buf, len(pending)), name,
                  _RUN, line0)
    n = len(rows)
    if eof:
      cut = n
    else:
      change = np.flatnonzero(rows.q_hash[1:] != rows.q_hash[:-1]) + 1
      fit = change[change <= max_lines]
      cut = int(fit[-1]) if fit.size else int(change[0]) if change.size else 0
    if cut:
      run = _run_of(rows, 0, cut)
      qids = run.qid_vocab.tolist()
      again = seen.intersection(qids)
      if again:
        codes = [i for i, q in enumerate(qids) if q in again]
        row = int(np.flatnonzero(np.isin(run.qid_codes, codes))[0])
        line = line0 + _count_lines(buf, 0, int(rows.q_start[row])) + 1
        raise TrecFormatError(
            f"{name}:{line}: query {qids[run.qid_codes[row]]!r} appears again after its chunk "
            "was passed on (iter_run_chunks needs each query's lines together: sort the file "
            "by query, or use read_run)")
      seen.update(qids)
      yield run
    if eof:
      return
    if not cut:  # one query so far: read on
      want *= 2
      continue
    pos = int(rows.q_start[cut])
    line0 += _count_lines(buf, 0, pos)
    del pending[:pos]
    ends, want = _count_ends(pending), max_lines


# ----------------------------------------------------------------------------------------------
# Writing.


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


def _byte_rank(vocab: Ids) -> np.ndarray:
  """Each code's position in byte (strcmp) order."""
  rank = np.empty(len(vocab), np.int64)
  rank[vocab.argsort()] = np.arange(len(vocab))
  return rank


def write_run(run: Run | Mapping[str, Mapping[str, float]], path: PathLike, *,
              tag: str | None = None) -> None:
  """Writes a run as ``qid Q0 docid rank score tag``, ranks 1.. in trec_eval's order per query
  (score descending, then doc id descending), queries in byte order; scores are written with
  ``repr``, so they read back exactly.

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
  qrank = _byte_rank(run.qid_vocab)[run.qid_codes]
  order = np.lexsort((-_byte_rank(run.docid_vocab)[run.docid_codes], -run.score, qrank))
  q = qrank[order]
  start = np.r_[True, q[1:] != q[:-1]] if q.size else np.zeros(0, bool)
  rank = np.arange(q.size) - np.flatnonzero(start)[np.cumsum(start) - 1] + 1
  qs, ds = run.qid_vocab.tolist(), run.docid_vocab.tolist()
  with open(path, "w", encoding="utf-8", newline="\n") as f:
    f.writelines(f"{qs[a]} Q0 {ds[b]} {r} {v!r} {tag}\n" for a, b, r, v in zip(
        run.qid_codes[order].tolist(), run.docid_codes[order].tolist(), rank.tolist(),
        run.score[order].tolist()))


def write_qrels(qrels: Qrels | Mapping[str, Mapping[str, int]], path: PathLike) -> None:
  """Writes qrels as ``qid 0 docid rel``, sorted by qid then docid (byte order).

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
  order = np.lexsort((_byte_rank(qrels.docid_vocab)[qrels.docid_codes],
                      _byte_rank(qrels.qid_vocab)[qrels.qid_codes]))
  qs, ds = qrels.qid_vocab.tolist(), qrels.docid_vocab.tolist()
  with open(path, "w", encoding="utf-8", newline="\n") as f:
    f.writelines(f"{qs[a]} 0 {ds[b]} {r}\n" for a, b, r in zip(
        qrels.qid_codes[order].tolist(), qrels.docid_codes[order].tolist(),
        qrels.rel[order].tolist()))


# ----------------------------------------------------------------------------------------------
# Conversions from Python dicts (pytrec_eval's form).

_NUMBER = (int, float, np.integer, np.floating)
_BOOL = (bool, np.bool_)


def _flatten(mapping: Any, what: str):
  """``(qid codes, qid vocabulary, doc codes, doc vocabulary, values, locate)`` of a
  ``{qid: {docid: value}}`` dict; ``locate(i)`` gives row ``i``'s ``(qid, docid, value)``."""
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

  try:
    dvocab, dcodes = Ids.from_strings(docids)
  except _BadId as e:
    q, d, _ = locate(e.index)
    raise (TypeError if e.reason == "type" else ValueError)(
        _bad_id_message(f"{what} doc id", d, e.reason, q)) from None
  qcodes = np.repeat(np.arange(len(keep), dtype=dcodes.dtype), counts[counts > 0])
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

  Ids must be ``str`` without NUL characters or lone surrogates (what a UTF-8 TREC file can
  hold); scores are numbers (not ``bool``, not NaN) within float64's range; infinite scores
  are kept (``-inf`` ranks last). Errors name the query and the document.

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
