"""Every public import path and name of jaxrank 0.1.0 still works, and ``jaxrank``'s face is one
list: the names its ``TYPE_CHECKING`` block imports (what readers and type checkers see) are
exactly ``__all__`` and each resolves at run time."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest

import jaxrank

PUBLIC = {
    "jaxrank": (
        "MetricState Ranks as_loss average_precision average_recall "
        "average_recommendation_popularity bpref compare coverage dcg err evaluate fast_soft_rank "
        "fast_soft_sort fbeta from_candidates from_dense from_ranked_ids from_sparse gini "
        "hit_rate infap intra_list_diversity item_bias item_popularity judged linkpred "
        "log2_discount mean mean_rank ndcg neural_sort novelty parse_metric personalization "
        "precision r_precision rbp rbp_residual recall reciprocal_rank recommendation_counts "
        "score_entropy serendipity soft_average_precision soft_average_precision_loss soft_dcg "
        "soft_hit_rate soft_ndcg soft_ndcg_loss soft_precision soft_ranks soft_recall "
        "soft_reciprocal_rank soft_reciprocal_rank_loss soft_sort stats top_k_ids user_bias"),
    "jaxrank.numpy": "DEFAULT_METRICS evaluate evaluate_ranked evaluate_run evaluate_runs",
    "jaxrank.io": (
        "Ids Qrels Run ScatteredQueryError TrecFormatError as_qrels as_run iter_run_chunks "
        "qrels_from_frame qrels_to_frame read_qrels read_run read_runs run_from_frame run_to_frame "
        "write_qrels write_run"),
    "jaxrank.stats": (
        "ALTERNATIVES CI_METHODS CORRECTIONS Interval MISSING PVALUES Pairwise PerQuery TESTS "
        "TestResult adjust align bootstrap_counts bootstrap_means bootstrap_test cohens_d "
        "confidence_interval mean_difference pairwise randomization_test sign_flips sign_test "
        "studentized_range_cdf studentized_range_sf t_cdf t_ppf t_sf ttest tukey_hsd wilcoxon"),
    "jaxrank.compare": (
        "DEFAULT_MEASURES FORMATS Report compare compare_runs plot_differences plot_means "
        "plot_summary"),
    "jaxrank.catalog": "Result default_block_sizes dot evaluate pad_csr ranks",
    "jaxrank.linkpred": (
        "NUM_OPTIONS TIES adjusted_hits_at_k adjusted_mean_rank adjusted_mean_rank_index "
        "adjusted_reciprocal_rank evaluate evaluate_triples expected_hits_at_k expected_mean_rank "
        "expected_reciprocal_rank filter_mask hits_at_k mean_rank ncf_leave_one_out ndcg_at_k "
        "num_candidates ogb_hits_at_k ogb_mrr rank ranks reciprocal_rank"),
    "jaxrank.state": "HostMetricState MetricState",
    "jaxrank.sharding": "from_sparse_sharded pad_lists",
    "jaxrank.adapters": "clu_metric metrax_metric",
    "jaxrank.plot": "plot_bias",
    "jaxrank.cli": "main",
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_public_name_imports(module):
  mod = importlib.import_module(module)
  for name in PUBLIC[module].split():
    assert getattr(mod, name) is not None, f"{module}.{name}"


def test_the_face_is_one_list():
  assert sorted(jaxrank.__all__) == sorted(PUBLIC["jaxrank"].split())
  assert sorted(jaxrank._SOURCES) == sorted(jaxrank.__all__)
  assert set(jaxrank.__all__) <= set(dir(jaxrank))


def test_the_numpy_face_imports_what_needs_jax_on_first_use():
  import jaxrank.numpy as jrn
  assert sorted(jrn._SOURCES) == ["evaluate", "evaluate_ranked"]
  assert sorted(jrn.__all__) == sorted(PUBLIC["jaxrank.numpy"].split())
  assert set(jrn.__all__) <= set(dir(jrn))
  from jaxrank.numpy._arrays import evaluate
  from jaxrank.numpy._ids import evaluate_ranked
  assert jrn.evaluate is evaluate and jrn.evaluate_ranked is evaluate_ranked
  with pytest.raises(AttributeError, match="module 'jaxrank.numpy' has no attribute 'nope'"):
    jrn.nope  # noqa: B018


def test_evaluate_run_does_not_import_jax():
  # trec_eval's measures, an ir_measures name and a jaxrank name, from dicts and from io:
  # all on the host; jaxrank.numpy.evaluate (arrays) then imports JAX on first use.
  code = textwrap.dedent("""
      import sys
      from jaxrank import io
      from jaxrank import numpy as jrn
      run, qrels = {"q": {"a": 2.0, "b": 1.0, "c": 1.0}}, {"q": {"b": 1, "c": 2}}
      names = ["map", "ndcg_cut_10", "P_5", "recip_rank", "bpref", "nDCG@10", "mrr@10"]
      out = jrn.evaluate_run(run, qrels, names, reduce="mean")
      again = jrn.evaluate_runs({"r": io.as_run(run)}, io.as_qrels(qrels), names, reduce="mean")
      assert again["r"] == out, (again, out)
      assert "jax" not in sys.modules, sorted(m for m in sys.modules if m.startswith("jax"))
      print(round(out["map"], 4), float(jrn.evaluate([[2.0, 1.0]], [[0, 1]], ["map"])["map"][0]))
      assert "jax" in sys.modules
      """)
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
  assert out.returncode == 0, out.stderr[-2000:]
  assert out.stdout.split() == ["0.5833", "0.5"]


def test_import_jaxrank_does_not_import_jax():
  code = "import sys, jaxrank, jaxrank.cli, jaxrank.io; print('jax' in sys.modules)"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert out.stdout.strip() == "False"


def test_unknown_name_is_an_attribute_error():
  with pytest.raises(AttributeError, match="no attribute 'nope'"):
    jaxrank.nope  # noqa: B018
