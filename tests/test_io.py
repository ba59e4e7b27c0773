"""TREC run/qrels reading and writing, and the pandas adapters."""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxrank import io


def reference_read_run(text):
  """A plain line-by-line reader, as trec_eval reads a run (first 6 fields, tag of last line)."""
  rows, tag = [], None
  for line in text.split("\n"):
    fields = line.split()
    if not fields or fields[0].startswith("#"):
      continue
    rows.append((fields[0], fields[2], int(fields[3]), float(fields[4])))
    tag = fields[5]
  return rows, tag


def test_run_comments_blank_lines_hash_in_ids_crlf_and_extra_columns():
  text = ("# a comment line\r\n301\tQ0\tFR#94-1\t1\t2.5\tSTANDARD extra junk\r\n\r\n"
          "   \n301 Q0 doc2 2 -1e3 other\n#302 Q0 d 1 1 x\n302 Q0 d#x 1 inf last")
  run = io.read_run(text.encode())
  assert run.qid.tolist() == [b"301", b"301", b"302"]
  assert run.docid.tolist() == [b"FR#94-1", b"doc2", b"d#x"]
  assert run.rank.tolist() == [1, 2, 1]
  assert run.score.tolist() == [2.5, -1000.0, float("inf")]
  assert run.tag == "last"


def test_qrels_and_dict_forms():
  qrels = io.read_qrels(b"q1 0 a 2\n# c\nq1 0 b -1\nq2 0 a 0\n")
  assert qrels.to_dict() == {"q1": {"a": 2, "b": -1}, "q2": {"a": 0}}
  run = io.read_run(b"q1 Q0 a 1 0.5 t\n")
  assert run.to_dict() == {"q1": {"a": 0.5}}


@pytest.mark.parametrize("text, message", [
    (b"q Q0 a 1 0.5 t\nq Q0 b 2 0.4\n", "f:2: expected at least 6 whitespace-separated fields, "
     "got 5"),
    (b"# c\n\nq Q0 a 1 x t\n", "f:3: the score (5th field) must be a number, got 'x'"),
    (b"q Q0 a 1 0.5 t\nq Q0 b 2.5 0.4 t\n", "f:2: the rank (4th field) must be an integer, "
     "got '2.5'"),
    (b"q Q0 a 1 0.5 t\nq Q0 b 2 nan t\n", "f:2: the score (5th field) must be a number, got "
     "'nan' (NaN has no order)"),  # the fast reader's input
    (b"# c\nq Q0 a 1 0.5 t\n\nq Q0 b 2 NaN t\n", "f:4: the score (5th field) must be a number, "
     "got 'NaN' (NaN has no order)"),  # the tokenizer's input
])
def test_malformed_run_lines(text, message):
  with pytest.raises(io.TrecFormatError) as e:
    io.read_run(text, name="f")
  assert str(e.value) == message


@pytest.mark.parametrize("text, message", [
    (b"q 0 a 1 extra\n", "f:1: expected 4 whitespace-separated fields, got 5"),
    (b"q 0 a 1\nq 0 b\n", "f:2: expected 4 whitespace-separated fields, got 3"),
    (b"q 0 a 1\n\nq 0 b 1.5\n", "f:3: the relevance (4th field) must be an integer, got '1.5'"),
])
def test_malformed_qrels_lines(text, message):
  with pytest.raises(io.TrecFormatError) as e:
    io.read_qrels(text, name="f")
  assert str(e.value) == message


def test_missing_file_message(tmp_path):
  with pytest.raises(FileNotFoundError, match="cannot read .*nothing"):
    io.read_run(tmp_path / "nothing")


def test_empty_file():
  assert len(io.read_run(b"")) == 0 and len(io.read_qrels(b"# only a comment\n\n")) == 0


ID = st.text(alphabet="ab#-_.0123456789XYZé", min_size=1, max_size=8).filter(
    lambda s: not s.startswith("#"))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(ID, ID, st.integers(0, 999), st.floats(-1e6, 1e6), ID), min_size=1,
                max_size=30), st.lists(st.integers(0, 3), max_size=5))
def test_reader_matches_a_line_by_line_reader(rows, gaps):
  lines = [f"{q} Q0 {d} {r} {s!r} {t}" for q, d, r, s, t in rows]
  for i, g in enumerate(gaps):  # blank and comment lines anywhere
    lines.insert(min(g * 3, len(lines)), "" if i % 2 else "# note")
  text = "\n".join(lines)
  run = io.read_run(text.encode())
  ref, tag = reference_read_run(text)
  got = [(q.decode(), d.decode(), r, s) for q, d, r, s in zip(
      run.qid.tolist(), run.docid.tolist(), run.rank.tolist(), run.score.tolist())]
  assert got == ref and run.tag == tag


