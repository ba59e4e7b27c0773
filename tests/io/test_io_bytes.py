"""Ids are bytes, of any length (issue 22, item 6): ids that are not UTF-8 read, evaluate and
write back as trec_eval reads them; ids of megabytes read in time linear in the bytes; the
writers replace their target atomically."""

from __future__ import annotations

import errno
import gzip
import os
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

from jaxrank import cli, io
from jaxrank import numpy as jrn
from jaxrank.io import _bytes, _ids, _judged, _reader, _split, _writer
from jaxrank.io._chunks import iter_judged_run_chunks

MEASURES = ["map", "ndcg", "P_5", "recip_rank", "bpref"]


def _rows(x):
  """A run's or qrels' rows as bytes and numbers, in file order."""
  values = x.score.tolist() if isinstance(x, io.Run) else x.rel.tolist()
  return list(zip(x.qid.tolist(), x.docid.tolist(), values))


def _files(ids: list[bytes], qids: list[bytes]) -> tuple[bytes, bytes]:
  """A run and qrels over ``ids`` (documents) and ``qids``: each query retrieves every document,
  with ties (ordered by id), judges some, and one judged document it never retrieves."""
  run, qrels = [], []
  for i, q in enumerate(qids):
    for j, d in enumerate(ids):
      run.append(b"%s Q0 %s %d %s t\n" % (q, d, j + 1, [b"3", b"2.5", b"2.5", b"1"][(i + j) % 4]))
      if (i + 2 * j) % 3 == 0:
        qrels.append(b"%s 0 %s %d\n" % (q, d, (i + j) % 3))
    qrels.append(b"%s 0 %s 1\n" % (q, ids[(i + 1) % len(ids)] + b"-never-retrieved"))
  return b"".join(run), b"".join(qrels)


def _ascii(ids: list[bytes]) -> dict[bytes, bytes]:
  """Short ASCII ids in the same byte order (trec_eval's tie order is by id)."""
  return {d: b"x%04d" % i for i, d in enumerate(sorted(set(ids)))}


def _mapped(data: bytes, names: dict[bytes, bytes]) -> bytes:
  return b"".join(b" ".join(names.get(f, f) for f in line.split(b" ")) for line in
                  data.splitlines(keepends=True))


def _evaluate(run, qrels):
  return jrn.evaluate_run(run, qrels, MEASURES)


def _renamed(result: dict, names: dict[str, str]) -> dict:
  return {m: {names.get(q, q): v for q, v in per_q.items()} for m, per_q in result.items()}


# ---------------------------------------------------------------------------------------------
# Long ids.

MB = 1 << 20


