"""ir_measures' measure names (``nDCG@10``, ``P(rel=2)@5``, ``RBP(p=0.8)``, ``SetP``, ...).

:func:`parse` reads one name with ir_measures' grammar, ``Measure(key=value, ...)@at``, checks
every parameter against ir_measures' own declaration (ir_measures 0.4.3: its ``SUPPORTED_PARAMS``
and defaults) and returns a :class:`Target`: what jaxrank computes for it, under the conventions
of the ir_measures provider that computes the measure by default, so that each name gives
ir_measures' number:

* rank metrics go to the metric table's record whose ``ir_measures`` field names the measure
  (``P``, ``R``, ``Success``, ``RR``, ``AP``, ``nDCG``, ``Rprec``, ``ERR``, ``RBP``; ``Bpref``,
  ``infAP`` and ``Judged`` to ``bpref``, ``infap``, ``judged``), with
  the name's parameters as options: ``rel=`` is trec_eval's ``-l`` (``threshold``), ``AP@k`` is
  trec_eval's ``map_cut_k`` (``k``, still divided by every relevant item), nDCG's ``gains=``
  maps the grades before anything else (as ir_measures does to the qrels), ``dcg='exp-log2'``
  is ``gain="exp2"`` (gdeval), ``RBP``'s ``p=`` is ``persistence``, ``RBP(rel=r)`` is binary
  (cwl_eval: the top 1000 documents, so ``k=1000``) and ``RBP`` without ``rel`` graded;
* the set and count measures exist on runs and qrels only and go to trec_eval's catalogue
  (:mod:`jaxrank._trec.table`): ``SetP`` (``set_P``; ``relative=True``/``SetRelP``:
  ``set_relative_P``), ``SetR``, ``SetF`` (``beta=x``: trec_eval's ``set_F.x``, x not squared),
  ``SetAP`` (``set_map``), ``NumRet``, ``NumRelRet``/``NumRet(rel=r)`` (``num_rel_ret``),
  ``IPrec@x`` (``iprec_at_recall``), ``Bpref``, ``infAP``; ``NumRel`` and ``NumQ`` are
  trec_eval's ``num_rel`` and ``num_q`` counted per query, with ir_measures' 0 for a query only
  in the qrels (``complete=True``), :data:`jaxrank._trec.table.IR_COUNTS`;
* the tie order of the provider on a run: trec_eval's (score, then doc id descending) for
  pytrec_eval and gdeval; doc id *ascending* for ``RR@k`` (msmarco) and ``Judged`` (judged);
  the run's own order for ``RBP(rel=r)`` (cwl_eval sorts by score only, stably).

Parameters written in a name override the call's options; those not written keep them (the
call's defaults are ir_measures' defaults); an alias's parameters are replaced by those written
(``NumRelRet(rel=2)`` is ``NumRet(rel=2)``, as in ir_measures). ``judged_only=True``
(trec_eval's ``-J``) is not supported; an unknown parameter, a wrong type or a value out of
range is a ``ValueError`` naming the measure and the parameter, and ir_measures' measures that
jaxrank does not compute (:data:`NOT_COMPUTED`) are a ``ValueError`` that says so.

Example:
  >>> from jaxrank._core import irnames as _irnames
  >>> t = _irnames.parse("P(rel=2)@5")
  >>> t.core, t.k, t.options
  ('precision', 5, (('threshold', 2),))
  >>> _irnames.parse("SetF(beta=2.0)").trec
  'set_F.2.0'
  >>> _irnames.parse("ndcg@10") is None  # not an ir_measures name (jaxrank's own)
  True
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import math
import re
from typing import Any

import numpy as np

from jaxrank._core import table as _table

_MISSING = object()


@dataclasses.dataclass(frozen=True)
class Param:
  """One of ir_measures' parameters: its type, default (``_MISSING``: none) and choices."""

  kind: type | tuple[type, ...]
  default: Any = _MISSING
  required: bool = False
  choices: tuple[Any, ...] = ()


_CUT = Param(int)
_CUT_REQUIRED = Param(int, required=True)
_REL = Param(int, 1)
_JUDGED_ONLY = Param(bool, False)

