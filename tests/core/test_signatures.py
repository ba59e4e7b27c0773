"""The public signatures whose option parameters are derived from :mod:`jaxrank._core.options`.

The expected parameter lists are written down here (as they were before the options were
derived), so a change of the option table that would change a public signature, a default, an
annotation or an order fails here; and the derived functions behave as hand-written ones:
unknown keywords are ``TypeError``, defaults are filled in, the options are documented.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import jaxrank
from jaxrank import catalog, state
from jaxrank._core import options as _options
from jaxrank._core import table as _table
from jaxrank import numpy as jrn

# The option parameters most public functions share, written down (not read from _options).
GAIN_DISCOUNT = ["gain: 'str | Callable' = 'linear'", "discount: 'Callable | None' = None"]
REST = ["empty: 'str' = 'zero'", "ap_denominator: 'str' = 'all'",
        "precision_denominator: 'str' = 'k'", "beta: 'float' = 1.0",
        "persistence: 'float' = 0.8", "graded: 'bool' = False", "max_grade: 'float' = 4.0"]

# evaluate_run's and evaluate_runs' parameters after the run(s) (a run or qrels file's path too).
RUN_OPTIONS = [
    "qrels: 'io.Qrels | Mapping[str, Mapping[str, int]] | str | os.PathLike'",
    "metrics: 'Sequence[str] | str' = ('map', 'ndcg', 'P_10')",
    '*',
    "ties: 'str' = 'trec'",
    "float32: 'bool' = False",
    "max_docs: 'int | None' = None",
    "complete: 'bool' = False",
    "reduce: 'str | None' = None",
    "threshold: 'int' = 1",
    *GAIN_DISCOUNT,
    *REST,
]

EXPECTED = {
    "evaluate": [
        "scores: 'ArrayLike | Ranks'",
        "labels: 'ArrayLike | Sequence[str] | None' = None",
        "metrics: 'Sequence[str]' = ('ndcg@10', 'map', 'mrr', 'precision@10', 'recall@10')",
        '*',
        "where: 'ArrayLike | None' = None",
        "threshold: 'float' = 1",
        *GAIN_DISCOUNT,
        "ties: 'str' = 'average'",
        "tie_key: 'ArrayLike | None' = None",
        "judged: 'ArrayLike | None' = None",
        "empty: 'str' = 'zero'",
        "ap_denominator: 'str' = 'all'",
        "precision_denominator: 'str' = 'k'",
        "beta: 'float' = 1.0",
        "persistence: 'float' = 0.8",
        "max_grade: 'float' = 4.0",
        "graded: 'bool' = False",
        "reduce: 'str | None' = None",
        "max_relevant: 'int | None' = None",
        "method: 'str' = 'auto'",
        '-> dict[str, jax.Array]'],
    "numpy.evaluate": [
        "scores: 'ArrayLike | Sequence[Sequence[float]]'",
        "labels: 'ArrayLike | Sequence[Sequence[float]]'",
        "metrics: 'Sequence[str] | str' = ('ndcg@10', 'map', 'mrr', 'precision@10', 'recall@10')",
        '*',
        "where: 'ArrayLike | None' = None",
        "reduce: 'str | None' = None",
        "ties: 'str' = 'average'",
        "threshold: 'float' = 1",
        *GAIN_DISCOUNT,
        *REST,
        '-> _Result'],
    "numpy.evaluate_ranked": [
        "recommended: 'Sequence[Sequence] | ArrayLike | Mapping[Any, Sequence]'",
        "relevant: 'Sequence[Any] | ArrayLike | Mapping[Any, Any]'",
        "metrics: 'Sequence[str] | str' = ('ndcg@10', 'map', 'mrr', 'precision@10', 'recall@10')",
        '*',
        "relevant_grades: 'Sequence[Sequence[float]] | ArrayLike | None' = None",
        "reduce: 'str | None' = None",
        "threshold: 'float' = 1",
        *GAIN_DISCOUNT,
        *REST,
        '-> _Result'],
    "numpy.evaluate_run": [
        "run: 'io.Run | Mapping[str, Mapping[str, float]] | str | os.PathLike'",
        *RUN_OPTIONS,
        '-> _Result'],
    "numpy.evaluate_runs": [
        ("runs: 'Mapping[str, io.Run | Mapping[str, Mapping[str, float]] | str | os.PathLike] | "
         "Sequence[str | os.PathLike]'"),
        *RUN_OPTIONS,
        '-> dict[str, _Result]'],
    "catalog.evaluate": [
        "query_emb: 'ArrayLike'",
        "item_emb: 'ArrayLike'",
        "relevant_ids: 'Any'",
        "metrics: 'Sequence[str]' = ('ndcg@10', 'map', 'mrr', 'precision@10', 'recall@10')",
        '*',
        "relevant_grades: 'ArrayLike | None' = None",
        "exclude_ids: 'Any' = None",
        "score_fn: 'Callable[[jax.Array, jax.Array], jax.Array] | None' = None",
        "top_k: 'int | None' = None",
        "reduce: 'str | None' = None",
        "threshold: 'float' = 1",
        *GAIN_DISCOUNT,
        "ties: 'str' = 'average'",
        *REST,
        "user_block: 'int | None' = None",
        "item_block: 'int | None' = None",
        "method: 'str' = 'auto'",
        '-> Result'],
    "catalog.ranks": [
        "query_emb: 'ArrayLike'",
        "item_emb: 'ArrayLike'",
        "relevant_ids: 'Any'",
        "relevant_grades: 'ArrayLike | None' = None",
        '*',
        "exclude_ids: 'Any' = None",
        "score_fn: 'Callable[[jax.Array, jax.Array], jax.Array] | None' = None",
        "top_k: 'int | None' = None",
        "ties: 'str' = 'average'",
        "user_block: 'int | None' = None",
        "item_block: 'int | None' = None",
        "method: 'str' = 'auto'",
        '-> Result'],
    "MetricState.init": [
        "metrics: 'Sequence[str] | str' = ('ndcg@10', 'map', 'mrr', 'precision@10', 'recall@10')",
        '*',
        "threshold: 'float' = 1",
        *GAIN_DISCOUNT,
        "ties: 'str' = 'average'",
        *REST,
        "max_relevant: 'int | None' = None",
        "method: 'str' = 'auto'",
        '-> MetricState'],
    "HostMetricState.init": [
        "metrics: 'Sequence[str] | str' = ('ndcg@10', 'map', 'mrr', 'precision@10', 'recall@10')",
        '*',
        "ties: 'str' = 'average'",
        "threshold: 'float' = 1",
        *GAIN_DISCOUNT,
        *REST,
        '-> HostMetricState'],
}

# Every soft metric (jaxrank.soft_ndcg, ...).
SOFT = [
    "scores: 'ArrayLike'",
    "labels: 'ArrayLike | None' = None",
    '*',
    "relevant_ids: 'ArrayLike | None' = None",
    "relevant_grades: 'ArrayLike | None' = None",
    "k: 'int | None' = None",
    "where: 'ArrayLike | None' = None",
    "threshold: 'float' = 1",
    "gain: 'str | Callable' = 'linear'",
    "discount: 'Callable | None' = None",
    "empty: 'str' = 'zero'",
    "ap_denominator: 'str' = 'all'",
    "precision_denominator: 'str' = 'k'",
    "temperature: 'float' = 1.0",
    "cutoff_temperature: 'float | None' = None",
    "operator: 'str' = 'sigmoid'",
    "max_relevant: 'int | None' = None",
    '-> jax.Array']

FUNCTIONS = {
    "evaluate": jaxrank.evaluate,
    "numpy.evaluate": jrn.evaluate,
    "numpy.evaluate_ranked": jrn.evaluate_ranked,
    "numpy.evaluate_run": jrn.evaluate_run,
    "numpy.evaluate_runs": jrn.evaluate_runs,
    "catalog.evaluate": catalog.evaluate,
    "catalog.ranks": catalog.ranks,
    "MetricState.init": state.MetricState.init,
    "HostMetricState.init": state.HostMetricState.init,
}
SOFT_FUNCTIONS = {m.soft: getattr(jaxrank, m.soft) for m in _table.METRICS.values() if m.soft}


def parameters(fn) -> list[str]:
  """The signature as a list: each parameter as ``str`` shows it, ``*`` and the return."""
  sig = inspect.signature(fn)
  out, star = [], False
  for p in sig.parameters.values():
    if p.kind is p.KEYWORD_ONLY and not star:
      out.append("*")
      star = True
    out.append(str(p))
  return out + [f"-> {sig.return_annotation}"]


@pytest.mark.parametrize("name", list(EXPECTED))
def test_signature_is_unchanged(name):
  assert parameters(FUNCTIONS[name]) == EXPECTED[name]


@pytest.mark.parametrize("name", list(SOFT_FUNCTIONS))
def test_soft_signature_is_unchanged(name):
  assert parameters(SOFT_FUNCTIONS[name]) == SOFT


def test_option_parameters_are_the_declared_ones():
  # Every option parameter has the default and annotation of its one declaration in
  # jaxrank._core.options, but evaluate_run's own ties ("trec") and integer threshold.
  own = {(run, option) for run in ("numpy.evaluate_run", "numpy.evaluate_runs")
         for option in ("ties", "threshold")}
  for name, fn in {**FUNCTIONS, **SOFT_FUNCTIONS}.items():
    for p in inspect.signature(fn).parameters.values():
      option = _options.declared(p.name)
      if option is None or (name, p.name) in own:
        continue
      assert (p.default, p.annotation) == (option.default, option.annotation), (name, p.name)


@pytest.mark.parametrize("fn", [jaxrank.evaluate, jrn.evaluate, state.HostMetricState.init,
                                state.MetricState.init, catalog.evaluate,
                                jaxrank.soft_ndcg, jrn.evaluate_ranked, jrn.evaluate_run,
                                jrn.evaluate_runs])
def test_unknown_keywords_are_type_errors(fn):
  with pytest.raises(TypeError, match="unexpected keyword argument 'bta'"):
    fn(bta=2)


def test_derived_functions_document_their_options():
  faces = [jaxrank.evaluate, jrn.evaluate, jrn.evaluate_ranked, jrn.evaluate_run,
           jrn.evaluate_runs, catalog.evaluate, state.MetricState.init, state.HostMetricState.init]
  for fn in faces + list(SOFT_FUNCTIONS.values()):
    derived = _options.FACE_OPTIONS if fn in faces else _options.SOFT
    for p in inspect.signature(fn).parameters.values():
      if p.name in derived and not (fn in (jrn.evaluate_run, jrn.evaluate_runs)
                                    and p.name in ("ties", "threshold")):
        assert f"{p.name}: " in fn.__doc__, (fn.__qualname__, p.name)


def test_derived_defaults_and_keywords_reach_the_function():
  s, y = [[0.3, 0.2, 0.1]], [[0, 1, 1]]
  default = jrn.evaluate(s, y, ["map"])["map"]
  np.testing.assert_allclose(default, jaxrank.average_precision(s, y), rtol=1e-6)
  got = jrn.evaluate(s, y, ["map@1"], ap_denominator="min_k")["map@1"]
  np.testing.assert_allclose(got, [0.0])
  got = jrn.evaluate(s, y, ["p@2"], threshold=2, empty="nan")["p@2"]
  assert np.isnan(got).all()
  st = state.MetricState.init(["mrr"], ties="pessimistic", max_relevant=3)
  assert st.options.ties == "pessimistic" and st.max_relevant == 3 and st.method == "auto"
  host = state.HostMetricState.init("mrr", beta=2.0)
  assert host.options["beta"] == 2.0 and host.options["ties"] == "average"
