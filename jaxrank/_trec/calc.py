"""trec_eval's measures computed on the host: one function per measure, from a block of queries'
grades in rank order.

Each :class:`jaxrank._trec.table.Measure` record names its host calculation here (its ``host``
field), as trec_eval's measure table names each measure's ``calc`` function. A calculation takes
a :class:`Block` (the grades ``G[query, rank]`` of a block of queries, with their counts and
judgments, and the rank core's values for those queries) and the request's parameters, and
returns one array of per-query values per printed name (``P_5``, ``P_10``, ...). Grades follow
trec_eval's ``form_res_rels``: a judgment ``>= 0``, :data:`UNJUDGED` for every negative judgment
(in the pool, not judged), :data:`NOT_IN_QRELS` for a document the qrels do not list; ``G`` is
padded with :data:`NOT_IN_QRELS` past each query's ``counts``. All arithmetic is float64 in
trec_eval's order, so the values are trec_eval's to the last printed digit.

Example:
  >>> import numpy as np
  >>> from jaxrank._trec import calc as tm
  >>> G = np.array([[1, 0, -2, 2], [-1, 1, -2, -2]])  # two queries, grades in rank order
  >>> b = tm.Block(G=G, rel=G >= 1, counts=np.array([4, 2]), num_rel=np.array([2, 2]),
  ...              num_nonrel=np.array([1, 0]), threshold=1, jq=np.array([0, 0, 0, 1, 1, 1]),
  ...              jrel=np.array([1, 0, 2, -1, 1, 3]), core={})
  >>> tm.num_rel_ret(b, ())
  [array([2, 1])]
  >>> [v.tolist() for v in tm.unj(b, (1, 2))]
  [[0.0, 1.0], [0.0, 0.5]]
  >>> tm.relstring(b, (3,))[0].tolist()
  ['10-', '.1']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

RECALL_LEVELS = tuple(i / 10 for i in range(11))
# Grades of retrieved documents on the host (trec_eval's RELVALUE_UNJUDGED, RELVALUE_NONPOOL):
# every negative judgment reads as UNJUDGED, so no judgment can be taken for NOT_IN_QRELS.
UNJUDGED = -1
NOT_IN_QRELS = -2

Values = list[np.ndarray]  # per-query values, one array per printed name


@dataclasses.dataclass(frozen=True)
class Block:
  """A block of queries, as every host calculation reads it.

  ``G[query, rank]``: grades in rank order (see the module docstring); ``rel``: ``(G >=
  threshold) & (G >= 0)``; ``counts``: documents retrieved per query (after ``-M``);
  ``num_rel``/``num_nonrel``: judged relevant / judged non-relevant documents per query in the
  qrels; ``jq``/``jrel``: the block's judgments (query index within the block, grade);
  ``core``: the rank core's values ``(metric, k) -> [queries]`` for these queries.
  """

  G: np.ndarray
  rel: np.ndarray
  counts: np.ndarray
  num_rel: np.ndarray
  num_nonrel: np.ndarray
  threshold: float | int
  jq: np.ndarray
  jrel: np.ndarray
  core: dict


Host = Callable[[Block, tuple], Values]


def from_core(metric: str, cutoffs: bool) -> Host:
  """The calculation of a measure the rank core computes: its values ``core[(metric, k)]`` for
  each cutoff k (``cutoffs``), or ``core[(metric, None)]``."""
  if cutoffs:
    return lambda b, params: [b.core[(metric, k)] for k in params]
  return lambda b, params: [b.core[(metric, None)]]


def num_ret(b: Block, params: tuple) -> Values:
  """Documents retrieved (after ``-M``)."""
  return [b.counts.astype(np.int64)]


def num_rel(b: Block, params: tuple) -> Values:
  """R: relevant documents in the qrels (grade >= ``-l``)."""
  return [b.num_rel.astype(np.int64)]


def in_run_count(b: Block, params: tuple) -> Values:
  """1 for a query the run retrieves documents for, 0 for one only in the qrels (``-c``):
  ir_measures' ``NumQ`` per query."""
  return [(b.counts > 0).astype(np.int64)]


