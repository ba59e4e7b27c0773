"""The `jaxrank evaluate` command: formats, options, tie orders, progress and one-line errors."""

import io as stdio
import json
import os
import subprocess
import sys

import pytest

from jaxrank import cli
from jaxrank._trec import plan
from jaxrank._trec import table as _trec

from cli_runs import run_cli, write


# Two documents tied at 0.5: the relevant one ("a") has the smaller id, so trec_eval puts it
# second (doc id descending); "c" at 0.1 is relevant too.
TIED_QRELS = "q1 0 a 1\nq1 0 b 0\nq1 0 c 1\n"
TIED_RUN = "q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.5 t\nq1 Q0 c 3 0.1 t\n"


def values(out):
  return {tuple(line.split("\t")[:2]): line.split("\t")[2] for line in out.splitlines()}


def test_example_table(capsys):
  code, out, err = run_cli(capsys, "--example", "--format", "table", "-q", "-m", "map",
                           "-m", "ndcg_cut.10")
  assert code == 0 and err == ""
  lines = out.splitlines()
  assert lines[0].startswith("| measure") and lines[0].endswith(" all |") and "q101" in lines[0]
  assert lines[2].startswith("| map ") and lines[3].startswith("| ndcg_cut_10 ")


def test_trec_output_format_and_hand_computed_values(tmp_path, capsys):
  qrels, run = write(tmp_path, "qrels", TIED_QRELS), write(tmp_path, "run", TIED_RUN)
  code, out, _ = run_cli(capsys, "-q", "-m", "map", "-m", "recip_rank", "-m", "P.2", qrels, run)
  assert code == 0
  # trec order b, a, c: relevant at ranks 2 and 3 -> AP = (1/2 + 2/3) / 2, RR = 1/2, P@2 = 1/2
  assert out == ("map                   \tq1\t0.5833\nrecip_rank            \tq1\t0.5000\n"
                 "P_2                   \tq1\t0.5000\nmap                   \tall\t0.5833\n"
                 "recip_rank            \tall\t0.5000\nP_2                   \tall\t0.5000\n")


@pytest.mark.parametrize("ties, rr", [("trec", 0.5), ("first", 1.0), ("average", 0.75),
                                      ("optimistic", 1.0), ("pessimistic", 0.5)])
def test_tie_orders(tmp_path, capsys, ties, rr):
  qrels, run = write(tmp_path, "qrels", TIED_QRELS), write(tmp_path, "run", TIED_RUN)
  code, out, _ = run_cli(capsys, "--ties", ties, "-m", "recip_rank", qrels, run)
  assert code == 0 and values(out)[("recip_rank            ", "all")] == f"{rr:6.4f}"


def test_float64_scores_by_default_float32_on_request(tmp_path, capsys):
  # 0.975230282 and 0.975230281 differ as float64 (trec_eval 10) but tie as float32
  # (pytrec_eval, trec_eval 9): then doc id descending puts the non-relevant "b" first.
  qrels = write(tmp_path, "qrels", "q 0 a 1\nq 0 b 0\n")
  run = write(tmp_path, "run", "q Q0 a 1 0.975230282 t\nq Q0 b 2 0.975230281 t\n")
  assert values(run_cli(capsys, "-m", "recip_rank", qrels, run)[1])[
      ("recip_rank            ", "all")] == "1.0000"
  assert values(run_cli(capsys, "--float32", "-m", "recip_rank", qrels, run)[1])[
      ("recip_rank            ", "all")] == "0.5000"