# ir_measures 0.4.3's measures as declared there (measures/*.py: SUPPORTED_PARAMS, AT_PARAM).
MEASURES: dict[str, dict[str, Param]] = {
    "P": {"cutoff": _CUT_REQUIRED, "rel": _REL, "judged_only": _JUDGED_ONLY},
    "R": {"cutoff": _CUT_REQUIRED, "rel": _REL, "judged_only": _JUDGED_ONLY},
    "Success": {"cutoff": _CUT_REQUIRED, "rel": _REL, "judged_only": _JUDGED_ONLY},
    "RR": {"cutoff": _CUT, "rel": _REL, "judged_only": _JUDGED_ONLY},
    "AP": {"cutoff": _CUT, "rel": _REL, "judged_only": _JUDGED_ONLY},
    "nDCG": {"cutoff": _CUT, "dcg": Param(str, "log2", choices=("log2", "exp-log2")),
             "gains": Param(dict), "judged_only": _JUDGED_ONLY},
    "Rprec": {"rel": _REL, "judged_only": _JUDGED_ONLY},
    "ERR": {"cutoff": _CUT},
    "RBP": {"cutoff": _CUT, "p": Param((float, int), 0.8), "rel": Param(int)},
    "Judged": {"cutoff": _CUT},
    "Bpref": {"rel": _REL},
    "infAP": {"rel": _REL},
    "IPrec": {"recall": Param((float, int), required=True), "rel": _REL,
              "judged_only": _JUDGED_ONLY},
    "SetP": {"rel": _REL, "relative": Param(bool, False), "judged_only": _JUDGED_ONLY},
    "SetR": {"rel": _REL},
    "SetF": {"rel": _REL, "beta": Param((float, int), 1.0), "judged_only": _JUDGED_ONLY},
    "SetAP": {"rel": _REL, "judged_only": _JUDGED_ONLY},
    "NumRet": {"rel": Param(int)},
    "NumRel": {"rel": _REL},
    "NumQ": {},
}
AT_PARAM = {"IPrec": "recall"}  # what `@` sets; "cutoff" for every other measure
# ir_measures' other registered names: alias -> (measure, its parameters; a parameter written in
# the name replaces the alias's, as in ir_measures: NumRelRet(rel=2) is NumRet(rel=2)).
ALIASES: dict[str, tuple[str, dict[str, Any]]] = {
    "MAP": ("AP", {}), "MRR": ("RR", {}), "NDCG": ("nDCG", {}), "Precision": ("P", {}),
    "Recall": ("R", {}), "BPref": ("Bpref", {}), "RPrec": ("Rprec", {}),
    "SetRelP": ("SetP", {"relative": True}), "NumRelRet": ("NumRet", {"rel": 1})}
# ir_measures 0.4.3's other registered names, which jaxrank does not compute (an error that says
# so): the intent-aware and diversity measures, cwl_eval's user models, Compat, Accuracy.
NOT_COMPUTED = ("AP_IA", "Accuracy", "BPM", "Compat", "ERR_IA", "INSQ", "INST", "MAP_IA",
                "NERR8", "NERR9", "NERR10", "NERR11", "NRBP", "P_IA", "SDCG", "StRecall",
                "alpha_DCG", "alpha_nDCG", "nERR_IA", "nNRBP", "\u03b1_DCG", "\u03b1_nDCG")
DOCS = "docs/ir-measures.md"  # where the accepted names are listed
# The rank metrics: ir_measures' measure -> the metric table's record (its `ir_measures` field).
CORE = {m.ir_measures: m.name for m in _table.METRICS.values() if m.ir_measures}
# The measures that only runs and qrels have: measure -> trec_eval's measure, or for NumRel and
# NumQ jaxrank._trec.table.IR_COUNTS' (trec_eval's num_rel and num_q, but 0 for a query only in the
# qrels, as ir_measures reports those).
TREC = {"SetP": "set_P", "SetR": "set_recall", "SetF": "set_F", "SetAP": "set_map",
        "NumRet": "num_ret", "NumRel": "NumRel", "NumQ": "NumQ", "IPrec": "iprec_at_recall",
        "Bpref": "bpref", "infAP": "infAP"}
ORDERS = ("trec", "ascending", "input")
_RBP_DEPTH = 1000  # cwl_eval's max_n: RBP(rel=r) reads the top 1000 documents


