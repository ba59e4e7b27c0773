"""A run file evaluated by several processes (jaxrank._trec.parallel, `--processes N`): the
same output as one process, byte for byte; the cuts between whole queries; what sends the run
back to one process (a bad line, a query in two parts, a document listed twice, a helper that
cannot start) and what does not (a helper's own error)."""

import gzip
import io as stdio
import os
import pickle
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from jaxrank import io
from jaxrank import numpy as jrn
from jaxrank._trec import chunked as _chunked
from jaxrank._trec import parallel as _parallel
from jaxrank._trec import plan
from jaxrank._trec import table as _trec
from jaxrank.io import _files as io_files

from cli_runs import run_cli, write
from trec_runs import random_files


def _watching(monkeypatch) -> list:
  """Records how each evaluate_spans call ended (its number of processes, or the Fallback's
  message), in the list it returns."""
  ends = []
  real = _parallel.evaluate_spans

  def watched(job, path, spans, **kwargs):
    try:
      result = real(job, path, spans, **kwargs)
    except _parallel.Fallback as e:
      ends.append(str(e))
      raise
    ends.append(kwargs["processes"])
    return result

  monkeypatch.setattr(_parallel, "evaluate_spans", watched)
  return ends


OPTIONS = {
    "five": ["-m", "map", "-m", "ndcg_cut.10", "-m", "recip_rank", "-m", "P.10",
             "-m", "recall.10", "-q"],
    "all_trec -c -M -l, table": ["-m", "all_trec", "-q", "-c", "-M", "5", "-l", "2",
                                 "--format", "table"],
    "names, tie-aware, float32": ["-m", "AP", "-m", "nDCG@10", "-m", "P(rel=2)@5",
                                  "-m", "RBP(p=0.8)", "-m", "ndcg@5", "-q", "--ties", "average",
                                  "--float32"],
    "names beside trec_eval's": ["-m", "map", "-m", "gm_map", "-m", "NumRel", "-m", "SetP",
                                 "-m", "Judged@10", "-c"],
}


@pytest.mark.parametrize("options,seed", [(o, s) for s, o in enumerate(OPTIONS)])
def test_processes_print_what_one_process_prints(tmp_path, capsys, monkeypatch, options, seed):
  qrels, run = random_files(tmp_path, seed)
  opts = [*OPTIONS[options], "--chunk-lines", 40]
  one = run_cli(capsys, *opts, "--processes", 1, qrels, run)
  assert one[0] == 0 and one[1].count("\n") >= 5, one
  assert one == run_cli(capsys, *opts[:-2], "--chunk-lines", 0, qrels, run)  # read whole
  ends = _watching(monkeypatch)
  assert run_cli(capsys, *opts, "--processes", 3, qrels, run) == one
  assert ends == [3]


def test_the_command_and_its_helpers_say_nothing_more(tmp_path):
  """The command in its own process (its helpers forked, where it can): its helpers' standard
  error stays empty (no warning, no shutdown message, even with warnings made errors), and they
  are gone when it ends."""
  qrels, run = random_files(tmp_path, 4)
  outs = [subprocess.run([sys.executable, "-W", "error", "-m", "jaxrank", "evaluate", "-q",
                          "--chunk-lines", "30", "--processes", str(n), str(qrels), str(run)],
                         capture_output=True, text=True, timeout=120) for n in (1, 3)]
  assert [(o.returncode, o.stderr) for o in outs] == [(0, "")] * 2
  assert outs[0].stdout == outs[1].stdout and outs[0].stdout.count("\n") > 100


def test_a_run_without_cuts_is_read_by_one_process(tmp_path, capsys, monkeypatch):
  qrels = write(tmp_path, "qrels", "q 0 a 1\n")
  run = write(tmp_path, "run", "q Q0 a 1 2 t\nq Q0 b 2 1 t\n")  # one query: nowhere to cut
  one = run_cli(capsys, "--processes", 1, "--chunk-lines", 1, qrels, run)
  ends = _watching(monkeypatch)
  assert run_cli(capsys, "--processes", 4, "--chunk-lines", 1, qrels, run) == one
  assert one[0] == 0 and ends == []


