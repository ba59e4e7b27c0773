"""Malformed, unusual and hostile TREC files and dicts, walked as tables (issue 10, items 16-23).

Each row is one input (the raw bytes of a run or qrels file, or a pytrec_eval-style dict) and
either the rows the reader must return or a regular expression the one-line error must match
(``f:LINE:`` first, for files). Every file row is also read with a ``#`` comment line put in front
of it and from a gzip-compressed copy: the same rows come back, and an error names the line one
further down (one reader, one rule, whatever else the file holds).
"""

from __future__ import annotations

import gzip
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxrank import io
from jaxrank import numpy as jrn

INT64 = r"between -9223372036854775808 and 9223372036854775807"


def _text(ids: bytes) -> str:  # as io.Ids shows ids: UTF-8, other bytes as surrogateescape
  return ids.decode("utf-8", "surrogateescape")


def _run_rows(run: io.Run) -> list[tuple]:
  return [(_text(q), _text(d), r, s) for q, d, r, s in zip(
      run.qid.tolist(), run.docid.tolist(), run.rank.tolist(), run.score.tolist())]


def _qrels_rows(qrels: io.Qrels) -> list[tuple]:
  return [(_text(q), _text(d), r) for q, d, r in zip(
      qrels.qid.tolist(), qrels.docid.tolist(), qrels.rel.tolist())]


def R(q, d, rank, score):  # a row of a run table
  return (q, d, rank, score)


