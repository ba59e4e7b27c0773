"""TREC run and qrels files, and pandas DataFrames, in and out.

A run file has one retrieved document per line, ``qid Q0 docid rank score tag`` (trec_eval also
tolerates extra trailing columns, and so does :func:`read_run`); a qrels file has one judgment per
line, ``qid iter docid rel`` with an integer grade (``-1`` = pooled but unjudged). Ids are strings:
a ``#`` inside an id is data, a line whose first field starts with ``#`` is a comment, blank lines
are skipped. A malformed line raises :class:`TrecFormatError` naming the file and line number.

Files are parsed without a Python loop per line: regular files (a fixed number of fields, no
comment lines) by NumPy's C ``loadtxt``, any other file by splitting the whole byte string into
fields with vectorised comparisons, which also locates malformed lines. A 10-million-line run
loads in a few seconds (``bench/bench_io.py``).
Ids are kept as NumPy byte strings (UTF-8), whose order is trec_eval's ``strcmp`` order.

The DataFrame adapters (:func:`run_from_frame`, :func:`qrels_from_frame`, :func:`run_to_frame`,
:func:`qrels_to_frame`) import pandas when called; ``import jaxrank`` never does.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pandas is optional and imported only when an adapter is called
  import pandas

__all__ = [
    "Qrels", "Run", "TrecFormatError", "as_qrels", "as_run", "qrels_from_frame", "qrels_to_frame",
    "read_qrels", "read_run", "run_from_frame", "run_to_frame", "write_qrels", "write_run",
]

PathLike = str | os.PathLike


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


@dataclasses.dataclass(frozen=True, eq=False)
class Run:
  """A run in columns, one row per retrieved document (in file order).

  ``qid``, ``docid``: ``[N]`` UTF-8 byte strings; ``score``: ``[N]`` float64; ``rank``: ``[N]``
  int64 (trec_eval ignores it; so does jaxrank's evaluation); ``tag``: the run tag of the last
  line (trec_eval's ``runid``).

  Example:
    >>> from jaxrank import io
    >>> run = io.read_run(b"q1 Q0 d1 1 0.5 mine\\nq1 Q0 d2 2 0.25 mine\\n")
    >>> len(run), run.tag, run.to_dict()
    (2, 'mine', {'q1': {'d1': 0.5, 'd2': 0.25}})
  """

  qid: np.ndarray
  docid: np.ndarray
  score: np.ndarray
  rank: np.ndarray
  tag: str = "jaxrank"

  def __len__(self) -> int:
    return int(self.qid.shape[0])

  def to_dict(self) -> dict[str, dict[str, float]]:
    """``{qid: {docid: score}}`` (pytrec_eval's run form)."""
    return _nested(self.qid, self.docid, self.score.tolist())


@dataclasses.dataclass(frozen=True, eq=False)
class Qrels:
  """Relevance judgments in columns: ``qid``, ``docid`` (byte strings), ``rel`` (int64 grades).

  Example:
    >>> from jaxrank import io
    >>> qrels = io.read_qrels(b"q1 0 d1 2\\nq1 0 d2 0\\n")
    >>> len(qrels), qrels.rel.tolist(), qrels.to_dict()
    (2, [2, 0], {'q1': {'d1': 2, 'd2': 0}})
  """

  qid: np.ndarray
  docid: np.ndarray
  rel: np.ndarray

  def __len__(self) -> int:
    return int(self.qid.shape[0])

  def to_dict(self) -> dict[str, dict[str, int]]:
    """``{qid: {docid: grade}}`` (pytrec_eval's qrels form)."""
    return _nested(self.qid, self.docid, self.rel.tolist())


def _nested(qid, docid, values) -> dict:
  out: dict[str, dict] = {}
  for q, d, v in zip(qid.tolist(), docid.tolist(), values):
    out.setdefault(q.decode(), {})[d.decode()] = v
  return out


# ----------------------------------------------------------------------------------------------
# Reading: split the whole file into fields with NumPy.


def _fields(data: bytes, name: str, min_fields: int, max_fields: int | None):
  """Start/end offsets of the first ``min_fields`` fields of every data line, and line numbers.

  Whitespace is any byte <= 32 (space, tab, CR, ...); lines are separated by ``\\n``.
  """
  buf = np.frombuffer(data, np.uint8)
  if buf.size == 0:
    empty = np.zeros((0, min_fields), np.int64)
    return buf, empty, empty, np.zeros(0, np.int64)
  space = (buf <= 32).view(np.int8)
  edges = np.diff(space, prepend=np.int8(1), append=np.int8(1))
  starts = np.flatnonzero(edges == -1)
  ends = np.flatnonzero(edges == 1)
  newlines = np.flatnonzero(buf == 10)
  line = np.searchsorted(newlines, starts)  # 0-based line of each field
  first = np.flatnonzero(np.diff(line, prepend=-1))  # index of each non-blank line's first field
  count = np.diff(first, append=starts.size)
  comment = buf[starts[first]] == ord("#")
  first, count = first[~comment], count[~comment]
  bad = count < min_fields if max_fields is None else (count < min_fields) | (count > max_fields)
  if bad.any():
    i = int(np.flatnonzero(bad)[0])
    expected = (f"at least {min_fields}" if max_fields is None else
                f"{min_fields}" if max_fields == min_fields else f"{min_fields}-{max_fields}")
    raise TrecFormatError(f"{name}:{int(line[first[i]]) + 1}: expected {expected} "
                          f"whitespace-separated fields, got {int(count[i])}")
  take = first[:, None] + np.arange(min_fields)
  return buf, starts[take], ends[take], line[first] + 1


def _strings(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
  """The byte strings ``buf[starts[i]:ends[i]]`` as a NumPy ``S`` array, gathered in blocks."""
  n = starts.size
  width = int((ends - starts).max()) if n else 1
  out = np.empty(n, f"S{width}")
  view = out.view(np.uint8).reshape(n, width)
  cols = np.arange(width, dtype=np.int64)
  block = max(1, (1 << 23) // width)
  for lo in range(0, n, block):
    s, e = starts[lo:lo + block, None], ends[lo:lo + block, None]
    idx = s + cols
    keep = idx < e
    view[lo:lo + block] = np.where(keep, buf[np.minimum(idx, buf.size - 1)], 0)
  return out


def _numbers(strings: np.ndarray, dtype, what: str, name: str, lines: np.ndarray) -> np.ndarray:
  """Parses a column of numbers, or raises naming the first line that is not one."""
  try:
    return strings.astype(dtype)
  except (ValueError, OverflowError):
    pass
  parse = float if dtype == np.float64 else int
  for text, at in zip(strings.tolist(), lines.tolist()):
    try:
      parse(text)
    except ValueError:
      raise TrecFormatError(f"{name}:{at}: {what} must be "
                            f"{'a number' if parse is float else 'an integer'}, "
                            f"got {text.decode(errors='replace')!r}") from None
  raise TrecFormatError(f"{name}: a {what} is out of range")


def _fast(data: bytes, kinds: str, usecols: tuple[int, ...] | None):
  """NumPy's C ``loadtxt`` for the common case: no comment lines and at least
  ``max(usecols) + 1`` fields on every non-blank line (exactly ``len(kinds)`` without
  ``usecols``). ``kinds`` gives each used column's type (``s`` string, ``i`` int, ``f`` float,
  ``-`` only checked to exist). Returns the columns, or None (then the general tokenizer reads
  the file and reports any malformed line).

  String widths are guessed from the file's first lines and the parse is redone, wider, if any
  value fills its field (so nothing is ever cut)."""
  import io as _io
  import warnings

  sample = data[:1 << 16].split()
  guess = max(8, 2 * max((len(t) for t in sample), default=1))
  for width in (guess, 4 * guess, 1024):
    dtype = np.dtype([(f"f{i}", {"s": f"S{width}", "-": "S1", "i": np.int64,
                                  "f": np.float64}[k]) for i, k in enumerate(kinds)])
    try:
      with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = np.loadtxt(_io.BytesIO(data), dtype=dtype, comments=None, delimiter=None,
                           ndmin=1, usecols=usecols, encoding=None)
    except (ValueError, UnicodeError, OverflowError):
      return None
    raw = table.view(np.uint8).reshape(table.size, dtype.itemsize)
    offsets = [dtype.fields[f"f{i}"][1] for i, k in enumerate(kinds) if k == "s"]
    if not any(raw[:, o + width - 1].any() for o in offsets):
      break
  else:
    return None
  if table.size and (raw[:, 0] == ord("#")).any():
    return None  # comment lines
  return [table[f"f{i}"] if k != "-" else None for i, k in enumerate(kinds)]  # views, no copy


def _last_tag(data: bytes) -> str:
  """The 6th field of the last line with one (trec_eval's runid)."""
  end = len(data)
  while end > 0:
    start = data.rfind(b"\n", 0, end - 1) + 1
    fields = data[start:end].split()
    if len(fields) >= 6 and not fields[0].startswith(b"#"):
      return fields[5].decode(errors="replace")
    end = start - 1 if start > 0 else 0
  return "jaxrank"


def _read(path_or_bytes: PathLike | bytes, name: str | None):
  if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
    return bytes(path_or_bytes), name or "<bytes>"
  path = os.fspath(path_or_bytes)
  try:
    with open(path, "rb") as f:
      return f.read(), name or path
  except OSError as e:
    raise FileNotFoundError(f"cannot read {path}: {e.strerror}") from None


def read_run(path: PathLike | bytes, *, name: str | None = None) -> Run:
  """Reads a TREC run file ``qid Q0 docid rank score tag [ignored ...]``.

  Args:
    path: a file path, or the file's content as bytes.
    name: the name used in error messages (default: the path).

  Returns:
    A :class:`Run` (rows in file order).

  Example:
    >>> from jaxrank import io
    >>> run = io.read_run(b"q1 Q0 d#1 1 2.5 bm25\\n# a comment\\n\\nq1 Q0 d2 2 1.5 bm25\\n")
    >>> run.docid.tolist(), run.score.tolist(), run.tag
    ([b'd#1', b'd2'], [2.5, 1.5], 'bm25')
  """
  data, name = _read(path, name)
  fast = _fast(data, "ssif-", (0, 2, 3, 4, 5))
  if fast is not None and not np.isnan(fast[3]).any():  # NaN: reread to name its line
    qid, docid, rank, score, _ = fast
    return Run(qid=qid, docid=docid, score=score, rank=rank, tag=_last_tag(data))
  buf, s, e, lines = _fields(data, name, 6, None)
  if lines.size == 0:
    return Run(*(np.zeros(0, t) for t in ("S1", "S1", np.float64, np.int64)))
  qid = _strings(buf, s[:, 0], e[:, 0])
  docid = _strings(buf, s[:, 2], e[:, 2])
  rank = _numbers(_strings(buf, s[:, 3], e[:, 3]), np.int64, "the rank (4th field)", name, lines)
  score = _numbers(_strings(buf, s[:, 4], e[:, 4]), np.float64, "the score (5th field)", name,
                   lines)
  nan = np.flatnonzero(np.isnan(score))
  if nan.size:
    raise TrecFormatError(f"{name}:{int(lines[nan[0]])}: the score (5th field) must be a number, "
                          f"got {bytes(buf[s[nan[0], 4]:e[nan[0], 4]]).decode()!r} (NaN has no "
                          "order)")
  tag = bytes(buf[s[-1, 5]:e[-1, 5]]).decode(errors="replace")
  return Run(qid=qid, docid=docid, score=score, rank=rank, tag=tag)


def read_qrels(path: PathLike | bytes, *, name: str | None = None) -> Qrels:
  """Reads a TREC qrels file ``qid iter docid rel`` (integer ``rel``; ``-1`` = unjudged).

  Example:
    >>> from jaxrank import io
    >>> qrels = io.read_qrels(b"q1 0 d1 2\\nq1 0 d2 0\\n")
    >>> qrels.docid.tolist(), qrels.rel.tolist()
    ([b'd1', b'd2'], [2, 0])
  """
  data, name = _read(path, name)
  fast = _fast(data, "s-si", None)
  if fast is not None:
    return Qrels(qid=fast[0], docid=fast[2], rel=fast[3])
  buf, s, e, lines = _fields(data, name, 4, 4)
  if lines.size == 0:
    return Qrels(*(np.zeros(0, t) for t in ("S1", "S1", np.int64)))
  rel = _numbers(_strings(buf, s[:, 3], e[:, 3]), np.int64, "the relevance (4th field)", name,
                 lines)
  return Qrels(qid=_strings(buf, s[:, 0], e[:, 0]), docid=_strings(buf, s[:, 2], e[:, 2]),
               rel=rel)


# ----------------------------------------------------------------------------------------------
# Writing.


def _text(values: np.ndarray) -> list[str]:
  return [v.decode() if isinstance(v, bytes) else str(v) for v in values.tolist()]


def _writable(values: np.ndarray, what: str) -> None:
  """Ids that would not read back (whitespace splits a field, a leading '#' makes a comment)."""
  for v in _text(np.unique(values)):
    if not v or any(c.isspace() for c in v) or (what.endswith("qid") and v.startswith("#")):
      raise ValueError(f"{what} {v!r} cannot be written to a TREC file: ids must be non-empty, "
                       "without whitespace, and a qid must not start with '#'")


def write_run(run: Run | Mapping[str, Mapping[str, float]], path: PathLike, *,
              tag: str | None = None) -> None:
  """Writes a run as ``qid Q0 docid rank score tag``, ranks 1.. in trec_eval's order per query.

  Example:
    >>> import os, tempfile
    >>> from jaxrank import io
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> io.write_run({"q1": {"a": 0.5, "b": 0.9}}, path, tag="demo")
    >>> open(path).read()
    'q1 Q0 b 1 0.9 demo\\nq1 Q0 a 2 0.5 demo\\n'
  """
  run = as_run(run)
  _writable(run.qid, "run qid")
  _writable(run.docid, "run docid")
  tag = run.tag if tag is None else tag
  if any(c.isspace() for c in tag) or not tag:
    raise ValueError(f"tag must be a non-empty string without whitespace, got {tag!r}")
  order = np.lexsort((_descending(run.docid), -run.score, run.qid))
  qid, docid, score = run.qid[order], run.docid[order], run.score[order]
  start = np.r_[True, qid[1:] != qid[:-1]] if qid.size else np.zeros(0, bool)
  group = np.cumsum(start) - 1
  rank = np.arange(qid.size) - np.flatnonzero(start)[group] + 1
  with open(path, "w", encoding="utf-8") as f:
    for q, d, r, v in zip(_text(qid), _text(docid), rank.tolist(), score.tolist()):
      f.write(f"{q} Q0 {d} {r} {v!r} {tag}\n")


def write_qrels(qrels: Qrels | Mapping[str, Mapping[str, int]], path: PathLike) -> None:
  """Writes qrels as ``qid 0 docid rel``, sorted by qid then docid.

  Example:
    >>> import os, tempfile
    >>> from jaxrank import io
    >>> path = os.path.join(tempfile.mkdtemp(), "qrels.txt")
    >>> io.write_qrels({"q1": {"b": 0, "a": 2}}, path)
    >>> open(path).read()
    'q1 0 a 2\\nq1 0 b 0\\n'
  """
  qrels = as_qrels(qrels)
  _writable(qrels.qid, "qrels qid")
  _writable(qrels.docid, "qrels docid")
  order = np.lexsort((qrels.docid, qrels.qid))
  with open(path, "w", encoding="utf-8") as f:
    for q, d, r in zip(_text(qrels.qid[order]), _text(qrels.docid[order]),
                       qrels.rel[order].tolist()):
      f.write(f"{q} 0 {d} {r}\n")


def _descending(strings: np.ndarray) -> np.ndarray:
  """An int key that sorts byte strings in descending order."""
  _, inverse = np.unique(strings, return_inverse=True)
  return -inverse.reshape(-1)


# ----------------------------------------------------------------------------------------------
# Conversions from Python dicts (pytrec_eval's form).


def _ids(values: list, what: str) -> np.ndarray:
  for v in values:
    if not isinstance(v, str):
      raise TypeError(f"{what} must be strings, got {v!r} of type {type(v).__name__}")
  return np.array([v.encode() for v in values], dtype=np.bytes_) if values else (
      np.zeros(0, "S1"))


def _flatten(mapping: Mapping, what: str, value_ok) -> tuple[list, list, list]:
  qids, docids, values = [], [], []
  if not isinstance(mapping, Mapping):
    raise TypeError(f"{what} must be a dict {{qid: {{docid: value}}}}, got "
                    f"{type(mapping).__name__}")
  for q, docs in mapping.items():
    if not isinstance(docs, Mapping):
      raise TypeError(f"{what}[{q!r}] must be a dict {{docid: value}}, got "
                      f"{type(docs).__name__}")
    for d, v in docs.items():
      problem = value_ok(v)
      if problem:
        raise ValueError(f"{what}[{q!r}][{d!r}] {problem}, got {v!r}")
      qids.append(q)
      docids.append(d)
      values.append(v)
  return qids, docids, values


def _score_problem(v: Any) -> str | None:
  if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
    return "must be a number (the score)"
  if v != v:
    return "must be a number (the score), not NaN (NaN has no order)"
  return None


def _grade_problem(v: Any) -> str | None:
  if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
      return None
    return "must be an integer grade"
  return None


def as_run(run: Run | Mapping[str, Mapping[str, float]]) -> Run:
  """A :class:`Run` from a Run or a pytrec_eval-style ``{qid: {docid: score}}`` dict.

  Ids must be strings; a score that is not a number (or is NaN) is an error naming the query
  and the document. Infinite scores are kept (``-inf`` ranks last).

  Example:
    >>> from jaxrank import io
    >>> run = io.as_run({"q1": {"d1": 0.5, "d2": 1}})
    >>> run.qid.tolist(), run.docid.tolist(), run.score.tolist()
    ([b'q1', b'q1'], [b'd1', b'd2'], [0.5, 1.0])
  """
  if isinstance(run, Run):
    return run
  qids, docids, scores = _flatten(run, "run", _score_problem)
  return Run(qid=_ids(qids, "run qids"), docid=_ids(docids, "run doc ids"),
             score=np.asarray(scores, np.float64),
             rank=np.zeros(len(scores), np.int64), tag="jaxrank")


def as_qrels(qrels: Qrels | Mapping[str, Mapping[str, int]]) -> Qrels:
  """A :class:`Qrels` from a Qrels or a pytrec_eval-style ``{qid: {docid: grade}}`` dict.

  Grades must be integers (``True``/``False`` count as 1/0); ``-1`` marks unjudged, as in TREC.

  Example:
    >>> from jaxrank import io
    >>> io.as_qrels({"q1": {"d1": 2, "d2": 0}}).rel.tolist()
    [2, 0]
  """
  if isinstance(qrels, Qrels):
    return qrels
  qids, docids, rels = _flatten(qrels, "qrels", _grade_problem)
  return Qrels(qid=_ids(qids, "qrels qids"), docid=_ids(docids, "qrels doc ids"),
               rel=np.asarray(rels, np.float64).astype(np.int64))


# ----------------------------------------------------------------------------------------------
# pandas adapters (pandas is imported only here, when called).


def _pandas():
  try:
    import pandas
  except ImportError:  # pragma: no cover - depends on the environment
    raise ImportError("the DataFrame adapters need pandas: pip install 'jaxrank[pandas]'") from None
  return pandas


def _column(frame, name: str, what: str):
  if name not in frame.columns:
    raise ValueError(f"{what}: the DataFrame has no column {name!r} (columns: "
                     f"{list(frame.columns)})")
  return frame[name]


def _id_column(frame, name: str, what: str) -> np.ndarray:
  values = _column(frame, name, what)
  if values.isna().any():
    row = int(np.flatnonzero(values.isna().to_numpy())[0])
    raise ValueError(f"{what}: column {name!r} has a missing value at row {row}")
  return np.array([str(v).encode() for v in values.tolist()], dtype=np.bytes_) if len(values) \
      else np.zeros(0, "S1")


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
  return Run(qid=_id_column(frame, user_col, what), docid=_id_column(frame, item_col, what),
             score=score, rank=rank)


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
  return Qrels(qid=_id_column(frame, user_col, what), docid=_id_column(frame, item_col, what),
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
  return pd.DataFrame({user_col: _text(run.qid), item_col: _text(run.docid),
                       score_col: run.score})


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
  return pd.DataFrame({user_col: _text(qrels.qid), item_col: _text(qrels.docid),
                       target_col: qrels.rel})