def _long_ids() -> list[bytes]:
  big = b"L" * MB
  return [b"short", b"s" * 65, b"p" * 255, b"p" * 256, b"p" * 257, b"p" * 1000 + b"a",
          b"p" * 1000 + b"b", b"pppppppp-differs-after-an-8-byte-prefix" * 100, b"k" * 4096,
          big, big[:-1] + b"M", big + b"N", big[:MB // 2] + b"A" + big[MB // 2:]]


def test_long_ids_read_fast_and_evaluate_like_short_ids(tmp_path):
  """Ids of 65 bytes to 1 MB, some sharing long prefixes, in the run and the qrels: every reader
  gives the rows, vocabularies and numbers of the same files with short ids in the same byte
  order, in well under the seconds per megabyte it took before (10 s for one 1 MB id)."""
  ids = _long_ids()
  qids = [b"q1", b"Q" * 300, b"Q" * 300 + b"2"]
  run_text, qrels_text = _files(ids, qids)
  names = _ascii(ids + qids + [d + b"-never-retrieved" for d in ids])
  (tmp_path / "run.gz").write_bytes(gzip.compress(run_text, 1))
  (tmp_path / "qrels").write_bytes(qrels_text)
  short_run, short_qrels = io.read_run(_mapped(run_text, names)), io.read_qrels(
      _mapped(qrels_text, names))
  io.read_run(b"q Q0 d 1 1 t\n")
  start = time.process_time()
  run, qrels = io.read_run(tmp_path / "run.gz"), io.read_qrels(tmp_path / "qrels")
  took = time.process_time() - start  # 13 MB of ids; 0.3 s here (130 s before)
  assert took < 5, f"reading took {took:.1f} s of CPU"
  back = {v: k for k, v in names.items()}
  assert _rows(run) == [(back[q], back[d], s) for q, d, s in _rows(short_run)]
  assert _rows(qrels) == [(back[q], back[d], g) for q, d, g in _rows(short_qrels)]
  vocab = run.docid_vocab
  assert [d.encode() for d in vocab.tolist()] == list(dict.fromkeys(ids))
  assert [vocab[i].encode() for i in vocab.argsort()] == sorted(ids)
  assert vocab.bytes_array().tolist() == ids
  assert vocab.index(qrels.docid_vocab).tolist() == [
      ids.index(d.encode()) if d.encode() in ids else -1 for d in qrels.docid_vocab.tolist()]
  assert vocab.take([9, 0, 12]).tolist() == [ids[9].decode(), "short", ids[12].decode()]
  want = _evaluate(short_run, short_qrels)
  strs = {k.decode(): v.decode() for k, v in names.items()}
  assert _renamed(_evaluate(run, qrels), strs) == want
  assert _renamed(_evaluate(run.to_dict(), qrels.to_dict()), strs) == want  # the dicts' door
  chunks = list(io.iter_run_chunks(tmp_path / "run.gz", max_lines=len(ids)))
  assert sum((_rows(c) for c in chunks), []) == _rows(run)
  judged = list(iter_judged_run_chunks(tmp_path / "run.gz", qrels, max_lines=len(ids)))
  assert [[c.qid_vocab[q] for q in c.qid_codes] for c in judged] == [
      [c.qid_vocab[q] for q in c.qid_codes] for c in chunks]
  io.write_run(run, tmp_path / "out")
  assert sorted(_rows(io.read_run(tmp_path / "out"))) == sorted(_rows(run))


def _line_events(read, data: bytes) -> int:
  """Python lines run in jaxrank/io/ while ``read(data)`` runs (in this thread)."""
  count = 0

  def trace(frame, event, arg):
    nonlocal count
    if os.path.dirname(frame.f_code.co_filename) != os.path.dirname(io.__file__):
      return None
    if event == "line":
      count += 1
    return trace

  sys.settrace(trace)
  try:
    read(data)
  finally:
    sys.settrace(None)
  return count


@pytest.mark.parametrize("where", ["docid", "qid"])
def test_reading_work_does_not_grow_with_the_longest_id(monkeypatch, where):
  """Counted, not timed: the Python lines run to read, code, compare, sort and show runs and
  qrels with two ids sharing all but their last byte grow with the megabytes read (blocks,
  slices of words: under 1,000 lines a megabyte), not with the longest id's words. Before, a
  NumPy round of several lines ran per 8 bytes of the longest id (about 400,000 a megabyte)."""
  monkeypatch.setattr(_reader, "_PIPELINE", 1 << 62)  # one thread: every line is counted

  def text(n: int) -> bytes:
    a, b = b"A" * n, b"A" * (n - 1) + b"B"
    if where == "qid":
      return b"%s Q0 d 1 1 t\n%s Q0 d 1 1 t\n%s Q0 e 2 0 t\n" % (a, b, a)
    return b"q Q0 %s 1 1 t\nq Q0 %s 2 1 t\nr Q0 %s 1 0 t\n" % (a, b, a)

  def work(data: bytes) -> None:
    run = io.read_run(data)
    for vocab in (run.qid_vocab, run.docid_vocab):
      vocab.argsort()
      vocab.index(io.Ids.from_strings(vocab.tolist())[0])
      vocab.bytes_array()
    io.read_qrels(b"".join(line.split(b" Q0 ")[0] + b" 0 " + line.split(b" ")[2] + b" 1\n"
                           for line in data.splitlines()))

  small, large = _line_events(work, text(4096)), _line_events(work, text(4 * MB))
  megabytes = 2 * len(text(4 * MB)) / MB  # the run and the qrels
  assert (large - small) / megabytes < 1000, (small, large)


def test_long_id_collisions_are_resolved_exactly(monkeypatch):
  """Every id longer than 8 bytes gets one hash: long ones are told apart byte by byte."""
  real = _bytes.hash_ids
  for module in (_ids, _judged, _split):  # every module that hashes ids
    monkeypatch.setattr(module, "hash_ids", lambda win, s, n: np.where(n > 8, np.uint64(7),
                                                                       real(win, s, n)))
  ids = [b"x" * 300 + bytes([97 + i % 5]) * (i % 3) for i in range(40)] + [b"y" * 70000] * 3
  text = b"".join(b"q%d Q0 %s %d 1 t\n" % (i % 4, d, i) for i, d in enumerate(ids))
  run = io.read_run(text)
  assert [run.docid_vocab[c].encode() for c in run.docid_codes] == ids
  assert len(run.docid_vocab) == len(set(ids))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.intp])