# (content, expected rows with the tag last, or an error regex)
RUNS = {
    # Field separators: trec_eval's isspace() bytes (space, \t, \v, \f, \r); nothing else.
    "plain": (b"q Q0 d 1 0.5 t\n", [R("q", "d", 1, 0.5), "t"]),
    "no final newline": (b"q Q0 d 1 0.5 t", [R("q", "d", 1, 0.5), "t"]),
    "tabs, \\v, \\f and runs of them": (b"\tq\t\tQ0\vd\f1 \t0.5\x0bt  \n",
                                        [R("q", "d", 1, 0.5), "t"]),
    "extra columns ignored": (b"q Q0 d 1 0.5 t more cols\n", [R("q", "d", 1, 0.5), "t"]),
    "blank and whitespace-only lines": (b"\n \t\n\x0c\nq Q0 d 1 0.5 t\n\n",
                                        [R("q", "d", 1, 0.5), "t"]),
    "comment lines; # inside ids is data": (
        b"# c\n  #x Q0 d 1 1 t\nq Q0 d#1 1 0.5 #t\n", [R("q", "d#1", 1, 0.5), "#t"]),
    # 16: non-ASCII ids are data, byte for byte (0xA0 and 0x85 are not whitespace).
    "utf-8 ids (0xA0/0x85 bytes inside)": (
        ("q\u00e0 Q0 citt\u00e0 1 1 t\n"
         "q\u00e0 Q0 \u0441\u0442\u0430\u0442\u044c\u044f\u0445 2 0.5 t\n"
         "q\u00e0 Q0 \u0420\u0105\u0160\u0645\u05e0 3 0.25 t\n"
         "q\u00e0 Q0 citt\u00c5 4 0 t\n").encode(),
        [R("q\u00e0", "citt\u00e0", 1, 1.0),
         R("q\u00e0", "\u0441\u0442\u0430\u0442\u044c\u044f\u0445", 2, 0.5),
         R("q\u00e0", "\u0420\u0105\u0160\u0645\u05e0", 3, 0.25),
         R("q\u00e0", "citt\u00c5", 4, 0.0), "t"]),
    "unicode spaces and line separators are data": (
        "q Q0 a\u00a0b\u0085c\u2028d\u3000e 1 1 t\n".encode(),
        [R("q", "a\u00a0b\u0085c\u2028d\u3000e", 1, 1.0), "t"]),
    "ascii control characters other than \\t-\\r are data": (
        b"q Q0 a\x01b\x1cc\x1fd\x7f 1 1 t\n", [R("q", "a\x01b\x1cc\x1fd\x7f", 1, 1.0), "t"]),
    "a long id": (b"q Q0 " + b"x" * 500 + b" 1 1 t\nq Q0 y 2 0 t\n",
                  [R("q", "x" * 500, 1, 1.0), R("q", "y", 2, 0.0), "t"]),
    # Ids are bytes, as for trec_eval: bytes that are not UTF-8 are data too (shown as
    # U+DC80..U+DCFF, Python's surrogateescape, and written back as the same bytes).
    "not utf-8 in an id": (b"q Q0 a 1 1 t\nq Q0 b\xff 2 0 t\n",
                           [R("q", "a", 1, 1.0), R("q", "b\udcff", 2, 0.0), "t"]),
    "latin-1 ids beside the utf-8 of the same letters": (
        b"q\xe9 Q0 caf\xe9 1 1 t\xe9\nq\xe9 Q0 caf\xc3\xa9 2 0 t\xe9\n",
        [R("q\udce9", "caf\udce9", 1, 1.0), R("q\udce9", "caf\u00e9", 2, 0.0), "t\udce9"]),
    "not utf-8: a lone continuation byte": (b"q Q0 \x85 1 1 t\n", [R("q", "\udc85", 1, 1.0), "t"]),
    "not utf-8: an encoded surrogate": (b"q Q0 \xed\xa0\x80 1 1 t\n",
                                        [R("q", "\udced\udca0\udc80", 1, 1.0), "t"]),
    "not utf-8: truncated at the end": (b"q Q0 a 1 1 t\nq Q0 b 2 0 \xc3",
                                        [R("q", "a", 1, 1.0), R("q", "b", 2, 0.0), "\udcc3"]),
    "not utf-8 in a comment": (b"# caf\xe9\nq Q0 a 1 1 t\n", [R("q", "a", 1, 1.0), "t"]),
    "not utf-8 and a bad number: the number's error": (b"q Q0 \xff 1 x\xff t\n",
                                                      r"^f:1: the score \(5th field\) must be "),
    "NUL in an id": (b"q Q0 a 1 1 t\nq Q0 a\x00 2 1 t\n", r"^f:2: NUL byte at column 7"),
    "NUL alone": (b"\x00\n", r"^f:1: NUL byte at column 1"),
    # 17: a UTF-8 BOM is not part of the first id; CR, LF and CRLF all end a line.
    "BOM": (b"\xef\xbb\xbfq Q0 d 1 0.5 t\n", [R("q", "d", 1, 0.5), "t"]),
    "BOM before a comment": (b"\xef\xbb\xbf# c\nq Q0 d 1 0.5 t\n", [R("q", "d", 1, 0.5), "t"]),
    "BOM later is data": ("q Q0 \ufeffd 1 0.5 t\n".encode(), [R("q", "\ufeffd", 1, 0.5), "t"]),
    "CRLF": (b"q Q0 a 1 1 t\r\nq Q0 b 2 0 u\r\n", [R("q", "a", 1, 1.0), R("q", "b", 2, 0.0), "u"]),
    "CR only": (b"q Q0 a 1 1 t\rq Q0 b 2 0 u\r", [R("q", "a", 1, 1.0), R("q", "b", 2, 0.0), "u"]),
    "CR only, no final CR": (b"q Q0 a 1 1 t\rq Q0 b 2 0 u",
                             [R("q", "a", 1, 1.0), R("q", "b", 2, 0.0), "u"]),
    "mixed line ends": (b"q Q0 a 1 1 t\rq Q0 b 2 0 t\r\nq Q0 c 3 0 t\n\r\n",
                        [R("q", "a", 1, 1.0), R("q", "b", 2, 0.0), R("q", "c", 3, 0.0), "t"]),
    "CR only: line numbers": (b"q Q0 a 1 1 t\r\rq Q0 b x 0 t\r",
                              r"^f:3: the rank \(4th field\)"),
    "CRLF: line numbers": (b"q Q0 a 1 1 t\r\n\r\nq Q0 b x 0 t\r\n",
                           r"^f:3: the rank \(4th field\)"),
    # Field counts.
    "five fields": (b"q Q0 a 1 1 t\nq Q0 b 2 0\n",
                    r"^f:2: expected at least 6 whitespace-separated fields, got 5$"),
    "one field": (b"q\n", r"^f:1: expected at least 6 whitespace-separated fields, got 1$"),
    # 20: integers out of int64's range; 23: C number syntax only.
    "rank 20 nines": (b"q Q0 a 99999999999999999999 1 t\n",
                      rf"^f:1: the rank \(4th field\) must be an integer {INT64}, "
                      r"got '99999999999999999999'$"),
    "rank 2**63": (b"q Q0 a 9223372036854775808 1 t\n", rf"^f:1: the rank \(4th field\) .*{INT64}"),
    "rank -2**63-1": (b"q Q0 a -9223372036854775809 1 t\n", rf"^f:1: the rank .*{INT64}"),
    "rank int64 limits": (b"q Q0 a 9223372036854775807 1 t\nq Q0 b -9223372036854775808 1 t\n"
                          b"q Q0 c +0007 1 t\n",
                          [R("q", "a", 2**63 - 1, 1.0), R("q", "b", -2**63, 1.0),
                           R("q", "c", 7, 1.0), "t"]),
    "rank 1_0": (b"q Q0 a 1_0 1 t\n", r"^f:1: the rank \(4th field\) must be an integer in C "
                 r"syntax \(\[\+-\]digits\), got '1_0'$"),
    "rank 2.5": (b"q Q0 a 2.5 1 t\n",
                 r"^f:1: the rank \(4th field\) must be an integer, got '2.5'"),
    "rank 0x10": (b"q Q0 a 0x10 1 t\n", r"^f:1: the rank \(4th field\) must be an integer"),
    "rank arabic digit": ("q Q0 a \u0663 1 t\n".encode(), r"^f:1: the rank \(4th field\) must be"),
    "rank +": (b"q Q0 a + 1 t\n", r"^f:1: the rank \(4th field\) must be an integer, got '\+'"),
    "score 1_000": (b"q Q0 a 1 1_000 t\n", r"^f:1: the score \(5th field\) must be a number in C "
                    r"syntax .*, got '1_000'$"),
    "score hex float": (b"q Q0 a 1 0x1p3 t\n", r"^f:1: the score \(5th field\) must be a number"),
    "score 1e": (b"q Q0 a 1 1e t\n", r"^f:1: the score \(5th field\) must be a number"),
    "score .": (b"q Q0 a 1 . t\n", r"^f:1: the score \(5th field\) must be a number"),
    "score -": (b"q Q0 a 1 - t\n", r"^f:1: the score \(5th field\) must be a number"),
    "score 1.2.3": (b"q Q0 a 1 1.2.3 t\n", r"^f:1: the score \(5th field\) must be a number"),
    "score 1e5e5": (b"q Q0 a 1 1e5e5 t\n", r"^f:1: the score \(5th field\) must be a number"),
    "score 1d5": (b"q Q0 a 1 1d5 t\n", r"^f:1: the score \(5th field\) must be a number"),
    "score 1.0f": (b"q Q0 a 1 1.0f t\n", r"^f:1: the score \(5th field\) must be a number"),
    "score fullwidth digit": ("q Q0 a 1 \uff14 t\n".encode(), r"^f:1: the score \(5th field\)"),
    "score unicode minus": ("q Q0 a 1 \u22121 t\n".encode(), r"^f:1: the score \(5th field\)"),
    "score infinite": (b"q Q0 a 1 infinite t\n", r"^f:1: the score \(5th field\) must be a number"),
    "score infinit": (b"q Q0 a 1 -infinit t\n", r"^f:1: the score \(5th field\) must be a number"),
    "score nan": (b"q Q0 a 1 1 t\nq Q0 b 2 NaN t\n",
                  r"^f:2: the score \(5th field\) must be a number, got 'NaN' \(NaN has no "
                  r"order\)$"),
    "score -nan": (b"q Q0 b 2 -nan t\n", r"^f:1: .*\(NaN has no order\)$"),
    "scores in C syntax": (
        b"q Q0 a 1 +.5 t\nq Q0 b 2 5. t\nq Q0 c 3 1E5 t\nq Q0 d 4 -1.5e-3 t\nq Q0 e 5 INF t\n"
        b"q Q0 f 6 -Infinity t\nq Q0 g 7 1e400 t\nq Q0 h 8 1e-400 t\nq Q0 i 9 -0 t\n"
        b"q Q0 j 10 0.1 t\nq Q0 k 11 000012.50000 t\nq Q0 l 12 4.9406564584124654e-324 t\n",
        [R("q", "a", 1, 0.5), R("q", "b", 2, 5.0), R("q", "c", 3, 1e5), R("q", "d", 4, -1.5e-3),
         R("q", "e", 5, math.inf), R("q", "f", 6, -math.inf), R("q", "g", 7, math.inf),
         R("q", "h", 8, 0.0), R("q", "i", 9, -0.0), R("q", "j", 10, 0.1), R("q", "k", 11, 12.5),
         R("q", "l", 12, 5e-324), "t"]),
    "long scores are exact": (
        b"q Q0 a 1 0.30000000000000004441 t\nq Q0 b 2 123456789012345678901234567890 t\n"
        b"q Q0 c 3 9007199254740993 t\nq Q0 d 4 -2.2250738585072011e-308 t\n"
        b"q Q0 e 5 1.7976931348623157e308 t\nq Q0 f 6 " + b"1" * 80 + b"e-60 t\n",
        [R("q", "a", 1, 0.30000000000000004), R("q", "b", 2, 1.2345678901234568e+29),
         R("q", "c", 3, 9007199254740992.0), R("q", "d", 4, -2.225073858507201e-308),
         R("q", "e", 5, 1.7976931348623157e308), R("q", "f", 6, float("1" * 80 + "e-60")), "t"]),
    "empty": (b"", ["jaxrank"]),
    "comments and blanks only": (b"# a\n\n   \n#b c d e f g\n", ["jaxrank"]),
}

