"""The type stubs of the generated public functions equal what the tables generate.

``jaxrank.ndcg`` and its siblings are built from the metric table (one record per metric, each
option declared once in ``jaxrank._core.options``), so their source has no ``def ndcg(``. The
stub ``jaxrank/_core/metrics.pyi`` writes each one out, signature and docstring, for readers,
IDEs and type checkers. It is generated, never edited: after changing a record or an option, run

    python tests/test_stubs.py

to rewrite it; this test fails while it differs from what the table generates.
"""

from __future__ import annotations

import inspect
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import jaxrank  # noqa: E402
from jaxrank._core import table as _table  # noqa: E402

HEADER = '''"""Type stub of :mod:`jaxrank._core.metrics`, generated from the metric table and the option
declarations by ``python tests/test_stubs.py``: do not edit (tests/test_stubs.py keeps it equal)."""

from collections.abc import Callable

import jax
from jax.typing import ArrayLike

from jaxrank._core.table import Metric
from jaxrank._core.ranks import Ranks

def accepted(metric: Metric) -> tuple[str, ...]: ...
'''


def _parameter(p: inspect.Parameter) -> str:
  text = f"{p.name}: {p.annotation}"
  return text if p.default is inspect.Parameter.empty else f"{text} = {p.default!r}"


def render_function(fn) -> str:
  """``def name(...) -> ...:`` with the docstring, as a stub writes a function."""
  sig = inspect.signature(fn)
  params, starred = [], False
  for p in sig.parameters.values():
    if p.kind is p.KEYWORD_ONLY and not starred:
      params.append("*")
      starred = True
    params.append(_parameter(p))
  head = f"def {fn.__name__}(\n" + "".join(f"    {p},\n" for p in params)
  doc = textwrap.indent(inspect.cleandoc(fn.__doc__), "  ")
  return f'{head}) -> {sig.return_annotation}:\n  r"""{doc.lstrip()}\n  """\n'


def metrics_stub() -> str:
  functions = [render_function(getattr(jaxrank, name)) for name in _table.NAMES]
  return HEADER + "\n" + "\n".join(functions)


STUBS = {ROOT / "jaxrank" / "_core" / "metrics.pyi": metrics_stub}


def test_stubs_equal_what_the_tables_generate():
  for path, render in STUBS.items():
    assert path.read_text() == render(), (
        f"{path.relative_to(ROOT)} is out of date: run `python tests/test_stubs.py`")


def test_every_metric_has_its_def_in_the_stub():
  text = (ROOT / "jaxrank" / "_core" / "metrics.pyi").read_text()
  for name in _table.NAMES:
    assert f"\ndef {name}(\n" in text


if __name__ == "__main__":
  for path, render in STUBS.items():
    path.write_text(render())
    print("wrote", path.relative_to(ROOT))
