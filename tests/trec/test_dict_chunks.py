"""Big pytrec_eval-style dicts in `jaxrank.numpy.evaluate_run`: more than DICT_CHUNK_ROWS rows are
evaluated a chunk of whole queries at a time (io.iter_dict_chunks), coding only judged and
possibly tied documents, and combined as the CLI combines a file's chunks. The numbers are the
whole dict's (to the last bit but for the sums the kernel rounds by batch shape), every option
and error included."""

import math

import numpy as np
import pytest

from jaxrank import io
from jaxrank import numpy as jrn
from jaxrank.io._judged import Judged, NeedsFullRead, iter_dict_chunks

MEASURES = ["map", "ndcg_cut_10", "recip_rank", "P_5", "recall_10", "bpref", "Rprec",
            "num_rel_ret", "num_ret", "gm_map", "num_q", "runid", "iprec_at_recall_0.50",
            "infAP", "ndcg", "dcg", "ideal_dcg"]
LONG = "clueweb09-en0000-00-"


def random_dicts(seed: int, queries: int = 30, levels: int = 6):
  """Runs with heavy score ties, long ids sharing a prefix, empty queries; graded qrels with
  unjudged (-1) documents, judged documents never retrieved, queries absent from either side."""
  rng = np.random.default_rng(seed)
  run, qrels = {}, {}
  for i in rng.permutation(queries):
    q = f"q{i}"
    n = int(rng.integers(0, 40))
    docs = [f"{LONG}{d:04d}" if d % 3 else f"d{d}" for d in rng.choice(200, n + 8, replace=False)]
    if i % 7 != 3:
      run[q] = {d: float(s) for d, s in zip(docs[:n], rng.integers(0, levels, n) / 4)}
    if i % 5 != 2:
      judged = [d for d in docs if rng.random() < 0.35]
      qrels[q] = {d: int(rng.choice([-1, 0, 1, 1, 2])) for d in judged}
  return run, qrels


def both(monkeypatch, run, qrels, measures, **kw):
  monkeypatch.setattr(jrn, "DICT_CHUNK_ROWS", 10**9)
  whole = jrn.evaluate_run(run, qrels, measures, **kw)
  monkeypatch.setattr(jrn, "DICT_CHUNK_ROWS", 17)  # a few queries per chunk
  chunked = jrn.evaluate_run(run, qrels, measures, **kw)
  return whole, chunked


def assert_same(whole, chunked):
  assert list(whole) == list(chunked)
  for name in whole:
    w, c = whole[name], chunked[name]
    if isinstance(w, dict):
      assert list(w) == list(c), name
      np.testing.assert_allclose(list(c.values()), list(w.values()), rtol=1e-12, atol=1e-15,
                                 err_msg=name)
    elif isinstance(w, str):
      assert c == w, name
    else:
      assert math.isclose(c, w, rel_tol=1e-12, abs_tol=1e-15), (name, w, c)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kw", [{}, {"ties": "first"}, {"float32": True}, {"max_docs": 7},
                                {"complete": True}, {"threshold": 2}, {"reduce": "mean"}])
def test_chunked_dicts_give_the_whole_dicts_numbers(monkeypatch, seed, kw):
  run, qrels = random_dicts(seed)
  assert_same(*both(monkeypatch, run, qrels, MEASURES, **kw))


@pytest.mark.parametrize("ties", ["average", "optimistic", "pessimistic"])
def test_tie_aware_policies_too(monkeypatch, ties):
  run, qrels = random_dicts(11)
  assert_same(*both(monkeypatch, run, qrels, ["map", "recip_rank", "P_5", "ndcg_cut_10"],
                    ties=ties))