QRELS = {
    "plain": (b"q 0 d 1\n", [("q", "d", 1)]),
    "grades -1, -2 and int64 limits": (
        b"q 0 a -1\nq 0 b -2\nq 0 c 9223372036854775807\nq 0 d -9223372036854775808\n",
        [("q", "a", -1), ("q", "b", -2), ("q", "c", 2**63 - 1), ("q", "d", -2**63)]),
    "BOM": (b"\xef\xbb\xbfq 0 d 1\n", [("q", "d", 1)]),
    "CR only": (b"q 0 a 1\rq 0 b 0\r", [("q", "a", 1), ("q", "b", 0)]),
    "utf-8 ids": ("\u0440 0 citt\u00e0 2\n".encode(), [("\u0440", "citt\u00e0", 2)]),
    "grade 20 nines": (b"q 0 a 1\nq 0 b 99999999999999999999\n",
                       rf"^f:2: the relevance \(4th field\) must be an integer {INT64}, "
                       r"got '99999999999999999999'$"),
    "grade 1_0": (b"q 0 a 1_0\n", r"^f:1: the relevance \(4th field\) must be an integer in C "
                  r"syntax"),
    "grade 1.5": (b"q 0 a 1.5\n", r"^f:1: the relevance \(4th field\) must be an integer, "
                  r"got '1.5'$"),
    "five fields": (b"q 0 a 1 x\n", r"^f:1: expected 4 whitespace-separated fields, got 5$"),
    "NUL": (b"q 0 a\x00b 1\n", r"^f:1: NUL byte at column 6"),
    "not utf-8": (b"q\xff 0 \xc0\xaf 1\n", [("q\udcff", "\udcc0\udcaf", 1)]),
}


