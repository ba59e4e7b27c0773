"""pandas DataFrames in and out (pandas is imported only here, when an adapter is called).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from jaxrank.io._columns import Qrels, Run, column_ids
from jaxrank.io._dicts import as_qrels, as_run
from jaxrank.io._ids import Ids

if TYPE_CHECKING:  # pandas is optional and imported only when an adapter is called
  import pandas


def _pandas() -> ModuleType:
  try:
    return importlib.import_module("pandas")
  except ImportError:  # pragma: no cover - depends on the environment
    raise ImportError("the DataFrame adapters need pandas: pip install 'jaxrank[pandas]'") from None


def _strings(codes: np.ndarray, vocab: Ids) -> list[str]:
  ids: list[str] = np.array(vocab.tolist() or [""], dtype=object)[codes].tolist()
  return ids


def _column(frame: pandas.DataFrame, name: str, what: str) -> pandas.Series:
  if name not in frame.columns:
    raise ValueError(f"{what}: the DataFrame has no column {name!r} (columns: "
                     f"{list(frame.columns)})")
  return frame[name]


def _id_column(frame: pandas.DataFrame, name: str, what: str) -> tuple[np.ndarray, Ids]:
  values = _column(frame, name, what)
  if values.isna().any():
    row = int(np.flatnonzero(values.isna().to_numpy())[0])
    raise ValueError(f"{what}: column {name!r} has a missing value at row {row}")
  return column_ids([str(v) for v in values.tolist()], f"{what}: column {name!r} id")


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
    assert rank_col is not None  # exactly one of the two, checked above
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


def run_to_frame(run: Run | Mapping[str, Mapping[str, float]], *, user_col: str = "user_id",
                 item_col: str = "item_id", score_col: str = "score") -> pandas.DataFrame:
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


def qrels_to_frame(qrels: Qrels | Mapping[str, Mapping[str, int]], *,
                   user_col: str = "user_id", item_col: str = "item_id",
                   target_col: str = "target") -> pandas.DataFrame:
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
