"""A training-style loop on several devices: data-parallel steps, metrics in a merged state.

    python examples/multi_device.py                      # every local device (GPUs, TPU cores)
    XLA_FLAGS=--xla_force_host_platform_device_count=8 python examples/multi_device.py  # on CPU

A linear two-tower-style scorer is trained with soft NDCG on synthetic lists split over a
``data`` mesh axis (``shard_map``: per-device gradients, one ``pmean``); every step also adds its
batch to a ``jaxrank.MetricState`` (one ``psum`` of sums and list counts), and the same state
evaluates a held-out set at the end. The held-out means equal ``jaxrank.evaluate(...,
reduce="mean")`` on all the lists at once. (The training curve differs between device counts: the
gradients are summed in another order, and this small problem at T = 0.1 amplifies it.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import jaxrank

METRICS = ["ndcg@10", "map", "mrr"]
LISTS, ITEMS, FEATURES = 64, 100, 16


def synthetic(key, lists):
  """Items with features; relevance grades from a hidden linear model plus noise."""
  kx, kw, kn = jax.random.split(key, 3)
  x = jax.random.normal(kx, (lists, ITEMS, FEATURES))
  hidden = x @ jax.random.normal(kw, (FEATURES,)) + jax.random.normal(kn, (lists, ITEMS))
  return x, jnp.clip(jnp.floor((hidden - 4.0) / 2.0), 0, 3).astype(jnp.int32)  # ~15% relevant


def main():
  devices = jax.device_count()
  mesh = jax.make_mesh((devices,), ("data",), axis_types=(AxisType.Auto,))
  lists = NamedSharding(mesh, P("data"))
  init = jaxrank.MetricState.init(METRICS, max_relevant=ITEMS)

  def local_step(w, metrics, x, y):
    loss_fn = lambda w: jaxrank.soft_ndcg_loss(x @ w, y, k=10, temperature=0.1)  # noqa: E731
    loss, grad = jax.value_and_grad(loss_fn)(w)
    grad, loss = jax.lax.pmean((grad, loss), "data")
    batch = metrics.reset().update(jax.lax.stop_gradient(x @ w), y).psum("data")
    return w - 0.3 * grad, metrics.merge(batch), loss

  step = jax.jit(jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P(), P("data"), P("data")),
                               out_specs=(P(), P(), P()), check_vma=False), donate_argnums=1)
  w = 0.1 * jax.random.normal(jax.random.key(0), (FEATURES,))
  for epoch in range(3):
    metrics = init.reset()
    for b in range(10):
      x, y = jax.device_put(synthetic(jax.random.key(100 * epoch + b), LISTS), lists)
      w, metrics, loss = step(w, metrics, x, y)
    means = {k: round(float(v), 4) for k, v in metrics.compute().items()}
    print(f"epoch {epoch}: loss {float(loss):.4f}, training {means}")

  x, y = synthetic(jax.random.key(9999), 4 * LISTS)
  held_out = jax.jit(lambda m, s, y: m.update(s, y))(init.reset(),
                                                     *jax.device_put((x @ w, y), lists))
  want = jaxrank.evaluate(np.asarray(x @ w), np.asarray(y), METRICS, reduce="mean",
                          max_relevant=ITEMS)
  print(f"held out on {devices} device(s): "
        f"{ {k: round(float(v), 4) for k, v in held_out.compute().items()} }; one call: "
        f"{ {k: round(float(v), 4) for k, v in want.items()} }")


if __name__ == "__main__":
  main()