def _shift(expected, by: int):
  """An error regex for the same file with ``by`` lines put in front of it."""
  if isinstance(expected, str):
    return re.sub(r"\^f:(\d+):", lambda m: f"^f:{int(m.group(1)) + by}:", expected)
  return expected


def _variants(content: bytes, expected):
  """(name, bytes, expected): as is, gzip-compressed, after a comment line (items 16, 19)."""
  yield "as is", content, expected
  yield "gzip", gzip.compress(content), expected
  if content.startswith(b"\xef\xbb\xbf"):
    yield "comment first", b"\xef\xbb\xbf# note\n" + content[3:], _shift(expected, 1)
  else:
    yield "comment first", b"# note\n" + content, _shift(expected, 1)


def _check(read, rows, content: bytes, expected) -> None:
  if isinstance(expected, str):
    with pytest.raises(io.TrecFormatError, match=expected) as e:
      read(content, name="f")
    assert "\n" not in str(e.value)
    str(e.value).encode("utf-8")  # no raw surrogate from an id that is not UTF-8
    return
  got = read(content, name="f")
  *want, tag = expected if read is io.read_run else (*expected, None)
  got_rows = rows(got)
  assert got_rows == want
  for (*_, g), (*_, w) in zip(got_rows, want):  # -0.0 and 0.0 compare equal: check the sign
    if isinstance(w, float):
      assert math.copysign(1, g) == math.copysign(1, w)
  if tag is not None:
    assert got.tag == tag


