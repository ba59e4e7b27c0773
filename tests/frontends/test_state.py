"""MetricState and HostMetricState: the mean over batches equals evaluate on their concatenation.

Random data with ties (scores on a coarse grid), padding items, fully padded and label-less lists
and graded labels, under every empty-list policy; the state updated eagerly, under ``jit``, inside
``lax.scan``, with donated buffers, merged in any grouping and reduced over a named axis.
Tests that leave out a batch, a list or a count fail here.
"""

from __future__ import annotations

import math
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrank
from jaxrank import numpy as jrn
from jaxrank.state import HostMetricState, MetricState

METRICS = ["ndcg@5", "map", "mrr", "p@3", "mr"]  # tie-group formulas, DCG, a count, a rank
SIZES = (4, 8, 4, 8, 8)  # two batch shapes: few compilations
N = 12
POLICIES = ["zero", "skip", "nan"]


def batch(rng, lists, n=N, *, empty_share=0.3):
  """Tied scores, graded labels, padding items; some lists without relevant items."""
  scores = rng.integers(0, 5, size=(lists, n)).astype(np.float32) / 4
  labels = rng.integers(0, 3, size=(lists, n)) * (rng.random((lists, n)) < 0.4)
  labels[rng.random(lists) < empty_share] = 0
  where = rng.random((lists, n)) < 0.85
  where[rng.random(lists) < 0.1] = False  # fully padded lists: empty
  return scores, labels.astype(np.int32), where


def batches(seed, sizes=SIZES):
  rng = np.random.default_rng(seed)
  return [batch(rng, s) for s in sizes]


def concat(bs):
  return tuple(np.concatenate(parts) for parts in zip(*bs))


def expected(bs, empty, metrics=METRICS, **kw):
  s, y, w = concat(bs)
  return jaxrank.evaluate(s, y, metrics, where=w, empty=empty, reduce="mean", max_relevant=N,
                          **kw)


def assert_same(got, want, tol=1e-6):
  assert list(got) == list(want)
  for name in want:
    g, w = float(got[name]), float(want[name])
    if math.isnan(w):
      assert math.isnan(g), name
    else:
      assert g == pytest.approx(w, rel=tol, abs=tol), name


@pytest.mark.parametrize("empty", POLICIES)
def test_eager_updates_equal_evaluate_on_the_concatenation(empty):
  bs = batches(1)
  state = MetricState.init(METRICS, empty=empty, max_relevant=N)
  for s, y, w in bs:
    state = state.update(s, y, where=w)
  want = expected(bs, empty)
  assert_same(state.compute(), want)
  if empty == "nan":
    assert math.isnan(float(want["map"]))  # the data has empty lists: NaN must propagate
  # dropping one batch is seen
  short = MetricState.init(METRICS, empty=empty, max_relevant=N)
  for s, y, w in bs[:-1]:
    short = short.update(s, y, where=w)
  if empty != "nan":
    assert float(short.compute()["map"]) != pytest.approx(float(want["map"]), abs=1e-6)


@pytest.mark.parametrize("empty,ties", [("zero", "average"), ("skip", "first"),
                                        ("nan", "pessimistic")])
def test_jit_and_scan_updates_equal_evaluate(empty, ties):
  rng = np.random.default_rng(2)
  steps = [batch(rng, 4) for _ in range(8)]
  s, y, w = (jnp.asarray(np.stack(parts)) for parts in zip(*steps))
  init = MetricState.init(METRICS, empty=empty, ties=ties, max_relevant=N)

  @jax.jit
  def scan(state, s, y, w):
    return jax.lax.scan(lambda st, b: (st.update(*b[:2], where=b[2]), None), state, (s, y, w))[0]

  step = jax.jit(lambda st, s, y, w: st.update(s, y, where=w))
  by_step = init
  for b in steps:
    by_step = step(by_step, *b)
  want = expected(steps, empty, ties=ties)
  assert_same(scan(init, s, y, w).compute(), want)
  assert_same(by_step.compute(), want)