def test_complete_max_docs_and_level(tmp_path, capsys):
  qrels = write(tmp_path, "qrels", "q1 0 a 2\nq1 0 b 1\nq2 0 x 1\n")
  run = write(tmp_path, "run", "q1 Q0 b 1 3 t\nq1 Q0 a 2 2 t\nq9 Q0 z 1 1 t\n")
  code, out, _ = run_cli(capsys, "-q", "-m", "num_q", "-m", "map", qrels, run)
  assert values(out)[("num_q                 ", "all")] == "1"  # q2 skipped, q9 ignored
  code, out, _ = run_cli(capsys, "-q", "-c", "-m", "num_q", "-m", "map", qrels, run)
  v = values(out)
  assert v[("num_q                 ", "all")] == "2" and v[("map                   ", "q2")] == (
      "0.0000") and v[("map                   ", "all")] == "0.5000"
  code, out, _ = run_cli(capsys, "-M1", "-m", "map", "-m", "num_ret", qrels, run)
  assert values(out)[("map                   ", "all")] == "0.5000"  # only b is kept
  code, out, _ = run_cli(capsys, "-l2", "-m", "map", "-m", "ndcg", qrels, run)
  v = values(out)
  assert v[("map                   ", "all")] == "0.5000"  # only a is relevant at -l2
  ideal = 2 + 1 / 1.584962500721156
  assert v[("ndcg                  ", "all")] == f"{(1 + 2 / 1.584962500721156) / ideal:6.4f}"


# q1 and q3 judged and retrieved, q2 judged only, q9 retrieved only (ignored).
COUNT_QRELS = "q1 0 a 2\nq1 0 b 1\nq2 0 x 1\nq2 0 y 1\nq3 0 c 0\n"
COUNT_RUN = "q1 Q0 b 1 3 t\nq1 Q0 a 2 2 t\nq3 Q0 c 1 1 t\nq9 Q0 z 1 1 t\n"


@pytest.mark.parametrize("fmt", ["trec", "csv", "json", "table"])
@pytest.mark.parametrize("complete", [False, True])
def test_ir_measures_counts_are_per_query_in_every_format(tmp_path, capsys, fmt, complete):
  """ir_measures' NumQ (1 per query) and NumRel are per-query values like every other name (its
  iter_calc): -q prints them on each query's line and the `all` line sums them. With -c a query
  only in the qrels counts 0 for both, as ir_measures reports it, while trec_eval's num_rel
  counts its relevant documents (trec_eval 10) and num_q counts it; num_q stays on `all` only."""
  qrels, run = write(tmp_path, "qrels", COUNT_QRELS), write(tmp_path, "run", COUNT_RUN)
  code, out, err = run_cli(capsys, "-q", *(["-c"] if complete else []), "--format", fmt,
                           "-m", "NumQ", "-m", "NumRel", "-m", "num_rel", "-m", "num_q",
                           qrels, run)
  assert code == 0 and err == ""
  qids = ["q1", "q2", "q3"] if complete else ["q1", "q3"]
  want = {"NumQ": {"q1": 1, "q2": 0, "q3": 1}, "NumRel": {"q1": 2, "q2": 0, "q3": 0},
          "num_rel": {"q1": 2, "q2": 2, "q3": 0}}
  want = {n: {q: v[q] for q in qids} for n, v in want.items()}
  total = {"NumQ": 2, "NumRel": 2, "num_rel": 4 if complete else 2, "num_q": len(qids)}
  if fmt == "json":
    data = json.loads(out)
    got = {n: {q: data["per_query"][q][n] for q in qids} for n in want}
    assert data["all"] == total and all("num_q" not in v for v in data["per_query"].values())
  elif fmt == "table":
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in out.splitlines()[2:]}
    header = [c.strip() for c in out.splitlines()[0].split("|")[2:-1]]
    assert header == qids + ["all"]
    got = {n: dict(zip(qids, map(int, rows[n][:-1]))) for n in want}
    assert {n: int(rows[n][-1]) for n in total} == total and rows["num_q"][:-1] == [""] * len(qids)
  else:
    lines = out.splitlines()[1:] if fmt == "csv" else out.splitlines()
    cells = [line.split("," if fmt == "csv" else "\t") for line in lines]
    table = {(n.strip(), q): v for n, q, v in cells}
    got = {n: {q: int(table[(n, q)]) for q in qids} for n in want}
    assert {n: int(table[(n, "all")]) for n in total} == total
    assert [q for n, q, _ in cells if n.strip() == "num_q"] == ["all"]
  assert got == want


