"""Result types of :mod:`jaxrank.stats` and the vocabularies of its options."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

ALTERNATIVES = ("two-sided", "greater", "less")
CORRECTIONS = ("none", "bonferroni", "holm", "bh", "by")
TESTS = ("t", "wilcoxon", "sign", "randomization", "bootstrap", "tukey")
PVALUES = ("plus_one", "ranx")
CI_METHODS = ("t", "percentile", "bca")
MISSING = ("error", "zero", "intersect")
SIDE = {"greater": 0, "less": 1, "two-sided": 2}  # rows of p-values and counts


class TestResult(NamedTuple):
  """A test's ``statistic`` and ``pvalue``, NumPy arrays of the inputs' leading shape.

  Example:
    >>> from jaxrank import stats
    >>> statistic, pvalue = stats.sign_test([[1.0, 2.0], [2.0, 1.0]], [0.0, 0.0])
    >>> statistic.tolist(), pvalue.round(4).tolist()
    ([2.0, 2.0], [0.5, 0.5])
  """
  statistic: np.ndarray
  pvalue: np.ndarray


# Not a pytest test class (a test module that imports it would try to collect it). Set after the
# class: a NamedTuple's body may hold only fields and methods for type checkers.
setattr(TestResult, "__test__", False)  # noqa: B010


class Interval(NamedTuple):
  """An ``estimate`` with its confidence interval ``[low, high]`` (NumPy arrays).

  Example:
    >>> from jaxrank import stats
    >>> estimate, low, high = stats.confidence_interval([1.0, 2.0, 3.0])
    >>> float(estimate), bool(low < 2 < high)
    (2.0, True)
  """
  estimate: np.ndarray
  low: np.ndarray
  high: np.ndarray


class PerQuery(NamedTuple):
  """Per-query values of several systems, aligned: ``values[s, q]`` is system s on query q.

  Example:
    >>> from jaxrank import stats
    >>> stats.align({"a": {"q1": 1.0}, "b": {"q1": 0.5}}).values.tolist()
    [[1.0], [0.5]]
  """
  systems: tuple[str, ...]
  queries: tuple[str, ...]
  values: np.ndarray


class Pairwise(NamedTuple):
  """Tests of ``system`` against ``reference`` (index arrays ``[pairs]``) on one measure.

  ``difference = mean(system) - mean(reference)`` with its confidence interval ``[low, high]``,
  ``effect`` the paired Cohen's d, ``statistic`` and ``pvalue`` of the test, ``adjusted`` the
  p-value after the correction over the pairs, ``significant = adjusted <= alpha``.

  Example:
    >>> from jaxrank import stats
    >>> res = stats.pairwise([[0.1, 0.2, 0.3], [0.3, 0.4, 0.6]])
    >>> res.reference.tolist(), res.system.tolist(), res.difference.round(4).tolist()
    ([0], [1], [0.2333])
  """
  reference: np.ndarray
  system: np.ndarray
  difference: np.ndarray
  low: np.ndarray
  high: np.ndarray
  effect: np.ndarray
  statistic: np.ndarray
  pvalue: np.ndarray
  adjusted: np.ndarray
  significant: np.ndarray
