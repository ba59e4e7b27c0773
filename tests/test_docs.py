"""Every Python block of README.md and docs/*.md runs as written and shows its true values.

The convention the reader sees: a statement followed by a comment ``# -> VALUE``, on the same line
or on the next line (longer values continue on lines starting ``#    ``), shows what the statement
evaluates to (or, if it prints, what it prints)::

    jaxrank.mean(values)              # -> Array(0.5833)
    jrn.evaluate(scores, labels, ["ndcg@3", "map"])
    # -> {'ndcg@3': array([0.6448, 0.6309]), 'map': array([0.5833, 0.5])}

Values are compared as the repr of the result with JAX arrays written ``Array([...])`` and NumPy
arrays ``array([...])`` (no dtype), NumPy scalars as Python numbers; ``...`` stands for anything
and whitespace is ignored. Every number shown must equal the true value rounded to the digits
shown, and to at least 4 decimals (``0.5`` means 0.5000), so a wrong number in a doc fails here.
The blocks of one file run in order in one namespace, in an empty temporary directory. A block
that cannot run is fenced "```python no-run" and counted in ``NO_RUN`` below.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import io
import re
import shlex
import tokenize
from decimal import Decimal
from pathlib import Path

import jax
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NO_RUN: dict[str, int] = {}  # file name -> number of ```python no-run blocks allowed (keep it 0)

FENCE = re.compile(r"^```(\S*)\s*(.*)$")
ARROW = "# -> "
MORE = "#    "


# ------------------------------------------------------------------------------------ blocks
def blocks(path: Path):
  """[(first code line number, info words, code)] of every fenced block of ``path``."""
  out, lines, i = [], path.read_text().splitlines(), 0
  while i < len(lines):
    m = FENCE.match(lines[i])
    if not m:
      i += 1
      continue
    end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
    out.append((i + 2, [m.group(1), *m.group(2).split()], "\n".join(lines[i + 1:end]) + "\n"))
    i = end + 1
  return out


def python_blocks(path: Path):
  return [(line, code) for line, info, code in blocks(path)
          if info[0] == "python" and "no-run" not in info]


# ------------------------------------------------------------------------ shown values
def expectations(code: str) -> dict[int, tuple[int, str]]:
  """{line of the ``# ->`` comment (1-based in ``code``): (0 inline / 1 own line, text)}."""
  lines, out = code.splitlines(), {}
  for tok in tokenize.generate_tokens(io.StringIO(code).readline):
    if tok.type == tokenize.COMMENT and tok.string.startswith(ARROW.strip()):
      row, col = tok.start
      own = lines[row - 1][:col].strip() == ""
      text, nxt = tok.string[len(ARROW):], row
      while nxt < len(lines) and lines[nxt].lstrip().startswith(MORE):
        text += " " + lines[nxt].lstrip()[len(MORE):]
        nxt += 1
      out[row] = (int(own), text.strip())
  return out


def render(value) -> str:
  """The repr a reader expects: arrays without dtype, NumPy scalars as Python numbers."""
  if isinstance(value, jax.Array):
    return f"Array({render(np.asarray(value).tolist())})"
  if isinstance(value, np.ndarray):
    return f"array({render(value.tolist())})"
  if isinstance(value, np.generic):
    return render(value.item())
  if isinstance(value, dict):
    return "{" + ", ".join(f"{render(k)}: {render(v)}" for k, v in value.items()) + "}"
  if isinstance(value, list):
    return "[" + ", ".join(render(v) for v in value) + "]"
  if isinstance(value, tuple) and not hasattr(value, "_fields"):
    return "(" + ", ".join(render(v) for v in value) + ("," if len(value) == 1 else "") + ")"
  return repr(value)


TOKEN = re.compile(r"\.\.\.|(?<![\w.])-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?(?![\w.])"
                   r"|-?\b(?:nan|inf)\b|\w+|\S")


def _number(tok: str) -> Decimal | None:
  try:
    return Decimal(tok) if tok[-1].isdigit() or tok[-1] == "." or tok.endswith(("nan", "inf")) \
        else None
  except ArithmeticError:
    return None


def _same(want: str, got: str) -> bool:
  w, g = _number(want), _number(got)
  if w is None or g is None:
    return want == got
  if w.is_nan() or g.is_nan() or w.is_infinite() or g.is_infinite():
    return str(w) == str(g)
  digits = min(w.as_tuple().exponent, -4)  # shown decimals, at least 4
  return abs(float(g) - float(w)) <= 0.5 * 10.0**digits * (1 + 1e-6) + 1e-12 * abs(float(w))


def matches(want: str, got: str) -> bool:
  """``got`` (a rendered value) reads as ``want``: tokens equal, numbers to the shown digits,
  ``...`` matching any run of tokens."""
  w, g = TOKEN.findall(want), TOKEN.findall(got)
  # glob matching over tokens: ok[j] = w[:i] matches g[:j]
  ok = [True] + [False] * len(g)
  for tok in w:
    if tok == "...":
      new, seen = [], False
      for j in range(len(g) + 1):
        seen = seen or ok[j]
        new.append(seen)
    else:
      new = [False] + [ok[j] and _same(tok, g[j]) for j in range(len(g))]
    ok = new
  return ok[-1]


def _looks_like_a_value(comment: str) -> bool:
  body = comment.lstrip("#").strip()
  return bool(body) and (body[0] in "{[(0123456789-" or body.startswith(("Array(", "array(")))


# ------------------------------------------------------------------------------- running
def run_block(path: Path, first_line: int, code: str, namespace: dict) -> int:
  """Runs ``code`` statement by statement; checks every ``# ->``; returns how many it checked."""
  tree = ast.parse(code)
  shown = expectations(code)
  lines = code.splitlines()
  where = f"{path.name}:{{}}"
  claimed = set()
  for stmt in tree.body:
    end = stmt.end_lineno
    want = None
    if end in shown and shown[end][0] == 0:
      want, claimed = shown[end][1], claimed | {end}
    elif end + 1 in shown and shown[end + 1][0] == 1:
      want, claimed = shown[end + 1][1], claimed | {end + 1}
    elif end < len(lines) and _looks_like_a_value(lines[end]) and lines[end].lstrip()[:1] == "#":
      pytest.fail(f"{where.format(first_line + end)}: a value shown without '{ARROW.strip()}' is "
                  f"not checked: {lines[end].strip()!r}")
    module = ast.Module(body=[stmt], type_ignores=[])
    ast.increment_lineno(module, first_line - 1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
      if isinstance(stmt, ast.Expr):
        expr = ast.Expression(body=stmt.value)
        value = eval(compile(expr, str(path), "eval"), namespace)  # our own docs
      else:
        exec(compile(module, str(path), "exec"), namespace)
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        value = (namespace[targets[0].id] if len(targets) == 1
                 and isinstance(targets[0], ast.Name) else None)
    if want is None:
      continue
    if not isinstance(stmt, (ast.Expr, ast.Assign)):
      pytest.fail(f"{where.format(first_line + end - 1)}: '# ->' after a statement without a value")
    got = out.getvalue().strip() if out.getvalue() else render(value)
    assert matches(want, got), (f"{where.format(first_line + end - 1)}: the doc shows\n  {want}\n"
                                f"but the statement gives\n  {got}")
  orphans = set(shown) - claimed
  assert not orphans, (f"{where.format(first_line + min(orphans) - 1)}: '# ->' that follows no "
                       f"statement")
  return len(claimed)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_python_blocks_run_and_show_true_values(path, tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  namespace: dict = {"__name__": "__docs__"}
  checked = sum(run_block(path, line, code, namespace) for line, code in python_blocks(path))
  assert checked or not python_blocks(path), f"{path.name}: no value is checked"


def test_no_run_blocks_stay_few():
  counts = {p.name: sum("no-run" in info for _, info, _ in blocks(p) if info[0] == "python")
            for p in FILES}
  assert {k: v for k, v in counts.items() if v} == NO_RUN
  assert sum(NO_RUN.values()) <= 2


def test_every_python_block_is_fenced_as_python():
  """A ``py``/``pycon`` or untagged block of Python code would escape the run."""
  for path in FILES:
    for line, info, code in blocks(path):
      assert info[0] not in ("py", "pycon", "python3", "ipython"), f"{path.name}:{line - 1}"
      if info[0] == "":
        assert not re.search(r"^(import |from \w+ import |\w+ = \w+\()", code, re.M), \
            f"{path.name}:{line - 1}: Python code in a block not fenced as ```python"


# ---------------------------------------------------------------- the harness itself
@pytest.mark.parametrize("want, got, ok", [
    ("{'ndcg@10': Array([0.6448]), ...}", "{'ndcg@10': Array([0.6447817]), 'map': Array([0.5])}",
     True),
    ("{'ndcg@10': Array([0.6449]), ...}", "{'ndcg@10': Array([0.6447817])}", False),
    ("Array([0.5])", "Array([0.5000001])", True),
    ("Array([0.5])", "Array([0.53])", False),  # 0.5 means 0.5000
    ("0.0454", "0.04541", True),
    ("0.0454", "0.0456", False),
    ("Array([1, 0])", "Array([1.0, 0.0])", True),
    ("Array([1, 0])", "Array([1.0, 0.0, 0.0])", False),
    ("[3, -1]", "[3, -1]", True),
    ("[3, -1]", "[3, 1]", False),
    ("{'q1': 0.5833}", "{'q2': 0.5833}", False),
    ("nan", "nan", True),
    ("Array(nan)", "Array(0.0)", False),
    ("{'a': ..., 'b': 2}", "{'a': [1, 2, 3], 'b': 2}", True),
    ("{'a': ..., 'b': 2}", "{'a': [1, 2, 3], 'b': 3}", False),
])
def test_matches(want, got, ok):
  assert matches(want, got) is ok


def test_render():
  assert render({"a": jax.numpy.array([0.5, 1.0]), "b": np.float64(0.25), "c": np.array([1, -1])}
                ) == "{'a': Array([0.5, 1.0]), 'b': 0.25, 'c': array([1, -1])}"


def test_a_wrong_number_in_a_doc_fails(tmp_path):
  doc = tmp_path / "doc.md"
  doc.write_text("```python\nx = [0.25, 0.5]\nsum(x)   # -> 0.76\n```\n")
  (line, code), = python_blocks(doc)
  with pytest.raises(AssertionError, match="the doc shows"):
    run_block(doc, line, code, {})
  doc.write_text("```python\nsum([0.25, 0.5])\n# -> 0.75\nprint('a', 1)  # -> a 1\n```\n")
  (line, code), = python_blocks(doc)
  assert run_block(doc, line, code, {}) == 2


def test_an_unchecked_value_fails(tmp_path):
  doc = tmp_path / "doc.md"
  doc.write_text("```python\nsum([0.25, 0.5])\n# 0.75\n```\n")
  (line, code), = python_blocks(doc)
  with pytest.raises(pytest.fail.Exception, match="not checked"):
    run_block(doc, line, code, {})


# ------------------------------------------------------------------ README's commands
def test_readme_first_command_prints_the_table_shown(capsys):
  """README's first command evaluates the shipped example; the table below it is its output."""
  from jaxrank import cli
  readme = blocks(ROOT / "README.md")
  commands = next(code for _, info, code in readme if info[0] == "bash").splitlines()
  first = commands[0].split("&&")[1].strip()
  assert first.startswith("jaxrank evaluate --example")
  table = next(code for _, info, code in readme if info[0] == "" and code.startswith("| measure"))
  assert cli.main(shlex.split(first)[1:]) == 0
  assert capsys.readouterr().out == table


def test_readme_test_command_is_what_ci_runs():
  readme = blocks(ROOT / "README.md")
  second = next(code for _, info, code in readme if info[0] == "bash").splitlines()[1]
  install, test = (part.split("#")[0].strip() for part in second.split("&&"))
  ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith("#")]
  assert f"python -m pip {install.removeprefix('pip ')}" in ci
  assert ci[-1] == test


def test_no_test_or_example_reads_data_outside_the_repository():
  """Everything a test or an example reads ships with the repository (tests/data, examples/)."""
  def escapes(path, line):  # the shared folder beside the repository, or parents[k] above it
    depth = len(path.relative_to(ROOT).parts) - 1  # parents[depth] is the repository
    return bool(re.search(r"""["'/]shared["'/]""", line)) or any(
        int(k) > depth for k in re.findall(r"parents\[(\d+)\]", line))

  offenders = [f"{p.relative_to(ROOT)}:{i}" for folder in ("tests", "examples")
               for p in (ROOT / folder).rglob("*.py")
               for i, line in enumerate(p.read_text().splitlines(), 1) if escapes(p, line)]
  assert not offenders, offenders


def test_shipped_data_keeps_its_notices():
  for folder, notice in [("tests/data/trec_eval", "LICENSE.md"), ("examples/ltr_flax/data",
                                                                  "LICENSE")]:
    assert (ROOT / folder / notice).is_file() and (ROOT / folder / "README.md").is_file()
  sizes = sum(p.stat().st_size for p in (ROOT / "tests" / "data").rglob("*") if p.is_file())
  assert sizes < 5e6
  groups = (ROOT / "examples/ltr_flax/data/rank.test.query").read_text().split()
  rows = (ROOT / "examples/ltr_flax/data/rank.test").read_text().splitlines()
  assert sum(map(int, groups)) == len(rows) == 768


def test_trec_eval_data_readme_counts_what_the_files_hold():
  """tests/data/trec_eval/README.md's counts of queries, judgments and run lines are the files'."""
  folder = ROOT / "tests" / "data" / "trec_eval"
  readme = (folder / "README.md").read_text()

  def rows(name):
    return [line.split() for line in (folder / name).read_text().splitlines() if line.strip()]

  def queries(rows):  # {qid: rows}, in order of first appearance
    return collections.Counter(r[0] for r in rows)

  qrels, run = rows("qrels.comment.test"), rows("results.comment.test")
  per_query = set(queries(run).values())
  judged = queries(qrels)
  judged_in_run = sum(1 for r in run if r[0] in judged)
  assert per_query == {100} and all("#" in r[2] for r in qrels + run)
  assert (f"graded judgments (0–{max(int(r[3]) for r in qrels)}) of {len(queries(qrels))} queries "
          f"({len(qrels):,} judgments), and a run of {len(queries(run))} queries × 100 segments "
          f"({len(run):,} lines), of which trec_eval evaluates the {len(queries(qrels))} judged "
          f"queries ({judged_in_run:,} retrieved segments)") in readme
  qrels = rows("qrels.test")
  counts = list(queries(qrels).values())
  assert (f"binary judgments of 3 queries (301, 302, 303): {counts[0]:,}, {counts[1]:,} and "
          f"{counts[2]:,} judged docs ({len(qrels):,} judgments, "
          f"{sum(int(r[3]) > 0 for r in qrels)} relevant)") in readme


def test_ltr_example_without_its_data_prints_one_line(tmp_path):
  """examples/ltr_flax/train.py with missing data (or without flax/optax): one line, no
  traceback, a non-zero exit."""
  import subprocess
  import sys
  proc = subprocess.run([sys.executable, str(ROOT / "examples" / "ltr_flax" / "train.py"),
                         "--data", str(tmp_path / "absent")], capture_output=True, text=True,
                        cwd=tmp_path, timeout=120)
  assert proc.returncode != 0 and proc.stdout == ""
  assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
  assert ("absent/rank.train" in proc.stderr) or ("pip install" in proc.stderr), proc.stderr
