"""``jaxrank.stats``: is system B really better than system A on these queries?

Significance tests, confidence intervals, effect sizes and multiple-comparison corrections for
per-query metric values of several systems on the same queries (paired data): the output of
:func:`jaxrank.numpy.evaluate_run` or :func:`jaxrank.evaluate`, one value per query.

* Paired tests of ``a`` against ``b`` (arrays ``[..., queries]``, any leading shape, one test per
  leading index; ``alternative="greater"`` means ``mean(a - b) > 0``): :func:`ttest`,
  :func:`wilcoxon`, :func:`sign_test`, :func:`randomization_test` (Fisher's, sign flips; exact
  enumeration for small query sets), :func:`bootstrap_test` (studentized, paired).
* Many systems at once (``values [systems, queries]``): :func:`pairwise` (every pair, or each
  system against a baseline, corrected for multiple comparisons) and :func:`tukey_hsd`.
* Intervals and effect sizes: :func:`confidence_interval` (t, percentile or BCa bootstrap, of the
  mean over queries), :func:`mean_difference`, :func:`cohens_d`, :func:`bootstrap_means`.
* Corrections: :func:`adjust` (Bonferroni, Holm, Benjamini-Hochberg, Benjamini-Yekutieli).
* Distributions (JAX, float64): :func:`t_sf`, :func:`t_cdf`, :func:`t_ppf`,
  :func:`studentized_range_sf`, :func:`studentized_range_cdf`.
* Input: :func:`align` lines up ``{system: {qid: value}}`` dicts by query id.

The functions take array-likes and return NumPy float64 arrays (named tuples of them); they run
jit-compiled JAX kernels in float64 (``jax.enable_x64`` inside), so they are meant for evaluation
results on the host, not for use inside a ``jax.jit``. SciPy is not needed: the t, normal and
binomial CDFs come from ``jax.scipy.special`` and the studentized range distribution is
integrated numerically here. Every test agrees with its SciPy counterpart (see
``tests/stats/test_stats.py``); where jaxrank differs it says so (all differences zero: ``p = 1``).

Resampling (randomization, bootstrap) is vectorised: the resamples of one call are shared by
every system and pair, and resample ``r`` is drawn from ``jax.random.fold_in(key, r)``, so a fixed
key gives the same p-values on every run, chunk size and backend.

Example:
  >>> from jaxrank import stats
  >>> a = [0.50, 0.40, 0.70, 0.30, 0.60, 0.55, 0.45, 0.65]
  >>> b = [0.40, 0.35, 0.50, 0.30, 0.45, 0.50, 0.40, 0.50]
  >>> round(float(stats.ttest(a, b).pvalue), 4)
  0.0058
  >>> round(float(stats.randomization_test(a, b).pvalue), 4)  # exact: 2^8 sign flips
  0.0156
"""

from jaxrank.stats._distributions import studentized_range_cdf
from jaxrank.stats._distributions import studentized_range_sf
from jaxrank.stats._distributions import t_cdf
from jaxrank.stats._distributions import t_ppf
from jaxrank.stats._distributions import t_sf
from jaxrank.stats._intervals import cohens_d
from jaxrank.stats._intervals import confidence_interval
from jaxrank.stats._intervals import mean_difference
from jaxrank.stats._multiple import adjust
from jaxrank.stats._multiple import align
from jaxrank.stats._multiple import pairwise
from jaxrank.stats._multiple import tukey_hsd
from jaxrank.stats._paired import sign_test
from jaxrank.stats._paired import ttest
from jaxrank.stats._paired import wilcoxon
from jaxrank.stats._resampling import bootstrap_counts
from jaxrank.stats._resampling import bootstrap_means
from jaxrank.stats._resampling import bootstrap_test
from jaxrank.stats._resampling import randomization_test
from jaxrank.stats._resampling import sign_flips
from jaxrank.stats._types import ALTERNATIVES
from jaxrank.stats._types import CI_METHODS
from jaxrank.stats._types import CORRECTIONS
from jaxrank.stats._types import Interval
from jaxrank.stats._types import MISSING
from jaxrank.stats._types import PVALUES
from jaxrank.stats._types import Pairwise
from jaxrank.stats._types import PerQuery
from jaxrank.stats._types import TESTS
from jaxrank.stats._types import TestResult

__all__ = [
    "ALTERNATIVES",
    "CI_METHODS",
    "CORRECTIONS",
    "Interval",
    "MISSING",
    "PVALUES",
    "Pairwise",
    "PerQuery",
    "TESTS",
    "TestResult",
    "adjust",
    "align",
    "bootstrap_counts",
    "bootstrap_means",
    "bootstrap_test",
    "cohens_d",
    "confidence_interval",
    "mean_difference",
    "pairwise",
    "randomization_test",
    "sign_flips",
    "sign_test",
    "studentized_range_cdf",
    "studentized_range_sf",
    "t_cdf",
    "t_ppf",
    "t_sf",
    "ttest",
    "tukey_hsd",
    "wilcoxon",
]
