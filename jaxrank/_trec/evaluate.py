"""trec_eval's measures on the rank core: names, parameters, and evaluation of runs against qrels.

A run and qrels (columns of string ids, see :mod:`jaxrank.io`) are ordered on the host the
trec_eval way (score descending, then doc id descending, scores compared as float64 or, like
pytrec_eval, as float32). That one sort gives the rank (or, for the tie-aware policies, the tie
group) of every relevant document, and the rank metrics (``map``, ``P``, ``ndcg``, ...) are
computed from those ranks by one jitted call of the rank core per chunk of queries
(:func:`score_ranks`), in float64: O(documents log documents) in all, whatever the number of
relevant documents. Relevant documents absent from the run are part of each query's catalog as
unranked items, so they count in R and in the ideal DCG. The judgment-based trec_eval measures
that are prefix counts over the ordered list (``bpref``, ``infAP``, ``iprec_at_recall``, the
``num_*`` counts, ...) are computed on the host from the same ordered grades, with trec_eval's
``form_res_rels`` reading of the qrels: every negative judgment is "in the pool, unjudged".
Summaries add the queries in trec_eval's order (query ids sorted), so the output depends on the
data only, not on the order of the lines.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
from collections.abc import Callable, Sequence

import numpy as np

from jaxrank._core import checks as _checks
from jaxrank._core import compute as _compute
from jaxrank._host import ranker as _hostrank
from jaxrank._core import ranks as _ranks
from jaxrank._core import table as _table
from jaxrank._trec import measures as calc
from jaxrank._trec.measures import NOT_IN_QRELS, RECALL_LEVELS, UNJUDGED
from jaxrank.io import Qrels, Run

CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RPREC_MULTS = tuple(i / 5 for i in range(1, 11))
TIES = ("trec", "average", "optimistic", "pessimistic", "first")
# Ordered ties (a total order per query) are needed by the prefix-count measures.
ORDERED = ("trec", "first")
SINGLE = ("beta", "length", "coeffs")  # parameter kinds that are one setting, not a list


@dataclasses.dataclass(frozen=True)
class Measure:
  """One trec_eval measure: how its parameters read and where its value comes from.

  ``host`` is its calculation on a block of queries' grades (see :mod:`jaxrank._trec.measures`):
  ``host(block, params)`` returns one array of per-query values per printed name. A measure the
  rank core computes (``core``, from the metric table) reads the core's values unless it names
  its own; ``runid`` and ``num_q`` have none (their summary is the run's tag, the query count).
  ``needs_order``: the value needs a total order of each query's documents (prefix counts over
  the ranked list), so the tie-aware policies cannot compute it. ``all_trec``: in trec_eval's
  ``all_trec`` set (trec_eval 10 leaves ``dcg`` and ``ideal_dcg`` out of it).
  """

  name: str
  doc: str
  params: str = "none"  # "none", "int" (cutoffs), "float" (levels), "beta", "length", "coeffs"
  defaults: tuple = ()
  core: str | None = None  # the jaxrank core metric, if any
  summary: str = "mean"  # "mean", "sum", "gm" (geometric mean), "count", "runid", "none"
  per_query: bool = True
  official: bool = False
  host: calc.Host | None = None
  needs_order: bool = False
  all_trec: bool = True

  def __post_init__(self):
    # The core metric computing this measure comes from the metric table (its `trec` names).
    if self.core is None:
      object.__setattr__(self, "core", _table.TREC.get(self.name))
    if self.host is None and self.core is not None:
      object.__setattr__(self, "host", calc.from_core(self.core, cutoffs=self.params == "int"))


# In trec_eval's own print order (measures.c), restricted to what jaxrank computes.
MEASURES = {m.name: m for m in [
    Measure("runid", "Run id: the tag of the run's last line.", summary="runid",
            per_query=False, official=True),
    Measure("num_q", "Number of queries evaluated.", summary="count", per_query=False,
            official=True),
    Measure("num_ret", "Number of documents retrieved (after -M).", summary="sum", official=True,
            host=calc.num_ret),
    Measure("num_rel", "Number of relevant documents in the qrels (rel >= -l).", summary="sum",
            official=True, host=calc.num_rel),
    Measure("num_rel_ret", "Number of relevant documents retrieved.", summary="sum",
            official=True, host=calc.num_rel_ret),
    Measure("map", "Mean average precision: sum of P@rank over retrieved relevant docs / R.", official=True),
    Measure("gm_map", "Geometric mean over queries of AP, each AP at least 1e-5.", summary="gm",
            per_query=False, official=True),
    Measure("Rprec", "Precision after R documents retrieved (R = num_rel).",
            official=True),
    Measure("bpref", "Binary preference: (1/R) sum over retrieved relevant of 1 - min(judged "
            "nonrel above, R) / min(judged nonrel, R).", official=True,
            host=calc.bpref, needs_order=True),
    Measure("recip_rank", "Reciprocal rank of the first relevant document (no cutoff).", official=True),
    Measure("iprec_at_recall", "Interpolated precision at recall levels: max precision at any "
            "rank at or after the round(level * R)-th relevant document (trec_eval 10).",
            params="float", defaults=RECALL_LEVELS, official=True,
            host=calc.iprec_at_recall, needs_order=True),
    Measure("P", "Precision at cutoffs: relevant in the top k / k.", params="int",
            defaults=CUTS, official=True),
    Measure("relstring", "The relevance values of the top N documents as a string: 0-9, '>' "
            "above 9, '-' not in the qrels, '.' judged negative (in the pool, unjudged); per "
            "query only.", params="length", defaults=(10,), summary="none",
            host=calc.relstring, needs_order=True),
    Measure("recall", "Recall at cutoffs: relevant in the top k / R.", params="int",
            defaults=CUTS),
    Measure("infAP", "Inferred AP (Yilmaz & Aslam) from judged (rel >= 0) and pooled-unjudged "
            "(rel < 0) documents; documents not in the qrels are skipped.",
            host=calc.inf_ap, needs_order=True),
    Measure("gm_bpref", "Geometric mean over queries of bpref, each at least 1e-5.",
            summary="gm", per_query=False, host=calc.bpref, needs_order=True),
    Measure("Rprec_mult", "Precision at cutoffs (int)(x * R + 0.9) for multiples x of R.",
            params="float", defaults=RPREC_MULTS, host=calc.rprec_mult, needs_order=True),
    Measure("utility", "p1 * relevant retrieved + p2 * nonrelevant retrieved + p3 * relevant "
            "not retrieved (+ p4 * nonrelevant not retrieved, with a collection size of 0, as "
            "trec_eval without -N).", params="coeffs", defaults=(1.0, -1.0, 0.0, 0.0),
            host=calc.utility),
    Measure("11pt_avg", "Mean of iprec_at_recall at the 11 levels 0.0, 0.1, ..., 1.0.",
            host=calc.eleven_pt_avg, needs_order=True),
    Measure("binG", "Mean over relevant documents of 1 / log2(2 + non-relevant documents "
            "above it) (Moffat), divided by R.", host=calc.bin_g, needs_order=True),
    Measure("G", "Sum over retrieved documents of gain / log2(2 + cost so far - gain so far), "
            "cost = max(ideal gain, 1) per rank, over the total ideal gain (Moffat).",
            host=calc.gain_g, needs_order=True),
    Measure("dcg", "DCG: sum over retrieved documents of grade / log2(rank + 1) (trec_eval 10; "
            "ignores -l; not in all_trec).", all_trec=False),
    Measure("ideal_dcg", "DCG of the ideal order: every positive judgment of the query sorted "
            "by grade, gain = grade (trec_eval 10; not cut by -M; ignores -l; not in all_trec).",
            host=calc.ideal_dcg, all_trec=False),
    Measure("ndcg", "NDCG, linear gain = grade, 1/log2(rank + 1) discount, ideal from every "
            "judged grade (not cut by -M; ignores -l)."),
    Measure("ndcg_rel", "Mean over relevant documents of NDCG at each one's rank (ideal cut "
            "there); relevant documents not retrieved count at the end of the list.",
            host=calc.ndcg_rel, needs_order=True),
    Measure("Rndcg", "Mean of NDCG at the R levels: after each positive grade level of the "
            "ideal ranking (and at num_ret when the ideal runs out well before it).",
            host=calc.rndcg, needs_order=True),
    Measure("ndcg_cut", "NDCG at cutoffs, ideal DCG cut at k.", params="int", defaults=CUTS),
    Measure("map_cut", "AP at cutoffs: relevant retrieved in the top k, still divided by R.",
            params="int", defaults=CUTS),
    Measure("relative_P", "Relevant in the top k / min(k, R).", params="int", defaults=CUTS,
            host=calc.relative_p),
    Measure("success", "1 if a relevant document is in the top k, else 0.", params="int",
            defaults=(1, 5, 10)),
    Measure("set_P", "Relevant retrieved / retrieved."),
    Measure("set_relative_P", "Relevant retrieved / min(retrieved, R).", host=calc.set_relative_p),
    Measure("set_recall", "Relevant retrieved / R."),
    Measure("set_map", "set_P * set_recall.", host=calc.set_map),
    Measure("set_F", "(x + 1) P R / (x P + R) of set_P and set_recall, x = the first parameter "
            "(default 1; trec_eval's x is not squared).",
            params="beta", defaults=(1.0,), host=calc.set_f),
    Measure("num_nonrel_judged_ret", "Retrieved documents judged non-relevant (0 <= rel < -l).",
            summary="sum", host=calc.num_nonrel_judged_ret),
    Measure("rbp", "Rank-biased precision, p = 0.9: (1 - p) sum of gain p^(rank - 1), grades "
            "scaled to [0, 1] by the query's largest grade when it is above 1.",
            host=calc.rbp, needs_order=True),
    Measure("rbp_resid", "RBP residual, p = 0.9: p^num_ret + (1 - p) sum of p^(rank - 1) over "
            "unjudged retrieved documents (0 when none is unjudged).",
            host=calc.rbp_resid, needs_order=True),
    Measure("unj", "Unjudged documents (not in the qrels, or judged negative) in the top k / k.",
            params="int", defaults=(5, 10, 20), host=calc.unj, needs_order=True),
]}

# trec_eval measures jaxrank does not compute (listed in the docs and in `--help`).
UNSUPPORTED = {
    "yaap": "yet another AP (log-based)",
    "prefs_*": "preference judgments (-R prefs, qrels_prefs) and judgment groups (qrels_jg)",
    "NAME.1=3,2=9": "gain parameters of dcg, ideal_dcg, ndcg, ndcg_cut, ndcg_rel, Rndcg, G; "
                    "rbp.p=; 11pt_avg levels (defaults only)",
}
# ir_measures' NumQ and NumRel (jaxrank._core.irnames) per query: trec_eval's count for a query the
# run has, 0 for one only in the qrels (-c), as ir_measures reports those; summed on the `all`
# line. Not trec_eval measures (-m does not read these names); evaluated with them.
IR_COUNTS = {m.name: m for m in [
    Measure("NumQ", "1 per query the run has, 0 per query only in the qrels (-c).",
            summary="sum", host=calc.in_run_count),
    Measure("NumRel", "Relevant documents (rel >= -l) of a query the run has, 0 for a query "
            "only in the qrels (-c).", summary="sum", host=calc.in_run_num_rel),
]}
ALL_TREC = tuple(name for name, m in MEASURES.items() if m.all_trec)
OFFICIAL = tuple(name for name, m in MEASURES.items() if m.official)


@dataclasses.dataclass(frozen=True)
class Request:
  """A measure with its parameters, e.g. ``P`` with ``(5, 10)``."""

  measure: Measure
  params: tuple = ()

  def names(self) -> list[str]:
    """The printed names: ``P_5``, ``iprec_at_recall_0.10``, ``map``, ``set_F``."""
    m = self.measure
    if m.params == "int":
      return [f"{m.name}_{k}" for k in self.params]
    if m.params == "float":
      return [f"{m.name}_{x:3.2f}" for x in self.params]
    if m.params == "length" and self.params != m.defaults:
      return [f"{m.name}_{self.params[0]}"]
    if m.params == "coeffs" and self.params != m.defaults:
      return [f"{m.name}_{','.join(f'{v:g}' for v in self.params)}"]
    return [m.name]


# A number as C's strtod reads one, without inf/nan/hex (and without Python's 1_000).
_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")
_WHOLE = re.compile(r"\s*[+-]?\d+(\.\d*)?\s*")  # cutoffs: trec_eval truncates 23.4 to 23


def _parse_params(m: Measure, text: str, spec: str) -> tuple:
  """Parses ``5,10`` or ``.1,.25``; trec_eval sorts cutoffs ascending and truncates to ints."""
  if m.params == "none":
    raise ValueError(f"measure {m.name!r} takes no parameters in jaxrank, got {spec!r} "
                     f"(trec_eval's gain and level parameters are not supported)")
  pieces = text.split(",")
  values = [float(v) if _NUMBER.fullmatch(v) else math.nan for v in pieces]
  if not all(math.isfinite(v) for v in values):
    raise ValueError(f"measure {spec!r}: parameters must be finite numbers, comma-separated "
                     f"(like 5,10 or .25), got {text!r}")
  if m.params == "beta":
    if not values[0] > 0:
      raise ValueError(f"measure {spec!r}: beta must be positive")
    return (values[0],)
  if m.params == "coeffs":
    if len(values) != 4:
      raise ValueError(f"measure {spec!r}: give exactly 4 coefficients")
    return tuple(values)
  if m.params in ("length", "int"):
    if not all(_WHOLE.fullmatch(v) for v in pieces):
      # trec_eval's atol reads 1e3 as 1: rather than differ silently, ask for 1000
      raise ValueError(f"measure {spec!r}: write {m.params == 'int' and 'cutoffs' or 'the length'}"
                       f" as whole numbers (like 1000, not 1e3), got {text!r}")
    values = [int(v.split(".")[0]) for v in pieces]  # trec_eval reads 23.4 as 23
  if m.params == "length":
    if not values[0] >= 0:
      raise ValueError(f"measure {spec!r}: the length must be >= 0")
    return (values[0],)
  if m.params == "int":
    ints = sorted(set(values))
    if ints[0] <= 0:
      raise ValueError(f"measure {spec!r}: cutoffs must be whole numbers >= 1, got {text!r}")
    return tuple(ints)
  if any(not 0 <= v <= 1000 for v in values):
    raise ValueError(f"measure {spec!r}: levels must be numbers from 0 to 1000")
  return tuple(sorted(set(values)))


def request_of(spec: str) -> Request:
  """The one request of a trec_eval ``-m`` spec that names one measure (``"set_F.2.0"``), or of
  one of :data:`IR_COUNTS`' names.

  Example:
    >>> from jaxrank._trec import evaluate as _trec
    >>> _trec.request_of("set_F.2.0").params, _trec.request_of("NumQ").names()
    ((2.0,), ['NumQ'])
  """
  if spec in IR_COUNTS:
    return Request(IR_COUNTS[spec])
  (request,) = parse_measures([spec])
  return request


def parse_measures(specs: Sequence[str]) -> list[Request]:
  """Parses trec_eval ``-m`` values into requests in trec_eval's print order.

  Accepts ``map``, ``P.5,10``, ``ndcg_cut.10``, ``iprec_at_recall..1,.5``, ``set_F.0.5``, the
  printed forms ``P_10``/``ndcg_cut_10``, and the sets ``all_trec`` and ``official``. As in
  trec_eval, a measure's parameters are those of the first ``NAME.params`` that names it (``-m
  P.5 -m P.10`` computes P_5 only) and its defaults when none does; each printed form adds its
  value (``-m P_5 -m P_10`` computes both).

  Example:
    >>> from jaxrank._trec import evaluate as _trec
    >>> [n for r in _trec.parse_measures(["P.10,5", "map", "P.20"]) for n in r.names()]
    ['map', 'P_5', 'P_10']
  """
  marked: set[str] = set()
  first: dict[str, tuple] = {}  # the first `NAME.params` of each measure (trec_eval's rule)
  printed: dict[str, list] = {}  # values of printed forms (P_10), jaxrank's extension
  for spec in specs:
    if spec in ("all_trec", "official"):
      marked.update(ALL_TREC if spec == "all_trec" else OFFICIAL)
      continue
    name, _, text = spec.partition(".")
    is_printed = False
    if name not in MEASURES and "_" in spec:  # printed form P_10, iprec_at_recall_0.10
      head, _, tail = spec.rpartition("_")
      if head in MEASURES and MEASURES[head].params != "none":
        name, text, is_printed = head, tail, True
    if name not in MEASURES:
      base = name.split("_")[0]
      if name in UNSUPPORTED or base in UNSUPPORTED or spec.startswith("prefs"):
        raise ValueError(f"measure {spec!r} is a trec_eval measure that jaxrank does not "
                         f"compute (see `jaxrank evaluate --help`)")
      raise ValueError(f"unknown measure {spec!r}; known: {', '.join(MEASURES)} "
                       f"(or all_trec, official)")
    marked.add(name)
    if not text and not spec.endswith("."):
      continue
    params = _parse_params(MEASURES[name], text, spec)  # checked even when not used
    if is_printed:
      printed.setdefault(name, []).extend(params)
    else:
      first.setdefault(name, params)
  requests = []
  for name, m in MEASURES.items():
    if name not in marked:
      continue
    given = first.get(name, ()) + tuple(printed.get(name, ()))
    if m.params in SINGLE:
      params = given[:len(m.defaults)] or m.defaults
    else:
      params = tuple(sorted(set(given))) if given else m.defaults
    requests.append(Request(m, params))
  return requests


# ----------------------------------------------------------------------------------------------
# Runs against qrels.


@dataclasses.dataclass
class Result:
  """Per-query values and their summaries, in print order."""

  qids: list[str]
  per_query: dict[str, np.ndarray]  # printed name -> [queries]
  summary: dict[str, float | int | str]
  integer: set[str]  # printed names whose values are counts
  core: dict[tuple, np.ndarray] = dataclasses.field(default_factory=dict)  # (name, k) -> values
  names: list[str] = dataclasses.field(default_factory=list)  # every printed name, in order


def _order_keys(score: np.ndarray, float32: bool) -> np.ndarray:
  """int64 keys with the scores' order (equal scores equal keys, ``-0.0 == 0.0``), NaN below
  everything; from the bits, no sort.

  ``float32``: compare the scores as float32, as pytrec_eval does (C's cast: beyond float32's
  range a score becomes +-inf, with no warning).
  """
  if score.dtype.kind in "iub":
    if score.dtype == np.uint64:
      return (score ^ np.uint64(1 << 63)).view(np.int64)
    return score.astype(np.int64)
  with np.errstate(over="ignore"):
    s = score.astype(np.float32 if float32 else np.float64)
  s += 0.0  # -0.0 becomes +0.0, which it equals
  bits = s.view(np.int32 if float32 else np.int64).astype(np.int64)
  # Negative floats' bits order backwards: flipping their magnitude bits makes the integer
  # order the float order.
  keys = bits ^ ((bits >> 63) & np.int64(np.iinfo(np.int32 if float32 else np.int64).max))
  nan = np.isnan(s)
  if nan.any():
    keys[nan] = np.iinfo(np.int64).min + 1  # below -inf's key; -keys cannot overflow
  return keys


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
  if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, numbers.Real) or (
      not threshold > 0):
    raise ValueError(f"threshold (trec_eval's -l) must be a positive number, got {threshold!r}")
  return min(threshold, 2**62)


def _duplicates(q: np.ndarray, doc: np.ndarray, kept: np.ndarray, qv, doc_name, n_docs: int,
                what: str) -> None:
  again = np.bincount(doc, minlength=n_docs)[doc] > 1  # only documents listed twice anywhere
  if not again.all():
    q, doc = q[again], doc[again]
  found = _hostrank.first_duplicate(q, doc, n_docs)
  if found is not None:
    raise ValueError(f"{what}: query {qv[int(kept[found[0]])]!r} lists document "
                     f"{doc_name(int(found[1]))!r} twice")


def _ranked_order(rq: np.ndarray, keys: np.ndarray, rdoc: np.ndarray, rv, nq: int, *,
                  ties: str, uncoded: int | None = None) -> np.ndarray:
  """The permutation putting each query's documents in rank order: query, then key descending,
  then doc id descending in byte order (``ties="trec"``), or input order (``"first"``; the
  tie-aware policies need no order among equal scores).

  Queries are grouped by a stable sort (fast on the usual query-grouped input), documents
  sorted within each query (many small sorts), and only documents that tie get their ids
  compared: a run without ties never orders its ids. ``uncoded``: the code of the documents the
  reader did not code (:func:`jaxrank.io.iter_judged_run_chunks`), none of which ties.
  """
  if rq.size and np.all(rq[1:] >= rq[:-1]):  # already grouped in query order (the usual file)
    order = _hostrank.order_within(rq, -keys, nq, stable=ties == "first")
  else:
    by_query = np.argsort(rq, kind="stable")
    order = by_query[_hostrank.order_within(rq[by_query], -keys[by_query], nq,
                                            stable=ties == "first")]
  if ties != "trec" or order.size < 2:
    return order
  q, k = rq[order], keys[order]
  same = (q[1:] == q[:-1]) & (k[1:] == k[:-1])
  if not same.any():
    return order
  tied = np.zeros(order.size, bool)
  tied[1:] |= same
  tied[:-1] |= same
  at = np.flatnonzero(tied)
  group = np.cumsum(~np.r_[False, same])[at]  # tie group of each tied document
  if uncoded is not None and (rdoc[order[at]] == uncoded).any():
    raise RuntimeError("jaxrank internal error: a document the reader did not code ties; "
                       "please report it (--chunk-lines 0 evaluates the run without that "
                       "reader)")
  docs, inverse = np.unique(rdoc[order[at]], return_inverse=True)
  rank = np.empty(docs.size, np.int64)  # byte order (strcmp) of just the tied ids
  rank[np.searchsorted(docs, rv.argsort(docs))] = np.arange(docs.size)
  order[at] = order[at][np.lexsort((-rank[inverse.reshape(-1)], group))]
  return order


def evaluate_run(run: Run, qrels: Qrels, requests: Sequence[Request], *, ties: str = "trec",
                 float32: bool = False, max_docs: int | None = None, complete: bool = False,
                 threshold: int = 1, chunk: int = 4096,
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
      one run (see :func:`jaxrank._host.ranker.score_ranks`).
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
  specs = _core_specs(requests) + tuple(core_specs)
  if specs:
    options = options or _compute.make_options(threshold=threshold,
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
  """Each query's documents in rank order (:func:`_ranked_order`: trec_eval's order, input order
  for ``"first"``), cut to the top ``max_docs``, with their rank bounds; a query listing a
  document twice is an error naming ``source`` (the run) unless ``unique_docs``."""
  nq = queries.nq
  keys = _order_keys(queries.rscore, float32)
  order = _ranked_order(queries.rq, keys, queries.rdoc, run.docid_vocab, nq, ties=ties,
                        uncoded=uncoded)
  rq, rdoc, keys = queries.rq[order], queries.rdoc[order], keys[order]
  if not unique_docs:  # rq grouped now: a faster check
    _duplicates(rq, rdoc, queries.kept, qrels.qid_vocab, docs.name, docs.n, source)
  counts = np.bincount(rq, minlength=nq)
  starts = np.cumsum(counts) - counts
  pos = np.arange(rq.size) - starts[rq]
  if max_docs is not None:
    cut = pos < max_docs
    rq, rdoc, keys, pos = rq[cut], rdoc[cut], keys[cut], pos[cut]
    counts = np.minimum(counts, max_docs)
  # Rank bounds of each retrieved document: its position, or its tie group's (contiguous here).
  if ties in ORDERED:
    lo = hi = pos + 1
  else:
    start = np.ones(rq.size, bool)
    start[1:] = (rq[1:] != rq[:-1]) | (keys[1:] != keys[:-1])
    group = np.cumsum(start) - 1
    first = np.flatnonzero(start)
    last = np.r_[first[1:], rq.size][:first.size] - 1  # (no row: no group)
    lo, hi = pos[first][group] + 1, pos[last][group] + 1
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
  :func:`jaxrank._host.ranker.score_ranks`. A query's catalog: its retrieved documents, then its
  unretrieved relevant ones (unranked, so they count in R and in the ideal DCG); the metrics
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
  if _hostrank.needs_judgments(specs):  # bpref, infap, judged: judged non-relevant items too
    other = ~positive
    j_item = item_of_j[other]
    j_lo, j_hi = np.zeros(j_item.size, np.int64), np.zeros(j_item.size, np.int64)
    got = j_item >= 0
    j_lo[got], j_hi[got] = ranked.lo[j_item[got]], ranked.hi[j_item[got]]
    kind = np.where(jrel[other] < 0, _ranks.POOLED, _ranks.ZERO).astype(np.int8)
    judged = (jq[other], j_lo, j_hi, kind)
  out = _hostrank.score_ranks(nq, counts + extra, counts, jq[positive], rel_lo, rel_hi,
                              jrel[positive], specs, options, resolved=resolved, chunk=chunk,
                              progress=progress, judged=judged, shapes=shapes)
  return dict(zip(specs, out))


def _host_values(requests: Sequence[Request], queries: _Queries, ranked: _Ranked,
                 grades: np.ndarray, core_values: dict[tuple, np.ndarray], *,
                 threshold) -> Callable[[Request], list[np.ndarray]]:
  """Every request's per-query values, by its measure's ``host`` calculation, as
  ``values_of(request)`` (one array per printed name, for :func:`summarize`).

  The calculations read the grades in rank order ``G[query, rank]``, built a block of queries at
  a time (:func:`jaxrank._host.ranker.spans`) so that one long query does not pad every other one
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
  for a, b in _hostrank.spans(np.maximum(counts, 1), _hostrank.ELEMENTS, nq) if host else ():
    G = np.full((b - a, max(int(counts[a:b].max()), 1)), NOT_IN_QRELS, np.int64)
    G[rq[rfirst[a]:rfirst[b]] - a, pos[rfirst[a]:rfirst[b]]] = grades[rfirst[a]:rfirst[b]]
    block = calc.Block(G=G, rel=(G >= threshold) & (G >= 0), counts=counts[a:b],
                       num_rel=num_rel[a:b], num_nonrel=num_nonrel[a:b], threshold=threshold,
                       jq=jq_sorted[jfirst[a]:jfirst[b]] - a,
                       jrel=jrel_sorted[jfirst[a]:jfirst[b]],
                       core={k: v[a:b] for k, v in core_values.items()})
    for acc, r in zip(parts, host):
      acc.append(r.measure.host(block, r.params))

  def values_of(r: Request) -> list[np.ndarray]:
    chunks = parts[host.index(r)]
    return ([np.concatenate(v) for v in zip(*chunks)] if chunks
            else [np.zeros(0) for _ in r.names()])

  return values_of


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
        summary[name] = sum(v.tolist()) / nq if nq else 0.0  # in query order, as trec_eval
      if m.per_query:
        per_query[name] = v
  return per_query, summary, integer


def _core_specs(requests: Sequence[Request]) -> tuple:
  specs = []
  for r in requests:
    m = r.measure
    if m.core is None:
      continue
    if m.params == "int":
      specs += [(m.core, k) for k in r.params]
    else:
      specs.append((m.core, None))
  return tuple(dict.fromkeys(specs))


def describe() -> str:
  """The measure list for ``jaxrank evaluate --help``."""
  lines = ["measures (trec_eval names; -m NAME or -m NAME.p1,p2; sets: official, all_trec):"]
  for m in MEASURES.values():
    default = ""
    if m.defaults:
      default = " [default " + ",".join(f"{v:g}" for v in m.defaults) + "]"
    lines.append(f"  {m.name:<22} {m.doc}{default}")
  lines.append("not supported (a request is an error; all_trec leaves them out):")
  for name, doc in UNSUPPORTED.items():
    lines.append(f"  {name:<22} {doc}")
  return "\n".join(lines) + "\n"
