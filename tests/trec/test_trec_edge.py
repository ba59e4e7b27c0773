"""trec_eval edge cases of the TREC path (`jaxrank evaluate`, `jrn.evaluate_run`), found by
differential testing against trec_eval 10 and pytrec_eval (issue 10, items 4, 5, 6, 8, 13, 19, 24).

Each test states trec_eval's behaviour it checks; the numbers quoted are trec_eval 10's.
"""

import json
import math
import random
import time
import warnings

import numpy as np
import pytest

from jaxrank import cli, io
from jaxrank._host import device
from jaxrank._host import scoring as _hostrank
from jaxrank._trec import table as _trec
from jaxrank._trec import run as _run
from jaxrank import numpy as jrn

import repo
from cli_runs import run_cli, write

DATA = repo.DATA / "trec_eval"  # shipped with the tests


def values(out):
  return {(line.split("\t")[0].strip(), line.split("\t")[1]): line.split("\t")[2]
          for line in out.splitlines()}


def trec_files(tmp_path, run: dict, qrels: dict):
  run_text = "".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, docs in run.items()
                     for d, s in docs.items())
  qrels_text = "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())
  return write(tmp_path, "qrels", qrels_text), write(tmp_path, "run", run_text)


# ----------------------------------------------------------------------------------------------
# Item 4: every negative judgment is "in the pool, unjudged" (trec_eval's form_res_rels.c).

NEG_RUN = "".join(f"q Q0 {d} {i + 1} {0.9 - i / 10:.1f} t\n" for i, d in enumerate("abcde"))


def neg_qrels(b, c=0):
  return f"q 0 a 1\nq 0 b {b}\nq 0 c {c}\nq 0 e 1\n"


@pytest.mark.parametrize("b, c", [(-1, 0), (-2, 0), (-3, 0), (-5, 0), (-100, 0), (-2, -5),
                                  (-1, -1), (-7, -2), (-99999, -3)])
def test_every_negative_judgment_reads_as_unjudged(tmp_path, capsys, b, c):
  """Replacing any negative judgment by -1 changes no line of `-q -m all_trec` (trec_eval maps
  every rel < 0 to RELVALUE_UNJUDGED), and the values are trec_eval 10's."""
  run = write(tmp_path, "run", NEG_RUN)
  args = ["-q", "-m", "all_trec", "-m", "relstring.5"]
  code, out, _ = run_cli(capsys, *args, write(tmp_path, "q1", neg_qrels(b, c)), run)
  code_ref, ref, _ = run_cli(capsys, *args, write(tmp_path, "q2", neg_qrels(-1, -1 if c < 0
                                                                           else 0)), run)
  assert code == code_ref == 0 and out == ref
  v = values(out)
  if c == 0:
    assert v[("relstring_5", "q")] == "'1.0-1'" and v[("infAP", "q")] == "0.7500"
    assert v[("unj_5", "q")] == "0.4000"
  else:
    assert v[("relstring_5", "q")] == "'1..-1'" and v[("unj_5", "q")] == "0.6000"
  assert "<" not in out


@pytest.mark.parametrize("neg", [-1, -2, -3, -50])
def test_negative_judgments_in_the_python_api(neg):
  run = {"q": {d: 0.9 - i / 10 for i, d in enumerate("abcde")}}
  qrels = {"q": {"a": 1, "b": neg, "c": 0, "e": 1}}
  out = jrn.evaluate_run(run, qrels, ["relstring", "infAP", "unj_5", "bpref", "map"])
  assert out["relstring"]["q"] == "1.0-1"
  assert out["infAP"]["q"] == pytest.approx(0.75, abs=1e-15)
  assert out["unj_5"]["q"] == pytest.approx(0.4, abs=1e-15)


def test_help_never_promises_a_character_trec_eval_does_not_print():
  assert "'<'" not in _trec.MEASURES["relstring"].doc


# ----------------------------------------------------------------------------------------------
# Item 5: float64 throughout the trec path.

PYTREC_MEASURES = ["map", "Rprec", "bpref", "recip_rank", "P", "recall", "infAP", "Rprec_mult",
                   "utility", "binG", "G", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut",
                   "relative_P", "success", "set_P", "set_relative_P", "set_recall", "set_map",
                   "set_F", "num_nonrel_judged_ret", "num_rel", "num_ret", "num_rel_ret"]