def test_update_under_jit_does_not_touch_the_host_and_compiles_once():
  rng = np.random.default_rng(3)
  init = MetricState.init(["ndcg@10", "map"], max_relevant=12)
  step = jax.jit(lambda st, s, y, w: st.update(s, y, where=w), donate_argnums=0)
  data = [tuple(jax.device_put(a) for a in batch(rng, 8)) for _ in range(4)]
  state = step(init, *data[0])
  with jax.transfer_guard("disallow"):  # no host transfer at all inside the loop
    for b in data[1:]:
      old = state
      state = step(state, *b)
      assert old.total.is_deleted()  # donated: updated in place
  assert step._cache_size() == 1
  assert_same(state.compute(), expected([tuple(map(np.asarray, b)) for b in data], "zero",
                                        ["ndcg@10", "map"]))


def test_too_few_relevant_slots_give_nan_not_a_wrong_mean():
  state = MetricState.init(["map"], max_relevant=1)
  step = jax.jit(lambda st, s, y: st.update(s, y))
  out = step(state, jnp.array([[0.3, 0.2, 0.1]]), jnp.array([[1, 1, 0]]))
  assert math.isnan(float(out.compute()["map"]))


@pytest.mark.parametrize("empty", POLICIES)
def test_too_few_relevant_slots_give_nan_under_every_policy(empty):
  """Issue 22, item 4: with "skip" the overflowed list was dropped as an empty one (map 0.5 over
  the other list, where the true mean is 0.75)."""
  state = MetricState.init(["map", "mrr", "recall@3"], max_relevant=1, empty=empty)
  out = jax.jit(lambda st, a, b: st.update(a, b))(
      state, jnp.array([[.9, .8, .1], [.2, .7, .1]]), jnp.array([[1, 1, 1], [1, 0, 0]]))
  assert all(math.isnan(float(v)) for v in out.compute().values())
  assert out.count.tolist() == [2, 2, 2]


def test_jit_without_max_relevant_is_exact_on_both_sides_of_the_few_slots():
  """Traced labels without max_relevant: 64 slots while no list has more relevant items (about
  10x faster at 1,000 x 1,000 than one slot per item), else one slot per item; both exact."""
  from jaxrank._core import dense as _dense
  rng = np.random.default_rng(11)
  n = 2 * _dense.TRACED_SLOTS + 1
  s = rng.integers(0, 40, (3, n)).astype(np.float32)  # ties
  few = (rng.random((3, n)) < 0.2) * rng.integers(1, 3, (3, n))
  many = few.copy()
  many[1, : _dense.TRACED_SLOTS + 1] = 1  # one list over the few slots
  step = jax.jit(lambda st, s, y: st.update(s, y))
  names = ["ndcg@10", "map", "mrr", "rprec"]
  state = MetricState.init(names, empty="skip")
  for y in (few, many):
    assert_same(step(state, s, y).compute(), jaxrank.evaluate(s, y, names, empty="skip",
                                                               reduce="mean"))
  assert step._cache_size() == 1


@pytest.mark.parametrize("empty", POLICIES)
def test_merge_in_any_grouping(empty):
  bs = batches(4, sizes=(4, 8, 4, 8, 4, 4))
  parts = [MetricState.init(METRICS, empty=empty, max_relevant=N).update(s, y, where=w)
           for s, y, w in bs]
  left = parts[0]
  for p in parts[1:]:
    left = left.merge(p)
  right = parts[-1]
  for p in parts[-2::-1]:
    right = p.merge(right)
  tree = (parts[0].merge(parts[1])).merge(parts[2].merge(parts[3]).merge(parts[4].merge(parts[5])))
  want = expected(bs, empty)
  for got in (left, right, tree):
    assert_same(got.compute(), want)
  if empty != "skip":
    assert left.count.tolist() == [32] * len(METRICS)


def test_merge_and_reset_keep_the_configuration():
  a = MetricState.init(["map"])
  with pytest.raises(ValueError, match="different metrics or options"):
    a.merge(MetricState.init(["map"], empty="skip"))
  with pytest.raises(TypeError, match="another MetricState"):
    a.merge({"map": 1.0})
  assert a.update([[0.1, 0.2]], [[1, 0]]).reset().count.tolist() == [0]
  assert math.isnan(float(a.compute()["map"]))  # nothing counted: NaN, as the mean of nothing


