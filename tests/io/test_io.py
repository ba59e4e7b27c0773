"""TREC run/qrels reading and writing, and the pandas adapters."""

import pickle
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxrank import io
from jaxrank.io import _bytes, _files, _ids, _judged, _reader, _split


def reference_read_run(text):
  """A plain line-by-line reader, as trec_eval reads a run (first 6 fields, tag of last line)."""
  rows, tag = [], None
  for line in text.split("\n"):
    fields = line.split()
    if not fields or fields[0].startswith("#"):
      continue
    rows.append((fields[0], fields[2], int(fields[3]), float(fields[4])))
    tag = fields[5]
  return rows, tag


def test_run_comments_blank_lines_hash_in_ids_crlf_and_extra_columns():
  text = ("# a comment line\r\n301\tQ0\tFR#94-1\t1\t2.5\tSTANDARD extra junk\r\n\r\n"
          "   \n301 Q0 doc2 2 -1e3 other\n#302 Q0 d 1 1 x\n302 Q0 d#x 1 inf last")
  run = io.read_run(text.encode())
  assert run.qid.tolist() == [b"301", b"301", b"302"]
  assert run.docid.tolist() == [b"FR#94-1", b"doc2", b"d#x"]
  assert run.rank.tolist() == [1, 2, 1]
  assert run.score.tolist() == [2.5, -1000.0, float("inf")]
  assert run.tag == "last"


def test_qrels_and_dict_forms():
  qrels = io.read_qrels(b"q1 0 a 2\n# c\nq1 0 b -1\nq2 0 a 0\n")
  assert qrels.to_dict() == {"q1": {"a": 2, "b": -1}, "q2": {"a": 0}}
  run = io.read_run(b"q1 Q0 a 1 0.5 t\n")
  assert run.to_dict() == {"q1": {"a": 0.5}}


@pytest.mark.parametrize("text, message", [
    (b"q Q0 a 1 0.5 t\nq Q0 b 2 0.4\n", "f:2: expected at least 6 whitespace-separated fields, "
     "got 5"),
    (b"# c\n\nq Q0 a 1 x t\n", "f:3: the score (5th field) must be a number, got 'x'"),
    (b"q Q0 a 1 0.5 t\nq Q0 b 2.5 0.4 t\n", "f:2: the rank (4th field) must be an integer, "
     "got '2.5'"),
    (b"q Q0 a 1 0.5 t\nq Q0 b 2 nan t\n", "f:2: the score (5th field) must be a number, got "
     "'nan' (NaN has no order)"),  # the fast reader's input
    (b"# c\nq Q0 a 1 0.5 t\n\nq Q0 b 2 NaN t\n", "f:4: the score (5th field) must be a number, "
     "got 'NaN' (NaN has no order)"),  # the tokenizer's input
])
def test_malformed_run_lines(text, message):
  with pytest.raises(io.TrecFormatError) as e:
    io.read_run(text, name="f")
  assert str(e.value) == message


@pytest.mark.parametrize("text, message", [
    (b"q 0 a 1 extra\n", "f:1: expected 4 whitespace-separated fields, got 5"),
    (b"q 0 a 1\nq 0 b\n", "f:2: expected 4 whitespace-separated fields, got 3"),
    (b"q 0 a 1\n\nq 0 b 1.5\n", "f:3: the relevance (4th field) must be an integer, got '1.5'"),
])
def test_malformed_qrels_lines(text, message):
  with pytest.raises(io.TrecFormatError) as e:
    io.read_qrels(text, name="f")
  assert str(e.value) == message


def test_missing_file_message(tmp_path):
  with pytest.raises(FileNotFoundError, match="cannot read .*nothing"):
    io.read_run(tmp_path / "nothing")


def test_empty_file():
  assert len(io.read_run(b"")) == 0 and len(io.read_qrels(b"# only a comment\n\n")) == 0


ID = st.text(alphabet="ab#-_.0123456789XYZé", min_size=1, max_size=8).filter(
    lambda s: not s.startswith("#"))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(ID, ID, st.integers(0, 999), st.floats(-1e6, 1e6), ID), min_size=1,
                max_size=30), st.lists(st.integers(0, 3), max_size=5))
