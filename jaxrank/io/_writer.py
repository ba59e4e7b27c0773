"""Writing runs and qrels as TREC files (:func:`write_run`, :func:`write_qrels`), atomically.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Mapping
from typing import Any

import numpy as np

from jaxrank.io._bytes import ERRORS
from jaxrank.io._columns import Qrels, Run
from jaxrank.io._dicts import as_qrels, as_run
from jaxrank.io._files import PathLike
from jaxrank.io._ids import Ids

_WRITE_ROWS = 1 << 16  # rows formatted and written at a time


def _write_lines(path: PathLike, rows: int, text: Any) -> None:
  """Writes ``text(lo, hi)`` for consecutive slices of ``rows`` rows to ``path``, the ids'
  bytes as read (UTF-8, ``surrogateescape``), atomically: into a new file beside the target,
  renamed over it once complete, so a failure at any point (a full disk, an interrupt) leaves
  the target as it was and no other file. A new file gets the usual permissions (0666 less the
  umask), a replaced one keeps its mode; a symbolic link stays a link (its target is
  replaced); a device or a pipe (``/dev/stdout``) is written in place."""
  path = os.fspath(path)
  try:
    st = os.stat(path)
  except FileNotFoundError:
    st = None
  if st is not None and not stat.S_ISREG(st.st_mode):  # a device, a FIFO: nothing to replace
    with open(path, "w", encoding="utf-8", errors=ERRORS, newline="\n") as f:
      for lo in range(0, rows, _WRITE_ROWS):
        f.write(text(lo, min(rows, lo + _WRITE_ROWS)))
    return
  target = path if st is None else os.path.realpath(path)
  if st is not None and not os.access(target, os.W_OK):  # as writing in place would
    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
  head, tail = os.path.split(target)
  mode = 0o666 if st is None else stat.S_IMODE(st.st_mode)
  for _ in range(100):
    tmp = os.path.join(head, f".{tail}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
      fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode)
      break
    except FileExistsError:
      continue
    except OSError as e:  # no such directory, no permission: name the target, as open() would
      raise type(e)(e.errno, e.strerror, path) from None
  else:  # pragma: no cover - 100 random names taken
    raise FileExistsError(errno.EEXIST, "cannot create a temporary file beside it", path)
  try:
    with os.fdopen(fd, "w", encoding="utf-8", errors=ERRORS, newline="\n") as f:
      for lo in range(0, rows, _WRITE_ROWS):
        f.write(text(lo, min(rows, lo + _WRITE_ROWS)))
    if st is not None:
      os.chmod(tmp, mode)  # the replaced file's mode, whatever the umask
    os.replace(tmp, target)
  except BaseException:
    with contextlib.suppress(OSError):
      os.unlink(tmp)
    raise


def _check_writable(vocab: Ids, what: str, qid: bool) -> None:
  """Ids that would not read back: empty, with a separator byte, or a qid starting with '#'."""
  if not len(vocab):
    return
  data = vocab._words.view(np.uint8)
  heads = 8 * vocab._woff[:-1]
  ws = (data == 32) | ((data - np.uint8(9)) <= np.uint8(4))
  bad = np.logical_or.reduceat(ws, heads) | (vocab.lengths == 0)
  if qid:
    bad |= data[heads] == 35
  if bad.any():
    v = vocab[int(np.argmax(bad))]
    raise ValueError(f"{what} {v!r} cannot be written to a TREC file: ids must be non-empty, "
                     "without whitespace (space, \\t, \\n, \\v, \\f, \\r), and a qid must not "
                     "start with '#'")


def write_run(run: Run | Mapping[str, Mapping[str, float]], path: PathLike, *,
              tag: str | None = None) -> None:
  """Writes a run as ``qid Q0 docid rank score tag``, ranks 1.. in trec_eval's order per query
  (score descending, then doc id descending), queries in byte order; scores are written with
  ``repr``, so they read back exactly, and ids as the bytes they were read from (ids that are
  not UTF-8 included: the module's **Bytes** rule). The file is written beside ``path`` and
  renamed over it once complete, so a failure (a full disk, an interrupt) leaves ``path`` as
  it was and no partial file; a new file gets the usual permissions (0666 less the umask), a
  replaced one keeps its mode, and a device or pipe such as ``/dev/stdout`` is written in place.

  Example:
    >>> import os, tempfile
    >>> from jaxrank import io
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> io.write_run({"q1": {"a": 0.5, "b": 0.9}}, path, tag="demo")
    >>> open(path).read()
    'q1 Q0 b 1 0.9 demo\\nq1 Q0 a 2 0.5 demo\\n'
  """
  run = as_run(run)
  _check_writable(run.qid_vocab, "run qid", True)
  _check_writable(run.docid_vocab, "run docid", False)
  tag = run.tag if tag is None else tag
  if not isinstance(tag, str) or not tag or any(c in " \t\n\v\f\r" for c in tag):
    raise ValueError(f"tag must be a non-empty string without whitespace, got {tag!r}")
  qrank = run.qid_vocab.byte_rank()[run.qid_codes]
  order = np.lexsort((-run.docid_vocab.byte_rank()[run.docid_codes], -run.score, qrank))
  q = qrank[order]
  start = np.r_[True, q[1:] != q[:-1]] if q.size else np.zeros(0, bool)
  rank = np.arange(q.size) - np.flatnonzero(start)[np.cumsum(start) - 1] + 1
  qs, ds = run.qid_vocab.tolist(), run.docid_vocab.tolist()
  _write_lines(path, order.size, lambda lo, hi: "".join(
      f"{qs[a]} Q0 {ds[b]} {r} {v!r} {tag}\n" for a, b, r, v in zip(
          run.qid_codes[order[lo:hi]].tolist(), run.docid_codes[order[lo:hi]].tolist(),
          rank[lo:hi].tolist(), run.score[order[lo:hi]].tolist())))


def write_qrels(qrels: Qrels | Mapping[str, Mapping[str, int]], path: PathLike) -> None:
  """Writes qrels as ``qid 0 docid rel``, sorted by qid then docid (byte order); ids as their
  bytes, and atomically, as :func:`write_run` writes.

  Example:
    >>> import os, tempfile
    >>> from jaxrank import io
    >>> path = os.path.join(tempfile.mkdtemp(), "qrels.txt")
    >>> io.write_qrels({"q1": {"b": 0, "a": 2}}, path)
    >>> open(path).read()
    'q1 0 a 2\\nq1 0 b 0\\n'
  """
  qrels = as_qrels(qrels)
  _check_writable(qrels.qid_vocab, "qrels qid", True)
  _check_writable(qrels.docid_vocab, "qrels docid", False)
  order = np.lexsort((qrels.docid_vocab.byte_rank()[qrels.docid_codes],
                      qrels.qid_vocab.byte_rank()[qrels.qid_codes]))
  qs, ds = qrels.qid_vocab.tolist(), qrels.docid_vocab.tolist()
  _write_lines(path, order.size, lambda lo, hi: "".join(
      f"{qs[a]} 0 {ds[b]} {r}\n" for a, b, r in zip(
          qrels.qid_codes[order[lo:hi]].tolist(), qrels.docid_codes[order[lo:hi]].tolist(),
          qrels.rel[order[lo:hi]].tolist())))
