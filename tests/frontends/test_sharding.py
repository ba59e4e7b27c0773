"""Sharded inputs on 8 forced CPU devices: same values as one device, sharded like the lists.

XLA's device count must be set before JAX starts, so ``test_on_eight_forced_cpu_devices`` runs
this file in its own interpreter with ``XLA_FLAGS=--xla_force_host_platform_device_count=8``; in
the main session (one device) the device tests are skipped. Meshes 8x1, 4x2 and 2x4 (``data`` x
``model``); list counts that do not divide the devices are padded (``jaxrank.sharding.pad_lists``)
and the padding lists masked out of the state. The compiled HLO is checked for an all-gather of
the score matrix, and every test fails when a shard's counts are dropped (no psum).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import jaxrank
from jaxrank.sharding import from_sparse_sharded, pad_lists

DEVICES = 8
on_eight = pytest.mark.skipif(
    jax.device_count() != DEVICES,
    reason="needs 8 devices: run by test_sharding.py::test_on_eight_forced_cpu_devices")
MESHES = [(8, 1), (4, 2), (2, 4)]
METRICS = ["ndcg@5", "map", "mrr", "p@3"]


def test_on_eight_forced_cpu_devices():
  if jax.device_count() == DEVICES:
    pytest.skip("already on 8 devices")
  env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={DEVICES}",
         "JAX_PLATFORMS": "cpu"}
  here = Path(__file__).resolve()
  proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                         str(here)], env=env, capture_output=True, text=True, timeout=900,
                        cwd=here.parents[2])
  assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
  assert " passed" in proc.stdout and "failed" not in proc.stdout, proc.stdout[-2000:]


def mesh_of(shape):
  return jax.make_mesh(shape, ("data", "model"), axis_types=(AxisType.Auto,) * 2)


def data(seed, lists=13, n=24):
  rng = np.random.default_rng(seed)
  scores = (rng.integers(0, 6, size=(lists, n)) / 5).astype(np.float32)  # ties
  labels = (rng.integers(0, 3, size=(lists, n)) * (rng.random((lists, n)) < 0.3)).astype(np.int32)
  labels[0] = 0  # an empty list
  where = rng.random((lists, n)) < 0.9
  return scores, labels, where


def put(mesh, spec, *arrays):
  return [jax.device_put(a, NamedSharding(mesh, spec)) for a in arrays]


def same(a, b):
  np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def lists_sharded(x, mesh):
  return x.sharding.is_equivalent_to(NamedSharding(mesh, P("data")), x.ndim)


def all_gathers(compiled_text: str, shape) -> list[str]:
  """HLO lines that all-gather an array of ``shape`` (the full score matrix)."""
  dims = ",".join(str(d) for d in shape)
  return [line for line in compiled_text.splitlines()
          if "all-gather" in line and f"[{dims}]" in line]


@on_eight
@pytest.mark.parametrize("shape", MESHES)
def test_every_entry_point_on_lists_split_over_devices(shape):
  mesh = mesh_of(shape)
  s, y, w = data(1)
  (s, mask), (y, _), (w, _) = pad_lists(s, 8), pad_lists(y, 8), pad_lists(w, 8, value=False)
  xs, ys, ws = put(mesh, P("data"), s, y, w)
  cases = {
      "evaluate": lambda s, y, w: jaxrank.evaluate(s, y, METRICS, where=w),
      "ndcg": lambda s, y, w: {"v": jaxrank.ndcg(s, y, where=w, k=3, gain="exp2")},
      "from_dense": lambda s, y, w: {"lo": jaxrank.from_dense(s, y, w).lo},
      "from_sparse": lambda s, y, w: {"lo": jaxrank.from_sparse(
          s, jnp.argsort(-y, axis=-1)[:, :3].astype(jnp.int32), where=w).hi},
      "soft_ndcg": lambda s, y, w: {"v": jaxrank.soft_ndcg(s, y, where=w, temperature=0.5)},
      "linkpred": lambda s, y, w: jaxrank.linkpred.evaluate(s[:, 0], s[:, 1:], reduce=None),
      "top_k_ids": lambda s, y, w: {"v": jaxrank.top_k_ids(s, 5, where=w)},
      "recommendation_counts": lambda s, y, w: {"v": jaxrank.recommendation_counts(
          jaxrank.top_k_ids(s, 5), num_items=s.shape[-1])},
  }
  for name, fn in cases.items():
    got, want = fn(xs, ys, ws), fn(s, y, w)
    for key in want:
      same(got[key], want[key])
      if name != "recommendation_counts":  # a catalog-level count is not per list
        assert lists_sharded(got[key], mesh), (name, key, got[key].sharding)
  # the padding lists are masked out of the state; one device gives the same means
  state = jaxrank.MetricState.init(METRICS, max_relevant=24)
  step = jax.jit(lambda st, s, y, w, m: st.update(s, y, where=w, list_mask=m))
  (ms,) = put(mesh, P("data"), mask)
  got = step(state, xs, ys, ws, ms).compute()
  want = jaxrank.evaluate(s[:13], y[:13], METRICS, where=w[:13], reduce="mean")
  for m in METRICS:
    assert float(got[m]) == pytest.approx(float(want[m]), abs=1e-6)


@on_eight
@pytest.mark.parametrize("shape", MESHES)
def test_no_all_gather_of_the_score_matrix(shape):
  mesh = mesh_of(shape)
  s, y, w = data(2, lists=16, n=40)
  xs, ys, ws = put(mesh, P("data"), s, y, w)
  state = jaxrank.MetricState.init(METRICS, max_relevant=40)
  fns = [jax.jit(lambda s, y, w: jaxrank.evaluate(s, y, METRICS, where=w, max_relevant=40)),
         jax.jit(lambda st, s, y, w: st.update(s, y, where=w))]
  for fn, args in zip(fns, [(xs, ys, ws), (state, xs, ys, ws)]):
    text = fn.lower(*args).compile().as_text()
    assert not all_gathers(text, s.shape), all_gathers(text, s.shape)[:2]
  # the check can fail: gathering the scores on purpose shows up
  gather = jax.jit(lambda s: s * 2, out_shardings=NamedSharding(mesh, P()))
  assert all_gathers(gather.lower(xs).compile().as_text(), s.shape)


@on_eight
@pytest.mark.parametrize("shape,ties", [((8, 1), "average"), ((4, 2), "first"),
                                        ((2, 4), "average"), ((1, 8), "first")])
def test_catalog_split_over_a_second_axis(shape, ties):
  mesh = mesh_of(shape)
  rng = np.random.default_rng(3)
  lists, n, r = 8, 64, 5
  scores = (rng.integers(0, 9, size=(lists, n)) / 8).astype(np.float32)  # many ties
  ids = np.full((lists, r), -1, np.int32)
  for i in range(lists):
    k = rng.integers(0, r + 1)
    ids[i, :k] = rng.choice(n, k, replace=False)
  grades = rng.integers(0, 3, size=(lists, r)).astype(np.float32)
  where = rng.random((lists, n)) < 0.9
  xs, ws = put(mesh, P("data", "model"), scores, where)
  xi, xg = put(mesh, P("data"), ids, grades)
  got = from_sparse_sharded(xs, xi, xg, ws, mesh=mesh, ties=ties)
  want = jaxrank.from_sparse(scores, ids, grades, where, ties=ties)
  for field in ("lo", "hi", "grades", "num_items", "overflow"):
    same(getattr(got, field), getattr(want, field))
    assert lists_sharded(getattr(got, field), mesh)
  assert (got.size, got.resolved) == (want.size, want.resolved)
  for m in METRICS:
    same(jaxrank.evaluate(got, [m])[m], jaxrank.evaluate(want, [m])[m])
  text = jax.jit(lambda s, i, g, w: from_sparse_sharded(s, i, g, w, mesh=mesh, ties=ties)).lower(
      xs, xi, xg, ws).compile().as_text()
  assert not all_gathers(text, scores.shape)
  assert "all-reduce" in text or shape[1] == 1  # the psum over the catalog slices


@on_eight
def test_catalog_split_int_scores_and_no_mask():
  mesh = mesh_of((2, 4))
  rng = np.random.default_rng(4)
  scores = rng.integers(-3, 3, size=(4, 32)).astype(np.int32)
  ids = np.stack([rng.choice(32, 3, replace=False) for _ in range(4)]).astype(np.int32)
  (xs,) = put(mesh, P("data", "model"), scores)
  (xi,) = put(mesh, P("data"), ids)
  got = from_sparse_sharded(xs, xi, mesh=mesh)
  want = jaxrank.from_sparse(scores, ids)
  same(got.lo, want.lo)
  same(got.hi, want.hi)
  with pytest.raises(ValueError, match="must divide evenly over the 4 devices"):
    from_sparse_sharded(scores[:, :30], ids, mesh=mesh)
  with pytest.raises(ValueError, match="mesh has no axis 'items'"):
    from_sparse_sharded(scores, ids, mesh=mesh, items_axis="items")


@on_eight
@pytest.mark.parametrize("shape", [(4, 2)])
def test_shard_map_training_loop_with_psum(shape):
  mesh = mesh_of(shape)
  steps = [data(10 + i, lists=16) for i in range(3)]
  init = jaxrank.MetricState.init(METRICS, empty="skip", max_relevant=24)

  def local(state, s, y, w):  # psum only this step's batch: the carried state is replicated
    return state.merge(state.reset().update(s, y, where=w).psum("data"))

  step = jax.jit(jax.shard_map(local, mesh=mesh, in_specs=(P(), P("data"), P("data"), P("data")),
                               out_specs=P(), check_vma=False))
  state = init
  for s, y, w in steps:
    state = step(state, *put(mesh, P("data"), s, y, w))
  total = init
  for s, y, w in steps:
    total = total.update(s, y, where=w)
  for m in METRICS:
    assert float(state.compute()[m]) == pytest.approx(float(total.compute()[m]), abs=1e-6)
  assert state.count.tolist() == total.count.tolist()
