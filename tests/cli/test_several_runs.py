"""Several runs in one call: `jaxrank evaluate QRELS RUN RUN ...`, `io.read_runs` and
`jaxrank.numpy.evaluate_runs` give each run what it gets alone, led by its name."""

import json
import re

import numpy as np
import pytest

from jaxrank import io
from jaxrank import numpy as jrn

import repo
from cli_runs import run_cli, write
from trec_runs import random_trec

DATA = repo.DATA / "trec_eval"
RUNS = [str(DATA / name) for name in ("results.test", "results.trunc", "results-302.test")]
QRELS = str(DATA / "qrels.test")
MEASURES = ["-m", "map", "-m", "P.5,10", "-m", "num_q", "-m", "nDCG@10", "-m", "runid"]


def alone(capsys, *args):
  code, out, err = run_cli(capsys, *args)
  assert code == 0, err
  return out


@pytest.mark.parametrize("per_query", [[], ["-q"]])
def test_trec_and_csv_lines_are_each_runs_own_led_by_the_run(capsys, per_query):
  for fmt in ("trec", "csv"):
    together = alone(capsys, "--format", fmt, *per_query, *MEASURES, QRELS, *RUNS)
    want = "run,measure,qid,value\n" if fmt == "csv" else ""
    for run in RUNS:
      lines = alone(capsys, "--format", fmt, *per_query, *MEASURES, QRELS, run).splitlines(True)
      lead = f"{run}," if fmt == "csv" else f"{run}\t"
      want += "".join(lead + line for line in lines[1 if fmt == "csv" else 0:])
    assert together == want, fmt


def test_json_is_keyed_by_run(capsys):
  together = json.loads(alone(capsys, "--format", "json", "-q", *MEASURES, QRELS, *RUNS))
  assert list(together) == RUNS
  for run in RUNS:
    assert together[run] == json.loads(alone(capsys, "--format", "json", "-q", *MEASURES,
                                             QRELS, run))


def test_table_has_a_run_column_and_every_query(capsys):
  out = alone(capsys, "--format", "table", "-q", "-m", "map", QRELS, RUNS[0], RUNS[1])
  header, _, first, second = out.splitlines()
  assert [c.strip() for c in header.strip("|").split("|")] == [
      "run", "measure", "301", "302", "303", "all"]
  assert [c.strip() for c in first.strip("|").split("|")][:2] == [RUNS[0], "map"]
  cells = [c.strip() for c in second.strip("|").split("|")]
  assert cells[:2] == [RUNS[1], "map"] and cells[3] == ""  # results.trunc has no query 302
  single = alone(capsys, "--format", "table", "-q", "-m", "map", QRELS, RUNS[1])
  alone_cells = [c.strip() for c in single.splitlines()[2].strip("|").split("|")]
  assert alone_cells == ["map"] + [c for c in cells[2:] if c]


def test_one_run_prints_exactly_what_it_did(capsys):
  out = alone(capsys, "-m", "map", QRELS, RUNS[0])
  assert out.splitlines() == ["map                   \tall\t0.1785"]


@pytest.mark.parametrize("args, message", [
    (["QRELS", "R", "R"], "RUN {R} is given twice: each run is evaluated once"),
    (["QRELS", "-", "R", "-"], "RUN - and RUN - cannot all be standard input|given twice"),
    (["-", "R", "-"], "QRELS and RUN - cannot all be standard input"),
    (["--example", "R"], "--example replaces QRELS and RUN"),
    (["QRELS"], "give QRELS and RUN files"),
])
def test_bad_run_lists_are_one_line_errors(capsys, args, message):
  args = [{"QRELS": QRELS, "R": RUNS[0]}.get(a, a) for a in args]
  code, out, err = run_cli(capsys, *args)
  assert (code, out) == (1, "")
  assert re.search(message.format(R=re.escape(RUNS[0])), err), err


def test_a_bad_run_names_its_file(capsys, tmp_path):
  bad = write(tmp_path, "bad.run", "q1 Q0 d1 1 notanumber t\n")
  code, _, err = run_cli(capsys, "-m", "map", QRELS, RUNS[0], bad)
  assert code == 1 and str(bad) in err and err.count("\n") == 1


def test_read_runs_keys_by_path_or_name(tmp_path):
  a = write(tmp_path, "a.run", "q1 Q0 d1 1 0.5 ta\n")
  b = write(tmp_path, "b.run", "q1 Q0 d2 1 0.5 tb\n")
  runs = io.read_runs([str(a), b])
  assert list(runs) == [str(a), str(b)] and [r.tag for r in runs.values()] == ["ta", "tb"]
  named = io.read_runs({"x": b"q1 Q0 d1 1 0.5 t\n", "y": a})
  assert list(named) == ["x", "y"] and named["y"].tag == "ta"
  with pytest.raises(TypeError, match="paths must be a list of run files"):
    io.read_runs(str(a))
  with pytest.raises(ValueError, match="got '.*a.run' twice"):
    io.read_runs([str(a), str(a)])
  with pytest.raises(ValueError, match=r"standard input \('-'\) can be read only once"):
    io.read_runs({"x": "-", "y": "-"})
  with pytest.raises(io.TrecFormatError, match="x:1:"):
    io.read_runs({"x": b"q1 Q0 d1 1 nan t\n"})


def test_evaluate_runs_is_evaluate_run_per_run():
  runs = {}
  for seed in range(3):
    run, qrels = random_trec(seed)
    runs[f"s{seed}"] = run
  runs["file"] = io.as_run(random_trec(3)[0])
  names = ["map", "P_5", "ndcg@10", "bpref", "num_q"]
  got = jrn.evaluate_runs(runs, qrels, names, complete=True)
  assert list(got) == list(runs)
  for name, run in runs.items():
    want = jrn.evaluate_run(run, qrels, names, complete=True)
    assert got[name].keys() == want.keys()
    for m in names:
      if isinstance(want[m], dict):
        np.testing.assert_array_equal(list(got[name][m].values()), list(want[m].values()))
      else:
        assert got[name][m] == want[m]
  means = jrn.evaluate_runs(runs, qrels, names, reduce="mean")
  assert means["s0"] == jrn.evaluate_run(runs["s0"], qrels, names, reduce="mean")
  with pytest.raises(TypeError, match=r"runs must be a \{name: run\} mapping"):
    jrn.evaluate_runs([runs["s0"]], qrels, names)
  with pytest.raises(TypeError, match="unexpected keyword argument 'bta'"):
    jrn.evaluate_runs(runs, qrels, names, bta=1)