def in_run_num_rel(b: Block, params: tuple) -> Values:
  """R for a query the run retrieves documents for, 0 for one only in the qrels (``-c``):
  ir_measures' ``NumRel`` per query (trec_eval's ``num_rel`` is R for both)."""
  return [np.where(b.counts > 0, b.num_rel, 0).astype(np.int64)]


def num_rel_ret(b: Block, params: tuple) -> Values:
  """Relevant documents retrieved."""
  return [b.rel.sum(1).astype(np.int64)]


def num_nonrel_judged_ret(b: Block, params: tuple) -> Values:
  """Retrieved documents judged non-relevant: 0 <= grade < ``-l``."""
  return [((b.G >= 0) & (b.G < b.threshold)).sum(1).astype(np.int64)]


def unj(b: Block, params: tuple) -> Values:
  """Unjudged documents (not in the qrels, or judged negative) in the top k, over k."""
  G = b.G
  valid = np.arange(G.shape[1]) < b.counts[:, None]
  unjudged = np.cumsum(valid & (G < 0), axis=1)  # not in the qrels, or judged negative
  return [unjudged[:, min(k, G.shape[1]) - 1] / k for k in params]


def relative_p(b: Block, params: tuple) -> Values:
  """Relevant in the top k over min(k, R), from the core's recall@k: recall@k R / min(k, R)."""
  R = b.num_rel
  return [b.core[("recall", k)] * R / np.maximum(np.minimum(k, R), 1) for k in params]


def set_relative_p(b: Block, params: tuple) -> Values:
  """Relevant retrieved over min(retrieved, R)."""
  nrr = b.rel.sum(1)
  return [nrr / np.maximum(np.minimum(b.counts, b.num_rel), 1)]


def set_f(b: Block, params: tuple) -> Values:
  """trec_eval's (x + 1) P R / (x P + R) of set_P and set_recall, x = beta (not beta^2), in
  float64; 0 without a relevant document retrieved."""
  nrr = b.rel.sum(1)
  x = params[0]
  P, Rc = nrr / np.maximum(b.counts, 1), nrr / np.maximum(b.num_rel, 1)
  return [np.where(nrr > 0, (x + 1.0) * P * Rc / np.maximum(x * P + Rc, 1e-300), 0.0)]


def utility(b: Block, params: tuple) -> Values:
  """p1 relevant retrieved + p2 non-relevant retrieved + p3 relevant not retrieved + p4
  non-relevant not retrieved (collection size 0, as trec_eval without ``-N``); 0 for a query
  absent from the run (``-c``)."""
  p1, p2, p3, p4 = params
  counts, R = b.counts, b.num_rel
  nrr = b.rel.sum(1)
  value = p1 * nrr + p2 * (counts - nrr) + p3 * (R - nrr) + p4 * (nrr - counts - R)
  return [np.where(counts > 0, value, 0.0)]


def set_map(b: Block, params: tuple) -> Values:
  """set_P set_recall: (relevant retrieved / retrieved) (relevant retrieved / R)."""
  nrr = b.rel.sum(1)
  return [nrr / np.maximum(b.counts, 1) * nrr / np.maximum(b.num_rel, 1)]


def relstring(b: Block, params: tuple) -> Values:
  """The grades of the top n documents as a string: 0-9, '>' above 9, '-' not in the qrels,
  '.' judged negative."""
  n = params[0]
  top = b.G[:, :n]
  chars = np.full(top.shape, "-", dtype="U1")  # NOT_IN_QRELS
  chars[top > 9] = ">"
  digit = (top >= 0) & (top <= 9)
  chars[digit] = np.asarray(top[digit] + ord("0"), np.uint32).view("U1")
  chars[top == UNJUDGED] = "."
  return [np.array(["".join(row[:min(n, c)]) for row, c in zip(chars.tolist(), b.counts)],
                   dtype=object)]


