"""Malformed, unusual and hostile input to ``jaxrank.numpy``, walked as a table (issue 10, items
5, 7, 8, 20 and 22).

Each row is a description, a call, and what it must give: ``Raises(error, pattern)`` -- a one-line
error naming the argument, the list or user, and the offending value -- or the value it must
return (compared to 1e-12; NaN equals NaN). Nothing may be silently wrong, empty or NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np
import pytest

import jaxrank
from jaxrank import numpy as jrn


class Raises(NamedTuple):
  error: type
  pattern: str


class Row(NamedTuple):
  description: str
  call: Callable[[], Any]
  expected: Any


def ev(scores, labels, metric="mrr", **kw):
  """One metric of ``jrn.evaluate`` as a list."""
  return jrn.evaluate(scores, labels, [metric], **kw)[metric].tolist()


def ranked(rec, rel, metric="mrr", **kw):
  """One metric of ``jrn.evaluate_ranked`` as a list (or dict for dict input)."""
  out = jrn.evaluate_ranked(rec, rel, [metric], **kw)[metric]
  return out if isinstance(out, (dict, float)) else out.tolist()


def run(run_, qrels, metric="map", **kw):
  return jrn.evaluate_run(run_, qrels, [metric], **kw)[metric]


F32_SUBNORMAL = float(np.float32(1e-45))

ROWS = [
    # --- jrn.evaluate: scores and labels that are not numbers ---------------------------------
    Row("scores None", lambda: ev(None, [[1]]),
        Raises(TypeError, r"^scores must be an array or a list of lists, got None$")),
    Row("labels None", lambda: ev([[0.5]], None),
        Raises(TypeError, r"^labels must be an array or a list of lists, got None$")),
    Row("None inside rectangular scores", lambda: ev([[0.5, None]], [[1, 0]]),
        Raises(TypeError, r"scores must hold numbers, got None \(NoneType\) at index \(0, 1\)")),
    Row("None inside ragged scores", lambda: ev([[0.5, 0.2], [None]], [[1, 0], [1]]),
        Raises(TypeError, r"scores\[1\] must hold numbers, got None \(NoneType\) at index 0")),
    Row("object array with None", lambda: ev(np.array([[0.5, None]], object), [[1, 0]]),
        Raises(TypeError, r"scores must hold numbers, got None .* at index \(0, 1\)")),
    Row("None inside labels", lambda: ev([[0.5, 0.2]], [[1, None]]),
        Raises(TypeError, r"labels must hold numbers, got None .* at index \(0, 1\)")),
    Row("scores as strings", lambda: ev([["0.5", "0.2"]], [[1, 0]]),
        Raises(TypeError, r"scores must be numeric, got dtype <U3 \(strings are not parsed\)")),
    Row("a string as a ragged row", lambda: ev([[0.5, 0.2], "ab"], [[1, 0], [1, 0]]),
        Raises(TypeError, r"scores\[1\] must be a list of numbers, got 'ab' \(str\)")),
    Row("an int beyond 64 bits in scores", lambda: ev([[10**30, 1]], [[1, 0]]),
        Raises(TypeError, r"scores must hold numbers, got 10{30} \(an int beyond 64 bits\) at "
                          r"index \(0, 0\)")),
    Row("complex scores", lambda: ev(np.array([[1j, 2]]), [[1, 0]]),
        Raises(TypeError, r"scores must be numeric, got dtype complex128")),
    Row("nested row", lambda: ev([[0.5, 0.2], [[0.1]]], [[1, 0], [1]]),
        Raises(ValueError, r"scores\[1\] must be a flat list of numbers, got shape \(1, 1\)")),
    Row("0-d scores", lambda: ev(np.float32(0.5), np.float32(1)),
        Raises(ValueError, r"scores must have at least 1 dimension, got shape \(\)")),
    # --- jrn.evaluate: labels out of range (grades are float32 in the rank core) -------------
    Row("negative label", lambda: ev([[0.1, 0.2]], [[1, -1]]),
        Raises(ValueError, r"labels: list 0, item 1: grades must be >= 0 .* got -1$")),
    Row("NaN label", lambda: ev([[0.1, 0.2]], [[1, math.nan]]),
        Raises(ValueError, r"labels: list 0, item 1: grades must .* not NaN; got nan")),
    Row("+inf label", lambda: ev([[0.1, 0.2], [0.3, 0.4]], [[1, 0], [0, math.inf]]),
        Raises(ValueError, r"labels: list 1, item 1: grades must .* finite and at most "
                           r"3.40282e\+38 \(float32\).* got inf")),
    Row("label beyond float32", lambda: ev([[0.1, 0.2]], [[1e39, 0]]),
        Raises(ValueError, r"labels: list 0, item 0: .* got 1e\+39")),
    Row("bad label in a padded array names the column", lambda: ev(
        np.zeros((1, 3)), np.array([[0, 0, -2]]), where=np.array([[True, False, True]])),
        Raises(ValueError, r"labels: list 0, item 2: grades")),
    Row("bad label with two leading dimensions names the list's index", lambda: ev(
        np.zeros((2, 2, 3)), np.where(np.arange(12).reshape(2, 2, 3) == 8, -1, 0)),
        Raises(ValueError, r"labels: list \(1, 0\), item 2: grades")),
    Row("largest float32 label is fine: ndcg in float64, no overflow", lambda: ev(
        [[1, 0, 0.5]], [[3e38, 3e38, 1]], "ndcg"), [0.9197207891481876]),
    # --- jrn.evaluate: shapes and options -------------------------------------------------------
    Row("labels of another shape", lambda: ev(np.zeros((2, 3)), np.zeros((2, 4))),
        Raises(ValueError, r"labels must have the shape of scores \(2, 3\), got \(2, 4\)")),
    Row("ragged lists of different lengths", lambda: ev([[0.1, 0.2], [0.3]], [[1, 0], [1, 1]]),
        Raises(ValueError, r"list 1: scores has 1 items but labels has 2")),
    Row("where of ints", lambda: ev(np.zeros((1, 2)), np.zeros((1, 2)), where=np.ones((1, 2))),
        Raises(ValueError, r"where must be a bool array of the shape of scores \(1, 2\), got "
                           r"float64 \(1, 2\)")),
    Row("where with ragged lists", lambda: ev([[0.1], [0.2, 0.3]], [[1], [0, 1]], where=[[1]]),
        Raises(ValueError, r"where is only for array input")),
    Row("no lists, reduce='mean'", lambda: jrn.evaluate([], [], ["map"], reduce="mean"),
        Raises(ValueError, r"reduce='mean' has nothing to average: the input holds no lists")),
    Row("no lists, per list", lambda: ev([], []), []),
    Row("every list empty under empty='skip': NaN, no warning", lambda: jrn.evaluate(
        [[0.1, 0.2]], [[0, 0]], "mrr", empty="skip", reduce="mean")["mrr"], math.nan),
    Row("no metric", lambda: jrn.evaluate([[0.1]], [[1]], []),
        Raises(ValueError, r"metrics must name at least one metric, got an empty list")),
    Row("metric name not a string", lambda: jrn.evaluate([[0.1]], [[1]], [5]),
        Raises(TypeError, r"metric names must be strings, got 5")),
    Row("cutoff 0", lambda: ev([[0.1]], [[1]], "ndcg@0"),
        Raises(ValueError, r"metric 'ndcg@0': the cutoff after '@' must be a positive integer")),
    Row("ties='trec' needs doc ids", lambda: ev([[0.5]], [[1]], ties="trec"),
        Raises(ValueError, r"ties must be one of .* got 'trec' \(the doc-id order needs doc "
                           r"ids: use evaluate_run\)")),
    Row("reduce='sum'", lambda: ev([[0.5]], [[1]], reduce="sum"),
        Raises(ValueError, r"reduce must be None or 'mean', got 'sum'")),
    Row("beta=nan", lambda: ev([[0.5]], [[1]], "fbeta", beta=math.nan),
        Raises(ValueError, r"beta must be a positive")),
    # The next three need the core's option and gain fixes (issue 10, items 3 and 20).
    Row("beta=inf is F's limit, recall", lambda: ev([[0.9, 0.1, 0.5]], [[1, 0, 1]], "fbeta@1",
                                                    beta=math.inf), [0.5]),
    Row("threshold=inf", lambda: ev([[0.5]], [[1]], threshold=math.inf),
        Raises(ValueError, r"threshold must be a positive finite number, got inf")),
    Row("exp2 gain of grade 128 (2**128 overflows float32)", lambda: ev(
        [[1, 0]], [[128, 0]], "ndcg", gain="exp2"), [1.0]),
    # --- jrn.evaluate: unusual scores rank by their value --------------------------------------
    Row("inf, -inf and NaN scores", lambda: ev([[math.inf, math.nan, -math.inf, 1.0]],
                                               [[0, 1, 0, 1]], "map"), [0.5]),
    Row("scores near float64's range", lambda: ev([[1e308, 1e307, -1e308]], [[0, 1, 0]]),
        [0.5]),
    Row("float64 scores one ulp apart", lambda: ev([[1.0, np.nextafter(1.0, 2.0)]], [[1, 0]]),
        [0.5]),
    Row("float64 subnormals rank by value", lambda: ev([[5e-324, 0.0, -5e-324]], [[0, 1, 0]],
                                                       ties="first"), [0.5]),
    Row("float32 subnormals rank by value (XLA may flush them)", lambda: ev(
        np.array([[F32_SUBNORMAL, 0.0, -F32_SUBNORMAL]], np.float32), [[0, 1, 0]]), [0.5]),
    Row("-0.0 ties with 0.0", lambda: ev([[-0.0, 0.0]], [[0, 1]]), [0.75]),
    Row("int64 2**53 + 1 above 2**53 (float64 would tie them)", lambda: ev(
        np.array([[2**53, 2**53 + 1]]), [[0, 1]]), [1.0]),
    Row("int64 2**32 above 5 (no int32 wrap)", lambda: ev(np.array([[2**32, 5]]), [[1, 0]]),
        [1.0]),
    Row("int8 scores (no wrap in a narrow dtype)", lambda: ev(
        np.array([[1, 5, 3]], np.int8), [[0, 1, 0]]), [1.0]),
    Row("bool labels", lambda: ev([[0.1, 0.9]], np.array([[True, False]])), [0.5]),
    Row("float64 recall is a double (1/3, not float32's)", lambda: ev(
        [[3.0, 2.0, 1.0]], [[1, 1, 1]], "r@1"), [1 / 3]),
    # --- jrn.evaluate_ranked: the arguments ----------------------------------------------------
    Row("recommended None", lambda: ranked(None, [[1]]),
        Raises(TypeError, r"recommended must be a list with one entry per user, a 2-D array "
                          r"of ids padded with -1, or a dict keyed by user; got NoneType")),
    Row("recommended a string", lambda: ranked("abc", ["a"]),
        Raises(TypeError, r"recommended must be a list .* got str")),
    Row("1-D array of ids", lambda: ranked(np.array([1, 2, 3]), [[1]]),
        Raises(ValueError, r"recommended as an array must be 2-D \(users x items, padded with "
                           r"-1\), got shape \(3,\)")),
    Row("float array of ids", lambda: ranked(np.array([[1.0, 2.0]]), [[1]]),
        Raises(TypeError, r"recommended must hold int or string ids, got an array of dtype "
                          r"float64")),
    Row("a user's row None", lambda: ranked([[1, 2], None], [[1], [2]]),
        Raises(TypeError, r"recommended for user 1 must be a list of ids, best first, got None "
                          r"\(NoneType\)")),
    Row("a user's row a set (no order)", lambda: ranked([{1, 2}], [[1]]),
        Raises(TypeError, r"recommended for user 0 must be a list of ids, best first, got "
                          r"\{1, 2\} \(set\)")),
    Row("a user's row a dict", lambda: ranked({"ann": {"a": 1}}, {"ann": ["a"]}),
        Raises(TypeError, r"recommended for user 'ann' must be a list of ids, best first")),
    Row("a 2-D row in a list", lambda: ranked([np.array([[1, 2]])], [[1]]),
        Raises(ValueError, r"recommended for user 0 must be a flat list of ids, got shape "
                           r"\(1, 2\)")),
    Row("relevant row an int", lambda: ranked([[1, 2]], [5]),
        Raises(TypeError, r"relevant for user 0 must be a list/set of ids or a dict \{id: "
                          r"grade\}, got 5 \(int\)")),
    Row("dict and list", lambda: ranked({"a": [1]}, [[1]]),
        Raises(TypeError, r"recommended and relevant must both be dicts keyed by user, or both "
                          r"lists or arrays; got dict and list")),
    Row("numbers of users differ", lambda: ranked([[1]], [[1], [2]]),
        Raises(ValueError, r"recommended has 1 users but relevant has 2")),
    # --- jrn.evaluate_ranked: no users, or none in common (item 8) ------------------------------
    Row("dicts sharing no user", lambda: ranked({"ann": [1, 2]}, {"bob": [1], "cy": [2]}),
        Raises(ValueError, r"recommended and relevant share no user: recommended has 'ann'; "
                           r"relevant has 'bob', 'cy'")),
    Row("relevant dict empty", lambda: ranked({"ann": [1, 2]}, {}),
        Raises(ValueError, r"share no user: recommended has 'ann'; relevant has none")),
    Row("both dicts empty", lambda: ranked({}, {}),
        Raises(ValueError, r"recommended and relevant hold no users: nothing to evaluate")),
    Row("both lists empty", lambda: ranked([], []),
        Raises(ValueError, r"recommended and relevant hold no users")),
    Row("empty 2-D arrays", lambda: ranked(np.zeros((0, 3), int), np.zeros((0, 2), int)),
        Raises(ValueError, r"recommended and relevant hold no users")),
    Row("dicts sharing one user: the others follow the empty policy", lambda: ranked(
        {"ann": [1], "cy": [3]}, {"ann": [1], "bob": [2]}), {"ann": 1.0, "cy": 0.0, "bob": 0.0}),
    # --- jrn.evaluate_ranked: item ids (item 22) -------------------------------------------------
    Row("None as an id", lambda: ranked([[1, None]], [[1]]),
        Raises(TypeError, r"recommended for user 0: item ids must be ints >= 0 or strings, got "
                          r"None \(NoneType\)")),
    Row("None as a relevant id", lambda: ranked([[1, 2], [3]], [[1], {None}]),
        Raises(TypeError, r"relevant for user 1: item ids must be ints >= 0 or strings, got "
                          r"None")),
    Row("None in a ragged object array", lambda: ranked(
        np.array([[1, 2], [3, None]], object), [[1], [3]]),
        Raises(TypeError, r"recommended for user 1: item ids must be .* got None")),
    Row("10**30 as an id", lambda: ranked([[1], [2, 10**30]], [[1], [2]]),
        Raises(ValueError, r"recommended for user 1: int item ids must be in \[0, 2\*\*63\), got "
                           r"1000000000000000000000000000000$")),
    Row("-10**30 as a relevant id", lambda: ranked({"u": [1]}, {"u": {-10**30: 1}}),
        Raises(ValueError, r"relevant for user 'u': int item ids must be in \[0, 2\*\*63\)")),
    Row("2**63 in a uint64 array", lambda: ranked(np.array([[1, 2**63]], np.uint64), [[1]]),
        Raises(ValueError, r"recommended for user 0: int item ids must be in \[0, 2\*\*63\), got "
                           r"9223372036854775808")),
    Row("a float id", lambda: ranked([[1, 2.0]], [[1]]),
        Raises(TypeError, r"recommended for user 0: item ids must be ints >= 0 or strings, got "
                          r"2.0 \(float\)")),
    Row("a NaN id", lambda: ranked([[math.nan]], [[1]]),
        Raises(TypeError, r"item ids must be ints >= 0 or strings, got nan \(float\)")),
    Row("a bool id", lambda: ranked([[True, 2]], [[1]]),
        Raises(TypeError, r"item ids must be ints >= 0 or strings, got True \(bool\)")),
    Row("a bytes id", lambda: ranked([[b"a"]], [["a"]]),
        Raises(TypeError, r"item ids must be ints >= 0 or strings, got b'a' \(bytes\)")),
    Row("a tuple id", lambda: ranked([[(1, 2)]], [[1]]),
        Raises(TypeError, r"item ids must be ints >= 0 or strings, got \(1, 2\) \(tuple\)")),
    Row("ints and strings in one list", lambda: ranked([[1, "a"]], [[1]]),
        Raises(TypeError, r"recommended for user 0: item ids must all be ints or all be "
                          r"strings, got 'a' \(str\) after 1 \(int\)")),
    Row("int ids recommended, string ids relevant", lambda: ranked([[1]], [["a"]]),
        Raises(TypeError, r"item ids must all be ints or all be strings, got int ids in "
                          r"recommended and str ids in relevant")),
    Row("a negative id other than -1", lambda: ranked([[1, -3]], [[1]]),
        Raises(ValueError, r"recommended for user 0: item ids must be >= 0 \(-1 is padding\), "
                           r"got -3")),
    Row("a negative id in a 2-D array", lambda: ranked(np.array([[1, 2], [3, -2]]), [[1], [3]]),
        Raises(ValueError, r"recommended for user 1: item ids must be >= 0 \(-1 is padding\)")),
    Row("a repeated id", lambda: ranked({"ann": [1, 2, 1]}, {"ann": [1]}),
        Raises(ValueError, r"recommended for user 'ann' repeats item 1")),
    Row("a repeated relevant id", lambda: ranked([["a", "b"]], [["b", "b"]]),
        Raises(ValueError, r"relevant for user 0 repeats item 'b'")),
    Row("'a\\x00' and 'a' are different ids", lambda: ranked([["a\x00", "a"]], [["a"]]),
        [0.5]),
    Row("a lone surrogate is an id like any string", lambda: ranked([["\ud800", "x"]],
                                                                    [["x"]]), [0.5]),
    Row("-1 pads relevant ids too", lambda: ranked([[4, 5]], [{5: 1, -1: 3}]), [0.5]),
    Row("the output of top_k_ids (a JAX array)", lambda: ranked(
        jaxrank.top_k_ids(jnp.array([[0.1, 0.9, 0.5]]), 2), [[2]]), [0.5]),
    Row("ids beyond int32 but within int64", lambda: ranked([[2**40, 2**62]], [[2**62]]),
        [0.5]),
    # --- jrn.evaluate_ranked: grades --------------------------------------------------------------
    Row("grade None", lambda: ranked([["a"]], [{"a": None}]),
        Raises(ValueError, r"relevant for user 0: the grade of item 'a' must be a number >= 0, "
                           r"got None \(NoneType\)")),
    Row("grade a string", lambda: ranked([["a"]], [{"a": "2"}]),
        Raises(ValueError, r"the grade of item 'a' must be a number >= 0, got '2' \(str\)")),
    Row("grade True", lambda: ranked([["a"]], [{"a": True}]),
        Raises(ValueError, r"the grade of item 'a' must be a number >= 0, got True \(bool\)")),
    Row("grade -2", lambda: ranked([[1]], [{1: -2}]),
        Raises(ValueError, r"relevant for user 0: the grade of item 1 must be a number >= 0")),
    Row("grade NaN", lambda: ranked([[1]], [{1: math.nan}]),
        Raises(ValueError, r"the grade of item 1 must be a number >= 0 .* got nan")),
    Row("grade inf", lambda: ranked([[1]], [{1: math.inf}]),
        Raises(ValueError, r"the grade of item 1 must be a number >= 0 and at most "
                           r"3.40282e\+38 \(float32\), got inf")),
    Row("grade 10**400", lambda: ranked([[1]], [{1: 10**400}]),
        Raises(ValueError, r"the grade of item 1 must be a number >= 0, got 1000.*\.\.\. "
                           r"\(an int beyond 64 bits\)")),
    Row("relevant_grades of another shape", lambda: ranked(
        np.array([[1, 2]]), np.array([[1, 2]]), relevant_grades=np.array([[1]])),
        Raises(ValueError, r"relevant_grades must have the shape of relevant \(1, 2\), got "
                           r"\(1, 1\)")),
    Row("relevant_grades with dicts", lambda: ranked({"a": [1]}, {"a": [1]},
                                                     relevant_grades={"a": [1]}),
        Raises(TypeError, r"relevant_grades is for relevant ids given as a list or array")),
    Row("relevant_grades for a set", lambda: ranked([[1]], [{1}], relevant_grades=[[1]]),
        Raises(TypeError, r"relevant for user 0 is a set \(no order\) but relevant_grades "
                          r"gives grades by position")),
    Row("relevant_grades row too short", lambda: ranked([[1]], [[1, 2]], relevant_grades=[[1]]),
        Raises(ValueError, r"relevant for user 0 has 2 ids but relevant_grades has 1 grades")),
    Row("relevant_grades negative", lambda: ranked(
        np.array([[1, 2]]), np.array([[2]]), relevant_grades=np.array([[-1.0]])),
        Raises(ValueError, r"relevant for user 0: the grade of item 2 must be a number >= 0")),
    Row("relevant_grades under -1 padding are ignored", lambda: ranked(
        np.array([[1, 2]]), np.array([[2, -1]]), relevant_grades=np.array([[2, -5]]), metric="dcg"),
        [2 / math.log2(3)]),
    # --- jrn.evaluate_run: the dict doors (their checks live in jaxrank.io and the trec path) ---
    Row("NaN score in a run", lambda: run({"q": {"a": math.nan}}, {"q": {"a": 1}}),
        Raises(ValueError, r"run\['q'\]\['a'\] must be a number \(the score\), not NaN")),
    Row("fractional grade in qrels", lambda: run({"q": {"a": 1.0}}, {"q": {"a": 1.5}}),
        Raises(ValueError, r"qrels\['q'\]\['a'\] must be an integer grade")),
    Row("max_docs=1.5", lambda: run({"q": {"a": 1.0}}, {"q": {"a": 1}}, max_docs=1.5),
        Raises(TypeError, r"max_docs must be a positive int or None, got 1.5")),
    Row("max_docs=-1", lambda: run({"q": {"a": 1.0}}, {"q": {"a": 1}}, max_docs=-1),
        Raises(ValueError, r"max_docs must be a positive int or None, got -1")),
    # The next three need the trec path's and the reader's fixes (issue 10, items 8, 20, 22).
    Row("run and qrels share no query", lambda: run({"q1": {"a": 1.0}}, {"q2": {"a": 1}}),
        Raises(ValueError, r"no query of the run")),
    Row("a doc id with a NUL", lambda: run({"q": {"a\x00": 1.0, "a": 0.5}}, {"q": {"a": 1}}),
        Raises(ValueError, r"NUL")),
    Row("grade 10**30 in qrels", lambda: run({"q": {"a": 1.0}}, {"q": {"a": 10**30}}),
        Raises(ValueError, r"qrels\['q'\]\['a'\]")),
]


def _same(got, want) -> bool:
  if isinstance(want, dict):
    return isinstance(got, dict) and list(got) == list(want) and all(
        _same(got[k], want[k]) for k in want)
  if isinstance(want, list):
    return isinstance(got, list) and len(got) == len(want) and all(
        _same(a, b) for a, b in zip(got, want))
  if isinstance(want, float) and math.isnan(want):
    return isinstance(got, float) and math.isnan(got)
  return got == pytest.approx(want, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("row", ROWS, ids=[r.description for r in ROWS])
def test_malformed_input(row):
  if isinstance(row.expected, Raises):
    with pytest.raises(row.expected.error, match=row.expected.pattern) as info:
      row.call()
    assert "\n" not in str(info.value), "errors are one line"
  else:
    got = row.call()
    assert _same(got, row.expected), (got, row.expected)


def test_the_table_has_unique_descriptions():
  names = [r.description for r in ROWS]
  assert len(names) == len(set(names))
