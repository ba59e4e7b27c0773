"""The type stubs of the generated public functions equal what the tables generate.

``jaxrank.ndcg`` and its siblings are built from the metric table (one record per metric, each
option declared once in ``jaxrank._core.options``), so their source has no ``def ndcg(``; nor has
``jaxrank.evaluate`` its option parameters (derived from the same declarations), nor
``jaxrank.soft_ndcg`` and the other soft metrics (built from the table's ``soft`` names and the
soft formulas). The stubs ``jaxrank/_core/metrics.pyi`` and ``jaxrank/_soft/metrics.pyi`` write
out every public function of their module, signature and docstring, for readers, IDEs and type
checkers. They are generated, never edited: after changing a record, a soft formula or an option,
run

    python tests/core/test_stubs.py

to rewrite them; this test fails while they differ from what the tables generate.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from jaxrank._core import metrics as _metrics  # noqa: E402
from jaxrank._core import table as _table  # noqa: E402
from jaxrank._soft import metrics as _soft  # noqa: E402

HEADER = '''"""Type stub of :mod:`jaxrank._core.metrics`, generated from the metric table and the option
declarations by ``python tests/core/test_stubs.py``: do not edit (tests/core/test_stubs.py keeps it
equal)."""

from collections.abc import Callable, Mapping, Sequence

import jax
from jax.typing import ArrayLike

from jaxrank._core.table import Metric
from jaxrank._core.ranks import Ranks

def accepted(metric: Metric) -> tuple[str, ...]: ...
'''

SOFT_HEADER = '''"""Type stub of :mod:`jaxrank._soft.metrics`, generated from the metric table, the soft formulas
and the option declarations by ``python tests/core/test_stubs.py``: do not edit
(tests/core/test_stubs.py keeps it equal)."""

from collections.abc import Callable

import jax
from jax.typing import ArrayLike

FUNCTIONS: dict[str, Callable]
'''


def _parameter(p: inspect.Parameter) -> str:
  stars = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
  text = stars + p.name
  if p.annotation is not p.empty:
    text += f": {p.annotation}"
  return text if p.default is p.empty else f"{text} = {p.default!r}"


def render_function(fn) -> str:
  """``def name(...) -> ...:`` with the docstring, as a stub writes a function."""
  sig = inspect.signature(fn)
  params, starred = [], False
  for p in sig.parameters.values():
    if p.kind is p.KEYWORD_ONLY and not starred:
      params.append("*")
    starred = starred or p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)
    params.append(_parameter(p))
  head = f"def {fn.__name__}(\n" + "".join(f"    {p},\n" for p in params)
  returns = "" if sig.return_annotation is sig.empty else f" -> {sig.return_annotation}"
  doc = textwrap.indent(inspect.cleandoc(fn.__doc__), "  ")
  return f'{head}){returns}:\n  r"""{doc.lstrip()}\n  """\n'


def metrics_stub() -> str:
  functions = [render_function(getattr(_metrics, name)) for name in _metrics.__all__]
  return HEADER + "\n" + "\n".join(functions)


def soft_stub() -> str:
  functions = [render_function(getattr(_soft, name)) for name in _soft.__all__]
  return SOFT_HEADER + "\n" + "\n".join(functions)


STUBS = {ROOT / "jaxrank" / "_core" / "metrics.pyi": metrics_stub,
         ROOT / "jaxrank" / "_soft" / "metrics.pyi": soft_stub}


def test_stubs_equal_what_the_tables_generate():
  for path, render in STUBS.items():
    assert path.read_text() == render(), (
        f"{path.relative_to(ROOT)} is out of date: run `python tests/core/test_stubs.py`")


def test_stubs_are_python():
  for path in STUBS:
    ast.parse(path.read_text(), filename=str(path))


def test_every_metric_has_its_def_in_the_stub():
  text = (ROOT / "jaxrank" / "_core" / "metrics.pyi").read_text()
  for name in [*_table.NAMES, "evaluate", "mean", "parse_metric"]:
    assert f"\ndef {name}(\n" in text


def test_every_soft_metric_has_its_def_in_the_stub():
  text = (ROOT / "jaxrank" / "_soft" / "metrics.pyi").read_text()
  soft = [m.soft for m in _table.METRICS.values() if m.soft]
  assert soft
  for name in [*soft, "as_loss", "soft_ndcg_loss"]:
    assert f"\ndef {name}(\n" in text


def test_the_stub_declares_every_public_name_of_its_module():
  # A stub hides its module from type checkers: a public name it lacks is unknown to them.
  for path in STUBS:
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    tree = ast.parse(path.read_text())
    declared = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    declared |= {node.target.id for node in tree.body if isinstance(node, ast.AnnAssign)}
    public = {name for name, value in vars(sys.modules[module]).items()
              if not name.startswith("_") and getattr(value, "__module__", None) == module}
    assert public <= declared, f"{path.relative_to(ROOT)} lacks {sorted(public - declared)}"


if __name__ == "__main__":
  for path, render in STUBS.items():
    path.write_text(render())
    print("wrote", path.relative_to(ROOT))
