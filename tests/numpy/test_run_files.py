"""`jaxrank.numpy.evaluate_run` and `evaluate_runs` on run and qrels file paths: the numbers of
the same files read by `jaxrank.io`, big files read in chunks of whole queries as `jaxrank
evaluate` reads them (judged documents first), errors naming the file and line."""

import gzip
import pathlib

import numpy as np
import pytest

from jaxrank import io
from jaxrank import numpy as jrn
from jaxrank._trec import plan

import repo
from trec_runs import random_trec

DATA = repo.DATA / "trec_eval"
QRELS = DATA / "qrels.test"
RUNS = [DATA / name for name in ("results.test", "results.trunc", "results-302.test")]
NAMES = ["map", "ndcg_cut_10", "P_5", "recip_rank", "bpref", "Rprec", "num_ret", "gm_map",
         "iprec_at_recall_0.50", "runid", "nDCG@10", "mrr@10"]


def same(a: dict, b: dict) -> None:
  assert a.keys() == b.keys()
  for name in a:
    if isinstance(a[name], dict):
      assert a[name].keys() == b[name].keys(), name
      np.testing.assert_allclose([a[name][q] for q in a[name]], [b[name][q] for q in a[name]],
                                 rtol=1e-12, atol=1e-15, err_msg=name)
    else:
      assert a[name] == b[name] or np.isclose(a[name], b[name], rtol=1e-12), name


def write_trec(tmp_path: pathlib.Path, seed: int) -> tuple[pathlib.Path, pathlib.Path]:
  """A random run (ties, '#' in ids, shuffled queries whose lines come together) and qrels."""
  run, qrels = random_trec(seed)
  lines = [f"{q} Q0 {d} {r + 1} {s} tag{seed}\n" for q, docs in run.items()
           for r, (d, s) in enumerate(docs.items())]
  judgments = [f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()]
  (tmp_path / "run").write_text("".join(lines))
  (tmp_path / "qrels").write_text("".join(judgments))
  return tmp_path / "qrels", tmp_path / "run"


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
@pytest.mark.parametrize("form", [str, pathlib.Path])
def test_paths_give_what_the_io_objects_give(run, form):
  want = jrn.evaluate_run(io.read_run(run), io.read_qrels(QRELS), NAMES)
  same(jrn.evaluate_run(form(run), form(QRELS), NAMES), want)
  same(jrn.evaluate_run(form(run), io.read_qrels(QRELS), NAMES), want)  # either may be a path


def test_gzip_files_are_read_as_such(tmp_path):
  run, qrels = tmp_path / "run.gz", tmp_path / "qrels.gz"
  run.write_bytes(gzip.compress(RUNS[0].read_bytes()))
  qrels.write_bytes(gzip.compress(QRELS.read_bytes()))
  same(jrn.evaluate_run(run, qrels, NAMES, reduce="mean"),
       jrn.evaluate_run(RUNS[0], QRELS, NAMES, reduce="mean"))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("options", [{}, dict(complete=True, max_docs=7, threshold=2),
                                     dict(float32=True, ties="first")])
def test_big_files_are_read_in_chunks_with_the_same_numbers(tmp_path, monkeypatch, seed,
                                                            options):
  qrels, run = write_trec(tmp_path, seed)
  want = jrn.evaluate_run(io.read_run(run), io.read_qrels(qrels), NAMES, **options)
  read = []
  real = io.iter_judged_run_chunks

  def judged(*args, **kwargs):
    read.append(kwargs["max_lines"])
    return real(*args, **kwargs)

  monkeypatch.setattr(io, "iter_judged_run_chunks", judged)
  monkeypatch.setattr(plan, "AUTO_CHUNK_BYTES", 1)
  monkeypatch.setattr(plan, "AUTO_CHUNK_LINES", 9)
  same(jrn.evaluate_run(run, qrels, NAMES, **options), want)
  assert read == [9]  # chunks of 9 lines, judged documents first, nothing read again