def trec10_iprec(grades: list[int], num_rel: int, levels, threshold: int = 1) -> list[float]:
  """trec_eval 10's iprec_at_recall (m_iprec_at_recall.c), line by line: recall levels rounded
  with lround (pytrec_eval, from trec_eval 9, truncates them)."""
  num_ret = len(grades)
  rel_ret = sum(g >= threshold for g in grades)
  cutoffs = [math.floor(x * num_rel + 0.5) for x in levels]
  out = [0.0] * len(levels)
  cut = len(levels) - 1
  while cut >= 0 and cutoffs[cut] > rel_ret:
    cut -= 1
  int_prec = rel_ret / num_ret if num_ret else 0.0
  so_far = rel_ret
  i = num_ret
  while i > 0 and so_far > 0:
    int_prec = max(int_prec, so_far / i)
    if grades[i - 1] >= threshold:
      while cut >= 0 and so_far == cutoffs[cut]:
        out[cut] = int_prec
        cut -= 1
      so_far -= 1
    i -= 1
  while cut >= 0:
    out[cut] = int_prec
    cut -= 1
  return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_value_equals_pytrec_evals_doubles(seed):
  """Every per-query value of every measure pytrec_eval has equals its float64 value to 1e-12
  (float32 arithmetic anywhere shows at 1e-8); iprec_at_recall and 11pt_avg equal a line-by-line
  port of trec_eval 10's loop (pytrec_eval has trec_eval 9's truncated recall levels)."""
  pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier not installed")
  from trec_runs import random_trec

  run, qrels = random_trec(seed, queries=40)
  ref = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC_MEASURES)).evaluate(run)
  requests = _trec.parse_measures(PYTREC_MEASURES + ["iprec_at_recall", "11pt_avg"])
  got = _run.evaluate_requests(io.as_run(run), io.as_qrels(qrels), requests, float32=True)
  assert sorted(got.qids) == sorted(ref)
  checked = 0
  for name, v in got.per_query.items():
    if name.startswith(("iprec_at_recall", "11pt_avg")):
      continue
    for i, q in enumerate(got.qids):
      assert abs(float(v[i]) - ref[q][name]) <= 1e-12, (name, q, float(v[i]), ref[q][name])
      checked += 1
  assert checked > 40 * 60
  # trec_eval 10's interpolated precision, from the order pytrec_eval's run gives (float32, then
  # doc id descending)
  levels = _trec.RECALL_LEVELS
  for i, q in enumerate(got.qids):
    docs = sorted(run[q], key=lambda d: (-np.float32(run[q][d]), [-b for b in d.encode()]))
    grades = [qrels[q].get(d, -2) for d in docs]
    num_rel = sum(g >= 1 for g in qrels[q].values())
    expect = trec10_iprec(grades, num_rel, levels)
    for x, e in zip(levels, expect):
      assert abs(got.per_query[f"iprec_at_recall_{x:3.2f}"][i] - e) <= 1e-12, (q, x)
    total = 0.0
    for e in reversed(expect):  # trec_eval sums from the highest level down
      total += e
    assert abs(got.per_query["11pt_avg"][i] - total / 11) <= 1e-12


def test_summary_rounds_like_trec_evals_doubles(tmp_path, capsys):
  """8 queries with recall_100 0.4, 0.25, 0.5 and five zeros: 1.15 / 8 is 0.14374999... in
  doubles, printed 0.1437 by trec_eval (float32 recalls gave 0.1438)."""
  run, qrels = {}, {}
  for q, (nrel, hits) in enumerate([(5, 2), (4, 1), (2, 1)] + [(1, 0)] * 5):
    qrels[f"q{q}"] = {f"r{j}": 1 for j in range(nrel)}
    run[f"q{q}"] = {**{f"r{j}": 1.0 for j in range(hits)}, "x": 0.5}
  code, out, _ = run_cli(capsys, "-m", "recall.100", "-m", "set_recall", "-m", "relative_P.100",
                         *trec_files(tmp_path, run, qrels))
  v = values(out)
  assert code == 0 and v[("recall_100", "all")] == "0.1437"
  assert v[("set_recall", "all")] == v[("relative_P_100", "all")] == "0.1437"
  got = jrn.evaluate_run(run, qrels, ["recall_100", "Rprec", "set_recall", "relative_P_100"])
  assert got["recall_100"]["q0"] == 0.4 and got["set_recall"]["q1"] == 0.25
  assert got["Rprec"]["q0"] == 0.4 and got["relative_P_100"]["q2"] == 0.5