def test_json_and_csv_carry_the_same_numbers(capsys):
  _, trec, _ = run_cli(capsys, "--example", "-q", "-m", "map", "-m", "num_rel")
  _, js, _ = run_cli(capsys, "--example", "-q", "-m", "map", "-m", "num_rel", "--format",
                     "json")
  _, csv, _ = run_cli(capsys, "--example", "-q", "-m", "map", "-m", "num_rel", "--format", "csv")
  data = json.loads(js)
  t = values(trec)
  assert f"{data['all']['map']:6.4f}" == t[("map                   ", "all")]
  assert data["per_query"]["q101"]["num_rel"] == int(t[("num_rel               ", "q101")])
  assert f"{data['per_query']['q102']['map']:6.4f}" == t[("map                   ", "q102")]
  assert f"map,q102,{data['per_query']['q102']['map']!r}" in csv.splitlines()  # full precision


def test_help_lists_every_measure(capsys):
  with pytest.raises(SystemExit) as e:
    cli.main(["evaluate", "--help"])
  assert e.value.code == 0
  out = capsys.readouterr().out
  for name in list(_trec.MEASURES) + list(_trec.UNSUPPORTED):
    assert f"\n  {name} " in out
  assert "not supported" in out


@pytest.mark.parametrize("args, message", [
    (["missing.qrels", "missing.run"], "cannot read missing.qrels"),
    (["--example", "-m", "nope"], "unknown measure 'nope'"),
    (["--example", "-m", "yaap"], "does not compute"),
    (["--example", "-m", "P.x"], "must be finite numbers, comma-separated"),
    (["--example", "-M", "0"], "-M must be a positive"),
    ([], "give QRELS and RUN"),
])
def test_errors_are_one_line(capsys, args, message):
  code, out, err = run_cli(capsys, *args)
  assert code != 0 and out == ""
  assert err.startswith("jaxrank: error: ") and err.count("\n") == 1 and message in err


def test_malformed_file_names_file_and_line(tmp_path, capsys):
  qrels = write(tmp_path, "q.txt", "q 0 a 1\n")
  run = write(tmp_path, "r.txt", "# header\nq Q0 a 1 0.5 t\n\nq Q0 b 2 high t\n")
  code, out, err = run_cli(capsys, qrels, run)
  assert code == 1 and out == ""
  assert err == f"jaxrank: error: {run}:4: the score (5th field) must be a number, got 'high'\n"


def test_duplicate_document_is_an_error(tmp_path, capsys):
  qrels = write(tmp_path, "q.txt", "q 0 a 1\n")
  run = write(tmp_path, "r.txt", "q Q0 a 1 0.5 t\nq Q0 a 2 0.4 t\n")
  code, _, err = run_cli(capsys, qrels, run)
  assert code == 1 and err == f"jaxrank: error: {run}: query 'q' lists document 'a' twice\n"


def test_bad_option_is_one_line_and_exit_2(capsys):
  with pytest.raises(SystemExit) as e:
    cli.main(["evaluate", "--bogus"])
  err = capsys.readouterr().err
  assert e.value.code == 2 and err.startswith("jaxrank: error: ") and err.count("\n") == 1


def test_console_entry_point_runs_without_traceback(tmp_path):
  done = subprocess.run([sys.executable, "-m", "jaxrank.cli", "evaluate", str(tmp_path / "x"),
                         str(tmp_path / "y")], capture_output=True, text=True)
  assert done.returncode == 1 and done.stdout == ""
  assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def _installed_version():
  """The version pip recorded (pyproject.toml reads it from jaxrank/_version.py)."""
  import importlib.metadata
  return importlib.metadata.version("jaxrank")


