"""What pyproject.toml declares: true version floors (tested by .ci/run), and the metadata a
build takes without deprecation warnings (an SPDX license with its file, authors, classifiers)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import jax
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CI = (ROOT / ".ci" / "run").read_text()
FLOOR = (ROOT / ".ci" / "floor").read_text()


def _floor(requirement: str) -> str:
  (found,) = [d for d in PROJECT["project"]["dependencies"] if re.split(r"[<>=!~ ]", d)[0] ==
              requirement]
  return found.split(">=")[1]


def _version(text: str) -> tuple[int, ...]:
  return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def test_the_declared_floors_are_the_ones_ci_tests():
  """jax 0.4.30 was declared while the code needs jax.enable_x64 (0.8.0): .ci/run installs the
  declared floors in a venv of their own and runs the command and a smoke set there."""
  jax_floor = _floor("jax")
  assert jax_floor == _floor("jaxlib") == "0.8.0"
  assert f"JAX_FLOOR={jax_floor}\n" in FLOOR
  assert f"NUMPY_FLOOR={_floor('numpy')}" in FLOOR  # jax 0.8.0 itself needs numpy >= 2.0
  assert '"jax==$JAX_FLOOR" "jaxlib==$JAX_FLOOR" "numpy==$NUMPY_FLOOR"' in FLOOR
  assert PROJECT["project"]["requires-python"] == ">=3.11"  # jax 0.7 dropped Python 3.10
  assert "command -v python3.11" in FLOOR and "evaluate --example" in FLOOR
  # the floor step runs before README's test command, which stays the last line
  lines = [line for line in CI.splitlines() if line.strip()]
  assert lines[-2:] == [".ci/floor", "python -m pytest -q"]


def test_this_environment_meets_the_floors():
  assert _version(jax.__version__) >= _version(_floor("jax"))
  assert _version(np.__version__) >= _version(_floor("numpy"))
  assert hasattr(jax, "enable_x64") and hasattr(jax, "shard_map")


def test_license_is_an_spdx_expression_with_its_file():
  """A `license = {text = ...}` table is deprecated (setuptools warns three times per build and
  will refuse it after 2027-02-18); the repository and the wheel had no LICENSE file."""
  project = PROJECT["project"]
  assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
  text = (ROOT / "LICENSE").read_text()
  assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
  assert "END OF TERMS AND CONDITIONS" in text
  setuptools = [r for r in PROJECT["build-system"]["requires"] if r.startswith("setuptools")]
  assert setuptools == ["setuptools>=77"]  # the first to read license expressions and files
  assert not any(c.startswith("License ::") for c in project["classifiers"])  # superseded


def test_authors_and_classifiers():
  project = PROJECT["project"]
  assert project["authors"] == [{"name": "jaxrank developers"}]
  python = [c.rsplit(" ", 1)[1] for c in project["classifiers"]
            if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
  assert python and min(python, key=_version) == project["requires-python"].lstrip(">=")
