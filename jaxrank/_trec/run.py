"""Runs evaluated against qrels the trec_eval way (:func:`evaluate_requests`), on the rank core.

A run and qrels (columns of string ids, see :mod:`jaxrank.io`) are ordered on the host the
trec_eval way (score descending, then doc id descending, scores compared as float64 or, like
pytrec_eval, as float32) by the host ranker (:mod:`jaxrank._host.ranks`). That one sort gives
the rank (or, for the tie-aware policies, the tie group) of every relevant document, and the
rank metrics (``map``, ``P``, ``ndcg``, ...) are computed from those ranks by one jitted call of
the rank core per chunk of queries (:func:`jaxrank._host.scoring.score_ranks`), in float64:
O(documents log documents) in all, whatever the number of relevant documents. Relevant
documents absent from the run are part of each query's catalog as unranked items, so they count
in R and in the ideal DCG. The judgment-based trec_eval measures that are prefix counts over the
ordered list (``bpref``, ``infAP``, ``iprec_at_recall``, the ``num_*`` counts, ...) are computed
on the host from the same ordered grades (:mod:`jaxrank._trec.calc`), with trec_eval's
``form_res_rels`` reading of the qrels: every negative judgment is "in the pool, unjudged".
Summaries add the queries in trec_eval's order (query ids sorted), so the output depends on the
data only, not on the order of the lines.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Sequence
from typing import cast

import numpy as np

from jaxrank._core import checks as _checks
from jaxrank._core import options as _options
from jaxrank._core.rankform import POOLED, ZERO
from jaxrank._host import batches, scoring
from jaxrank._host import ranks as _hostranks
from jaxrank._trec import calc
from jaxrank._trec.calc import NOT_IN_QRELS, UNJUDGED
from jaxrank._trec import table
from jaxrank._trec.table import ORDERED, TIES, Request
from jaxrank.io import Qrels, Run


@dataclasses.dataclass
class Result:
  """Per-query values and their summaries, in print order."""

  qids: list[str]
  per_query: dict[str, np.ndarray]  # printed name -> [queries]
  summary: dict[str, float | int | str]
  integer: set[str]  # printed names whose values are counts
  core: dict[tuple, np.ndarray] = dataclasses.field(default_factory=dict)  # (name, k) -> values
  names: list[str] = dataclasses.field(default_factory=list)  # every printed name, in order


def _some(vocab, shown: int = 3) -> str:
  """``queries 'a', 'b', 'c', ... (10 in all)`` (the first in byte order) for error messages."""
  if not len(vocab):
    return "no queries"
  names = ", ".join(repr(vocab[int(i)]) for i in vocab.argsort()[:shown])
  more = f", ... ({len(vocab)} in all)" if len(vocab) > shown else ""
  return f"quer{'y' if len(vocab) == 1 else 'ies'} {names}{more}"


def check_level(threshold) -> float | int:
  """trec_eval's ``-l``: a positive number (relevant means grade >= it); a level above every
  possible grade is kept as 2**62 (nothing is relevant), so int64 comparisons cannot overflow."""
  # (cast: numbers.Real declares no comparison with an int; every real number has one)
  if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, numbers.Real) or (
      not cast(float, threshold) > 0):
    raise ValueError(f"threshold (trec_eval's -l) must be a positive number, got {threshold!r}")
  return min(cast(float, threshold), 2**62)


def _duplicates(q: np.ndarray, doc: np.ndarray, kept: np.ndarray, qv, doc_name, n_docs: int,
                what: str) -> None:
  again = (np.bincount(doc, minlength=n_docs) > 1)[doc]  # only documents listed twice anywhere
  if not again.all():
    q, doc = q[again], doc[again]
  found = _hostranks.first_duplicate(q, doc, n_docs)
  if found is not None:
    raise ValueError(f"{what}: query {qv[int(kept[found[0]])]!r} lists document "
                     f"{doc_name(int(found[1]))!r} twice")


def evaluate_requests(run: Run, qrels: Qrels, requests: Sequence[Request], *,
                      ties: str = "trec", float32: bool = False, max_docs: int | None = None,
                      complete: bool = False, threshold: float = 1, chunk: int = 4096,
                      progress: Callable[[int, int], None] | None = None,
                      core_specs: Sequence[tuple[str, int | None]] = (), options=None,
                      sources: tuple[str, str] = ("run", "qrels"),
                      unique_docs: bool = False, uncoded: int | None = None,
                      shapes: list | None = None) -> Result:
  """Evaluates a run against qrels the trec_eval way (see the module docstring).

  In steps: :func:`_match_queries` (the queries evaluated, and their rows),
  :func:`_match_documents` (one document code space), :func:`_rank_documents` (each query's
  documents in rank order, with their rank bounds), :func:`_judgments_in_rank_order` (the
  grades of the ranked documents), :func:`_core_values` (the rank core's metrics) and
  :func:`_host_values` (each measure's ``host`` calculation), then :func:`summarize`.

  Args:
    ties: ``"trec"`` (score desc, doc id desc), ``"first"`` (score desc, then input order), or a
      tie-aware policy of the rank core (``"average"``, ``"optimistic"``, ``"pessimistic"``).
    float32: compare scores as float32 (pytrec_eval) instead of float64 (trec_eval 10).
    max_docs: keep the top ``max_docs`` documents of each query (trec_eval ``-M``).
    complete: evaluate every qrels query, absent ones scoring 0 but for ``num_rel`` and
      ``ideal_dcg`` (trec_eval ``-c``).
    threshold: relevant means grade >= threshold (trec_eval ``-l``); NDCG ignores it.
    core_specs, options: extra rank-core metrics ``(name, k)`` (jaxrank's names) and the
      :class:`~jaxrank._core.formulas.Options` they use; their values are in ``Result.core``.
    sources: how error messages name the run and the qrels (e.g. their file names).
    unique_docs: the caller knows no query lists a document twice (a run from a dict), so
      that check is skipped.
    uncoded: the run's code for the documents its reader did not code because no query judges
      them and none ties (:func:`jaxrank.io.iter_judged_run_chunks`, which also checked that no
      query lists a document twice).
    shapes: the kernel's padded shapes of earlier calls, shared by the calls on the chunks of
      one run (see :func:`jaxrank._host.scoring.score_ranks`).
  """
  if ties not in TIES:
    raise ValueError(f"ties must be one of {list(TIES)}, got {ties!r}")
  max_docs = _checks.check_k(max_docs, "max_docs")
  if max_docs is not None:
    max_docs = min(max_docs, len(run))  # a larger cut keeps everything (and fits in int64)
  threshold = check_level(threshold)
  ordered = ties in ORDERED
  for r in requests:
    if not ordered and r.measure.needs_order:
      raise ValueError(f"measure {r.measure.name!r} needs an order of the documents: ties "
                       f"must be 'trec' or 'first' (--ties trec on the command line), got "
                       f"{ties!r}")
  queries = _match_queries(run, qrels, complete=complete, sources=sources)
  docs = _match_documents(run, qrels, queries, source=sources[1])
  ranked = _rank_documents(run, qrels, queries, docs, ties=ties, float32=float32,
                           max_docs=max_docs, unique_docs=unique_docs or uncoded is not None,
                           source=sources[0], uncoded=uncoded)
  grades, item_of_j = _judgments_in_rank_order(queries, docs, ranked)
  specs = table.core_specs(requests) + tuple(core_specs)
  if specs:
    options = options or _options.make_options(threshold=threshold,
                                                ties="first" if ordered else ties)
  core_values = _core_values(specs, queries, ranked, item_of_j, options=options,
                             resolved=ordered, chunk=chunk, progress=progress, shapes=shapes)
  values_of = _host_values(requests, queries, ranked, grades, core_values, threshold=threshold)
  per_query, summary, integer = summarize(values_of, requests, queries.nq, run.tag, qrels,
                                          complete)
  names = [n for r in requests for n in r.names()]
  qv = qrels.qid_vocab
  return Result(qids=[qv[int(c)] for c in queries.kept], per_query=per_query, summary=summary,
                integer=integer, core=core_values, names=names)


@dataclasses.dataclass(frozen=True)
class _Queries:
  """The evaluated queries (indices 0 .. nq - 1, in strcmp order of their ids) and the run's
  and the qrels' rows that belong to them."""

  kept: np.ndarray  # the qrels code of each evaluated query
  rq: np.ndarray  # run rows: query index, document code (the run's), score
  rdoc: np.ndarray
  rscore: np.ndarray
  jrows: np.ndarray  # qrels rows kept (bool mask over the qrels), and their query index, grade
  jq: np.ndarray
  jrel: np.ndarray

  @property
  def nq(self) -> int:
    return self.kept.size


def _match_queries(run: Run, qrels: Qrels, *, complete: bool,
                   sources: tuple[str, str]) -> _Queries:
  """The queries of the qrels that are also in the run (every qrels query with ``complete``,
  trec_eval's ``-c``), in strcmp order, with the run and qrels rows of those queries.

  Ids are the reader's integer codes: no id string is sorted or compared here. An error names
  a few queries of each side when the run and the qrels share none.
  """
  qv = qrels.qid_vocab
  run_q = qv.index(run.qid_vocab)  # each run query's code in the qrels, -1 if it has none
  keep_q = np.zeros(len(qv), bool)
  keep_q[run_q[run_q >= 0]] = True
  if complete:
    keep_q[:] = True
  if not keep_q.any():  # no query in common, or (with complete) qrels without any query
    run_name, qrels_name = (f" {s}" if s != kind else "" for s, kind in zip(
        sources, ("run", "qrels")))
    raise ValueError(f"no query of the run{run_name} ({_some(run.qid_vocab)}) has judgments in "
                     f"the qrels{qrels_name} ({_some(qv)}); nothing to evaluate")
  by_bytes = qv.argsort()
  kept = by_bytes[keep_q[by_bytes]]  # qrels codes of the evaluated queries, in strcmp order
  remap = np.full(len(qv) + 1, -1)  # the last entry maps the run's -1 (unjudged query)
  remap[kept] = np.arange(kept.size)
  jq = remap[qrels.qid_codes]
  rq = remap[run_q][run.qid_codes]
  rows = rq >= 0
  if rows.all():  # the usual case: every run query is judged (no 10M-row copies)
    rq, rdoc, rscore = rq, run.docid_codes, run.score
  else:
    rq, rdoc, rscore = rq[rows], run.docid_codes[rows], run.score[rows]
  jrows = jq >= 0
  return _Queries(kept=kept, rq=rq, rdoc=rdoc, rscore=rscore, jrows=jrows, jq=jq[jrows],
                  jrel=qrels.rel[jrows])


@dataclasses.dataclass(frozen=True)
class _Documents:
  """One document code space for both sides: the run's codes, then the qrels documents the run
  never retrieved (``jdoc``: each kept judgment's document; ``n``: codes in all)."""

  jdoc: np.ndarray
  n: int
  name: Callable[[int], str]  # a code's document id, for error messages


def _match_documents(run: Run, qrels: Qrels, queries: _Queries, *, source: str) -> _Documents:
  """The judgments' documents in the run's document codes (see :class:`_Documents`); a query
  judging a document twice is an error naming ``source`` (the qrels)."""
  rv, qdv = run.docid_vocab, qrels.docid_vocab
  in_run = rv.index(qdv)
  jdoc = np.where(in_run >= 0, in_run, len(rv) + np.arange(len(qdv)))[
      qrels.docid_codes[queries.jrows]]
  docs = _Documents(jdoc=jdoc, n=max(len(rv) + len(qdv), 1),
                    name=lambda d: rv[d] if d < len(rv) else qdv[d - len(rv)])
  _duplicates(queries.jq, jdoc, queries.kept, qrels.qid_vocab, docs.name, docs.n, source)
  return docs


@dataclasses.dataclass(frozen=True)
class _Ranked:
  """The retrieved documents in rank order, grouped by query (after ``max_docs``): query index,
  document code, position 0, 1, ... within the query, documents per query, and the 1-based rank
  bounds of each (its position, or its tie group's under a tie-aware policy)."""

  rq: np.ndarray
  rdoc: np.ndarray
  pos: np.ndarray
  counts: np.ndarray
  lo: np.ndarray
  hi: np.ndarray


def _rank_documents(run: Run, qrels: Qrels, queries: _Queries, docs: _Documents, *, ties: str,
                    float32: bool, max_docs: int | None, unique_docs: bool,
                    source: str, uncoded: int | None = None) -> _Ranked:
  """Each query's documents in rank order by the host ranker
  (:func:`jaxrank._host.ranks.ranked_order`: trec_eval's order, input order for ``"first"``),
  cut to the top ``max_docs``, with their rank bounds; a query listing a document twice is an
  error naming ``source`` (the run) unless ``unique_docs``."""
  nq = queries.nq
  keys = _hostranks.order_keys(queries.rscore, float32)
  order = _hostranks.ranked_order(queries.rq, keys, queries.rdoc, run.docid_vocab, nq, ties=ties,
                                  uncoded=uncoded)
  rq, rdoc, keys = queries.rq[order], queries.rdoc[order], keys[order]
  if not unique_docs:  # rq grouped now: a faster check
    _duplicates(rq, rdoc, queries.kept, qrels.qid_vocab, docs.name, docs.n, source)
  counts = np.bincount(rq, minlength=nq)
  starts = np.cumsum(counts) - counts
  pos = np.arange(rq.size)
  pos -= starts[rq]
  if max_docs is not None:
    cut = pos < max_docs
    rq, rdoc, keys, pos = rq[cut], rdoc[cut], keys[cut], pos[cut]
    counts = np.minimum(counts, max_docs)
  # Rank bounds of each retrieved document: its position, or its tie group's (contiguous here).
  if ties in ORDERED:
    lo = hi = pos + 1
  else:
    lo, hi = _hostranks.tie_bounds(rq, keys, pos)
  return _Ranked(rq=rq, rdoc=rdoc, pos=pos, counts=counts, lo=lo, hi=hi)


def _judgments_in_rank_order(queries: _Queries, docs: _Documents,
                             ranked: _Ranked) -> tuple[np.ndarray, np.ndarray]:
  """``(grades, item_of_j)``: the grade of each retrieved document in rank order (trec_eval's
  form_res_rels: the judgment, :data:`UNJUDGED` for every negative judgment, in the pool but
  not judged, or :data:`NOT_IN_QRELS`), and the retrieved row of each judgment (-1: none)."""
  jq, jrel, D = queries.jq, queries.jrel, docs.n
  rq, rdoc = ranked.rq, ranked.rdoc
  jkey = jq.astype(np.int64) * D + docs.jdoc
  jorder = np.argsort(jkey)
  jkey_sorted = jkey[jorder]
  # Only retrieved documents judged for some query can have a judgment: look up just those.
  judged_doc = np.zeros(D, bool)
  judged_doc[docs.jdoc] = True
  maybe = np.flatnonzero(judged_doc[rdoc])
  rkey = rq[maybe].astype(np.int64) * D + rdoc[maybe]
  at = np.minimum(np.searchsorted(jkey_sorted, rkey), max(jkey.size - 1, 0))
  hit = (jkey_sorted[at] == rkey) if jkey.size else np.zeros(rkey.size, bool)
  grades = np.full(rq.size, NOT_IN_QRELS, np.int64)
  grades[maybe[hit]] = np.maximum(jrel[jorder][at[hit]], UNJUDGED)
  item_of_j = np.full(jkey.size, -1)  # the retrieved document of each judgment, if any
  item_of_j[jorder[at[hit]]] = maybe[hit]
  return grades, item_of_j


def _core_values(specs: tuple, queries: _Queries, ranked: _Ranked, item_of_j: np.ndarray, *,
                 options, resolved: bool, chunk: int,
                 progress: Callable[[int, int], None] | None,
                 shapes: list | None = None) -> dict[tuple, np.ndarray]:
  """The rank core's values ``(metric, k) -> [queries]`` of ``specs``, by
  :func:`jaxrank._host.scoring.score_ranks`. A query's catalog: its retrieved documents, then
  its unretrieved relevant ones (unranked, so they count in R and in the ideal DCG); the metrics
  that read judged non-relevant items (bpref, infap, judged) also get those."""
  nq = queries.nq
  if not specs:
    if progress is not None:
      progress(nq, nq)
    return {}
  jq, jrel, counts = queries.jq, queries.jrel, ranked.counts
  positive = jrel > 0
  item = item_of_j[positive]
  extra = np.bincount(jq[positive][item < 0], minlength=nq)
  retrieved = item >= 0
  rel_lo, rel_hi = np.zeros(item.size, np.int64), np.zeros(item.size, np.int64)
  rel_lo[retrieved], rel_hi[retrieved] = ranked.lo[item[retrieved]], ranked.hi[item[retrieved]]
  judged = None
  if scoring.needs_judgments(specs):  # bpref, infap, judged: judged non-relevant items too
    other = ~positive
    j_item = item_of_j[other]
    j_lo, j_hi = np.zeros(j_item.size, np.int64), np.zeros(j_item.size, np.int64)
    got = j_item >= 0
    j_lo[got], j_hi[got] = ranked.lo[j_item[got]], ranked.hi[j_item[got]]
    kind = np.where(jrel[other] < 0, POOLED, ZERO).astype(np.int8)
    judged = (jq[other], j_lo, j_hi, kind)
  out = scoring.score_ranks(nq, counts + extra, counts, jq[positive], rel_lo, rel_hi,
                            jrel[positive], specs, options, resolved=resolved, chunk=chunk,
                            progress=progress, judged=judged, shapes=shapes)
  return dict(zip(specs, out))


def _grade_block(grades: np.ndarray, rows: np.ndarray, first: int, pos: np.ndarray,
                 counts: np.ndarray) -> np.ndarray:
  """``G[query, rank]`` (read only): the ``grades`` of a block's retrieved documents (queries
  ``rows - first``, in order, at ``pos``), :data:`NOT_IN_QRELS` past each query's ``counts``.
  Queries of one length (the usual run) are a view of the grades; others are scattered through
  one flat index."""
  width = max(int(counts.max(initial=0)), 1)
  if grades.size == counts.size * width:  # every query retrieves `width` documents
    return grades.reshape(counts.size, width)
  G = np.full(counts.size * width, NOT_IN_QRELS, grades.dtype)
  G[(rows.astype(np.int64) - first) * width + pos] = grades
  return G.reshape(counts.size, width)


def _host_values(requests: Sequence[Request], queries: _Queries, ranked: _Ranked,
                 grades: np.ndarray, core_values: dict[tuple, np.ndarray], *,
                 threshold) -> Callable[[Request], list[np.ndarray]]:
  """Every request's per-query values, by its measure's ``host`` calculation, as
  ``values_of(request)`` (one array per printed name, for :func:`summarize`).

  The calculations read the grades in rank order ``G[query, rank]``, built a block of queries at
  a time (:func:`jaxrank._host.batches.blocks`) so that one long query does not pad every other one
  to its length; the blocks' values are concatenated.
  """
  nq, jq, jrel = queries.nq, queries.jq, queries.jrel
  rq, pos, counts = ranked.rq, ranked.pos, ranked.counts
  relevant = (jrel >= threshold) & (jrel >= 0)
  num_rel = np.bincount(jq, weights=relevant, minlength=nq).astype(np.int64)
  num_nonrel = np.bincount(jq, weights=(jrel >= 0) & ~relevant, minlength=nq).astype(np.int64)
  host = [r for r in requests if r.measure.host is not None]
  by_query = np.argsort(jq, kind="stable")
  jq_sorted, jrel_sorted = jq[by_query], jrel[by_query]
  jfirst = np.searchsorted(jq_sorted, np.arange(nq + 1))
  rfirst = np.concatenate([[0], np.cumsum(counts)])  # rq is sorted by query
  parts: list[list[list[np.ndarray]]] = [[] for _ in host]
  for a, b in batches.blocks(np.maximum(counts, 1), batches.ELEMENTS, nq) if host else ():
    G = _grade_block(grades[rfirst[a]:rfirst[b]], rq[rfirst[a]:rfirst[b]], a,
                     pos[rfirst[a]:rfirst[b]], counts[a:b])
    block = calc.Block(G=G, rel=(G >= threshold) & (G >= 0), counts=counts[a:b],
                       num_rel=num_rel[a:b], num_nonrel=num_nonrel[a:b], threshold=threshold,
                       jq=jq_sorted[jfirst[a]:jfirst[b]] - a,
                       jrel=jrel_sorted[jfirst[a]:jfirst[b]],
                       core={k: v[a:b] for k, v in core_values.items()})
    for acc, r in zip(parts, host):
      acc.append(cast(calc.Host, r.measure.host)(block, r.params))  # host: only those with one

  def values_of(r: Request) -> list[np.ndarray]:
    chunks = parts[host.index(r)]
    return ([np.concatenate(v) for v in zip(*chunks)] if chunks
            else [np.zeros(0) for _ in r.names()])

  return values_of


def query_mean(values: np.ndarray) -> float:
  """The mean of per-query values added one by one in query order, as trec_eval adds them (the
  same float whoever computes it: the whole run, its chunks, a name); 0.0 for no query.

  Example:
    >>> import numpy as np
    >>> from jaxrank._trec import run as _run
    >>> _run.query_mean(np.array([0.1, 0.2, 0.3])), _run.query_mean(np.zeros(0))
    (0.20000000000000004, 0.0)
  """
  return sum(values.tolist()) / values.size if values.size else 0.0


def summarize(values_of: Callable[[Request], list[np.ndarray]], requests: Sequence[Request],
              nq: int, tag: str, qrels: Qrels, complete: bool):
  """``(per_query, summary, integer)``: each request's per-query values (``values_of(r)``, one
  array per printed name, queries in strcmp order) and its ``all`` line as trec_eval computes
  it: means and geometric means added in query order, sums for counts, ``-c``'s ``num_rel``
  over the whole qrels, ``runid`` the run's tag, ``num_q`` the number of queries."""
  per_query: dict[str, np.ndarray] = {}
  summary: dict[str, float | int | str] = {}
  integer: set[str] = set()
  for r in requests:
    m = r.measure
    if m.summary in ("runid", "count"):
      summary[m.name] = tag if m.summary == "runid" else nq
      if m.summary == "count":
        integer.add(m.name)
      continue
    for name, v in zip(r.names(), values_of(r)):
      if m.summary == "none":
        pass
      elif m.summary == "sum":
        integer.add(name)
        summary[name] = int(np.sum(v))
        if name == "num_rel" and complete:  # trec_eval's -c total: rel > 0 in the whole qrels
          summary[name] = int(np.count_nonzero(qrels.rel > 0))
      elif m.summary == "gm":  # logs added in query order, as trec_eval
        logs = np.log(np.maximum(v, 1e-5)).tolist()
        summary[name] = math.exp(sum(logs) / nq) if nq else 0.0
      else:
        summary[name] = query_mean(v)
      if m.per_query:
        per_query[name] = v
  return per_query, summary, integer