def test_evaluate_runs_takes_a_list_of_paths_keyed_by_path():
  got = jrn.evaluate_runs([RUNS[0], str(RUNS[1])], QRELS, ["map", "P_5"], reduce="mean")
  assert list(got) == [str(RUNS[0]), str(RUNS[1])]
  for path in RUNS[:2]:
    assert got[str(path)] == jrn.evaluate_run(io.read_run(path), io.read_qrels(QRELS),
                                              ["map", "P_5"], reduce="mean")
  mixed = jrn.evaluate_runs({"file": RUNS[2], "read": io.read_run(RUNS[2])}, str(QRELS),
                            ["map"], reduce="mean")
  assert mixed["file"] == mixed["read"]


def test_bad_paths_and_lines_are_errors_naming_them(tmp_path):
  with pytest.raises(FileNotFoundError, match="nope.txt"):
    jrn.evaluate_run(tmp_path / "nope.txt", QRELS, ["map"])
  with pytest.raises(FileNotFoundError, match="no-qrels"):
    jrn.evaluate_run(RUNS[0], tmp_path / "no-qrels", ["map"])
  bad = tmp_path / "bad.run"
  bad.write_text("301 Q0 d1 1 0.5 t\n301 Q0 d2 2 high t\n")
  with pytest.raises(io.TrecFormatError, match=r"bad\.run:2: the score \(5th field\) must be a "
                                               r"number, got 'high'"):
    jrn.evaluate_run(bad, QRELS, ["map"])
  with pytest.raises(ValueError, match="each run must have its own name, got .* twice"):
    jrn.evaluate_runs([RUNS[0], str(RUNS[0])], QRELS, ["map"])
  with pytest.raises(TypeError, match="runs must be a {name: run} mapping or a list of run "
                                      "file paths, got str"):
    jrn.evaluate_runs(str(RUNS[0]), QRELS, ["map"])


@pytest.mark.parametrize("rows", [10**9, 1])  # a dict evaluated whole, in chunks
@pytest.mark.parametrize("form", ["dict", "path"])
def test_errors_in_a_qrels_file_name_the_file(tmp_path, monkeypatch, form, rows):
  monkeypatch.setattr(jrn, "DICT_CHUNK_ROWS", rows)
  qrels = tmp_path / "twice.qrels"
  qrels.write_text("q1 0 d1 1\nq1 0 d1 2\n")
  run_file = tmp_path / "one.run"
  run_file.write_text("q1 Q0 d1 1 0.5 t\n")
  run = {"q1": {"d1": 0.5}} if form == "dict" else run_file
  twice = r"twice\.qrels: query 'q1' lists document 'd1' twice"
  for call in (lambda: jrn.evaluate_run(run, qrels, ["map"]),
               lambda: jrn.evaluate_runs({"a": run}, str(qrels), ["map"])):
    with pytest.raises(ValueError, match=twice):
      call()
  other = {"q2": {"d1": 0.5}}
  with pytest.raises(ValueError, match=r"has judgments in the qrels .*twice\.qrels \(query 'q1'\)"):
    jrn.evaluate_runs({"a": other}, qrels, ["map"])


def test_evaluate_runs_reads_standard_input_once():
  for runs in (["-", "-"], {"a": "-", "b": "-"}):
    with pytest.raises(ValueError, match=r"runs: (standard input \('-'\) can be read only once|"
                                         r"each run must have its own name, got '-' twice)"):
      jrn.evaluate_runs(runs, QRELS, ["map"])


def test_evaluate_runs_checks_every_run_before_reading_the_qrels(tmp_path):
  with pytest.raises(TypeError, match="run must be a .* got int"):
    jrn.evaluate_runs({"a": RUNS[0], "b": 3}, tmp_path / "absent.qrels", ["map"])


def test_what_is_neither_a_dict_an_io_object_nor_a_path_is_a_type_error():
  with pytest.raises(TypeError, match=r"run must be a \{qid: \{docid: value\}\} dict, a "
                                      r"jaxrank.io.Run or a file path, got bytes \(a file's "
                                      r"content as bytes: jaxrank.io.read_run\(content\)\)"):
    jrn.evaluate_run(RUNS[0].read_bytes(), QRELS, ["map"])
  with pytest.raises(TypeError, match="qrels must be a .* dict, a jaxrank.io.Qrels or a file "
                                      "path, got list"):
    jrn.evaluate_run(RUNS[0], [("301", "d", 1)], ["map"])
