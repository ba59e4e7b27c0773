"""The CLU and metrax adapters against the real packages (clu, google-metrax: [test] extra)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrank

clu_metrics = pytest.importorskip("clu.metrics", reason="clu is in the [test] extra")
metrax = pytest.importorskip("metrax", reason="google-metrax is in the [test] extra")
flax = pytest.importorskip("flax")

from jaxrank.adapters import clu_metric, metrax_metric  # noqa: E402


def batches(seed=0, steps=3, lists=6, n=10):
  rng = np.random.default_rng(seed)
  out = []
  for _ in range(steps):
    s = rng.random((lists, n)).astype(np.float32)  # no ties: metrax sorts
    y = (rng.integers(0, 3, size=(lists, n)) * (rng.random((lists, n)) < 0.3)).astype(np.float32)
    out.append((jnp.asarray(s), jnp.asarray(y)))
  return out


def test_clu_collection_with_a_loss_average_under_jit():
  Metrics = flax.struct.dataclass(type("Metrics", (clu_metrics.Collection,), {
      "__annotations__": {"loss": clu_metrics.Average.from_output("loss"),
                          "ndcg": clu_metric("ndcg@5", scores="logits"),
                          "both": clu_metric(["map", "mrr"], scores="logits", empty="skip")}}))

  @jax.jit
  def eval_step(metrics, logits, labels):
    return metrics.merge(Metrics.single_from_model_output(
        logits=logits, labels=labels, loss=jnp.mean(logits)))

  m = Metrics.empty()
  bs = batches()
  for s, y in bs:
    m = eval_step(m, s, y)
  out = m.compute()
  s_all, y_all = (jnp.concatenate(p) for p in zip(*bs))
  want = jaxrank.evaluate(s_all, y_all, ["ndcg@5"], reduce="mean")
  assert float(out["ndcg"]) == pytest.approx(float(want["ndcg@5"]), abs=1e-6)
  skip = jaxrank.evaluate(s_all, y_all, ["map", "mrr"], empty="skip", reduce="mean")
  assert {k: float(v) for k, v in out["both"].items()} == pytest.approx(
      {k: float(v) for k, v in skip.items()}, abs=1e-6)


def test_clu_gather_and_reduce_over_a_device_axis():
  NDCG = clu_metric("ndcg@3")
  bs = batches(1, steps=4)
  per_device = [NDCG.from_model_output(scores=s, labels=y) for s, y in bs]
  stacked = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *per_device)  # as after all_gather
  s_all, y_all = (jnp.concatenate(p) for p in zip(*bs))
  want = float(jaxrank.evaluate(s_all, y_all, ["ndcg@3"], reduce="mean")["ndcg@3"])
  assert float(stacked.reduce().compute()) == pytest.approx(want, abs=1e-6)
  with pytest.raises(TypeError, match="needs labels"):
    NDCG.from_model_output(scores=bs[0][0])


@pytest.mark.parametrize("name,theirs,options", [
    ("ndcg@5", "NDCGAtK", dict(gain="exp2", ties="first")),
    ("precision@5", "PrecisionAtK", dict(ties="first", precision_denominator="min_k_n")),
    ("recall@5", "RecallAtK", dict(ties="first")),
])
def test_metrax_adapter_equals_metrax_over_merged_batches(name, theirs, options):
  Mine = metrax_metric(name, **options)
  Theirs = getattr(metrax, theirs)
  bs = batches(2)
  mine = theirs_m = None
  for s, y in bs:
    y = jnp.minimum(y, 1.0) if theirs != "NDCGAtK" else y  # binary labels for P/R
    a = Mine.from_model_output(s, y)
    b = Theirs.from_model_output(predictions=s, labels=y, ks=jnp.array([5]))
    mine = a if mine is None else mine.merge(a)
    theirs_m = b if theirs_m is None else theirs_m.merge(b)
  assert float(mine.compute()) == pytest.approx(float(theirs_m.compute()[0]), abs=1e-6)