@pytest.mark.parametrize("case", list(RUNS))
def test_run_table(case):
  content, expected = RUNS[case]
  for _, data, want in _variants(content, expected):
    _check(io.read_run, _run_rows, data, want)


@pytest.mark.parametrize("case", list(QRELS))
def test_qrels_table(case):
  content, expected = QRELS[case]
  for _, data, want in _variants(content, expected):
    _check(io.read_qrels, _qrels_rows, data, want)


def test_ids_are_text_and_round_trip_through_files_and_dicts(tmp_path):
  """16: every valid UTF-8 id comes back as written, on every path."""
  run = {"q\u00e0": {"citt\u00e0": 1.0, "citt\u00c5": 0.5, "a\u00a0b": 0.25, "x\u0085": 0.0},
         "\u0441": {"\u0442\u2028": -1.0}}
  qrels = {"q\u00e0": {"citt\u00e0": 1, "a\u00a0b": 0}, "\u0441": {"\u0442\u2028": 2}}
  io.write_run(run, tmp_path / "r")
  io.write_qrels(qrels, tmp_path / "q")
  back = io.read_run(tmp_path / "r")
  assert back.to_dict() == run and io.as_run(run).to_dict() == run
  assert io.read_qrels(tmp_path / "q").to_dict() == qrels == io.as_qrels(qrels).to_dict()
  assert jrn.evaluate_run(back, io.read_qrels(tmp_path / "q"), ["map"])["map"] == pytest.approx(
      {"q\u00e0": 1.0, "\u0441": 1.0})