# What one process must settle: each case prints what one process prints (an error, or the
# run read some other way), after the helpers' attempt.
FALLBACKS = {
    # a bad score in the last part: reported with its line in the whole file
    "bad line": ("a Q0 x 1 1 t\nb Q0 x 1 1 t\nc Q0 x 1 1 t\nd Q0 x 1 high t\n",
                 "the score (5th field) must be a number"),
    # query a in the first part and in the last: asked chunks say so
    "scattered": ("a Q0 x 1 1 t\nb Q0 x 1 1 t\nc Q0 x 1 1 t\na Q0 y 2 0 t\n",
                  "appears"),
    # d lists x twice: every document coded
    "document twice": ("a Q0 x 1 1 t\nb Q0 x 1 1 t\nc Q0 x 1 1 t\nd Q0 x 1 1 t\n"
                       "d Q0 x 2 0 t\n", "lists a document twice"),
}


@pytest.mark.parametrize("case", list(FALLBACKS))
def test_what_stops_a_part_sends_the_run_to_one_process(tmp_path, capsys, monkeypatch, case):
  text, why = FALLBACKS[case]
  qrels = write(tmp_path, "qrels", "a 0 x 1\nb 0 x 1\nc 0 x 1\nd 0 x 1\n")
  run = write(tmp_path, "run", text)
  args = ["-q", "-m", "map", "-m", "num_ret", "--chunk-lines", 1, qrels, run]
  one = run_cli(capsys, "--processes", 1, *args)
  ends = _watching(monkeypatch)
  assert run_cli(capsys, "--processes", 4, *args) == one
  assert len(ends) == 1 and why in ends[0], ends


