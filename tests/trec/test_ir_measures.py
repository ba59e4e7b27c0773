"""ir_measures' measure names against the ir-measures package itself (its default providers:
pytrec_eval, gdeval, msmarco, judged, cwl_eval) on random runs with score ties, unjudged
documents, graded and negative judgments, queries without relevant documents, and queries only
in the run or only in the qrels: through jaxrank.numpy.evaluate_run, the command line and, for
the rank metrics, jaxrank.evaluate."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import jaxrank
from jaxrank import cli
from jaxrank._core import irnames as _irnames
from jaxrank import numpy as jrn

ir_measures = pytest.importorskip("ir_measures")

# Every name is computed by an ir_measures provider installed with the test extra (RBP(rel=r)
# needs cwl-eval; ERR@k and nDCG(dcg='exp-log2')@k need perl for gdeval).
RUN_NAMES = [
    "nDCG@10", "nDCG", "AP", "AP@10", "RR", "RR@10", "MRR@5", "P@5", "R@100", "P(rel=2)@5",
    "R(rel=2)@10", "nDCG(gains={0:0,1:1,2:3})@10", "Success@10", "Rprec", "RR(rel=2)",
    "AP(rel=2)@10", "Rprec(rel=2)", "Bpref", "Bpref(rel=2)", "infAP", "infAP(rel=2)", "SetP",
    "SetR", "SetF", "SetF(beta=2.0)", "SetAP", "SetRelP", "SetP(rel=2)", "NumRet", "NumRel",
    "NumRelRet", "NumRet(rel=2)", "NumRelRet(rel=2)", "SetRelP(relative=False)", "NumQ",
    "IPrec@0.5", "IPrec(rel=2)@1.0", "IPrec@0.0",
    "nDCG(dcg='exp-log2')@10", "ERR@20", "ERR@5", "RBP(p=0.8,rel=1)", "RBP(p=0.5,rel=2)",
]
# The rank metrics, also through jaxrank.evaluate on dense arrays.
DENSE_NAMES = [
    "nDCG@10", "nDCG", "AP", "AP@10", "RR", "RR@10", "P@5", "R@100", "P(rel=2)@5",
    "R(rel=2)@10", "nDCG(gains={0:0,1:1,2:3})@10", "Success@10", "Rprec", "RR(rel=2)",
    "nDCG(dcg='exp-log2')@10", "ERR@20", "RBP(p=0.8,rel=1)", "RBP(p=0.5,rel=2)",
]
NEEDS_CORE = ["Judged@10", "Judged"]  # the rank core's bpref/infap/judged metrics
GDEVAL = ("ERR", "nDCG(dcg")


def _random_run(rng, queries=12, docs=40, judged_all=False):
  """Numeric query ids (gdeval's), scores on a grid of 6 values (ties), grades -1..4."""
  qrels, run = {}, {}
  for q in range(queries):
    qid = str(101 + q)
    retrieved = rng.choice(docs, size=int(rng.integers(1, 30)), replace=False)
    pool = retrieved if judged_all else np.arange(docs)
    judged = rng.choice(pool, size=int(rng.integers(1, len(pool) + 1)), replace=False)
    kind = q % 6
    grades = rng.integers(-1, 5, size=judged.size)
    if kind == 1:  # no relevant document
      grades = np.minimum(grades, 0)
    if kind != 2 or judged_all:  # query 2 (mod 6): in the run only
      qrels[qid] = {f"d{d}": int(g) for d, g in zip(judged, grades)}
    if kind != 3 or judged_all:  # query 3 (mod 6): in the qrels only
      scores = rng.integers(0, 6, size=retrieved.size) / 4  # exact in float32: no rounding
      run[qid] = {f"d{d}": float(s) for d, s in zip(retrieved, scores)}
  return qrels, run


def _ir_values(names, qrels, run, complete=False):
  """ir_measures' per-query values, for the queries of both the run and the qrels (with
  ``complete``, of the qrels: ir_measures reports those of the qrels only as well)."""
  common = set(qrels) if complete else set(qrels) & set(run)
  out = {}
  for name in names:
    measure = ir_measures.parse_measure(name)
    out[name] = {m.query_id: float(m.value) for m in ir_measures.iter_calc([measure], qrels, run)
                 if m.query_id in common}
  return out


def _usable(names):
  if not shutil.which("perl"):
    names = [n for n in names if not n.startswith(GDEVAL)]
  if not ir_measures.cwl_eval.is_available():
    names = [n for n in names if not n.startswith("RBP")]
  return names


def _assert_close(name, got, want):
  tol = 1.5e-5 if name.startswith(GDEVAL) else 2e-6  # gdeval prints 5 decimals
  assert set(got) == set(want), name
  for qid in want:
    assert abs(got[qid] - want[qid]) <= tol, (name, qid, got[qid], want[qid])


@pytest.fixture(scope="module")
def data():
  return _random_run(np.random.default_rng(12))


def test_every_name_matches_ir_measures_through_evaluate_run(data):
  qrels, run = data
  names = _usable(RUN_NAMES)
  want = _ir_values(names, qrels, run)
  got = jrn.evaluate_run(run, qrels, names)
  for name in names:
    _assert_close(name, got[name], want[name])


def _files(tmp_path, qrels, run):
  qrels_file, run_file = tmp_path / "qrels", tmp_path / "run"
  qrels_file.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items()
                                for d, g in docs.items()))
  run_file.write_text("".join(f"{q} Q0 {d} {i} {s!r} r\n" for q, docs in run.items()
                              for i, (d, s) in enumerate(docs.items())))
  return str(qrels_file), str(run_file)


