"""The errors of :mod:`jaxrank.io` and the wording of int64's range in messages.

The errors' ``__module__`` is ``jaxrank.io``, where users import them: tracebacks read
``jaxrank.io.TrecFormatError: file:line: ...``.
"""

from __future__ import annotations

INT64_RANGE = "between -9223372036854775808 and 9223372036854775807"


class TrecFormatError(ValueError):
  """A malformed line in a run or qrels file; the message starts with ``file:line:``.

  A ``ValueError``, so ``except ValueError`` catches it too.

  Example:
    >>> from jaxrank import io
    >>> try:
    ...   io.read_run(b"q1 Q0 d1 1 high mine\\n", name="run.txt")
    ... except io.TrecFormatError as e:
    ...   print(e)
    run.txt:1: the score (5th field) must be a number, got 'high'
  """

  __module__ = "jaxrank.io"  # tracebacks name it as users import it


class ScatteredQueryError(TrecFormatError):
  """A query's lines do not come together in a run read in chunks (:func:`iter_run_chunks`):
  the query came back after its chunk was passed on. A :class:`TrecFormatError`.

  Example:
    >>> from jaxrank import io
    >>> run = b"q1 Q0 d1 1 2 r\\nq2 Q0 d1 1 2 r\\nq1 Q0 d2 2 1 r\\n"
    >>> try:
    ...   chunks = list(io.iter_run_chunks(run, max_lines=1, name="run.txt"))
    ... except io.ScatteredQueryError as e:
    ...   print(str(e).split(" (")[0])
    run.txt:3: query 'q1' appears again after its chunk was passed on
  """

  __module__ = "jaxrank.io"  # tracebacks name it as users import it
