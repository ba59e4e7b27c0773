"""`jaxrank evaluate` against trec_eval's own test suite (expected outputs of trec_eval 10).

Every line of each expected output whose measure jaxrank supports must be reproduced exactly
(name padding, query id, value to the printed 4 decimals) and in trec_eval's order; every other
line must belong to a measure that jaxrank lists as unsupported. The commands are those of
trec_eval's Makefile; the files are trec_eval's own, shipped in tests/data/trec_eval (see its
README.md and LICENSE.md), so every clone runs these tests.
"""


import pytest

from jaxrank import cli
from jaxrank._trec import table as _trec

import repo

DATA = repo.DATA / "trec_eval"

CASES = {
    "out.test": ["qrels.test", "results.test"],
    "out.test with comments": ["qrels.test.with-comments", "results.test"],
    "out.test.a": ["-m", "all_trec", "qrels.test", "results.test"],
    "out.test.aq": ["-m", "all_trec", "-q", "qrels.test", "results.test"],
    "out.test.aq with comments": ["-m", "all_trec", "-q", "qrels.test.with-comments",
                                  "results.test"],
    "out.test.aqc": ["-m", "all_trec", "-q", "-c", "qrels.test", "results.trunc"],
    "out.test.aqcM": ["-m", "all_trec", "-q", "-c", "-M100", "qrels.test", "results.trunc"],
    "out.test.aql": ["-m", "all_trec", "-mrelstring.20", "-q", "-l2", "qrels.rel_level",
                     "results.test"],
    "out.comment.test": ["qrels.comment.test", "results.comment.test"],
    "out.comment.aq": ["-m", "all_trec", "-q", "qrels.comment.test", "results.comment.test"],
    "out.302.aq": ["-m", "all_trec", "-q", "qrels-302.test", "results-302.test"],
}


def _base(name: str) -> str:
  """The measure of a printed name: P_10 -> P, iprec_at_recall_0.10 -> iprec_at_recall."""
  while name not in _trec.MEASURES and name not in _trec.UNSUPPORTED and "_" in name:
    name = name.rpartition("_")[0]
  return name


def _run(args, capsys):
  paths = [str(DATA / a) if (DATA / a).is_file() else a for a in args]
  code = cli.main(["evaluate", *paths])
  out = capsys.readouterr().out
  assert code == 0
  return out.splitlines()


@pytest.mark.parametrize("case", list(CASES))
def test_reproduces_trec_eval(case, capsys):
  golden = (DATA / case.split()[0]).read_text().splitlines()
  ours = _run(CASES[case], capsys)
  supported = [line for line in golden if _base(line.split("\t")[0].strip()) in _trec.MEASURES]
  others = {_base(line.split("\t")[0].strip()) for line in golden} - set(_trec.MEASURES)
  assert others <= set(_trec.UNSUPPORTED), f"silently skipped: {others - set(_trec.UNSUPPORTED)}"
  assert ours == supported  # every supported line, byte for byte, in trec_eval's order
  assert supported == golden  # and today that is every line


def test_measure_parameters(capsys):
  """`out.test.meas_params` without its two unsupported requests (`11pt_avg` levels and
  `ndcg` gain parameters): cutoffs sorted, 23.4 read as 23, levels and multiples of R."""
  args = ["-q", "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000",
          "-m", "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-mndcg_cut.10,20,23.4",
          "-msuccess.2,5,20", "qrels.test", "results.test"]
  golden = [line for line in (DATA / "out.test.meas_params").read_text().splitlines()
            if not line.startswith(("11pt_avg", "ndcg_1="))]
  assert _run(args, capsys) == golden


def test_every_all_trec_measure_is_computed_or_listed_unsupported(capsys):
  golden = (DATA / "out.test.aq").read_text().splitlines()
  names = {_base(line.split("\t")[0].strip()) for line in golden}
  assert names <= set(_trec.MEASURES) | set(_trec.UNSUPPORTED)
  assert set(_trec.ALL_TREC) == names  # nothing invented beyond trec_eval's names
  # trec_eval 10's measures outside its all_trec set
  assert set(_trec.MEASURES) - set(_trec.ALL_TREC) == {"dcg", "ideal_dcg"}


# Printed by trec_eval 10 (usnistgov/trec_eval f4253652, built from source), whose test suite
# has no case for dcg and ideal_dcg (m_ndcg.c): `-q` with the arguments of each key.
DCG_GOLDEN = {
    "-m dcg -m ideal_dcg -m ndcg qrels.test results.test": {
        "dcg": ["10.7146", "11.5085", "1.7549", "7.9927"],
        "ideal_dcg": ["67.6459", "17.3927", "4.5436", "29.8607"],
        "ndcg": ["0.1584", "0.6617", "0.3862", "0.4021"]},
    "-c -M100 -m dcg -m ideal_dcg qrels.test results.trunc": {
        "dcg": ["4.5355", "0.0000", "2.1489", "2.2281"],
        "ideal_dcg": ["67.6459", "17.3927", "4.5436", "29.8607"]},
    "-l2 -m ideal_dcg -m dcg qrels.rel_level results.test": {  # -l is ignored, as by ndcg
        "dcg": ["11.0775", "34.5255", "2.9008", "16.1679"],
        "ideal_dcg": ["79.3480", "52.1780", "7.9069", "46.4776"]},
}


@pytest.mark.parametrize("case", list(DCG_GOLDEN))
def test_dcg_and_ideal_dcg_print_trec_eval_10s_lines(case, capsys):
  """trec_eval 10's dcg (gain = grade over the retrieved documents, after -M) and ideal_dcg
  (every positive judgment sorted, not cut by -M), in its print order; qrels-only queries
  (-c) score dcg 0 and their ideal_dcg."""
  golden = DCG_GOLDEN[case]
  want = [f"{name:<22}\t{qid}\t{golden[name][i]}"
          for i, qid in enumerate(["301", "302", "303", "all"]) for name in golden]
  want = [line for line in want if "\tall\t" not in line] + [
      line for line in want if "\tall\t" in line]
  assert _run(["-q", *case.split()], capsys) == want


def test_qrels_with_comments_read_like_plain_qrels():
  from jaxrank import io
  plain, commented = io.read_qrels(DATA / "qrels.test"), io.read_qrels(
      DATA / "qrels.test.with-comments")
  assert b"CR#93E-1860" in commented.docid.tolist()  # a '#' inside an id is data
  assert len(plain) == len(commented)