def test_reader_matches_a_line_by_line_reader(rows, gaps):
  lines = [f"{q} Q0 {d} {r} {s!r} {t}" for q, d, r, s, t in rows]
  for i, g in enumerate(gaps):  # blank and comment lines anywhere
    lines.insert(min(g * 3, len(lines)), "" if i % 2 else "# note")
  text = "\n".join(lines)
  run = io.read_run(text.encode())
  ref, tag = reference_read_run(text)
  got = [(q.decode(), d.decode(), r, s) for q, d, r, s in zip(
      run.qid.tolist(), run.docid.tolist(), run.rank.tolist(), run.score.tolist())]
  assert got == ref and run.tag == tag


def test_write_and_read_back(tmp_path):
  run = {"q2": {"b": 0.5, "a": 0.5, "c": 0.9}, "q1": {"x": 1.0}}
  path = tmp_path / "run.txt"
  io.write_run(run, path, tag="mine")
  text = path.read_text().splitlines()
  # trec order per query: score descending, then doc id descending
  assert text == ["q1 Q0 x 1 1.0 mine", "q2 Q0 c 1 0.9 mine", "q2 Q0 b 2 0.5 mine",
                  "q2 Q0 a 3 0.5 mine"]
  assert io.read_run(path).to_dict() == {"q1": {"x": 1.0}, "q2": {"c": 0.9, "b": 0.5, "a": 0.5}}
  qrels = {"q1": {"x": 1, "y": 0}}
  io.write_qrels(qrels, tmp_path / "qrels.txt")
  assert io.read_qrels(tmp_path / "qrels.txt").to_dict() == qrels


def test_dict_input_errors():
  with pytest.raises(ValueError, match=r"run\['q'\]\['d'\] must be a number"):
    io.as_run({"q": {"d": "high"}})
  with pytest.raises(ValueError, match=r"qrels\['q'\]\['d'\] must be an integer grade"):
    io.as_qrels({"q": {"d": 0.5}})
  with pytest.raises(TypeError, match="run qids must be strings"):
    io.as_run({1: {"d": 0.5}})


def test_dataframe_adapters():
  pd = pytest.importorskip("pandas", reason="the DataFrame adapters need pandas")
  recs = pd.DataFrame({"user_id": [1, 1, 2], "item_id": [10, 11, 10], "score": [0.3, 0.9, 0.1]})
  run = io.run_from_frame(recs)
  assert run.to_dict() == {"1": {"10": 0.3, "11": 0.9}, "2": {"10": 0.1}}
  ranked = recs.assign(rank=[2, 1, 1])
  assert io.run_from_frame(ranked, score_col=None, rank_col="rank").to_dict() == {
      "1": {"10": -2.0, "11": -1.0}, "2": {"10": -1.0}}
  truth = pd.DataFrame({"user_id": [1, 2], "item_id": [11, 12], "target": [1, 2]})
  assert io.qrels_from_frame(truth).to_dict() == {"1": {"11": 1}, "2": {"12": 2}}
  back = io.run_to_frame(run)
  assert list(back.columns) == ["user_id", "item_id", "score"] and back["score"].tolist() == [
      0.3, 0.9, 0.1]
  assert io.qrels_to_frame(io.qrels_from_frame(truth))["target"].tolist() == [1, 2]
  with pytest.raises(ValueError, match="no column 'score'"):
    io.run_from_frame(truth)
  with pytest.raises(ValueError, match="integer grades, got 0.5 at row 1"):
    io.qrels_from_frame(truth.assign(target=[1, 0.5]))


def test_import_jaxrank_does_not_import_pandas():
  code = ("import sys, jaxrank, jaxrank.io, jaxrank.numpy, jaxrank.cli; "
          "print('pandas' in sys.modules)")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert out.stdout.strip() == "False"


@pytest.mark.parametrize("write, data, message", [
    (io.write_run, {"q 1": {"d": 1.0}}, "run qid 'q 1' cannot be written"),
    (io.write_run, {"q": {"": 1.0}}, "run docid '' cannot be written"),
    (io.write_qrels, {"#q": {"d": 1}}, "qrels qid '#q' cannot be written"),
    (io.write_qrels, {"q": {"d\t2": 1}}, r"qrels docid 'd\\t2' cannot be written"),
])
def test_ids_that_would_not_read_back_are_not_written(tmp_path, write, data, message):
  with pytest.raises(ValueError, match=message):
    write(data, tmp_path / "out")
  assert not (tmp_path / "out").exists()