def _cli_values(capsys, names, files, *options):
  """``({name: {qid: value}}, {name: all})`` of `jaxrank evaluate -q --format json`."""
  argv = ["evaluate", "-q", "--format", "json", *options, *files]
  assert cli.main(argv + [x for n in names for x in ("-m", n)]) == 0
  out = json.loads(capsys.readouterr().out)
  return ({n: {qid: values[n] for qid, values in out["per_query"].items()} for n in names},
          out["all"])


def test_names_on_the_command_line(data, tmp_path, capsys):
  qrels, run = data
  names = _usable(RUN_NAMES)
  got, total = _cli_values(capsys, names + ["map"], _files(tmp_path, qrels, run))
  want = _ir_values(names, qrels, run)
  for name in names:
    _assert_close(name, got[name], want[name])
  # trec_eval's names keep their meaning beside them: map is AP
  assert total["map"] == pytest.approx(total["AP"], abs=1e-12)


def test_every_name_under_complete_reports_qrels_only_queries_as_ir_measures(data, tmp_path,
                                                                             capsys):
  """complete=True / -c adds the qrels' queries that the run lacks; ir_measures reports them
  too, and every name gives them ir_measures' value (0; NumRel and NumQ included, where
  trec_eval's num_rel counts their relevant documents and num_q counts them). The counts'
  `all` line is the sum of the per-query values, as ir_measures' aggregate."""
  qrels, run = data
  assert set(qrels) - set(run)  # the data has qrels-only queries
  names = _usable(RUN_NAMES)
  want = _ir_values(names, qrels, run, complete=True)
  got = jrn.evaluate_run(run, qrels, names, complete=True)
  for name in names:
    _assert_close(name, got[name], want[name])
  cli_got, total = _cli_values(capsys, names, _files(tmp_path, qrels, run), "-c")
  for name in names:
    _assert_close(name, cli_got[name], want[name])
  for name in ("NumQ", "NumRel", "NumRet", "NumRelRet"):
    measure = ir_measures.parse_measure(name)
    assert total[name] == ir_measures.calc_aggregate([measure], qrels, run)[measure]


def _dense(qrels, run, order):
  """Padded dense arrays of the queries of both, every judged document retrieved, with the
  tie key of the provider's order: doc id descending (trec), ascending, or the run's order."""
  qids = sorted(set(qrels) & set(run))
  n = max(len(run[q]) for q in qids)
  scores = np.zeros((len(qids), n), np.float32)
  labels = np.zeros((len(qids), n), np.int32)
  where = np.zeros((len(qids), n), bool)
  key = np.zeros((len(qids), n), np.float32)
  for i, q in enumerate(qids):
    docs = list(run[q])
    ids = np.argsort(np.argsort(docs))  # byte order of the doc ids (ASCII here)
    for j, d in enumerate(docs):
      scores[i, j], labels[i, j], where[i, j] = run[q][d], max(qrels[q].get(d, 0), 0), True
      key[i, j] = {"trec": ids[j], "ascending": -ids[j], "input": -j}[order]
  return qids, scores, labels, where, key