def test_ranked_ids_recall_is_a_double():
  out = jrn.evaluate_ranked({"u": ["a", "b", "c"]}, {"u": ["a", "x", "y"]}, ["recall@3", "mrr"])
  assert out["recall@3"]["u"] == 1 / 3


# ----------------------------------------------------------------------------------------------
# Item 6: trec_eval's -c num_rel total, and repeated -m for one measure.

def test_complete_num_rel_total_counts_every_positive_judgment(tmp_path, capsys):
  """With -c, trec_eval's `num_rel all` recounts rel > 0 over the whole qrels, ignoring -l
  (m_num_rel.c); per query and without -c it is the sum of rel >= -l."""
  qrels = write(tmp_path, "qrels", "q 0 a 1\nq 0 b 2\nq 0 c 2\nr 0 x 1\nr 0 y 3\nr 0 z -1\n"
                "s 0 w 0\n")
  run = write(tmp_path, "run", "q Q0 a 1 3 t\nq Q0 b 2 2 t\n")
  _, out, _ = run_cli(capsys, "-c", "-l", "2", "-q", "-m", "num_rel", qrels, run)
  v = values(out)
  assert (v[("num_rel", "q")], v[("num_rel", "r")], v[("num_rel", "all")]) == ("2", "1", "5")
  _, out, _ = run_cli(capsys, "-c", "-m", "num_rel", qrels, run)
  assert values(out)[("num_rel", "all")] == "5"
  _, out, _ = run_cli(capsys, "-l", "2", "-m", "num_rel", qrels, run)
  assert values(out)[("num_rel", "all")] == "2"  # without -c: q only, rel >= 2
  assert jrn.evaluate_run(qrels=io.read_qrels(qrels), run=io.read_run(run), metrics="num_rel",
                          complete=True, threshold=2)["num_rel"] == {"q": 2, "r": 1, "s": 0}


@pytest.mark.parametrize("args, names", [
    (["-m", "P.5", "-m", "P.10"], ["P_5"]),
    (["-m", "P.10", "-m", "P.5"], ["P_10"]),
    (["-m", "P", "-m", "P.10"], ["P_10"]),
    (["-m", "P.10", "-m", "P"], ["P_10"]),
    (["-m", "official", "-m", "P.7"], ["P_7"]),
    (["-m", "P.7,3", "-m", "all_trec"], ["P_3", "P_7"]),
    (["-m", "set_F.0.5", "-m", "set_F.2"], ["set_F"]),
    (["-m", "relstring.3", "-m", "relstring.7"], ["relstring_3"]),
    (["-m", "utility.1,0,0,0", "-m", "utility.2,0,0,0"], ["utility_1,0,0,0"]),
    (["-m", "P_5", "-m", "P_10"], ["P_5", "P_10"]),  # jaxrank's printed forms add up
    (["-m", "P.3", "-m", "P_10"], ["P_3", "P_10"]),
])
def test_repeated_measure_uses_the_first_parameter_list(args, names):
  """trec_eval reads a measure's parameters from the first `-m NAME.params` that names it
  (meas_init.c); jaxrank's printed forms (P_10) each add their value."""
  requests = _trec.parse_measures([a for a in args if a != "-m"])
  base = {_base(n) for n in names}
  got = [n for r in requests if r.measure.name in base for n in r.names()]
  assert got == names


def _base(name):
  while name not in _trec.MEASURES and "_" in name:
    name = name.rpartition("_")[0]
  return name


def test_repeated_set_f_uses_the_first_beta(tmp_path, capsys):
  qrels, run = write(tmp_path, "q", neg_qrels(0)), write(tmp_path, "r", NEG_RUN)
  _, first, _ = run_cli(capsys, "-m", "set_F.0.5", "-m", "set_F.2", qrels, run)
  _, only, _ = run_cli(capsys, "-m", "set_F.0.5", qrels, run)
  assert first == only


# ----------------------------------------------------------------------------------------------
# Item 8: a run and qrels without a common query.