def test_infinite_scores_are_kept_and_nan_frames_rejected():
  assert io.read_run(b"q Q0 a 1 -inf t\n").score.tolist() == [-float("inf")]
  pd = pytest.importorskip("pandas")
  frame = pd.DataFrame({"user_id": ["u", "u"], "item_id": ["a", "b"], "score": [0.5, None]})
  with pytest.raises(ValueError, match="column 'score' has a missing or NaN score at row 1"):
    io.run_from_frame(frame)


# ---------------------------------------------------------------------------------------------
# Ids as integer codes, blocks, gzip, stdin, chunks (issue 10 items 16-19, issue 11).


def _rows(run):
  return list(zip(run.qid.tolist(), run.docid.tolist(), run.rank.tolist(), run.score.tolist()))


def test_codes_and_vocabularies_describe_the_rows():
  run = io.read_run(b"q2 Q0 b 1 3 t\nq2 Q0 a 2 2 t\nq1 Q0 a 1 1 t\nq2 Q0 c 3 0 t\n")
  assert run.qid_vocab.tolist() == ["q2", "q1"] and run.qid_codes.tolist() == [0, 0, 1, 0]
  assert run.docid_vocab.tolist() == ["b", "a", "c"]
  assert run.docid_codes.tolist() == [0, 1, 1, 2]
  assert run.qid_codes.dtype == np.int32 and run.docid_codes.dtype == np.int32
  assert run.qid.tolist() == [b"q2", b"q2", b"q1", b"q2"]  # the former columns, built lazily
  qrels = io.read_qrels(b"q1 0 c 1\nq1 0 a 0\nq9 0 z 2\n")
  assert run.docid_vocab.index(qrels.docid_vocab).tolist() == [2, 1, -1]
  assert qrels.docid_vocab.index(run.docid_vocab).tolist() == [-1, 1, 0]
  assert [run.docid_vocab[i] for i in run.docid_vocab.argsort()] == ["a", "b", "c"]


def test_legacy_constructors_take_columns_of_ids():
  run = io.Run(np.array([b"q", b"q"]), ["d\u00e0", "e"], [0.5, 0.25], [1, 2], "tag")
  assert run.to_dict() == {"q": {"d\u00e0": 0.5, "e": 0.25}} and run.tag == "tag"
  qrels = io.Qrels(qid=["q"], docid=[b"d"], rel=[2])
  assert qrels.to_dict() == {"q": {"d": 2}}
  latin1 = io.Run([b"\xff"], ["d"], [1.0])  # ids are bytes: not UTF-8 is data too
  assert latin1.qid.tolist() == [b"\xff"] and latin1.qid_vocab.tolist() == ["\udcff"]
  with pytest.raises(ValueError, match="contains a NUL"):
    io.Run([b"a\x00"], ["d"], [1.0])
  with pytest.raises(ValueError, match="one length"):
    io.Run(["q"], ["d", "e"], [1.0])
  with pytest.raises(AttributeError, match="immutable"):
    run.tag = "other"


IDS = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
              max_size=20)


@settings(max_examples=60, deadline=None)
@given(st.lists(IDS, max_size=40), st.lists(IDS, max_size=40))
def test_ids_factorize_index_and_sort_like_python(a, b):
  va, ca = io.Ids.from_strings(a)
  vb, _ = io.Ids.from_strings(b)
  assert va.tolist() == list(dict.fromkeys(a)) and [va[i] for i in ca] == a
  want = [va.tolist().index(x) if x in a else -1 for x in vb.tolist()]
  assert va.index(vb).tolist() == want
  plain = io.Ids._from_unique(vb.tolist())  # no hash table kept (dict keys): one is built
  assert va.index(plain).tolist() == want
  assert io.Ids._from_unique(va.tolist()).index(plain).tolist() == want
  key = [s.encode() for s in va.tolist()]  # byte order, as strcmp
  assert [key[i] for i in va.argsort()] == sorted(key)
  assert va.bytes_array().tolist() == key


