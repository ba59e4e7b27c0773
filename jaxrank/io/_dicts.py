"""Conversions from Python dicts (pytrec_eval's ``{qid: {docid: value}}`` form):
:func:`as_run`, :func:`as_qrels`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from itertools import chain
from typing import Any

import numpy as np

from jaxrank.io._columns import Qrels, Run, bad_id_message
from jaxrank.io._errors import INT64_RANGE
from jaxrank.io._ids import BadId, Ids

_NUMBER = (int, float, np.integer, np.floating)
_BOOL = (bool, np.bool_)

# locate(i): row i's (qid, docid, value), as the user's dict holds them (for messages).
Locate = Callable[[int], tuple[Any, Any, Any]]


def unpack(mapping: Any, what: str) -> tuple[Ids, np.ndarray, list[Any], list[Any], Locate,
                                             Callable[[BadId], Exception]]:
  """``(qid vocabulary, rows per query, doc ids, values, locate, bad_doc)`` of a ``{qid:
  {docid: value}}`` dict (queries without rows left out); ``locate(i)`` gives row ``i``'s
  ``(qid, docid, value)``, ``bad_doc`` the error for a :class:`BadId` of the doc ids."""
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
  except BadId as e:
    raise (TypeError if e.reason == "type" else ValueError)(
        bad_id_message(f"{what} qid", keep[e.index], e.reason)) from None
  docids = list(chain.from_iterable(inner))
  values = list(chain.from_iterable(d.values() for d in inner))
  ends = np.cumsum(counts)

  def locate(i: int) -> tuple[Any, Any, Any]:
    return qids[int(np.searchsorted(ends, i, "right"))], docids[i], values[i]

  def bad_doc(e: BadId) -> Exception:
    q, d, _ = locate(e.index)
    return (TypeError if e.reason == "type" else ValueError)(
        bad_id_message(f"{what} doc id", d, e.reason, q))

  return qvocab, counts[counts > 0], docids, values, locate, bad_doc


def _flatten(mapping: Any, what: str) -> tuple[np.ndarray, Ids, np.ndarray, Ids, list[Any],
                                               Locate]:
  """``(qid codes, qid vocabulary, doc codes, doc vocabulary, values, locate)`` of a
  ``{qid: {docid: value}}`` dict; ``locate(i)`` gives row ``i``'s ``(qid, docid, value)``."""
  qvocab, counts, docids, values, locate, bad_doc = unpack(mapping, what)
  try:
    dvocab, dcodes = Ids.from_strings(docids)
  except BadId as e:
    raise bad_doc(e) from None
  qcodes = np.repeat(np.arange(len(qvocab), dtype=dcodes.dtype), counts)
  return qcodes, qvocab, dcodes, dvocab, values, locate


def _first_bad(values: list[Any], ok: Callable[[Any], bool]) -> int:
  return next(i for i, v in enumerate(values) if not ok(v))


def scores(values: list[Any], locate: Locate, what: str) -> np.ndarray:
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


def _grades(values: list[Any], locate: Locate, what: str) -> np.ndarray:
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
             score=scores(values, locate, "run"), tag="jaxrank")


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
