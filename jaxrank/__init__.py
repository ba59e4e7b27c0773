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

# First, before jax: when this process is the `jaxrank` command, Ctrl-C even during the imports
# ends it with one line and status 130 (a no-op for programs that import jaxrank).
from jaxrank import cli as _cli  # imports the standard library only

_cli.exit_on_interrupt_if_command()

from jaxrank._core.evaluate import evaluate, mean, parse_metric
from jaxrank._core.formulas import log2_discount
from jaxrank._core import metrics as _metrics
from jaxrank._core import table as _table
from jaxrank._core.metrics import *  # noqa: F403 - one function per record of the metric table
from jaxrank._core.ranks import Ranks, from_candidates, from_dense, from_ranked_ids, from_sparse

__version__ = "0.1.0"

__all__ = list(_table.NAMES) + [
    "Ranks",
    "evaluate",
    "from_candidates",
    "from_dense",
    "from_ranked_ids",
    "from_sparse",
    "log2_discount",
    "mean",
    "parse_metric",
]

# Differentiable (soft) metrics and soft rank/sort operators.
from jaxrank._soft.metrics import (  # noqa: E402
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
from jaxrank._soft.operators import (  # noqa: E402
    fast_soft_rank,
    fast_soft_sort,
    neural_sort,
    soft_ranks,
    soft_sort,
)

__all__ += [
    "as_loss",
    "fast_soft_rank",
    "fast_soft_sort",
    "neural_sort",
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
]

# Beyond-accuracy metrics (coverage, diversity, novelty, popularity bias) and link prediction.
from jaxrank import linkpred  # noqa: E402
from jaxrank._core.beyond import (  # noqa: E402
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

__all__ += [
    "average_recommendation_popularity",
    "coverage",
    "gini",
    "intra_list_diversity",
    "item_bias",
    "item_popularity",
    "linkpred",
    "novelty",
    "personalization",
    "recommendation_counts",
    "score_entropy",
    "serendipity",
    "top_k_ids",
    "user_bias",
]

# Comparing systems: significance tests on per-query values, and the comparison report. Loaded
# on first use (``jaxrank.stats``, ``from jaxrank import compare``): the command line's start-up
# does not pay for them.
_LAZY = ("compare", "stats")


def __getattr__(name: str):
  if name in _LAZY:
    import importlib

    return importlib.import_module(f"jaxrank.{name}")
  raise AttributeError(f"module 'jaxrank' has no attribute {name!r}")


__all__ += ["compare", "stats"]

# Metric state accumulated over batches, steps and devices (jaxrank.state).
from jaxrank.state import MetricState  # noqa: E402

__all__ += ["MetricState"]