# The command forks its helpers: for its first run before it reads the qrels (each splits its
# first span meanwhile, then is sent its job), for the others with their job; a program calling
# cli.main does not fork. JAX, which this test process imports, forbids forking it: the command
# runs in a process of its own, which says which helpers it forked.
FORKED = """
import os, sys
sys.argv[0] = sys.argv.pop(1)  # "jaxrank": the command, or "program"
if os.environ.get("NO_FORK"):
  def no_fork():
    raise BlockingIOError(11, "Resource temporarily unavailable")
  os.fork = no_fork
from jaxrank import cli
from jaxrank._trec import parallel
forks = []
init = parallel._Forked.__init__
def counted(self, serve, others, *, first=None):
  init(self, serve, others, first=first)
  forks.append("ahead" if first is not None else "job")
parallel._Forked.__init__ = counted
code = cli.main(sys.argv[1:])
print("forked", forks, "can_fork", parallel.can_fork(), "jax" in sys.modules)
sys.exit(code)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="helpers are forked on Linux")
def test_the_command_forks_its_helpers_and_falls_back_as_with_started_ones(tmp_path):
  def command(*args, name="jaxrank", env=None):
    out = subprocess.run([sys.executable, "-W", "error", "-c", FORKED, name, "evaluate",
                          *map(str, args)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, **(env or {})})
    text, _, forked = out.stdout.rpartition("forked ")
    return out.returncode, text, out.stderr, forked

  qrels, run = random_files(tmp_path, 9)
  five = [*OPTIONS["five"], "-c", "--chunk-lines", 20]
  one = command(*five, "--processes", 1, qrels, run)
  assert one[0] == 0 and one[2] == "" and one[3] == "[] can_fork True False\n"
  assert command(*five, "--processes", 3, qrels, run) == (
      *one[:3], "['ahead', 'ahead'] can_fork True False\n")
  assert command(*five, "--processes", 3, qrels, run, name="program") == (
      *one[:3], "[] can_fork True False\n")  # its helpers started, not forked
  assert command(*five, "--processes", 3, qrels, run, env={"NO_FORK": "1"}) == (
      *one[:3], "[] can_fork True False\n")  # no fork: this process evaluates the run
  again = tmp_path / "again"  # a second run: its helpers forked after the qrels, with its job
  again.write_bytes(run.read_bytes())
  both = command(*five, "--processes", 1, qrels, run, again)
  assert both[0] == 0 and both[2] == "" and one[1].split()[2] in both[1]
  assert command(*five, "--processes", 3, qrels, run, again) == (
      *both[:3], "['ahead', 'ahead', 'job', 'job'] can_fork True False\n")
  qrels = write(tmp_path, "qrels4", "a 0 x 1\nb 0 x 1\nc 0 x 1\nd 0 x 1\n")
  for case, (text, _) in FALLBACKS.items():
    run = write(tmp_path, "run4", text)
    args = ["-q", "-m", "map", "-m", "num_ret", "--chunk-lines", 1, qrels, run]
    alone = command("--processes", 1, *args)
    assert command("--processes", 4, *args) == (
        *alone[:3], "['ahead', 'ahead', 'ahead'] can_fork True False\n"), case


def test_a_helper_that_cannot_start_sends_the_run_to_one_process(tmp_path, capsys, monkeypatch):
  qrels, run = random_files(tmp_path, 7)
  args = ["-q", "--chunk-lines", 20, qrels, run]
  one = run_cli(capsys, "--processes", 1, *args)
  monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
  ends = _watching(monkeypatch)
  assert run_cli(capsys, "--processes", 2, *args) == one
  assert len(ends) == 1 and "could not start" in ends[0]


def _serve(monkeypatch, *messages) -> list:
  """What serve() replies to ``messages`` (pickled) on its standard input."""
  out = stdio.BytesIO()
  data = b"".join(m if isinstance(m, bytes) else pickle.dumps(m) for m in messages)
  monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=stdio.BytesIO(data)))
  monkeypatch.setattr(sys, "stdout", SimpleNamespace(buffer=out))
  _parallel.serve(watch=False)  # (a helper ends itself with its parent)
  out.seek(0)
  replies = []
  while out.tell() < len(out.getvalue()):
    replies.append(pickle.load(out))
  return replies


def test_a_helper_reports_values_fallbacks_and_its_own_errors(tmp_path, monkeypatch):
  qrels_file, run_file = random_files(tmp_path, 3)
  qrels = io.read_qrels(qrels_file)
  job = _chunked.ChunkJob(qrels, _trec.parse_measures(["map", "P.5"]), uncoded=True)
  size = os.path.getsize(run_file)
  spans = io.query_spans(run_file, [size // 3, 2 * size // 3])
  bad = write(tmp_path, "bad", "a Q0 x 1 one t\n")
  replies = _serve(monkeypatch, job, (str(run_file), spans[1], 10), (str(bad), (0, 15), 10),
                   (None, (0, 15), 10), (str(run_file), spans[2], 10), None, "not read")
  assert [kind for kind, _ in replies] == ["values", "fallback", "error", "values"]
  for (_, values), span in zip([replies[0], replies[3]], [spans[1], spans[2]]):
    alone = job.values(io.iter_judged_run_chunks(run_file, qrels, max_lines=10, span=span))
    assert values.lines == alone.lines and values.tag == alone.tag
    assert [r.per_query["map"].tolist() for _, r in values.parts] == [
        r.per_query["map"].tolist() for _, r in alone.parts]
  assert "must be a number" in replies[1][1]
  assert "TypeError" in replies[2][1]  # a bug: raised in the parent, not hidden
  assert _serve(monkeypatch, b"") == []  # started ahead, never given a job
  assert len(_serve(monkeypatch, job, (str(run_file), spans[1], 10))) == 1  # input ends
  helper = SimpleNamespace(stdout=stdio.BytesIO(pickle.dumps(replies[2])))
  with pytest.raises(RuntimeError, match="internal error in a helper process"):
    _parallel._receive(helper)


def test_a_reserved_span_goes_to_its_helper_only():
  spans = [(i, i + 1) for i in range(5)]
  tasks = _parallel._Tasks(spans, [1, 3])
  assert [i for i, _ in tasks.take()] == [0, 2, 4]  # this process: all but the reserved
  assert [i for i, _ in tasks.take(1)] == [1]  # its helper, even after the others were taken
  tasks.stop()  # an error: nothing more, reserved or not
  assert list(tasks.take(3)) == []


def test_a_helper_forked_ahead_splits_its_first_span_until_its_job_comes(tmp_path, monkeypatch):
  """_serve_ahead, the loop of a helper forked before the qrels are read: it splits its first
  span while no job has come (here: the first 3 looks at its input find nothing), then
  evaluates that span from those blocks on, as a helper given its job first would; with no job
  (the command stopped), it ends quietly."""
  monkeypatch.setattr(io_files, "BLOCK", 300)
  qrels_file, run_file = random_files(tmp_path, 6)
  job = _chunked.ChunkJob(io.read_qrels(qrels_file), _trec.parse_measures(["map", "P.5"]),
                          uncoded=True)
  size = os.path.getsize(run_file)
  spans = io.query_spans(run_file, [size // 3, 2 * size // 3])
  looks = []
  monkeypatch.setattr(_parallel, "select", SimpleNamespace(select=lambda r, w, x, t: (
      looks.append(t) or (r if len(looks) > 3 else []), [], [])))
  split = []
  real_step = io.SplitAhead.step
  monkeypatch.setattr(io.SplitAhead, "step", lambda self: split.append(1) or real_step(self))
  used = []  # the blocks split ahead that each span's reading was given
  real_values = _parallel._span_values

  def span_values(job, judged, path, span, max_lines, progress=None, ahead=None):
    used.append(None if ahead is None else (ahead.span, len(ahead.ready)))
    return real_values(job, judged, path, span, max_lines, progress, ahead)

  monkeypatch.setattr(_parallel, "_span_values", span_values)

  def serve(*messages) -> list:
    read, write = os.pipe()
    with os.fdopen(write, "wb") as w:
      for m in messages:
        pickle.dump(m, w)
    out = stdio.BytesIO()
    with os.fdopen(read, "rb") as tasks:
      _parallel._serve_ahead(str(run_file), spans[1], tasks, out)
    out.seek(0)
    return [pickle.load(out) for _ in messages[1:-1]]

  replies = serve(job, (str(run_file), spans[1], 10), (str(run_file), spans[2], 10), None)
  assert len(split) == 3 and looks == [0] * 4
  assert used == [(spans[1], 3), None]  # its first span read on from the 3 blocks split
  assert [kind for kind, _ in replies] == ["values", "values"]
  given = _serve(monkeypatch, job, (str(run_file), spans[1], 10), (str(run_file), spans[2], 10))
  for (_, values), (_, want) in zip(replies, given):
    assert values.lines == want.lines and values.tag == want.tag
    assert [r.per_query["map"].tolist() for _, r in values.parts] == [
        r.per_query["map"].tolist() for _, r in want.parts]
  looks.clear()
  assert serve() == []  # its input ended before a job came: nothing to do


def test_a_run_file_that_cannot_be_read_is_reported_after_the_qrels(tmp_path, monkeypatch):
  """helpers_for forks nobody ahead for a run file it cannot read: its error comes when the
  run is read, after the qrels' (as without helpers)."""
  _, run = random_files(tmp_path, 2)

  def unreadable(path, cuts):
    raise PermissionError(13, "Permission denied")

  monkeypatch.setattr(_parallel, "can_fork", lambda: True)  # (nothing is forked: it fails first)
  monkeypatch.setattr(io, "query_spans", unreadable)
  assert plan.helpers_for(str(run), asked=10, processes=2, fork=True) is None


