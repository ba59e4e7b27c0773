"""``jaxrank.numpy``: the same metrics and options, for NumPy arrays, Python lists and dicts.

Three entry points, one per input shape, all returning NumPy arrays (one value per list), Python
floats (``reduce="mean"``), or, where the input was keyed by user/query, ``{key: value}`` dicts:

* :func:`evaluate` -- scores and labels, as arrays ``[..., n]`` or ragged lists of lists;
* :func:`evaluate_ranked` -- a ranked list of item ids per user, and per user the relevant ids
  (a list or set, grade 1) or a ``{id: grade}`` dict; lists or ``{user: ...}`` dicts;
* :func:`evaluate_run` -- pytrec_eval-style ``{qid: {docid: score}}`` and ``{qid: {docid:
  grade}}`` dicts (or :class:`jaxrank.io.Run`/:class:`jaxrank.io.Qrels`), trec_eval's way: ties
  broken by doc id descending, measures by jaxrank or trec_eval names (``"P_10"``, ``"bpref"``).

Metric names and options are those of :func:`jaxrank.evaluate`. Inputs are checked eagerly here,
with messages naming the list, user or query. Every input is padded on the host into the rank
core's sparse form with every dimension rounded up to a power of two, so a stream of differently
sized batches compiles a handful of times, not once per shape; padding never changes a result.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from jaxrank import _evaluate, _trec, io

__all__ = ["DEFAULT_METRICS", "evaluate", "evaluate_ranked", "evaluate_run"]

DEFAULT_METRICS = ("ndcg@10", "map", "mrr", "precision@10", "recall@10")
_Result = dict[str, Any]


def _options(ties: str, **kw):
  return _evaluate.make_options(ties="first" if ties in _trec.ORDERED else ties, **kw)


def _metric_specs(metrics) -> tuple[list[str], tuple]:
  if isinstance(metrics, str):
    metrics = [metrics]
  metrics = list(metrics)
  if not metrics:
    raise ValueError("metrics must name at least one metric, got an empty list")
  return metrics, tuple(_evaluate.parse_metric(m) for m in metrics)


def _check_reduce(reduce):
  if reduce not in (None, "mean"):
    raise ValueError(f"reduce must be None or 'mean', got {reduce!r}")


def _reduce(values: np.ndarray, reduce, empty: str):
  if reduce is None:
    return values
  if values.dtype.kind not in "biuf":
    raise ValueError("reduce='mean' cannot average a measure whose values are not numbers "
                     "(relstring): ask for it with reduce=None")
  if values.size == 0:
    return math.nan
  return float(np.nanmean(values) if empty == "skip" else np.mean(values))


def _is_padding(item) -> bool:
  """An int id -1 (not a bool): padding of NumPy rows, skipped."""
  return isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)) and (
      item == -1)


def _ordered_keys(lists: np.ndarray, keys: np.ndarray, ties: str) -> np.ndarray:
  """``ties="first"``: distinct keys by (key desc, input order); otherwise the keys as given."""
  if ties != "first":
    return keys
  order = np.lexsort((np.arange(keys.size), -keys, lists))
  out = np.empty(keys.size, np.int64)
  out[order] = -np.arange(keys.size)
  return out


# ----------------------------------------------------------------------------------------------
# Scores and labels.


def _rows(name: str, x: Any) -> list[np.ndarray]:
  if isinstance(x, np.ndarray) or not isinstance(x, Sequence) or isinstance(x, str):
    raise TypeError(f"{name} must be an array or a list of lists, got {type(x).__name__}")
  rows = []
  for i, row in enumerate(x):
    try:
      arr = np.asarray(row, dtype=np.float64)
    except (TypeError, ValueError):
      raise TypeError(f"{name}[{i}] must be a list of numbers, got {row!r:.60}") from None
    if arr.ndim != 1:
      raise ValueError(f"{name}[{i}] must be a flat list of numbers, got shape {arr.shape}")
    rows.append(arr)
  return rows


def _as_flat(scores, labels, where):
  """(lead shape, list index, item position, score, label) of the valid items, in list order."""
  dense = isinstance(scores, np.ndarray) or (
      hasattr(scores, "__array__") and not isinstance(scores, (list, tuple)))
  if not dense:
    try:
      arr = np.asarray(scores, dtype=np.float64)
      dense = arr.ndim >= 1
    except (TypeError, ValueError):
      dense = False
  if dense:
    s = np.asarray(scores)
    if s.dtype.kind not in "fiub" or s.ndim < 1:
      raise TypeError(f"scores must be a numeric array with at least 1 dimension, got dtype "
                      f"{s.dtype} and shape {s.shape}")
    lab = np.asarray(labels)
    if lab.shape != s.shape:
      raise ValueError(f"labels must have the shape of scores {s.shape}, got {lab.shape}")
    if lab.dtype.kind not in "fiub":
      raise TypeError(f"labels must be numeric, got dtype {lab.dtype}")
    valid = np.ones(s.shape, bool) if where is None else np.asarray(where)
    if valid.shape != s.shape or valid.dtype != bool:
      raise ValueError(f"where must be a bool array of the shape of scores {s.shape}, got "
                       f"{valid.dtype} {valid.shape}")
    lead = s.shape[:-1]
    n, rows = s.shape[-1], int(np.prod(lead))
    valid2 = valid.reshape(rows, n)
    lists = np.nonzero(valid2)[0]
    pos = (np.cumsum(valid2, axis=1) - 1)[valid2]
    index = np.nonzero(valid2)[1]
    return (lead, lists, pos, index, s.reshape(rows, n)[valid2].astype(np.float64),
            lab.reshape(rows, n)[valid2].astype(np.float64))
  if where is not None:
    raise ValueError("where is only for array input; ragged lists need no padding mask")
  srows, lrows = _rows("scores", scores), _rows("labels", labels)
  if len(srows) != len(lrows):
    raise ValueError(f"scores has {len(srows)} lists but labels has {len(lrows)}")
  for i, (a, b) in enumerate(zip(srows, lrows)):
    if a.size != b.size:
      raise ValueError(f"list {i}: scores has {a.size} items but labels has {b.size}")
  sizes = np.array([r.size for r in srows], np.int64)
  lists = np.repeat(np.arange(len(srows)), sizes)
  pos = np.arange(lists.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
  cat = (lambda rows: np.concatenate(rows) if rows else np.zeros(0))  # noqa: E731
  return (len(srows),), lists, pos, pos, cat(srows), cat(lrows)


def _check_grades(lists, index, grades, what: str) -> None:
  bad = np.flatnonzero(np.isnan(grades) | (grades < 0))
  if bad.size:
    i = bad[0]
    raise ValueError(f"{what}: list {int(lists[i])}, item {int(index[i])}: grades must be "
                     f">= 0 (0 = not relevant) and not NaN, got {grades[i]:g}")


def evaluate(scores: ArrayLike | Sequence[Sequence[float]],
             labels: ArrayLike | Sequence[Sequence[float]],
             metrics: Sequence[str] | str = DEFAULT_METRICS, *, where: ArrayLike | None = None,
             reduce: str | None = None, ties: str = "average", threshold: float = 1,
             gain: str | Callable = "linear", discount: Callable | None = None,
             empty: str = "zero", ap_denominator: str = "all",
             precision_denominator: str = "k", beta: float = 1.0) -> _Result:
  """Metrics of scored lists: arrays ``[..., n]`` or ragged lists of lists of numbers.

  Same names and options as :func:`jaxrank.evaluate`; ``where`` masks padding of array input.
  Scores are compared on the host exactly as given (float64), whereas :func:`jaxrank.evaluate`
  compares them in the array's dtype: two scores closer than float32's resolution tie there
  (float32 input) but not here. ``ties="trec"`` needs doc ids: use :func:`evaluate_run`.

  Returns:
    ``{metric: values}``: NumPy arrays of the leading shape (one value per list), or Python
    floats with ``reduce="mean"``.

  Example:
    >>> from jaxrank import numpy as jrn
    >>> out = jrn.evaluate([[0.9, 0.8, 0.1], [0.2, 0.7]], [[0, 1, 1], [1, 0]], ["map", "mrr"])
    >>> {k: v.round(4).tolist() for k, v in out.items()}
    {'map': [0.5833, 0.5], 'mrr': [0.5, 0.5]}
  """
  _check_reduce(reduce)
  if ties not in ("average", "optimistic", "pessimistic", "first"):
    hint = " (the doc-id order needs doc ids: use evaluate_run)" if ties == "trec" else ""
    raise ValueError("ties must be one of ['average', 'optimistic', 'pessimistic', 'first'] for "
                     f"scores and labels, got {ties!r}{hint}")
  names, specs = _metric_specs(metrics)
  options = _options(ties, threshold=threshold, gain=gain, discount=discount, empty=empty,
                     ap_denominator=ap_denominator, precision_denominator=precision_denominator,
                     beta=beta)
  lead, lists, pos, index, s, y = _as_flat(scores, labels, where)
  _check_grades(lists, index, y, "labels")
  n_lists = int(np.prod(lead))
  s32 = s.astype(np.float32)  # float32 scores go to the kernel as they are: no host sort
  exact = np.array_equal(s32, s, equal_nan=True)
  keys = _ordered_keys(lists, s32 if exact else _trec._order_keys(s, False), ties)
  length = np.bincount(lists, minlength=n_lists)
  rel = y > 0
  values = _trec.score_flat(n_lists, lists, pos, keys, length, lists[rel], pos[rel], y[rel],
                            specs, options, ties="first" if ties == "first" else "average")
  return {name: _reduce(v.reshape(lead), reduce, empty) for name, v in zip(names, values)}


# ----------------------------------------------------------------------------------------------
# Ranked ids and relevant ids.


def _users(recommended, relevant):
  """(keys or None, recommended rows, relevant rows), aligned user by user."""
  keyed = isinstance(recommended, Mapping) or isinstance(relevant, Mapping)
  if keyed:
    if not (isinstance(recommended, Mapping) and isinstance(relevant, Mapping)):
      raise TypeError("recommended and relevant must both be dicts keyed by user, or both "
                      "lists; got "
                      f"{type(recommended).__name__} and {type(relevant).__name__}")
    keys = list(dict.fromkeys(itertools.chain(recommended, relevant)))
    return keys, [recommended.get(k, ()) for k in keys], [relevant.get(k, ()) for k in keys]
  for name, x in (("recommended", recommended), ("relevant", relevant)):
    if isinstance(x, (str, bytes)) or not isinstance(x, Sequence):
      raise TypeError(f"{name} must be a list with one entry per user (or a dict keyed by "
                      f"user), got {type(x).__name__}")
  if len(recommended) != len(relevant):
    raise ValueError(f"recommended has {len(recommended)} users but relevant has "
                     f"{len(relevant)}")
  return None, list(recommended), list(relevant)


def _label(keys, i):
  return f"user {keys[i]!r}" if keys is not None else f"user {i}"


def evaluate_ranked(recommended: Sequence[Sequence] | Mapping[Any, Sequence],
                    relevant: Sequence[Any] | Mapping[Any, Any],
                    metrics: Sequence[str] | str = DEFAULT_METRICS, *,
                    reduce: str | None = None, threshold: float = 1,
                    gain: str | Callable = "linear", discount: Callable | None = None,
                    empty: str = "zero", ap_denominator: str = "all",
                    precision_denominator: str = "k", beta: float = 1.0) -> _Result:
  """Metrics of ranked item-id lists (no scores, so no ties) against relevant ids.

  Args:
    recommended: per user, the recommended item ids, best first (a list of lists, or a dict
      ``{user: [ids]}``). Ids are of one kind: ints >= 0 or strings; an int id ``-1`` is
      padding (as everywhere in jaxrank) and skipped, so NumPy rows padded with -1 work.
    relevant: per user, the relevant ids (a list or set: grade 1) or ``{id: grade}``.
      Relevant ids that were not recommended count as relevant and never retrieved.
    metrics, reduce, options: as in :func:`evaluate`.

  Returns:
    ``{metric: values}``: one value per user (an array, or ``{user: float}`` for dict input), or
    floats with ``reduce="mean"``. Dict input evaluates every user of either dict, in order of
    first appearance; a user without relevant items gets the ``empty`` policy.

  Example:
    >>> from jaxrank import numpy as jrn
    >>> out = jrn.evaluate_ranked({"ann": ["a", "b", "c"]}, {"ann": {"c": 2, "z": 1}},
    ...                           ["mrr", "recall@3"])
    >>> out
    {'mrr': {'ann': 0.3333333333333333}, 'recall@3': {'ann': 0.5}}
  """
  _check_reduce(reduce)
  names, specs = _metric_specs(metrics)
  options = _options("first", threshold=threshold, gain=gain, discount=discount, empty=empty,
                     ap_denominator=ap_denominator, precision_denominator=precision_denominator,
                     beta=beta)
  keys, rec_rows, rel_rows = _users(recommended, relevant)
  n = len(rec_rows)
  rec_ids, rec_user, rel_ids, rel_user, rel_grade = [], [], [], [], []
  for i, (rec, rel) in enumerate(zip(rec_rows, rel_rows)):
    if isinstance(rec, (str, bytes, Mapping)) or not isinstance(rec, (Sequence, np.ndarray)):
      raise TypeError(f"recommended for {_label(keys, i)} must be a list of ids, got "
                      f"{type(rec).__name__}")
    rec = [v for v in rec if not _is_padding(v)]
    rec_ids.extend(rec)
    rec_user.extend([i] * len(rec))
    if isinstance(rel, Mapping):
      items, grades = list(rel), list(rel.values())
    elif isinstance(rel, (Sequence, set, frozenset, np.ndarray)) and not isinstance(rel, str):
      items = list(rel)
      grades = [1.0] * len(items)
    else:
      raise TypeError(f"relevant for {_label(keys, i)} must be a list/set of ids or a dict "
                      f"{{id: grade}}, got {type(rel).__name__}")
    kept = [j for j, item in enumerate(items) if not _is_padding(item)]
    items, grades = [items[j] for j in kept], [grades[j] for j in kept]
    for item, g in zip(items, grades):
      if isinstance(g, bool) or not isinstance(g, (int, float, np.integer, np.floating)) or (
          not g >= 0):
        raise ValueError(f"relevant for {_label(keys, i)}: the grade of item {item!r} must be "
                         f"a number >= 0, got {g!r}")
    rel_ids.extend(items)
    rel_user.extend([i] * len(items))
    rel_grade.extend(grades)
  ids = rec_ids + rel_ids
  strings = all(isinstance(v, str) for v in ids)
  if not strings:
    bad = next((v for v in ids if isinstance(v, (bool, np.bool_))
                or not isinstance(v, (int, np.integer))), None)
    if bad is not None:
      raise TypeError(f"item ids must all be ints or all be strings, got {bad!r} "
                      f"({type(bad).__name__})")
    negative = next((j for j, v in enumerate(ids) if v < 0), None)
    if negative is not None:
      user = (rec_user + rel_user)[negative]
      what = "recommended" if negative < len(rec_ids) else "relevant"
      raise ValueError(f"{what} for {_label(keys, user)}: item ids must be >= 0 (-1 is "
                       f"padding), got {ids[negative]}")
  codes, inverse = np.unique(np.array(ids, dtype=str if strings else np.int64).reshape(-1),
                             return_inverse=True)
  inverse = inverse.reshape(-1)
  rec_user = np.asarray(rec_user, np.int64)
  rel_user = np.asarray(rel_user, np.int64)
  rec_code, rel_code = inverse[:rec_user.size], inverse[rec_user.size:]
  D = max(codes.size, 1)
  for user, code, what in ((rec_user, rec_code, "recommended"), (rel_user, rel_code,
                                                                  "relevant")):
    found = _trec.first_duplicate(user, code, codes.size)
    if found is not None:
      raise ValueError(f"{what} for {_label(keys, found[0])} repeats item "
                       f"{codes[found[1]].item()!r}")
  sizes = np.bincount(rec_user, minlength=n)
  pos = _trec.within_group(rec_user, n)
  # Slot of each relevant id: its position if recommended, else after the recommended items.
  rec_key = rec_user * D + rec_code
  order = np.argsort(rec_key)
  rel_key = rel_user * D + rel_code
  at = np.minimum(np.searchsorted(rec_key[order], rel_key), max(rec_key.size - 1, 0))
  found = rec_key[order][at] == rel_key if rec_key.size else np.zeros(rel_key.size, bool)
  grade = np.asarray(rel_grade, np.float64)
  missing = ~found
  extra = np.bincount(rel_user[missing], minlength=n)
  slot = np.where(found, pos[order][at] if rec_key.size else 0, 0)
  slot[missing] = sizes[rel_user[missing]] + _trec.within_group(rel_user[missing], n)
  positive = grade > 0
  values = _trec.score_flat(n, rec_user, pos, -pos, sizes + extra, rel_user[positive],
                            slot[positive], grade[positive], specs, options, ties="first")
  return {name: _keyed(keys, v, reduce, empty) for name, v in zip(names, values)}


def _keyed(keys, values: np.ndarray, reduce, empty):
  if reduce is not None:
    return _reduce(values, reduce, empty)
  return values if keys is None else dict(zip(keys, values.tolist()))


# ----------------------------------------------------------------------------------------------
# pytrec_eval-style dicts and TREC runs.


def evaluate_run(run: io.Run | Mapping[str, Mapping[str, float]],
                 qrels: io.Qrels | Mapping[str, Mapping[str, int]],
                 metrics: Sequence[str] | str = ("map", "ndcg", "P_10"), *,
                 ties: str = "trec", float32: bool = False, max_docs: int | None = None,
                 complete: bool = False, reduce: str | None = None, threshold: int = 1,
                 gain: str | Callable = "linear", discount: Callable | None = None,
                 empty: str = "zero", ap_denominator: str = "all",
                 precision_denominator: str = "k", beta: float = 1.0) -> _Result:
  """Evaluates a run against qrels the trec_eval way, from dicts or :mod:`jaxrank.io` objects.

  Args:
    run: ``{qid: {docid: score}}`` (string ids) or a :class:`jaxrank.io.Run`.
    qrels: ``{qid: {docid: grade}}`` with integer grades (``-1`` = unjudged) or a
      :class:`jaxrank.io.Qrels`.
    metrics: jaxrank names (``"ndcg@10"``, ``"mrr"``) and/or trec_eval measures, printed or
      ``-m`` style (``"P_10"``, ``"ndcg_cut.10"``, ``"bpref"``, ``"iprec_at_recall_0.50"``); a
      name that is both (``"map"``, ``"ndcg"``) is read as trec_eval's, and a trec_eval family
      with several default cutoffs needs one (``"recall_10"`` or jaxrank's ``"recall@10"``).
    ties: ``"trec"`` (default; score descending, then doc id descending, as trec_eval and
      pytrec_eval), ``"first"`` (then input order), or ``"average"``/``"optimistic"``/
      ``"pessimistic"`` (exact expectation or bounds over tied orders; jaxrank metrics only).
    float32: compare scores as float32, as pytrec_eval does (default float64, as trec_eval 10).
    max_docs: keep the top ``max_docs`` of each query (trec_eval ``-M``).
    complete: also evaluate qrels queries absent from the run, as 0 (trec_eval ``-c``);
      otherwise queries are those of the qrels that the run has (run queries without
      judgments are ignored).
    threshold: relevant means grade >= threshold (trec_eval ``-l``); NDCG ignores it.
    reduce: ``None`` for ``{metric: {qid: value}}``, ``"mean"`` for ``{metric: float}``.

  Example:
    >>> from jaxrank import numpy as jrn
    >>> run = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}
    >>> qrels = {"q1": {"d1": 1, "d3": 2}}
    >>> out = jrn.evaluate_run(run, qrels, ["recip_rank", "P_2", "ndcg@2"])  # d2 before d1
    >>> {name: round(v["q1"], 4) for name, v in out.items()}
    {'recip_rank': 0.5, 'P_2': 0.5, 'ndcg@2': 0.2398}
  """
  _check_reduce(reduce)
  if isinstance(metrics, str):
    metrics = [metrics]
  metrics = list(metrics)
  if not metrics:
    raise ValueError("metrics must name at least one metric, got an empty list")
  run, qrels = io.as_run(run), io.as_qrels(qrels)
  plan: list[tuple[str, str, Any]] = []  # (given name, "core" | "trec", spec or printed name)
  requests: list[str] = []
  core_specs = []
  for name in metrics:
    try:
      spec = _evaluate.parse_metric(name)
    except ValueError:
      spec = None
    if spec is not None and name not in _trec.MEASURES:
      plan.append((name, "core", spec))
      core_specs.append(spec)
      continue
    (request,) = _trec.parse_measures([name])
    printed = request.names()
    if len(printed) != 1:
      raise ValueError(f"metric {name!r} names {len(printed)} values ({', '.join(printed)}); "
                       f"ask for one, e.g. {printed[0]!r}")
    plan.append((name, "trec", printed[0]))
    requests.append(name)
  options = _options(ties, threshold=threshold, gain=gain, discount=discount, empty=empty,
                     ap_denominator=ap_denominator, precision_denominator=precision_denominator,
                     beta=beta)
  result = _trec.evaluate_run(run, qrels, _trec.parse_measures(requests) if requests else [],
                              ties=ties, float32=float32, max_docs=max_docs, complete=complete,
                              threshold=threshold, core_specs=core_specs, options=options)
  out: _Result = {}
  for name, kind, ref in plan:
    if kind == "core":
      values = result.core[ref]
    elif ref in result.per_query:
      values = result.per_query[ref]
    else:  # summary-only measures (num_q, gm_map, runid)
      out[name] = result.summary[ref]
      continue
    out[name] = _keyed(result.qids, np.asarray(values), reduce, empty)
  return out