# Dicts (pytrec_eval's form): (what, dict, error regex or None when accepted).
DICTS = [
    ("run", {"q": {"\ud800": 1.0}}, r"^run doc id '\\ud800' \(query 'q'\) is not valid Unicode"),
    ("run", {"\udcff": {"d": 1.0}}, None),  # the byte 0xff (surrogateescape): written as such
    ("qrels", {"q": {"d\udc80": 1}}, None),
    ("run", {"q": {"\udcc3\udca9": 1.0}}, r"^run doc id '\\udcc3\\udca9' \(query 'q'\) is "
     r"not valid Unicode"),  # the bytes of 'é': they would read back as 'é'
    ("qrels", {"q\udcc3\udca9": {"d": 1}}, r"^qrels qid 'q\\udcc3\\udca9' is not valid"),
    ("run", {"q": {"a\x00": 1.0, "a": 2.0}}, r"^run doc id 'a\\x00' \(query 'q'\) contains a NUL"),
    ("qrels", {"q\x00": {"a": 1}}, r"^qrels qid 'q\\x00' contains a NUL"),
    ("qrels", {"q": {"d": 10**30}}, rf"^qrels\['q'\]\['d'\] must be an integer grade {INT64}, "
     r"got 1000000000000000000000000000000$"),
    ("qrels", {"q": {"d": 2**63}}, rf"^qrels\['q'\]\['d'\] must be an integer grade {INT64}"),
    ("qrels", {"q": {"d": -2**63 - 1}}, rf"^qrels\['q'\]\['d'\] must be an integer grade {INT64}"),
    ("qrels", {"q": {"a": 1.0, "d": 1e30}}, rf"^qrels\['q'\]\['d'\] must be an integer grade "
     rf"{INT64}, got 1e\+30$"),
    ("qrels", {"q": {"d": float("inf")}}, r"^qrels\['q'\]\['d'\] must be an integer grade"),
    ("qrels", {"q": {"d": float("nan")}}, r"^qrels\['q'\]\['d'\] must be an integer grade"),
    ("qrels", {"q": {"d": 0.5}}, r"^qrels\['q'\]\['d'\] must be an integer grade"),
    ("qrels", {"q": {"d": "1"}}, r"^qrels\['q'\]\['d'\] must be an integer grade"),
    ("qrels", {"q": {"a": 2**63 - 1, "b": -2**63, "c": 2.0, "d": True, "e": np.int8(-3)}}, None),
    ("qrels", {"q": {"a": 1, "b": 2.0, "c": 9007199254740993}}, None),
    ("run", {"q": {"d": 10**400}}, r"^run\['q'\]\['d'\] must be a number \(the score\) within "
     r"float64's range"),
    ("run", {"q": {"d": True}}, r"^run\['q'\]\['d'\] must be a number \(the score\), got True"),
    ("run", {"q": {"d": "1.5"}}, r"^run\['q'\]\['d'\] must be a number \(the score\), got '1.5'"),
    ("run", {"q": {"a": 1.0, "d": None}}, r"^run\['q'\]\['d'\] must be a number \(the score\)"),
    ("run", {"q": {"d": float("nan")}}, r"^run\['q'\]\['d'\] must be a number \(the score\), not "
     r"NaN"),
    ("run", {"q": {"a": 1, "b": 2.5, "c": 10**30, "d": -np.inf, "e": np.float32(0.5)}}, None),
    ("run", {"q": {1: 0.5}}, r"^run doc ids must be strings, got 1 of type int$"),
    ("run", {2: {"d": 0.5}}, r"^run qids must be strings, got 2 of type int$"),
    ("run", {"q": {"": 0.5, " ": 0.25}}, None),
]


@pytest.mark.parametrize("what, data, error", DICTS)
def test_dict_table(what, data, error):
  convert = io.as_run if what == "run" else io.as_qrels
  if error is None:
    converted = convert(data)
    want = {q: {d: (float(v) if what == "run" else int(v)) for d, v in docs.items()}
            for q, docs in data.items()}
    assert converted.to_dict() == want
    return
  with pytest.raises((ValueError, TypeError), match=error) as e:
    convert(data)
  assert "\n" not in str(e.value)


@pytest.mark.parametrize("run, qrels, error", [
    ({"q": {"a\x00": 2.0, "a": 1.0}}, {"q": {"a": 1}}, "contains a NUL"),
    ({"q": {"a": 1.0}}, {"q": {"a": 10**30}}, "must be an integer grade"),
    ({"q": {"\ud800": 1.0}}, {"q": {"a": 1}}, "not valid Unicode"),
])
def test_evaluate_run_dicts_refuse_what_the_reader_refuses(run, qrels, error):
  """20, 22: dict input through ``jrn.evaluate_run`` errors instead of scoring 0."""
  with pytest.raises(ValueError, match=error):
    jrn.evaluate_run(run, qrels, ["map"])


# ---------------------------------------------------------------------------------------------
# Properties over generated files.

ID_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\t\n\v\f\r ")
IDS = st.text(ID_CHARS, min_size=1, max_size=12)
QIDS = IDS.filter(lambda s: not s.startswith("#"))
SCORES = st.floats(allow_nan=False) | st.sampled_from([0.1, -0.0, 1e-310, 5e-324])


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(QIDS, st.dictionaries(IDS, SCORES, min_size=1, max_size=6), min_size=1,
                       max_size=4))
def test_any_valid_unicode_run_round_trips(tmp_path_factory, run):
  """16: read(write(run)) == run for any ids without whitespace or NUL, any float score."""
  path = tmp_path_factory.mktemp("rt") / "run"
  io.write_run(run, path)
  assert io.read_run(path).to_dict() == run == io.as_run(run).to_dict()


