"""`jaxrank evaluate --chunk-lines N`: a run evaluated a few queries at a time prints what the
whole file prints, byte for byte (issue 11, "runs bigger than memory"); gzip and stdin."""

import gzip
import io as stdio
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from jaxrank import cli, io
from jaxrank._trec import chunked as _chunked
from jaxrank._trec import plan
from jaxrank._trec import table as _trec
from jaxrank._trec import run as _run

import repo
from trec_runs import random_files

DATA = repo.DATA / "trec_eval"

# trec_eval's own test cases (tests/trec/test_trec_conformance.py); results.trunc interleaves its
# queries, so its lines are grouped by query first (trec_eval's output does not depend on it).
CASES = {
    "out.test.aq": ["-m", "all_trec", "-q", "qrels.test", "results.test"],
    "out.test.aqcM": ["-m", "all_trec", "-q", "-c", "-M100", "qrels.test", "results.trunc"],
}


def run_cli(capsys, args):
  code = cli.main(["evaluate", *map(str, args)])
  captured = capsys.readouterr()
  return code, captured.out, captured.err


def grouped(tmp_path, name):
  """The file's lines grouped by query (a stable sort: each query's lines keep their order)."""
  lines = (DATA / name).read_text().splitlines(keepends=True)
  (tmp_path / name).write_text("".join(sorted(lines, key=lambda line: line.split()[0])))
  return tmp_path / name


@pytest.mark.parametrize("case", list(CASES))
def test_trec_eval_cases_print_the_same_in_chunks(case, tmp_path, capsys):
  args = [grouped(tmp_path, a) if a == "results.trunc" else DATA / a if (DATA / a).is_file()
          else a for a in CASES[case]]
  code, whole, note = run_cli(capsys, args)
  assert code == 0 and whole.count("\n") > 100
  code, chunked, err = run_cli(capsys, [*args, "--chunk-lines", 1])  # one query per chunk
  assert (code, chunked, err) == (0, whole, note)


OPTIONS = {
    "all_trec -c -M -l": ["-m", "all_trec", "-m", "dcg", "-m", "ideal_dcg", "-q", "-c", "-M", "5",
                          "-l", "2"],
    "tie-aware, float32, table": ["-q", "-c", "--ties", "average", "--float32", "-m", "map",
                                  "-m", "dcg", "-m", "ideal_dcg",
                                  "-m", "P.1,5", "-m", "ndcg_cut.3", "-m", "recip_rank",
                                  "-m", "num_rel", "-m", "gm_map", "--format", "table"],
}


@pytest.mark.parametrize("options,seed", [(o, s) for s, o in enumerate(OPTIONS)])
def test_random_runs_with_ties_print_the_same_in_chunks(tmp_path, capsys, options, seed):
  qrels, run = random_files(tmp_path, seed)
  opts = OPTIONS[options]
  code, whole, note = run_cli(capsys, [*opts, qrels, run])
  assert code == 0 and whole, note
  for lines in (1, 40):  # a query per chunk, a few queries per chunk
    code, chunked, err = run_cli(capsys, [*opts, "--chunk-lines", lines, qrels, run])
    assert (code, chunked, err) == (0, whole, note), lines


# ir_measures' names (each provider's tie order, their own levels and options, those computed
# as a trec_eval measure) and jaxrank's, beside trec_eval's measures or alone.
NAMES = ["-m", "AP", "-m", "nDCG@10", "-m", "RR@5", "-m", "P(rel=2)@5", "-m", "Bpref", "-m",
         "NumRet", "-m", "NumRelRet", "-m", "Judged@10", "-m", "RBP(p=0.8)", "-m", "SetP", "-m",
         "IPrec@0.5", "-m", "R@10", "-m", "ERR@10", "-m", "ndcg@5", "-m", "mrr", "-m", "err@3"]