def test_spans_are_whole_queries(tmp_path):
  rng = np.random.default_rng(5)
  lines = []
  for q in range(40):
    lines += [f"q{q} Q0 d{i} {i} {rng.integers(5)} t\n" for i in range(int(rng.integers(1, 30)))]
    if q % 9 == 4:
      lines.append("# a comment\n\n")
  for newline in ("\n", "\r\n"):
    path = write(tmp_path, "run", "".join(lines).replace("\n", newline))
    data = path.read_bytes()
    for parts in (1, 2, 3, 7, 100):
      spans = io.query_spans(path, [len(data) * i // parts for i in range(1, parts)])
      assert spans[0][0] == 0 and spans[-1][1] == len(data) and len(spans) <= parts
      assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
      for cut, _ in spans[1:]:  # a line with a new query starts at each cut
        before = [x for x in data[:cut].split(b"\n") if x.strip() and not x.startswith(b"#")]
        assert data[cut - 1:cut] == b"\n"
        assert data[cut:].split(None, 1)[0] != before[-1].split(None, 1)[0]
      assert len(spans) == parts if parts < 10 else len(spans) <= 40
  write(tmp_path, "one", "q Q0 a 1 1 t\n" * 1000)
  (tmp_path / "gz").write_bytes(gzip.compress("".join(lines).encode()))
  cr = write(tmp_path, "cr", "".join(lines).replace("\n", "\r"))
  for path in (tmp_path / "one", tmp_path / "gz", cr):
    size = os.path.getsize(path)
    assert io.query_spans(path, [size // 4, size // 2, 3 * size // 4]) == [(0, size)]


@pytest.mark.parametrize("processes", [2, 3, 8])
@pytest.mark.parametrize("size", [1, 2, 50, 10**6, 80 * 2**20 + 7])
def test_spans_shrink_along_the_file(size, processes):
  cuts = _parallel.span_cuts(size, processes)
  spans = np.diff([0, *cuts, size])
  assert (spans > 0).all() and spans.sum() == size
  smallest = max(1, size // (_parallel.TAIL * processes))
  assert (spans[:-1] >= smallest).all() and spans[-1] <= max(smallest, size // (2 * processes))
  assert (np.diff(spans[:-1]) <= 0).all()  # the first are the largest: a 2p-th of what is left
  assert spans[0] == max(size // (2 * processes), smallest) or len(spans) == 1
  assert len(spans) <= 8 * processes  # a cut costs a look into the file


def test_the_python_door_uses_helpers_started_ahead(tmp_path, monkeypatch):
  qrels, run = random_files(tmp_path, 11)
  names = ["map", "ndcg@10", "nDCG@10", "P_5", "num_q"]
  one = jrn.evaluate_run(run, qrels, names)
  monkeypatch.setattr(plan, "AUTO_CHUNK_BYTES", 1)  # a big run file, as far as they know
  monkeypatch.setattr(plan, "AUTO_CHUNK_LINES", 30)
  monkeypatch.setattr(_parallel, "PROCESS_BYTES", 1)
  monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
  monkeypatch.setattr(os, "cpu_count", lambda: 3)
  started = []
  real = _parallel.Helpers.__init__

  def counted(self, count=0):
    real(self, count)
    started.append(list(self.waiting))

  monkeypatch.setattr(_parallel.Helpers, "__init__", counted)
  ends = _watching(monkeypatch)
  _assert_close(jrn.evaluate_run(run, qrels, names), one)
  assert ends == [3] and [len(s) for s in started] == [2]
  assert all(p.poll() is not None for p in started[0])  # they ended
  runs = jrn.evaluate_runs({"a": run, "b": run}, qrels, names)
  assert ends == [3, 3, 3] and [len(s) for s in started] == [2, 2, 0]  # 1st run's: ahead
  for values in runs.values():
    _assert_close(values, one)
  monkeypatch.setattr(jrn, "RUN_PROCESSES", 1)  # this process only
  _assert_close(jrn.evaluate_run(run, qrels, names), one)
  monkeypatch.setattr(jrn, "RUN_PROCESSES", 2)
  _assert_close(jrn.evaluate_run(run, qrels, names), one)
  assert ends == [3, 3, 3, 2] and [len(s) for s in started][3:] == [1]


def _assert_close(got: dict, want: dict) -> None:
  """Values from chunks of other shapes: ndcg's kernel sums may round apart in their last bit
  (jaxrank._trec.chunked)."""
  assert got.keys() == want.keys()
  for name, values in want.items():
    if isinstance(values, dict):
      assert got[name].keys() == values.keys()
      assert list(got[name].values()) == pytest.approx(list(values.values()), rel=1e-12), name
    else:
      assert got[name] == values, name


def test_measures_pickle_by_name():
  """A helper's job names its measures; their calculations (code) are found again there."""
  asked = [*_trec.parse_measures(["all_trec", "dcg", "P.3,7", "set_F.0.5", "iprec_at_recall..2"]),
           *(_trec.request_of(n) for n in _trec.IR_COUNTS)]
  kept = _chunked._keeping_values(asked)  # a changed field travels too
  for requests in (asked, kept):
    again = pickle.loads(pickle.dumps(requests))
    assert again == requests and [r.names() for r in again] == [r.names() for r in requests]
    assert all(a.measure.host is r.measure.host for a, r in zip(again, requests))
  assert any(not r.measure.per_query for r in asked) and all(
      r.measure.per_query for r in kept if r.measure.summary == "gm")


def test_process_counts(monkeypatch, capsys, tmp_path):
  monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
  monkeypatch.setattr(os, "cpu_count", lambda: 64)
  mib = 1 << 20
  assert [_parallel.processes_for(None, n * mib) for n in (0, 31, 64, 100, 10**5)] == [
      1, 1, 2, 3, _parallel.MAX_PROCESSES]
  assert _parallel.processes_for(5, 1) == 5
  for bad in (0, -1, True, 1.5):
    with pytest.raises(ValueError, match="processes must be a positive integer"):
      _parallel.processes_for(bad, 1)
  assert plan.helpers_for("-") is None and plan.helpers_for(str(tmp_path / "none")) is None
  qrels, run = random_files(tmp_path, 1)
  assert run_cli(capsys, "--processes", 0, qrels, run) == (
      1, "", "jaxrank: error: --processes must be a positive number of processes, got 0\n")
