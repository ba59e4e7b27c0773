"""Coding only the documents trec_eval's measures can tell apart (the judged ones and those
whose score may tie): the judged-only reader's builder (:class:`JudgedBuilder`) and
:func:`iter_dict_chunks`, large dicts as runs of whole queries.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from jaxrank.io._bytes import K1, PAD, Collision, check_equal, hash_ids, lookup, windows
from jaxrank.io._columns import Qrels, Run
from jaxrank.io._dicts import as_run, scores, unpack
from jaxrank.io._ids import BadId, Ids, Vocab, encode_ids
from jaxrank.io._reader import Builder
from jaxrank.io._split import RUN, Block


class NeedsFullRead(Exception):
  """Internal: :func:`iter_judged_run_chunks` met what only the full reader handles exactly (a
  query whose lines are not together, a query listing a document twice, equal hashes of two
  ids). The caller reads the run with :func:`read_run` or :func:`iter_run_chunks` instead,
  which evaluates or reports it."""


_MIX = np.uint64(0xD6E8FEB86659FD93)  # an odd constant mixing a query code into a key
_FILTER_BITS = 25  # the judged documents' bitmap: 2**25 bits, 4 MB
_BUCKET_BITS = 17  # buckets counting a block's keys (1 MB of counts)
_FEW_BITS = 16  # buckets of a block's few repeated keys
_FEW_SHIFT = 4  # "few": at most one key in 16 repeats a value


def _repeated(keys: np.ndarray) -> np.ndarray:
  """A mask of the ``keys`` that may occur twice: every repeated key is in it. One sort of the
  keys (a tenth of a millisecond for a block's) finds the repeated values; when they are few
  (a run whose scores rarely tie) the mask is exact, each key looked up among them; when they
  are many, the keys sharing a bucket with another key in each of two bucketings (2**17
  buckets by the top bits of two multiplicative mixes), a few percent more than exact."""
  s = np.sort(keys)
  again = s[1:][s[1:] == s[:-1]]
  if again.size <= keys.size >> _FEW_SHIFT:  # none or a few: exact
    exact = np.zeros(keys.size, bool)
    if again.size:  # the keys in a bucket of a repeated one (a 64 KB bitmap), then exactly
      top = np.uint64(64 - _FEW_BITS)
      flag = np.zeros(1 << _FEW_BITS, bool)
      flag[((again * K1) >> top).astype(np.intp)] = True
      maybe = np.flatnonzero(flag[((keys * K1) >> top).astype(np.intp)])
      at = np.minimum(np.searchsorted(again, keys[maybe]), again.size - 1)
      exact[maybe] = again[at] == keys[maybe]
    return exact
  may = np.ones(keys.size, bool)
  for mix in (_MIX, K1):
    bucket = ((keys * mix) >> np.uint64(64 - _BUCKET_BITS)).astype(np.intp)
    may &= np.bincount(bucket, minlength=1 << _BUCKET_BITS)[bucket] > 1
  return may


def _any_repeated(keys: np.ndarray) -> bool:
  """Whether a key occurs twice."""
  s = np.sort(keys)
  return bool((s[1:] == s[:-1]).any())


def _score_keys(scores: np.ndarray, qk: np.ndarray) -> np.ndarray:
  """Keys equal for two rows of one query (``qk``: their query codes times ``_MIX``) whose
  scores tie as float32, a superset of float64's ties (-0.0 ties with 0.0)."""
  f32 = scores.astype(np.float32)
  f32 += np.float32(0.0)
  keys: np.ndarray = f32.view(np.uint32).astype(np.uint64) ^ qk
  return keys


class Judged:
  """The documents of a qrels, to look a run's up in: their hash table and a bitmap of their
  hashes' top bits (a few percent full: most documents of a large run are judged for no query,
  and one look at 4 MB rules them out before the table)."""

  def __init__(self, vocab: Ids) -> None:
    if not len(vocab):  # nothing judged: a table with no id
      vocab = Ids.from_strings([])[0]
    if vocab._table is None:  # the qrels' ids collided: no table to look them up in
      raise NeedsFullRead("the qrels' document ids have equal hashes")
    self.vocab, (self.table, self.bits) = vocab, vocab._table
    self.no_empty = not (vocab.lengths == 0).any()
    self.win = vocab._windows() if vocab._words.size else windows(np.zeros(PAD, np.uint8))
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
    at = lookup(self.table, self.bits, v._hash, h[maybe])
    found = at >= 0
    hit, at = maybe[found], at[found]
    try:
      check_equal(win, starts[hit], lens[hit], self.win, 8 * v._woff[at], v._len[at])
    except Collision:
      raise NeedsFullRead("a document id's hash equals a judged one's") from None
    return hit, at

  def code(self, buf: np.ndarray, win: np.ndarray, starts: np.ndarray, lens: np.ndarray,
           h: np.ndarray, keep: np.ndarray, own: Vocab) -> np.ndarray:
    """Codes of the ids at ``starts`` of the padded buffer ``buf`` (windows ``win``; as
    :meth:`rows_of`) that a judged-only reader codes:
    the judged ones (their qrels code: no table insert) and the others where ``keep`` (``n +``
    their code in ``own``, ``n`` the qrels' number of documents); -1 for the rest. A document
    is judged or not wherever it occurs, so it gets one code. ``keep`` is cleared at the judged
    rows. :meth:`vocabulary` makes them codes of one :class:`Ids`."""
    codes = np.full(h.size, -1, np.int64)
    hit, at = self.rows_of(win, starts, lens, h)
    codes[hit] = at
    keep[hit] = False
    rest = np.flatnonzero(keep)
    if rest.size:
      codes[rest] = len(self.vocab) + own.add(buf, win, starts[rest], lens[rest], h[rest])
    return codes

  def vocabulary(self, codes: np.ndarray, own: Vocab) -> Ids:
    """Turns the codes from :meth:`code` (in place; -1 becomes the code of an empty id, the
    last of the vocabulary) into codes of the returned vocabulary: the judged documents used,
    in qrels order, then ``own``'s, then the empty id."""
    n, mine = len(self.vocab), own.n
    shifted = codes + 1  # 0: uncoded, 1 .. n: judged, then own's: one table maps them all
    seen = np.zeros(n + mine + 1, bool)
    seen[shifted] = True
    used = np.flatnonzero(seen[1:n + 1])
    new = np.empty(seen.size, codes.dtype)
    new[1 + used] = np.arange(used.size)
    new[1 + n:] = np.arange(used.size, used.size + mine)
    new[0] = used.size + own.add_uncoded()
    np.take(new, shifted, out=codes)
    # own's ids are in no judgment (the qrels judge no empty id: see __init__), so the chunk's
    # documents meet the qrels' by their codes (Ids.index), not by hashing them again.
    return self.vocab.take(used)._joined(own.ids(), new=self.no_empty)


class JudgedBuilder(Builder):
  """A run's rows with only the documents trec_eval's measures can tell apart coded (see
  :func:`iter_judged_run_chunks`): those the qrels judge for some query, those that may tie
  with another line of their query, and the lines of a block's last query. Every other row gets
  code -1 until :meth:`run`. A block at a time it also checks that each query's lines come
  together and list each document once (by hash: an equal pair, a duplicate or a collision,
  raises :class:`NeedsFullRead`)."""

  # Most documents of a large run are neither judged nor tied: the table of those coded here
  # starts at an eighth of the lines (it grows when needed), so it stays in cache.
  coded_share = 8

  def __init__(self, rows: int, judged: Judged) -> None:
    super().__init__(RUN, rows, lines=True, keep_ints=False)
    self.judged = judged
    # The query of the previous block's last lines, and their document and score keys.
    self.open_q = -1
    self.open_doc = self.open_score = np.zeros(0, np.uint64)

  def _doc_codes(self, b: Block, lo: int, hi: int, q_codes: np.ndarray) -> np.ndarray:
    heads = np.flatnonzero(np.r_[True, q_codes[1:] != q_codes[:-1]])
    going_on = q_codes[0] == self.open_q  # the first lines continue the previous block's query
    fresh = q_codes[heads[1:]] if going_on else q_codes[heads]
    if not np.array_equal(fresh, np.arange(self.q.n - fresh.size, self.q.n)):
      raise NeedsFullRead("a query's lines are not together")  # a query seen before, again
    qk = q_codes.astype(np.uint64) * _MIX
    doc_key = b.d_hash[lo:hi] ^ qk
    assert b.floats is not None  # a run's block
    score_key = _score_keys(b.floats[lo:hi], qk)
    carried = self.open_doc.size if going_on else 0
    if carried:
      doc_key = np.concatenate([self.open_doc, doc_key])
      score_key = np.concatenate([self.open_score, score_key])
    if _any_repeated(doc_key):
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
    assert self.d is not None  # made by add() before it calls this
    return self.judged.code(b.buf, b.win, b.d_start[lo:hi], b.d_len[lo:hi], b.d_hash[lo:hi],
                            keep, self.d)

  def run(self) -> Run:
    if self.d is None:
      self.d = Vocab(1)
    assert self.floats is not None  # a builder of the run format
    return Run(qid_codes=self.q_codes.view(), qid_vocab=self.q.ids(),
               docid_codes=self.d_codes.view(),
               docid_vocab=self.judged.vocabulary(self.d_codes.view(), self.d),
               score=self.floats.view(), tag=self.tag)


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
    >>> from jaxrank.io._judged import iter_dict_chunks
    >>> run = {"q": {"a": 3.0, "b": 2.0, "c": 2.0, "d": 1.0}, "r": {"e": 1.0}}
    >>> [(c.docid_vocab.tolist(), c.docid_codes.tolist())
    ...  for c in iter_dict_chunks(run, qrels=io.as_qrels({"q": {"d": 1}}))]  # b, c tie
    [(['d', 'b', 'c', ''], [3, 1, 2, 0, 3])]
  """
  if isinstance(max_rows, bool) or not isinstance(max_rows, (int, np.integer)) or max_rows < 1:
    raise ValueError(f"max_rows must be a positive int, got {max_rows!r}")
  judged = None
  if qrels is not None:
    if (qrels.docid_vocab.lengths == 0).any():
      raise NeedsFullRead("the qrels judge an empty document id")
    judged = Judged(qrels.docid_vocab)
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


def _judged_run(run: Mapping[str, Mapping[str, float]], judged: Judged) -> Run:
  """:func:`as_run`, coding only the documents :func:`iter_dict_chunks` codes."""
  qvocab, counts, docids, values, locate, bad_doc = unpack(run, "run")
  try:
    buf, starts, lens = encode_ids(docids)
  except BadId as e:
    raise bad_doc(e) from None
  score = scores(values, locate, "run")
  win = windows(buf)
  h = hash_ids(win, starts, lens)
  qcodes = np.repeat(np.arange(len(qvocab), dtype=np.int32), counts)
  key = _score_keys(score, qcodes.astype(np.uint64) * _MIX)
  keep = np.zeros(len(docids), bool)
  ends = np.cumsum(counts)
  lo = 0
  while lo < keep.size:  # slices of whole queries: a query's ties are in one slice
    hi = int(ends[min(int(np.searchsorted(ends, lo + _TIE_SLICE)), ends.size - 1)])
    keep[lo:hi] = _repeated(key[lo:hi])
    lo = hi
  vocab, step = Vocab(int(keep.sum())), 1 << 16  # coded a slice at a time: small temporaries
  codes = np.concatenate([np.zeros(0, np.int64)] + [judged.code(
      buf, win, starts[i:i + step], lens[i:i + step], h[i:i + step], keep[i:i + step], vocab)
      for i in range(0, keep.size, step)])
  return Run(qid_codes=qcodes, qid_vocab=qvocab, docid_codes=codes,
             docid_vocab=judged.vocabulary(codes, vocab), score=score, tag="jaxrank")