# bpref, inf_ap and rbp are also the rank core's formulas (jaxrank._core.formulas.bpref, infap,
# rbp), written twice on purpose: here trec_eval's float64 prefix counts over each query's
# ordered grades, in trec_eval's order of operations (its values to the last digit, with no
# kernel call for a run asking host measures only); there formulas over rank bounds that also
# take the tie-aware policies. On ordered runs the two are equal:
# tests/core/test_judged.py::test_host_bpref_infap_rbp_hold_the_core_formulas.


def bpref(b: Block, params: tuple) -> Values:
  """(1/R) sum over retrieved relevant documents of 1 - min(n, R) / min(N, R), n the judged
  non-relevant documents above it, N those of the query (the term is 1 when n = 0)."""
  G, rel, R = b.G, b.rel, b.num_rel
  judged_nonrel = (G >= 0) & (G < b.threshold)
  above: np.ndarray = np.cumsum(judged_nonrel, axis=1) - judged_nonrel
  denom = np.minimum(b.num_nonrel, R)[:, None]
  term = np.where(above > 0, 1 - np.minimum(above, R[:, None]) / np.maximum(denom, 1), 1.0)
  return [np.where(rel, term, 0.0).sum(1) / np.maximum(R, 1)]


def inf_ap(b: Block, params: tuple) -> Values:
  """Inferred AP (Yilmaz & Aslam, trec_eval's form): (1/R) sum over relevant documents at rank
  j + 1 of 1/(j + 1) + j/(j + 1) (r + n + u)/j (r + eps)/(r + n + 2 eps), r, n, u the
  relevant, judged non-relevant and pooled-unjudged documents above it (1 at the top)."""
  G, rel = b.G, b.rel
  hits = np.cumsum(rel, axis=1)  # relevant in the top i + 1
  eps = 1e-5
  nonrel = np.cumsum((G >= 0) & (G < b.threshold), axis=1)  # before a relevant one: same
  unjudged = np.cumsum(G == UNJUDGED, axis=1)
  j = np.arange(hits.shape[1], dtype=np.float64)[None, :]
  before = hits - 1.0
  term = 1.0 / (j + 1) + (j / (j + 1)) * ((before + nonrel + unjudged) / np.maximum(j, 1)) * (
      (before + eps) / (before + nonrel + 2 * eps))
  term = np.where(j == 0, 1.0, term)
  return [np.where(rel, term, 0.0).sum(1) / np.maximum(b.num_rel, 1)]


def bin_g(b: Block, params: tuple) -> Values:
  """(1/R) sum over relevant retrieved documents of 1 / log2(2 + non-relevant above it)."""
  rel = b.rel
  hits = np.cumsum(rel, axis=1)
  above = np.arange(hits.shape[1])[None, :] + 1 - hits  # documents above, not relevant
  return [np.where(rel, 1.0 / np.log2(2.0 + above), 0.0).sum(1) / np.maximum(b.num_rel, 1)]


def rprec_mult(b: Block, params: tuple) -> Values:
  """Precision at c = floor(x R + 0.9) for each multiple x (0 when c = 0)."""
  rel, R = b.rel, b.num_rel
  nrr = rel.sum(1)
  hits = np.cumsum(rel, axis=1)
  out = []
  for x in params:
    c = np.floor(x * R + 0.9).astype(np.int64)
    at = np.take_along_axis(hits, np.clip(c - 1, 0, hits.shape[1] - 1)[:, None], 1)[:, 0]
    at = np.where(c > hits.shape[1], nrr, at)
    out.append(np.where(c > 0, at / np.maximum(c, 1), 0.0))
  return out