@pytest.mark.parametrize("run, qrels", [
    ({"q1": {"a": 1.0}}, {"q2": {"a": 1}}),
    ({"a": {"x": 1.0}, "b": {"x": 1.0}, "c": {"x": 1.0}, "d": {"x": 1.0}},
     {"A": {"x": 1}, "B": {"x": 0}}),
    ({"Q1": {"a": 1.0}}, {"q1": {"a": 1}}),
])
@pytest.mark.parametrize("reduce", [None, "mean"])
def test_no_common_query_is_an_error_naming_both(run, qrels, reduce):
  first_run, first_qrels = sorted(run)[0], sorted(qrels)[0]
  with pytest.raises(ValueError, match="no query of the run") as e:
    jrn.evaluate_run(run, qrels, ["map", "P_5"], reduce=reduce)
  message = str(e.value)
  assert repr(first_run) in message and repr(first_qrels) in message and "\n" not in message
  with pytest.raises(ValueError, match="no query of the run"):
    _run.evaluate_requests(io.as_run(run), io.as_qrels(qrels), _trec.parse_measures(["map"]))
  # with complete=True every qrels query is evaluated (absent ones score 0): not an error
  out = jrn.evaluate_run(run, qrels, ["map"], complete=True)
  assert out["map"] == {q: 0.0 for q in sorted(qrels)}


def test_no_common_query_on_the_command_line(tmp_path, capsys):
  qrels = write(tmp_path, "qrels", "x 0 a 1\ny 0 a 1\n")
  run = write(tmp_path, "run", "q1 Q0 a 1 0.5 t\n")
  code, out, err = run_cli(capsys, qrels, run)
  assert code == 1 and out == "" and err.count("\n") == 1
  assert str(run) in err and str(qrels) in err and "'q1'" in err and "'x'" in err


# ----------------------------------------------------------------------------------------------
# Item 13: scores beyond float32's range with --float32; full precision in csv and json.

BIG = [1e39, 5e38, 3.5e38, 3.4028235e38, 3e38, -3e38, -3.5e38, -1e39, np.inf, -np.inf, 1e308]


@pytest.mark.parametrize("seed", range(4))
def test_float32_overflow_ranks_like_pytrec_eval_without_warnings(seed):
  """pytrec_eval casts scores to C floats: beyond float32's range they become +-inf (and tie
  there). jaxrank does the same, silently (no NumPy RuntimeWarning)."""
  pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier not installed")
  rng = np.random.default_rng(seed)
  docs = [f"d{j}" for j in range(len(BIG))]
  run = {"q": dict(zip(docs, rng.permutation(BIG).tolist()))}
  qrels = {"q": {d: int(rng.integers(0, 3)) for d in docs}}
  qrels["q"][docs[0]] = 1
  measures = ["map", "ndcg", "recip_rank", "P_5"]
  ref = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg", "recip_rank", "P"}).evaluate(run)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    got = jrn.evaluate_run(run, qrels, measures, float32=True)
  for m in measures:
    assert got[m]["q"] == pytest.approx(ref["q"][m], abs=1e-12), m


def test_float32_overflow_on_the_command_line_prints_nothing_on_stderr(tmp_path, capsys):
  run = write(tmp_path, "run", "q Q0 a 1 1e39 t\nq Q0 b 2 5e38 t\nq Q0 c 3 -1e39 t\n")
  qrels = write(tmp_path, "qrels", "q 0 a 1\n")
  code, out, err = run_cli(capsys, "--float32", "-m", "recip_rank", qrels, run)
  assert code == 0 and err == ""
  assert values(out)[("recip_rank", "all")] == "0.5000"  # a and b tie at +inf: b first


def test_csv_and_json_carry_full_precision(capsys):
  args = ["--example", "-q", "-m", "map", "-m", "ndcg_cut.10", "-m", "num_rel"]
  _, js, _ = run_cli(capsys, *args, "--format", "json")
  _, csv, _ = run_cli(capsys, *args, "--format", "csv")
  _, trec, _ = run_cli(capsys, *args)
  data = json.loads(js)
  rows = {tuple(line.split(",")[:2]): line.split(",")[2] for line in csv.splitlines()[1:]}
  t = values(trec)
  long_values = 0
  for (name, q), text in rows.items():
    value = data["all"][name] if q == "all" else data["per_query"][q][name]
    assert text == repr(value)  # the shortest text that reads back as the same double
    assert t[(name, q)] == (str(value) if name == "num_rel" else f"{value:6.4f}")
    long_values += len(text) > 6
  assert long_values > 5


# ----------------------------------------------------------------------------------------------
# Item 19: many relevant documents per query.