def test_low_bytes_masks_as_many_bytes_as_asked(dtype):
  """low_bytes(n): the low min(n, 8) bytes of a word set, none for n <= 0."""
  n = np.arange(-3, 20, dtype=dtype)
  want = [(1 << (8 * min(max(k, 0), 8))) - 1 for k in n.tolist()]
  got = _bytes.low_bytes(n)
  assert got.dtype == np.uint64 and got.tolist() == want


@pytest.mark.parametrize("seed", range(4))
def test_check_equal_tells_pairs_apart_as_python_does(seed):
  """check_equal(pairs of ids with equal hashes) raises Collision exactly when a pair with an
  id longer than 8 bytes differs (shorter ids' hashes are exact); pairs of all lengths, up to
  past LONG bytes, most equal, some of other lengths or other bytes."""
  rng = np.random.default_rng(seed)
  for _ in range(300):
    n = int(rng.integers(1, 20))
    a = [rng.choice(np.frombuffer(b"ab", np.uint8), int(k)).tobytes()
         for k in rng.choice([1, 8, 9, 16, 17, 40, 255, 256, 257, 600], n)]
    b = list(a)
    if rng.random() < 0.5:  # one pair differs: a byte anywhere, or the length
      i = int(rng.integers(n))
      at = int(rng.integers(len(b[i])))
      b[i] = (b[i][:at] + (b"b" if b[i][at:at + 1] == b"a" else b"a") + b[i][at + 1:]
              if rng.random() < 0.7 else b[i] + b"a")
    starts = [np.cumsum([0] + [len(x) for x in ids])[:-1] for ids in (a, b)]
    wins = [_bytes.windows(_bytes.padded(b"".join(ids))) for ids in (a, b)]
    lens = [np.array([len(x) for x in ids]) for ids in (a, b)]
    same = all(x == y or (len(x) <= 8 and len(y) <= 8) for x, y in zip(a, b))
    try:
      _bytes.check_equal(wins[0], starts[0], lens[0], wins[1], starts[1], lens[1])
      told = True
    except _bytes.Collision:
      told = False
    assert told == same, (a, b)