def iprec_at_recall(b: Block, params: tuple) -> Values:
  """Interpolated precision at each recall level x: the largest precision at or after the
  c-th relevant document, c = round(x R) (trec_eval 10's lround); 0 when c exceeds the relevant
  documents retrieved."""
  rel, R, counts = b.rel, b.num_rel, b.counts
  nrr = rel.sum(1)
  hits = np.cumsum(rel, axis=1)
  prec = hits / np.arange(1, hits.shape[1] + 1)
  prec = np.where(np.arange(hits.shape[1]) < counts[:, None], prec, 0.0)
  best = np.maximum.accumulate(prec[:, ::-1], axis=1)[:, ::-1]  # max precision at or after
  out = []
  for x in params:
    c = np.floor(x * R + 0.5).astype(np.int64)  # trec_eval 10: lround
    first = np.sum(hits < np.maximum(c, 1)[:, None], axis=1)  # position of the c-th relevant
    v = np.take_along_axis(best, np.minimum(first, best.shape[1] - 1)[:, None], 1)[:, 0]
    out.append(np.where((c <= nrr) & (nrr > 0), v, 0.0))
  return out


def eleven_pt_avg(b: Block, params: tuple) -> Values:
  """The mean of :func:`iprec_at_recall` at the levels 0.0, 0.1, ..., 1.0."""
  return [np.mean(iprec_at_recall(b, RECALL_LEVELS), axis=0)]


def _dcg_tables(G, counts, jq, jrel):
  """Host DCG prefix sums (trec_eval's double arithmetic): the run's ``dcg[q, i]`` over its top
  i documents (gain = grade > 0), the ideal's ``idcg[q, i]``, the ideal grades sorted
  descending, and the number of positive grades per query."""
  nq = counts.size
  pos = jrel > 0
  q, g = jq[pos], jrel[pos]
  order = np.lexsort((-g, q))
  q, g = q[order], g[order]
  npos = np.bincount(q, minlength=nq)
  width = max(int(npos.max()) if nq else 0, 1)
  first = np.cumsum(npos) - npos
  ideal = np.zeros((nq, width))
  ideal[q, np.arange(q.size) - first[q]] = g
  disc = 1.0 / np.log2(np.arange(2, max(width, G.shape[1]) + 2))
  idcg = np.concatenate([np.zeros((nq, 1)), np.cumsum(ideal * disc[:width], axis=1)], axis=1)
  gains = np.where((G > 0) & (np.arange(G.shape[1]) < counts[:, None]), G, 0)
  dcg = np.concatenate([np.zeros((nq, 1)), np.cumsum(gains * disc[:G.shape[1]], axis=1)],
                       axis=1)
  return dcg, idcg, ideal, npos, gains


def ideal_dcg(b: Block, params: tuple) -> Values:
  """trec_eval 10's ideal_dcg: the DCG of every positive judgment of the query sorted by grade,
  gain = grade, 1 / log2(rank + 1), added in that order (not cut by ``-M``; ``-l`` ignored)."""
  nq = b.counts.size
  positive = b.jrel > 0
  q, g = b.jq[positive], b.jrel[positive]
  order = np.lexsort((-g, q))
  q, g = q[order], g[order]
  npos = np.bincount(q, minlength=nq)
  at = np.arange(q.size) - (np.cumsum(npos) - npos)[q]  # rank - 1 in the ideal order
  terms = np.zeros((nq, max(int(npos.max()) if nq else 0, 1)))
  terms[q, at] = g / np.log2(at + 2.0)  # trec_eval's gain / log2(i + 2)
  return [np.cumsum(terms, axis=1)[:, -1]]  # added in rank order, as trec_eval


