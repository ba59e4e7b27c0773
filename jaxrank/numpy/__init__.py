"""``jaxrank.numpy``: the same metrics and options, for NumPy arrays, Python lists and dicts.

Its entry points, one per input shape, all return NumPy arrays (one value per list), Python
floats (``reduce="mean"``), or, where the input was keyed by user/query, ``{key: value}`` dicts:

* :func:`evaluate` -- scores and labels, as arrays ``[..., n]`` or ragged lists of lists;
* :func:`evaluate_ranked` -- a ranked list of item ids per user, and per user the relevant ids
  (a list or set, grade 1) or a ``{id: grade}`` dict; lists, 2-D arrays padded with ``-1``
  (NumPy or JAX, e.g. :func:`jaxrank.top_k_ids`' output) or ``{user: ...}`` dicts;
* :func:`evaluate_run` -- pytrec_eval-style ``{qid: {docid: score}}`` and ``{qid: {docid:
  grade}}`` dicts (or :class:`jaxrank.io.Run`/:class:`jaxrank.io.Qrels`), trec_eval's way: ties
  broken by doc id descending, measures by jaxrank or trec_eval names (``"P_10"``, ``"bpref"``);
  :func:`evaluate_runs` -- several such runs against one qrels.

Metric names and options are those of :func:`jaxrank.evaluate`; values are float64. Inputs are
checked eagerly here, with one-line messages naming the argument, the list, user or query and the
value. Scored lists with few relevant items go to the rank core's counting kernel; lists with
many get their ranks on the host in O(n log r); ranked ids go straight to the rank core. Lists
are padded on the host in calls of few shapes (every dimension a power of two), so a stream of
differently sized batches compiles a handful of times and one long list costs what it costs
alone; padding never changes a result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jaxrank import _lazy
from jaxrank._core.names import DEFAULT_METRICS
from jaxrank.numpy._runs import evaluate_run
from jaxrank.numpy._runs import evaluate_runs

# Imported on first use (jaxrank._lazy): they import JAX, which evaluate_run on trec_eval's
# measures never needs (`from jaxrank import numpy` then costs no `import jax`).
if TYPE_CHECKING:
  from jaxrank.numpy._arrays import evaluate
  from jaxrank.numpy._ids import evaluate_ranked

__all__ = ["DEFAULT_METRICS", "evaluate", "evaluate_ranked", "evaluate_run", "evaluate_runs"]

_SOURCES = _lazy.sources(__file__, __name__)


def __getattr__(name: str) -> Any:
  """Imports ``evaluate`` or ``evaluate_ranked`` on first use (PEP 562) and keeps it here."""
  return _lazy.attribute(globals(), __name__, _SOURCES, name)


def __dir__() -> list[str]:
  return sorted(set(globals()) | set(__all__))


# A run dict of more rows is evaluated this many rows at a time
# (evaluate_run reads it here when called, so it can be set here).
DICT_CHUNK_ROWS = 1_000_000
# The processes evaluating a run file given by path (None: one per 32 MiB of a file read in
# chunks, up to the usable cores and 8; 1: the calling process only). Read as DICT_CHUNK_ROWS.
RUN_PROCESSES: int | None = None