def test_update_from_any_ranks():
  rng = np.random.default_rng(6)
  scores = rng.integers(0, 6, size=(9, 30)).astype(np.float32)
  ids = np.full((9, 4), -1)
  for i in range(9):  # 0-4 distinct relevant ids per list, -1 padding after them
    k = rng.integers(0, 5)
    ids[i, :k] = rng.choice(30, k, replace=False)
  ranks = jaxrank.from_sparse(scores, ids)
  for empty in ("skip",):
    state = MetricState.init(METRICS, empty=empty)
    state = state.update(jax.tree_util.tree_map(lambda x: x[:4], ranks))
    state = state.update(jax.tree_util.tree_map(lambda x: x[4:], ranks))
    assert_same(state.compute(), jaxrank.evaluate(ranks, METRICS, empty=empty, reduce="mean"))
  with pytest.raises(ValueError, match="must be None when a Ranks"):
    MetricState.init().update(ranks, where=np.ones((9, 30), bool))


@pytest.mark.parametrize("empty", POLICIES)
def test_list_mask_drops_lists_entirely(empty):
  (s, y, w), = batches(7, sizes=(32,))
  mask = np.zeros(32, bool)
  mask[np.random.default_rng(0).choice(32, 8, replace=False)] = True
  got = MetricState.init(METRICS, empty=empty, max_relevant=N).update(s, y, where=w,
                                                                     list_mask=mask)
  assert_same(got.compute(), expected([(s[mask], y[mask], w[mask])], empty))
  with pytest.raises(ValueError, match=r"list_mask must be a bool array of the lists' shape"):
    MetricState.init().update(s, y, list_mask=mask[:3])


def test_psum_over_a_named_axis_equals_one_state():
  bs = batches(8, sizes=(8, 8, 8, 8))
  s, y, w = (jnp.asarray(np.stack(p)) for p in zip(*bs))
  init = MetricState.init(METRICS, empty="skip", max_relevant=N)
  f = jax.vmap(lambda st, s, y, w: st.update(s, y, where=w).psum("d"), in_axes=(None, 0, 0, 0),
               axis_name="d")
  out = f(init, s, y, w)
  want = expected(bs, "skip")
  got = out.compute()
  for d in range(4):  # every device holds the whole result
    assert_same({k: v[d] for k, v in got.items()}, want)
  # without the psum each device holds only its share
  alone = jax.vmap(lambda st, s, y, w: st.update(s, y, where=w), in_axes=(None, 0, 0, 0))(
      init, s, y, w)
  assert int(alone.count[0, 0]) < int(out.count[0, 0])


def test_compensated_sums_keep_float32_means_exact_over_many_batches():
  # 2,000 batches of one list with value 0.1 (not a binary fraction): a plain float32 running
  # sum drifts by ~1e-4 relative; the compensated state stays within 1e-7.
  state = MetricState.init(["p@10"])
  step = jax.jit(lambda st, y: jax.lax.scan(lambda s, yy: (s.update(jnp.arange(10.0)[None],
                                                                     yy[None]), None), st, y)[0])
  labels = jnp.zeros((2000, 10), jnp.int32).at[:, 9].set(1)
  out = step(state, labels)
  assert float(out.compute()["p@10"]) == pytest.approx(0.1, rel=1e-7)
  plain = jax.lax.fori_loop(0, 2000, lambda i, t: t + jnp.float32(0.1), jnp.float32(0))
  assert abs(float(plain) / 2000 - 0.1) > 1e-6  # the naive sum does drift


def test_state_is_a_pytree_with_static_configuration():
  s = MetricState.init(["map", "ndcg@3"], gain="exp2")
  leaves, tree = jax.tree_util.tree_flatten(s)
  assert len(leaves) == 3 and all(x.shape == (2,) for x in leaves)
  assert jax.tree_util.tree_unflatten(tree, leaves).options.gain == "exp2"
  with pytest.raises(ValueError, match="unknown metric"):
    MetricState.init(["nope"])
  with pytest.raises(ValueError, match="empty must be one of"):
    MetricState.init(["map"], empty="drop")


