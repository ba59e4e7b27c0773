"""Malformed, unusual and hostile input to `jaxrank evaluate` and `evaluate_run`, walked as tables.

Every row either succeeds with the stated output or fails with one line on stderr (or one
exception) naming the option and the value (issue 10, items 8, 20 and 23). The last part runs the
command in a subprocess: a full disk, a closed pipe and Ctrl-C (SIGINT) at several moments.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from jaxrank import cli, io
from jaxrank._trec import table as _trec
from jaxrank._trec import run as _run
from jaxrank import numpy as jrn

import repo

QRELS = "q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq2 0 x 1\n"
RUN = "q1 Q0 a 1 0.9 t\nq1 Q0 b 2 0.8 t\nq1 Q0 c 3 0.7 t\nq2 Q0 x 1 0.5 t\n"
HUGE = "9" * 30


@pytest.fixture
def files(tmp_path):
  (tmp_path / "qrels").write_text(QRELS)
  (tmp_path / "run").write_text(RUN)
  return tmp_path / "qrels", tmp_path / "run"


def run_cli(capsys, *args):
  code = cli.main(["evaluate", *map(str, args)])
  captured = capsys.readouterr()
  return code, captured.out, captured.err


# (arguments before QRELS RUN, expected message on stderr); each must exit 1 with that one line.
CLI_ERRORS = [
    (["-m", "P.inf"], "measure 'P.inf': parameters must be finite numbers"),
    (["-m", "P.nan"], "measure 'P.nan': parameters must be finite numbers"),
    (["-m", "P.-inf"], "measure 'P.-inf': parameters must be finite numbers"),
    (["-m", "P.1e400"], "measure 'P.1e400': parameters must be finite numbers"),
    (["-m", "P.1_0"], "measure 'P.1_0': parameters must be finite numbers"),
    (["-m", "P.0x10"], "measure 'P.0x10': parameters must be finite numbers"),
    (["-m", "P."], "measure 'P.': parameters must be finite numbers"),
    (["-m", "P.5,"], "measure 'P.5,': parameters must be finite numbers"),
    (["-m", "P.1e3"], "measure 'P.1e3': write cutoffs as whole numbers (like 1000, not 1e3)"),
    (["-m", "relstring.2e1"], "measure 'relstring.2e1': write the length as whole numbers"),
    (["-m", "P.0"], "measure 'P.0': cutoffs must be whole numbers >= 1"),
    (["-m", "P.0.5"], "measure 'P.0.5': cutoffs must be whole numbers >= 1"),
    (["-m", "P.-3"], "measure 'P.-3': cutoffs must be whole numbers >= 1"),
    (["-m", "recall_nan"], "measure 'recall_nan': parameters must be finite numbers"),
    (["-m", "set_F.inf"], "measure 'set_F.inf': parameters must be finite numbers"),
    (["-m", "set_F.nan"], "measure 'set_F.nan': parameters must be finite numbers"),
    (["-m", "set_F.0"], "measure 'set_F.0': beta must be positive"),
    (["-m", "set_F.-1"], "measure 'set_F.-1': beta must be positive"),
    (["-m", "utility.nan,1,0,0"], "measure 'utility.nan,1,0,0': parameters must be finite"),
    (["-m", "utility.inf,-1,0,0"], "measure 'utility.inf,-1,0,0': parameters must be finite"),
    (["-m", "utility.1,2"], "measure 'utility.1,2': give exactly 4 coefficients"),
    (["-m", "relstring.inf"], "measure 'relstring.inf': parameters must be finite numbers"),
    (["-m", "relstring.-1"], "measure 'relstring.-1': the length must be >= 0"),
    (["-m", "iprec_at_recall..nan"], "measure 'iprec_at_recall..nan': parameters must be"),
    (["-m", "iprec_at_recall.-.5"], "measure 'iprec_at_recall.-.5': levels must be numbers"),
    (["-m", "Rprec_mult.inf"], "measure 'Rprec_mult.inf': parameters must be finite numbers"),
    (["-m", "map.5"], "measure 'map' takes no parameters"),
    (["-m", "ndcg.1=3,2=9"], "measure 'ndcg' takes no parameters"),
    (["-m", "yaap"], "does not compute"),
    (["-m", "nope"], "unknown measure 'nope'"),
    (["-M", "0"], "-M must be a positive number of documents, got 0"),
    (["-M", "-1"], "-M must be a positive number of documents, got -1"),
    (["-M", f"-{HUGE}"], f"-M must be a positive number of documents, got -{HUGE}"),
    (["-l", "0"], "-l must be a positive relevance level, got 0"),
    (["-l", f"-{HUGE}"], "-l must be a positive relevance level"),
    (["-m", "bpref", "--ties", "average"], "measure 'bpref' needs an order of the documents"),
]


@pytest.mark.parametrize("args, message", CLI_ERRORS, ids=[" ".join(a) for a, _ in CLI_ERRORS])
def test_bad_options_are_one_line_errors(files, capsys, args, message):
  code, out, err = run_cli(capsys, *args, *files)
  assert code == 1 and out == "", err
  assert err.startswith("jaxrank: error: ") and err.count("\n") == 1, err
  assert message in err, err
  assert "internal error" not in err and "Traceback" not in err


# argparse refuses these (exit 2), also in one line.
USAGE_ERRORS = [["-M", "1.5"], ["-M", "inf"], ["-M", "nan"], ["-l", "1.5"], ["-l", "x"],
                ["--ties", "worst"], ["--format", "xml"], ["--bogus"]]


@pytest.mark.parametrize("args", USAGE_ERRORS, ids=[" ".join(a) for a in USAGE_ERRORS])
def test_bad_option_values_are_usage_errors(files, capsys, args):
  with pytest.raises(SystemExit) as e:
    cli.main(["evaluate", *args, *map(str, files)])
  err = capsys.readouterr().err
  assert e.value.code == 2 and err.startswith("jaxrank: error: ") and err.count("\n") == 1


# Unusual but valid: (arguments, the `all` line of the first measure).
CLI_VALID = [
    (["-M", HUGE, "-m", "map"], "0.9167"),  # a cut beyond every list keeps everything
    (["-M", "1", "-m", "map"], "0.7500"),
    (["-l", HUGE, "-m", "num_rel"], "0"),  # nothing is relevant
    (["-l", HUGE, "-m", "map"], "0.0000"),
    (["-l", "2", "-m", "map"], "0.1667"),
    (["-m", "P.1000"], "0.0015"),
    (["-m", "P.23.9"], "0.0652"),  # trec_eval truncates: P_23
    (["-m", "P. 2"], "0.5000"),
    (["-m", f"P.{HUGE}"], "0.0000"),
    (["-m", "relstring.0", "-m", "map"], "0.9167"),
]


@pytest.mark.parametrize("args, first", CLI_VALID, ids=[" ".join(a) for a, _ in CLI_VALID])
def test_unusual_but_valid_options(files, capsys, args, first):
  code, out, err = run_cli(capsys, *args, *files)
  assert code == 0 and err == "", err
  assert out.splitlines()[0].split("\t")[2] == first


# ----------------------------------------------------------------------------------------------
# The Python API: (keyword arguments, exception, message).

API_ERRORS = [
    (dict(max_docs=1.5), TypeError, "max_docs must be a positive int or None, got 1.5"),
    (dict(max_docs=-1), ValueError, "max_docs must be a positive int or None, got -1"),
    (dict(max_docs=0), ValueError, "max_docs must be a positive int or None, got 0"),
    (dict(max_docs=True), TypeError, "max_docs must be a positive int or None, got True"),
    (dict(max_docs="5"), TypeError, "max_docs must be a positive int or None, got '5'"),
    (dict(max_docs=np.float64(2)), TypeError, "max_docs must be a positive int"),
    (dict(threshold=0), ValueError, "threshold"),
    (dict(threshold=-1), ValueError, "threshold"),
    (dict(threshold=float("nan")), ValueError, "threshold"),
    (dict(ties="worst"), ValueError, "ties must be one of"),
    (dict(metrics=["P.inf"]), ValueError, "measure 'P.inf': parameters must be finite"),
    (dict(metrics=["set_F.nan"]), ValueError, "measure 'set_F.nan': parameters must be finite"),
    (dict(metrics=["relstring.inf"]), ValueError, "parameters must be finite"),
    (dict(metrics=["P_nan"]), ValueError, "parameters must be finite"),
    (dict(run={"zz": {"a": 1.0}}), ValueError, "no query of the run .*'zz'.* qrels .*'q1'"),
    (dict(qrels={"other": {"a": 1}}), ValueError,
     "no query of the run .*'q1', 'q2'.* qrels .*'other'"),
]


@pytest.mark.parametrize("kwargs, error, message", API_ERRORS,
                         ids=[repr(k)[:40] for k, _, _ in API_ERRORS])
@pytest.mark.parametrize("api", ["numpy", "trec"])
def test_python_api_errors(kwargs, error, message, api):
  kwargs = dict(kwargs)
  run = kwargs.pop("run", io.read_run(RUN.encode()).to_dict())
  qrels = kwargs.pop("qrels", io.read_qrels(QRELS.encode()).to_dict())
  metrics = kwargs.pop("metrics", ["map", "P_5"])
  with pytest.raises(error, match=message) as e:
    if api == "numpy":
      jrn.evaluate_run(run, qrels, metrics, **kwargs)
    else:
      _run.evaluate_requests(io.as_run(run), io.as_qrels(qrels), _trec.parse_measures(metrics),
                         **kwargs)
  assert "\n" not in str(e.value)


@pytest.mark.parametrize("max_docs", [10**30, 2**63, np.int64(2**62), 3])
def test_python_api_large_cut_keeps_everything(max_docs):
  run, qrels = io.read_run(RUN.encode()).to_dict(), io.read_qrels(QRELS.encode()).to_dict()
  assert jrn.evaluate_run(run, qrels, ["map"], max_docs=max_docs) == jrn.evaluate_run(
      run, qrels, ["map"])


# ----------------------------------------------------------------------------------------------
# The command in a subprocess: where stdout goes, and Ctrl-C.

ROOT = repo.ROOT
# The console script's own code (pip's wrapper): argv[0] is the command's name.
COMMAND = [sys.executable, "-c", "import sys; sys.argv[0] = 'jaxrank'; "
           "from jaxrank.cli import main; sys.exit(main())"]


def _env():
  # No compilation cache: a warm one can finish the job before the timed Ctrl-C arrives.
  return {**os.environ, "JAXRANK_CACHE": "off",
          "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.mark.parametrize("how, args", [
    ("console script", ["--example", "-q", "-m", "map"]),
    ("python -m", ["--example", "-q", "-m", "map"]),
    ("python -m", ["--example", "-m", "map"]),
    ("console script", ["--help"]),
])
def test_full_disk_is_one_line(how, args):
  if not os.path.exists("/dev/full"):
    pytest.skip("no /dev/full")
  start = COMMAND if how == "console script" else [sys.executable, "-m", "jaxrank.cli"]
  with open("/dev/full", "w") as full:
    done = subprocess.run([*start, "evaluate", *args], stdout=full,
                          stderr=subprocess.PIPE, text=True, env=_env(), timeout=120)
  assert done.returncode == 1
  assert done.stderr == "jaxrank: error: cannot write the output to stdout: No space left on " \
                        "device\n"


def test_closed_stdout_is_one_line():
  read, write = os.pipe()
  os.close(read)  # `| head -c0`: nobody reads
  try:
    done = subprocess.run([*COMMAND, "evaluate", "--example", "-q", "-m", "map"], stdout=write,
                          stderr=subprocess.PIPE, text=True, env=_env(), timeout=120)
  finally:
    os.close(write)
  assert done.returncode == 1
  assert done.stderr == "jaxrank: error: cannot write the output to stdout: Broken pipe\n"


def _with_closed(fds, command):
  """``command`` started by the shell with the descriptors ``fds`` closed (``<&-``, ``>&-``,
  ``2>&-``); no preexec_fn, whose fork JAX's threads make unsafe."""
  closing = " ".join({0: "<&-", 1: ">&-", 2: "2>&-"}[fd] for fd in fds)
  return ["/bin/sh", "-c", f'exec "$@" {closing}', "sh", *command]


