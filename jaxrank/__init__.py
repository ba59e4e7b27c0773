"""jaxrank: ranking-evaluation metrics as pure, jit-compiled JAX kernels.

Every metric is a function of the ranks of the relevant items. jaxrank builds those ranks once
(:class:`Ranks`, from dense scores and labels, sparse relevant ids over a catalog, ranked id lists,
or a positive against candidates) and computes every metric from them, exactly, including the
expected value over the orders of tied scores.

Beside the exact metrics: soft (differentiable) metrics and soft rank operators (``soft_ndcg``,
``fast_soft_rank``, ...), beyond-accuracy metrics (``coverage``, ``intra_list_diversity``,
``novelty``, ...), and the submodules ``jaxrank.linkpred`` (filtered link-prediction ranks),
``jaxrank.numpy`` (NumPy arrays, ragged lists and ``{qid: {docid: value}}`` dicts in, NumPy out),
``jaxrank.io`` (TREC run/qrels files, pandas adapters), ``jaxrank.plot`` (optional matplotlib),
``jaxrank.stats`` (significance tests, confidence intervals, multiple-comparison corrections) and
``jaxrank.compare`` (systems compared on the same queries: tables with significance markers).

Example:
  >>> import jaxrank
  >>> out = jaxrank.evaluate([[0.9, 0.8, 0.1]], [[0, 1, 1]], ["ndcg", "mrr"])
  >>> round(float(out["mrr"][0]), 4)
  0.5
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jaxrank import _lazy
from jaxrank._version import __version__ as __version__

# The public names, one import each. Type checkers and readers take them from here; at run time
# each is imported on first use (jaxrank._lazy), so `import jaxrank` is quick and the command line
# (`jaxrank evaluate` on a small run) does not pay for importing JAX before it needs it.
if TYPE_CHECKING:
  from jaxrank import compare, linkpred, stats
  from jaxrank._core.beyond import (
      average_recommendation_popularity,
      coverage,
      gini,
      intra_list_diversity,
      item_bias,
      item_popularity,
      novelty,
      personalization,
      recommendation_counts,
      score_entropy,
      serendipity,
      top_k_ids,
      user_bias,
  )
  from jaxrank._core.formulas import log2_discount
  from jaxrank._core.metrics import (
      average_precision,
      average_recall,
      bpref,
      dcg,
      err,
      evaluate,
      fbeta,
      hit_rate,
      infap,
      judged,
      mean,
      mean_rank,
      ndcg,
      parse_metric,
      precision,
      r_precision,
      rbp,
      rbp_residual,
      recall,
      reciprocal_rank,
  )
  from jaxrank._core.dense import from_dense
  from jaxrank._core.forms import (
      from_candidates,
      from_ranked_ids,
      from_sparse,
  )
  from jaxrank._core.ranks import Ranks
  from jaxrank._soft.metrics import (
      as_loss,
      soft_average_precision,
      soft_average_precision_loss,
      soft_dcg,
      soft_hit_rate,
      soft_ndcg,
      soft_ndcg_loss,
      soft_precision,
      soft_recall,
      soft_reciprocal_rank,
      soft_reciprocal_rank_loss,
  )
  from jaxrank._soft.operators import (
      fast_soft_rank,
      fast_soft_sort,
      neural_sort,
      soft_ranks,
      soft_sort,
  )
  from jaxrank.state import MetricState


__all__ = [
    "MetricState",
    "Ranks",
    "as_loss",
    "average_precision",
    "average_recall",
    "average_recommendation_popularity",
    "bpref",
    "compare",
    "coverage",
    "dcg",
    "err",
    "evaluate",
    "fast_soft_rank",
    "fast_soft_sort",
    "fbeta",
    "from_candidates",
    "from_dense",
    "from_ranked_ids",
    "from_sparse",
    "gini",
    "hit_rate",
    "infap",
    "intra_list_diversity",
    "item_bias",
    "item_popularity",
    "judged",
    "linkpred",
    "log2_discount",
    "mean",
    "mean_rank",
    "ndcg",
    "neural_sort",
    "novelty",
    "parse_metric",
    "personalization",
    "precision",
    "r_precision",
    "rbp",
    "rbp_residual",
    "recall",
    "reciprocal_rank",
    "recommendation_counts",
    "score_entropy",
    "serendipity",
    "soft_average_precision",
    "soft_average_precision_loss",
    "soft_dcg",
    "soft_hit_rate",
    "soft_ndcg",
    "soft_ndcg_loss",
    "soft_precision",
    "soft_ranks",
    "soft_recall",
    "soft_reciprocal_rank",
    "soft_reciprocal_rank_loss",
    "soft_sort",
    "stats",
    "top_k_ids",
    "user_bias",
]


_SOURCES = _lazy.sources(__file__, __name__)


def __getattr__(name: str) -> Any:
  """Imports a public name's module on first use (PEP 562) and keeps the name here."""
  return _lazy.attribute(globals(), __name__, _SOURCES, name)


def __dir__() -> list[str]:
  return sorted(set(globals()) | set(__all__))
