"""io.iter_judged_run_chunks, the reader `jaxrank evaluate` uses for run files: it codes only
the documents trec_eval's measures can tell apart (judged ones, and those whose score may tie
within their query). Whatever it leaves uncoded, the output is the whole run's, byte for byte;
what it cannot handle (a document listed twice, a query whose lines are apart) goes to the full
readers, which report or evaluate it as before."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

from jaxrank import cli, io
from jaxrank._trec import plan
from jaxrank.io import _files, _judged, _reader
from jaxrank.io._chunks import iter_judged_run_chunks

LONG = "clueweb09-en0000-00-"  # long ids sharing a 20-byte prefix: ties ordered on later bytes


def run_cli(capsys, args):
  code = cli.main(["evaluate", *map(str, args)])
  captured = capsys.readouterr()
  return code, captured.out, captured.err


def doc_name(i: int) -> str:
  return f"{LONG}{i:05d}" if i % 3 else f"d{i}"  # 25 bytes, or at most 8


def random_files(tmp_path, seed: int, queries: int = 40, levels: int = 12):
  """A run with each query's lines together (queries in random order), scores in random order
  with many ties (never next to each other as a rule), long and short ids; graded qrels judging
  some retrieved documents, some documents never retrieved, some queries absent from the run."""
  rng = np.random.default_rng(seed)
  run, qrels = [], []
  for i, q in enumerate(f"q{j}" for j in rng.permutation(queries)):
    n = int(rng.integers(1, 60))
    docs = rng.choice(300, size=n + 10, replace=False)
    scores = rng.integers(0, levels, size=n) / 8
    for d in docs[rng.random(n + 10) < 0.3]:
      qrels.append(f"{q} 0 {doc_name(int(d))} {int(rng.choice([-1, 0, 1, 1, 2, 3]))}\n")
    if i % 11 != 4:
      run += [f"{q} Q0 {doc_name(int(d))} {r} {s} t{i}\n"
              for r, (d, s) in enumerate(zip(docs, scores))]
  rng.shuffle(qrels)
  (tmp_path / "run").write_text("".join(run))
  (tmp_path / "qrels").write_text("".join(qrels))
  return tmp_path / "qrels", tmp_path / "run"


@pytest.fixture
def small_blocks(monkeypatch):
  """Blocks of a few hundred bytes, split in the reading thread: queries cross blocks."""
  monkeypatch.setattr(_files, "BLOCK", 256)
  monkeypatch.setattr(_reader, "_PIPELINE", 0)
  monkeypatch.setattr(plan, "AUTO_CHUNK_BYTES", 1)


@pytest.fixture
def readers(monkeypatch):
  """Records which reader read the run: "judged" (io.iter_judged_run_chunks), "chunks"
  (io.iter_run_chunks) or "whole" (io.read_run)."""
  used = []

  def counting(name, real):
    def counted(*args, **kwargs):
      used.append(name)
      return real(*args, **kwargs)
    return counted

  for name, attr in [("judged", "iter_judged_run_chunks"), ("chunks", "iter_run_chunks"),
                     ("whole", "read_run")]:
    monkeypatch.setattr(io, attr, counting(name, getattr(io, attr)))
  return used


OPTIONS = [
    ["-q", "-m", "all_trec"],
    ["-q", "-c", "-M", "7", "-l", "2", "-m", "official", "-m", "ndcg_cut.3,10"],
    ["-q", "--float32", "-m", "map", "-m", "recip_rank", "-m", "P.1,5", "--format", "csv"],
    ["-q", "--ties", "average", "-m", "map", "-m", "ndcg_cut.5", "--format", "json"],
]


@pytest.mark.parametrize("seed,options", [(s, o) for s, o in enumerate(OPTIONS)])
@pytest.mark.parametrize("lines", [5, 1000])
def test_judged_chunks_print_what_the_whole_run_prints(tmp_path, capsys, monkeypatch,
                                                        small_blocks, readers, seed, options,
                                                        lines):
  qrels, run = random_files(tmp_path, seed)
  code, whole, note = run_cli(capsys, [*options, "--chunk-lines", 0, qrels, run])
  assert code == 0 and whole.count("\n") > 40, note
  assert readers == ["whole"]
  readers.clear()
  monkeypatch.setattr(plan, "AUTO_CHUNK_LINES", lines)
  assert run_cli(capsys, [*options, qrels, run]) == (0, whole, note)
  assert readers == ["judged"]  # and nothing read again


def test_uncoded_documents_are_unjudged_and_tie_with_nothing(tmp_path, monkeypatch):
  monkeypatch.setattr(_files, "BLOCK", 4096)  # queries cross blocks; most lines not a block's last
  qrels_path, run_path = random_files(tmp_path, 7, levels=200)
  qrels, full = io.read_qrels(qrels_path), io.read_run(run_path)
  judged = set(qrels.docid_vocab.tolist())
  qrels_order = {v: i for i, v in enumerate(qrels.docid_vocab.tolist())}
  rows = 0
  uncoded_rows = 0
  for chunk in iter_judged_run_chunks(run_path, qrels, max_lines=50):
    vocab = chunk.docid_vocab.tolist()
    assert vocab[-1] == "" and "" not in vocab[:-1]
    assert len(set(vocab)) == len(vocab)  # one code per document
    first = [qrels_order[v] for v in vocab if v in judged]  # judged ones first, in qrels order
    assert first == sorted(first) and all(v in judged for v in vocab[:len(first)])
    part = slice(rows, rows + len(chunk))
    rows += len(chunk)
    docs = [full.docid_vocab[c] for c in full.docid_codes[part].tolist()]
    queries = [full.qid_vocab[c] for c in full.qid_codes[part].tolist()]
    assert [chunk.qid_vocab[c] for c in chunk.qid_codes.tolist()] == queries
    np.testing.assert_array_equal(chunk.score, full.score[part])
    scores = list(zip(queries, chunk.score.tolist()))
    for code, doc, key in zip(chunk.docid_codes.tolist(), docs, scores):
      if code == len(vocab) - 1:  # uncoded: judged for no query, its score tied by no other
        uncoded_rows += 1
        assert doc not in judged and scores.count(key) == 1
      else:
        assert vocab[code] == doc
  assert rows == len(full) and 0 < uncoded_rows < rows


def _chunk_rows(chunks) -> list:
  return [(c.qid_vocab.tolist(), c.qid_codes.tolist(), c.docid_vocab.tolist(),
           c.docid_codes.tolist(), c.score.tolist(), c.tag) for c in chunks]


@pytest.mark.parametrize("steps", [0, 1, 3, 1000])
def test_a_span_split_ahead_reads_as_the_span(tmp_path, monkeypatch, steps):
  """io.SplitAhead: a helper splits its span's first blocks before the qrels are known; the
  chunks read on from them are those of the span read at once, and a bad line among the
  blocks split ahead is raised when the reading gets there, as it would be then."""
  monkeypatch.setattr(_files, "BLOCK", 300)  # many blocks; queries cross them
  qrels_path, run_path = random_files(tmp_path, 13)
  qrels, size = io.read_qrels(qrels_path), run_path.stat().st_size
  for span in io.query_spans(run_path, [size // 5, size // 2]):
    alone = _chunk_rows(iter_judged_run_chunks(run_path, qrels, max_lines=40, span=span))
    ahead = io.SplitAhead(run_path, span)
    done = [ahead.step() for _ in range(steps)]
    assert done == [True] * min(steps, len(ahead.ready)) + [False] * (steps - len(ahead.ready))
    assert _chunk_rows(iter_judged_run_chunks(run_path, qrels, max_lines=40, span=span,
                                              ahead=ahead)) == alone
  lines = run_path.read_text().splitlines(keepends=True)
  fields = lines[60].split()
  lines[60] = " ".join(fields[:4] + ["1e"] + fields[5:]) + "\n"  # a bad score
  (tmp_path / "bad").write_text("".join(lines))
  span = (0, (tmp_path / "bad").stat().st_size)
  with pytest.raises(io.TrecFormatError) as alone:
    list(iter_judged_run_chunks(tmp_path / "bad", qrels, max_lines=40, span=span))
  def until_the_error(chunks) -> int:  # the chunks read before the error
    count = 0
    with pytest.raises(io.TrecFormatError) as error:
      for _ in chunks:
        count += 1
    assert str(error.value) == str(alone.value)
    return count

  before = until_the_error(iter_judged_run_chunks(tmp_path / "bad", qrels, max_lines=40,
                                                  span=span))
  ahead = io.SplitAhead(tmp_path / "bad", span)
  while ahead.step():  # (the error waits)
    pass
  assert until_the_error(iter_judged_run_chunks(tmp_path / "bad", qrels, max_lines=40,
                                                span=span, ahead=ahead)) == before > 0
  assert ":61: " in str(alone.value)
  with pytest.raises(ValueError, match="ahead splits"):
    iter_judged_run_chunks(run_path, qrels, span=(0, 10), ahead=io.SplitAhead(run_path, span))


def test_what_the_judged_reader_leaves_to_the_full_readers(tmp_path, capsys, monkeypatch,
                                                           small_blocks, readers):
  qrels = io.read_qrels(b"a 0 x 1\nb 0 y 1\n")
  (tmp_path / "qrels").write_text("a 0 x 1\nb 0 y 1\n")
  dup_far = b"a Q0 x 1 3 t\n" + b"".join(b"a Q0 z%d 1 %d t\n" % (i, i) for i in range(40)) + \
      b"a Q0 x 9 0.5 t\nb Q0 y 1 1 t\n"  # the same document twice, blocks apart
  cases = {
      "a document twice": b"a Q0 x 1 3 t\na Q0 w 2 2 t\na Q0 w 3 1 t\nb Q0 y 1 1 t\n",
      "a document twice, blocks apart": dup_far,
      "a query's lines apart": b"a Q0 x 1 3 t\nb Q0 y 1 1 t\na Q0 w 2 2 t\n",
  }
  for what, text in cases.items():
    with pytest.raises(_judged.NeedsFullRead):
      list(iter_judged_run_chunks(text, qrels, max_lines=1000))
    (tmp_path / "run").write_bytes(text)
    args = ["-q", tmp_path / "qrels", tmp_path / "run"]
    readers.clear()
    expected = run_cli(capsys, ["--chunk-lines", 0, *args])
    assert run_cli(capsys, args) == expected, what  # automatic chunks: then the whole run
    assert readers == ["whole", "judged", "whole"], what
    if what != "a query's lines apart":
      assert expected[0] == 1 and "lists document" in expected[2]
    readers.clear()  # asked for chunks: then every document coded, chunk by chunk
    assert run_cli(capsys, ["--chunk-lines", 1000, *args]) == expected, what
    assert readers == ["judged", "chunks"], what


def test_repeated_keys_are_always_flagged_and_few_others():
  rng = np.random.default_rng(0)
  for n in (1, 10, 24_000):
    keys = rng.integers(0, 2**63, size=n, dtype=np.int64).astype(np.uint64)
    again = rng.integers(0, n, size=max(1, n // 100))
    flagged = _judged._repeated(np.concatenate([keys, keys[again]]))
    assert flagged[again].all() and flagged[n:].all()
    assert flagged[:n].mean() < 0.05 + again.size / n * 2


@settings(max_examples=100, deadline=None)
@given(n=st.integers(0, 3000), repeats=st.integers(0, 40), pool=st.sampled_from([2**63, 50]),
       seed=st.integers(0, 2**31))
def test_repeated_is_exact_when_few_keys_repeat(n, repeats, pool, seed):
  """A few repeated keys (a run whose scores rarely tie): exactly those are flagged; many (a
  pool of 50 values): every repeated key is, and _any_repeated says whether one is."""
  rng = np.random.default_rng(seed)
  keys = rng.integers(0, pool, size=n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
  if n:
    keys = np.concatenate([keys, keys[rng.integers(0, n, size=repeats)]])
  values, counts = np.unique(keys, return_counts=True)
  exact = np.isin(keys, values[counts > 1])
  flagged = _judged._repeated(keys)
  assert flagged.dtype == bool and flagged.shape == keys.shape
  assert flagged[exact].all()
  if int(np.sum(counts[counts > 1] - 1)) <= keys.size >> _judged._FEW_SHIFT:
    assert np.array_equal(flagged, exact)
  assert _judged._any_repeated(keys) == bool(exact.any())


def test_a_chunks_documents_meet_the_qrels_by_their_codes():
  """The judged reader's chunk vocabulary is a part of the qrels' (their judged documents, then
  ids the qrels lack): Ids.index matches the two by codes, with the hashing path's answer."""
  qrels = io.read_qrels(b"q 0 b 1\nq 0 z 1\nr 0 e 2\n")
  text = b"q Q0 a 1 3 t\nq Q0 b 2 2 t\nq Q0 c 3 2 t\nr Q0 d 1 1 t\nr Q0 e 2 1 t\n"
  (run,) = iter_judged_run_chunks(text, qrels)
  assert run.docid_vocab._part_of()[0] is qrels.docid_vocab
  part = qrels.docid_vocab.take([2, 1])  # a chunk's judgments: e, z
  plain = io.Ids.from_strings(run.docid_vocab.tolist())[0]  # the same ids, read on their own
  for other in (qrels.docid_vocab, part):
    assert run.docid_vocab.index(other).tolist() == plain.index(other).tolist()
  assert run.docid_vocab.index(part).tolist() == [run.docid_vocab.tolist().index("e"), -1]
