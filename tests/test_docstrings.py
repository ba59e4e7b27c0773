"""Every docstring example of every jaxrank module runs and prints what it says."""

import doctest
import importlib
import pkgutil

import pytest

import jaxrank

# Every module, subpackages' modules included: doctest.testmod(module) runs only the examples
# of objects defined in that module, not of those a package re-exports from its submodules.
# (__main__ modules run the command when imported.)
MODULES = ["jaxrank"] + [m.name for m in pkgutil.walk_packages(jaxrank.__path__, "jaxrank.")
                         if not m.name.endswith(".__main__")]


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
  missing, unrun = [], []
  for name in MODULES:
    module = importlib.import_module(name)
    for attr in getattr(module, "__all__", []):
      obj = getattr(module, attr)
      if callable(obj) and getattr(obj, "__module__", "").startswith("jaxrank"):
        if ">>>" not in (obj.__doc__ or ""):
          missing.append(f"{name}.{attr}")
        if obj.__module__ not in MODULES:
          unrun.append(f"{name}.{attr} ({obj.__module__})")
  assert not missing, f"public functions without a runnable example: {missing}"
  assert not unrun, f"public functions whose examples test_docstring_examples skips: {unrun}"