def test_the_command_keeps_freed_memory_for_big_runs_only(tmp_path, capsys, monkeypatch):
  """cli.keep_freed_memory (glibc's mallopt) is for the command's own process reading a big
  run file: not for a program calling cli.main, not for a small run."""
  qrels, run = write(tmp_path, "qrels", TIED_QRELS), write(tmp_path, "run", TIED_RUN)
  calls = []
  monkeypatch.setattr(cli, "keep_freed_memory", lambda: calls.append(1) or True)
  want = run_cli(capsys, "--no-cache", qrels, run)
  monkeypatch.setattr(plan, "AUTO_CHUNK_BYTES", 1)  # any run is big
  assert run_cli(capsys, "--no-cache", qrels, run) == want and calls == []  # a program
  monkeypatch.setattr(cli, "is_command", lambda: True)
  assert run_cli(capsys, "--no-cache", qrels, run) == want and calls == [1]
  monkeypatch.setattr(plan, "AUTO_CHUNK_BYTES", 16 << 20)
  assert run_cli(capsys, "--no-cache", qrels, run) == want and calls == [1]  # a small run


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_keep_freed_memory_is_done_with_glibc_and_never_fails():
  """In a process of its own (it sets the process's allocator): done with glibc; without
  ctypes, not done, and no error."""
  try:
    glibc = bool(os.confstr("CS_GNU_LIBC_VERSION"))
  except (ValueError, OSError):
    glibc = False
  code = ("import sys\nif sys.argv[1] == 'no ctypes':\n  sys.modules['ctypes'] = None\n"
          "from jaxrank import cli\nprint(cli.keep_freed_memory())")
  for case, want in (("-", glibc), ("no ctypes", False)):
    out = subprocess.run([sys.executable, "-c", code, case], capture_output=True, text=True,
                         timeout=60)
    assert (out.returncode, out.stdout, out.stderr) == (0, f"{want}\n", ""), case


BLAS = """
import atexit, os, sys
atexit._clear()  # (as in ENDS below)
atexit.register(lambda: print(os.environ.get("OPENBLAS_NUM_THREADS"), "numpy" in sys.modules))
sys.argv[0] = sys.argv[1]
from jaxrank.cli import main
sys.argv[1:] = ["evaluate", "--example", "-q", "-m", "num_q", "--no-cache"]
main()
"""


@pytest.mark.parametrize("argv0, given, want", [("jaxrank", None, "1"), ("jaxrank", "3", "3"),
                                                ("program.py", None, "None")])
def test_the_command_asks_numpy_for_one_blas_thread(argv0, given, want):
  """The command's process asks for one OpenBLAS thread before it loads NumPy, unless the
  environment names a number; a program calling main() is left alone."""
  env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
  if given is not None:
    env["OPENBLAS_NUM_THREADS"] = given
  out = subprocess.run([sys.executable, "-c", BLAS, argv0], capture_output=True, text=True,
                       timeout=120, env=env)
  assert out.returncode == 0 and out.stderr == "", out.stderr
  assert out.stdout.endswith(f"{want} True\n"), out.stdout


ENDS = """
import atexit, sys
atexit._clear()  # (a site may register exit handlers at start-up: a .pth importing certifi does)
sys.argv[0] = "jaxrank"
if sys.argv[1] == "jax":
  import jax
if sys.argv[1] == "atexit":
  atexit.register(lambda: print("tidied up"))
from jaxrank.cli import main
sys.argv[1:] = ["evaluate", "--example", "-q", "-m", "num_q", "--no-cache"]
code = main()
print("returned", code)
"""


@pytest.mark.parametrize("case", ["-", "atexit", "jax"])
def test_the_command_ends_its_process_once_its_output_is_out(case):
  """main() as the command (no argv, in the command's process) flushes its output and ends the
  process when nothing is left to do at exit; with an exit handler registered, or JAX imported
  (which registers its own), it returns and the interpreter exits as usual."""
  out = subprocess.run([sys.executable, "-c", ENDS, case], capture_output=True, text=True,
                       timeout=120)
  assert out.returncode == 0 and out.stderr == "" and "num_q" in out.stdout
  assert out.stdout.endswith({"-": "\tall\t5\n", "atexit": "returned 0\ntidied up\n",
                              "jax": "returned 0\n"}[case]), out.stdout


