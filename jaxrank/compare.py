"""``jaxrank.compare``: a baseline and some systems on the same queries, with significance.

One row per system, one column per measure: the mean over queries, with a letter for every
system it is significantly better than (ranx's convention), from the tests of
:mod:`jaxrank.stats` corrected for multiple comparisons; the pairs' differences, confidence
intervals, effect sizes and p-values on request; output as a text table, Markdown, LaTeX, CSV or
JSON, and plots (optional ``jaxrank[plot]`` extra).

* :func:`compare_runs` -- ``{name: run}`` (dicts, :class:`jaxrank.io.Run`, or DataFrames via
  :func:`jaxrank.io.run_from_frame`'s default columns) and qrels: evaluates every run, then
  :func:`compare`.
* :func:`compare` -- per-query values ``{system: {measure: {qid: value} | array}}`` (e.g. one
  :func:`jaxrank.numpy.evaluate_run` per system).
* :class:`Report` -- the result: ``to_string(format=...)``, ``to_dict()``.
* :func:`plot_means` (means with confidence intervals), :func:`plot_differences` (the per-query
  "topic by topic" differences, sorted), :func:`plot_summary` (both, for every measure).
* ``jaxrank compare QRELS RUN [RUN ...]`` -- the same from the command line.

Example:
  >>> from jaxrank import compare
  >>> per_query = {"bm25": {"map": [0.2, 0.4, 0.1, 0.5, 0.3, 0.2, 0.4, 0.3]},
  ...              "dense": {"map": [0.4, 0.5, 0.3, 0.6, 0.5, 0.3, 0.6, 0.4]}}
  >>> report = compare.compare(per_query)
  >>> print(report)  # doctest: +NORMALIZE_WHITESPACE
     run    map
  a  bm25   0.3000
  b  dense  0.4500 a
  letters: significantly better than that run (paired t-test, Holm correction, alpha 0.05,
  two-sided; each run against the first run a); 8 queries
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from jaxrank import io, stats
from jaxrank import numpy as jrn
from jaxrank._core import checks as _checks
from jaxrank._core.irnames import is_name
from jaxrank._trec import table as _trec
from jaxrank._trec.irnames import is_jaxrank_name

if TYPE_CHECKING:  # matplotlib is optional and imported only when a plot is drawn
  import matplotlib.figure

__all__ = ["DEFAULT_MEASURES", "FORMATS", "Report", "compare", "compare_runs",
           "plot_differences", "plot_means", "plot_summary"]

DEFAULT_MEASURES = ("map", "ndcg_cut_10", "P_10")
FORMATS = ("table", "markdown", "latex", "csv", "json")
TEST_NAMES = {"t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test",
              "sign": "sign test", "randomization": "randomization test",
              "bootstrap": "paired bootstrap test", "tukey": "Tukey's HSD"}
CORRECTION_NAMES = {"none": "no correction", "bonferroni": "Bonferroni correction",
                    "holm": "Holm correction", "bh": "Benjamini-Hochberg correction",
                    "by": "Benjamini-Yekutieli correction"}


def _labels(n: int) -> tuple[str, ...]:
  """a, b, ..., z, then aa, ab, ...: one short label per system."""
  out = []
  for i in range(n):
    label, i = "", i + 1
    while i:
      i, r = divmod(i - 1, 26)
      label = chr(97 + r) + label
    out.append(label)
  return tuple(out)


@dataclasses.dataclass(frozen=True, eq=False)
class Report:
  """Systems compared on the same queries, measure by measure.

  Attributes:
    systems, measures, queries: names, in order (system 0 is the baseline).
    values: per-query values ``[measures, systems, queries]``.
    means, low, high: the mean over queries and its confidence interval, ``[systems, measures]``.
    pairs: ``{measure: stats.Pairwise}``, the tests of every compared pair.
    settings: the test, correction, alpha, alternative, pairs mode, confidence and interval
      method used.

  Example:
    >>> from jaxrank import compare
    >>> report = compare.compare({"a": {"m": [0.1, 0.2, 0.3]}, "b": {"m": [0.3, 0.4, 0.6]}})
    >>> report.means.round(4).tolist(), report.better_than("m")
    ([[0.2], [0.4333]], [[], [0]])
  """

  systems: tuple[str, ...]
  measures: tuple[str, ...]
  queries: tuple[str, ...]
  values: np.ndarray
  means: np.ndarray
  low: np.ndarray
  high: np.ndarray
  pairs: dict[str, stats.Pairwise]
  settings: dict[str, Any]

  @property
  def labels(self) -> tuple[str, ...]:
    """The systems' letters: ``a`` for the first (the baseline), ``b``, ..."""
    return _labels(len(self.systems))

  def better_than(self, measure: str) -> list[list[int]]:
    """For each system, the indices of the systems it is significantly better than.

    With a two-sided test, ``system`` is better than ``reference`` when the difference is
    significant and positive (and the other way round when negative); with
    ``alternative="greater"`` (``"less"``) only that direction was tested.

    Example:
      >>> from jaxrank import compare
      >>> r = compare.compare({"a": {"m": [0.5, 0.6, 0.7]}, "b": {"m": [0.1, 0.1, 0.3]}})
      >>> r.better_than("m")
      [[1], []]
    """
    res = self.pairs[self._measure(measure)]
    out: list[list[int]] = [[] for _ in self.systems]
    for ref, sys, diff, sig in zip(res.reference, res.system, res.difference, res.significant):
      if sig and diff > 0:
        out[sys].append(int(ref))
      elif sig and diff < 0:
        out[ref].append(int(sys))
    return [sorted(v) for v in out]

  def _measure(self, measure: str) -> str:
    if measure not in self.pairs and _printed_name(measure) in self.pairs:
      return _printed_name(measure)  # P.10 for the column P_10
    if measure not in self.pairs:
      raise ValueError(f"measure must be one of {list(self.measures)}, got {measure!r}")
    return measure

  def legend(self) -> str:
    """One line saying what the letters mean.

    Example:
      >>> from jaxrank import compare
      >>> compare.compare({"a": {"m": [1.0, 2.0]}, "b": {"m": [2.0, 2.5]}},
      ...                 test="sign").legend()[:60]
      'letters: significantly better than that run (sign test, Holm'
    """
    return (f"letters: significantly better than that run ({self._method()}); "
            f"{len(self.queries)} queries")

  def _method(self) -> str:
    """The test, correction, alpha, alternative and pairs, in words."""
    s = self.settings
    pairs = "each run against the first run a" if s["pairs"] == "baseline" else "all pairs"
    return (f"{TEST_NAMES[s['test']]}, {_correction_name(s)}, alpha {s['alpha']:g}, "
            f"{s['alternative']}; {pairs}")

  def to_dict(self) -> dict[str, Any]:
    """Everything as plain Python values (what ``format="json"`` prints).

    Example:
      >>> from jaxrank import compare
      >>> d = compare.compare({"a": {"m": [0.1, 0.2, 0.3]}, "b": {"m": [0.3, 0.4, 0.6]}}).to_dict()
      >>> sorted(d), d["comparisons"][0]["system"], round(d["comparisons"][0]["pvalue"], 4)
      (['comparisons', 'queries', 'settings', 'systems'], 'b', 0.0198)
    """
    systems = []
    for i, name in enumerate(self.systems):
      means = {}
      for j, m in enumerate(self.measures):
        means[m] = {"mean": float(self.means[i, j]), "low": float(self.low[i, j]),
                    "high": float(self.high[i, j]),
                    "better_than": [self.systems[k] for k in self.better_than(m)[i]]}
      systems.append({"name": name, "label": self.labels[i], "measures": means})
    return {"settings": dict(self.settings), "queries": len(self.queries), "systems": systems,
            "comparisons": self._comparisons()}

  def _comparisons(self) -> list[dict[str, Any]]:
    rows = []
    for m in self.measures:
      res = self.pairs[m]
      for i in range(len(res.system)):
        rows.append({"measure": m, "system": self.systems[res.system[i]],
                     "reference": self.systems[res.reference[i]],
                     **{f: _plain(getattr(res, f)[i]) for f in (
                         "difference", "low", "high", "effect", "statistic", "pvalue",
                         "adjusted", "significant")}})
    return rows

  def to_string(self, format: str = "table", *, pvalues: bool = False,
                digits: int = 4) -> str:
    """The report as text.

    Args:
      format: ``"table"`` (aligned text), ``"markdown"``, ``"latex"`` (booktabs tabular),
        ``"csv"`` or ``"json"``. Markdown and LaTeX set the best mean of each measure in bold.
      pvalues: add the table of compared pairs (difference with its confidence interval,
        Cohen's d, p-value, corrected p-value); for ``"csv"`` that table replaces the means
        (one CSV table per output); ``"json"`` always has both.
      digits: decimals of the means and differences.

    Example:
      >>> from jaxrank import compare
      >>> r = compare.compare({"a": {"P_10": [0.1, 0.2, 0.3]}, "b": {"P_10": [0.3, 0.4, 0.6]}})
      >>> print(r.to_string("csv", digits=2))
      label,run,P_10,P_10 better than
      a,a,0.20,
      b,b,0.43,a
      <BLANKLINE>
    """
    _checks.check_choice("format", format, FORMATS)
    if isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= 12:
      raise ValueError(f"digits must be an integer from 0 to 12, got {digits!r}")
    if format == "json":
      return json.dumps(self.to_dict(), indent=2) + "\n"
    if format == "csv":
      return _csv(*(self._pairs_table(digits, full=True) if pvalues
                    else self._means_table(digits, "csv")))
    header, rows = self._means_table(digits, format)
    if format == "latex":
      return self._latex(header, rows, digits, pvalues)
    parts = [_render(header, rows, format, numeric_from=2),
             {"table": "", "markdown": "\n"}[format] + self.legend() + "\n"]
    if pvalues:
      header, rows = self._pairs_table(digits)
      parts.append("\n" + _render(header, rows, format, numeric_from=3))
    return "".join(parts)

  def _latex(self, header: list[str], rows: list[list[str]], digits: int, pvalues: bool) -> str:
    """Complete ``table`` environments (booktabs), the legend as the caption."""
    caption = (f"Mean over {len(self.queries)} queries; the best mean of each measure in bold. "
               f"Superscripts: significantly better than the run of that letter "
               f"({self._method()}).")
    parts = [_latex_table(_render(header, rows, "latex", numeric_from=2), caption,
                          LATEX_LABEL)]
    if pvalues:
      header, rows = self._pairs_table(digits)
      level = f"{100 * self.settings['confidence']:g}%"
      caption = (f"Compared pairs: mean difference (run minus vs) with its {level} confidence "
                 f"interval, Cohen's d, p-value, and p-value adjusted "
                 f"({_correction_name(self.settings)}).")
      parts.append(_latex_table(_render(header, rows, "latex", numeric_from=3), caption,
                                f"{LATEX_LABEL}-pairs"))
    return "% needs \\usepackage{booktabs}\n" + "\n".join(parts)

  def __str__(self) -> str:
    return self.to_string()

  def _means_table(self, digits: int, fmt: str) -> tuple[list[str], list[list[str]]]:
    labels = self.labels
    header = ["", "run"] + list(self.measures)
    if fmt == "csv":
      header = ["label", "run"] + [c for m in self.measures for c in (m, f"{m} better than")]
    best = self.means.argmax(0)
    rows = []
    for i, name in enumerate(self.systems):
      row = [labels[i], name]
      for j, m in enumerate(self.measures):
        mean = f"{self.means[i, j]:.{digits}f}"
        marks = "".join(labels[k] for k in self.better_than(m)[i])
        if len(self.systems) > 26 and marks:
          marks = ",".join(labels[k] for k in self.better_than(m)[i])
        if fmt == "csv":
          row += [mean, marks]
          continue
        if fmt in ("markdown", "latex") and i == best[j] and len(self.systems) > 1:
          mean = f"**{mean}**" if fmt == "markdown" else f"\\textbf{{{mean}}}"
        if marks:
          mean += {"table": f" {marks}", "markdown": f"<sup>{marks}</sup>",
                   "latex": f"$^{{{marks}}}$"}[fmt]
        row.append(mean)
      rows.append(row)
    return header, rows

  def _pairs_table(self, digits: int, *,
                   full: bool = False) -> tuple[list[str], list[list[str]]]:
    """The compared pairs; ``full``: p-values and effect sizes at full precision (csv)."""
    level = f"{100 * self.settings['confidence']:g}%"
    header = ["measure", "run", "vs", "difference", f"{level} CI low", f"{level} CI high",
              "Cohen's d", "p", "p adjusted", "significant"]
    rows = []
    for c in self._comparisons():
      rows.append([c["measure"], c["system"], c["reference"], f"{c['difference']:+.{digits}f}",
                   f"{c['low']:+.{digits}f}", f"{c['high']:+.{digits}f}",
                   *((repr(float(c[f])) for f in ("effect", "pvalue", "adjusted")) if full
                     else (f"{c['effect']:.3f}", _pvalue_text(c["pvalue"]),
                           _pvalue_text(c["adjusted"]))),
                   "yes" if c["significant"] else "no"])
    return header, rows


