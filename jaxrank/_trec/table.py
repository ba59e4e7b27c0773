"""trec_eval's measure table: every measure jaxrank computes, its parameters and where its value
comes from, and the reading of trec_eval's ``-m`` values into requests.

:data:`MEASURES` lists trec_eval's measures in trec_eval's print order (its ``measures.c``), each
a :class:`Measure` record: the rank core's metric that computes it (from the metric table,
:data:`jaxrank._core.table.TREC`) or its host calculation (:mod:`jaxrank._trec.calc`), how its
parameters read and how its ``all`` line sums. :func:`parse_measures` turns ``-m`` values into
:class:`Request` s; :mod:`jaxrank._trec.run` evaluates them on a run.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from typing import Any

from jaxrank._core import table as _table
from jaxrank._trec import calc
from jaxrank._trec.calc import RECALL_LEVELS

CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RPREC_MULTS = tuple(i / 5 for i in range(1, 11))
TIES = ("trec", "average", "optimistic", "pessimistic", "first")
# Ordered ties (a total order per query) are needed by the prefix-count measures.
ORDERED = ("trec", "first")
SINGLE = ("beta", "length", "coeffs")  # parameter kinds that are one setting, not a list


@dataclasses.dataclass(frozen=True)
class Measure:
  """One trec_eval measure: how its parameters read and where its value comes from.

  ``host`` is its calculation on a block of queries' grades (see :mod:`jaxrank._trec.calc`):
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

  def __reduce__(self) -> tuple[Any, ...]:
    # Pickled by name (its calculation is code): the table's record, with the fields this one
    # changes (chunked evaluation's per_query, say).
    record = _record(self.name)
    changed = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if getattr(self, f.name) != getattr(record, f.name)}
    return (_unpickle_measure, (self.name, changed))

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


def _record(name: str) -> Measure:
  return MEASURES[name] if name in MEASURES else IR_COUNTS[name]


def _unpickle_measure(name: str, changed: dict[str, Any]) -> Measure:
  return dataclasses.replace(_record(name), **changed) if changed else _record(name)


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
    >>> from jaxrank._trec import table
    >>> table.request_of("set_F.2.0").params, table.request_of("NumQ").names()
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
    >>> from jaxrank._trec import table
    >>> [n for r in table.parse_measures(["P.10,5", "map", "P.20"]) for n in r.names()]
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


def core_specs(requests: Sequence[Request]) -> tuple:
  """The rank core's ``(metric, k)`` pairs that ``requests`` read (each once, in order)."""
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