@pytest.mark.parametrize("long_bytes, flat, few", [(8, 3, 0), (16, 1, 2), (256, 1 << 18, 256)])
def test_flat_passes_agree_with_python(monkeypatch, long_bytes, flat, few):
  """The flat passes over long ids' words (forced for short ids here: ``LONG`` of 8 or 16
  bytes, slices of 1 or 3 words) and the byte sort of a few tied ids agree with Python's
  factorizing, matching and sorting of the ids' bytes."""
  monkeypatch.setattr(_bytes, "LONG", long_bytes)
  monkeypatch.setattr(_ids, "LONG", long_bytes)
  monkeypatch.setattr(_bytes, "_FLAT", flat)
  monkeypatch.setattr(_ids, "_FEW_TIED", few)
  rng = np.random.default_rng(long_bytes)
  alphabet = np.frombuffer(b"ab\xe9\xc3", np.uint8)
  pool = [rng.choice(alphabet, int(n)).tobytes() for n in rng.integers(1, 70, 60)]
  pool += [b"ab" * 20 + p for p in pool[:20]]  # long shared prefixes
  a = [pool[i] for i in rng.integers(0, len(pool), 200)]
  b = [pool[i] for i in rng.integers(0, len(pool), 50)] + [b"zz" * 30]
  text = b"".join(b"q%d Q0 %s 1 1 t\n" % (i % 7, d) for i, d in enumerate(a))
  va = io.read_run(text).docid_vocab
  vb, codes = io.Ids.from_strings([d.decode("utf-8", "surrogateescape") for d in b])
  distinct = list(dict.fromkeys(a))
  assert [d.encode("utf-8", "surrogateescape") for d in va.tolist()] == distinct
  assert [vb[c] for c in codes] == [d.decode("utf-8", "surrogateescape") for d in b]
  key = [d.encode("utf-8", "surrogateescape") for d in vb.tolist()]
  assert va.index(vb).tolist() == [distinct.index(k) if k in distinct else -1 for k in key]
  assert [distinct[i] for i in va.argsort()] == sorted(distinct)
  assert va.bytes_array().tolist() == distinct
  assert va.take(np.arange(len(va))).index(vb).tolist() == va.index(vb).tolist()


# ---------------------------------------------------------------------------------------------
# Ids that are not UTF-8.

LATIN1_RUN = (b"caf\xe9 Q0 th\xe9\xe2tre 1 3.5 t\xe9\n"
              b"caf\xe9 Q0 na\xefve 2 2.0 t\xe9\n"
              b"caf\xe9 Q0 caf\xc3\xa9 3 2.0 t\xe9\n"   # UTF-8 'café': another id
              b"caf\xe9 Q0 \xff\xfe 4 1.0 t\xe9\n"
              b"r\xe9sum\xe9 Q0 na\xefve 1 1.0 t\xe9\n"
              b"r\xe9sum\xe9 Q0 \x80 2 0.5 t\xe9\n")
LATIN1_QRELS = (b"caf\xe9 0 na\xefve 1\ncaf\xe9 0 \xff\xfe 2\ncaf\xe9 0 caf\xc3\xa9 0\n"
                b"r\xe9sum\xe9 0 \x80 1\nr\xe9sum\xe9 0 absent\xe9 1\n")
BYTES = [b"caf\xe9", b"th\xe9\xe2tre", b"na\xefve", b"caf\xc3\xa9", b"\xff\xfe", b"r\xe9sum\xe9",
         b"\x80", b"absent\xe9", b"t\xe9"]


def _doors(tmp_path, data: bytes, kind: str):
  """Every way a file's ids come in: bytes, a path, gzip, standard input, chunks."""
  read = io.read_run if kind == "run" else io.read_qrels
  (tmp_path / kind).write_bytes(data)
  (tmp_path / f"{kind}.gz").write_bytes(gzip.compress(data))
  yield "bytes", read(data)
  yield "path", read(tmp_path / kind)
  yield "gzip", read(tmp_path / f"{kind}.gz")
  if kind == "run":
    for chunks in (io.iter_run_chunks(tmp_path / kind, max_lines=1),
                   io.iter_run_chunks(data, max_lines=3)):
      got = list(chunks)
      yield "chunks", io.as_run({q: d for c in got for q, d in c.to_dict().items()})
      assert got[-1].tag == "t\udce9"


