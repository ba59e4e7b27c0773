"""The API reference (docs/api/, Sphinx) has an entry for every public name, and its generated
pages come from the tables; checked on the ``.rst`` sources, without running Sphinx (CI's docs
step builds it with ``-W``, where ``apigen`` makes the same check)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from test_public_api import PUBLIC

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"


@pytest.fixture(scope="module")
def apigen():
  spec = importlib.util.spec_from_file_location("apigen", API / "apigen.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def pages(apigen) -> list[str]:
  return [p.read_text() for p in sorted(API.glob("*.rst"))] + [apigen.metrics_rst()]


def test_every_public_module_has_a_page(apigen):
  assert sorted(apigen.PAGES) == sorted(PUBLIC)
  for module, page in apigen.PAGES.items():
    text = (API / f"{page}.rst").read_text()
    assert f".. automodule:: {module}\n" in text, page
    assert f"   {page}\n" in (API / "index.rst").read_text(), f"{page} is not in the toctree"


def test_every_public_name_has_an_entry(apigen):
  names = apigen.public_names()
  assert {f"{m}.{n}" for m, ns in PUBLIC.items() for n in ns.split()} <= set(names)
  assert apigen.missing(apigen.listed_names(pages(apigen))) == []


def test_a_missing_entry_is_reported(apigen):
  listed = apigen.listed_names(pages(apigen))
  gone = {"jaxrank.io.read_run", "jaxrank.ndcg", "jaxrank.cli.main", "jaxrank.stats"}
  assert sorted(apigen.missing(listed - gone)) == sorted(gone)


def test_listed_names_reads_relative_and_qualified_entries(apigen):
  text = (".. automodule:: jaxrank.io\n\n.. currentmodule:: jaxrank.io\n\n"
          ".. autofunction:: read_run\n.. autoclass:: jaxrank.Ranks\n   :members:\n"
          ".. py:class:: Qrels\n")
  assert apigen.listed_names([text]) == {"jaxrank.io", "jaxrank.io.read_run", "jaxrank.Ranks",
                                         "jaxrank.io.Qrels"}


def test_metric_page_is_the_metric_table(apigen):
  from jaxrank._core import options, table

  text = apigen.metrics_rst()
  for m in table.METRICS.values():
    assert f".. autofunction:: jaxrank.{m.name}\n" in text
    assert f":func:`~jaxrank.{m.name}`" in text
    for name in (*m.trec, *m.aliases, *m.options):
      assert f"``{name}" in text, (m.name, name)
  for name in [*options.OPTIONS, *options.SOFT_OPTIONS]:
    assert f"``{name}``" in text


def test_trec_measure_page_is_the_measure_table(apigen):
  from jaxrank._trec import table as evaluate

  text = apigen.trec_measures_rst()
  rows = re.findall(r"^   \* - ``([^`]+)``$", text, re.M)
  assert rows[:len(evaluate.MEASURES)] == list(evaluate.MEASURES)
  assert rows[len(evaluate.MEASURES):] == list(evaluate.UNSUPPORTED)
  assert "``5,10,15,20,30,100,200,500,1000``" in text  # P's default cutoffs


def test_command_help_is_generated(apigen):
  assert apigen.command_help("evaluate").startswith("usage: jaxrank evaluate")
  assert apigen.command_help("compare").startswith("usage: jaxrank compare")


def test_generated_pages_are_not_committed():
  ignored = (ROOT / ".gitignore").read_text().split()
  assert "docs/api/_generated/" in ignored and "docs/api/_build/" in ignored


def test_ci_builds_the_docs_with_warnings_as_errors():
  ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith("#")]
  build = "python -m sphinx -W --keep-going -q -b html docs/api docs/api/_build/html"
  assert build in ci and ci.index(build) < len(ci) - 1  # before the tests (the last line)


def test_metric_signatures_are_the_declared_ones(apigen):
  import jaxrank

  params, returns = apigen.declared_signature(jaxrank.ndcg)
  assert params.startswith("(scores: ArrayLike | Ranks, labels: ArrayLike | None = None, *, k:")
  assert "gain: str | Callable = 'linear'" in params and returns == "jax.Array"
  assert apigen.declared_signature(jaxrank.evaluate) is None  # Sphinx reads its annotations


# ------------------------------------------------------------------- docs/architecture.md
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()


def test_architecture_draws_every_layer():
  from test_layers import MODULES, RANKS

  diagram = ARCHITECTURE.split("## Layers", 1)[1].split("```text", 1)[1].split("```", 1)[0]
  rows = {int(m.group(1)): m.group(2).split() for m in re.finditer(r"^ *(\d) +(.*)$", diagram,
                                                                     re.M)}
  for package, rank in RANKS.items():
    if package in MODULES:
      name = "jaxrank" if package == "jaxrank" else package.removeprefix("jaxrank.")
      assert name in rows.get(rank, ()), f"docs/architecture.md: {name} is not in layer {rank}"


def test_architecture_names_existing_files():
  paths = set(re.findall(r"(?<![\w/.])((?:_core|_soft|_host|_trec|io|numpy|stats|cli)/"
                         r"(?:\w+\.py)?|\w+\.py)(?!\w)", ARCHITECTURE))
  assert paths
  for path in paths:
    target = ROOT / "jaxrank" / path
    assert target.exists() or (ROOT / path).exists(), f"docs/architecture.md names {path}"


def test_architecture_walks_through_existing_functions():
  """Every snake_case name of the two walk-throughs is defined somewhere in jaxrank."""
  walks = "".join(re.findall(r"```text\n(.*?)```", ARCHITECTURE, re.S)[1:])
  source = "\n".join(p.read_text() for p in (ROOT / "jaxrank").rglob("*.py"))
  names = set(re.findall(r"(?<![\w/])([a-z_]\w*_\w+)(?![\w/])", walks)) - {"trec_eval", "ndcg_cut"}
  assert len(names) > 20
  for name in sorted(names):
    assert re.search(rf"(def|class) {name}\b|^{name} = |^\s+{name}: ", source, re.M), \
        f"docs/architecture.md names {name}, which jaxrank no longer defines"
