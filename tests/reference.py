"""A slow, obviously-correct NumPy/Python reference: metrics of explicit orderings.

``reference(name, scores, labels, ...)`` enumerates every ordering of the list that is consistent
with the scores (all permutations inside tie groups) and averages the textbook metric over them for
``ties="average"``; the other policies use one explicit ordering. Written independently of
jaxrank's closed forms so the two can disagree.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def log2_discount(rank):
  return 1.0 / math.log2(1.0 + rank)


def metric_of_order(name, ranked_grades, all_grades, *, k=None, threshold=1.0, gain="linear",
                    discount=log2_discount, ap_denominator="all", precision_denominator="k",
                    beta=1.0, n=None, max_grade=4.0, persistence=0.8, graded=False):
  """One metric for one strict ordering. ``ranked_grades``: grades in rank order (retrieved items);
  ``all_grades``: grades of every judged item of the list (retrieved or not).
  Returns (value, empty)."""
  n = len(ranked_grades) if n is None else n
  cut = n if k is None else min(k, n)
  rel = [g >= threshold and g > 0 for g in ranked_grades]
  big_r = sum(1 for g in all_grades if g >= threshold and g > 0)
  hits = sum(rel[:cut])
  gain_fn = (lambda g: g) if gain == "linear" else (lambda g: 2.0**g - 1.0)
  if name in ("precision", "fbeta"):
    denom = n if k is None else (k if precision_denominator == "k" else min(k, n))
    p = hits / denom if denom else 0.0
    if name == "precision":
      return p, big_r == 0
    r = hits / big_r if big_r else 0.0
    b2 = beta * beta
    return ((1 + b2) * p * r / (b2 * p + r) if p + r > 0 else 0.0), big_r == 0
  if name == "recall":
    return (hits / big_r if big_r else 0.0), big_r == 0
  if name == "hit_rate":
    return float(hits > 0), big_r == 0
  if name == "reciprocal_rank":
    for i in range(cut):
      if rel[i]:
        return 1.0 / (i + 1), big_r == 0
    return 0.0, big_r == 0
  if name in ("average_precision", "average_recall"):
    total, seen = 0.0, 0
    for i in range(cut):
      if rel[i]:
        seen += 1
        total += seen / (i + 1) if name == "average_precision" else seen / big_r
    if name == "average_recall":
      return (total / big_r if big_r else 0.0), big_r == 0
    denom = {"all": big_r, "min_k": big_r if k is None else min(k, big_r), "retrieved": hits}
    d = denom[ap_denominator]
    return (total / d if d else 0.0), big_r == 0
  if name == "r_precision":
    c = big_r if k is None else min(k, big_r)
    return (sum(rel[:c]) / c if c else 0.0), big_r == 0
  if name == "mean_rank":
    censor = n + 1 if k is None else k + 1
    ranks = [min(i + 1, censor) for i in range(len(rel)) if rel[i]]
    ranks += [censor] * (big_r - len(ranks))
    return (sum(ranks) / big_r if big_r else 0.0), big_r == 0
  if name in ("dcg", "ndcg"):
    d = sum(gain_fn(g) * discount(i + 1) for i, g in enumerate(ranked_grades[:cut]) if g > 0)
    if name == "dcg":
      return d, not any(g > 0 for g in all_grades)
    # The ideal ranking holds every judged grade, cut at k only: relevant items that were not
    # ranked (unretrieved, padding of a sparse list) still count, as in trec_eval's ndcg.
    ideal = sorted((g for g in all_grades if g > 0), reverse=True)[:k]
    idcg = sum(gain_fn(g) * discount(i + 1) for i, g in enumerate(ideal))
    return (d / idcg if idcg > 0 else 0.0), idcg == 0
  if name == "err":  # the cascade, item by item (Chapelle et al. 2009)
    value, go_on = 0.0, 1.0
    for i, g in enumerate(ranked_grades[:cut]):
      stop = min(max((2.0**g - 1.0) / 2.0**max_grade, 0.0), 1.0) if g > 0 else 0.0
      value += go_on * stop / (i + 1)
      go_on *= 1.0 - stop
    return value, not any(g > 0 for g in all_grades)
  if name == "rbp":
    top = max([g for g in all_grades if g > 0], default=0.0)
    gains = [(g / max(top, 1.0) if g > 0 else 0.0) if graded else float(r)
             for g, r in zip(ranked_grades, rel)]
    value = (1 - persistence) * sum(x * persistence**i for i, x in enumerate(gains[:cut]))
    return value, (not any(g > 0 for g in all_grades)) if graded else big_r == 0
  if name == "rbp_residual":
    return persistence**cut, False
  if name in ("bpref", "infap", "judged"):
    return _judged_metric(name, ranked_grades, all_grades, cut, threshold)
  raise KeyError(name)


# Judgment kinds of the grades the judgment-based metrics read (trec_eval's form_res_rels):
# a grade >= 0 is a judgment, POOLED an item in the pool but unjudged, NOT_JUDGED one absent from
# the qrels. Sorting by grade (optimistic: descending) puts judged before unjudged items.
POOLED, NOT_JUDGED = -1.0, -2.0


def _judged_metric(name, ranked, all_grades, cut, threshold):
  """bpref, infAP (trec_eval's loops, written out) and Judged@k of one strict order."""
  rel = [g >= threshold and g > 0 for g in ranked]
  big_r = sum(1 for g in all_grades if g >= threshold and g > 0)
  if name == "judged":
    top = ranked[:cut]
    return (sum(g != NOT_JUDGED for g in top) / len(top) if top else 0.0), not top
  if name == "bpref":
    big_n = sum(1 for g in all_grades if 0 <= g and not (g >= threshold and g > 0))
    total, nonrel = 0.0, 0
    for g, r in zip(ranked, rel):
      if r:
        total += 1.0 if nonrel == 0 else 1.0 - min(nonrel, big_r) / min(big_n, big_r)
      elif g >= 0:
        nonrel += 1
    return (total / big_r if big_r else 0.0), big_r == 0
  total, rels, nonrel, pooled = 0.0, 0, 0, 0
  for i, (g, r) in enumerate(zip(ranked, rel)):
    if g == NOT_JUDGED:
      continue
    if g == POOLED:
      pooled += 1
    elif not r:
      nonrel += 1
    else:
      total += 1.0 if i == 0 else (1.0 / (i + 1) + i / (i + 1) * ((rels + nonrel + pooled) / i)
                                   * ((rels + 1e-5) / (rels + nonrel + 2e-5)))
      rels += 1
  return (total / big_r if big_r else 0.0), big_r == 0


def _key(score):
  """Sort key: higher scores first, NaN last (as jaxrank documents)."""
  return (1, 0.0) if math.isnan(score) else (0, -score)


def orderings(scores, grades, ties, tie_key=None):
  """Yields item orderings (lists of indices) for the policy; ``average`` yields all of them."""
  idx = list(range(len(scores)))
  if ties == "first":
    tk = [0] * len(scores) if tie_key is None else [-t for t in tie_key]
    yield sorted(idx, key=lambda i: (_key(scores[i]), tk[i], i))
  elif ties == "optimistic":
    yield sorted(idx, key=lambda i: (_key(scores[i]), -grades[i], i))
  elif ties == "pessimistic":
    yield sorted(idx, key=lambda i: (_key(scores[i]), grades[i], -i))
  else:
    base = sorted(idx, key=lambda i: _key(scores[i]))
    groups = [list(g) for _, g in itertools.groupby(base, key=lambda i: _key(scores[i]))]
    for combo in itertools.product(*(itertools.permutations(g) for g in groups)):
      yield [i for g in combo for i in g]


def reference(name, scores, labels, where=None, *, ties="average", tie_key=None, empty="zero",
              padded="drop", **options):
  """Per-list reference values for a 2-D batch (float64 NumPy).

  ``padded="drop"``: items with ``where=False`` do not exist (dense lists). ``"unranked"``: they
  are not ranked, but those with a positive label still count as relevant (every total,
  ideal DCG and mean-rank censoring sees them), as ``from_sparse(..., where=...)`` and relevant
  documents absent from a run do. Every tie policy orders only the ranked items.
  """
  scores = np.asarray(scores, np.float64)
  labels = np.asarray(labels, np.float64)
  where = np.ones(scores.shape, bool) if where is None else np.asarray(where, bool)
  out = []
  for s, y, w, tk in zip(scores, labels, where,
                         tie_key if tie_key is not None else [None] * len(scores)):
    keep = np.flatnonzero(w)
    s_, y_ = list(s[keep]), list(y[keep])
    judged = y_ + ([g for g in y[~w] if g > 0] if padded == "unranked" else [])
    tk_ = None if tk is None else list(np.asarray(tk)[keep])
    values, is_empty = [], False
    for order in orderings(s_, y_, ties, tk_):
      v, is_empty = metric_of_order(name, [y_[i] for i in order], judged, **options)
      values.append(v)
    value = float(np.mean(values)) if values else 0.0
    if not values:
      value, is_empty = metric_of_order(name, [], judged, **options)
    if is_empty:
      value = 0.0 if empty == "zero" else float("nan")
    out.append(value)
  return np.asarray(out)