def test_ids_that_are_not_utf8_read_through_every_door(tmp_path):
  """Latin-1 ids (and bytes that are no text at all) are ids: the same rows through every
  reader, shown with surrogateescape, and ``write_run(read_run(f))`` writes the same bytes."""
  for kind, data in (("run", LATIN1_RUN), ("qrels", LATIN1_QRELS)):
    want = [tuple(line.split()[i] for i in (0, 2)) for line in data.splitlines()]
    for door, got in _doors(tmp_path, data, kind):
      assert [(q, d) for q, d, _ in _rows(got)] == want, door
      assert got.qid_vocab.tolist() == [q.decode("latin-1").replace("\xe9", "\udce9")
                                        for q in dict.fromkeys(q for q, _ in want)], door
  code = ("import sys; from jaxrank import io; r = io.read_run('-'); "
          "sys.stdout.buffer.write(repr((r.docid.tolist(), r.tag)).encode())")
  out = subprocess.run([sys.executable, "-c", code], input=gzip.compress(LATIN1_RUN),
                       capture_output=True, check=True)
  assert out.stdout.decode() == repr(([line.split()[2] for line in LATIN1_RUN.splitlines()],
                                      "t\udce9"))
  run = io.read_run(LATIN1_RUN)
  io.write_run(run, tmp_path / "once")
  once = (tmp_path / "once").read_bytes()
  assert once == LATIN1_RUN  # the same bytes (the file is in write_run's order)
  io.write_run(io.read_run(tmp_path / "once"), tmp_path / "twice")
  assert (tmp_path / "twice").read_bytes() == once
  io.write_run(run.to_dict(), tmp_path / "dict", tag="t\udce9")  # the dict door too
  assert (tmp_path / "dict").read_bytes() == once
  io.write_qrels(io.read_qrels(LATIN1_QRELS), tmp_path / "q")
  assert sorted((tmp_path / "q").read_bytes().splitlines()) == sorted(
      LATIN1_QRELS.splitlines())
  columns = io.Run(run.qid.tolist(), run.docid.tolist(), run.score)  # byte columns
  assert _rows(columns) == _rows(run)


def test_ids_that_are_not_utf8_give_trec_evals_numbers(tmp_path):
  """The numbers of the same data with the ids mapped to ASCII (same byte order), which
  pytrec_eval (trec_eval's C code) gives; through read_run and through the judged-only chunk
  reader of `jaxrank evaluate`."""
  names = _ascii(BYTES)
  run, qrels = io.read_run(LATIN1_RUN), io.read_qrels(LATIN1_QRELS)
  ascii_run = io.read_run(_mapped(LATIN1_RUN, names))
  ascii_qrels = io.read_qrels(_mapped(LATIN1_QRELS, names))
  want = _evaluate(ascii_run, ascii_qrels)
  strs = {k.decode("utf-8", "surrogateescape"): v.decode() for k, v in names.items()}
  assert _renamed(_evaluate(run, qrels), strs) == want
  assert _renamed(_evaluate(run.to_dict(), qrels.to_dict()), strs) == want
  pytrec_eval = pytest.importorskip("pytrec_eval")
  ref = pytrec_eval.RelevanceEvaluator(ascii_qrels.to_dict(), {"map", "ndcg", "P", "recip_rank",
                                                                 "bpref"}).evaluate(
      ascii_run.to_dict())
  for m in MEASURES:
    assert want[m] == pytest.approx({q: ref[q][m] for q in ref}, abs=1e-12), m
  judged = list(iter_judged_run_chunks(_write(tmp_path / "r", LATIN1_RUN), qrels,
                                       max_lines=2))
  assert [c.qid_vocab.tolist() for c in judged] == [["caf\udce9"], ["r\udce9sum\udce9"]]


def _write(path, data: bytes):
  path.write_bytes(data)
  return path


