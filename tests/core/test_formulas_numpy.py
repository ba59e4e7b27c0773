"""The metric formulas on NumPy arrays: the same code as on JAX arrays, and the same values.

``jaxrank._core.formulas`` takes its array namespace from its Ranks' arrays
(``jaxrank._core.xp.ops_of``): on Ranks of NumPy arrays it runs on the host in float64 without
importing JAX. Every formula of the table, ``finish``, ``ideal_dcg`` and ``positions`` is checked
on random Ranks of every input form (ties, padding and unranked slots, graded labels, resolved or
not, with and without judgments, one slot per list, more slots than the pairwise form takes)
under every tie policy and every formula option, against the same formulas under ``jax.jit`` in
x64 mode (to ~1e-12) and eagerly in float32 (to float32 precision).
"""

import math
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import jaxrank
from jaxrank._core import formulas as _formulas
from jaxrank._core import positions as _positions
from jaxrank._core import options as _options
from jaxrank._core import table as _table
from jaxrank._core.xp import ops_of


def square_gain(grades):  # a callable gain and discount that run on either namespace
  return grades * grades


def root_discount(rank):
  return 1.0 / (rank + 1.0) ** 0.5


def _forms(seed=0):
  """One Ranks per input form, built with JAX (in the current x64 mode)."""
  rng = np.random.default_rng(seed)
  lists, n = 12, 9
  scores = rng.integers(0, 4, (lists, n)).astype(np.float32)  # many ties
  grades = rng.choice(np.array([1, 2, 3, 1.5], np.float32), (lists, n))
  labels = np.where(rng.random((lists, n)) < 0.45, grades, 0).astype(np.float32)
  labels[0] = 0  # a list without relevant items
  where = rng.random((lists, n)) < 0.85
  where[1] = False  # a list without items
  judged = rng.random((lists, n)) < 0.75
  pooled = np.where(rng.random((lists, n)) < 0.2, -1, labels).astype(np.float32)
  long_scores = rng.integers(0, 6, (6, 40)).astype(np.float32)
  long_labels = np.where(rng.random((6, 40)) < 0.12, rng.integers(1, 4, (6, 40)), 0)
  long_labels[0, :3], long_scores[0, :3] = 2, 5  # a tie group of three relevant items (err)
  ranked = np.stack([rng.permutation(12)[:5] for _ in range(lists)])
  ranked[rng.random((lists, 5)) < 0.2] = -1
  rel_ids = np.stack([rng.permutation(12)[:6] for _ in range(lists)])
  rel_ids[rng.random((lists, 6)) < 0.3] = -1
  sparse_ids = np.stack([rng.permutation(n)[:4] for _ in range(lists)])
  sparse_ids[rng.random((lists, 4)) < 0.25] = -1
  many_scores = rng.integers(0, 20, (3, 90)).astype(np.float32)
  many_labels = np.where(rng.random((3, 90)) < 0.5, rng.integers(1, 3, (3, 90)), 0)
  return {
      # one slot per item (padding slots, the histogram path of the group counts)
      "dense": jaxrank.from_dense(scores, labels, where, max_relevant=n),
      # judgments (judged non-relevant and pooled items), as few slots as relevant items
      "judged": jaxrank.from_dense(scores, pooled, where, judged=judged),
      # few slots in long lists: the sort path of the group counts
      "few": jaxrank.from_dense(long_scores, long_labels),
      "first": jaxrank.from_dense(scores, pooled, where, judged=judged, ties="first"),
      # resolved, fewer ranked items than relevant slots, relevant ids not retrieved
      "ranked": jaxrank.from_ranked_ids(
          ranked, rel_ids, rng.choice(np.array([0, 1, 2, 3], np.float32), (lists, 6))),
      # relevant items that are not ranked (where=False): lo = size + 1
      "sparse": jaxrank.from_sparse(
          scores, sparse_ids, rng.choice(np.array([0, 1, 2], np.float32), (lists, 4)), where),
      # one slot per list (link prediction's closed forms)
      "candidates": jaxrank.from_candidates(
          rng.integers(0, 4, lists).astype(np.float32),
          rng.integers(0, 4, (lists, 7)).astype(np.float32), rng.random((lists, 7)) < 0.8),
      # more slots than positions_pairwise takes: positions_sorted
      "many": jaxrank.from_dense(many_scores, many_labels, max_relevant=90),
  }


GAINS = ["linear", "exp2", square_gain]