@settings(max_examples=30, deadline=None)
@given(st.lists(IDS, max_size=40), st.lists(IDS, max_size=40))
def test_runs_qrels_and_ids_pickle(a, b):
  """What another process gets (jaxrank._trec.parallel): the same ids, codes, columns, and a
  vocabulary that still indexes (its hash table came along; a taken part's link to its
  source, a shortcut, did not)."""
  va, _ = io.Ids.from_strings(a + b)
  part = va.take(np.arange(len(va))[::2])
  for vocab in (va, part):
    again = pickle.loads(pickle.dumps(vocab))
    assert again.tolist() == vocab.tolist() and again.lengths.tolist() == vocab.lengths.tolist()
    assert again.index(va).tolist() == vocab.index(va).tolist()
  qids, docs = (a or ["q"]) * 2, (b or ["d"]) * 2
  n = min(len(qids), len(docs))
  run = io.Run(qids[:n], docs[:n], np.linspace(0, 1, n), tag="t")
  qrels = io.Qrels(qids[:n], docs[:n], np.arange(n) % 3)
  for obj in (run, qrels):
    again = pickle.loads(pickle.dumps(obj))
    assert type(again) is type(obj) and again.to_dict() == obj.to_dict()
    assert again.qid.tolist() == obj.qid.tolist()
  assert pickle.loads(pickle.dumps(run)).tag == "t"


@pytest.mark.parametrize("threaded", [False, True])
@pytest.mark.parametrize("block", [16, 100, 4096])
def test_many_blocks_read_like_one(monkeypatch, block, threaded):
  """Lines cross block boundaries; ids repeat across blocks; long ids; CRLF split by a block;
  blocks split in a second thread (large inputs) or in the caller's."""
  monkeypatch.setattr(_reader, "_PIPELINE", 0 if threaded else 1 << 62)
  rng = np.random.default_rng(block)
  lines = []
  for i in range(600):
    q = f"q{rng.integers(0, 7)}"
    d = ["d", "doc-with-a-long-name-", "x"][i % 3] + str(rng.integers(0, 50))
    end = ["\n", "\r\n", "\r"][rng.integers(0, 3)]
    lines.append(f"{q} Q0 {d} {i} {rng.normal():.6f} t{i % 5}{end}")
  text = "".join(lines).encode()
  whole = io.read_run(text)
  monkeypatch.setattr(_files, "BLOCK", block)
  blocks = io.read_run(text)
  assert _rows(blocks) == _rows(whole) and blocks.tag == whole.tag
  assert blocks.docid_vocab.tolist() == whole.docid_vocab.tolist()
  want = [(q, d, int(r), float(s)) for q, _, d, r, s, _ in (x.split() for x in lines)]
  assert [(q.decode(), d.decode(), r, s) for q, d, r, s in _rows(whole)] == want


@pytest.mark.parametrize("where", ["first", "late", "last"])
def test_reading_thread_reports_errors_in_order_and_stops(monkeypatch, where):
  """A bad line found by the splitting thread is raised at its block, with its line number,
  after every earlier block was read; the thread is gone once the error is raised (also when
  the caller abandons the chunks half way)."""
  import threading
  monkeypatch.setattr(_reader, "_PIPELINE", 0)
  monkeypatch.setattr(_files, "BLOCK", 64)
  lines = [f"q{i // 10} Q0 d{i} {i} {i / 7:.4f} t\n" for i in range(300)]
  bad = {"first": 0, "late": 200, "last": 299}[where]
  lines[bad] = f"q{bad // 10} Q0 d{bad} {bad} x t\n"
  before = threading.active_count()
  with pytest.raises(io.TrecFormatError, match=rf"<bytes>:{bad + 1}: the score .*'x'"):
    io.read_run("".join(lines).encode())
  assert threading.active_count() == before
  good = "".join(lines[:bad] + lines[bad + 1:]).encode()
  chunks = io.iter_run_chunks(good, max_lines=20)
  next(chunks)
  chunks.close()
  assert threading.active_count() == before