def test_rank_metric_names_through_jaxrank_evaluate():
  qrels, run = _random_run(np.random.default_rng(5), judged_all=True)
  names = _usable(DENSE_NAMES)
  want = _ir_values(names, qrels, run)
  by_order: dict[str, list[str]] = {}
  for name in names:
    by_order.setdefault(_irnames.parse(name).order, []).append(name)
  for order, group in by_order.items():
    qids, s, y, w, key = _dense(qrels, run, order)
    out = jaxrank.evaluate(s, y, group, where=w, ties="first", tie_key=key)
    for name in group:
      _assert_close(name, dict(zip(qids, np.asarray(out[name], np.float64).tolist())),
                    want[name])


def test_names_of_the_judgment_metrics():
  qrels, run = _random_run(np.random.default_rng(7))
  want = _ir_values(NEEDS_CORE, qrels, run)
  got = jrn.evaluate_run(run, qrels, NEEDS_CORE)
  for name in NEEDS_CORE:
    _assert_close(name, got[name], want[name])
  qrels, run = _random_run(np.random.default_rng(8), judged_all=True)
  names = ["Bpref", "infAP", "Judged@10"]
  want = _ir_values(names, qrels, run)
  got = jrn.evaluate_run(run, qrels, names)
  for name in names:
    _assert_close(name, got[name], want[name])


def test_names_ir_measures_has_no_provider_for():
  """RBP without rel is graded (ir_measures' reading of a missing rel), scaled as trec_eval's
  rbp; ERR and nDCG(dcg='exp-log2') without a cutoff read the whole list."""
  s, y = [[0.9, 0.8, 0.8, 0.1]], [[0, 2, 1, 3]]
  out = jaxrank.evaluate(s, y, ["RBP", "RBP(p=0.5)", "ERR", "nDCG(dcg='exp-log2')"])
  np.testing.assert_allclose(out["RBP"], jaxrank.rbp(s, y, graded=True), rtol=1e-6)
  np.testing.assert_allclose(out["RBP(p=0.5)"],
                             jaxrank.rbp(s, y, graded=True, persistence=0.5), rtol=1e-6)
  np.testing.assert_allclose(out["ERR"], jaxrank.err(s, y), rtol=1e-6)
  np.testing.assert_allclose(out["nDCG(dcg='exp-log2')"], jaxrank.ndcg(s, y, gain="exp2"),
                             rtol=1e-6)


def test_written_parameters_override_the_call_and_names_keep_their_spelling():
  s, y = [[0.9, 0.8, 0.7]], [[1, 2, 0]]
  out = jaxrank.evaluate(s, y, ["P@2", "P(rel=2)@2", "p@2", "MAP", "AP"], threshold=2)
  assert list(out) == ["P@2", "P(rel=2)@2", "p@2", "MAP", "AP"]
  assert float(out["P@2"][0]) == float(out["p@2"][0]) == 0.5  # the call's threshold=2
  assert float(out["P(rel=2)@2"][0]) == 0.5
  out = jaxrank.evaluate(s, y, ["P(rel=1)@2"], threshold=2)
  assert float(out["P(rel=1)@2"][0]) == 1.0  # written in the name: rel=1


@pytest.mark.parametrize("name, message", [
    ("P", "P needs its cutoff"),
    ("nDCG(foo=1)@10", "nDCG has no parameter 'foo'"),
    ("P(rel=1.5)@5", "rel must be int, got 1.5"),
    ("P(rel=0)@5", "rel must be a positive integer"),
    ("RBP(p=1.5)", r"p \(RBP's persistence\) must be in \(0, 1\)"),
    ("AP(judged_only=True)", "judged_only=True"),
    ("nDCG(dcg='exp')@5", "dcg must be one of 'log2', 'exp-log2'"),
    ("nDCG(gains={1:-2})", "gains must map integer grades"),
    ("P(rel=__import__('os'))@5", "the value of rel must be"),
    ("P(rel=2,rel=3)@5", "given twice"),
    ("P(cutoff=5)@5", "given twice"),
    ("P@0", "positive integer"),
    ("IPrec@1.5", r"recall level after '@' must be in \[0, 1\]"),
    ("NumQ@5", "NumQ takes no '@' parameter"),
    ("SetP", "needs runs and qrels"),
])
def test_bad_names_are_one_line_errors(name, message):
  with pytest.raises(ValueError, match=message):
    jaxrank.evaluate([[0.3, 0.2]], [[1, 0]], [name])