def _options_of(i, ties):
  """The i-th option profile: over the cases every value of every option comes up."""
  return _options.make_options(
      ties=ties, threshold=[1, 2][(i // 2) % 2], gain=GAINS[i % 3],
      discount=[None, root_discount][(i // 3) % 2], empty=["zero", "nan", "skip"][i % 3],
      ap_denominator=["all", "min_k", "retrieved"][(i + 1) % 3],
      precision_denominator=["k", "min_k_n"][i % 2], beta=[1.0, 0.5, math.inf][(i + 2) % 3],
      persistence=[0.8, 0.5][i % 2], graded=bool((i // 2) % 2), max_grade=[4.0, 3.0][i % 2])


KS = [None, 3, 1, 100]  # 100: beyond every list
# (form, ties): every form, every policy, pairwise and sorted positions (one jit compile each).
CASES = [("dense", "average"), ("dense", "pessimistic"), ("judged", "average"),
         ("judged", "pessimistic"), ("few", "average"), ("first", "first"), ("ranked", "first"),
         ("sparse", "optimistic"), ("candidates", "average"), ("many", "pessimistic")]
EAGER = 0  # the case also run eagerly in float32 (every primitive compiled once: slow)


def _all(r, o, k):
  """Every formula of the table (at ``k`` where it takes one), finished, and the helpers."""
  out = {}
  for name, metric in _table.METRICS.items():
    value, empty = metric.formula(r, k if metric.cutoff else None, o)
    out[name] = (value, empty, _formulas.finish(value, empty, r, o))
  out["ideal_dcg"] = (_formulas.ideal_dcg(r, k, o),)
  out["positions"] = _positions.positions(r, o.ties)
  return out


def _on_numpy(r, o, k):
  r = jax.tree_util.tree_map(np.asarray, r)
  with np.errstate(all="ignore"):
    return _all(r, o, k)


@pytest.fixture(scope="module")
def forms():
  with jax.enable_x64(True):  # as the trec_eval path; the Ranks are int32 and float32 anyway
    return _forms()


def _compare(got, want, **tol):
  assert got.keys() == want.keys()
  for name in got:
    for g, w in zip(got[name], want[name]):
      assert isinstance(g, (np.ndarray, np.generic)), (name, type(g))
      np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                 err_msg=name, **tol)


@pytest.mark.parametrize("i", range(len(CASES)))
def test_numpy_equals_jit_in_x64(forms, i):
  form, ties = CASES[i]
  r, o, k = forms[form], _options_of(i, ties), KS[i % len(KS)]
  got = _on_numpy(r, o, k)
  for name, (_value, _, finished) in ((n, v) for n, v in got.items() if len(v) == 3):
    assert finished.dtype == np.float64 and isinstance(finished, np.ndarray), name
  with jax.enable_x64(True):
    want = jax.jit(lambda r: _all(r, o, k))(r)
  _compare(got, want, rtol=1e-12, atol=1e-14)


def test_numpy_equals_eager_float32(forms):
  i = EAGER
  form, ties = CASES[i]
  r, o, k = forms[form], _options_of(i, ties), KS[i % len(KS)]
  with jax.enable_x64(False):
    want = _all(r, o, k)
  assert want["precision"][2].dtype == np.float32
  _compare(_on_numpy(r, o, k), want, rtol=2e-6, atol=2e-6)


def test_first_needs_resolved_ranks_on_numpy_too(forms):
  r = forms["dense"]
  o = _options.make_options(ties="first")
  for ranks in (r, jax.tree_util.tree_map(np.asarray, r)):
    for metric in _table.METRICS.values():
      if metric.name in ("rbp_residual",):  # reads no positions
        continue
      with pytest.raises(ValueError, match="ties='first' needs the order"):
        metric.formula(ranks, None, o)


def test_namespace_of_the_arrays():
  assert ops_of(np.zeros(2), np.int32(3)).name == "numpy"
  assert ops_of(np.zeros(2), jax.numpy.zeros(2)).name in ("jax32", "jax64")
  with jax.enable_x64(True):
    assert ops_of(jax.numpy.zeros(2)).float == jax.numpy.float64
  with jax.enable_x64(False):
    assert ops_of(jax.numpy.zeros(2)).float == jax.numpy.float32
  rows = np.array([[1, 3, 3, 7], [2, 2, 2, 9]], np.int32)
  queries = np.array([[3, 0, 8], [2, 9, 10]], np.int32)
  for side in ("left", "right"):
    want = np.stack([np.searchsorted(s, q, side=side) for s, q in zip(rows, queries)])
    np.testing.assert_array_equal(ops_of(rows).searchsorted_rows(rows, queries, side), want)
    jitted = jax.jit(lambda s, q, side=side: ops_of(s).searchsorted_rows(s, q, side))
    np.testing.assert_array_equal(ops_of(rows).searchsorted_rows(rows, queries, side),
                                  jitted(rows, queries))


def test_log2_discount_takes_the_namespace_of_its_argument():
  assert isinstance(jaxrank.log2_discount(np.array([1.0, 3.0])), np.ndarray)
  assert isinstance(jaxrank.log2_discount(jax.numpy.array([1.0, 3.0])), jax.Array)
  assert float(jaxrank.log2_discount(3.0)) == 0.5


def test_formulas_on_numpy_import_no_jax():
  code = textwrap.dedent("""
      import sys
      import numpy as np
      import jaxrank._core.formulas, jaxrank._core.table, jaxrank._core.options
      from jaxrank._core import formulas, options, table
      from jaxrank._core.rankform import Judgments, Ranks
      assert "jax" not in sys.modules
      judged = Judgments(lo=np.array([[1, 5]], np.int32), hi=np.array([[1, 5]], np.int32),
                         kind=np.array([[1, 2]], np.int8))
      r = Ranks(lo=np.array([[2, 2, 5]], np.int32), hi=np.array([[3, 3, 5]], np.int32),
                grades=np.array([[2.0, 1.0, 0.0]], np.float32),
                num_items=np.array([4], np.int32), overflow=np.array([False]), size=4,
                judged=judged)
      for ties in ("average", "optimistic", "pessimistic"):
        o = options.make_options(ties=ties, gain="exp2")
        for m in table.METRICS.values():
          value, empty = m.formula(r, 3 if m.cutoff else None, o)
          out = formulas.finish(value, empty, r, o)
          assert type(out) is np.ndarray and out.dtype == np.float64, (m.name, type(out))
      assert "jax" not in sys.modules, sorted(n for n in sys.modules if n.startswith("jax"))
      """)
  subprocess.run([sys.executable, "-c", code], check=True)


def test_numpy_float_sums_ignore_padding_bit_for_bit():
  # A list scored in a wider batch (more padded slots) must get the same bits: NumPy's pairwise
  # np.sum would group the elements by the row's length; the formulas' sum adds them in order.
  rng = np.random.default_rng(3)
  for n in (3, 9, 130, 1000):
    a = rng.random((4, n))
    xp = ops_of(a)
    for extra in (1, 7, 200):
      padded = np.concatenate([a, np.zeros((4, extra))], axis=1)
      np.testing.assert_array_equal(xp.sum(padded, axis=-1), xp.sum(a, axis=-1))
    np.testing.assert_allclose(xp.sum(a, axis=-1), a.sum(-1), rtol=1e-13)
  assert xp.sum(a > 0.5, axis=-1).dtype == np.int64
  assert xp.sum(a > 0.5, axis=-1, dtype=np.int32).dtype == np.int32
  assert xp.sum(np.zeros((2, 0)), axis=-1).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("namespace", ["numpy", "jax"])
def test_group_counts_at_a_small_cutoff_equal_the_sorted_counts(namespace):
  """``_group_counts`` with a small ``cap`` (AP@k, AR@k) counts positions 1..cap by compares:
  at every slot a formula reads (``lo <= cap``) it equals the sort's counts, with ties, slots
  that are not relevant and unranked slots (``lo = size + 1``)."""
  import jax.numpy as jnp
  rng = np.random.default_rng(7)
  for trial in range(40 if namespace == "numpy" else 6):  # JAX: one shape, few compiles
    lists, m, size = ((int(rng.integers(1, 6)), int(rng.integers(2, 60)), int(rng.integers(1, 80)))
                      if namespace == "numpy" else (4, 40, 50))
    lo = rng.integers(1, size + 2, (lists, m)).astype(np.int32)
    lo = np.where(rng.random((lists, m)) < 0.3, lo // 3 + 1, lo)  # many ties
    rel = rng.random((lists, m)) < 0.6
    cap = int(rng.integers(1, 33))
    if namespace == "jax":
      lo, rel = jnp.asarray(lo), jnp.asarray(rel)
    before, same = _formulas._group_counts(lo, rel, size)
    small_before, small_same = _formulas._group_counts(lo, rel, size, cap)
    read = np.asarray(lo) <= cap
    assert np.isfinite(np.asarray(small_before)).all(), trial
    np.testing.assert_array_equal(np.asarray(small_before)[read], np.asarray(before)[read])
    np.testing.assert_array_equal(np.asarray(small_same)[read], np.asarray(same)[read])