NAME_OPTIONS = {
    "names": NAMES,
    "names -q -c -M -l, beside trec_eval's": [*NAMES, "-m", "map", "-m", "P.5", "-m", "num_q",
                                              "-m", "gm_map", "-q", "-c", "-M", "7", "-l", "2"],
    "core names tie-aware, float32": [  # (trec_eval's measures need an order)
        "-m", "AP", "-m", "nDCG@10", "-m", "P(rel=2)@5", "-m", "R@10", "-m", "RBP(p=0.8)",
        "-m", "ERR@10", "-m", "ndcg@5", "-m", "mrr", "-q", "--ties", "average", "--float32"],
}


@pytest.mark.parametrize("options,seed", [(o, s) for s, o in enumerate(NAME_OPTIONS)])
def test_ir_measures_and_jaxrank_names_print_the_same_in_chunks(tmp_path, capsys, monkeypatch,
                                                                options, seed):
  qrels, run = random_files(tmp_path, seed)
  opts = NAME_OPTIONS[options]
  code, whole, note = run_cli(capsys, [*opts, "--chunk-lines", 0, qrels, run])
  assert code == 0 and whole.count("\n") >= 16, note
  for lines in (1, 40):  # every document coded
    assert run_cli(capsys, [*opts, "--chunk-lines", lines, qrels, run]) == (0, whole, note)
  _small_thresholds(monkeypatch, lines=9)
  calls = _counting_chunks(monkeypatch)
  assert run_cli(capsys, [*opts, qrels, run]) == (0, whole, note)  # judged documents first
  assert calls == [("judged", 9)]


@pytest.mark.parametrize("complete", [False, True])
def test_ir_measures_counts_per_query_in_chunks(tmp_path, complete):
  """ir_measures' NumQ and NumRel (_trec.IR_COUNTS: 0 for a query only in the qrels) combine
  over chunks as over the whole run, -c's queries evaluated at the end included."""
  qrels_file, run_file = random_files(tmp_path, 2)
  qrels, run = io.read_qrels(qrels_file), io.read_run(run_file)
  asked = [_trec.request_of(n) for n in ("NumQ", "NumRel", "num_rel", "num_q")]
  whole = _run.evaluate_requests(run, qrels, asked, complete=complete)
  for lines in (1, 40):
    chunked = _chunked.evaluate_chunks(io.iter_run_chunks(run_file, max_lines=lines), qrels,
                                       asked, complete=complete)
    assert chunked.qids == whole.qids and chunked.summary == whole.summary
    for name in ("NumQ", "NumRel", "num_rel"):
      assert chunked.per_query[name].tolist() == whole.per_query[name].tolist(), name
  in_run = np.isin(whole.qids, run.qid_vocab.tolist())
  assert whole.per_query["NumQ"].tolist() == in_run.astype(int).tolist()
  assert whole.per_query["NumRel"].tolist() == np.where(in_run, whole.per_query["num_rel"],
                                                        0).tolist()
  assert not complete or not in_run.all()  # -c added queries only in the qrels
  assert whole.summary["NumQ"] == in_run.sum() and "num_q" not in whole.per_query


def test_a_query_that_comes_back_is_an_error_naming_it_and_its_line(tmp_path, capsys):
  (tmp_path / "run").write_text("a Q0 x 1 1 t\nb Q0 x 1 1 t\n\nc Q0 y 1 1 t\na Q0 z 2 0 t\n")
  (tmp_path / "qrels").write_text("a 0 x 1\nb 0 x 1\n")
  code, out, err = run_cli(capsys, ["--chunk-lines", 1, tmp_path / "qrels", tmp_path / "run"])
  assert (code, out) == (1, "")
  assert err.startswith(f"jaxrank: error: {tmp_path / 'run'}:5: query 'a' appears again after "
                        "its chunk was passed on")
  assert err.count("\n") == 1
  code, out, err = run_cli(capsys, ["--chunk-lines", 10, tmp_path / "qrels", tmp_path / "run"])
  assert code == 0  # one chunk: the whole file