def rndcg(b: Block, params: tuple) -> Values:
  """trec_eval's Rndcg: NDCG (DCG of the top b over the ideal DCG cut at b) averaged over the
  cutoffs b where the ideal gain drops (after each positive grade level), plus b = num_ret when
  the positive grades end before num_ret - 1; 0 without relevant documents."""
  counts = b.counts
  dcg, idcg, ideal, npos, _ = _dcg_tables(b.G, counts, b.jq, b.jrel)
  nq, width = ideal.shape
  rows, every = np.arange(nq)[:, None], np.arange(nq)
  nxt = np.concatenate([ideal[:, 1:], np.zeros((nq, 1))], axis=1)
  boundary = (ideal > 0) & (nxt != ideal)  # after the last document of each grade level
  cut = np.minimum(np.arange(1, width + 1)[None, :], counts[:, None])
  ndcg = dcg[rows, cut] / np.where(idcg[:, 1:] > 0, idcg[:, 1:], 1.0)
  total = np.where(boundary, ndcg, 0.0).sum(1)
  final = counts > npos + 1  # trec_eval's implied R level at num_ret
  total = total + np.where(final, dcg[every, counts] / np.maximum(idcg[every, npos], 1e-300),
                           0.0)
  records = boundary.sum(1) + final
  return [np.where((b.num_rel > 0) & (records > 0), total / np.maximum(records, 1), 0.0)]


def gain_g(b: Block, params: tuple) -> Values:
  """trec_eval's G (Moffat): sum of gain / log2(2 + cost so far - gain so far), cost =
  max(ideal gain, 1) per rank, over the total ideal gain."""
  _, _, ideal, _, gains = _dcg_tables(b.G, b.counts, b.jq, b.jrel)
  width = gains.shape[1]
  best = np.zeros(gains.shape)
  best[:, :min(width, ideal.shape[1])] = ideal[:, :width]
  cost = np.cumsum(np.maximum(best, 1.0), axis=1)
  got = np.cumsum(gains, axis=1)
  terms = np.where(gains != 0, gains / np.log2(2.0 + cost - got), 0.0).sum(1)
  total = ideal.sum(1)
  return [np.where(total > 0, terms / np.where(total > 0, total, 1.0), 0.0)]


RBP_P = 0.9  # trec_eval's default (its rbp.p= parameter is not supported)


def rbp(b: Block, params: tuple) -> Values:
  """trec_eval's rbp, p = 0.9: (1 - p) sum of gain p^(rank - 1), grades scaled to [0, 1] by the
  query's largest grade when it is above 1."""
  G, counts, p = b.G, b.counts, RBP_P
  nq, width = G.shape
  valid = np.arange(width) < counts[:, None]
  weight = p ** np.arange(width)
  top = np.zeros(nq)
  np.maximum.at(top, b.jq, b.jrel.astype(np.float64))
  scale = np.where(top > 1, top, 1.0)[:, None]
  gains = np.where(valid & (G > 0), G / scale, 0.0)
  return [(1 - p) * (gains * weight).sum(1)]


def rbp_resid(b: Block, params: tuple) -> Values:
  """trec_eval's rbp_resid, p = 0.9: p^num_ret + (1 - p) sum of p^(rank - 1) over unjudged
  retrieved documents (0 when none is unjudged)."""
  G, counts, p = b.G, b.counts, RBP_P
  width = G.shape[1]
  valid = np.arange(width) < counts[:, None]
  weight = p ** np.arange(width)
  unjudged = valid & (G < 0)
  resid = p ** counts + (1 - p) * np.where(unjudged, weight, 0.0).sum(1)
  return [np.where(unjudged.any(1), resid, 0.0)]


def ndcg_rel(b: Block, params: tuple) -> Values:
  """trec_eval's ndcg_rel: NDCG at the rank of each relevant document (ideal cut there, or at
  the number of positive grades), unretrieved ones at the end of the list, averaged."""
  counts = b.counts
  dcg, idcg, _, npos, gains = _dcg_tables(b.G, counts, b.jq, b.jrel)
  nq, width = gains.shape
  every = np.arange(nq)
  at = np.minimum(np.arange(1, width + 1)[None, :], npos[:, None])
  here = dcg[:, 1:] / np.maximum(np.take_along_axis(idcg, at, axis=1), 1e-300)
  found = gains > 0
  total = np.where(found, here, 0.0).sum(1)
  total = total + (npos - found.sum(1)) * dcg[every, counts] / np.maximum(idcg[every, npos],
                                                                          1e-300)
  return [np.where(total > 0, total / np.maximum(npos, 1), 0.0)]
