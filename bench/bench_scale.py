"""MetricState overhead, and forced CPU devices against one.

    python bench/bench_scale.py                 # full: 1,000 x 1,024 x 1,000; 100,000 x 1,000
    python bench/bench_scale.py --quick         # 20 batches of 256 x 1,000; 10,000 x 1,000
    python bench/bench_scale.py --part state    # or --part devices

Part 1, state overhead: ``B`` batches of ``L`` lists x ``n`` candidates (float32 scores, ~1%
relevant, five metrics: NDCG@10, MAP, MRR, P@10, R@10, ``max_relevant=32``) go through
``MetricState.update`` inside one jitted ``lax.scan``, against one jitted
``jaxrank.evaluate(..., reduce="mean")`` on the ``[B * L, n]`` concatenation (same device
data, a free reshape). Target: the scan at most 1.1x the one call.
Part 2, devices: the same five means on ``N`` lists x ``n`` sharded over 8 devices (lists over a
``data`` axis) against one device. On a CPU the 8 devices are forced
(``--xla_force_host_platform_device_count=8``, set in a subprocess) and share the machine's
cores, so the ratio shows the partitioning's overhead, not a speed-up.
Times are the best of ``--repeats`` runs after a compiling one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import jax
import jax.numpy as jnp

METRICS = ("ndcg@10", "map", "mrr", "precision@10", "recall@10")
SLOTS = 32


def best(fn, *args, repeats):
  jax.block_until_ready(fn(*args))
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    times.append(time.perf_counter() - start)
  return min(times)


def make(key, shape):
  ks, kl = jax.random.split(key)
  scores = jax.random.normal(ks, shape, jnp.float32)
  labels = (jax.random.uniform(kl, shape) < 0.01).astype(jnp.int8)
  return scores, labels


def part_state(batches, lists, n, repeats):
  import jaxrank
  scores, labels = jax.jit(make, static_argnums=1)(jax.random.key(0), (batches, lists, n))
  init = jaxrank.MetricState.init(METRICS, max_relevant=SLOTS)

  @jax.jit
  def by_state(state, scores, labels):
    return jax.lax.scan(lambda st, b: (st.update(*b), None), state, (scores, labels))[0]

  @jax.jit
  def at_once(scores, labels):
    flat = scores.reshape(-1, n), labels.reshape(-1, n)
    return jaxrank.evaluate(*flat, list(METRICS), reduce="mean", max_relevant=SLOTS)

  t_state = best(by_state, init, scores, labels, repeats=repeats)
  t_once = best(at_once, scores, labels, repeats=repeats)
  a = by_state(init, scores, labels).compute()
  b = at_once(scores, labels)
  diff = max(abs(float(a[m]) - float(b[m])) for m in METRICS)
  print(f"state: {batches} batches x {lists} x {n} on {jax.devices()[0].platform}: "
        f"scan of updates {t_state * 1e3:.1f} ms, one evaluate {t_once * 1e3:.1f} ms, "
        f"ratio {t_state / t_once:.3f} (max |difference| of the means {diff:.1e})")


def part_devices(lists, n, repeats):
  import jaxrank
  from jax.sharding import AxisType, NamedSharding
  from jax.sharding import PartitionSpec as P
  scores, labels = jax.jit(make, static_argnums=1)(jax.random.key(1), (lists, n))
  fn = jax.jit(lambda s, y: jaxrank.evaluate(s, y, list(METRICS), reduce="mean",
                                             max_relevant=SLOTS))
  one = jax.device_put((scores, labels), jax.devices()[0])
  t_one = best(fn, *one, repeats=repeats)
  mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(AxisType.Auto,))
  many = jax.device_put((scores, labels), NamedSharding(mesh, P("data")))
  t_many = best(fn, *many, repeats=repeats)
  print(f"devices: {lists} x {n}, {jax.device_count()} {jax.devices()[0].platform} devices "
        f"{t_many * 1e3:.1f} ms, one device {t_one * 1e3:.1f} ms, ratio {t_many / t_one:.2f}"
        f"{' (forced CPU devices share the cores: overhead, not speed-up)' if jax.devices()[0].platform == 'cpu' else ''}")


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--quick", action="store_true")
  parser.add_argument("--part", choices=("state", "devices", "all"), default="all")
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--batches", type=int)
  parser.add_argument("--lists", type=int)
  parser.add_argument("--devices-lists", type=int)
  args = parser.parse_args()
  batches = args.batches or (20 if args.quick else 1000)
  lists = args.lists or (256 if args.quick else 1024)
  dev_lists = args.devices_lists or (10_000 if args.quick else 100_000)
  print(f"jax {jax.__version__}, {jax.devices()[0].device_kind}, {os.cpu_count()} CPUs")
  if args.part in ("state", "all"):
    part_state(batches, lists, 1000, args.repeats)
  if args.part in ("devices", "all"):
    if jax.devices()[0].platform == "cpu" and jax.device_count() < 8:
      env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
      cmd = [sys.executable, __file__, "--part", "devices", "--devices-lists", str(dev_lists),
             "--repeats", str(args.repeats)]
      subprocess.run(cmd, env=env, check=True)
    else:
      part_devices(dev_lists, 1000, args.repeats)


if __name__ == "__main__":
  main()
