"""One of the processes of tests/frontends/test_distributed.py: ``python distributed_worker.py PORT ID N``.

Every process builds the same data from one seed, but places only its own part on its device:
first half the users per process (lists over the processes), then half the catalog per process
(items over the processes). The metrics, a state merged across the processes (psum inside
``shard_map``) and the catalog-sharded ranks must equal this process's single-device result.
"""

from __future__ import annotations

import sys

import jax

port, pid, nproc = (int(a) for a in sys.argv[1:4])
jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(f"localhost:{port}", num_processes=nproc, process_id=pid)

import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402
from jax.sharding import AxisType, Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import jaxrank  # noqa: E402
from jaxrank.sharding import from_sparse_sharded  # noqa: E402

METRICS = ["ndcg@5", "map", "mrr", "p@3"]
assert jax.process_count() == nproc and len(jax.devices()) == nproc, jax.devices()
rng = np.random.default_rng(0)
lists, n = 6 * nproc, 16 * nproc
scores = (rng.integers(0, 6, size=(lists, n)) / 5).astype(np.float32)
labels = (rng.integers(0, 3, size=(lists, n)) * (rng.random((lists, n)) < 0.3)).astype(np.int32)
ids = np.stack([rng.choice(n, 3, replace=False) for _ in range(lists)]).astype(np.int32)


def global_array(x, sharding):
  return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])


def fetch(x):
  return np.asarray(multihost_utils.process_allgather(x, tiled=True))


# 1. users split over the processes: per-list values and a state merged by psum.
users = Mesh(np.array(jax.devices()), ("data",), axis_types=(AxisType.Auto,))
row = NamedSharding(users, P("data"))
gs, gy = global_array(scores, row), global_array(labels, row)
got = jax.jit(lambda s, y: jaxrank.evaluate(s, y, METRICS, max_relevant=n))(gs, gy)
want = jaxrank.evaluate(scores, labels, METRICS, max_relevant=n)  # same slots: same bits
for m in METRICS:
  np.testing.assert_array_equal(fetch(got[m]), np.asarray(want[m]))

init = jaxrank.MetricState.init(METRICS, max_relevant=n)
merge = jax.jit(jax.shard_map(lambda st, s, y: st.merge(st.reset().update(s, y).psum("data")),
                              mesh=users, in_specs=(P(), P("data"), P("data")), out_specs=P(),
                              check_vma=False))
state = merge(init, gs, gy)
mean = jaxrank.evaluate(scores, labels, METRICS, reduce="mean")
local = {m: float(fetch(v)) for m, v in state.compute().items()}
assert all(abs(local[m] - float(mean[m])) <= 1e-6 for m in METRICS), (local, mean)
assert fetch(state.count).tolist() == [lists] * len(METRICS)

# 2. the catalog split over the processes: one psum of rank counts across them.
items = Mesh(np.array(jax.devices()).reshape(1, nproc), ("data", "model"),
             axis_types=(AxisType.Auto,) * 2)
r = from_sparse_sharded(global_array(scores, NamedSharding(items, P("data", "model"))),
                        global_array(ids, NamedSharding(items, P("data"))), mesh=items)
ref = jaxrank.from_sparse(scores, ids)
for field in ("lo", "hi", "num_items"):
  np.testing.assert_array_equal(fetch(getattr(r, field)), np.asarray(getattr(ref, field)))
print(f"process {pid}: OK", flush=True)
