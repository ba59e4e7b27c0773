"""Train a small matrix-factorisation model on synthetic interactions (BPR loss, optax) and
evaluate it over the full catalog with jaxrank.catalog: accuracy metrics of the held-out items
with the training items excluded, then beyond-accuracy metrics of the top-10 lists.

    pip install "jaxrank[examples]"  # optax
    python examples/mf_catalog.py [--users 2000] [--items 5000] [--dim 32] [--steps 300]

Interactions come from hidden user/item factors plus an item popularity skew; each user's last
two interactions are held out. A random-embedding model is evaluated the same way for reference.
"""

from __future__ import annotations

import argparse
import sys

import jax
import jax.numpy as jnp
import numpy as np

try:
  import optax
except ImportError:  # one line, not a traceback
  sys.exit('mf_catalog.py needs optax: pip install "jaxrank[examples]"')

import jaxrank
from jaxrank import catalog

METRICS = ["ndcg@10", "recall@10", "map", "mrr"]


def interactions(users: int, items: int, per_user: int = 12, seed: int = 0):
  """``[users, per_user]`` distinct item ids per user, drawn from hidden factors + popularity."""
  rng = np.random.default_rng(seed)
  u, v = rng.standard_normal((users, 8)), rng.standard_normal((items, 8))
  popularity = -np.log(np.arange(1, items + 1))  # Zipf-like
  logits = u @ v.T * 1.5 + popularity + rng.gumbel(size=(users, items))
  return np.argsort(-logits, axis=1)[:, :per_user].astype(np.int32)


def train(seen: np.ndarray, items: int, dim: int, steps: int, seed: int = 0):
  """BPR: each (user, seen item) pair should outscore a random item."""
  users = seen.shape[0]
  key = jax.random.PRNGKey(seed)
  params = {"user": 0.1 * jax.random.normal(key, (users, dim)),
            "item": 0.1 * jax.random.normal(jax.random.fold_in(key, 1), (items, dim))}
  opt = optax.adam(0.05)
  pos_u = jnp.repeat(jnp.arange(users), seen.shape[1])
  pos_i = jnp.asarray(seen.reshape(-1))

  def loss(p, neg):
    u = p["user"][pos_u]
    margin = jnp.sum(u * (p["item"][pos_i] - p["item"][neg]), axis=1)
    return -jnp.mean(jax.nn.log_sigmoid(margin)) + 1e-4 * (
        jnp.sum(p["user"] ** 2) + jnp.sum(p["item"] ** 2)) / users

  @jax.jit
  def step(p, state, key):
    neg = jax.random.randint(key, pos_i.shape, 0, items)
    value, grad = jax.value_and_grad(loss)(p, neg)
    updates, state = opt.update(grad, state, p)
    return optax.apply_updates(p, updates), state, value

  state = opt.init(params)
  for t in range(steps):
    params, state, value = step(params, state, jax.random.fold_in(key, 100 + t))
  print(f"trained {steps} BPR steps, final loss {float(value):.4f}")
  return params


def report(name, user_emb, item_emb, held_out, seen, popularity, k=10):
  out = catalog.evaluate(user_emb, item_emb, held_out, METRICS, exclude_ids=seen, top_k=k,
                         reduce="mean")
  items, users = item_emb.shape[0], user_emb.shape[0]
  beyond = {
      "coverage": jaxrank.coverage(out.top_ids, num_items=items),
      "novelty": jaxrank.mean(jaxrank.novelty(out.top_ids, popularity, users), empty="skip"),
      "personalization": jaxrank.personalization(out.top_ids, num_items=items),
      "intra_list_diversity": jaxrank.mean(jaxrank.intra_list_diversity(out.top_ids, item_emb),
                                           empty="skip"),
  }
  cells = {**out.metrics, **beyond}
  print(f"{name:>8}: " + "  ".join(f"{m} {float(v):.4f}" for m, v in cells.items()))


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--users", type=int, default=2000)
  p.add_argument("--items", type=int, default=5000)
  p.add_argument("--dim", type=int, default=32)
  p.add_argument("--steps", type=int, default=300)
  a = p.parse_args()
  history = interactions(a.users, a.items)
  seen, held_out = history[:, :-2], history[:, -2:]  # the last two interactions are held out
  popularity = jaxrank.item_popularity(np.repeat(np.arange(a.users), seen.shape[1]),
                                       seen.reshape(-1), num_items=a.items)
  params = train(seen, a.items, a.dim, a.steps)
  rng = np.random.default_rng(1)
  report("random", rng.standard_normal((a.users, a.dim)).astype(np.float32),
         rng.standard_normal((a.items, a.dim)).astype(np.float32), held_out, seen, popularity)
  report("MF-BPR", params["user"], params["item"], held_out, seen, popularity)


if __name__ == "__main__":
  main()