def test_cli_prints_the_ids_bytes(tmp_path, capsysbinary):
  """`jaxrank evaluate -q` prints a query id as the bytes read, as trec_eval does: the output
  is that of the ASCII-mapped files with the ids mapped back (the chunked reader and the whole
  one alike)."""
  names = _ascii(BYTES)
  files = {"run": LATIN1_RUN, "qrels": LATIN1_QRELS,
           "arun": _mapped(LATIN1_RUN, names), "aqrels": _mapped(LATIN1_QRELS, names)}
  for k, v in files.items():
    (tmp_path / k).write_bytes(v)
  outputs = []
  for args in (["qrels", "run"], ["--chunk-lines", "1", "qrels", "run"], ["aqrels", "arun"]):
    code = cli.main(["evaluate", "-q", "-m", "map", "-m", "P.2", "-m", "runid",
                     *[str(tmp_path / a) if a in files else a for a in args]])
    out, err = capsysbinary.readouterr()
    assert code == 0, err
    outputs.append(out)
  back = {v: k for k, v in names.items()}
  assert outputs[0] == outputs[1] == b"".join(
      b"\t".join(back.get(f, f) for f in line.split(b"\t")) + b"\n"
      for line in outputs[2].splitlines())
  assert b"\tcaf\xe9\t" in outputs[0] and b"t\xe9\n" in outputs[0]  # the runid too


def test_error_messages_show_bytes_that_are_not_utf8(tmp_path, capsysbinary):
  """A message naming an id that is not UTF-8 shows it escaped (never a crash, never a raw
  surrogate): the scattered query of the chunk reader, a document listed twice, ids that
  cannot be written, no common query; on the command line, one line on stderr."""
  run = b"q\xe9 Q0 a 1 1 t\nr Q0 a 1 1 t\nq\xe9 Q0 b 2 1 t\n"
  with pytest.raises(io.ScatteredQueryError, match=r"query 'q\\udce9' appears again") as e:
    list(io.iter_run_chunks(run, max_lines=1))
  messages = [str(e.value)]
  with pytest.raises(ValueError, match=r"'q\\udce9' lists document 'a\\udcff' twice") as e:
    _evaluate(io.read_run(b"q\xe9 Q0 a\xff 1 1 t\nq\xe9 Q0 a\xff 2 1 t\n"),
              io.read_qrels(b"q\xe9 0 a\xff 1\n"))
  messages.append(str(e.value))
  with pytest.raises(ValueError, match=r"run qid '#\\udce9' cannot be written") as e:
    io.write_run({"#\udce9": {"d": 1.0}}, tmp_path / "w")
  messages.append(str(e.value))
  with pytest.raises(ValueError, match=r"no query of the run .*'q\\udce9'") as e:
    _evaluate(io.read_run(run), io.read_qrels(b"x\xff 0 a 1\n"))
  messages.append(str(e.value))
  for m in messages:
    m.encode("ascii")
  (tmp_path / "run").write_bytes(run)
  (tmp_path / "qrels").write_bytes(b"q\xe9 0 a 1\n")
  assert cli.main(["evaluate", "--chunk-lines", "1", str(tmp_path / "qrels"),
                   str(tmp_path / "run")]) == 1
  out, err = capsysbinary.readouterr()
  assert out == b"" and err.count(b"\n") == 1 and b"query 'q\\udce9' appears again" in err


# ---------------------------------------------------------------------------------------------
# Atomic writes.


class _FailingFile:
  """A text file whose ``write`` fails (a full disk) once ``after`` writes went through."""

  def __init__(self, f, after: int, error: BaseException) -> None:
    self.f, self.after, self.error = f, after, error

  def write(self, text: str) -> int:
    if not self.after:
      raise self.error
    self.after -= 1
    return self.f.write(text)

  def __enter__(self):
    return self

  def __exit__(self, *exc) -> None:
    self.f.close()


WRITERS = [(io.write_run, {f"q{i}": {f"d{j}": float(j) for j in range(5)} for i in range(4)}),
           (io.write_qrels, {f"q{i}": {f"d{j}": j % 3 for j in range(5)} for i in range(4)})]


@pytest.mark.parametrize("writer, data", WRITERS)
@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, "No space left on device"),
                                   KeyboardInterrupt()])
