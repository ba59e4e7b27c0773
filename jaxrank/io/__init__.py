"""TREC run and qrels files, pytrec_eval-style dicts and pandas DataFrames, in and out.

A run file has one retrieved document per line, ``qid Q0 docid rank score tag`` (extra trailing
columns are ignored, as by trec_eval); a qrels file has one judgment per line, ``qid iter docid
rel`` with an integer grade (``-1`` = pooled but unjudged). The rules, the same for every file:

* **Bytes.** Ids are the exact bytes between separators, compared byte for byte (trec_eval's
  ``strcmp``), whatever the encoding: any byte but NUL and the separators is part of an id. In
  Python an id is a ``str``: its UTF-8 decoded, each byte that is not part of valid UTF-8 as a
  lone surrogate U+DC80..U+DCFF (``surrogateescape``: latin-1 ``caf\\xe9`` reads as
  ``'caf\\udce9'``), and the writers write those bytes back, so ``write_run(read_run(f))``
  keeps every id's bytes. A UTF-8 byte order mark at the start of a file is skipped; a NUL byte
  is an error naming the line (C tools end a string there).
* **Separators** are trec_eval's (C ``isspace``): space, tab, ``\\v``, ``\\f`` and ``\\r``.
  Nothing else separates: no-break spaces, U+0085, U+2028 and ASCII control characters such as
  ``\\x1c`` are part of an id (Python's ``str.split`` would split there; trec_eval does not).
* **Lines** end with LF, CRLF or a lone CR (old Mac files); line numbers count them so.
  Blank lines are skipped; a line whose first field starts with ``#`` is a comment; a ``#``
  anywhere else (inside an id) is data.
* **Numbers** are read strictly in C syntax, the whole field: a score is ``[+-]digits[.digits]
  [(e|E)[+-]digits]``, or ``inf``/``infinity`` (any case), correctly rounded like ``strtod``
  (``1e400`` is ``inf``); ranks and grades are ``[+-]digits`` within int64. Where trec_eval's
  ``atof`` would silently read a prefix (``1_000`` as 1, ``1e`` as 1, ``0x1p3`` as 8), jaxrank
  reports the line. NaN scores are errors (NaN has no order).

Any other input raises :class:`TrecFormatError`, one line starting ``file:line:``. A path may be
``"-"`` (standard input), and gzip-compressed content is recognised by its first bytes and
decompressed, whatever the file is called.

**Representation.** :class:`Run` and :class:`Qrels` hold one integer code per row for the query
id and the document id (``qid_codes``, ``docid_codes``, int32) and the distinct ids once, as
:class:`Ids` vocabularies (``qid_vocab``, ``docid_vocab``; ids in order of first appearance):
``qid_vocab[qid_codes[i]]`` is row ``i``'s query id. Ids become integers once, while the file is
read: each id is hashed from its bytes (64 bits; an id of at most 8 bytes hashes to a bijection
of its bytes, so such ids never collide), a hash table in NumPy gives the codes, and a repeated
longer id is compared byte for byte with the stored one, so no string is ever sorted and a hash
collision costs time, never a wrong id. Dicts (:func:`as_run`, :func:`as_qrels`) go through the
same table. To match the documents of a run with those of the qrels,
``run.docid_vocab.index(qrels.docid_vocab)`` gives each qrels document's run code (``-1`` where
the run never retrieved it), by hash, in time linear in the two vocabularies; ``Ids.argsort``
gives the byte (``strcmp``) order that trec_eval's tie-breaking and query order use. The former
columns ``qid``/``docid`` (NumPy byte strings) are still there, built from the codes when first
used; they are as wide as the longest id, so new code should use the codes.

Reading goes through the file once, a block of about a megabyte of whole lines at a time, with
NumPy (no Python loop per line): a block of regular lines (fields joined by single spaces) is
split by the positions of its spaces, any other by the edges of its whitespace runs; numbers
are read eight bytes at a time (SWAR in uint64 words). Memory holds the result (codes, numbers,
the distinct ids), not the file; time and memory grow with the file's size, never with lines
times the longest id (``bench/bench_read.py``). :func:`iter_run_chunks` yields a run a few
whole queries at a time, for runs bigger than memory.

The DataFrame adapters (:func:`run_from_frame`, :func:`qrels_from_frame`, :func:`run_to_frame`,
:func:`qrels_to_frame`) import pandas when called; ``import jaxrank`` never does.
"""

from jaxrank.io._chunks import iter_run_chunks
from jaxrank.io._columns import Qrels
from jaxrank.io._columns import Run
from jaxrank.io._dicts import as_qrels
from jaxrank.io._dicts import as_run
from jaxrank.io._errors import ScatteredQueryError
from jaxrank.io._errors import TrecFormatError
from jaxrank.io._frames import qrels_from_frame
from jaxrank.io._frames import qrels_to_frame
from jaxrank.io._frames import run_from_frame
from jaxrank.io._frames import run_to_frame
from jaxrank.io._ids import Ids
from jaxrank.io._reader import read_qrels
from jaxrank.io._reader import read_run
from jaxrank.io._reader import read_runs
from jaxrank.io._writer import write_qrels
from jaxrank.io._writer import write_run

# Internal names other jaxrank packages use (not in __all__): jaxrank.cli and jaxrank.numpy
# still reach them as io.<name>. Their homes are jaxrank.io._chunks, _judged and _reader,
# where tests/ and bench/ import them from; these lines go once jaxrank's packages do too.
# (`name as name`: an explicit re-export, for type checkers.)
from jaxrank.io._chunks import iter_judged_run_chunks as iter_judged_run_chunks
from jaxrank.io._chunks import SplitAhead as SplitAhead
from jaxrank.io._chunks import query_spans as query_spans
from jaxrank.io._judged import Judged as Judged
from jaxrank.io._judged import NeedsFullRead as NeedsFullRead
from jaxrank.io._judged import iter_dict_chunks as iter_dict_chunks
from jaxrank.io._reader import named_paths as named_paths

__all__ = [
    "Ids",
    "Qrels",
    "Run",
    "ScatteredQueryError",
    "TrecFormatError",
    "as_qrels",
    "as_run",
    "iter_run_chunks",
    "qrels_from_frame",
    "qrels_to_frame",
    "read_qrels",
    "read_run",
    "read_runs",
    "run_from_frame",
    "run_to_frame",
    "write_qrels",
    "write_run",
]