def test_write_and_read_back(tmp_path):
  run = {"q2": {"b": 0.5, "a": 0.5, "c": 0.9}, "q1": {"x": 1.0}}
  path = tmp_path / "run.txt"
  io.write_run(run, path, tag="mine")
  text = path.read_text().splitlines()
  # trec order per query: score descending, then doc id descending
  assert text == ["q1 Q0 x 1 1.0 mine", "q2 Q0 c 1 0.9 mine", "q2 Q0 b 2 0.5 mine",
                  "q2 Q0 a 3 0.5 mine"]
  assert io.read_run(path).to_dict() == {"q1": {"x": 1.0}, "q2": {"c": 0.9, "b": 0.5, "a": 0.5}}
  qrels = {"q1": {"x": 1, "y": 0}}
  io.write_qrels(qrels, tmp_path / "qrels.txt")
  assert io.read_qrels(tmp_path / "qrels.txt").to_dict() == qrels


def test_dict_input_errors():
  with pytest.raises(ValueError, match=r"run\['q'\]\['d'\] must be a number"):
    io.as_run({"q": {"d": "high"}})
  with pytest.raises(ValueError, match=r"qrels\['q'\]\['d'\] must be an integer grade"):
    io.as_qrels({"q": {"d": 0.5}})
  with pytest.raises(TypeError, match="run qids must be strings"):
    io.as_run({1: {"d": 0.5}})


def test_dataframe_adapters():
  pd = pytest.importorskip("pandas", reason="the DataFrame adapters need pandas")
  recs = pd.DataFrame({"user_id": [1, 1, 2], "item_id": [10, 11, 10], "score": [0.3, 0.9, 0.1]})
  run = io.run_from_frame(recs)
  assert run.to_dict() == {"1": {"10": 0.3, "11": 0.9}, "2": {"10": 0.1}}
  ranked = recs.assign(rank=[2, 1, 1])
  assert io.run_from_frame(ranked, score_col=None, rank_col="rank").to_dict() == {
      "1": {"10": -2.0, "11": -1.0}, "2": {"10": -1.0}}
  truth = pd.DataFrame({"user_id": [1, 2], "item_id": [11, 12], "target": [1, 2]})
  assert io.qrels_from_frame(truth).to_dict() == {"1": {"11": 1}, "2": {"12": 2}}
  back = io.run_to_frame(run)
  assert list(back.columns) == ["user_id", "item_id", "score"] and back["score"].tolist() == [
      0.3, 0.9, 0.1]
  assert io.qrels_to_frame(io.qrels_from_frame(truth))["target"].tolist() == [1, 2]
  with pytest.raises(ValueError, match="no column 'score'"):
    io.run_from_frame(truth)
  with pytest.raises(ValueError, match="integer grades, got 0.5 at row 1"):
    io.qrels_from_frame(truth.assign(target=[1, 0.5]))


def test_import_jaxrank_does_not_import_pandas():
  code = ("import sys, jaxrank, jaxrank.io, jaxrank.numpy, jaxrank.cli; "
          "print('pandas' in sys.modules)")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert out.stdout.strip() == "False"


@pytest.mark.parametrize("write, data, message", [
    (io.write_run, {"q 1": {"d": 1.0}}, "run qid 'q 1' cannot be written"),
    (io.write_run, {"q": {"": 1.0}}, "run docid '' cannot be written"),
    (io.write_qrels, {"#q": {"d": 1}}, "qrels qid '#q' cannot be written"),
    (io.write_qrels, {"q": {"d\t2": 1}}, r"qrels docid 'd\\t2' cannot be written"),
])
def test_ids_that_would_not_read_back_are_not_written(tmp_path, write, data, message):
  with pytest.raises(ValueError, match=message):
    write(data, tmp_path / "out")
  assert not (tmp_path / "out").exists()


def test_infinite_scores_are_kept_and_nan_frames_rejected():
  assert io.read_run(b"q Q0 a 1 -inf t\n").score.tolist() == [-float("inf")]
  pd = pytest.importorskip("pandas")
  frame = pd.DataFrame({"user_id": ["u", "u"], "item_id": ["a", "b"], "score": [0.5, None]})
  with pytest.raises(ValueError, match="column 'score' has a missing or NaN score at row 1"):
    io.run_from_frame(frame)