@pytest.mark.parametrize("exists", [True, False])
def test_a_failed_write_leaves_the_target_as_it_was(tmp_path, monkeypatch, writer, data,
                                                    error, exists):
  """A failure after some rows were written (a full disk, Ctrl-C), or at the final rename,
  leaves an existing target unchanged, creates none, and leaves no temporary file."""
  target = tmp_path / "out"
  if exists:
    target.write_bytes(b"before\n")
  real = os.fdopen
  monkeypatch.setattr(_writer, "_WRITE_ROWS", 3)
  monkeypatch.setattr(os, "fdopen", lambda *a, **k: _FailingFile(real(*a, **k), 2, error))
  with pytest.raises(type(error)):
    writer(data, target)
  assert os.listdir(tmp_path) == (["out"] if exists else [])
  if exists:
    assert target.read_bytes() == b"before\n"
  monkeypatch.setattr(os, "fdopen", real)

  def no_rename(*args):
    raise OSError(errno.EXDEV, "Invalid cross-device link")

  monkeypatch.setattr(os, "replace", no_rename)
  with pytest.raises(OSError, match="cross-device"):
    writer(data, target)
  assert os.listdir(tmp_path) == (["out"] if exists else [])
  monkeypatch.undo()
  writer(data, target)  # and without a failure, the whole file, no temporary left
  assert os.listdir(tmp_path) == ["out"] and target.read_bytes().count(b"\n") == 20


FULL_DISK = """
import os, resource, signal, sys
from jaxrank import io
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit, write() fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
writer = io.write_run if sys.argv[2] == "run" else io.write_qrels
data = {f"q{i}": {f"d{j}": j for j in range(100)} for i in range(100)}  # ~150 KB of lines
try:
  writer(data, sys.argv[1])
except OSError as e:
  print(e.errno == __import__("errno").EFBIG)
"""


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE")
@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_a_full_disk_leaves_the_target_as_it_was(tmp_path, kind):
  """A real failed write, not a mock: past a file size limit (as on a full disk) the writer
  raises and the target keeps its content, with no partial file beside it (before, the target
  was truncated and left with the first 4 KB of the new content)."""
  target = tmp_path / "out"
  target.write_bytes(b"before\n")
  out = subprocess.run([sys.executable, "-c", FULL_DISK, str(target), kind],
                       capture_output=True, text=True, check=True)
  assert out.stdout.strip() == "True", out.stderr
  assert target.read_bytes() == b"before\n" and os.listdir(tmp_path) == ["out"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_written_files_keep_the_usual_permissions(tmp_path):
  """A new file gets 0666 less the umask (not a temporary file's 0600), a replaced file keeps
  its mode, a symbolic link stays a link to the replaced file, a device is written in place;
  a missing directory is an error naming the path."""
  run = {"q": {"d": 1.0}}
  old = os.umask(0o027)
  try:
    io.write_run(run, tmp_path / "new")
  finally:
    os.umask(old)
  assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o640
  (tmp_path / "kept").write_bytes(b"x\n")
  os.chmod(tmp_path / "kept", 0o604)
  io.write_qrels({"q": {"d": 1}}, tmp_path / "kept")
  assert stat.S_IMODE(os.stat(tmp_path / "kept").st_mode) == 0o604
  assert (tmp_path / "kept").read_bytes() == b"q 0 d 1\n"
  os.symlink("kept", tmp_path / "link")
  io.write_run(run, tmp_path / "link")
  assert os.path.islink(tmp_path / "link")
  assert (tmp_path / "kept").read_bytes() == b"q Q0 d 1 1.0 jaxrank\n"
  io.write_run(run, os.devnull)
  assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
  with pytest.raises(FileNotFoundError, match="nowhere"):
    io.write_run(run, tmp_path / "nowhere" / "run")
  assert sorted(os.listdir(tmp_path)) == ["kept", "link", "new"]
  if os.geteuid() != 0:  # root may write anything
    os.chmod(tmp_path / "kept", 0o444)
    with pytest.raises(PermissionError):
      io.write_run(run, tmp_path / "kept")