def _plain(value: Any) -> Any:
  value = value.item() if hasattr(value, "item") else value
  return value if not isinstance(value, float) or math.isfinite(value) else str(value)


def _correction_name(settings: Mapping[str, Any]) -> str:
  return ("family-wise by construction" if settings["test"] == "tukey"
          else CORRECTION_NAMES[settings["correction"]])


def _printed_name(name: str) -> str:
  """A measure's column: trec_eval's printed name for trec_eval's measures (``P.10`` and
  ``P_10`` -> ``P_10``, as ``jaxrank evaluate`` prints it); other names as given."""
  if not isinstance(name, str) or not (
      name in _trec.MEASURES or not (is_name(name) or is_jaxrank_name(name))):
    return name
  try:
    printed = [n for r in _trec.parse_measures([name]) for n in r.names()]
  except ValueError:
    return name
  return printed[0] if len(printed) == 1 else name


def _pvalue_text(p: float) -> str:
  return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
          "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
          "^": r"\textasciicircum{}"}


def _latex_escape(text: str) -> str:
  return "".join(_LATEX.get(c, c) for c in text)


LATEX_LABEL = "tab:comparison"  # the \\label of the LaTeX table (the pairs': -pairs appended)


def _latex_table(tabular: str, caption: str, label: str) -> str:
  return ("\\begin{table}[ht]\n\\centering\n"
          f"\\caption{{{_latex_escape(caption)}}}\n\\label{{{label}}}\n"
          f"{tabular}\\end{{table}}\n")


