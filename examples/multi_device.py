"""A training-style loop on several devices: data-parallel steps, metrics in a merged state.

    python examples/multi_device.py [--epochs 3] [--batches 10]  # every local device (GPUs, TPUs)
    XLA_FLAGS=--xla_force_host_platform_device_count=8 python examples/multi_device.py  # on CPU

A linear scorer is trained with soft NDCG@10 on synthetic lists split over a ``data`` mesh axis
(``shard_map``: per-device gradients, one ``pmean``); every step also adds its batch to a
``jaxrank.MetricState`` (one ``psum`` of sums and list counts). Every list is drawn from the same
hidden linear model (the one thing to learn), so the epoch's mean loss falls and the held-out
NDCG@10 rises from a random scorer's towards the hidden model's own. The held-out set is
evaluated on the final weights twice, by a state updated on the lists sharded over every device
and by one ``jaxrank.evaluate(..., reduce="mean")`` on the gathered arrays: the two agree.

On 1 and on 8 devices one step's gradient agrees to float32 rounding (relative 5e-7: the lists'
terms are summed in another order); 30 steps at temperature 0.1 amplify that, so the final
NDCG@10 differs in the third decimal (0.9289 on 1 device, 0.9268 on 8 forced CPU devices).
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import jaxrank

METRICS = ["ndcg@10", "map", "mrr"]
LISTS, ITEMS, FEATURES = 64, 100, 16  # lists per step (split over the devices), items per list
HIDDEN = np.random.default_rng(1).standard_normal(FEATURES)  # every list is drawn from it
HIDDEN *= 4.0 / np.linalg.norm(HIDDEN)  # hidden scores: standard deviation 4, plus noise 1


def synthetic(seed, lists):
  """Items with features; relevance grades 0-3 from the hidden linear model plus noise."""
  rng = np.random.default_rng(seed)
  x = rng.standard_normal((lists, ITEMS, FEATURES), np.float32)
  hidden = x @ HIDDEN + rng.standard_normal((lists, ITEMS))
  return x, np.clip(np.floor((hidden - 4.0) / 2.0), 0, 3).astype(np.int32)  # ~7% relevant


def rounded(means):
  return {name: round(float(v), 4) for name, v in means.items()}


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--epochs", type=int, default=3)
  parser.add_argument("--batches", type=int, default=10, help=f"steps of {LISTS} lists per epoch")
  args = parser.parse_args()
  devices = jax.device_count()
  mesh = jax.make_mesh((devices,), ("data",), axis_types=(AxisType.Auto,))
  lists, replicated = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
  init = jaxrank.MetricState.init(METRICS, max_relevant=ITEMS)

  def local_step(w, metrics, x, y):
    loss_fn = lambda w: jaxrank.soft_ndcg_loss(x @ w, y, k=10, temperature=0.1)  # noqa: E731
    loss, grad = jax.value_and_grad(loss_fn)(w)
    grad, loss = jax.lax.pmean((grad, loss), "data")  # each device holds LISTS / devices lists
    batch = metrics.reset().update(jax.lax.stop_gradient(x @ w), y).psum("data")
    return w - 0.3 * grad, metrics.merge(batch), loss

  step = jax.jit(jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P(), P("data"), P("data")),
                               out_specs=(P(), P(), P()), check_vma=False), donate_argnums=1)
  x_test, y_test = synthetic(9999, 4 * LISTS)

  def held_out(scores):  # one call on the whole held-out set, gathered to the host
    return rounded(jaxrank.evaluate(np.asarray(scores), np.asarray(y_test), METRICS,
                                    reduce="mean", max_relevant=ITEMS))

  random_scores = np.random.default_rng(7).standard_normal(y_test.shape)
  print(f"held out, a random scorer: {held_out(random_scores)}; "
        f"the hidden model itself: {held_out(x_test @ HIDDEN)}")
  # The weights and the state live on every device from the start, as the step returns them
  # (else the first steps compile again for inputs placed on one device).
  w = jax.device_put(0.1 * np.random.default_rng(0).standard_normal(FEATURES, np.float32),
                     replicated)
  for epoch in range(args.epochs):
    metrics, losses = jax.device_put(init.reset(), replicated), []
    for b in range(args.batches):
      x, y = jax.device_put(synthetic(100 * epoch + b, LISTS), lists)
      w, metrics, loss = step(w, metrics, x, y)
      losses.append(loss)
    print(f"epoch {epoch}: mean loss {float(jnp.mean(jnp.stack(losses))):.4f}, "
          f"training {rounded(metrics.compute())}")

  # The final weights on the held-out lists: a state updated on the lists sharded over every
  # device, and one call on the gathered arrays.
  scores = x_test @ w
  sharded = jax.jit(lambda m, s, y: m.update(s, y))(init.reset(),
                                                    *jax.device_put((scores, y_test), lists))
  print(f"held out on {devices} device(s): {rounded(sharded.compute())}; "
        f"one call: {held_out(scores)}")


if __name__ == "__main__":
  main()