def _big_query(n, nrel, queries=1, seed=0):
  rng = np.random.default_rng(seed)
  ids = np.array([f"d{i}".encode() for i in range(n)])
  qids = np.array([f"q{i}".encode() for i in range(queries)])
  run = io.Run(qid=np.repeat(qids, n), docid=np.tile(ids, queries),
               score=rng.random(n * queries), rank=np.zeros(n * queries, np.int64), tag="t")
  rel = np.concatenate([rng.choice(n, nrel, replace=False) for _ in range(queries)])
  qrels = io.Qrels(qid=np.repeat(qids, nrel), docid=ids[rel], rel=np.ones(rel.size, np.int64))
  return run, qrels


@pytest.mark.parametrize("ties", ["trec", "average", "pessimistic"])
def test_many_relevant_documents_cost_what_a_sort_costs(ties):
  """One query, 100,000 documents, 50,000 relevant: was 38-87 s (every relevant document compared
  with every document, 64 padded lists); now sorts, so well under 20 s even on a busy machine
  (about 1 s alone). The value is checked against a direct computation."""
  run, qrels = _big_query(100_000, 50_000)
  requests = _trec.parse_measures(["map", "P.10", "recall.1000", "ndcg", "Rprec"])
  start = time.perf_counter()
  got = _run.evaluate_requests(run, qrels, requests, ties=ties)
  took = time.perf_counter() - start
  assert took < 20, took
  order = np.argsort(-run.score, kind="stable")  # distinct scores: every policy agrees
  rel = np.isin(run.docid[order], qrels.docid)
  hits = np.cumsum(rel)
  ap = np.sum(np.where(rel, hits / np.arange(1, rel.size + 1), 0.0)) / rel.sum()
  assert got.per_query["map"][0] == pytest.approx(ap, rel=1e-12)
  assert got.per_query["Rprec"][0] == hits[49_999] / 50_000


TIE_METRICS = ["map", "ndcg", "P_5", "recall_20", "recip_rank", "Rprec", "ndcg@5", "hr@3"]


@pytest.mark.parametrize("policy", ["optimistic", "pessimistic"])
@pytest.mark.parametrize("seed", range(3))
def test_tie_policies_equal_their_resolved_order(policy, seed):
  """optimistic/pessimistic (resolved on the host, O(m log m)) equal ties="first" on the order
  that puts each tie group's relevant documents first (higher grades first) or last (lower
  grades first); relevant documents absent from the run stay unranked under every policy."""
  from trec_runs import random_trec
  run, qrels = random_trec(seed, queries=30)
  sign = -1 if policy == "optimistic" else 1

  def key(q, d):
    g = qrels.get(q, {}).get(d, 0)
    return (-run[q][d], sign * (g > 0), sign * g)

  resolved = {q: {d: -float(i) for i, d in enumerate(sorted(docs, key=lambda d: key(q, d)))}
              for q, docs in run.items()}
  got = jrn.evaluate_run(run, qrels, TIE_METRICS, ties=policy)
  expect = jrn.evaluate_run(resolved, qrels, TIE_METRICS, ties="first")
  for m in TIE_METRICS:
    for q in expect[m]:
      assert got[m][q] == pytest.approx(expect[m][q], abs=1e-12), (m, q)
  # the same through jrn.evaluate (scores and labels, padding)
  rng = np.random.default_rng(seed)
  scores = np.round(rng.normal(size=(30, 25)), 1)
  labels = rng.integers(0, 4, size=scores.shape) * (rng.random(scores.shape) < 0.4)
  where = rng.random(scores.shape) < 0.8
  metrics = ["map", "ndcg@10", "mrr", "r_precision"]
  got = jrn.evaluate(scores, labels, metrics, where=where, ties=policy)
  order = np.array([np.lexsort((sign * labels[i], sign * (labels[i] > 0), -scores[i]))
                    for i in range(30)])
  resolved = -np.argsort(order, axis=1).astype(float)  # distinct scores in the resolved order
  expect = jrn.evaluate(resolved, labels, metrics, where=where, ties="first")
  for m in got:
    np.testing.assert_allclose(got[m], expect[m], rtol=0, atol=1e-12, err_msg=m)