def test_chunks_from_elsewhere_are_checked_too():
  """Chunks not from io.iter_run_chunks: a judged query in two of them is an error, never a
  value from part of its documents."""
  qrels = io.read_qrels(b"a 0 x 1\n")
  parts = [io.read_run(b"a Q0 x 1 1 t\n"), io.read_run(b"a Q0 y 1 2 t\n")]
  with pytest.raises(ValueError, match="run: query 'a' appears in two chunks of the run"):
    _chunked.evaluate_chunks(parts, qrels, _trec.parse_measures(["map"]))


@pytest.mark.parametrize("complete", [False, True])
def test_nothing_to_evaluate_is_the_whole_files_error(tmp_path, capsys, complete):
  (tmp_path / "run").write_text("a Q0 x 1 1 t\nb Q0 x 1 1 t\n")
  (tmp_path / "qrels").write_text("z 0 x 1\n" if not complete else "")
  args = ["-c"] * complete + [tmp_path / "qrels", tmp_path / "run"]
  whole = run_cli(capsys, args)
  assert whole[0] == 1 and "nothing to evaluate" in whole[2]
  assert run_cli(capsys, ["--chunk-lines", 1, *args]) == whole


def test_gzip_runs_and_qrels_and_stdin(tmp_path, capsys, monkeypatch):
  qrels, run = DATA / "qrels.test", DATA / "results.test"
  args = ["-q", "-m", "map", "-m", "num_rel_ret"]
  _, expected, _ = run_cli(capsys, [*args, qrels, run])
  (tmp_path / "r").write_bytes(gzip.compress(run.read_bytes()))  # no .gz suffix: magic bytes
  (tmp_path / "q.gz").write_bytes(gzip.compress(qrels.read_bytes()))
  for chunk in ([], ["--chunk-lines", 100]):
    assert run_cli(capsys, [*args, *chunk, tmp_path / "q.gz", tmp_path / "r"]) == (
        0, expected, "")
  # '-' is standard input, for the run or for the qrels (gzip there too), not for both
  for files, data in [([qrels, "-"], gzip.compress(run.read_bytes())), (["-", run], None)]:
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=Pipe(data or qrels.read_bytes())))
    assert run_cli(capsys, [*args, "--chunk-lines", 100, *files]) == (0, expected, "")
  code, out, err = run_cli(capsys, ["-", "-"])
  assert (code, out) == (1, "") and "cannot both be standard input" in err
  # errors still name file:line inside gzip content
  (tmp_path / "bad").write_bytes(gzip.compress(b"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 high t\n"))
  for chunk in ([], ["--chunk-lines", 1]):
    code, out, err = run_cli(capsys, [*chunk, qrels, tmp_path / "bad"])
    assert err == (f"jaxrank: error: {tmp_path / 'bad'}:2: the score (5th field) must be a "
                   "number, got 'high'\n")


class Pipe(stdio.RawIOBase):
  """A non-seekable byte stream, as a pipe on standard input."""

  def __init__(self, data: bytes) -> None:
    self.data = stdio.BytesIO(data)

  def readable(self) -> bool:
    return True

  def readinto(self, b) -> int:
    return self.data.readinto(b)


def test_bad_chunk_lines_is_one_line(tmp_path, capsys):
  code, out, err = run_cli(capsys, ["--chunk-lines", -5, DATA / "qrels.test",
                                    DATA / "results.test"])
  assert (code, out) == (1, "")
  assert err == ("jaxrank: error: --chunk-lines must be a positive number of lines (or 0: the "
                 "whole run), got -5\n")


# Automatic chunks: `jaxrank evaluate` on a run file of plan.AUTO_CHUNK_BYTES or more evaluates
# it in chunks of plan.AUTO_CHUNK_LINES lines unless --chunk-lines says otherwise; a run whose
# queries' lines are not together is read whole after all. Both thresholds are lowered here, so
# the small files of trec_eval's test suite take the automatic path.


def _small_thresholds(monkeypatch, lines=2):
  monkeypatch.setattr(plan, "AUTO_CHUNK_BYTES", 1)
  monkeypatch.setattr(plan, "AUTO_CHUNK_LINES", lines)


