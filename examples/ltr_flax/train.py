"""Learning to rank with Flax + Optax: softmax cross-entropy vs jaxrank's soft NDCG vs ApproxNDCG.

    python examples/ltr_flax/train.py [--data DIR] [--epochs 20] [--plot ndcg10.png]

``--data`` is a directory with ``rank.train``/``rank.test`` LibSVM files and their ``.query``
group files (default: ``data/`` beside this script, LightGBM's lambdarank example, MIT, see
``data/README.md``), or any LibSVM ranking files given as ``--train``/``--test``. Each query
becomes one list padded to the longest query, with a ``where`` mask. One small MLP is trained
per loss with Adam; after every epoch a jitted eval step adds each batch of test queries to a
``jaxrank.MetricState`` (donated, so updated in place) holding the exact NDCG@1/3/5/10 (gain
2^y - 1, as LightGBM; queries without relevant documents score 0), and reads the means. The
script prints a table and saves a plot of test NDCG@10 per epoch. If LightGBM is installed its
lambdarank model, trained on the same split, is evaluated by the same jaxrank code as a
reference row.

Needs ``pip install -e .[examples]`` (flax, optax, matplotlib).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

try:
  import flax.linen as nn
  import optax
except ImportError as e:  # one line, not a traceback
  sys.exit(f"train.py: error: {e.name} is missing; install the examples extra: "
           f"pip install -e \".[examples]\" (flax, optax; matplotlib for --plot)")
import jax
import jax.numpy as jnp
import numpy as np

import jaxrank

DEFAULT_DATA = Path(__file__).resolve().parent / "data"
CUTOFFS = (1, 3, 5, 10)


# ----------------------------------------------------------------------------------------------
# Data: LibSVM rows + a .query file of group sizes -> padded lists.


def load_libsvm(path: Path, num_features: int | None = None):
  """Rows ``label idx:value ...`` (1-based indices) -> (features [docs, F], labels [docs])."""
  labels, rows = [], []
  for line in Path(path).read_text().splitlines():
    line = line.split("#", 1)[0].split()
    if not line:
      continue
    labels.append(float(line[0]))
    rows.append({int(k): float(v) for k, v in (t.split(":") for t in line[1:] if ":" in t
                                               and not t.startswith("qid"))})
  width = num_features or max((max(r, default=0) for r in rows), default=0)
  x = np.zeros((len(rows), width), np.float32)
  for i, r in enumerate(rows):
    for k, v in r.items():
      if k <= width:
        x[i, k - 1] = v
  return x, np.asarray(labels, np.float32)


def to_lists(x, y, groups, length):
  """Cuts documents into queries of ``groups`` sizes, padded to ``length``."""
  q = len(groups)
  feats = np.zeros((q, length, x.shape[1]), np.float32)
  labels = np.zeros((q, length), np.float32)
  where = np.zeros((q, length), bool)
  start = 0
  for i, g in enumerate(groups):
    feats[i, :g], labels[i, :g], where[i, :g] = x[start:start + g], y[start:start + g], True
    start += g
  return feats, labels, where


def load(train: Path, test: Path):
  groups = {name: np.loadtxt(f"{path}.query", dtype=np.int64, ndmin=1)
            for name, path in (("train", train), ("test", test))}
  x_train, y_train = load_libsvm(train)
  x_test, y_test = load_libsvm(test, x_train.shape[1])
  length = int(max(groups["train"].max(), groups["test"].max()))
  return ((x_train, y_train, groups["train"]), (x_test, y_test, groups["test"]),
          to_lists(x_train, y_train, groups["train"], length),
          to_lists(x_test, y_test, groups["test"], length))


# ----------------------------------------------------------------------------------------------
# Model and losses.


class MLP(nn.Module):
  hidden: int = 64

  @nn.compact
  def __call__(self, x):
    x = nn.relu(nn.Dense(self.hidden)(x))
    x = nn.relu(nn.Dense(self.hidden)(x))
    return nn.Dense(1)(x)[..., 0]


def approx_ndcg_all_items(scores, labels, where, temperature=1.0):
  """ApproxNDCG as in Rax/TF-Ranking: every item's sigmoid rank from an [n, n] matrix."""
  diff = (scores[..., None, :] - scores[..., :, None]) / temperature  # [.., i, j] = s_j - s_i
  pair = jnp.where(where[..., None, :] & ~jnp.eye(scores.shape[-1], dtype=bool),
                   jax.nn.sigmoid(diff), 0.0)
  ranks = 1.0 + jnp.sum(pair, axis=-1)
  gains = jnp.where(where, 2.0**labels - 1.0, 0.0)
  dcg = jnp.sum(gains / jnp.log2(1.0 + ranks), axis=-1)
  ideal = jnp.sum(-jnp.sort(-gains, axis=-1) / jnp.log2(2.0 + jnp.arange(scores.shape[-1])), -1)
  ndcg = jnp.where(ideal > 0, dcg / jnp.where(ideal > 0, ideal, 1.0), 0.0)
  return 1.0 - jnp.sum(ndcg) / jnp.maximum(jnp.sum(ideal > 0), 1)