CLOSED_STDOUT = "jaxrank: error: cannot write the output to stdout: it is closed\n"


@pytest.mark.skipif(not os.path.exists("/bin/sh"), reason="needs a POSIX shell")
@pytest.mark.parametrize("closed, args, code, err", [
    # `jaxrank ... >&-`: one line, exit 1, before any work (was: a traceback, AttributeError)
    ((1,), ["evaluate", "--example", "-m", "map"], 1, CLOSED_STDOUT),
    ((1,), ["evaluate", "--example", "-m", "map", "--format", "json"], 1, CLOSED_STDOUT),
    ((1,), ["compare", "{Q}", "{R}", "{R2}", "-m", "map"], 1, CLOSED_STDOUT),
    # `<&-` with a `-` to read: one line naming the argument (was: internal error, exit 70)
    ((0,), ["evaluate", "-m", "map", "{Q}", "-"], 1,
     "jaxrank: error: RUN is '-' (standard input), but standard input is closed (`<&-`)\n"),
    ((0,), ["evaluate", "-m", "map", "--chunk-lines", "2", "{Q}", "-"], 1,
     "jaxrank: error: RUN is '-' (standard input), but standard input is closed (`<&-`)\n"),
    ((0,), ["evaluate", "-m", "map", "-", "{R}"], 1,
     "jaxrank: error: QRELS is '-' (standard input), but standard input is closed (`<&-`)\n"),
    ((0,), ["compare", "{Q}", "-", "{R2}", "-m", "map"], 1,
     "jaxrank: error: RUN 1 is '-' (standard input), but standard input is closed (`<&-`)\n"),
    ((0, 1), ["evaluate", "-m", "map", "{Q}", "-"], 1, CLOSED_STDOUT),
    # a closed stream the command does not need changes nothing
    ((0,), ["evaluate", "-m", "map", "{Q}", "{R}"], 0, ""),
    ((2,), ["evaluate", "-m", "map", "{Q}", "{R}"], 0, None),
    ((2,), ["evaluate", "-m", "nope", "{Q}", "{R}"], 1, None),  # the error has nowhere to go
    ((2,), ["evaluate", "-m", "all_trec", "{Q}", "{R}"], 0, None),  # nor the note
    ((1,), ["--version"], 0, "jaxrank {version}\n"),  # argparse writes it on stderr
])
def test_closed_standard_streams(files, closed, args, code, err):
  """Started with stdin, stdout or stderr closed (`<&-`, `>&-`, `2>&-`)."""
  import jaxrank
  qrels, run = files
  run2 = run.parent / "run2"
  run2.write_text(RUN.replace("0.5", "0.6"))
  args = [a.format(Q=qrels, R=run, R2=run2) for a in args]
  done = subprocess.run(_with_closed(closed, [*COMMAND, *args]), stdin=subprocess.DEVNULL,
                        capture_output=True, text=True, env=_env(),
                        timeout=120)
  assert done.returncode == code, done.stderr
  if 2 not in closed:
    assert done.stderr == err.format(version=jaxrank.__version__)
  if 1 not in closed and "all_trec" in args:
    assert "map                   \tall\t0.9167\n" in done.stdout
  elif 1 not in closed:
    assert done.stdout == ("" if code else "map                   \tall\t0.9167\n")