@pytest.mark.parametrize("seed", range(4))
def test_only_judged_or_tied_documents_are_coded(seed):
  run, qrels = random_dicts(seed)
  q = io.as_qrels(qrels)
  judged = set(q.docid_vocab.tolist())
  qrels_order = {v: i for i, v in enumerate(q.docid_vocab.tolist())}
  seen = []
  for chunk in iter_dict_chunks(run, max_rows=17, qrels=q):
    vocab = chunk.docid_vocab.tolist()
    assert vocab[-1] == ""  # the uncoded documents' id
    assert len(set(vocab)) == len(vocab)  # one code per document
    first = [qrels_order[v] for v in vocab if v in judged]  # judged ones first, in qrels order
    assert first == sorted(first) and all(v in judged for v in vocab[:len(first)])
    qids = chunk.qid_vocab.tolist()
    seen += qids
    assert len(chunk) >= 17 or qids[-1] == [k for k, v in run.items() if v][-1]
    for code, qc, score in zip(chunk.docid_codes.tolist(), chunk.qid_codes.tolist(),
                               chunk.score.tolist()):
      scores = list(run[qids[qc]].values())
      if code == len(vocab) - 1:  # uncoded: neither judged nor tied within its query
        assert scores.count(score) == 1
      else:  # coded: its own id (judged, tied, or a few others sharing a hash bucket)
        assert run[qids[qc]][vocab[code]] == score
    uncoded = chunk.docid_codes == len(vocab) - 1
    coded_docs = {vocab[c] for c in chunk.docid_codes[~uncoded].tolist()}
    for qid in qids:  # every judged document of the chunk's queries is coded
      assert {d for d in run[qid] if d in judged} <= coded_docs
  assert seen == [k for k, v in run.items() if v]  # every query once, in the dict's order


def test_plain_chunks_code_every_document():
  run, _ = random_dicts(3)
  chunks = list(iter_dict_chunks(run, max_rows=17))
  assert sum(len(c) for c in chunks) == sum(map(len, run.values()))
  for c in chunks:
    qids, docs = c.qid_vocab.tolist(), c.docid_vocab.tolist()
    assert all(docs[d] in run[qids[q]] for q, d in zip(c.qid_codes, c.docid_codes))


def test_what_the_judged_coding_cannot_settle_is_coded_in_full(monkeypatch):
  run, qrels = random_dicts(5)
  qrels["q1"] = {"": 1, **qrels.get("q1", {})}  # an empty id in the qrels: no uncoded id then
  with pytest.raises(NeedsFullRead):
    next(iter_dict_chunks(run, qrels=io.as_qrels(qrels)))
  assert_same(*both(monkeypatch, run, qrels, MEASURES))

  def collide(*args):
    raise NeedsFullRead("a document id's hash equals a judged one's")

  run, qrels = random_dicts(6)
  whole, _ = both(monkeypatch, run, qrels, MEASURES)
  monkeypatch.setattr(Judged, "rows_of", collide)
  assert_same(whole, jrn.evaluate_run(run, qrels, MEASURES))


@pytest.mark.parametrize("complete", [False, True])
def test_ir_measures_and_jaxrank_names_are_chunked_too(monkeypatch, complete):
  run, qrels = random_dicts(7)
  chunks = []
  real = io.iter_dict_chunks

  def counted(*args, **kwargs):
    chunks.append(kwargs["qrels"] is not None)  # judged documents only, or every one coded
    return real(*args, **kwargs)

  monkeypatch.setattr(io, "iter_dict_chunks", counted)
  names = ["nDCG@10", "AP", "map", "NumQ", "NumRel", "RR@5", "Judged@10", "P(rel=2)@5", "Bpref",
           "RBP(p=0.8)", "ndcg@5", "mrr"]
  whole, chunked = both(monkeypatch, run, qrels, names, complete=complete)
  assert chunks and chunks[0]
  assert_same(whole, chunked)
  assert set(chunked["NumQ"].values()) == ({0, 1} if complete else {1})  # per query


@pytest.mark.parametrize("bad, message", [
    (float("nan"), "must be a number (the score), not NaN"),
    ("high", "must be a number (the score), got 'high'"),
    (True, "must be a number (the score), got True"),
])
def test_errors_are_the_whole_dicts(monkeypatch, bad, message):
  run, qrels = random_dicts(8)
  last = [k for k, v in run.items() if v][-1]
  run[last][next(iter(run[last]))] = bad
  errors = []
  for rows in (10**9, 17):
    monkeypatch.setattr(jrn, "DICT_CHUNK_ROWS", rows)
    with pytest.raises(ValueError, match="must be a number") as e:
      jrn.evaluate_run(run, qrels, ["map"])
    errors.append(str(e.value))
  assert errors[0] == errors[1] and message in errors[0] and repr(last) in errors[0]


def test_bad_doc_ids_and_max_rows(monkeypatch):
  run, qrels = random_dicts(9)
  last = [k for k, v in run.items() if v][-1]
  run[last]["bad\x00id"] = 1.0
  monkeypatch.setattr(jrn, "DICT_CHUNK_ROWS", 17)
  with pytest.raises(ValueError, match="contains a NUL character"):
    jrn.evaluate_run(run, qrels, ["map"])
  for bad in (0, -1, 1.5, True):
    with pytest.raises(ValueError, match="max_rows must be a positive int"):
      next(iter_dict_chunks(run, max_rows=bad))