def test_one_long_query_does_not_pad_the_others():
  """3,000 queries of 2 documents and one of 100,000: the host measures worked on a [queries,
  longest] grade matrix (2.4 GB of int64 alone, several float64 copies more); now on blocks of
  bounded size."""
  import tracemalloc
  short = io.Run(qid=np.repeat(np.char.add(b"s", np.arange(3000).astype("S")), 2),
                 docid=np.tile([b"x", b"y"], 3000), score=np.tile([2.0, 1.0], 3000),
                 rank=np.zeros(6000, np.int64), tag="t")
  long, qrels = _big_query(100_000, 100)
  run = io.Run(qid=np.concatenate([short.qid, long.qid]),
               docid=np.concatenate([short.docid, long.docid]),
               score=np.concatenate([short.score, long.score]),
               rank=np.zeros(106_000, np.int64), tag="t")
  qrels = io.Qrels(qid=np.concatenate([qrels.qid, short.qid[::2]]),
                   docid=np.concatenate([qrels.docid, short.docid[::2]]),
                   rel=np.ones(3100, np.int64))
  requests = _trec.parse_measures(["bpref", "infAP", "iprec_at_recall", "unj", "G", "Rndcg",
                                   "num_rel_ret", "relstring"])
  tracemalloc.start()
  try:
    got = _run.evaluate_requests(run, qrels, requests)
    peak = tracemalloc.get_traced_memory()[1]
  finally:
    tracemalloc.stop()
  assert peak < 400e6, peak
  assert got.per_query["num_rel_ret"].tolist() == [100] + [1] * 3000
  assert got.per_query["relstring"][1] == "1-"  # x judged 1, y not in the qrels


@pytest.mark.parametrize("scoring", ["jax", "numpy"])
def test_one_query_is_not_padded_like_many(monkeypatch, scoring):
  """Scoring one list with many relevant items costs one list, not a batch of 64."""
  run, qrels = _big_query(20_000, 10_000)
  shapes = []
  module, name = (device, "_kernel") if scoring == "jax" else (_hostrank, "_on_host")
  real = getattr(module, name)

  def spy(lo, hi, *args, **kw):
    shapes.append(lo.shape)
    return real(lo, hi, *args, **kw)

  monkeypatch.setenv("JAXRANK_SCORING", scoring)
  monkeypatch.setattr(module, name, spy)
  _run.evaluate_requests(run, qrels, _trec.parse_measures(["map"]))
  assert shapes == [(1, 12288)]  # 10,000 slots padded to the next 1.5 x 2**k


# ----------------------------------------------------------------------------------------------
# Item 24: the output is a function of the data, not of the order of the lines.

SHUFFLED_CASES = {
    "test": ("qrels.test", "results.test", ["-m", "all_trec"]),
    "trunc -c": ("qrels.test", "results.trunc", ["-m", "all_trec", "-c"]),
    "302": ("qrels-302.test", "results-302.test", ["-m", "all_trec"]),
}


class TestShuffledLines:
  """Shuffling the lines of the run and the qrels changes no byte of the output: the per-query
  values (full precision, json) and the trec_eval lines. Summaries add the queries in trec_eval's
  order (query ids sorted) and each query's relevant items are scored in rank order."""

  reference: dict = {}  # the output of the files as they are, per (case, format)

  def _run(self, qrels, run, extra, fmt):
    import contextlib
    import io as stdio
    buf = stdio.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(stdio.StringIO()):
      assert cli.main(["evaluate", "-q", "--format", fmt, *extra, str(qrels), str(run)]) == 0
    return buf.getvalue()

  @pytest.mark.parametrize("case", list(SHUFFLED_CASES))
  @pytest.mark.parametrize("seed", [0, 1])
  def test_shuffled_files_give_the_same_bytes(self, tmp_path, case, seed):
    qrels_name, run_name, extra = SHUFFLED_CASES[case]
    rng = random.Random(seed)
    paths = []
    for name in (qrels_name, run_name):
      lines = (DATA / name).read_text().splitlines(keepends=True)
      lines = [line for line in lines if line.strip() and not line.startswith("#")]
      rng.shuffle(lines)
      paths.append(write(tmp_path, name, "".join(lines)))
    for fmt in ("json", "trec"):
      if (case, fmt) not in self.reference:
        self.reference[case, fmt] = self._run(DATA / qrels_name, DATA / run_name, extra, fmt)
      assert self._run(*paths, extra, fmt) == self.reference[case, fmt]

  @pytest.mark.parametrize("seed", [0, 1])
  def test_shuffled_dicts_give_the_same_values(self, seed):
    from trec_runs import random_trec
    run, qrels = random_trec(seed, queries=30)
    rng = random.Random(seed)
    shuffled = lambda d: {k: d[k] for k in rng.sample(list(d), len(d))}  # noqa: E731
    run2 = shuffled({q: shuffled(docs) for q, docs in run.items()})
    qrels2 = shuffled({q: shuffled(docs) for q, docs in qrels.items()})
    metrics = ["map", "ndcg", "map_cut_30", "ndcg_cut_10", "bpref", "recip_rank", "P_10"]
    for ties in ("trec", "average", "pessimistic"):
      m = metrics if ties == "trec" else ["map", "ndcg", "map_cut_30", "P_10"]
      assert (jrn.evaluate_run(run, qrels, m, ties=ties, reduce="mean")
              == jrn.evaluate_run(run2, qrels2, m, ties=ties, reduce="mean"))