def test_hash_collisions_cost_time_not_correctness(monkeypatch):
  """Every id longer than 8 bytes gets one hash: the byte check notices, the dict takes over."""
  real = _bytes.hash_ids
  for module in (_ids, _judged, _split):  # every module that hashes ids
    monkeypatch.setattr(module, "hash_ids", lambda win, s, n: np.where(n > 8, np.uint64(7),
                                                                       real(win, s, n)))
  ids = [f"long-document-{i % 37}" for i in range(500)] + ["short", "long-document-0"]
  text = "".join(f"q{i % 3}-long-query Q0 {d} {i} 1 t\n" for i, d in enumerate(ids)).encode()
  run = io.read_run(text)
  assert run.docid_vocab.tolist() == list(dict.fromkeys(ids))
  assert [run.docid_vocab[c] for c in run.docid_codes] == ids
  assert run.qid_vocab.tolist() == ["q0-long-query", "q1-long-query", "q2-long-query"]
  monkeypatch.setattr(_files, "BLOCK", 64)  # and when the collision shows in a later block
  assert _rows(io.read_run(text)) == _rows(run)


def test_gzip_and_stdin(tmp_path):
  import gzip
  text = b"q Q0 d 1 0.5 t\nq Q0 e 2 0.25 t\n"
  (tmp_path / "r.gz").write_bytes(gzip.compress(text))
  (tmp_path / "plain").write_bytes(gzip.compress(text[:15]) + gzip.compress(text[15:]))
  assert _rows(io.read_run(tmp_path / "r.gz")) == _rows(io.read_run(text))
  assert _rows(io.read_run(tmp_path / "plain")) == _rows(io.read_run(text))  # by content
  (tmp_path / "bad.gz").write_bytes(gzip.compress(text)[:-9])
  with pytest.raises(io.TrecFormatError, match="bad.gz:1: not readable as gzip data"):
    io.read_run(tmp_path / "bad.gz")
  code = ("import sys; from jaxrank import io; r = io.read_run('-'); "
          "print(len(r), r.tag, r.docid_vocab.tolist())")
  out = subprocess.run([sys.executable, "-c", code], input=gzip.compress(text),
                       capture_output=True, check=True)
  assert out.stdout.decode().strip() == "2 t ['d', 'e']"
  code = "from jaxrank import io; io.read_qrels('-')"
  out = subprocess.run([sys.executable, "-c", code], input=b"q 0 d x\n", capture_output=True)
  assert "<stdin>:1: the relevance (4th field) must be an integer, got 'x'" in out.stderr.decode()


def _run_text(queries, docs, seed=0):
  rng = np.random.default_rng(seed)
  return "".join(f"q{q} Q0 d{rng.integers(0, 99)}x{i} {i} {rng.normal():.5f} t{q}\n"
                 for q in range(queries) for i in range(docs[q % len(docs)])).encode()


@pytest.mark.parametrize("max_lines", [1, 3, 10, 1000])
@pytest.mark.parametrize("block", [64, 1 << 20])
def test_chunks_hold_whole_queries_and_add_up_to_the_run(monkeypatch, max_lines, block):
  monkeypatch.setattr(_files, "BLOCK", block)
  text = b"# header\n" + _run_text(9, [1, 5, 2, 13])
  whole = io.read_run(text)
  chunks = list(io.iter_run_chunks(text, max_lines=max_lines))
  assert [r for c in chunks for r in _rows(c)] == _rows(whole)
  assert chunks[-1].tag == whole.tag
  seen = []
  for c in chunks:
    qids = c.qid_vocab.tolist()
    assert not set(qids) & set(seen)  # whole queries
    seen += qids
    per_query = np.bincount(c.qid_codes)
    assert len(c) - int(per_query[-1]) < max_lines or len(qids) == 1  # cut once max_lines
  assert seen == whole.qid_vocab.tolist()


