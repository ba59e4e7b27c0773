"""The CLU and metrax adapters against the real packages (clu, google-metrax: [test] extra)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrank

clu_metrics = pytest.importorskip("clu.metrics", reason="clu is in the [test] extra")
clu_values = pytest.importorskip("clu.values", reason="clu is in the [test] extra")
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
  # Several names: a Collection, subclassed to add the loss and a one-metric field.
  Metrics = flax.struct.dataclass(type("Metrics", (
      clu_metric(["map", "mrr"], scores="logits", empty="skip"),), {
      "__annotations__": {"loss": clu_metrics.Average.from_output("loss"),
                          "ndcg": clu_metric("ndcg@5", scores="logits")}}))

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
  assert sorted(out) == ["loss", "map", "mrr", "ndcg"]  # one scalar per metric, none nested
  assert {k: float(out[k]) for k in skip} == pytest.approx(
      {k: float(v) for k, v in skip.items()}, abs=1e-6)
  values = m.compute_values()
  assert sorted(values) == sorted(out)
  assert all(isinstance(v, clu_values.Scalar) and np.ndim(v.value) == 0
             for v in values.values())


def test_clu_several_metrics_give_one_scalar_each():
  """compute() was {"field": {name: value}}, and compute_values() one Scalar of that dict:
  CLU's writers (write_scalars, write_values) take one scalar per name."""
  Rank = clu_metric(["ndcg@3", "map", "recall@5"])
  bs = batches(3)
  m = Rank.empty()
  for s, y in bs:
    m = m.merge(Rank.single_from_model_output(scores=s, labels=y))
  s_all, y_all = (jnp.concatenate(p) for p in zip(*bs))
  want = jaxrank.evaluate(s_all, y_all, ["ndcg@3", "map", "recall@5"], reduce="mean")
  out = m.compute()
  assert list(out) == ["ndcg@3", "map", "recall@5"]
  assert {k: float(v) for k, v in out.items()} == pytest.approx(
      {k: float(v) for k, v in want.items()}, abs=1e-6)
  values = m.compute_values()
  assert list(values) == list(out)
  assert all(isinstance(v, clu_values.Scalar) and float(v.value) == pytest.approx(float(out[k]))
             for k, v in values.items())
  # gathered over a device axis, as in pmap
  stacked = jax.tree_util.tree_map(
      lambda *x: jnp.stack(x), *[Rank.single_from_model_output(scores=s, labels=y)
                                 for s, y in bs])
  assert {k: float(v) for k, v in stacked.reduce().compute().items()} == pytest.approx(
      {k: float(v) for k, v in want.items()}, abs=1e-6)
  # nested as a field of another collection: a clear error, not an AttributeError
  Outer = clu_metrics.Collection.create(rank=Rank)
  with pytest.raises(TypeError, match=r"is a clu.metrics.Collection \(one scalar per metric\)"):
    Outer.single_from_model_output(scores=bs[0][0], labels=bs[0][1])
  # a field named like a metric would hide it
  Clash = flax.struct.dataclass(type("Clash", (Rank,), {
      "__annotations__": {"map": clu_metrics.Average.from_output("loss")}}))
  c = Clash.single_from_model_output(scores=bs[0][0], labels=bs[0][1], loss=jnp.ones(3))
  with pytest.raises(ValueError, match=r"field\(s\) \['map'\] have the name of a jaxrank"):
    c.compute()


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