def test_a_profiled_command_prints_its_profile():
  """Under a profiler (python -m cProfile) the command returns, and the profile is printed."""
  out = subprocess.run([sys.executable, "-m", "cProfile", "-m", "jaxrank", "evaluate",
                        "--example", "-m", "num_q", "--no-cache"], capture_output=True, text=True,
                       timeout=120)
  assert out.returncode == 0 and "num_q" in out.stdout and "function calls" in out.stdout


def test_version(capsys):
  import jaxrank
  with pytest.raises(SystemExit) as e:
    cli.main(["--version"])
  assert e.value.code == 0
  assert capsys.readouterr().out == f"jaxrank {jaxrank.__version__}\n"
  assert jaxrank.__version__ == _installed_version() == cli.version()


@pytest.mark.parametrize("start", [["-m", "jaxrank"], ["-m", "jaxrank.cli"]])
def test_python_m_jaxrank_is_the_command(start):
  """`python -m jaxrank` as every CLI has it (it was `No module named jaxrank.__main__`)."""
  env = {**__import__("os").environ, "JAXRANK_CACHE": "off"}
  done = subprocess.run([sys.executable, *start, "--version"], capture_output=True, text=True,
                        env=env, timeout=120)
  assert done.returncode == 0 and done.stdout == f"jaxrank {_installed_version()}\n"
  done = subprocess.run([sys.executable, *start, "evaluate", "--example", "-m", "num_q"],
                        capture_output=True, text=True, env=env, timeout=120)
  assert done.returncode == 0 and done.stderr == ""
  assert done.stdout == "num_q                 \tall\t5\n"
  # ... with the command's own handling (Ctrl-C, closed streams), not a plain import's
  probe = (f"import sys; sys.orig_argv = [sys.executable, '-m', {start[1]!r}]; "
           "from jaxrank import cli; print(cli.is_command())")
  done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                        timeout=120)
  assert done.stdout == "True\n"


class FakeTTY(stdio.StringIO):
  def isatty(self):
    return True


def test_progress_bar_only_on_a_terminal_after_the_delay():
  tty = FakeTTY()
  bar = cli._Progress(stream=tty, after=0.0)
  bar(5, 10)
  bar.close()
  assert "5/10 queries" in tty.getvalue()
  quiet = FakeTTY()
  bar = cli._Progress(stream=quiet, after=60.0)  # fast work: nothing shown
  bar(5, 10)
  bar.close()
  assert quiet.getvalue() == ""
  log = stdio.StringIO()  # not a terminal: nothing, ever
  bar = cli._Progress(stream=log, after=0.0)
  bar(5, 10)
  bar.close()
  assert log.getvalue() == ""


def test_summary_lines_round_like_trec_evals_doubles(capsys, tmp_path):
  # 16 queries, P_10 = 0.3 for one and 0 for the rest: trec_eval prints 0.3 / 16 = 0.01874999...
  # as 0.0187. Float32 values (0.30000001) or XLA's x * 0.1 for x / 10 printed 0.0188.
  run = "".join(f"q{i:02d} Q0 d{d} {d} {20 - d} t\n" for i in range(16) for d in range(1, 11))
  qrels = "q00 0 d1 1\nq00 0 d2 1\nq00 0 d3 1\n" + "".join(f"q{i:02d} 0 zz 1\n"
                                                           for i in range(1, 16))
  code, out, _ = run_cli(capsys, "-m", "P.10", "-m", "recall.10", write(tmp_path, "q", qrels),
                         write(tmp_path, "r", run))
  assert code == 0 and values(out)[("P_10                  ", "all")] == "0.0187"


