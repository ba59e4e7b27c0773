"""Public faces whose names are imported on first use (PEP 562).

A package's ``__init__`` declares each such name once, as an import in its ``if TYPE_CHECKING:``
block (what readers and type checkers see); :func:`sources` reads that block back, and the
package's ``__getattr__`` (:func:`attribute`) imports a name's module when the name is first
used. So ``import jaxrank`` and ``import jaxrank.numpy`` do not import JAX: ``jaxrank evaluate``
and ``jaxrank.numpy.evaluate_run`` on a run of trec_eval measures never need it.
"""

from __future__ import annotations

import importlib
import re
from typing import Any


def sources(init_file: str, package: str) -> dict[str, str]:
  """``{name: where it is imported from}`` of the imports in the ``if TYPE_CHECKING:`` block of
  ``init_file`` (up to its ``__all__``): the module holding the name, or ``package.name`` for a
  submodule (``from jaxrank import stats``).

  Example:
    >>> import jaxrank
    >>> from jaxrank import _lazy
    >>> s = _lazy.sources(jaxrank.__file__, "jaxrank")
    >>> s["ndcg"], s["stats"]
    ('jaxrank._core.metrics', 'jaxrank.stats')
  """
  with open(init_file, encoding="utf-8") as f:
    text = f.read()
  block = text[text.index("if TYPE_CHECKING:"):text.index("\n__all__")]
  out = {}
  for module, grouped, line in re.findall(r"from ([\w.]+) import (?:\(([^)]*)\)|([^\n(#]*))",
                                          block):
    for name in (grouped or line).replace(",", " ").split():
      out[name] = f"{module}.{name}" if module == package else module
  return out


def attribute(namespace: dict[str, Any], package: str, where: dict[str, str],
              name: str) -> Any:
  """The package's lazy name ``name`` (``where``: :func:`sources`), imported now and kept in
  the package's ``namespace`` (its ``globals()``), so the next use is a plain lookup."""
  source = where.get(name)
  if source is None:
    raise AttributeError(f"module {package!r} has no attribute {name!r}")
  module = importlib.import_module(source)
  value = module if source == f"{package}.{name}" else getattr(module, name)
  namespace[name] = value
  return value
