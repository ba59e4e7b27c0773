"""trec_eval's evaluation of a run read a few queries at a time, for runs bigger than memory.

:func:`evaluate_chunks` takes the run as chunks of whole queries
(:func:`jaxrank.io.iter_run_chunks`) and evaluates each against the judgments of its own queries
with :func:`jaxrank._trec.run.evaluate_requests` (:func:`jaxrank._trec.irnames.evaluate_names`
when ir_measures' or jaxrank's names are asked too). A query's values depend on its own
documents and judgments only (its rank order, its R, its ideal DCG), so each chunk gives its
queries' values; what the chunks cannot give alone is combined here, the way the whole-file
evaluation does it:

* the queries are put in trec_eval's order (query ids in ``strcmp`` order) before anything is
  added, so every sum adds the same numbers in the same order: means are ``sum / num_q``, the
  ``num_*`` counts are sums, ``gm_map`` and ``gm_bpref`` are
  ``exp(sum(log(max(v, 1e-5))) / num_q)`` of per-query values kept for the purpose, ``num_q``
  counts the queries evaluated, ``runid`` is the tag of the run's last line; a name's ``all``
  is its trec_eval measure's (``Bpref``, ``NumRet``) or the mean of its per-query values;
* with ``complete`` (trec_eval's ``-c``), the qrels queries that no chunk held are evaluated at
  the end as an empty run (so they score what the whole file gives them, 0 for the rank
  measures), and the ``all`` line of ``num_rel`` counts every judgment above 0 in the qrels;
* a query that comes back in a later chunk is an error naming it (the reader,
  :func:`jaxrank.io.iter_run_chunks`, already names its line); a number is never computed from
  part of a query.

Memory holds the qrels, one chunk of the run and a few numbers per query; time is the whole
file's (each chunk is evaluated on the judgments of its queries only, and the compiled kernels
are shared between chunks). One limit, from :mod:`jaxrank._trec.run`: a few values (``11pt_avg``'s
mean over levels, the kernel's sums for ``ndcg_cut``) are rounded differently depending on the
padded shape of the batch of queries they are computed in, so a per-query value can differ from
the whole file's in its last bit; trec_eval's 4 decimals do not show it (outside an exact
rounding tie), the full digits of ``--format csv``/``json`` can.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from jaxrank._trec import irnames as _irnames
from jaxrank._trec import run as _run
from jaxrank._trec.table import Request
from jaxrank.io import Ids, Qrels, Run

__all__ = ["evaluate_chunks"]


def _keeping_values(requests: Sequence[Request]) -> list[Request]:
  """The requests, with the per-query values of the geometric means kept (their ``all`` line is
  computed here, from those values)."""
  return [dataclasses.replace(r, measure=dataclasses.replace(r.measure, per_query=True))
          if r.measure.summary == "gm" and not r.measure.per_query else r for r in requests]


class _Judgments:
  """The qrels grouped by query (one stable argsort of integer codes), handing out the judgments
  of a few queries at a time."""

  def __init__(self, qrels: Qrels) -> None:
    self.qrels = qrels
    self.order = np.argsort(qrels.qid_codes, kind="stable")
    counts = np.bincount(qrels.qid_codes, minlength=len(qrels.qid_vocab))
    self.start = np.concatenate([[0], np.cumsum(counts)])

  def of(self, codes: np.ndarray) -> Qrels:
    """The judgments of the queries ``codes`` (qrels codes), in file order, as a :class:`Qrels`
    with vocabularies of their own (only the ids it uses)."""
    q = self.qrels
    first, sizes = self.start[codes], self.start[codes + 1] - self.start[codes]
    within = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    rows = self.order[np.repeat(first, sizes) + within]
    docs, doc_codes = np.unique(q.docid_codes[rows], return_inverse=True)
    return Qrels(qid_codes=np.repeat(np.arange(codes.size, dtype=np.int32), sizes),
                 qid_vocab=q.qid_vocab.take(codes),
                 docid_codes=doc_codes.reshape(-1).astype(np.int32),
                 docid_vocab=q.docid_vocab.take(docs), rel=q.rel[rows])


def _empty_run(tag: str) -> Run:
  empty = Ids.from_strings([])[0]
  return Run(qid_codes=np.zeros(0, np.int32), qid_vocab=empty, docid_codes=np.zeros(0, np.int32),
             docid_vocab=empty, score=np.zeros(0), tag=tag)


def _queries_only(qids: list[str], tag: str) -> Run:
  """A run retrieving one document per query of ``qids`` (for the whole file's error message
  when no query has judgments)."""
  vocab, codes = Ids.from_strings(qids)
  doc = Ids.from_strings(["-"])[0]
  return Run(qid_codes=codes, qid_vocab=vocab, docid_codes=np.zeros(codes.size, np.int32),
             docid_vocab=doc, score=np.zeros(codes.size), tag=tag)


def evaluate_chunks(chunks: Iterable[Run], qrels: Qrels, requests: Sequence[Request], *,
                    progress: Callable[[int], None] | None = None,
                    **options: Any) -> _run.Result:
  """Evaluates a run given as chunks of whole queries; the result of
  :func:`jaxrank._trec.run.evaluate_requests` on the whole run, or with ``names`` that of
  :func:`jaxrank._trec.irnames.evaluate_names` (see the module docstring).

  .. math::

     \\mathrm{all}_m = \\frac{1}{|Q|} \\sum_{q \\in Q} m(q) \\text{ (means, in strcmp order of
     } q\\text{)}, \\qquad \\mathrm{gm}_m = \\exp\\Big(\\frac{1}{|Q|} \\sum_{q \\in Q}
     \\log \\max(m(q), 10^{-5})\\Big)

  Args:
    chunks: the run as :class:`~jaxrank.io.Run` s holding whole queries (a query in one chunk
      only), e.g. ``io.iter_run_chunks(path)``; the last one's ``tag`` is the ``runid``.
    qrels, requests: the judgments and the trec_eval measures.
    progress: called after each chunk with the number of run lines evaluated so far.
    options: the fields of :class:`ChunkJob` (``names``, ``ties``, ``complete``, ...).

  Example:
    >>> from jaxrank import io
    >>> from jaxrank._trec import chunked as _chunked
    >>> from jaxrank._trec import table
    >>> text = b"a Q0 x 1 3 t\\na Q0 y 2 2 t\\nb Q0 x 1 1 t\\nc Q0 z 1 1 u\\n"
    >>> qrels = io.read_qrels(b"a 0 y 1\\nb 0 y 1\\nc 0 z 2\\n")
    >>> asked = table.parse_measures(["map", "num_q", "runid"])
    >>> res = _chunked.evaluate_chunks(io.iter_run_chunks(text, max_lines=1), qrels, asked)
    >>> res.qids, res.per_query["map"].tolist(), res.summary
    (['a', 'b', 'c'], [0.5, 0.0, 1.0], {'runid': 'u', 'num_q': 3, 'map': 0.5})
  """
  job = ChunkJob(qrels, requests, **options)
  return job.result([job.values(chunks, progress)])


@dataclasses.dataclass
class Values:
  """The values of some chunks of a run (:meth:`ChunkJob.values`): ``parts``, the qrels codes
  of each chunk's queries and its result; ``done``, the qrels queries evaluated; ``unjudged``,
  the run's query ids while none has judgments (for the error when none has), else None;
  ``tag``, the last line's tag; ``lines``, the run lines read."""

  parts: list[tuple[np.ndarray, _run.Result]]
  done: np.ndarray
  unjudged: list[str] | None
  tag: str
  lines: int