@pytest.mark.parametrize("seed", [0, 1])
def test_summary_lines_match_pytrec_eval(capsys, tmp_path, seed):
  """Every `all` line equals trec_eval's: the per-query values of pytrec_eval (trec_eval's C
  code), summed in query order, divided by the number of queries, printed with 4 decimals."""
  pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier not installed")
  from trec_runs import PYTREC, random_trec

  run, qrels = random_trec(seed, queries=60)
  qrels.pop("only-in-qrels")
  run_path, qrels_path = tmp_path / "run", tmp_path / "qrels"
  run_path.write_text("".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, docs in run.items()
                              for d, s in docs.items()))
  qrels_path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items()
                                for d, g in docs.items()))
  measures = [m for m in PYTREC if not m.startswith("num_")]
  ref = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC.values())).evaluate(run)
  args = [a for m in measures for a in ("-m", m)]  # printed names (P_5) are accepted too
  code, out, err = run_cli(capsys, "--float32", *args, qrels_path, run_path)
  assert code == 0, err
  got = {(name.strip(), q): v for (name, q), v in values(out).items()}
  for m in measures:
    expect = sum(ref[q][m] for q in sorted(ref)) / len(ref)
    assert got[(m, "all")] == f"{expect:.4f}", m


def _command(env_extra, *args):
  """`jaxrank evaluate --example -m map ARGS` in a new process, scored by the compiled kernel
  (which the cache is for: the example alone is scored on the host, without JAX)."""
  import os
  env = dict(os.environ, JAXRANK_SCORING="jax", **env_extra)
  return subprocess.run([sys.executable, "-m", "jaxrank.cli", "evaluate", "--example", "-m", "map",
                         *args], capture_output=True, text=True, env=env, timeout=300)


def test_compilation_cache_is_written_reused_and_can_be_turned_off(tmp_path):
  cache = tmp_path / "cache"
  first = _command({"JAXRANK_CACHE": str(cache)})
  assert first.returncode == 0 and first.stderr == "", first.stderr
  entries = sorted(p.name for p in cache.iterdir())
  assert entries, "the command wrote nothing to its compilation cache"
  kernels = sorted(p.name for p in (cache / "executables").iterdir())
  assert kernels, "the command kept no executable of its evaluation kernels"
  again = _command({"JAXRANK_CACHE": str(cache)})
  assert again.stdout == first.stdout and sorted(p.name for p in cache.iterdir()) == entries
  assert sorted(p.name for p in (cache / "executables").iterdir()) == kernels  # loaded
  for name in kernels:  # a damaged entry is compiled again and rewritten, never an error
    (cache / "executables" / name).write_bytes(b"not an executable")
  damaged = _command({"JAXRANK_CACHE": str(cache)})
  assert (damaged.returncode, damaged.stdout, damaged.stderr) == (0, first.stdout, "")
  assert all((cache / "executables" / n).read_bytes() != b"not an executable" for n in kernels)
  off = tmp_path / "off"
  for env, args in (({"JAXRANK_CACHE": str(off)}, ("--no-cache",)),
                    ({"JAXRANK_CACHE": "off", "XDG_CACHE_HOME": str(off)}, ())):
    done = _command(env, *args)
    assert done.returncode == 0 and done.stdout == first.stdout and not off.exists()


def test_unusable_cache_directory_is_no_error(tmp_path):
  # A cache home that cannot hold a directory (a plain file; chmod does not stop root, which
  # runs CI): the command runs without a cache and says nothing.
  blocked = tmp_path / "file"
  blocked.write_text("")
  done = _command({"XDG_CACHE_HOME": str(blocked)})
  plain = _command({"JAXRANK_CACHE": "off"})
  assert done.returncode == 0 and done.stderr == "" and done.stdout == plain.stdout


def test_cache_dir_rules():
  assert cli.cache_dir({"JAXRANK_CACHE": "0"}) is None
  assert cli.cache_dir({"JAXRANK_CACHE": "~/x"}).endswith("/x")
  assert cli.cache_dir({"HOME": "/h"}).endswith("/.cache/jaxrank/xla")