@dataclasses.dataclass(frozen=True)
class Target:
  """What one ir_measures name computes in jaxrank.

  ``core`` (a metric of :mod:`jaxrank._core.table`) at cutoff ``k`` with the formula ``options``
  written in the name, or ``trec`` (a trec_eval ``-m`` spec, runs and qrels only) at trec_eval
  level ``threshold`` (``None``: the call's); ``gains`` maps grades first; ``order`` is the tie
  order of ir_measures' provider on a run: ``"trec"`` (doc id descending), ``"ascending"`` or
  ``"input"`` (the run's order).
  """

  name: str
  measure: str
  core: str | None = None
  k: int | None = None
  options: tuple[tuple[str, Any], ...] = ()
  trec: str | None = None
  threshold: int | None = None
  gains: tuple[tuple[int, int], ...] | None = None
  order: str = "trec"


_NAME = re.compile(r"\s*([^\W\d]\w*)\s*(?:\((.*)\))?\s*(?:@\s*([^@()]+?))?\s*")
_KEY = re.compile(r"\s*([A-Za-z_][A-Za-z_0-9]*)\s*=(.*)", re.DOTALL)


def is_name(name: Any) -> bool:
  """Whether ``name`` is written as an ir_measures name (its measure, exact case, is one of
  ir_measures' names, :data:`NOT_COMPUTED` included); jaxrank's own names (``ndcg@10``,
  ``map``) are not.

  Example:
    >>> from jaxrank._core import irnames as _irnames
    >>> _irnames.is_name("nDCG@10"), _irnames.is_name("ndcg@10"), _irnames.is_name("RBP(p=0.5)")
    (True, False, True)
    >>> _irnames.is_name("P_IA@10")  # an ir_measures name that jaxrank does not compute
    True
  """
  if not isinstance(name, str):
    return False
  match = _NAME.fullmatch(name)
  if match is None:
    return False
  head = match.group(1)
  return head in MEASURES or head in ALIASES or head in NOT_COMPUTED


def _split(text: str) -> list[str]:
  """``a=1, gains={0:0,1:1}`` -> ``["a=1", " gains={0:0,1:1}"]``: commas outside braces and
  quotes."""
  parts, depth, quote, start = [], 0, None, 0
  for i, c in enumerate(text):
    if quote:
      quote = None if c == quote else quote
    elif c in "'\"":
      quote = c
    elif c in "{[(":
      depth += 1
    elif c in "}])":
      depth -= 1
    elif c == "," and depth == 0:
      parts.append(text[start:i])
      start = i + 1
  parts.append(text[start:])
  return parts


def _value(name: str, key: str, text: str) -> Any:
  try:
    return ast.literal_eval(text.strip())
  except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
    raise ValueError(f"ir_measures measure {name!r}: the value of {key} must be a number, a "
                     f"quoted string, True/False or a {{grade: gain}} dict, got "
                     f"{text.strip()!r}") from None


def _of_kind(value: Any, kinds: tuple[type, ...]) -> bool:
  """``isinstance(value, kinds)``, but a bool only where ``bool`` is one of the kinds."""
  return not (isinstance(value, bool) and bool not in kinds) and isinstance(value, kinds)


def _check(name: str, measure: str, key: str, value: Any) -> Any:
  """ir_measures' type check of one parameter, plus jaxrank's range checks."""
  param = MEASURES[measure][key]
  kinds = param.kind if isinstance(param.kind, tuple) else (param.kind,)
  if not _of_kind(value, kinds):
    want = " or ".join(k.__name__ for k in kinds)
    raise ValueError(f"ir_measures measure {name!r}: {key} must be {want}, got {value!r}")
  if param.choices and value not in param.choices:
    raise ValueError(f"ir_measures measure {name!r}: {key} must be one of "
                     f"{', '.join(map(repr, param.choices))}, got {value!r}")
  if key == "cutoff" and value <= 0:
    raise ValueError(f"ir_measures measure {name!r}: the cutoff must be a positive integer, "
                     f"got {value!r}")
  if key in ("p", "recall", "beta") and not math.isfinite(value):
    raise ValueError(f"ir_measures measure {name!r}: {key} must be finite, got {value!r}")
  if key == "p" and not 0 < value < 1:
    raise ValueError(f"ir_measures measure {name!r}: p (RBP's persistence) must be in (0, 1), "
                     f"got {value!r}")
  if key == "recall" and not 0 <= value <= 1:
    raise ValueError(f"ir_measures measure {name!r}: the recall level after '@' must be in "
                     f"[0, 1], got {value!r}")
  if key == "beta" and not value > 0:
    raise ValueError(f"ir_measures measure {name!r}: beta must be positive, got {value!r}")
  if key == "rel" and value <= 0:
    raise ValueError(f"ir_measures measure {name!r}: rel must be a positive integer (jaxrank "
                     f"and trec_eval count grades >= rel as relevant), got {value!r}")
  if key == "gains" and not all(type(g) is int and type(v) is int and v >= 0
                                for g, v in value.items()):
    raise ValueError(f"ir_measures measure {name!r}: gains must map integer grades to "
                     f"non-negative integer gains, got {value!r}")
  return value


