"""Every metric option, declared once: its default, its type, its check and its documentation.

The public metric functions' signatures (:mod:`jaxrank._core.metrics`), :func:`jaxrank.evaluate`'s
option check and :func:`make_options` (the hashable :class:`~jaxrank._core.formulas.Options` the
formulas read) are all derived from :data:`OPTIONS`. An option is of one of two kinds:

* ``"formula"``: read by some formulas; stored in ``Options`` and checked here;
* ``"input"``: read when the rank core is built (``k``, ``where``, ``tie_key``, ``max_relevant``,
  ``method``; ``judged`` only by the judgment-based metrics, which name it); checked by the rank
  core's constructors.

Each metric of :mod:`jaxrank._core.table` names the formula options it reads; ``ties`` and ``empty``
concern every metric and are never named there.

A third kind, ``"soft"``, is read by the soft metrics only (:data:`SOFT_OPTIONS`:
``temperature``, ``cutoff_temperature``, ``operator``). The other public faces take their option
parameters from here too: :func:`takes` gives a function written with ``**options`` the exact
keyword-only parameters (``inspect.signature``), their defaults and their documentation, for
:mod:`jaxrank.numpy`, :mod:`jaxrank.catalog`, :mod:`jaxrank.state` and the soft metrics
(:data:`FACE_OPTIONS`, :data:`SOFT`).

Example:
  >>> from jaxrank._core import options as _options
  >>> _options.OPTIONS["beta"].default, _options.OPTIONS["persistence"].default
  (1.0, 0.8)
  >>> _options.make_options(beta=2).beta
  2.0
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import textwrap
from collections.abc import Callable, Sequence
from typing import Any, cast

from jaxrank._core import checks as _checks
from jaxrank._core import formulas as _formulas
from jaxrank._core import rankform as _rankform
from jaxrank._core.formulas import Options


@dataclasses.dataclass(frozen=True)
class Option:
  """One option: name, default, annotation (as written in signatures), kind, check and doc."""

  name: str
  default: Any
  annotation: str
  kind: str  # "formula", "input" or "soft"
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
           "``tie_key`` first).", _choice("ties", _rankform.TIES)),
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
  """Checks the given formula options and returns the hashable ``Options``, the others at their
  declared defaults.

  Example:
    >>> from jaxrank._core import options as _options
    >>> _options.make_options(ties="first", persistence=0.5).persistence
    0.5
  """
  values = {name: OPTIONS[name].default for name in FORMULA_OPTIONS}
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
  import jax  # here only: importing the options (the host's metric names) needs no JAX
  import jax.numpy as jnp
  x = jnp.asarray([[1.0, 2.0, 3.0]], jnp.float32)
  try:
    with jax.ensure_compile_time_eval():
      y = jnp.asarray(fn(x))
  except Exception as e:  # any failure of the user's callable is reported
    raise TypeError(f"{name} must be a callable of an array of {of}, returning an array of the "
                    f"same shape; calling it on {x.tolist()} raised {type(e).__name__}: {e}"
                    ) from None
  if y.shape != x.shape or not jnp.issubdtype(y.dtype, jnp.number):
    raise TypeError(f"{name} must return a numeric array of the shape of its input; "
                    f"{name}({x.tolist()}) gave {y.dtype} of shape {tuple(y.shape)}")


# ----------------------------------------------------------------------------------------------
# The options of the other faces, and their signatures.


def _temperature(name):
  def check(value):
    return value if value is None and name == "cutoff_temperature" else (
        _checks.check_temperature(name, value))
  return check


# The soft rank operators (jaxrank.soft_ranks and the soft metrics' ``operator=``).
OPERATORS = ("sigmoid", "neuralsort", "softsort", "fast_l2", "fast_kl")

# Options of the soft metrics only (jaxrank.soft_ndcg, ...), declared like the rest.
SOFT_OPTIONS: dict[str, Option] = {o.name: o for o in [
    Option("temperature", 1.0, "float", "soft",
           "the operator's temperature (:func:`jaxrank.soft_ranks`: score units for "
           "``\"sigmoid\"``, ``\"neuralsort\"``, ``\"softsort\"``; the regularisation "
           "strength for ``\"fast_l2\"``/``\"fast_kl\"``).", _temperature("temperature")),
    Option("cutoff_temperature", None, "float | None", "soft",
           "the temperature, in rank units, of the smooth cutoff at ``k`` and of the pairwise "
           "step between relevant items (default: ``temperature``).",
           _temperature("cutoff_temperature")),
    Option("operator", "sigmoid", "str", "soft",
           "``\"sigmoid\"`` (default; O(R n)), ``\"neuralsort\"``, ``\"softsort\"``, "
           "``\"fast_l2\"``, ``\"fast_kl\"``.", _choice("operator", OPERATORS)),
]}

# The formula options that jaxrank.numpy, jaxrank.catalog.evaluate and the metric states take,
# in signature order (each face may move ``ties`` or leave options out; see takes).
FACE_OPTIONS = ("threshold", "gain", "discount", "ties", "empty", "ap_denominator",
                "precision_denominator", "beta", "persistence", "graded", "max_grade")
# The options every soft metric takes, in signature order.
SOFT = ("k", "where", "threshold", "gain", "discount", "empty", "ap_denominator",
        "precision_denominator", "temperature", "cutoff_temperature", "operator", "max_relevant")


def declared(name: str) -> Option | None:
  """The one declaration of option ``name`` (:data:`OPTIONS` or :data:`SOFT_OPTIONS`), or None.

  Example:
    >>> from jaxrank._core import options as _options
    >>> _options.declared("temperature").default, _options.declared("scores")
    (1.0, None)
  """
  return OPTIONS.get(name) or SOFT_OPTIONS.get(name)


def _declaration(name: str) -> Option:
  """:func:`declared` for a name the caller knows is declared (typed as found; an unknown name
  fails where its declaration is used, as before)."""
  return cast(Option, declared(name))


def check(name: str, value: Any) -> Any:
  """``value`` checked (and normalised) by the declaration of option ``name``.

  Example:
    >>> from jaxrank._core import options as _options
    >>> _options.check("persistence", 0.5)
    0.5
  """
  option = _declaration(name)
  return option.check(value) if option.check else value


def parameters(names: Sequence[str]) -> list[inspect.Parameter]:
  """Keyword-only parameters of the options ``names``: their declared defaults and annotations.

  Example:
    >>> from jaxrank._core import options as _options
    >>> [str(p) for p in _options.parameters(["ties", "beta"])]
    ["ties: 'str' = 'average'", "beta: 'float' = 1.0"]
  """
  return [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                            default=_declaration(name).default,
                            annotation=_declaration(name).annotation) for name in names]


def documentation(names: Sequence[str], indent: str = "    ") -> str:
  """One ``name: doc`` entry per option (wrapped at 100 columns), as the docstrings' ``Options:``
  sections list them."""
  return "".join(textwrap.fill(f"{name}: {_declaration(name).doc}", 100, initial_indent=indent,
                               subsequent_indent=indent + "  ", break_long_words=False,
                               break_on_hyphens=False) + "\n" for name in names)


def takes(names: Sequence[str], *, first: Sequence[str] = (), skip: Sequence[str] = (),
          after: str | None = None) -> Callable[[Callable], Callable]:
  """A decorator: ``fn(..., **options)`` gets the options ``names`` as keyword-only parameters.

  The wrapped function's signature (``inspect.signature``) lists the options ``first``, then
  ``names`` without ``first`` and ``skip``, each with its declared default and annotation, right
  after the parameter ``after`` (default: after all of ``fn``'s own); ``fn`` receives every one
  of them, defaults filled in, in ``**options``; any other keyword is a ``TypeError`` as for a
  hand-written signature. Their documentation is added to the docstring (before its example).
  Checking the values stays with ``fn`` (e.g. :func:`make_options`). A keyword-only parameter of
  ``fn``'s own named in ``names`` keeps its place among the options (:func:`jaxrank.evaluate`'s
  ``reduce``) and reaches ``fn`` as its own keyword.

  Example:
    >>> import inspect
    >>> from jaxrank._core import options as _options
    >>> @_options.takes(["ties", "beta"])
    ... def f(x, *, scale=1, **options):
    ...   \"\"\"Doc.\"\"\"
    ...   return x * scale, options
    >>> str(inspect.signature(f))
    "(x, *, scale=1, ties: 'str' = 'average', beta: 'float' = 1.0)"
    >>> f(2, beta=3.0)
    (2, {'ties': 'average', 'beta': 3.0})
    >>> @_options.takes(["ties", "scale", "beta"])
    ... def g(x, *, scale=1, **options):
    ...   \"\"\"Doc.\"\"\"
    ...   return x * scale, options
    >>> str(inspect.signature(g))
    "(x, *, ties: 'str' = 'average', scale=1, beta: 'float' = 1.0)"
  """
  names = tuple(first) + tuple(n for n in names if n not in first and n not in skip)

  def wrap(fn: Callable) -> Callable:
    sig = inspect.signature(fn)
    own = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
    if len(own) == len(sig.parameters):
      raise TypeError(f"{fn.__qualname__} must take **options to receive its options")
    placed = {p.name: p for p in own if p.name in names and p.kind is p.KEYWORD_ONLY}
    options = tuple(n for n in names if n not in placed)
    unknown = [n for n in options if declared(n) is None]
    if unknown:
      raise ValueError(f"takes: {unknown[0]!r} is no declared option")
    defaults = {name: _declaration(name).default for name in options}
    keywords = {p.name for p in own if p.kind is not p.POSITIONAL_ONLY}
    own = [p for p in own if p.name not in placed]
    at = len(own) if after is None else [p.name for p in own].index(after) + 1
    declared_ = iter(parameters(options))
    block = [placed[n] if n in placed else next(declared_) for n in names]
    qualname = fn.__qualname__

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
      options = dict(defaults)
      for key in list(kwargs):
        if key in defaults:
          options[key] = kwargs.pop(key)
        elif key not in keywords:
          raise TypeError(f"{qualname}() got an unexpected keyword argument {key!r}")
      return fn(*args, **kwargs, **options)

    # (cast: functools.wraps's type declares no __signature__; inspect.signature reads it)
    cast(Any, wrapper).__signature__ = sig.replace(parameters=own[:at] + block + own[at:])
    wrapper.__doc__ = _with_options_doc(fn.__doc__ or "", options)
    return wrapper

  return wrap


def _with_options_doc(doc: str, names: Sequence[str]) -> str:
  """``doc`` with an ``Options:`` section of ``names``, before its example if it has one."""
  lines = doc.split("\n")
  body = [line for line in lines[1:] if line.strip()]
  indent = min((len(line) - len(line.lstrip()) for line in body), default=2) * " "
  section = [f"{indent}Options:"] + documentation(names, indent + "  ").rstrip("\n").split("\n")
  at = next((i for i, line in enumerate(lines) if i and line.strip().startswith("Example")),
            None)
  if at is None:
    return doc.rstrip() + "\n\n" + "\n".join(section) + "\n"
  return "\n".join(lines[:at] + section + [""] + lines[at:])
