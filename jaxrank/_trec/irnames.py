"""ir_measures' and jaxrank's metric names on runs and qrels (:func:`evaluate_names`), for
:func:`jaxrank.numpy.evaluate_run` and ``jaxrank evaluate``.

The grammar of ir_measures' names and what each computes (:class:`~jaxrank._core.irnames.Target`)
are the rank core's (:mod:`jaxrank._core.irnames`); here a name meets a run: the measures that
only runs and qrels have go to trec_eval's catalogue (:mod:`jaxrank._trec.table`), each
provider's tie order is applied to the run, and names that share a level, a grade map, an order
and their written options share one evaluation.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import numpy as np

from jaxrank import io
from jaxrank._core.names import parse_metric
from jaxrank._core import options as _options
from jaxrank._core.irnames import Target, available, map_grades, not_in_core, parse
from jaxrank._trec import run as _run
from jaxrank._trec import table


def is_jaxrank_name(name: str) -> bool:
  """Whether ``name`` is one of jaxrank's own metric names (``"ndcg@10"``, ``"mrr"``).

  Example:
    >>> from jaxrank._trec import irnames as _irnames
    >>> _irnames.is_jaxrank_name("err@20"), _irnames.is_jaxrank_name("P_10")
    (True, False)
  """
  try:
    parse_metric(name)
  except (ValueError, TypeError):
    return False
  return True


def run_target(name: str, threshold: int, where: str) -> Target:
  """The :class:`Target` of a name on runs and qrels: an ir_measures name, or jaxrank's own
  (``"ndcg@10"``, ``"mrr"``: the rank core with the call's options)."""
  target = parse(name)
  if target is None:
    core, k = parse_metric(name)
    return Target(name=name, measure=core, core=core, k=k, threshold=threshold)
  if target.trec is None and not available(target):
    raise not_in_core(target, where)
  if target.threshold is None:
    target = dataclasses.replace(target, threshold=threshold)
  return target


def trec_request(name: str, threshold: int, where: str) -> table.Request | None:
  """The trec_eval measure an ir_measures name is computed as (``Bpref``: ``bpref``), or None
  for a name computed by the rank core (``nDCG@10``, jaxrank's ``ndcg@10``).

  Example:
    >>> from jaxrank._trec import irnames as _irnames
    >>> _irnames.trec_request("Bpref", 1, "x").names(), _irnames.trec_request("AP", 1, "x")
    (['bpref'], None)
  """
  target = run_target(name, threshold, where)
  return table.request_of(target.trec) if target.trec else None


def _ascending(run):
  """The run with each query's documents in doc-id byte order (a stable sort by score then
  keeps that order among equal scores: ``ties="first"``)."""
  perm = np.argsort(run.docid_vocab.byte_rank()[run.docid_codes], kind="stable")
  return io.Run(qid_codes=run.qid_codes[perm], qid_vocab=run.qid_vocab,
                docid_codes=run.docid_codes[perm], docid_vocab=run.docid_vocab,
                score=run.score[perm], rank=run.rank[perm], tag=run.tag)


def _mapped(qrels, gains):
  return io.Qrels(qid_codes=qrels.qid_codes, qid_vocab=qrels.qid_vocab,
                  docid_codes=qrels.docid_codes, docid_vocab=qrels.docid_vocab,
                  rel=map_grades(qrels.rel, gains))


def evaluate_names(run, qrels, names, requests=(), *, ties: str = "trec", threshold: int = 1,
                   given: dict[str, Any] | None = None,
                   where: str = "jaxrank.numpy.evaluate_run", progress=None, **run_options):
  """Evaluates trec_eval ``requests`` and ``names`` (ir_measures' or jaxrank's) on a run.

  Names that share a level, a grade map, a tie order and the options written in them share one
  evaluation (usually all of them; the trec ``requests`` go with the call's own). Returns a
  :class:`jaxrank._trec.run.Result` whose keys are the requests' printed names, then each name
  as written; ``given`` are the call's formula options (``gain=``, ``empty=``, ...).

  Example:
    >>> from jaxrank import io
    >>> from jaxrank._trec import irnames as _irnames
    >>> run = io.as_run({"q1": {"a": 0.5, "b": 0.5, "c": 0.1}})
    >>> qrels = io.as_qrels({"q1": {"a": 1, "c": 2}})
    >>> out = _irnames.evaluate_names(run, qrels, ["RR", "RR@2", "P(rel=2)@3", "NumRet"])
    >>> {n: round(float(v[0]), 4) for n, v in out.per_query.items()}  # RR@k: ties doc id up
    {'RR': 0.5, 'RR@2': 1.0, 'P(rel=2)@3': 0.3333, 'NumRet': 3.0}
  """
  given = dict(given or {})
  names = list(dict.fromkeys(names))
  targets = [run_target(name, threshold, where) for name in names]
  base = (threshold, None, "trec", ())
  groups: dict[tuple, list[Target]] = {base: []} if requests else {}
  for t in targets:
    # set_F prints one name whatever its beta: each beta is evaluated on its own
    own = ((("set_F", t.trec),) if t.trec.startswith("set_F") else ()) if t.trec else t.options
    order = t.order if ties == "trec" else "trec"
    groups.setdefault((t.threshold, t.gains, order, own), []).append(t)
  qids, per_query, summary, integer, printed = None, {}, {}, set(), []
  for key, members in groups.items():
    level, gains, order, own = key
    group_requests = list(requests) if key == base else []
    trec_of = {}
    for t in members:
      if t.trec:
        request = table.request_of(t.trec)
        trec_of[t.name] = request.names()[0]
        group_requests.append(request)
    # a target without a trec_eval measure has a core one
    specs = tuple(dict.fromkeys((cast(str, t.core), t.k) for t in members if not t.trec))
    group_ties = ties if order == "trec" else "first"
    options = _options.make_options(**{
        **given, "threshold": level, **{k: v for k, v in own if k != "set_F"},
        "ties": "first" if group_ties in table.ORDERED else group_ties})
    result = _run.evaluate_requests(
        _ascending(run) if order == "ascending" else run,
        qrels if gains is None else _mapped(qrels, gains),
        group_requests, ties=group_ties, threshold=level, core_specs=specs, options=options,
        progress=progress if key == next(iter(groups)) else None, **run_options)
    assert qids is None or qids == result.qids
    qids = result.qids
    if key == base:
      printed = [n for r in requests for n in r.names()]
      for n in printed:
        if n in result.per_query:
          per_query[n] = result.per_query[n]
        if n in result.summary:
          summary[n] = result.summary[n]
      integer |= {n for n in printed if n in result.integer}
    for t in members:
      if t.trec:
        ref = trec_of[t.name]
        if ref in result.per_query:
          per_query[t.name] = result.per_query[ref]
        summary[t.name] = result.summary[ref]
        if ref in result.integer:
          integer.add(t.name)
      else:
        v = np.asarray(result.core[(t.core, t.k)], np.float64)
        per_query[t.name] = v
        summary[t.name] = _run.query_mean(v)
  shown = printed + [n for n in names if n not in printed]
  return _run.Result(qids=qids or [],
                     per_query={n: per_query[n] for n in shown if n in per_query},
                     summary={n: summary[n] for n in shown if n in summary}, integer=integer,
                     names=shown)