@pytest.mark.parametrize("ties", ["average", "optimistic", "pessimistic", "trec"])
def test_empty_run_with_complete_under_every_tie_policy(ties):
  # -c with a run of no lines: every qrels query scores 0 (the tie-aware policies crashed).
  run = io.read_run(b"")
  qrels = io.read_qrels(b"q1 0 a 1\nq2 0 b 2\n")
  out = _run.evaluate_requests(run, qrels, _trec.parse_measures(["map", "ndcg", "num_rel"]),
                           ties=ties, complete=True)
  assert out.per_query["map"].tolist() == [0.0, 0.0]
  assert out.summary["num_rel"] == 2


# ----------------------------------------------------------------------------------------------
# The measure table: each measure carries its calculation and its "needs the ranked order" flag.


def test_every_measure_carries_its_calculation():
  for m in _trec.MEASURES.values():
    if m.summary in ("runid", "count"):  # the run's tag, the number of queries
      assert m.host is None, m.name
    else:
      assert callable(m.host), m.name


@pytest.mark.parametrize("ties", ["average", "optimistic", "pessimistic"])
def test_measures_that_need_the_order_refuse_tie_aware_policies(ties):
  run = {"q": {"a": 1.0, "b": 1.0, "c": 0.5}}
  qrels = {"q": {"a": 1, "c": 0, "d": -1}}
  needs = [m.name for m in _trec.MEASURES.values() if m.needs_order]
  assert "bpref" in needs and "map" not in needs
  for name in needs:
    (request,) = _trec.parse_measures([name])
    with pytest.raises(ValueError, match=f"measure {name!r} needs an order of the documents"):
      _run.evaluate_requests(io.as_run(run), io.as_qrels(qrels), [request], ties=ties)
  (request,) = _trec.parse_measures(["map"])  # the others take every policy
  assert _run.evaluate_requests(io.as_run(run), io.as_qrels(qrels), [request], ties=ties).qids == ["q"]


# ----------------------------------------------------------------------------------------------
# trec_eval 10's dcg and ideal_dcg (m_ndcg.c; their lines on trec_eval's test files:
# tests/trec/test_trec_conformance.py).


@pytest.mark.parametrize("ties", _trec.TIES)
@pytest.mark.parametrize("options", [{}, {"complete": True, "max_docs": 3}, {"threshold": 3}])
def test_dcg_and_ideal_dcg_under_every_tie_policy(ties, options):
  """ideal_dcg: every positive judgment of the query sorted by grade, gain = grade (not cut by
  -M, -l ignored, the same under every policy); dcg: ndcg times it (ndcg's numerator)."""
  rng = random.Random(7)
  run, qrels = {}, {}
  for i in range(12):
    docs = [f"d{d}" for d in rng.sample(range(30), 20)]
    if i % 4 != 1:  # some queries only in the qrels
      run[f"q{i}"] = {d: rng.randint(0, 3) / 2 for d in docs[:rng.randint(1, 12)]}
    qrels[f"q{i}"] = {d: rng.randint(-1, 4) for d in docs[5:5 + rng.randint(1, 12)]}
  out = jrn.evaluate_run(run, qrels, ["dcg", "ideal_dcg", "ndcg"], ties=ties, **options)
  assert list(out["ideal_dcg"]) == sorted(q for q in qrels if q in run or "complete" in options)
  for q, got in out["ideal_dcg"].items():
    best = sorted((g for g in qrels[q].values() if g > 0), reverse=True)
    assert got == pytest.approx(sum(g / math.log2(i + 2) for i, g in enumerate(best)), rel=1e-12)
    assert out["dcg"][q] == pytest.approx(out["ndcg"][q] * got, rel=1e-9, abs=1e-12)
    if q not in run:
      assert out["dcg"][q] == 0.0
