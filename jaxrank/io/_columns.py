""":class:`Run` and :class:`Qrels`: one row per line, ids as integer codes into :class:`Ids`
vocabularies; and the checks of ids given as columns of strings.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

from jaxrank.io._bytes import ERRORS
from jaxrank.io._ids import BadId, Ids

_V = TypeVar("_V")
_C = TypeVar("_C", bound="_Columns")


def bad_id_message(what: str, value: Any, reason: str, qid: Any = None) -> str:
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


def column_ids(values: Any, what: str) -> tuple[np.ndarray, Ids]:
  """Codes and vocabulary of a column of ids given as ``str`` or ``bytes`` (any bytes but NUL,
  decoded as a file's ids are)."""
  vals = values.tolist() if isinstance(values, np.ndarray) else list(values)
  text: dict[Any, str] = {}
  for v in dict.fromkeys(vals):
    if isinstance(v, (bytes, np.bytes_)):
      text[v] = bytes(v).decode("utf-8", ERRORS)
    elif isinstance(v, str):
      text[v] = v
    else:
      raise TypeError(bad_id_message(what, v, "type"))
  try:
    vocab, codes = Ids.from_strings([text[v] for v in vals])
  except BadId as e:
    raise ValueError(bad_id_message(what, vals[e.index], e.reason)) from None
  return codes, vocab


def _rows_of(codes: np.ndarray | None, vocab: Ids | None, values: Any,
             what: str) -> tuple[np.ndarray, Ids]:
  if values is not None:
    if codes is not None or vocab is not None:
      raise TypeError(f"give {what} or {what}_codes with {what}_vocab, not both")
    return column_ids(values, what)
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
  qid_codes: np.ndarray
  qid_vocab: Ids
  docid_codes: np.ndarray
  docid_vocab: Ids
  _cache: dict[str, np.ndarray]

  def __setattr__(self, name: str, value: Any) -> None:
    raise AttributeError(f"{type(self).__name__} is immutable (cannot set {name!r})")

  def __reduce__(self) -> tuple[Any, ...]:
    # Pickled as its columns (checked when it was made); the id strings cache is left behind.
    names = [n for cls in type(self).__mro__ for n in getattr(cls, "__slots__", ())
             if n != "_cache"]
    return (_restore, (type(self), {n: getattr(self, n) for n in names}))

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

  def _nested(self, values: list[_V]) -> dict[str, dict[str, _V]]:
    qs, ds = self.qid_vocab.tolist(), self.docid_vocab.tolist()
    out: dict[str, dict[str, _V]] = {}
    for q, d, v in zip(map(qs.__getitem__, self.qid_codes.tolist()),
                       map(ds.__getitem__, self.docid_codes.tolist()), values):
      out.setdefault(q, {})[d] = v
    return out


def _restore(cls: type[_C], columns: dict[str, Any]) -> _C:
  """A pickled :class:`Run` or :class:`Qrels` again, from its columns."""
  obj = cls.__new__(cls)
  obj._set(**columns, _cache={})
  return obj


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
  score: np.ndarray
  rank: np.ndarray
  tag: str

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
  rel: np.ndarray

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
