"""Every example runs: each ``examples/*.py`` as its own process with small sizes, ``cli.sh``, and
``ltr_flax/train.py`` (whose README's numbers are checked, where flax is installed).

A new ``examples/*.py`` fails ``test_example_runs`` until it is given arguments below that make it
run in a few seconds. Examples that need an optional package say so in one line (exit 1), tested
with the package blocked (``sys.modules[name] = None`` makes its import fail).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
LTR = EXAMPLES / "ltr_flax"

# Small sizes for every examples/*.py (none: its defaults already are small).
SMALL_ARGS: dict[str, list[str]] = {
    "compare_systems.py": [],
    "dataframe.py": [],
    "link_prediction.py": ["--entities", "60", "--triples", "40"],
    "mf_catalog.py": ["--users", "100", "--items", "300", "--steps", "30"],
    "multi_device.py": ["--epochs", "2", "--batches", "3"],
    "numpy_and_dicts.py": [],
    "quickstart.py": ["--lists", "60", "--items", "50"],
    "recsys_beyond_accuracy.py": ["--users", "80", "--items", "60", "--plot", "{tmp}/bias.png"],
}


def env(**extra: str) -> dict[str, str]:
  """The examples import this checkout's jaxrank; the command keeps no compilation cache."""
  return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH",
                                                                                 "")]),
          "JAXRANK_CACHE": "off", "MPLBACKEND": "Agg", **extra}


def run(args: list[str], tmp_path: Path, timeout: int = 300, **extra: str):
  return subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, env=env(**extra),
                        timeout=timeout)


def run_example(name: str, tmp_path: Path, **extra: str) -> str:
  args = [a.format(tmp=tmp_path) for a in SMALL_ARGS[name]]
  proc = run([sys.executable, str(EXAMPLES / name), *args], tmp_path, **extra)
  assert proc.returncode == 0, f"examples/{name}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
  assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
  return proc.stdout


def check_compare_systems(out: str, tmp_path: Path) -> None:
  assert "p = " in out
  assert ("bytes of PNG" in out) == (importlib.util.find_spec("matplotlib") is not None)


def check_recsys(out: str, tmp_path: Path) -> None:
  assert (tmp_path / "bias.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def check_multi_device(out: str, tmp_path: Path, devices: int = 8) -> None:
  """The loss falls, held-out NDCG@10 ends far above a random scorer's, and the state updated on
  lists sharded over the devices gives the numbers of one evaluate call on the gathered arrays."""
  losses = [float(x) for x in re.findall(r"mean loss ([\d.]+)", out)]
  held = re.search(r"held out on (\d+) device\(s\): (\{.*?\}); one call: (\{.*?\})", out)
  baseline = re.search(r"a random scorer: (\{.*?\})", out)
  assert held and baseline and len(losses) >= 2, out
  sharded, one_call, random_scorer = (ast.literal_eval(m[i]) for m, i in
                                      ((held, 2), (held, 3), (baseline, 1)))
  assert int(held[1]) == devices
  assert losses[-1] < losses[0] - 0.2, losses
  assert sharded == pytest.approx(one_call, abs=1e-4)
  assert sharded["ndcg@10"] > random_scorer["ndcg@10"] + 0.4, (sharded, random_scorer)


def devices_env(devices: int) -> dict[str, str]:
  return {"XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
          "JAX_PLATFORMS": "cpu"}


CHECKS = {"compare_systems.py": check_compare_systems, "recsys_beyond_accuracy.py": check_recsys,
          "multi_device.py": check_multi_device}
ENV = {"multi_device.py": devices_env(8)}  # XLA's device count is set before JAX starts


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_example_runs(name, tmp_path):
  assert name in SMALL_ARGS, (
      f"examples/{name} is not run by the tests: add it to SMALL_ARGS in {Path(__file__).name} "
      f"with arguments that make it finish in a few seconds")
  out = run_example(name, tmp_path, **ENV.get(name, {}))
  assert out.strip()
  CHECKS.get(name, lambda out, tmp_path: None)(out, tmp_path)


def test_multi_device_on_one_device(tmp_path):
  check_multi_device(run_example("multi_device.py", tmp_path, **devices_env(1)), tmp_path,
                     devices=1)


def test_cli_sh_runs(tmp_path):
  """examples/cli.sh with ``jaxrank`` and ``python`` on PATH meaning this interpreter."""
  bin_dir = tmp_path / "bin"
  bin_dir.mkdir()
  for name, line in (("jaxrank", f'exec "{sys.executable}" -m jaxrank.cli "$@"'),
                     ("python", f'exec "{sys.executable}" "$@"')):
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{line}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
  proc = run(["bash", str(EXAMPLES / "cli.sh")], tmp_path,
             PATH=os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]))
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr and "ndcg_cut_10" in proc.stdout