# ----------------------------------------------------------------------------- the host face


def ragged(rng, lists):
  sizes = rng.integers(1, 30, size=lists)
  scores = [list(rng.integers(0, 4, size=n) / 3) for n in sizes]
  labels = [list(rng.integers(0, 3, size=n) * (rng.random(n) < 0.3)) for n in sizes]
  return scores, labels


@pytest.mark.parametrize("empty", POLICIES)
def test_host_state_equals_the_float64_mean_of_every_list(empty):
  rng = np.random.default_rng(9)
  parts = [ragged(rng, n) for n in (3, 17, 1, 40, 8)]
  state = HostMetricState.init(METRICS, empty=empty)
  for s, y in parts:
    state = state.update(s, y)
  s_all = [row for s, _ in parts for row in s]
  y_all = [row for _, y in parts for row in y]
  per_list = jrn.evaluate(s_all, y_all, METRICS, empty=empty)
  one_shot = jrn.evaluate(s_all, y_all, METRICS, empty=empty, reduce="mean")
  got = state.compute()
  for name in METRICS:
    v = per_list[name]
    v = v[~np.isnan(v)] if empty == "skip" else v
    exact = math.fsum(v.tolist()) / v.size if not np.isnan(v).any() else math.nan
    if math.isnan(exact):
      assert math.isnan(got[name]) and math.isnan(one_shot[name])
    else:
      assert got[name] == exact  # the correctly rounded sum over the count, bit for bit
      assert got[name] == pytest.approx(one_shot[name], rel=1e-14)
  halves = [HostMetricState.init(METRICS, empty=empty) for _ in range(2)]
  for i, (s, y) in enumerate(parts):
    halves[i % 2] = halves[i % 2].update(s, y)
  merged = halves[0].merge(halves[1]).compute()
  assert all(merged[m] == got[m] or (math.isnan(merged[m]) and math.isnan(got[m]))
             for m in METRICS)


def test_host_state_ranked_ids_and_dicts():
  state = HostMetricState.init(["recall@2", "mrr"])
  state = state.update_ranked({"ann": [12, 7, 3], "bob": [4, 5]}, {"ann": {7, 40}, "bob": {5: 3}})
  state = state.update_ranked([[1, 2]], [[2]])
  want = jrn.evaluate_ranked([[12, 7, 3], [4, 5], [1, 2]], [[7, 40], [5], [2]],
                             ["recall@2", "mrr"], reduce="mean")
  assert state.compute() == pytest.approx(want, rel=1e-15)
  with pytest.raises(ValueError, match="different metrics or options"):
    state.merge(HostMetricState.init(["mrr"]))


def test_host_stream_of_batch_sizes_compiles_a_handful_of_times():
  from jax._src import dispatch, monitoring

  compiles = []

  def listener(event, duration, **kwargs):
    if event == dispatch.BACKEND_COMPILE_EVENT:
      compiles.append(event)

  rng = np.random.default_rng(10)
  state = HostMetricState.init(["ndcg@7", "map", "p@4"])  # a set no other test compiles
  state = state.update(*ragged(rng, 5))
  monitoring.register_event_duration_secs_listener(listener)
  try:
    for lists in range(6, 40):
      state = state.update(*ragged(rng, lists))
  finally:
    monitoring.unregister_event_duration_listener(listener)
  assert len(compiles) <= 12, len(compiles)
  assert state.counts[0] == sum(range(5, 40))


def test_import_jaxrank_imports_neither_flax_nor_clu_nor_metrax():
  code = ("import sys, jaxrank, jaxrank.state, jaxrank.adapters, jaxrank.sharding; "
          "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('flax', 'clu', 'metrax'));"
          "print(bad); sys.exit(1 if bad else 0)")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
  assert out.returncode == 0, out.stdout + out.stderr