@dataclasses.dataclass
class ChunkJob:
  """What :func:`evaluate_chunks` evaluates a run's chunks with, and how it combines their
  values; picklable (another process can evaluate some of the chunks).

  Fields:
    qrels, requests, ties, float32, max_docs, complete, threshold, sources: as
      :func:`jaxrank._trec.run.evaluate_requests`.
    uncoded: the chunks come from :func:`jaxrank.io.iter_judged_run_chunks` or
      :func:`jaxrank.io.iter_dict_chunks` with qrels (the last id of each one's ``docid_vocab``
      stands for the documents it did not code).
    unique_docs, options: as :func:`jaxrank._trec.run.evaluate_requests` (the chunks of a dict,
      :func:`jaxrank.io.iter_dict_chunks`, list no document twice).
    names, given, where: ir_measures' or jaxrank's names beside the ``requests``, and the
      call's formula options and name for errors, as
      :func:`jaxrank._trec.irnames.evaluate_names` (which then evaluates each chunk; its
      ``options`` are built from ``given``).
  """

  qrels: Qrels
  requests: Sequence[Request]
  names: Sequence[str] = ()
  given: dict | None = None
  where: str = "jaxrank.numpy.evaluate_run"
  ties: str = "trec"
  float32: bool = False
  max_docs: int | None = None
  complete: bool = False
  threshold: int = 1
  sources: tuple[str, str] = ("run", "qrels")
  uncoded: bool = False
  unique_docs: bool = False
  options: Any = None

  def __post_init__(self) -> None:
    self.names = list(dict.fromkeys(self.names))  # each name once, in the order given

  def _evaluate(self, run: Run, part: Qrels, shapes: list, *, ties: str, complete: bool,
                uncoded: int | None = None) -> _run.Result:
    """One chunk's values (or the whole run's, ``part`` being the whole qrels)."""
    asked = _keeping_values(self.requests)
    common: dict[str, Any] = {"float32": self.float32, "max_docs": self.max_docs,
                              "threshold": self.threshold, "sources": self.sources,
                              "shapes": shapes,  # one kernel shape for most chunks
                              "unique_docs": self.unique_docs}
    if self.names:
      return _irnames.evaluate_names(run, part, self.names, asked,
                                     given=self.given, where=self.where, ties=ties,
                                     complete=complete, uncoded=uncoded, **common)
    return _run.evaluate_requests(run, part, asked, options=self.options, ties=ties,
                                  complete=complete, uncoded=uncoded, **common)

  def values(self, chunks: Iterable[Run],
             progress: Callable[[int], None] | None = None) -> Values:
    """The values of ``chunks`` (runs of whole queries, a query in one chunk only);
    ``progress`` is called after each with the run lines read so far."""
    qv = self.qrels.qid_vocab
    judgments = _Judgments(self.qrels)
    out = Values(parts=[], done=np.zeros(len(qv), bool), unjudged=[], tag="jaxrank", lines=0)
    shapes: list = []
    for run in chunks:
      out.tag, out.lines = run.tag, out.lines + len(run)
      codes = qv.index(run.qid_vocab)
      judged = codes[codes >= 0]
      _check_once(out.done, judged, qv, self.sources[0])
      if out.unjudged is not None:
        out.unjudged += run.qid_vocab.tolist() if not judged.size else []
      if judged.size:
        out.unjudged = None
        out.done[judged] = True
        result = self._evaluate(run, judgments.of(judged), shapes, ties=self.ties,
                                complete=False,
                                uncoded=len(run.docid_vocab) - 1 if self.uncoded else None)
        out.parts.append((qv.index(Ids.from_strings(result.qids)[0]), result))
      if progress is not None:
        progress(out.lines)
    return out

  def result(self, values: Sequence[Values]) -> _run.Result:
    """The run's result from the values of its chunks, in the run's order (``values`` of
    consecutive parts of the run: their chunks in file order)."""
    qv = self.qrels.qid_vocab
    done = np.zeros(len(qv), bool)
    parts: list[tuple[np.ndarray, _run.Result]] = []
    unjudged: list[str] | None = []
    tag = "jaxrank"
    for v in values:
      _check_once(done, np.flatnonzero(v.done), qv, self.sources[0])
      done |= v.done
      parts += v.parts
      unjudged = None if unjudged is None or v.unjudged is None else unjudged + v.unjudged
      tag = v.tag if v.lines else tag
    missing = np.flatnonzero(~done)
    if self.complete and missing.size:  # the qrels queries the run never retrieved for
      # No document, no tie: any policy gives these queries the same values. (An ordered one:
      # _run.evaluate_requests' tie groups fail on a run without rows.)
      result = self._evaluate(_empty_run(tag), _Judgments(self.qrels).of(missing), [],
                              ties="trec", complete=True)
      parts.append((qv.index(Ids.from_strings(result.qids)[0]), result))
    if not parts:  # nothing to evaluate: the whole file's error, from the whole file's code
      self._evaluate(_queries_only(unjudged or [], tag), self.qrels, [], ties=self.ties,
                     complete=self.complete)
      raise AssertionError("jaxrank internal error: a run without judged queries evaluated")
    return _combine(parts, self.requests, self.names, self.qrels, tag,
                    self.complete, self.threshold, self.where)


