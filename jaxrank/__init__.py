"""jaxrank: ranking-evaluation metrics as pure, jit-compiled JAX kernels.

Every metric is a function of the ranks of the relevant items. jaxrank builds those ranks once
(:class:`Ranks`, from dense scores and labels, sparse relevant ids over a catalog, ranked id lists,
or a positive against candidates) and computes every metric from them, exactly, including the
expected value over the orders of tied scores.

Example:
  >>> import jaxrank
  >>> out = jaxrank.evaluate([[0.9, 0.8, 0.1]], [[0, 1, 1]], ["ndcg", "mrr"])
  >>> round(float(out["mrr"][0]), 4)
  0.5
"""

from jaxrank._evaluate import evaluate, mean, parse_metric
from jaxrank._formulas import log2_discount
from jaxrank._metrics import (
    average_precision,
    average_recall,
    dcg,
    fbeta,
    hit_rate,
    mean_rank,
    ndcg,
    precision,
    r_precision,
    recall,
    reciprocal_rank,
)
from jaxrank._ranks import Ranks, from_candidates, from_dense, from_ranked_ids, from_sparse

__version__ = "0.1.0"

__all__ = [
    "Ranks",
    "average_precision",
    "average_recall",
    "dcg",
    "evaluate",
    "fbeta",
    "from_candidates",
    "from_dense",
    "from_ranked_ids",
    "from_sparse",
    "hit_rate",
    "log2_discount",
    "mean",
    "mean_rank",
    "ndcg",
    "parse_metric",
    "precision",
    "r_precision",
    "recall",
    "reciprocal_rank",
]