@pytest.fixture(scope="module")
def big_files(tmp_path_factory):
  """"many": 300 queries x 1,000 documents (`-m all_trec` takes 5-15 s, most of it compiling);
  "dense": one query, 40,000 documents, 20,000 relevant (one XLA call took 21-27 s)."""
  root = tmp_path_factory.mktemp("big")
  scores = np.random.default_rng(0).random(300_000).tolist()
  (root / "many.run").write_text("".join(f"q{i % 300} Q0 d{i} 0 {s:.6f} t\n"
                                         for i, s in enumerate(scores)))
  (root / "many.qrels").write_text("".join(f"q{i % 300} 0 d{i} {i % 3}\n"
                                           for i in range(0, 300_000, 7)))
  (root / "dense.run").write_text("".join(f"q Q0 d{i} 0 {s:.6f} t\n"
                                          for i, s in enumerate(scores[:40_000])))
  (root / "dense.qrels").write_text("".join(f"q 0 d{i} 1\n" for i in range(0, 40_000, 2)))
  return {name: (root / f"{name}.qrels", root / f"{name}.run") for name in ("many", "dense")}


def _mapped(pid: int, name: str) -> bool:
  try:
    return name in Path(f"/proc/{pid}/maps").read_text()
  except OSError:
    return False


def _interrupt(args, wait_for: str, after: float, scoring: str):
  """Starts the command, scoring on ``scoring`` (``JAXRANK_SCORING``), waits until its memory
  maps ``wait_for`` (a shared library being imported) and ``after`` seconds more, sends SIGINT;
  returns (status, stderr, seconds to stop)."""
  proc = subprocess.Popen([*COMMAND, "evaluate", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env={**_env(), "JAXRANK_SCORING": scoring},
                          text=True)
  deadline = time.monotonic() + 120
  while not _mapped(proc.pid, wait_for) and proc.poll() is None and time.monotonic() < deadline:
    time.sleep(0.005)
  time.sleep(after)
  if proc.poll() is not None:  # a machine fast enough to finish first: nothing to interrupt
    pytest.skip(f"the command ended before the signal: {proc.communicate()}")
  sent = time.monotonic()
  proc.send_signal(signal.SIGINT)
  try:
    out, err = proc.communicate(timeout=30)
  except subprocess.TimeoutExpired:
    proc.kill()
    out, err = proc.communicate()
  return proc.returncode, out, err, time.monotonic() - sent


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc (Linux)")
@pytest.mark.parametrize("files, after, scoring", [
    ("many", 0.0, "jax"),  # while jax is being imported
    ("many", 1.5, "jax"),  # reading the files, or compiling and scoring
    ("many", 3.0, "jax"),
    ("dense", 1.0, "jax"),  # scoring one list with many relevant documents (XLA)
    ("many", 0.2, "numpy"),  # reading or scoring on the host, JAX never imported
])
def test_ctrl_c_stops_within_a_second_with_one_line(big_files, files, after, scoring):
  """It took 14-102 s (a KeyboardInterrupt waits for XLA to return) and printed a traceback
  during the imports."""
  wait_for = "jaxlib" if scoring == "jax" else "_multiarray_umath"  # JAX's or NumPy's library
  code, out, err, took = _interrupt(["-q", "-m", "all_trec", *map(str, big_files[files])],
                                    wait_for, after, scoring)
  assert code == 130
  # Nothing is printed before the evaluation is complete; a Ctrl-C that lands while the finished
  # output is being written (a quiet machine can get there within 3 s) cuts it short.
  assert out == "" or after >= 3.0, out[:200]
  assert err.endswith("jaxrank: error: interrupted\n") and "Traceback" not in err, err
  assert err.count("\n") <= 2  # and, once jax is in, the note that all_trec lacks some measures
  assert took < 1.0, took
