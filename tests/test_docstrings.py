"""Every docstring example of every jaxrank module runs and prints what it says."""

import doctest
import importlib
import pkgutil

import pytest

import jaxrank

MODULES = ["jaxrank"] + [f"jaxrank.{m.name}" for m in pkgutil.iter_modules(jaxrank.__path__)]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
  if name == "jaxrank.plot":
    pytest.importorskip("matplotlib", reason="jaxrank.plot needs the [plot] extra")
    import matplotlib
    matplotlib.use("Agg")
  module = importlib.import_module(name)
  result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
  assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


def test_every_public_function_has_an_example():
  missing = []
  for name in MODULES:
    module = importlib.import_module(name)
    for attr in getattr(module, "__all__", []):
      obj = getattr(module, attr)
      if callable(obj) and getattr(obj, "__module__", "").startswith("jaxrank"):
        if ">>>" not in (obj.__doc__ or ""):
          missing.append(f"{name}.{attr}")
  assert not missing, f"public functions without a runnable example: {missing}"
