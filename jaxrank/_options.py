"""Every metric option, declared once: its default, its type, its check and its documentation.

The public metric functions' signatures (:mod:`jaxrank._metrics`), :func:`jaxrank.evaluate`'s
option check and :func:`make_options` (the hashable :class:`~jaxrank._formulas.Options` the
formulas read) are all derived from :data:`OPTIONS`. An option is of one of two kinds:

* ``"formula"``: read by some formulas; stored in ``Options`` and checked here;
* ``"input"``: read when the rank core is built (``k``, ``where``, ``tie_key``, ``max_relevant``,
  ``method``; ``judged`` only by the judgment-based metrics, which name it); checked by the rank
  core's constructors.

Each metric of :mod:`jaxrank._table` names the formula options it reads; ``ties`` and ``empty``
concern every metric and are never named there.

Example:
  >>> from jaxrank import _options
  >>> _options.OPTIONS["beta"].default, _options.OPTIONS["persistence"].default
  (1.0, 0.8)
  >>> _options.make_options(beta=2).beta
  2.0
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxrank import _checks, _formulas, _ranks
from jaxrank._formulas import Options


@dataclasses.dataclass(frozen=True)
class Option:
  """One option: name, default, annotation (as written in signatures), kind, check and doc."""

  name: str
  default: Any
  annotation: str
  kind: str  # "formula" or "input"
  doc: str
  check: Callable[[Any], Any] | None = None  # value -> normalised value, raises on bad input


def _beta(value):
  if value == math.inf:  # F-beta's limit for beta -> inf is recall (see fbeta)
    return value
  try:
    return _checks.check_positive_number("beta", value)
  except ValueError:
    raise ValueError(f"beta must be a positive number (inf: recall), got {value!r}") from None


def _gain(value):
  if callable(value):
    probe("gain", value, "grades")
  else:
    _checks.check_choice("gain", value, _formulas.GAINS)
  return value


def _discount(value):
  if value is not None and not callable(value):
    raise TypeError(f"discount must be a callable of the 1-based rank or None, got {value!r}")
  if value is not None:
    probe("discount", value, "1-based ranks")
  return value


def _choice(name, choices):
  def check(value):
    _checks.check_choice(name, value, choices)
    return value
  return check


def _persistence(value):
  return _checks.check_unit_interval("persistence", value)


def _graded(value):
  if not isinstance(value, bool):
    raise TypeError(f"graded must be True or False, got {value!r}")
  return value


def _max_grade(value):
  return _checks.check_positive_number("max_grade", value)


OPTIONS: dict[str, Option] = {o.name: o for o in [
    Option("k", None, "int | None", "input",
           "cutoff (a positive int of any size) or None for the whole list."),
    Option("where", None, "ArrayLike | None", "input",
           "``[..., n]`` bool mask of valid items (False = padding, not ranked)."),
    Option("judged", None, "ArrayLike | None", "input",
           "``[..., n]`` bool: which items carry a judgment (dense input; default: every item). "
           "False items are not judged; a True item with a negative label is in the pool but "
           "unjudged (see :func:`jaxrank.from_dense`)."),
    Option("threshold", 1, "float", "formula",
           "an item is relevant when its grade is ``>= threshold`` (default 1, as trec_eval).",
           lambda v: _checks.check_positive_number("threshold", v)),
    Option("gain", "linear", "str | Callable", "formula",
           "``\"linear\"`` (y), ``\"exp2\"`` (2^y - 1) or a callable of the grades.", _gain),
    Option("discount", None, "Callable | None", "formula",
           "a callable of the 1-based rank (default :func:`jaxrank.log2_discount`).", _discount),
    Option("ties", "average", "str", "formula",
           "``\"average\"`` (default; the exact expectation over all orders of tied scores), "
           "``\"optimistic\"`` (relevant, higher-graded items first in each tie), "
           "``\"pessimistic\"`` (last), or ``\"first\"`` (earlier index first, or larger "
           "``tie_key`` first).", _choice("ties", _ranks.TIES)),
    Option("tie_key", None, "ArrayLike | None", "input",
           "``[..., n]`` secondary key for ``ties=\"first\"``."),
    Option("empty", "zero", "str", "formula",
           "value for lists without relevant items: ``\"zero\"`` (default; trec_eval, sklearn, "
           "Rax), ``\"nan\"``, or ``\"skip\"`` (NaN per list, left out of :func:`jaxrank.mean`).",
           _choice("empty", _formulas.EMPTY)),
    Option("ap_denominator", "all", "str", "formula",
           "``\"all\"`` (R), ``\"min_k\"`` (min(k, R)) or ``\"retrieved\"`` (relevant in the "
           "top k).", _choice("ap_denominator", _formulas.AP_DENOMINATORS)),
    Option("precision_denominator", "k", "str", "formula",
           "``\"k\"`` or ``\"min_k_n\"`` (min(k, list length)).",
           _choice("precision_denominator", _formulas.PRECISION_DENOMINATORS)),
    Option("beta", 1.0, "float", "formula", "the weight of recall in F-beta (inf: recall).",
           _beta),
    Option("persistence", 0.8, "float", "formula",
           "RBP's probability of going on to the next rank, in (0, 1) (ir_measures' default "
           "0.8; trec_eval's rbp uses 0.9).", _persistence),
    Option("max_grade", 4.0, "float", "formula",
           "ERR's top grade: stop probability (2^y - 1) / 2^max_grade (gdeval, RankLib: 4).",
           _max_grade),
    Option("graded", False, "bool", "formula",
           "RBP's gains: False (1 per relevant item) or True (grade over the list's largest "
           "grade when that is above 1, trec_eval's rbp).", _graded),
    Option("max_relevant", None, "int | None", "input",
           "performance only: an upper bound on relevant items per list (see "
           ":func:`jaxrank.from_dense`)."),
    Option("method", "auto", "str", "input",
           "performance only: ``\"auto\"``, ``\"count\"`` or ``\"sort\"`` (see "
           ":func:`jaxrank.from_dense`)."),
]}

# Options every exact metric reads: the input ones and the two policies (ties, empty).
COMMON = ("k", "where", "ties", "tie_key", "empty", "max_relevant", "method")
FORMULA_OPTIONS = tuple(name for name, o in OPTIONS.items() if o.kind == "formula")


def make_options(**given: Any) -> Options:
  """Checks the given formula options and returns the hashable ``Options`` (defaults elsewhere).

  Example:
    >>> from jaxrank import _options
    >>> _options.make_options(ties="first", persistence=0.5).persistence
    0.5
  """
  values = {}
  for name, value in given.items():
    option = OPTIONS.get(name)
    if option is None or option.kind != "formula":
      raise TypeError(f"unknown metric option {name!r}; the options are "
                      f"{', '.join(FORMULA_OPTIONS)}")
    values[name] = option.check(value) if option.check else value
  return Options(**values)


def unused(given: dict[str, Any], used: set[str]) -> list[str]:
  """The names among ``given`` that are set to something other than their default and that
  none of the ``used`` options names (an option no requested metric reads)."""
  out = []
  for name, value in given.items():
    if name in used:
      continue
    default = OPTIONS[name].default
    if value is default or (not callable(value) and value == default
                            and type(value) is not bool):
      continue
    out.append(name)
  return out


def probe(name: str, fn: Callable, of: str) -> None:
  """A gain/discount callable must map a float array to a numeric array of its shape.

  Checked eagerly (once per hashable callable), so a wrong one fails here with its name and not
  inside a compiled metric.
  """
  try:
    hash(fn)
  except TypeError:
    _probe.__wrapped__(name, fn, of)
  else:
    _probe(name, fn, of)


@functools.lru_cache(maxsize=64)
def _probe(name: str, fn: Callable, of: str) -> None:
  x = jnp.asarray([[1.0, 2.0, 3.0]], jnp.float32)
  try:
    with jax.ensure_compile_time_eval():
      y = jnp.asarray(fn(x))
  except Exception as e:  # noqa: BLE001 - any failure of the user's callable is reported
    raise TypeError(f"{name} must be a callable of an array of {of}, returning an array of the "
                    f"same shape; calling it on {x.tolist()} raised {type(e).__name__}: {e}"
                    ) from None
  if y.shape != x.shape or not jnp.issubdtype(y.dtype, jnp.number):
    raise TypeError(f"{name} must return a numeric array of the shape of its input; "
                    f"{name}({x.tolist()}) gave {y.dtype} of shape {tuple(y.shape)}")
