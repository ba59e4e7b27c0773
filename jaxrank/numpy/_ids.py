"""``jaxrank.numpy.evaluate_ranked``: ranked item-id lists against relevant ids.

Ids come as lists, sets, ``{id: grade}`` dicts, 2-D arrays padded with ``-1`` or dicts keyed
by user; they are checked here (every message names the user and the id) and turned into
integer codes. 2-D int arrays (and lists of int rows that pad cheaply) go straight to the
jitted ranked-ids kernel; anything else is ranked on the host and scored from the ranks of
the relevant ids (:mod:`jaxrank._host.kernels`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core import options as _options
from jaxrank._core.names import DEFAULT_METRICS
from jaxrank._host import kernels
from jaxrank._host import ranks as _hostranks
from jaxrank.numpy import _inputs
from jaxrank.numpy._inputs import Result as _Result


def _label(keys, i):
  return f"user {keys[i]!r}" if keys is not None else f"user {i}"


def _some(keys) -> str:
  keys = list(keys)
  if not keys:
    return "none"
  return ", ".join(repr(k) for k in keys[:3]) + (f" and {len(keys) - 3} more"
                                                 if len(keys) > 3 else "")


def _table(name: str, x: Any) -> np.ndarray | list:
  """One side of the input without keys: a 2-D array, or a list with an entry per user."""
  if _inputs.is_array(x):
    arr = np.asarray(x)
    if arr.ndim == 2:
      return arr
    if arr.ndim == 1 and arr.dtype == object:
      return list(arr)
    raise ValueError(f"{name} as an array must be 2-D (users x items, padded with -1), got "
                     f"shape {arr.shape}")
  if isinstance(x, (str, bytes)) or not isinstance(x, Sequence):
    raise TypeError(f"{name} must be a list with one entry per user, a 2-D array of ids "
                    f"padded with -1, or a dict keyed by user; got {type(x).__name__}")
  return list(x)


def _users(recommended, relevant, relevant_grades):
  """(keys or None, recommended table, relevant table, grades table), aligned user by user."""
  keyed = isinstance(recommended, Mapping) or isinstance(relevant, Mapping)
  if keyed:
    if not (isinstance(recommended, Mapping) and isinstance(relevant, Mapping)):
      raise TypeError("recommended and relevant must both be dicts keyed by user, or both "
                      "lists or arrays; got "
                      f"{type(recommended).__name__} and {type(relevant).__name__}")
    if relevant_grades is not None:
      raise TypeError("relevant_grades is for relevant ids given as a list or array; with "
                      "dicts give the grades as {id: grade}")
    keys = list(dict.fromkeys(itertools.chain(recommended, relevant)))
    if not keys:
      raise ValueError("recommended and relevant hold no users: nothing to evaluate")
    if recommended.keys().isdisjoint(relevant.keys()):
      raise ValueError(f"recommended and relevant share no user: recommended has "
                       f"{_some(recommended)}; relevant has {_some(relevant)}")
    return keys, [recommended.get(k, ()) for k in keys], [relevant.get(k, ()) for k in keys], None
  rec, rel = _table("recommended", recommended), _table("relevant", relevant)
  if len(rec) != len(rel):
    raise ValueError(f"recommended has {len(rec)} users but relevant has {len(rel)}")
  if len(rec) == 0:
    raise ValueError("recommended and relevant hold no users: nothing to evaluate")
  grades: np.ndarray | list | None = None
  if relevant_grades is not None:
    if isinstance(rel, np.ndarray):
      grades = np.asarray(relevant_grades)
      if grades.shape != rel.shape:
        raise ValueError(f"relevant_grades must have the shape of relevant {rel.shape}, got "
                         f"{grades.shape}")
    else:
      grades = _table("relevant_grades", relevant_grades)
      if len(grades) != len(rel):
        raise ValueError(f"relevant has {len(rel)} users but relevant_grades has "
                         f"{len(grades)}")
  return None, rec, rel, grades


def _row_values(what: str, label: str, row: Any, ordered: bool) -> list:
  allowed = (Sequence,) if ordered else (Sequence, set, frozenset)
  if isinstance(row, (str, bytes)) or not (isinstance(row, allowed) or _inputs.is_array(row)):
    kind = "a list of ids, best first" if ordered else "a list/set of ids or a dict {id: grade}"
    raise TypeError(f"{what} for {label} must be {kind}, got {_inputs.describe(row)}")
  if _inputs.is_array(row):
    arr = np.asarray(row)
    if arr.ndim != 1:
      raise ValueError(f"{what} for {label} must be a flat list of ids, got shape {arr.shape}")
    return arr.tolist()
  return list(row)


@dataclasses.dataclass
class _Side:
  """One side's ids, flat: ``user`` (int64), ``ids`` (int64 array or list of str), ``kind``
  (``"int"``, ``"str"`` or None without ids) and, for the relevant side, ``grades``."""

  user: np.ndarray
  ids: Any
  kind: str | None
  grades: np.ndarray | None = None


def _user_at(sizes, at: int) -> int:
  """The user of the ``at``-th id, with ``sizes`` ids per user."""
  return int(np.searchsorted(np.cumsum(sizes), at, side="right"))


def _id_kind(what: str, keys, sizes, values: list) -> str | None:
  """``"int"`` or ``"str"`` for ids all of one kind (None without ids); else a one-line error."""
  types = set(map(type, values))
  if not types:
    return None
  if all(issubclass(t, str) for t in types):
    return "str"
  if all(issubclass(t, (int, np.integer)) and not issubclass(t, (bool, np.bool_))
         for t in types):
    return "int"
  strings = isinstance(values[0], str)
  for at, v in enumerate(values):
    label = _label(keys, _user_at(sizes, at))
    if not (isinstance(v, str) or _inputs.is_number(v) and isinstance(v, (int, np.integer))):
      raise TypeError(f"{what} for {label}: item ids must be ints >= 0 or strings, got "
                      f"{_inputs.describe(v)}")
    if isinstance(v, str) != strings:
      raise TypeError(f"{what} for {label}: item ids must all be ints or all be strings, got "
                      f"{_inputs.describe(v)} after {_inputs.describe(values[0])}")
  raise AssertionError("unreachable")  # pragma: no cover


def _ints(what, keys, sizes, values: list) -> np.ndarray:
  try:
    return np.array(values, dtype=np.int64)
  except OverflowError:
    at = next(i for i, v in enumerate(values) if not -2**63 <= v < 2**63)
    raise ValueError(f"{what} for {_label(keys, _user_at(sizes, at))}: int item ids must be in "
                     f"[0, 2**63), got {values[at]}") from None


def _rows_of_ids(what: str, keys, table: list, ordered: bool, grades_table):
  """Per-user rows chained: (ids per user, ids, grades) with grades 1 unless given."""
  sizes: list[int] = []
  values: list[Any] = []
  grades: list[Any] = []
  for i, row in enumerate(table):
    label = _label(keys, i)
    if not ordered and isinstance(row, Mapping):
      if grades_table is not None:
        raise TypeError(f"relevant_grades is for ids given as lists; relevant for {label} is "
                        f"a dict {{id: grade}}")
      values.extend(row)
      grades.extend(row.values())
      sizes.append(len(row))
      continue
    items = _row_values(what, label, row, ordered)
    if grades_table is not None:
      if isinstance(row, (set, frozenset)):
        raise TypeError(f"relevant for {label} is a set (no order) but relevant_grades gives "
                        f"grades by position: give a list")
      g = _row_values("relevant_grades", label, grades_table[i], True)
      if len(g) != len(items):
        raise ValueError(f"relevant for {label} has {len(items)} ids but relevant_grades has "
                         f"{len(g)} grades")
      grades.extend(g)
    elif not ordered:
      grades.extend([1] * len(items))
    values.extend(items)
    sizes.append(len(items))
  return sizes, values, grades


def _int_rows(table, ordered: bool, grades_table):
  """``(sizes, ids, grades)`` without a loop per user when every row is a list or tuple of
  Python ints (or, on the relevant side, every row a set of ints or a dict ``{int id:
  number}``); None sends the table to the general path, which names the user and the id of
  anything wrong."""
  if grades_table is not None or not isinstance(table, list):
    return None
  kinds = set(map(type, table))
  plain = {list, tuple} if ordered else {list, tuple, set, frozenset}
  grades: list | np.ndarray | None = None
  if not kinds <= plain:
    if ordered or not kinds <= {dict, tuple} or not all(type(r) is dict or not r for r in table):
      return None
    grades = list(itertools.chain.from_iterable(r.values() for r in table if r))
    if not set(map(type, grades)) <= {int, float}:
      return None
  flat = list(itertools.chain.from_iterable(table))
  if not set(map(type, flat)) <= {int}:
    return None
  try:
    ids = np.array(flat, np.int64)
  except OverflowError:
    return None
  try:
    grades = None if grades is None else np.array(grades, np.float64)
  except OverflowError:
    return None
  return np.fromiter(map(len, table), np.int64, count=len(table)), ids, grades


def _flat_ids(what: str, keys, table, ordered: bool, grades_table=None) -> _Side:
  """Flattens one side: ids checked to be all ints or all strings; ``-1`` padding dropped."""
  if isinstance(table, np.ndarray):
    if table.dtype.kind in "iu":
      if table.dtype == np.uint64 and table.size and table.max() >= 2**63:
        at = np.argwhere(table >= 2**63)[0]
        raise ValueError(f"{what} for {_label(keys, int(at[0]))}: int item ids must be in "
                         f"[0, 2**63), got {table[tuple(at)]}")
      arr = table.astype(np.int64)
      keep = arr != -1
      user = np.nonzero(keep)[0]
      g = None if ordered else np.ones(user.size) if grades_table is None else _grade_array(
          keys, user, arr[keep], grades_table[keep])
      return _check_ids(what, keys, _Side(user, arr[keep], "int", g))
    if table.dtype.kind not in "UO":
      raise TypeError(f"{what} must hold int or string ids, got an array of dtype "
                      f"{table.dtype}")
    table = table.tolist()
  fast = _int_rows(table, ordered, grades_table)
  if fast is not None:
    sizes, ids, grades = fast
    keep = ids != -1
    user = np.repeat(np.arange(len(table)), sizes)[keep]
    g = None if ordered else (np.ones(user.size) if grades is None else
                              _grade_array(keys, user, ids[keep], grades[keep]))
    return _check_ids(what, keys, _Side(user, ids[keep], "int", g))
  sizes, values, grades = _rows_of_ids(what, keys, table, ordered, grades_table)
  user = np.repeat(np.arange(len(table)), sizes)
  kind = _id_kind(what, keys, sizes, values)
  ids, keep = values, None
  if kind == "int":
    ids = _ints(what, keys, sizes, values)
    keep = ids != -1
  g = None if ordered else _grade_values(keys, user, ids, grades, keep)
  if keep is not None:
    user, ids = user[keep], ids[keep]
  return _check_ids(what, keys, _Side(user, ids, kind, g))


def _check_ids(what, keys, side: _Side) -> _Side:
  if side.kind != "int":
    return side
  negative = np.flatnonzero(side.ids < 0)
  if negative.size:
    at = negative[0]
    raise ValueError(f"{what} for {_label(keys, int(side.user[at]))}: item ids must be >= 0 "
                     f"(-1 is padding), got {side.ids[at]}")
  return side


def _grade_values(keys, user, ids, grades: list, keep) -> np.ndarray:
  """Grades of the relevant ids (``keep``: those not padding): numbers >= 0 that float32 holds
  (not bools, NaN or infinite)."""
  types = set(map(type, grades))
  bad = None
  if not all(issubclass(t, (int, float, np.integer, np.floating))
             and not issubclass(t, (bool, np.bool_)) for t in types):
    bad = next(i for i, g in enumerate(grades) if not _inputs.is_number(g))
  else:
    try:
      values = np.array(grades, dtype=np.float64).reshape(-1)
    except OverflowError:
      bad = next(i for i, g in enumerate(grades) if abs(g) > 1e308)
  if bad is not None:
    item = ids[bad].item() if isinstance(ids[bad], np.generic) else ids[bad]
    raise ValueError(f"relevant for {_label(keys, int(user[bad]))}: the grade of item "
                     f"{item!r} must be a number >= 0, got {_inputs.describe(grades[bad])}")
  if keep is None:
    return _grade_array(keys, user, ids, values)
  return _grade_array(keys, user[keep], ids[keep], values[keep])


def _grade_array(keys, user, ids, grades) -> np.ndarray:
  grades = np.asarray(grades)
  if grades.dtype.kind not in "biuf":
    raise TypeError(f"relevant_grades must be numeric, got dtype {grades.dtype}")
  grades = grades.astype(np.float64)
  bad = np.flatnonzero(np.isnan(grades) | (grades < 0) | (grades > _checks.MAX_GRADE))
  if bad.size:
    i = bad[0]
    item = ids[i].item() if isinstance(ids[i], np.generic) else ids[i]
    raise ValueError(f"relevant for {_label(keys, int(user[i]))}: the grade of item "
                     f"{item!r} must be a number >= 0 and at most {_checks.MAX_GRADE:g} (float32), "
                     f"got {float(grades[i])!r}")
  return grades


def _codes(rec: _Side, rel: _Side) -> tuple[np.ndarray, int, Callable[[int], Any]]:
  """Integer codes of the ids of both sides (equal ids equal codes), how many codes there are,
  and code -> id."""
  if rec.kind is not None and rel.kind is not None and rec.kind != rel.kind:
    raise TypeError(f"item ids must all be ints or all be strings, got {rec.kind} ids in "
                    f"recommended and {rel.kind} ids in relevant")
  if "str" in (rec.kind, rel.kind):
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index))
                         for v in itertools.chain(rec.ids, rel.ids)), np.int64,
                        count=len(rec.ids) + len(rel.ids))
    return codes, len(index), lambda c: list(index)[c]
  both = np.concatenate([np.asarray(rec.ids, np.int64), np.asarray(rel.ids, np.int64)])
  most = int(both.max(initial=-1))
  if most < 2**31:  # small ids are their own codes: no sort
    return both, most + 1, lambda c: c
  uniq, inverse = np.unique(both, return_inverse=True)
  return inverse.reshape(-1), uniq.size, lambda c: uniq[c].item()


@_options.takes(_options.FACE_OPTIONS, skip=("ties",))  # ranked ids have no ties
def evaluate_ranked(recommended: Sequence[Sequence] | ArrayLike | Mapping[Any, Sequence],
                    relevant: Sequence[Any] | ArrayLike | Mapping[Any, Any],
                    metrics: Sequence[str] | str = DEFAULT_METRICS, *,
                    relevant_grades: Sequence[Sequence[float]] | ArrayLike | None = None,
                    reduce: str | None = None, **options: Any) -> _Result:
  """Metrics of ranked item-id lists (no scores, so no ties) against relevant ids.

  The rank of a recommended item is 1 + the number of ids before it in its user's list; a
  relevant id that was not recommended counts as relevant and never retrieved (recall and the
  ideal DCG see it), as in trec_eval.

  Args:
    recommended: per user, the recommended item ids, best first: a list of lists (or of
      arrays), a 2-D NumPy or JAX array (e.g. the output of :func:`jaxrank.top_k_ids`), or a
      dict ``{user: [ids]}``. Ids are of one kind: ints in ``[0, 2**63)`` or strings (compared
      exactly: ``'a\\x00'`` is not ``'a'``); an int id ``-1`` is padding (as everywhere in
      jaxrank) and skipped, so NumPy rows padded with -1 work.
    relevant: per user, the relevant ids: a list or set (grade 1) or a dict ``{id: grade}``; a
      2-D array padded with -1; or a dict keyed by user (then ``recommended`` is one too).
    relevant_grades: optional grades of the relevant ids given as lists or an array, of the
      same shape as ``relevant`` (default 1); grades are numbers >= 0 (0 = not relevant).
    metrics, reduce, options: as in :func:`jaxrank.numpy.evaluate`.

  Returns:
    ``{metric: values}``: one value per user (an array, or ``{user: float}`` for dict input), or
    floats with ``reduce="mean"``. Dict input evaluates every user of either dict, in order of
    first appearance; a user without relevant items gets the ``empty`` policy. Dicts that share
    no user, or an input without users, raise a ``ValueError``.

  Example:
    >>> from jaxrank import numpy as jrn
    >>> out = jrn.evaluate_ranked({"ann": ["a", "b", "c"]}, {"ann": {"c": 2, "z": 1}},
    ...                           ["mrr", "recall@3"])
    >>> out
    {'mrr': {'ann': 0.3333333333333333}, 'recall@3': {'ann': 0.5}}
    >>> import numpy as np
    >>> out = jrn.evaluate_ranked(np.array([[4, 2, -1], [7, 5, 6]]), np.array([[2], [6]]),
    ...                           ["recall@2", "ndcg"], relevant_grades=np.array([[1], [3]]))
    >>> {k: v.round(4).tolist() for k, v in out.items()}
    {'recall@2': [1.0, 0.0], 'ndcg': [0.6309, 0.5]}
  """
  _inputs.check_reduce(reduce)
  names, specs = _inputs.metric_specs(metrics)
  empty = options["empty"]
  options = _inputs.make_options("first", **options)
  keys, rec_table, rel_table, grades_table = _users(recommended, relevant, relevant_grades)
  values = _array_ranked_values(*_as_id_arrays(rec_table, rel_table, grades_table),
                                 specs=specs, options=options)
  if values is not None:
    return {name: _inputs.keyed(keys, v, reduce, empty) for name, v in zip(names, values)}
  n = len(rec_table)
  rec = _flat_ids("recommended", keys, rec_table, True)
  rel = _flat_ids("relevant", keys, rel_table, False, grades_table)
  codes, n_codes, id_of = _codes(rec, rel)
  rec_code, rel_code = codes[:rec.user.size], codes[rec.user.size:]
  sorted_sides = []
  for side, code, what in ((rec, rec_code, "recommended"), (rel, rel_code, "relevant")):
    order = _hostranks.order_within(side.user, code, n)
    user, code = side.user[order], code[order]
    dup = np.flatnonzero((code[1:] == code[:-1]) & (user[1:] == user[:-1]))
    if dup.size:
      raise ValueError(f"{what} for {_label(keys, int(user[dup[0]]))} repeats item "
                       f"{id_of(int(code[dup[0]]))!r}")
    sorted_sides.append((order, user, code))
  (order, user, code), _ = sorted_sides
  sizes = np.bincount(rec.user, minlength=n)
  # The rank of each relevant id: its position + 1 if recommended, else 0 (not retrieved).
  # Recommended ids sorted within users, users ascending: (user, code) keys are sorted.
  pos = (np.arange(rec.user.size) - (np.cumsum(sizes) - sizes)[rec.user])[order]
  d = max(n_codes, 1)
  rec_key, rel_key = user * d + code, rel.user * d + rel_code
  at = np.minimum(np.searchsorted(rec_key, rel_key), max(rec_key.size - 1, 0))
  found = rec_key[at] == rel_key if rec_key.size else np.zeros(rel_key.size, bool)
  rank = np.where(found, pos[at] + 1 if rec_key.size else 0, 0)
  assert rel.grades is not None  # the relevant side (not ordered) always has grades
  positive = rel.grades > 0
  values = kernels.slot_values(sizes, rel.user[positive], rank[positive], rank[positive],
                        rel.grades[positive], resolved=True, specs=specs, options=options)
  return {name: _inputs.keyed(keys, v, reduce, empty) for name, v in zip(names, values)}


def _as_id_arrays(rec, rel, grades):
  """The tables as 2-D id arrays padded with -1 (and grades) where that is cheap: arrays as they
  are; lists and dicts of int ids whose rows are not too uneven (padding at most doubles
  them). Anything else comes back as it is, for the general path."""
  if isinstance(rec, np.ndarray) or isinstance(rel, np.ndarray) or grades is not None:
    return rec, rel, grades
  rows = _int_rows(rec, True, None), _int_rows(rel, False, None)
  if None in rows:
    return rec, rel, grades
  (rec_sizes, rec_ids, _), (rel_sizes, rel_ids, rel_grades) = rows
  padded = (_padded(rec_sizes, rec_ids, -1), _padded(rel_sizes, rel_ids, -1),
            None if rel_grades is None else _padded(rel_sizes, rel_grades, 0))
  return (rec, rel, grades) if padded[0] is None or padded[1] is None else padded


def _padded(sizes: np.ndarray, values: np.ndarray, fill) -> np.ndarray | None:
  """Rows of ``sizes[i]`` consecutive ``values`` as a 2-D array padded with ``fill``; None when
  padding would more than double the data."""
  n, width = sizes.size, int(sizes.max(initial=0))
  if values.size == n * width:
    return values.reshape(n, width)
  if n * width > 2 * values.size + 4096:
    return None
  out = np.full((n, width), fill, values.dtype)
  out[np.arange(width) < sizes[:, None]] = values
  return out


def _array_ranked_values(rec, rel, grades, *, specs, options) -> list[np.ndarray] | None:
  """Metrics of 2-D int id arrays (rows padded with -1) by the jitted ranked-ids kernel, rows
  in padded calls; None sends anything unusual (ids from 2**31, ids below -1, a repeated id, a
  bad grade) to the general path, whose errors name the user and the id."""
  if not (isinstance(rec, np.ndarray) and isinstance(rel, np.ndarray) and rec.dtype.kind in "iu"
          and rel.dtype.kind in "iu" and rec.shape[1] and rel.shape[1]):
    return None
  if min(rec.min(), rel.min()) < -1 or max(rec.max(), rel.max()) >= 2**31 - 1:
    return None
  rec, rel = rec.astype(np.int32), rel.astype(np.int32)
  order = np.argsort(rel, axis=-1, kind="stable")  # slots by id: a canonical order
  rel = np.take_along_axis(rel, order, axis=-1)
  if _repeats(np.sort(rec, axis=-1)) or _repeats(rel):
    return None
  if grades is None:
    grades = np.ones(rel.shape, np.float32)
  else:
    grades = np.take_along_axis(np.asarray(grades), order, axis=-1)
    if grades.dtype.kind not in "iuf" or not np.all((grades >= 0) & (grades <= _checks.MAX_GRADE)):
      return None  # (NaN fails the test too)
    grades = grades.astype(np.float32)
  return kernels.ranked_id_values(rec, rel, grades, specs=specs, options=options)


def _repeats(rows: np.ndarray) -> bool:
  """Whether a sorted row holds an id (>= 0) twice."""
  return bool(np.any((rows[:, 1:] == rows[:, :-1]) & (rows[:, 1:] >= 0)))