def params_of(name: str) -> tuple[str, dict[str, Any]] | None:
  """``(measure, parameters)`` of an ir_measures name as written, checked and with
  ir_measures' defaults filled in; ``None`` when ``name`` is not an ir_measures name.

  Example:
    >>> from jaxrank._core import irnames as _irnames
    >>> _irnames.params_of("RR@10")
    ('RR', {'cutoff': 10, 'rel': 1, 'judged_only': False})
  """
  parsed = _written(name)
  if parsed is None:
    return None
  measure, given = parsed
  return measure, _with_defaults(measure, given)


def _with_defaults(measure: str, given: dict[str, Any]) -> dict[str, Any]:
  """``given`` and ir_measures' defaults of the parameters of ``measure`` not in it."""
  out = dict(given)
  for key, param in MEASURES[measure].items():
    if key not in out and param.default is not _MISSING:
      out[key] = param.default
  return out


def _written(name: str) -> tuple[str, dict[str, Any]] | None:
  """``(measure, the parameters written in the name or set by its alias)``, checked; ``None``
  when ``name`` is not an ir_measures name; an error for one of :data:`NOT_COMPUTED`."""
  if not is_name(name):
    return None
  match = _NAME.fullmatch(name)
  assert match is not None  # is_name matched it
  head, inside, at = match.groups()
  if head in NOT_COMPUTED:
    raise ValueError(f"ir_measures measure {name!r}: {head} is an ir_measures measure that "
                     f"jaxrank does not compute (the ir_measures names it accepts are listed in "
                     f"{DOCS})")
  measure, fixed = ALIASES.get(head, (head, {}))
  given: dict[str, Any] = {}  # written in the name
  declared = MEASURES[measure]
  if inside is not None and inside.strip():
    for part in _split(inside):
      kv = _KEY.fullmatch(part)
      if not kv:
        raise ValueError(f"ir_measures measure {name!r}: parameters are written key=value, "
                         f"comma-separated, got {part.strip()!r}")
      key, text = kv.groups()
      if key not in declared:
        accepted = ", ".join(declared) or "none"
        raise ValueError(f"ir_measures measure {name!r}: {measure} has no parameter {key!r} "
                         f"(its parameters: {accepted})")
      if key in given:
        raise ValueError(f"ir_measures measure {name!r}: parameter {key!r} given twice")
      given[key] = _check(name, measure, key, _value(name, key, text))
  if at is not None:
    key = AT_PARAM.get(measure, "cutoff")
    if key not in declared:
      raise ValueError(f"ir_measures measure {name!r}: {measure} takes no '@' parameter")
    if key in given:
      raise ValueError(f"ir_measures measure {name!r}: {key} given twice")
    text = at.strip()
    if key == "cutoff" and not re.fullmatch(r"[0-9]+", text):
      raise ValueError(f"ir_measures measure {name!r}: the cutoff after '@' must be a positive "
                       f"integer, got {text!r}")
    given[key] = _check(name, measure, key, _value(name, key, text))
  given = {**fixed, **given}  # the alias's parameters, unless written
  for key, param in declared.items():
    if key not in given and param.required:
      raise ValueError(f"ir_measures measure {name!r}: {measure} needs its {key} "
                       f"(e.g. {measure}@{10 if key == 'cutoff' else 0.5})")
  if given.get("judged_only"):
    raise ValueError(f"ir_measures measure {name!r}: judged_only=True (trec_eval's -J) is not "
                     f"supported by jaxrank")
  return measure, given