LINE_ENDS = st.sampled_from(["\n", "\r\n", "\r"])
SEPS = st.text(st.sampled_from(" \t\v\f"), min_size=1, max_size=2)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(QIDS, IDS, st.integers(-5, 10**6), SCORES, IDS, SEPS, LINE_ENDS),
                min_size=1, max_size=12), st.booleans(), st.booleans())
def test_reader_matches_a_trec_eval_style_splitter(rows, bom, comment):
  """Any mix of separators and line ends; with or without a BOM and a comment line."""
  text = "".join(f"{q}{sep}Q0{sep}{d}{sep}{r}{sep}{s!r}{sep}{t}{end}"
                 for q, d, r, s, t, sep, end in rows)
  data = (b"\xef\xbb\xbf" if bom else b"") + (b"# c\n" if comment else b"") + text.encode()
  run = io.read_run(data)
  want = [(q, d, r, s) for q, d, r, s, *_ in rows]
  assert _run_rows(run) == want and run.tag == rows[-1][4]


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=60), st.sampled_from([io.read_run, io.read_qrels]))
def test_any_bytes_read_or_fail_with_a_line_number(data, read):
  """Every byte sequence either reads or raises TrecFormatError naming file and line."""
  try:
    result = read(data, name="f")
  except io.TrecFormatError as e:
    assert re.match(r"^f:\d+: ", str(e)) and "\n" not in str(e)
    return
  assert len(result) >= 0


DIGITS = st.text("0123456789", min_size=0, max_size=24)
NUMBER_TEXT = st.one_of(
    st.builds(lambda x, fmt: fmt % x, st.floats(allow_nan=False, allow_infinity=False),
              st.sampled_from(["%r", "%.17g", "%.6f", "%.3e", "%.20g", "%.1f", "%g", "%.25f"])),
    st.builds(lambda s, i, f, dot, e: f"{s}{i}{'.' if dot else ''}{f}{e}",
              st.sampled_from(["", "-", "+"]), DIGITS, DIGITS, st.booleans(),
              st.sampled_from(["", "e5", "E-3", "e+0", "e-22", "e23", "e-27", "e28", "e-330",
                               "e308", "e400", "e00010", "e"]))).filter(bool)


@settings(max_examples=300, deadline=None)
@given(st.lists(NUMBER_TEXT, min_size=1, max_size=8))
def test_scores_read_like_strtod(texts):
  """23: a score in C syntax reads as Python's correctly rounded float of it (the same bits,
  -0.0 included); anything else is an error, never a number read from a prefix."""
  c_syntax = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
  data = "".join(f"q Q0 d{i} {i} {t} r\n" for i, t in enumerate(texts)).encode()
  bad = [i for i, t in enumerate(texts) if not c_syntax.fullmatch(t)]
  if bad:
    with pytest.raises(io.TrecFormatError, match=rf"^f:{bad[0] + 1}: the score"):
      io.read_run(data, name="f")
    return
  got = io.read_run(data).score
  want = np.array([float(t) for t in texts])
  assert got.view(np.uint64).tolist() == want.view(np.uint64).tolist(), texts


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(
    st.integers(-2**64, 2**64).map(str),
    st.builds(lambda z, d: z + d, st.sampled_from(["", "0", "000", "+", "-0"]), DIGITS)).filter(
        bool), min_size=1, max_size=8))
def test_ranks_read_like_strtol_within_int64(texts):
  data = "".join(f"q Q0 d{i} {t} 1 r\n" for i, t in enumerate(texts)).encode()
  ok = [bool(re.fullmatch(r"[+-]?[0-9]+", t)) and -2**63 <= int(t) < 2**63 for t in texts]
  if not all(ok):
    with pytest.raises(io.TrecFormatError, match=rf"^f:{ok.index(False) + 1}: the rank"):
      io.read_run(data, name="f")
    return
  assert io.read_run(data).rank.tolist() == [int(t) for t in texts]