def _counting_chunks(monkeypatch) -> list:
  """Records each call of the chunk readers (io.iter_judged_run_chunks, "judged", and
  io.iter_run_chunks, "all") with its max_lines, in the list it returns."""
  calls = []

  def counting(name, real):
    def counted(*args, **kwargs):
      calls.append((name, kwargs.get("max_lines")))
      return real(*args, **kwargs)
    return counted

  monkeypatch.setattr(io, "iter_run_chunks", counting("all", io.iter_run_chunks))
  monkeypatch.setattr(io, "iter_judged_run_chunks",
                      counting("judged", io.iter_judged_run_chunks))
  return calls


@pytest.mark.parametrize("case", list(CASES))
def test_large_runs_are_evaluated_in_chunks_by_default_with_the_same_output(
    case, tmp_path, capsys, monkeypatch):
  args = [DATA / a if (DATA / a).is_file() else a for a in CASES[case]]
  code, whole, note = run_cli(capsys, [*args, "--chunk-lines", 0])
  assert code == 0 and whole.count("\n") > 100
  _small_thresholds(monkeypatch)
  calls = _counting_chunks(monkeypatch)
  # results.trunc interleaves its queries: chunks find it out, and the run is read whole
  assert run_cli(capsys, args) == (0, whole, note)
  assert calls == [("judged", 2)]
  if "results.trunc" in CASES[case]:
    grouped_args = [grouped(tmp_path, a) if a == "results.trunc" else a for a in args]
    assert run_cli(capsys, grouped_args) == (0, whole, note)


@pytest.mark.parametrize("seed", [3, 4])
def test_random_large_runs_print_the_same_by_default(tmp_path, capsys, monkeypatch, seed):
  qrels, run = random_files(tmp_path, seed)
  opts = ["-q", "-c", "-m", "all_trec"]
  code, whole, note = run_cli(capsys, [*opts, "--chunk-lines", 0, qrels, run])
  assert code == 0 and whole
  _small_thresholds(monkeypatch, lines=7)
  calls = _counting_chunks(monkeypatch)
  assert run_cli(capsys, [*opts, qrels, run]) == (0, whole, note)
  assert calls == [("judged", 7)]


def test_what_is_never_chunked_by_default(tmp_path, capsys, monkeypatch):
  """--chunk-lines 0, standard input and small files are read whole."""
  qrels, run = DATA / "qrels.test", DATA / "results.test"
  calls = _counting_chunks(monkeypatch)
  assert run_cli(capsys, ["-m", "map", qrels, run])[0] == 0  # smaller than AUTO_CHUNK_BYTES
  assert run.stat().st_size < plan.AUTO_CHUNK_BYTES
  _small_thresholds(monkeypatch)
  assert run_cli(capsys, ["-m", "map", "--chunk-lines", 0, qrels, run])[0] == 0
  monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=Pipe(run.read_bytes())))
  assert run_cli(capsys, ["-m", "map", qrels, "-"])[0] == 0
  assert calls == []
  assert run_cli(capsys, ["-m", "map", qrels, run])[0] == 0
  assert calls == [("judged", 2)]


def test_an_explicit_chunk_size_still_refuses_scattered_queries(tmp_path, capsys, monkeypatch):
  _small_thresholds(monkeypatch)
  (tmp_path / "run").write_text("a Q0 x 1 1 t\nb Q0 x 1 1 t\nc Q0 y 1 1 t\na Q0 z 2 0 t\n")
  (tmp_path / "qrels").write_text("a 0 x 1\nb 0 x 1\n")
  files = [tmp_path / "qrels", tmp_path / "run"]
  code, out, err = run_cli(capsys, ["--chunk-lines", 1, *files])
  assert (code, out) == (1, "") and "query 'a' appears again" in err
  code, out, err = run_cli(capsys, ["-m", "num_ret", *files])  # automatic: read whole
  assert (code, err) == (0, "") and out == "num_ret               \tall\t3\n"  # a: 2, b: 1
