"""``jaxrank.numpy.evaluate_run``: pytrec_eval-style dicts and TREC runs, the trec_eval way."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from jaxrank import io
from jaxrank._core import options as _options
from jaxrank._trec import parallel as _parallel
from jaxrank._trec import plan as _plan
from jaxrank.numpy import _inputs
from jaxrank.numpy._inputs import Result as _Result


def _check_kind(x: Any, what: str, kind: type) -> None:
  """``x`` is a dict, a ``kind`` (:class:`jaxrank.io.Run` or ``Qrels``) or a file path."""
  if not isinstance(x, (Mapping, kind, str, os.PathLike)):
    reader = "read_run" if kind is io.Run else "read_qrels"
    hint = (f" (a file's content as bytes: jaxrank.io.{reader}(content))"
            if isinstance(x, (bytes, bytearray)) else "")
    raise TypeError(f"{what} must be a {{qid: {{docid: value}}}} dict, a jaxrank.io."
                    f"{kind.__name__} or a file path, got {type(x).__name__}{hint}")


def _path(x: Any, what: str) -> str | None:
  """``x`` as the path of a file to read (a ``str`` or ``os.PathLike``; ``"-"``: standard
  input), or None for a dict or an :mod:`jaxrank.io` object."""
  if not isinstance(x, (str, os.PathLike)):
    return None
  path = os.fspath(x)
  if not isinstance(path, str):
    raise TypeError(f"{what}: a path must be a str or a path-like giving a str, got {path!r}")
  return path


def _qrels(qrels: Any) -> tuple[io.Qrels, str]:
  """The qrels as an :class:`jaxrank.io.Qrels` (read from a path, converted from a dict), and
  their name in error messages (the path, or ``"qrels"``)."""
  path = _path(qrels, "qrels")
  return (io.as_qrels(qrels), "qrels") if path is None else (io.read_qrels(path), path)


def _dict_rows(run: Mapping) -> int:
  """The rows of a ``{qid: {docid: score}}`` dict (0 if a value is not a dict: the whole
  path's conversion names it)."""
  inner = list(run.values())
  if not all(isinstance(d, Mapping) for d in inner):
    return 0
  return sum(map(len, inner))


@_options.takes(_options.FACE_OPTIONS, skip=("ties", "threshold"))  # its own: "trec", int
def evaluate_run(run: io.Run | Mapping[str, Mapping[str, float]] | str | os.PathLike,
                 qrels: io.Qrels | Mapping[str, Mapping[str, int]] | str | os.PathLike,
                 metrics: Sequence[str] | str = ("map", "ndcg", "P_10"), *,
                 ties: str = "trec", float32: bool = False, max_docs: int | None = None,
                 complete: bool = False, reduce: str | None = None, threshold: int = 1,
                 **options: Any) -> _Result:
  """Evaluates a run against qrels the trec_eval way, from dicts or :mod:`jaxrank.io` objects.

  Args:
    run: ``{qid: {docid: score}}`` (string ids), a :class:`jaxrank.io.Run`, or the path of a
      TREC run file (``qid Q0 docid rank score tag``; gzip is read as such), which is read as
      ``jaxrank evaluate`` reads it (see below).
    qrels: ``{qid: {docid: grade}}`` with integer grades (``-1`` = unjudged), a
      :class:`jaxrank.io.Qrels`, or the path of a qrels file (:func:`jaxrank.io.read_qrels`).
    metrics: jaxrank names (``"ndcg@10"``, ``"mrr"``) and/or trec_eval measures, printed or
      ``-m`` style (``"P_10"``, ``"ndcg_cut.10"``, ``"bpref"``, ``"iprec_at_recall_0.50"``); a
      name that is both (``"map"``, ``"ndcg"``) is read as trec_eval's, and a trec_eval family
      with several default cutoffs needs one (``"recall_10"`` or jaxrank's ``"recall@10"``);
      and ir_measures' names (``"nDCG@10"``, ``"P(rel=2)@5"``, ``"RBP(p=0.8,rel=1)"``,
      ``"SetP"``, ``"Bpref"``, ``"NumRelRet"``) with ir_measures' conventions, including its
      provider's tie order (docs/ir-measures.md). Parameters written in a name (``rel=``,
      ``p=``, ...) override this call's options for that name.
    ties: ``"trec"`` (default; score descending, then doc id descending, as trec_eval and
      pytrec_eval), ``"first"`` (then input order), or ``"average"``/``"optimistic"``/
      ``"pessimistic"`` (exact expectation or bounds over tied orders; jaxrank metrics only).
    float32: compare scores as float32, as pytrec_eval does (default float64, as trec_eval 10).
    max_docs: keep the top ``max_docs`` of each query (trec_eval ``-M``).
    complete: also evaluate qrels queries absent from the run, as 0 (trec_eval ``-c``; its
      ``num_rel`` and ``ideal_dcg`` keep their values from the judgments, as trec_eval 10's);
      otherwise queries are those of the qrels that the run has (run queries without
      judgments are ignored).
    threshold: relevant means grade >= threshold (trec_eval ``-l``); NDCG ignores it.
    reduce: ``None`` for ``{metric: {qid: value}}``, ``"mean"`` for ``{metric: float}``.

  A run dict of more than ``jaxrank.numpy.DICT_CHUNK_ROWS`` (a million) rows is evaluated a
  million rows of whole queries at a time, as ``jaxrank evaluate`` evaluates a big file: only
  judged documents and those whose score may tie within their query get a code (ties go by doc
  id), and the chunks' values are combined in trec_eval's order. A run file of 16 MiB or more
  is read and evaluated so, 250,000 lines at a time, as the command does: faster than
  :func:`jaxrank.io.read_run` then this function, in a fraction of the memory. The numbers are
  the whole run's (a few sums the kernel rounds by batch shape, ``ndcg_cut``'s, may differ in
  their last bit). Such a file is evaluated by several processes at once, each taking the next
  part of whole queries: ``jaxrank.numpy.RUN_PROCESSES`` of them (None, the default: one per
  32 MiB, up to the usable cores and 8; 1: this process only; see ``jaxrank evaluate
  --processes``).

  Example:
    >>> from jaxrank import numpy as jrn
    >>> run = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}
    >>> qrels = {"q1": {"d1": 1, "d3": 2}}
    >>> out = jrn.evaluate_run(run, qrels, ["recip_rank", "P_2", "ndcg@2"])  # d2 before d1
    >>> {name: round(v["q1"], 4) for name, v in out.items()}
    {'recip_rank': 0.5, 'P_2': 0.5, 'ndcg@2': 0.2398}
  """
  asked = _Asked.of(metrics, reduce=reduce, ties=ties, float32=float32, max_docs=max_docs,
                    complete=complete, threshold=threshold, options=options)
  _check_kind(run, "run", io.Run)
  _check_kind(qrels, "qrels", io.Qrels)
  helpers = _helpers_for(run)  # started while the qrels are read
  try:
    return _evaluate_one(run, *_qrels(qrels), asked, helpers=helpers)
  finally:
    if helpers is not None:
      helpers.close()


def _helpers_for(run: Any) -> _parallel.Helpers | None:
  """The helper processes for evaluating ``run``, a run file (see
  :func:`jaxrank._trec.plan.helpers_for`), started now; None for other runs."""
  path = _path(run, "run")
  return None if path is None else _plan.helpers_for(path, processes=_processes())


def _processes() -> int | None:
  return sys.modules[__package__].RUN_PROCESSES  # jaxrank.numpy's, as set now


@dataclasses.dataclass(frozen=True)
class _Asked:
  """What a call asks of each run, checked and parsed once: the trec_eval requests, the other
  names and each output key's value (:func:`jaxrank._trec.plan.one_value_each`), the formula
  options as given (``given``) and as built (``formula``), and the trec_eval options."""

  requests: Sequence[Any]
  others: Sequence[str]
  keys: Sequence[tuple[str, str]]
  given: dict[str, Any]
  formula: Any
  reduce: str | None
  trec: dict[str, Any]  # ties, float32, max_docs, complete, threshold

  @classmethod
  def of(cls, metrics: Sequence[str] | str, *, reduce: str | None, ties: str,
         threshold: int, options: dict[str, Any], **trec: Any) -> _Asked:
    _inputs.check_reduce(reduce)
    requests, others, keys = _plan.one_value_each(_inputs.metric_names(metrics))
    formula = _inputs.make_options(ties, threshold=threshold, **options)  # checked when unused
    return cls(requests, others, keys, options, formula, reduce,
               dict(trec, ties=ties, threshold=threshold))


def _evaluate_one(run: Any, judgments: io.Qrels, qrels_name: str, asked: _Asked, *,
                  helpers: _parallel.Helpers | None = None) -> _Result:
  """:func:`evaluate_run` of a checked run, the qrels read (``qrels_name``: their name in
  errors, the path or ``"qrels"``; ``helpers``: processes started for a run file, see
  :func:`jaxrank._trec.plan.helpers_for`)."""
  unique = isinstance(run, Mapping)  # a dict cannot list a document twice for a query
  rows = sys.modules[__package__].DICT_CHUNK_ROWS  # jaxrank.numpy's, as set now
  size = _dict_rows(run) if isinstance(run, Mapping) else 0  # i.e. if unique
  path = _path(run, "run")
  if path is None:
    data = cast("io.Run | Mapping[str, Mapping[str, float]]", run)  # not a path
    source = data if size > rows else io.as_run(data)
  common = dict(where="jaxrank.numpy.evaluate_run", given=asked.given, options=asked.formula,
                **asked.trec)
  if path is not None:  # a file: read as `jaxrank evaluate` reads it (big ones in chunks)
    result = _plan.evaluate_file(asked.requests, asked.others, judgments, path,
                                 sources=(path, qrels_name), helpers=helpers,
                                 processes=_processes(), **common)
  else:
    # A big dict: a million rows at a time, combined as the CLI does; judged documents
    # first, every document coded if their hashes are equal.
    chunks = _plan.chunking(asked=None, size=size, auto_size=rows + 1, auto_rows=rows)
    result = _plan.evaluate_run(
        asked.requests, asked.others, judgments, chunks=chunks,
        read=lambda: io.as_run(source),
        # cast: chunks are read only when size > rows, which kept the dict
        read_chunks=lambda judged, n: io.iter_dict_chunks(
            cast(Mapping[str, Mapping[str, float]], source), max_rows=n,
            qrels=judgments if judged else None),
        rereadable=True, after_judged="chunks", sources=("run", qrels_name), unique_docs=unique,
        **common)
  out: _Result = {}
  for name, ref in asked.keys:
    if ref not in result.per_query:  # summary-only measures (num_q, gm_map, runid)
      out[name] = result.summary[ref]
      continue
    values = result.per_query[ref]
    out[name] = _inputs.keyed(result.qids, np.asarray(values), asked.reduce,
                              asked.given["empty"])
  return out


@_options.takes(_options.FACE_OPTIONS, skip=("ties", "threshold"))
def evaluate_runs(runs: Mapping[str, io.Run | Mapping[str, Mapping[str, float]] | str
                                  | os.PathLike] | Sequence[str | os.PathLike],
                  qrels: io.Qrels | Mapping[str, Mapping[str, int]] | str | os.PathLike,
                  metrics: Sequence[str] | str = ("map", "ndcg", "P_10"), *,
                  ties: str = "trec", float32: bool = False, max_docs: int | None = None,
                  complete: bool = False, reduce: str | None = None, threshold: int = 1,
                  **options: Any) -> dict[str, _Result]:
  """Evaluates several runs against one qrels (a sweep, the systems of a track), each as
  :func:`evaluate_run` does, with the qrels read or converted once.

  Args:
    runs: ``{name: run}``, each run a ``{qid: {docid: score}}`` dict, a
      :class:`jaxrank.io.Run` or the path of a run file; or a list of run file paths, each
      keyed by its path as given.
    qrels, metrics and the options: as :func:`evaluate_run`'s.

  Returns:
    ``{name: evaluate_run(run, qrels, metrics, ...)}`` in the order of ``runs``.

  Example:
    >>> from jaxrank import numpy as jrn
    >>> qrels = {"q1": {"d1": 1, "d3": 2}}
    >>> runs = {"a": {"q1": {"d1": 0.9, "d2": 0.5}}, "b": {"q1": {"d2": 0.9, "d3": 0.5}}}
    >>> jrn.evaluate_runs(runs, qrels, ["recip_rank", "P_2"], reduce="mean")
    {'a': {'recip_rank': 1.0, 'P_2': 0.5}, 'b': {'recip_rank': 0.5, 'P_2': 0.5}}
  """
  paths = isinstance(runs, (list, tuple)) and all(_path(r, "runs") is not None for r in runs)
  if not (paths or isinstance(runs, Mapping)):
    raise TypeError(f"runs must be a {{name: run}} mapping or a list of run file paths, got "
                    f"{type(runs).__name__}")
  runs = io.named_paths(runs, "runs")
  asked = _Asked.of(metrics, reduce=reduce, ties=ties, float32=float32, max_docs=max_docs,
                    complete=complete, threshold=threshold, options=options)
  for run in runs.values():
    _check_kind(run, "run", io.Run)
  _check_kind(qrels, "qrels", io.Qrels)
  first = next(iter(runs.values()), None)
  helpers = _helpers_for(first)  # the first run's, started while the qrels are read
  try:
    judgments, qrels_name = _qrels(qrels)
    return {name: _evaluate_one(run, judgments, qrels_name, asked,
                                helpers=helpers if i == 0 else None)
            for i, (name, run) in enumerate(runs.items())}
  finally:
    if helpers is not None:
      helpers.close()
