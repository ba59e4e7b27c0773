"""The layer contract: jaxrank's packages import only downward, with no cycle.

The layers, lowest first (docs/architecture.md draws them):

====  ===========================================================  ===============================
rank  packages                                                     what they hold
====  ===========================================================  ===============================
0     ``jaxrank.io``, ``_version``, ``_lazy``                      TREC files, ids, dicts (NumPy)
1     ``jaxrank._core``                                            the JAX rank core
2     ``jaxrank._soft``, ``jaxrank._host``                         soft metrics; host paths
3     ``jaxrank._trec``                                            trec_eval measures on runs
4     ``jaxrank.numpy``, ``jaxrank.stats``                         NumPy face; significance tests
5     ``catalog``, ``linkpred``, ``plot``, ``sharding``, ``state``  front ends
6     ``jaxrank.adapters``, ``jaxrank.compare``                    front ends over front ends
7     ``jaxrank.cli``                                              the command
8     ``jaxrank`` (``__init__``), ``jaxrank.__main__``              the public face
====  ===========================================================  ===============================

A module may import modules of its own package (without a cycle) and of lower layers; never of
its own layer's other packages or of a higher one. Imports inside functions count too: they are
listed in :data:`LOCAL`, each with its reason (start-up time or an optional dependency), so a new
one is a decision, never a way around a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jaxrank"

RANKS = {
    "jaxrank._version": 0, "jaxrank._lazy": 0, "jaxrank.io": 0,
    "jaxrank._core": 1,
    "jaxrank._soft": 2, "jaxrank._host": 2,
    "jaxrank._trec": 3,
    "jaxrank.numpy": 4, "jaxrank.stats": 4,
    "jaxrank.catalog": 5, "jaxrank.linkpred": 5, "jaxrank.plot": 5, "jaxrank.sharding": 5,
    "jaxrank.state": 5,
    "jaxrank.adapters": 6, "jaxrank.compare": 6,
    "jaxrank.cli": 7,
    "jaxrank": 8, "jaxrank.__main__": 8,
}

# Imports inside functions: (importing module, imported module) -> why it is not at the top.
_START = ("start-up: the command imports only the standard library until it has parsed its "
          "arguments and installed its Ctrl-C handler (exit_on_interrupt)")
LOCAL = {
    ("jaxrank.cli", "jaxrank._host.cache"): _START,
    ("jaxrank.cli", "jaxrank._trec.plan"): _START,
    ("jaxrank.cli", "jaxrank._trec.table"): _START,
    ("jaxrank.cli", "jaxrank.cli._compare"): _START,
    ("jaxrank.cli", "jaxrank.io"): _START,
    ("jaxrank._host.scoring", "jaxrank._host.device"): "JAX only for the compiled kernel: a run "
                                                       "scored on NumPy never imports it",
    ("jaxrank.state", "jaxrank.numpy"): "HostMetricState only: `jaxrank.MetricState` loads no "
                                        "NumPy face, TREC layer or io",
}


def module_name(path: Path) -> str:
  parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
  return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def unit(module: str) -> str:
  """The package of the layer table that ``module`` belongs to."""
  best = max((u for u in RANKS if module == u or module.startswith(u + ".")), key=len,
             default=None)
  if best is None:
    raise AssertionError(f"{module} is in no layer of RANKS: add it to the table (and to "
                         f"docs/architecture.md)")
  return best


def imports(module: str) -> list[tuple[str, bool, int]]:
  """``(imported jaxrank module, inside a function, line)`` for every import of ``module``."""
  path = MODULES[module]
  tree = ast.parse(path.read_text())
  package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
  out = []

  def visit(node: ast.AST, local: bool) -> None:
    for child in ast.iter_child_nodes(node):
      inside = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
      if isinstance(child, ast.Import):
        out.extend((a.name, local, child.lineno) for a in child.names)
      elif isinstance(child, ast.ImportFrom):
        if child.level:
          base = package.split(".")[: len(package.split(".")) - child.level + 1]
          source = ".".join(base + ([child.module] if child.module else []))
        else:
          source = child.module or ""
        for a in child.names:
          sub = f"{source}.{a.name}"
          out.append((sub if sub in MODULES else source, local, child.lineno))
      visit(child, inside)

  visit(tree, False)
  return [(name, local, line) for name, local, line in out
          if name in MODULES and name != module]


EDGES = {m: imports(m) for m in MODULES}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down(module):
  mine = unit(module)
  for target, _local, line in EDGES[module]:
    theirs = unit(target)
    if theirs == mine:
      continue
    assert RANKS[theirs] < RANKS[mine], (
        f"{module}:{line} imports {target}: layer {RANKS[theirs]} ({theirs}) is not below "
        f"layer {RANKS[mine]} ({mine}); move the shared piece down or the importer up")


def test_function_local_imports_are_listed():
  found = {(m, t) for m in MODULES for t, local, _ in EDGES[m] if local}
  assert found == set(LOCAL), (
      f"unlisted function-local imports: {sorted(found - set(LOCAL))}; listed but gone: "
      f"{sorted(set(LOCAL) - found)}")


def test_no_import_cycle():
  graph = {m: {t for t, _, _ in EDGES[m]} for m in MODULES}
  # a package's __init__ re-exporting its own modules is not a cycle of the layering
  for m in graph:
    graph[m] = {t for t in graph[m] if not (MODULES[t].name == "__init__.py"
                                            and m.startswith(t + "."))}
  state: dict[str, int] = {}
  path: list[str] = []

  def visit(v: str) -> None:
    state[v] = 1
    path.append(v)
    for w in sorted(graph[v]):
      if state.get(w) == 1:
        cycle = path[path.index(w):] + [w]
        raise AssertionError("import cycle: " + " -> ".join(cycle))
      if w not in state:
        visit(w)
    path.pop()
    state[v] = 2

  for v in sorted(graph):
    if v not in state:
      visit(v)


def test_every_module_has_a_layer():
  for m in MODULES:
    unit(m)