LOSSES = {
    "softmax CE (optax)": lambda s, y, w: optax.losses.ranking_softmax_loss(s, y, where=w),
    "soft_ndcg sigmoid T=1": lambda s, y, w: jaxrank.soft_ndcg_loss(
        s, y, where=w, gain="exp2", temperature=1.0, operator="sigmoid", empty="skip"),
    "soft_ndcg fast_l2 eps=1": lambda s, y, w: jaxrank.soft_ndcg_loss(
        s, y, where=w, gain="exp2", temperature=1.0, operator="fast_l2", empty="skip"),
    "soft_ndcg neuralsort T=1": lambda s, y, w: jaxrank.soft_ndcg_loss(
        s, y, where=w, gain="exp2", temperature=1.0, operator="neuralsort", empty="skip"),
    "ApproxNDCG O(n^2), T=1": approx_ndcg_all_items,
}


NAMES = [f"ndcg@{k}" for k in CUTOFFS]
METRICS = jaxrank.MetricState.init(NAMES, gain="exp2")  # sums and query counts, all zero


def means(state):
  out = state.compute()
  return np.array([float(out[name]) for name in NAMES])


def evaluate(scores, labels, where):
  """Exact NDCG@k means of scored lists (the LightGBM reference row)."""
  return means(METRICS.update(scores, labels, where=where))


def train(loss_fn, train_lists, test_lists, *, epochs, batch, lr, seed):
  feats, labels, where = (jnp.asarray(a) for a in train_lists)
  test_feats, test_labels, test_where = (jnp.asarray(a) for a in test_lists)
  model = MLP()
  params = model.init(jax.random.key(seed), feats[:1])
  opt = optax.adam(lr)
  state = opt.init(params)

  @jax.jit
  def step(params, state, x, y, w):
    loss, grads = jax.value_and_grad(lambda p: loss_fn(model.apply(p, x), y, w))(params)
    updates, state = opt.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss

  # Test queries in batches of `batch`; the last one padded with lists the state does not count.
  test_batches = []
  for i in range(0, len(test_feats), batch):
    parts = [np.asarray(a[i:i + batch]) for a in (test_feats, test_labels, test_where)]
    keep = np.arange(batch) < len(parts[0])
    parts = [np.concatenate([p, np.zeros((batch - len(p), *p.shape[1:]), p.dtype)])
             for p in parts]
    test_batches.append((*parts, keep))

  @functools.partial(jax.jit, donate_argnums=0)
  def eval_step(metrics, params, x, y, w, keep):
    return metrics.update(model.apply(params, x), y, where=w, list_mask=keep)

  def test_ndcg(params):
    metrics = METRICS.reset()  # fresh buffers: eval_step donates (updates in place) its state
    for x, y, w, keep in test_batches:
      metrics = eval_step(metrics, params, x, y, w, keep)
    return means(metrics)

  rng = np.random.default_rng(seed)
  history = []
  for _ in range(epochs):
    order = rng.permutation(len(feats))
    for i in range(0, len(order) - batch + 1, batch):
      idx = order[i:i + batch]
      params, state, _ = step(params, state, feats[idx], labels[idx], where[idx])
    history.append(np.asarray(test_ndcg(params)))
  return np.stack(history)