def parse(name: str) -> Target | None:
  """The :class:`Target` of an ir_measures name, or ``None`` when ``name`` is not one.

  Example:
    >>> from jaxrank._core import irnames as _irnames
    >>> _irnames.parse("nDCG(gains={0:0,1:1,2:3})@10").gains
    ((0, 0), (1, 1), (2, 3))
    >>> _irnames.parse("RR@10").order, _irnames.parse("RBP(p=0.5,rel=2)").options
    ('ascending', (('persistence', 0.5), ('threshold', 2)))
  """
  parsed = _written(name)
  if parsed is None:
    return None
  measure, written = parsed
  p = _with_defaults(measure, written)
  cut = p.get("cutoff")
  options: dict[str, Any] = {}
  if "rel" in written and measure != "RBP":  # not written: the call's threshold (default 1)
    options["threshold"] = written["rel"]
  target = functools.partial(Target, name=name, measure=measure)
  if measure in ("SetP", "SetR", "SetF", "SetAP", "NumRel", "NumQ"):
    trec = TREC[measure]
    if measure == "SetP" and p["relative"]:
      trec = "set_relative_P"
    if measure == "SetF":
      trec = f"set_F.{p['beta']!r}"
    return target(trec=trec, threshold=written.get("rel"))
  if measure == "NumRet":
    if p.get("rel") is None:
      return target(trec="num_ret")
    return target(trec="num_rel_ret", threshold=p["rel"])
  if measure == "IPrec":
    return target(trec=f"iprec_at_recall.{p['recall']!r}", threshold=written.get("rel"))
  if measure == "nDCG":
    if p["dcg"] == "exp-log2":
      options["gain"] = "exp2"
    gain_map = p.get("gains")
    gains = tuple(sorted(gain_map.items())) if gain_map else None
    return target(core=CORE[measure], k=cut, options=tuple(options.items()), gains=gains)
  if measure == "RBP":
    if "p" in written:  # not written: the call's persistence (default 0.8, as ir_measures)
      options["persistence"] = float(written["p"])
    if p.get("rel") is None:
      options["graded"] = True  # ir_measures: rel NOT_PROVIDED means graded relevance
    else:
      options["threshold"] = p["rel"]
      cut = _RBP_DEPTH if cut is None else cut
    order = "input" if p.get("rel") is not None else "trec"
    return target(core=CORE[measure], k=cut, options=tuple(options.items()), order=order)
  order = "ascending" if (measure == "RR" and cut is not None) or measure == "Judged" else "trec"
  core_trec = TREC.get(measure) if measure in ("Bpref", "infAP") else None
  return target(core=CORE[measure], k=cut, options=tuple(options.items()), trec=core_trec,
                threshold=options.get("threshold"), order=order)


def available(target: Target) -> bool:
  """Whether the rank core has the target's metric (``Bpref``, ``infAP``, ``Judged`` need the
  ``bpref``, ``infap``, ``judged`` records)."""
  return target.core is not None and target.core in _table.METRICS


def not_in_core(target: Target, where: str) -> ValueError:
  """The error for a target that ``where`` (e.g. ``jaxrank.evaluate``) cannot compute."""
  return ValueError(f"ir_measures measure {target.name!r} ({target.measure}) needs runs and "
                    f"qrels: use jaxrank.numpy.evaluate_run or `jaxrank evaluate` (it is not "
                    f"in {where})")


def map_grades(grades: Any, gains: tuple[tuple[int, int], ...]) -> Any:
  """``grades`` with each grade of the ``gains`` map replaced by its gain (others unchanged),
  as ir_measures maps the qrels for ``nDCG(gains=...)``; NumPy or JAX arrays.

  Example:
    >>> import numpy as np
    >>> from jaxrank._core import irnames as _irnames
    >>> _irnames.map_grades(np.array([0, 1, 2, 5]), ((1, 2), (2, 7))).tolist()
    [0, 2, 7, 5]
  """
  if isinstance(grades, np.ndarray):
    out = grades.copy()
    for g, v in gains:
      out[grades == g] = v
    return out
  import jax.numpy as jnp

  grades = jnp.asarray(grades)
  mapped = grades
  for g, v in gains:
    mapped = jnp.where(grades == g, jnp.asarray(v, grades.dtype), mapped)
  return mapped