def _render(header: list[str], rows: list[list[str]], fmt: str, *, numeric_from: int) -> str:
  if fmt == "markdown":
    align = ["---" if j < numeric_from else "---:" for j in range(len(header))]
    lines = [header, align] + rows
    return "".join("| " + " | ".join(cells) + " |\n" for cells in lines)
  if fmt == "latex":
    def esc(cells: list[str], raw: bool) -> list[str]:
      return [c if raw and j >= numeric_from else _latex_escape(c) for j, c in enumerate(cells)]
    spec = "l" * numeric_from + "r" * (len(header) - numeric_from)
    body = "".join(" & ".join(esc(r, True)) + " \\\\\n" for r in rows)
    return (f"\\begin{{tabular}}{{{spec}}}\n\\toprule\n" + " & ".join(esc(header, False))
            + " \\\\\n\\midrule\n" + body + "\\bottomrule\n\\end{tabular}\n")
  widths = [max(len(c) for c in col) for col in zip(header, *rows)]
  return "".join("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() + "\n"
                 for cells in [header] + rows)


def _csv(header: list[str], rows: list[list[str]]) -> str:
  def cell(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text
  return "".join(",".join(cell(c) for c in cells) + "\n" for cells in [header] + rows)


# ----------------------------------------------------------------------------------------------
# Building a report.


def _per_measure(per_query: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
  """{system: {measure: values}} -> {measure: {system: values}}, checked."""
  if not isinstance(per_query, Mapping) or len(per_query) < 2:
    raise ValueError("per_query must be a dict of at least 2 systems {system: {measure: "
                     f"per-query values}}, got {type(per_query).__name__} of "
                     f"{len(per_query) if isinstance(per_query, Mapping) else 0}")
  out: dict[str, dict[str, Any]] = {}
  measures = None
  for system, by_measure in per_query.items():
    if not isinstance(by_measure, Mapping) or not by_measure:
      raise TypeError(f"per_query[{system!r}] must be a non-empty dict {{measure: per-query "
                      f"values}}, got {type(by_measure).__name__}")
    if measures is None:
      measures = list(by_measure)
    elif set(by_measure) != set(measures):
      raise ValueError(f"every system must have the same measures: {system!r} has "
                       f"{sorted(by_measure)}, the first system {sorted(measures)}")
    for m, values in by_measure.items():
      if isinstance(values, (int, float, np.number)):
        raise TypeError(f"per_query[{system!r}][{m!r}] must hold per-query values ({{qid: "
                        f"value}} or an array), got the number {values!r} (a mean?)")
      out.setdefault(str(m), {})[str(system)] = values
  return out


def compare(per_query: Mapping[str, Mapping[str, Any]], *, test: str = "t",
            pairs: str = "baseline", correction: str | None = None, alpha: float = 0.05,
            alternative: str = "two-sided", confidence: float = 0.95, ci: str = "t",
            missing: str = "error", key: Any = 0, n_resamples: int = 10_000,
            **options: Any) -> Report:
  """Compares systems measure by measure on their per-query values.

  Args:
    per_query: ``{system: {measure: {qid: value} | values [queries]}}`` -- for instance
      ``{name: jaxrank.numpy.evaluate_run(run, qrels, measures) for name, run in ...}``. The
      first system is the baseline. Queries are aligned by id (:func:`jaxrank.stats.align`).
    test: ``"t"`` (paired t-test, default), ``"wilcoxon"``, ``"sign"``, ``"randomization"``
      (Fisher's, ``n_resamples`` sign flips or exact), ``"bootstrap"``, ``"tukey"``.
    pairs: ``"baseline"`` (every system against the first, default) or ``"all"``.
    correction: over the pairs of each measure; default Holm (none for Tukey's HSD, which is
      already family-wise): ``"none"``, ``"bonferroni"``, ``"holm"``, ``"bh"``, ``"by"``.
    alpha: significance level; alternative: ``"two-sided"``, ``"greater"``, ``"less"``.
    confidence, ci: confidence intervals of the means and differences (``"t"``,
      ``"percentile"`` or ``"bca"`` bootstrap).
    missing: queries some systems lack: ``"error"``, ``"zero"`` (trec_eval ``-c``) or
      ``"intersect"``; the same query set is used for every measure.
    key, n_resamples, options: for the resampling tests and intervals; test options.

  Example:
    >>> from jaxrank import compare
    >>> per_query = {"bm25": {"ndcg": {"q1": 0.2, "q2": 0.4, "q3": 0.1, "q4": 0.5}},
    ...              "dense": {"ndcg": {"q1": 0.5, "q2": 0.5, "q3": 0.4, "q4": 0.6}},
    ...              "hybrid": {"ndcg": {"q1": 0.5, "q2": 0.6, "q3": 0.3, "q4": 0.7}}}
    >>> r = compare.compare(per_query, test="randomization", pairs="all", correction="none")
    >>> r.pairs["ndcg"].pvalue.round(4).tolist()  # exact: 2^4 sign flips per pair
    [0.125, 0.125, 1.0]
  """
  settings = _settings(test=test, pairs=pairs, correction=correction, alpha=alpha,
                       alternative=alternative, confidence=confidence, ci=ci)
  by_measure = _per_measure(per_query)
  aligned = {}
  for m, v in by_measure.items():
    try:
      aligned[m] = stats.align(v, missing=missing)
    except (ValueError, TypeError) as e:
      raise type(e)(f"measure {m!r}, {e}" if str(e).startswith("system ") else str(e)) from None
  queries = next(iter(aligned.values())).queries
  for m, a in aligned.items():
    if a.queries != queries:
      raise ValueError(f"measure {m!r} has other queries than {next(iter(aligned))!r}; give "
                       "every measure the same queries")
  systems = next(iter(aligned.values())).systems
  values = np.stack([aligned[m].values for m in aligned])
  results = {m: stats.pairwise(values[i], key=key, n_resamples=n_resamples, **settings,
                               **options) for i, m in enumerate(aligned)}
  interval = stats.confidence_interval(values, confidence=confidence, method=ci, key=key,
                                       n_resamples=n_resamples)
  return Report(systems=systems, measures=tuple(aligned), queries=queries, values=values,
                means=interval.estimate.T, low=interval.low.T, high=interval.high.T,
                pairs=results, settings=settings)


def _settings(*, test: str = "t", pairs: str = "baseline", correction: str | None = None,
              alpha: float = 0.05, alternative: str = "two-sided", confidence: float = 0.95,
              ci: str = "t") -> dict[str, Any]:
  """The comparison options, checked (before any run is evaluated), with the default
  correction filled in: Holm, or none for Tukey's HSD."""
  _checks.check_choice("test", test, stats.TESTS)
  _checks.check_choice("pairs", pairs, ("baseline", "all"))
  _checks.check_choice("alternative", alternative, stats.ALTERNATIVES)
  _checks.check_choice("ci", ci, stats.CI_METHODS)
  if correction is None:
    correction = "none" if test == "tukey" else "holm"
  _checks.check_choice("correction", correction, stats.CORRECTIONS)
  _checks.check_unit_interval("alpha", alpha)
  _checks.check_unit_interval("confidence", confidence)
  return {"test": test, "pairs": pairs, "correction": correction, "alpha": alpha,
          "alternative": alternative, "confidence": confidence, "ci": ci}


def _is_frame(x: Any) -> bool:
  return type(x).__module__.split(".")[0] == "pandas" and hasattr(x, "columns")


def compare_runs(runs: Mapping[str, Any], qrels: Any,
                 measures: Sequence[str] | str = DEFAULT_MEASURES, *, missing: str = "error",
                 ties: str = "trec", float32: bool = False, max_docs: int | None = None,
                 threshold: int = 1, empty: str = "zero", **options: Any) -> Report:
  """Evaluates every run against the qrels and compares them (:func:`compare`).

  Args:
    runs: ``{name: run}``, the first the baseline; a run is ``{qid: {docid: score}}``, a
      :class:`jaxrank.io.Run`, or a DataFrame with :func:`jaxrank.io.run_from_frame`'s default
      columns (``user_id``, ``item_id``, ``score``).
    qrels: ``{qid: {docid: grade}}``, a :class:`jaxrank.io.Qrels`, or a DataFrame
      (``user_id``, ``item_id``, ``target``).
    measures: jaxrank or trec_eval names, as :func:`jaxrank.numpy.evaluate_run`; trec_eval's
      measures are named as trec_eval prints them (``P.10`` -> ``P_10``).
    missing: ``"zero"`` evaluates every qrels query, 0 where a run has none (trec_eval
      ``-c``); ``"error"`` (default) raises when the runs do not answer the same queries;
      ``"intersect"`` keeps the queries every run answers.
    ties, float32, max_docs, threshold, empty: evaluation options of ``evaluate_run``.
    options: the comparison options of :func:`compare` (``test``, ``pairs``, ``correction``,
      ``alpha``, ...).

  Example:
    >>> from jaxrank import compare
    >>> qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}
    >>> a = {"q1": {"d1": 0.9, "d9": 0.1}, "q2": {"d9": 0.9, "d2": 0.1}, "q3": {"d3": 0.5}}
    >>> b = {"q1": {"d1": 0.9}, "q2": {"d2": 0.9}, "q3": {"d3": 0.5}}
    >>> r = compare.compare_runs({"a": a, "b": b}, qrels, ["recip_rank"])
    >>> r.means.round(4).tolist()
    [[0.8333], [1.0]]
  """
  _checks.check_choice("missing", missing, stats.MISSING)
  _settings(**{k: v for k, v in options.items() if k in (_settings.__kwdefaults__ or {})})
  if not isinstance(runs, Mapping) or len(runs) < 2:
    raise ValueError(f"runs must be a dict of at least 2 runs {{name: run}}, got "
                     f"{type(runs).__name__} of {len(runs) if isinstance(runs, Mapping) else 0}")
  measures = [measures] if isinstance(measures, str) else list(measures)
  # converted once here, not once per run by evaluate_run
  qrels = io.qrels_from_frame(qrels) if _is_frame(qrels) else io.as_qrels(qrels)
  per_query = {}
  for name, run in runs.items():
    run = io.run_from_frame(run) if _is_frame(run) else run
    try:
      result = jrn.evaluate_run(run, qrels, measures, ties=ties, float32=float32,
                                max_docs=max_docs, complete=missing == "zero",
                                threshold=threshold, empty=empty)
    except (ValueError, TypeError) as e:
      raise type(e)(f"run {name!r}: {e}") from None
    for m, v in result.items():
      if not isinstance(v, Mapping):
        raise ValueError(f"measure {m!r} has no per-query values (a run summary such as "
                         "num_q); compare per-query measures")
    per_query[str(name)] = {_printed_name(m): v for m, v in result.items()}  # P.10 -> P_10
  return compare(per_query, missing=missing, **options)


# ----------------------------------------------------------------------------------------------
# Plots (matplotlib is imported here, when a plot is drawn).


def _pyplot() -> ModuleType:
  try:
    import matplotlib.pyplot as plt
  except ImportError:  # pragma: no cover - depends on the environment
    raise ImportError("the comparison plots need matplotlib: pip install 'jaxrank[plot]'") \
        from None
  return plt


def _system(report: Report, system: int | str) -> int:
  if isinstance(system, str):
    if system not in report.systems:
      raise ValueError(f"system must be one of {list(report.systems)}, got {system!r}")
    return report.systems.index(system)
  if not 0 <= system < len(report.systems):
    raise ValueError(f"system must be an index below {len(report.systems)}, got {system}")
  return int(system)


def plot_differences(report: Report, *, measure: str | None = None, system: int | str = 1,
                     reference: int | str = 0, ax: Any = None) -> matplotlib.figure.Figure:
  """Per-query differences ``system - reference`` on one measure, sorted (a bar per query).

  The "topic by topic" chart of IR papers: where a system wins and loses, not only its mean.
  The title gives the mean difference and the test's p-value when that pair was tested.

  Example:
    >>> from jaxrank import compare
    >>> r = compare.compare({"a": {"m": [0.1, 0.5, 0.3]}, "b": {"m": [0.3, 0.4, 0.6]}})
    >>> fig = compare.plot_differences(r)
    >>> len(fig.axes[0].patches)
    3
  """
  plt = _pyplot()
  m = report._measure(measure or report.measures[0])
  i, j = _system(report, system), _system(report, reference)
  d = report.values[report.measures.index(m), i] - report.values[report.measures.index(m), j]
  order = np.argsort(-d, kind="stable")
  if ax is None:
    fig, ax = plt.subplots(figsize=(max(4.0, min(12.0, 0.05 * d.size + 4)), 3))
  else:
    fig = ax.figure
  colors = np.where(d[order] >= 0, "tab:green", "tab:red")
  ax.bar(np.arange(d.size), d[order], width=1.0, color=colors)
  ax.axhline(0, color="black", linewidth=0.8)
  res = report.pairs[m]
  tested = np.flatnonzero(((res.system == i) & (res.reference == j))
                          | ((res.system == j) & (res.reference == i)))
  title = f"{report.systems[i]} - {report.systems[j]} ({m})\nmean {d.mean():+.4f}"
  if tested.size:
    title += f", p = {_pvalue_text(float(res.adjusted[tested[0]]))}"
  ax.set_title(title, fontsize="medium")
  ax.set_xlabel(f"queries, sorted by difference ({d.size})")
  ax.set_ylabel(f"difference in {m}")
  ax.set_xlim(-0.5, d.size - 0.5)
  return fig


def plot_means(report: Report, *, measure: str | None = None,
               ax: Any = None) -> matplotlib.figure.Figure:
  """Each system's mean on one measure with its confidence interval (error bars).

  Example:
    >>> from jaxrank import compare
    >>> r = compare.compare({"a": {"m": [0.1, 0.5, 0.3]}, "b": {"m": [0.3, 0.4, 0.6]}})
    >>> fig = compare.plot_means(r)
    >>> [t.get_text() for t in fig.axes[0].get_xticklabels()]
    ['a: a', 'b: b']
  """
  plt = _pyplot()
  m = report._measure(measure or report.measures[0])
  j = report.measures.index(m)
  if ax is None:
    fig, ax = plt.subplots(figsize=(max(3.0, 0.6 * len(report.systems) + 2), 3))
  else:
    fig = ax.figure
  x = np.arange(len(report.systems))
  mean = report.means[:, j]
  err = np.stack([mean - report.low[:, j], report.high[:, j] - mean])
  ax.errorbar(x, mean, yerr=err, fmt="o", capsize=4)
  ax.set_xticks(x, [f"{a}: {s}" for a, s in zip(report.labels, report.systems)],
                rotation=30 if len(report.systems) > 4 else 0)
  level = f"{100 * report.settings['confidence']:g}%"
  ax.set_title(f"{m}\nmeans, {level} confidence intervals ({report.settings['ci']})",
               fontsize="medium")
  ax.set_ylabel(m)
  return fig


def plot_summary(report: Report, path: str | os.PathLike[str] | None = None, *,
                 max_differences: int = 3) -> matplotlib.figure.Figure:
  """One row per measure: the means with intervals, and the per-query differences of up to
  ``max_differences`` systems against the first; saved to ``path`` when given (PNG, PDF, ...).

  Example:
    >>> from jaxrank import compare
    >>> r = compare.compare({"a": {"m": [0.1, 0.5, 0.3]}, "b": {"m": [0.3, 0.4, 0.6]}})
    >>> len(compare.plot_summary(r).axes)
    2
  """
  plt = _pyplot()
  others = list(range(1, min(len(report.systems), max_differences + 1)))
  rows, cols = len(report.measures), 1 + len(others)
  fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.4 * rows), squeeze=False)
  for r, m in enumerate(report.measures):
    plot_means(report, measure=m, ax=axes[r, 0])
    for c, i in enumerate(others, start=1):
      plot_differences(report, measure=m, system=i, reference=0, ax=axes[r, c])
  fig.tight_layout()
  if path is not None:
    fig.savefig(path, dpi=120)
  return fig


# ----------------------------------------------------------------------------------------------
# The command line: `jaxrank compare`.