def lightgbm_reference(train_raw, test_raw, test_lists, seed):
  try:
    import lightgbm
  except ImportError:
    return None
  (x, y, g), (xt, _, _) = train_raw, test_raw
  model = lightgbm.LGBMRanker(objective="lambdarank", n_estimators=100, learning_rate=0.1,
                              random_state=seed, verbose=-1, n_jobs=2)
  model.fit(x, y, group=g)
  pred = model.predict(xt).astype(np.float32)
  _, labels, where = test_lists
  scores = np.full(where.shape, -np.inf, np.float32)
  scores[where] = pred  # documents are stored query by query, in file order
  return evaluate(jnp.asarray(np.where(where, scores, 0.0)), labels, where)


def save_plot(curves, reference, path):
  """Test NDCG@10 per epoch of every loss (``{name: [epochs]}``), LightGBM's as a line."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  fig, ax = plt.subplots(figsize=(6, 3.6), dpi=80)
  for name, curve in curves.items():
    ax.plot(np.arange(1, len(curve) + 1), curve, label=name)
  if reference is not None:
    ax.axhline(reference[3], color="gray", linestyle="--", label="LightGBM lambdarank")
  ax.set_xlabel("epoch")
  ax.set_ylabel("test NDCG@10 (exact, jaxrank)")
  ax.legend(fontsize=7)
  fig.tight_layout()
  fig.savefig(path)
  plt.close(fig)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
  parser.add_argument("--train", type=Path, help="LibSVM training file (default DATA/rank.train)")
  parser.add_argument("--test", type=Path, help="LibSVM test file (default DATA/rank.test)")
  parser.add_argument("--epochs", type=int, default=20)
  parser.add_argument("--batch", type=int, default=16, help="queries per step")
  parser.add_argument("--lr", type=float, default=3e-3)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--plot", type=Path, metavar="PATH",
                      help="save a plot of test NDCG@10 per epoch (PNG) to PATH")
  args = parser.parse_args()
  started = time.perf_counter()
  train_path = args.train or args.data / "rank.train"
  test_path = args.test or args.data / "rank.test"
  missing = [str(p) for path in (train_path, test_path) for p in (path, Path(f"{path}.query"))
             if not p.is_file()]
  if missing:
    parser.exit(2, f"train.py: error: not found: {', '.join(missing)}; pass --data DIR (a folder "
                   f"with rank.train, rank.test and their .query files) or --train/--test FILE\n")
  if args.plot is not None:
    try:
      import matplotlib  # noqa: F401
    except ImportError:
      parser.exit(1, "train.py: error: --plot needs matplotlib: pip install -e \".[examples]\"\n")
  train_raw, test_raw, train_lists, test_lists = load(train_path, test_path)
  print(f"train: {len(train_lists[0])} queries, test: {len(test_lists[0])} queries, "
        f"padded to {train_lists[0].shape[1]} documents, {train_lists[0].shape[2]} features; "
        f"jax {jax.__version__} on {jax.default_backend()}")

  results, curves = {}, {}
  for name, loss_fn in LOSSES.items():
    start = time.perf_counter()
    history = train(loss_fn, train_lists, test_lists, epochs=args.epochs, batch=args.batch,
                    lr=args.lr, seed=args.seed)
    results[name] = (history[-1], history[:, 3].max(), time.perf_counter() - start)
    curves[name] = history[:, 3]
  reference = lightgbm_reference(train_raw, test_raw, test_lists, args.seed)

  header = f"| loss | {' | '.join(f'NDCG@{k}' for k in CUTOFFS)} | best NDCG@10 | time |"
  print(header)
  print("|" + "---|" * (len(CUTOFFS) + 3))
  for name, (last, best, seconds) in results.items():
    print(f"| {name} | {' | '.join(f'{v:.4f}' for v in last)} | {best:.4f} | {seconds:.1f} s |")
  if reference is not None:
    row = " | ".join(f"{v:.4f}" for v in reference)
    print(f"| LightGBM lambdarank (100 trees, reference) | {row} | - | - |")

  if args.plot is not None:
    save_plot(curves, reference, args.plot)
    print(f"saved {args.plot}")
  print(f"{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
  main()
