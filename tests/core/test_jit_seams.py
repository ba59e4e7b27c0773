"""The JAX API under transformations, with its inputs given every way a training step gives them.

Issue 22, item 0: labels closed over by a jitted function (not passed as its argument) reached a
host-side NumPy fast path as tracers. Every public metric, soft metric, ``evaluate``,
``MetricState.update`` and ``catalog`` runs here under ``jit`` with labels, ``where``, ``tie_key``
and ``judged`` as arguments, as closed-over device arrays and as closed-over NumPy arrays, and
under ``vmap`` and ``grad``; each gives its eager value.

Issue 25, item 1 (and 22, item 4): under ``jit`` a list with more relevant items than
``max_relevant`` is NaN, and ``empty="skip"`` dropped that NaN as an empty list's, so the mean
came out plausible and wrong. The mean is NaN now, for every metric, through ``evaluate``,
``MetricState``, ``jaxrank.mean`` and the soft losses.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrank
from jaxrank import catalog
from jaxrank._soft import metrics as _soft
from jaxrank._core import table as _table

RNG = np.random.default_rng(0)
S = RNG.normal(size=(3, 7)).astype(np.float32)
S[0, 1] = S[0, 4]  # a tie
GRADES = RNG.integers(0, 3, (3, 7))
GRADES[2] = 0  # an empty list
WHERE = np.ones((3, 7), bool)
WHERE[1, 5:] = False
TIE_KEY = RNG.permutation(21).reshape(3, 7).astype(np.int32)
JUDGED = np.ones((3, 7), bool)
JUDGED[0, :2] = False

FORMS = ("argument", "closed-device", "closed-numpy")


def every_metric(s, y, w, t, j):
  """Every public metric (averaged ties, with where, and judged for those that read it), two
  with ties="first" and a tie_key, every soft metric, evaluate and a MetricState: one dict."""
  out = {}
  for name in _table.NAMES:
    f = getattr(jaxrank, name)
    k = {"k": 3} if _table.METRICS[name].cutoff else {}
    judged = {"judged": j} if _table.reads_judgments(name) else {}
    out[name] = f(s, y, where=w, **k, **judged)
  for name in ("ndcg", "average_precision"):
    out[name + "/first"] = getattr(jaxrank, name)(s, y, ties="first", tie_key=t, k=3)
  for name, f in _soft.FUNCTIONS.items():
    out[name] = f(s, y, k=3, where=w, temperature=0.5)
  for name, v in jaxrank.evaluate(s, y, ["ndcg@3", "map", "bpref", "mrr"], where=w, judged=j,
                                  empty="skip", reduce="mean").items():
    out["evaluate/" + name] = v
  state = jaxrank.MetricState.init(["ndcg@3", "map"], ties="first", empty="skip")
  for name, v in state.update(s, y, where=w, tie_key=t).compute().items():
    out["state/" + name] = v
  return out


_WANT = []


def want():
  """The reference: everything passed as arguments to one jitted function (which worked before;
  the metric tests hold it equal to the eager values)."""
  if not _WANT:
    _WANT.append(jax.jit(every_metric)(S, GRADES.astype(np.float32), WHERE, TIE_KEY, JUDGED))
  return _WANT[0]


def assert_same(got, want):
  assert set(got) == set(want)
  for name in want:
    np.testing.assert_allclose(np.asarray(got[name]), np.asarray(want[name]), rtol=2e-6,
                               atol=1e-7, err_msg=name)


def given(form, *arrays):
  return [jnp.asarray(a) if form == "closed-device" else a for a in arrays]


@pytest.mark.parametrize("form, dtype", [("closed-device", np.float32),
                                         ("closed-numpy", np.float32),
                                         ("closed-device", np.int32)])
def test_every_metric_under_jit(form, dtype):
  """Labels closed over by the jitted function. Float labels take the device label summary,
  integer ones NumPy's (on one CPU device): both must run on concrete values only. (Closed-over
  NumPy arrays become traced constants; labels passed as arguments are the reference.)"""
  y, w, t, j = given(form, GRADES.astype(dtype), WHERE, TIE_KEY, JUDGED)
  got = jax.jit(lambda s: every_metric(s, y, w, t, j))(S)
  assert_same(got, want())


def test_eager_closed_over_values_are_the_reference():
  """The closed-over labels are checked and counted on the host at trace time, as eagerly."""
  y = jnp.asarray(GRADES.astype(np.float32))
  for f, extra in ((jaxrank.ndcg, {}), (jaxrank.bpref, {"judged": jnp.asarray(JUDGED)})):
    np.testing.assert_allclose(jax.jit(lambda s, f=f, extra=extra: f(s, y, **extra))(S),
                               f(S, y, **extra), rtol=1e-6)
  bad = y.at[0, 0].set(-1.0)  # a closed-over negative label is still an error naming it
  with pytest.raises(ValueError, match=r"labels must be >= 0 .* at index \(0, 0\)"):
    jax.jit(lambda s: jaxrank.ndcg(s, bad))(S)


@pytest.mark.parametrize("form", FORMS)
def test_every_metric_under_vmap(form):
  """vmap over a batch of score matrices: the labels mapped with them, or closed over (the same
  labels for every element)."""
  batch = np.stack([S, S])
  if form == "argument":
    got = jax.jit(jax.vmap(every_metric))(batch, *(np.stack([a, a]) for a in (
        GRADES.astype(np.float32), WHERE, TIE_KEY, JUDGED)))
  else:
    y, w, t, j = given(form, GRADES.astype(np.float32), WHERE, TIE_KEY, JUDGED)
    got = jax.jit(jax.vmap(lambda s: every_metric(s, y, w, t, j)))(batch)
  assert_same({name: v[1] for name, v in got.items()}, want())


@pytest.mark.parametrize("form", FORMS)
def test_grad_under_jit(form):
  """Soft metrics have gradients; exact ones are piecewise constant (zero gradient), with the
  labels closed over or passed."""
  def loss(s, y, w):
    soft = sum(jnp.sum(f(s, y, k=3, where=w)) for f in _soft.FUNCTIONS.values())
    exact = sum(jnp.nansum(getattr(jaxrank, name)(s, y, where=w)) for name in ("ndcg", "average_precision"))
    return soft + 0.0 * exact

  y = GRADES.astype(np.float32)
  if form == "argument":
    g = jax.jit(jax.grad(loss))(S, y, WHERE)
  else:
    yy, w = given(form, y, WHERE)
    g = jax.jit(jax.grad(lambda s: loss(s, yy, w)))(S)
  want = jax.jit(jax.grad(loss))(S, y, WHERE)
  assert np.all(np.isfinite(g)) and np.any(g != 0)
  np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("form", FORMS)
def test_catalog_under_jit(form):
  users = RNG.normal(size=(3, 4)).astype(np.float32)
  items = RNG.normal(size=(9, 4)).astype(np.float32)
  rel = np.array([[0, 1], [2, -1], [-1, -1]], np.int32)
  ex = np.array([[5], [-1], [3]], np.int32)

  def run(u, it, r, e):
    out = catalog.evaluate(u, it, r, ["mrr", "ndcg@3"], exclude_ids=e, top_k=2, empty="skip")
    return out.metrics, out.top_ids

  want = run(users, items, rel, ex)
  if form == "argument":
    got = jax.jit(run)(users, items, rel, ex)
  else:
    it, r, e = given(form, items, rel, ex)
    got = jax.jit(lambda u: run(u, it, r, e))(users)
  assert_same(got[0], want[0])
  np.testing.assert_array_equal(got[1], want[1])


# ----------------------------------------------------------------------------------------------
# A list over max_relevant under jit: NaN, never dropped as an empty list.

OVER_S = np.array([[.9, .8, .7, .6, .5, .4], [.1, .9, .3, .4, .2, 0], [.5, .4, .3, .2, .1, 0],
                   [.2, .3, .4, .5, .6, .7]], np.float32)
OVER_Y = np.array([[0, 1, 1, 1, 1, 1], [0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0],
                   [1, 0, 0, 0, 0, 0]])
EVERY = [name + ("@3" if _table.METRICS[name].cutoff else "") for name in _table.NAMES]


def test_issue_example():
  truth = jaxrank.evaluate(OVER_S, OVER_Y, ["mrr"], empty="skip", reduce="mean")["mrr"]
  assert float(truth) == pytest.approx(0.5556, abs=1e-4)
  got = jax.jit(lambda s, y: jaxrank.evaluate(s, y, ["mrr"], max_relevant=2, empty="skip",
                                              reduce="mean"))(OVER_S, OVER_Y)
  assert np.isnan(got["mrr"])  # was 0.5833: the overflowed list dropped as an empty one


def test_overflow_makes_every_skip_mean_nan():
  """Every metric, in evaluate's mean, in jaxrank.mean of its per-list values (in and outside
  the jitted function), and in a MetricState."""
  def means(s, y):
    per_list = jaxrank.evaluate(s, y, EVERY, judged=np.ones((4, 6), bool), max_relevant=2,
                                empty="skip")
    reduced = jaxrank.evaluate(s, y, EVERY, judged=np.ones((4, 6), bool), max_relevant=2,
                               empty="skip", reduce="mean")
    state = jaxrank.MetricState.init(EVERY, max_relevant=2, empty="skip").update(s, y)
    return per_list, reduced, jaxrank.mean(per_list, empty="skip"), state.compute()

  per_list, *reduced = jax.jit(means)(OVER_S, OVER_Y)
  reduced.append(jaxrank.mean(per_list, empty="skip"))
  for name in EVERY:
    assert np.isnan(per_list[name][0]), name  # the overflowed list itself
    assert not np.isnan(per_list[name][1]), name
    for where, out in zip(("evaluate", "jaxrank.mean", "MetricState", "mean outside"), reduced):
      assert np.isnan(out[name]), (name, where)


def test_overflow_makes_the_mean_nan_under_every_policy():
  def means(s, y):
    out = {}
    for empty in ("zero", "nan"):
      out[empty] = (jaxrank.evaluate(s, y, ["map", "ndcg@3"], max_relevant=2, empty=empty,
                                     reduce="mean"),
                    jaxrank.MetricState.init(["map", "ndcg@3"], max_relevant=2, empty=empty)
                    .update(s, y).compute())
    return out

  for empty, outs in jax.jit(means)(OVER_S, OVER_Y).items():
    for out in outs:
      assert all(np.isnan(v) for v in out.values()), empty


def test_without_overflow_skip_still_drops_only_empty_lists():
  want = jaxrank.evaluate(OVER_S, OVER_Y, EVERY, judged=np.ones((4, 6), bool), empty="skip",
                          reduce="mean")
  got = jax.jit(lambda s, y: jaxrank.evaluate(s, y, EVERY, judged=np.ones((4, 6), bool),
                                              max_relevant=5, empty="skip", reduce="mean"))(
      OVER_S, OVER_Y)
  state = jax.jit(lambda st, s, y: st.update(s, y))(
      jaxrank.MetricState.init(EVERY, max_relevant=5, empty="skip"), OVER_S, OVER_Y)
  for name in EVERY:
    assert not np.isnan(want[name]), name
    np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=name)
    if not _table.reads_judgments(name.split("@")[0]):
      np.testing.assert_allclose(state.compute()[name], want[name], rtol=1e-6, err_msg=name)


def test_overflow_outside_jit_is_an_error():
  with pytest.raises(ValueError, match="max_relevant=2 is smaller than the largest number"):
    jaxrank.evaluate(OVER_S, OVER_Y, ["mrr"], max_relevant=2, empty="skip", reduce="mean")
  with pytest.raises(ValueError, match="max_relevant=2 is smaller"):
    jaxrank.MetricState.init(["mrr"], max_relevant=2, empty="skip").update(OVER_S, OVER_Y)


def test_mean_tells_an_overflow_from_an_empty_list():
  from jaxrank._core import formulas as _formulas
  for dtype in (np.float32, np.float64):
    mark = _formulas.overflow_nan(dtype)
    v = np.array([0.5, np.nan, 1.0], dtype)
    assert float(jaxrank.mean(v, empty="skip")) == 0.75
    assert np.isnan(jaxrank.mean(np.append(v, mark), empty="skip"))
    assert np.isnan(jaxrank.mean(np.append(v, mark).astype(np.float64), empty="skip"))
  assert float(jaxrank.mean([1, 2], empty="skip")) == 1.5  # integers have no NaN at all


def test_soft_loss_is_nan_when_a_list_overflows():
  for loss in (jaxrank.soft_ndcg_loss, jaxrank.as_loss(jaxrank.soft_recall)):
    for empty in ("skip", "zero"):
      got = jax.jit(lambda s, y, loss=loss, empty=empty: loss(s, y, max_relevant=2,
                                                              empty=empty))(OVER_S, OVER_Y)
      assert np.isnan(got)
      fine = jax.jit(lambda s, y, loss=loss, empty=empty: loss(s, y, max_relevant=5,
                                                               empty=empty))(OVER_S, OVER_Y)
      np.testing.assert_allclose(fine, loss(OVER_S, OVER_Y, empty=empty), rtol=1e-6)