def _check_once(done: np.ndarray, judged: np.ndarray, qv: Ids, run: str) -> None:
  """Raises for a query of ``judged`` (qrels codes) already ``done`` in an earlier chunk."""
  if done[judged].any():
    again = qv[int(judged[done[judged]][0])]
    raise ValueError(f"{run}: query {again!r} appears in two chunks of the run (a run "
                     "evaluated in chunks needs each query's lines together)")


def _alone(values: np.ndarray, request: Request) -> list[np.ndarray]:
  return [values]  # the values of one name, as summarize() asks them of its one request


def _combine(parts: list[tuple[np.ndarray, _run.Result]], requests: Sequence[Request],
             names: Sequence[str], qrels: Qrels, tag: str, complete: bool, threshold: int,
             where: str) -> _run.Result:
  """One :class:`~jaxrank._trec.run.Result` from the chunks' results: queries in strcmp order, then
  the ``all`` lines as :func:`jaxrank._trec.run.evaluate_requests` computes them, and those of
  the ``names`` as :func:`jaxrank._trec.irnames.evaluate_names` does."""
  codes = np.concatenate([c for c, _ in parts])
  order = np.argsort(qrels.qid_vocab.byte_rank()[codes], kind="stable")
  qids = [q for _, r in parts for q in r.qids]
  nq = codes.size

  def joined(values: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(values)[order]

  per_query, summary, integer = _run.summarize(
      lambda r: [joined([res.per_query[name] for _, res in parts]) for name in r.names()],
      requests, nq, tag, qrels, complete)
  printed = [n for r in requests for n in r.names()]
  for name in names:
    if name in printed:  # a trec_eval name, also asked as such
      continue
    values = joined([res.per_query[name] for _, res in parts])
    per_query[name] = values
    request = _irnames.trec_request(name, threshold, where)
    if request is None:  # a rank-core metric: the mean in query order
      summary[name] = _run.query_mean(values)
      continue
    _, of_request, counts = _run.summarize(functools.partial(_alone, values), [request], nq,
                                           tag, qrels, complete)
    summary[name] = of_request[request.names()[0]]
    if counts:
      integer.add(name)
  core = {key: joined([res.core[key] for _, res in parts]) for key in parts[0][1].core}
  return _run.Result(qids=[qids[i] for i in order], per_query=per_query, summary=summary,
                      integer=integer, core=core,
                      names=printed + [n for n in names if n not in printed])