@pytest.mark.parametrize("name, module, args, extra", [
    ("mf_catalog.py", "optax", [], "jaxrank[examples]"),
    ("dataframe.py", "pandas", [], "jaxrank[pandas]"),
    ("recsys_beyond_accuracy.py", "matplotlib", ["--plot", "out.png"], "jaxrank[plot]"),
])
def test_example_without_its_optional_package_says_which_extra(name, module, args, extra,
                                                               tmp_path):
  code = (f"import runpy, sys; sys.modules[{module!r}] = None; sys.argv = sys.argv[1:]; "
          f"runpy.run_path(sys.argv[0], run_name='__main__')")
  proc = run([sys.executable, "-c", code, str(EXAMPLES / name), *args], tmp_path)
  assert proc.returncode == 1 and proc.stdout == "", (proc.stdout, proc.stderr)
  assert proc.stderr.strip().splitlines() == [f'{name}{" --plot" if args else ""} needs '
                                              f'{module}: pip install "{extra}"'], proc.stderr
  assert not (tmp_path / "out.png").exists()


# ----------------------------------------------------------------------------------------------
# examples/ltr_flax: the README's table is what train.py prints (same jax, flax, optax).


def readme_rows() -> tuple[dict[str, str], dict[str, list[str]]]:
  """(versions the README's results were measured with, {row name: the five NDCG cells})."""
  text = (LTR / "README.md").read_text()
  heading = next(line for line in text.splitlines() if line.startswith("## Result"))
  versions = dict(re.findall(r"\b(jax|flax|optax|lightgbm) (\d+(?:\.\d+)+)", heading))
  rows = {}
  for line in text.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 7 and re.fullmatch(r"0\.\d{4}", cells[1]):
      rows[cells[0]] = cells[1:6]
  return versions, rows


def installed(name: str) -> str | None:
  try:
    from importlib.metadata import version
    return version(name)
  except Exception:
    return None


def test_ltr_readme_states_versions_and_rows():
  versions, rows = readme_rows()
  assert {"jax", "flax", "optax"} <= set(versions), versions
  assert len(rows) == 6 and any(name.startswith("LightGBM") for name in rows), rows


def tracked_files() -> dict[str, str]:
  return {str(p.relative_to(LTR)): hashlib.sha256(p.read_bytes()).hexdigest()
          for p in sorted(LTR.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def test_ltr_flax_reproduces_its_readme_and_writes_no_file(tmp_path):
  """The full default run (20 epochs, five losses; ~25 s of CPU) prints the README's NDCG values
  to every printed digit, and leaves examples/ltr_flax (its tracked ndcg10.png) untouched."""
  for module in ("flax", "optax"):
    pytest.importorskip(module, reason=f"examples/ltr_flax needs {module} (the examples extra)")
  versions, rows = readme_rows()
  differ = {k: (v, installed(k)) for k, v in versions.items()
            if k != "lightgbm" and installed(k) != v}
  if differ:
    pytest.skip(f"the README's numbers are for {versions}; installed: {differ}")
  before = tracked_files()
  proc = run([sys.executable, str(LTR / "train.py")], tmp_path, timeout=900)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  assert tracked_files() == before and not list(tmp_path.iterdir())
  printed = {}
  for line in proc.stdout.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 7 and re.fullmatch(r"0\.\d{4}", cells[1]):
      printed[cells[0]] = cells[1:6]
  if installed("lightgbm") != versions.get("lightgbm"):
    rows = {k: v for k, v in rows.items() if not k.startswith("LightGBM")}
    printed = {k: v for k, v in printed.items() if not k.startswith("LightGBM")}
  assert printed == rows


def test_ltr_flax_plot_only_where_asked(tmp_path):
  """``--plot PATH`` draws the curves there (the function the script calls after training)."""
  for module in ("flax", "optax", "matplotlib"):
    pytest.importorskip(module, reason=f"examples/ltr_flax --plot needs {module}")
  spec = importlib.util.spec_from_file_location("ltr_flax_train", LTR / "train.py")
  train = importlib.util.module_from_spec(spec)
  sys.modules[spec.name] = train  # flax's module dataclasses look their module up there
  try:
    spec.loader.exec_module(train)
  finally:
    del sys.modules[spec.name]
  path = tmp_path / "curves.png"
  train.save_plot({"a": [0.5, 0.6, 0.7], "b": [0.4, 0.5, 0.6]}, [0.6, 0.6, 0.6, 0.65], path)
  assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
