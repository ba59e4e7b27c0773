"""The metric table drives every layer: signatures, names, soft forms, trec and linkpred names;
ERR and RBP against the cascade / enumeration reference and against ir_measures."""

import inspect

import numpy as np
import pytest

import jaxrank
from jaxrank import linkpred
from jaxrank._core import metrics as _metrics
from jaxrank._core import options as _options
from jaxrank._core import table as _table
from jaxrank._trec import table as _trec
from metric_table import NAMES
from reference import reference


def test_every_record_is_a_public_function_with_exact_signature():
  for name, record in _table.METRICS.items():
    fn = getattr(jaxrank, name)
    params = list(inspect.signature(fn).parameters)
    assert params[:2] == ["scores", "labels"]
    assert set(params[2:]) == set(_options.COMMON) | set(record.options), name
    assert name in jaxrank.__all__ and ">>>" in fn.__doc__


def test_an_option_the_metric_does_not_read_is_an_error():
  s, y = [[0.3, 0.2]], [[1, 0]]
  with pytest.raises(TypeError, match=r"ndcg\(\) takes no option 'beta'"):
    jaxrank.ndcg(s, y, beta=2)
  with pytest.raises(ValueError, match="option beta=2 is read by none of the requested metrics"):
    jaxrank.evaluate(s, y, ["ndcg", "map"], beta=2)
  out = jaxrank.evaluate(s, y, ["ndcg", "fbeta"], beta=2)  # some metric reads it: fine
  assert set(out) == {"ndcg", "fbeta"}
  jaxrank.evaluate(s, y, ["ndcg"], beta=1.0)  # the default is no setting


def test_names_soft_trec_and_linkpred_come_from_the_table():
  for alias, name in _table.ALIASES.items():
    assert jaxrank.parse_metric(alias) == (name, None)
  assert jaxrank.parse_metric("ERR@20") == ("err", 20)
  soft = {n for n in jaxrank.__all__ if n.startswith("soft_") and not n.endswith("_loss")
          and n not in ("soft_ranks", "soft_sort")}  # the operators, not metrics
  assert soft == set(_table.SOFT)
  assert {m.name: m.core for m in _trec.MEASURES.values() if m.core} == _table.TREC
  assert set(linkpred.ALIASES.values()) == set(_table.LINKPRED)


def test_err_and_rbp_match_the_cascade_under_every_tie_policy():
  # One batch, one compile per (policy, options): lists of 6 items on 3 score levels (many ties).
  rng = np.random.default_rng(5)
  s = rng.integers(0, 3, (12, 6)).astype(np.float32)
  y = rng.integers(0, 5, (12, 6))
  w = rng.random((12, 6)) < 0.85
  cases = [("average", opts) for opts in ({"max_grade": 2.0}, {"persistence": 0.7},
                                          {"graded": True})]
  cases += [(ties, {}) for ties in ("average", "optimistic", "pessimistic", "first")]
  for ties, opts in cases:
    names = ["err", "err@3", "rbp", "rbp@2", "rbp_residual", "rbp_residual@4"]
    out = jaxrank.evaluate(s, y, names, where=w, ties=ties, **opts)
    for name in names:
      base, _, cut = name.partition("@")
      want = reference(base, s, y, w, ties=ties, k=int(cut) if cut else None, **opts)
      np.testing.assert_allclose(np.asarray(out[name]), want, rtol=2e-5, atol=2e-6,
                                 err_msg=f"{name} {opts} {ties}")


def test_err_with_many_tied_relevant_items_jit_and_vmap():
  s = np.zeros((2, 7), np.float32)
  s[1, :3] = 1.0
  y = np.array([[4, 3, 0, 2, 1, 0, 4], [2, 2, 1, 0, 3, 0, 0]])
  want = reference("err", s, y, k=5)
  np.testing.assert_allclose(jaxrank.err(s, y, k=5), want, rtol=2e-5)
  import jax
  jitted = jax.jit(lambda s, y: jaxrank.err(s, y, k=5, max_relevant=7))(s, y)
  np.testing.assert_allclose(jitted, want, rtol=2e-5)
  vmapped = jax.vmap(lambda s, y: jaxrank.err(s, y, k=5))(s, y)
  np.testing.assert_allclose(vmapped, want, rtol=2e-5)


def _random_run(rng, queries=8, docs=30):
  qrels, run = {}, {}
  for q in range(queries):
    qid = str(101 + q)  # gdeval reads numeric topics only
    judged = rng.choice(docs, size=int(rng.integers(1, docs)), replace=False)
    qrels[qid] = {f"d{d}": int(rng.integers(0, 5)) for d in judged}
    retrieved = rng.choice(docs, size=int(rng.integers(1, docs)), replace=False)
    scores = rng.permutation(len(retrieved)).astype(float)  # distinct: no tie-order question
    run[qid] = {f"d{d}": float(v) for d, v in zip(retrieved, scores)}
  return qrels, run


def _dense(qrels, run, qid):
  docs = sorted(run[qid])
  missing = [d for d in qrels[qid] if d not in run[qid] and qrels[qid][d] > 0]
  scores = [run[qid][d] for d in docs] + [-1e9] * len(missing)
  labels = [max(qrels[qid].get(d, 0), 0) for d in docs] + [qrels[qid][d] for d in missing]
  where = [True] * len(docs) + [False] * len(missing)
  return scores, labels, where


def test_err_matches_ir_measures_gdeval():
  ir_measures = pytest.importorskip("ir_measures")
  import shutil
  if not shutil.which("perl"):
    pytest.skip("gdeval needs perl")
  rng = np.random.default_rng(11)
  qrels, run = _random_run(rng)
  for cut in (5, 20):
    want = {m.query_id: m.value for m in ir_measures.iter_calc(
        [ir_measures.parse_measure(f"ERR@{cut}")], qrels, run)}
    for qid in qrels:
      scores, labels, where = _dense(qrels, run, qid)
      r = jaxrank.from_sparse([scores], [list(range(len(labels)))], [labels], where=[where])
      got = float(jaxrank.err(r, k=cut)[0])
      assert abs(got - want[qid]) < 1e-5, (qid, cut, got, want[qid])  # gdeval prints 5 decimals


def test_names_cover_the_table():
  assert NAMES == list(_table.NAMES) and len(set(NAMES)) == len(NAMES)
  assert all(callable(getattr(_metrics, name)) for name in NAMES)