def test_chunks_refuse_a_query_that_comes_back(tmp_path):
  text = b"a Q0 x 1 1 t\nb Q0 x 1 1 t\n\nc Q0 y 1 1 t\na Q0 z 2 0 t\n"
  with pytest.raises(io.TrecFormatError, match=r"^f:5: query 'a' appears again after its "
                     r"chunk was passed on"):
    list(io.iter_run_chunks(text, max_lines=1, name="f"))
  assert len(list(io.iter_run_chunks(text, max_lines=10))) == 1  # one chunk: fine
  with pytest.raises(FileNotFoundError, match="cannot read"):
    io.iter_run_chunks(tmp_path / "none")  # at once, not when iterated
  for bad in (0, -1, 1.5, True, "10"):
    with pytest.raises(ValueError, match="max_lines must be a positive integer"):
      io.iter_run_chunks(text, max_lines=bad)


def test_memory_does_not_grow_with_the_longest_id():
  """Item 18: one 5,000-byte id among 20,000 lines: the vocabulary stores it once."""
  text = _run_text(20, [1000]).replace(b"d", b"D" * 5000, 1)
  run = io.read_run(text)
  stored = run.docid_vocab._words.nbytes + run.qid_vocab._words.nbytes
  assert stored < 16 * len(text) // 10 + 20000
  assert run.docid_vocab.lengths.max() == 5000 + len(run.docid_vocab[0]) - 5000


def test_a_part_does_not_keep_its_vocabulary_alive():
  """Ids.take holds the vocabulary it was taken from weakly: once that one is gone, its parts
  still match each other (by their ids) and it is freed."""
  import gc
  import weakref

  vocab = io.Ids.from_strings([f"d{i}" for i in range(50)])[0]
  a, b = vocab.take([3, 1, 4]), vocab.take([4, 9, 3])
  gone = weakref.ref(vocab)
  del vocab
  gc.collect()
  assert gone() is None
  assert a.index(b).tolist() == [2, -1, 0]


def test_ids_take_is_the_vocabulary_of_a_part():
  """Ids.take (each chunk's own judgments in jaxrank evaluate --chunk-lines): the ids at the
  codes, in that order, found by index and sorted by argsort like the originals."""
  rng = np.random.default_rng(3)
  values = [("x" * int(rng.integers(0, 20))) + str(i) + "é" * (i % 3) for i in range(300)]
  vocab, _ = io.Ids.from_strings(values)
  codes = rng.permutation(300)[:120]
  part = vocab.take(codes)
  assert part.tolist() == [values[c] for c in codes]
  assert part.lengths.tolist() == [len(values[c].encode()) for c in codes]
  assert vocab.index(part).tolist() == codes.tolist()
  assert part.index(vocab)[codes].tolist() == list(range(120))
  assert [part[i] for i in part.argsort()] == sorted(part.tolist(), key=str.encode)
  assert len(vocab.take([])) == 0 and vocab.take([]).tolist() == []
  with pytest.raises(IndexError, match=r"codes must lie in \[0, 300\), got values from 0 to 300"):
    vocab.take([0, 300])


@settings(max_examples=80, deadline=None)
@given(base=st.lists(IDS, min_size=1, max_size=30, unique=True),
       extra=st.lists(IDS, max_size=5, unique=True), data=st.data())
def test_parts_of_one_vocabulary_are_matched_like_any_two(base, extra, data):
  """Ids.index between parts of one vocabulary (taken from it, taken again, joined with ids it
  lacks, as the judged reader's chunks are) matches by codes there: the same answer as ids
  read on their own."""
  vocab = io.Ids.from_strings(base)[0]
  codes = st.lists(st.integers(0, len(base) - 1), unique=True, max_size=len(base))
  a, b = vocab.take(data.draw(codes)), vocab.take(data.draw(codes))
  again = b.take(data.draw(st.lists(st.integers(0, max(len(b) - 1, 0)), unique=True,
                                     max_size=len(b))) if len(b) else [])
  new = io.Ids.from_strings([x for x in extra if x not in base])[0]
  joined = a._joined(new, new=True)
  ordered = vocab.take(sorted(data.draw(codes)))._joined(new, new=True)  # as a judged chunk's
  parts = [vocab, a, b, again, joined, a._joined(new), ordered]
  for x in parts:
    for y in parts:
      want = [x.tolist().index(v) if v in x.tolist() else -1 for v in y.tolist()]
      assert x.index(y).tolist() == want, (x.tolist(), y.tolist())