# ir_measures' registered names that jaxrank does not compute, written as the issue found them
# and in each name's bare, cutoff and parameter forms.
UNCOMPUTED = sorted(set(ir_measures.measures.registry) - set(_irnames.MEASURES)
                    - set(_irnames.ALIASES))
UNCOMPUTED_FORMS = ["NERR8(max_rel=3)@10", "SDCG(max_rel=3)@10", "P_IA@10", "alpha_nDCG@10"] + [
    form for m in UNCOMPUTED for form in (m, f"{m}@10", f"{m}(rel=2)@5")]


def test_every_uncomputed_name_is_listed():
  assert set(_irnames.NOT_COMPUTED) == set(UNCOMPUTED)


@pytest.mark.parametrize("name", UNCOMPUTED_FORMS)
def test_names_jaxrank_does_not_compute_say_so_in_every_door(name, tmp_path, capsys):
  """Not trec_eval's "unknown measure" list, nor P_IA read as trec_eval's P family: one line
  that names the ir_measures measure and points at the list of accepted names."""
  head = name.partition("(")[0].partition("@")[0]
  message = (f"{head} is an ir_measures measure that jaxrank does not compute (the ir_measures "
             f"names it accepts are listed in docs/ir-measures.md)")
  with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
    jaxrank.evaluate([[0.3, 0.2]], [[1, 0]], [name])
  with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
    jrn.evaluate_run({"q": {"a": 1.0}}, {"q": {"a": 1}}, ["map", name])
  files = _files(tmp_path, {"q": {"a": 1}}, {"q": {"a": 1.0}})
  for extra in ([], ["--chunk-lines", "5"]):  # an error before any file is read
    assert cli.main(["evaluate", "-m", "map", "-m", name, *extra, *files]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"jaxrank: error: ir_measures measure " \
        f"{name!r}: {message}\n"


def test_bpref_infap_judged_are_the_core_metrics():
  s, y = [[0.9, 0.8, 0.7, 0.1]], [[1, 0, 2, 0]]
  judged = [[True, True, True, False]]
  out = jaxrank.evaluate(s, y, ["Bpref", "infAP", "Judged@2"], judged=judged)
  np.testing.assert_allclose(out["Bpref"], jaxrank.bpref(s, y, judged=judged))
  np.testing.assert_allclose(out["infAP"], jaxrank.infap(s, y, judged=judged))
  np.testing.assert_allclose(out["Judged@2"], jaxrank.judged(s, y, k=2, judged=judged))


@pytest.mark.parametrize("name", sorted(set(RUN_NAMES + DENSE_NAMES + NEEDS_CORE + [
    "RBP", "RBP(p=0.8)", "RBP@10", "ERR", "NDCG@5", "Precision@3", "Recall@7", "BPref",
    "RPrec", "MAP", "MRR", " nDCG ( gains = {0: 0, 1: 1, 2: 3} ) @ 10 ", "SetF(rel=2,beta=0.5)",
    "SetP(relative=True)", "P(judged_only=False)@5", "NumRelRet(rel=1)", "NumRelRet(rel=3)",
    "SetRelP(relative=True)", "SetRelP(rel=2,relative=False)"])))
def test_the_grammar_reads_names_as_ir_measures_does(name):
  from ir_measures.measures.base import _NOT_PROVIDED

  measure = ir_measures.parse_measure(name.replace(" ", ""))
  want = {key: measure[key] for key in measure.SUPPORTED_PARAMS
          if measure[key] is not _NOT_PROVIDED}
  assert _irnames.params_of(name) == (measure.NAME, want)


def test_names_under_jit_and_vmap():
  import jax

  rng = np.random.default_rng(3)
  s = rng.integers(0, 4, (5, 9)).astype(np.float32)
  y = rng.integers(0, 3, (5, 9))
  names = ["nDCG(gains={0:0,1:1,2:3})@5", "P(rel=2)@3", "RBP(p=0.5,rel=1)", "AP"]
  eager = jaxrank.evaluate(s, y, names)
  jitted = jax.jit(lambda s, y: jaxrank.evaluate(s, y, names, max_relevant=9))(s, y)
  vmapped = jax.vmap(lambda s, y: jaxrank.evaluate(s, y, names, max_relevant=9))(s, y)
  for name in names:
    np.testing.assert_allclose(jitted[name], eager[name], rtol=1e-6, err_msg=name)
    np.testing.assert_allclose(vmapped[name], eager[name], rtol=1e-6, err_msg=name)
