"""Eager dense calls start the jitted call with the static options of the calls before them and
check the labels on the host meanwhile (``jaxrank._core.compute._GUESSES``): the result must
always be that of the checked options, and a bad label must still raise."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrank
from jaxrank._core import compute as _compute

METRICS = [["ndcg@10"], ["ndcg@10", "map@10", "mrr@10", "precision@10", "recall@10"],
           ["map", "mrr", "r_precision"]]


def _data(seed, most, lists=6, items=300, dtype=np.int32):
  """Scores with ties, and labels whose fullest list has ``most`` positives."""
  rng = np.random.default_rng(seed)
  scores = rng.integers(0, 40, (lists, items)).astype(np.float32)
  labels = np.zeros((lists, items), dtype)
  for i in range(lists):
    k = most if i == 0 else int(rng.integers(0, most + 1))
    labels[i, rng.choice(items, k, replace=False)] = rng.integers(1, 4, k)
  return scores, labels


@pytest.fixture
def fresh(monkeypatch):
  """A process without guesses, and a counter of the jitted calls."""
  monkeypatch.setattr(_compute, "_GUESSES", _compute._Guesses())
  calls = []
  inner = _compute._dense_values

  def counted(*args, **kwargs):
    calls.append(kwargs["m"])
    return inner(*args, **kwargs)

  monkeypatch.setattr(_compute, "_dense_values", counted)
  return calls


def _unguessed(scores, labels, metrics, **options):
  saved = _compute._GUESSES
  _compute._GUESSES = _compute._Guesses()
  try:
    return jaxrank.evaluate(scores, labels, metrics, **options)
  finally:
    _compute._GUESSES = saved


# Every (tie policy, label dtype) pair, each metric set in four of them: the compilations of
# the full product cost a minute of CI for no other case.
CASES = [(METRICS[i % 3], ties, dtype) for i, (ties, dtype) in enumerate(
    (t, d) for t in ["average", "first", "pessimistic"]
    for d in [np.int32, np.int8, np.bool_, np.float32])]


@pytest.mark.parametrize("metrics,ties,dtype", CASES)
def test_every_call_gives_the_checked_options_result(fresh, metrics, ties, dtype):
  # Few positives, then many (a wrong guess: too few slots), then few again (too many).
  sequence = [3, 3, 3, 200, 200, 200, 3, 3, 40, 3]
  for seed, most in enumerate(sequence):
    scores, labels = _data(seed, most)
    labels = labels.astype(dtype)
    got = jaxrank.evaluate(scores, labels, metrics, ties=ties)
    want = _unguessed(scores, labels, metrics, ties=ties)
    for name in metrics:
      np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]), err_msg=name)


def test_a_settled_signature_runs_one_call_and_a_wrong_guess_two(fresh):
  few, many = _data(0, 3), _data(1, 200)
  for _ in range(3):
    jaxrank.ndcg(*few, k=10)
  assert len(fresh) == 3  # the first two calls check first, the third is started on a guess
  fresh.clear()
  jaxrank.ndcg(*few, k=10)
  assert len(fresh) == 1
  fresh.clear()
  out = jaxrank.ndcg(*many, k=10)
  assert len(fresh) == 2 and fresh[0] < fresh[1]  # the guess had too few slots: run again
  np.testing.assert_array_equal(np.asarray(out), np.asarray(_unguessed(*many, ["ndcg@10"])[
      "ndcg@10"]))


def test_bad_labels_raise_after_a_guess(fresh):
  scores, labels = _data(0, 5)
  for _ in range(3):
    jaxrank.ndcg(scores, labels, k=10)
  bad = labels.copy()
  bad[2, 7] = -1
  with pytest.raises(ValueError, match="labels"):
    jaxrank.ndcg(scores, bad, k=10)
  for _ in range(3):
    jaxrank.ndcg(scores, labels, k=10, max_relevant=8)
  with pytest.raises(ValueError, match="max_relevant=8"):
    jaxrank.ndcg(*_data(1, 20), k=10, max_relevant=8)


def test_labels_closed_over_by_jit_after_a_guess(fresh):
  scores, labels = _data(0, 5)
  for _ in range(3):
    jaxrank.ndcg(scores, labels, k=10)
  y = jnp.asarray(_data(1, 200)[1])
  got = jax.jit(lambda s: jaxrank.ndcg(s, y, k=10))(jnp.asarray(scores))
  want = _unguessed(scores, np.asarray(y), ["ndcg@10"])["ndcg@10"]
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_labels_checked_by_xla_are_not_guessed(fresh):
  scores, labels = _data(0, 5)
  for _ in range(4):
    jaxrank.ndcg(scores, labels.astype(np.float16), k=10)
  assert fresh == [fresh[0]] * 4 and not _compute._GUESSES._last  # checked in order


def test_wrong_guesses_make_a_signature_wait_longer():
  g = _compute._Guesses()
  a, b = {"m": 16}, {"m": 24}
  wasted, static = 0, a
  for _ in range(400):  # the worst stream: the options change whenever a guess is made
    guess = g.guess("sig")
    if guess is not None:
      static = b if guess == a else a
      wasted += 1
    g.record("sig", static, guessed=guess is not None)
  # needed 2, 4, ..., 64: five wrong guesses in the first 70 calls, then one per 65 calls
  assert 5 <= wasted <= 11
  g.record("other", a, guessed=False)
  g.record("other", a, guessed=False)
  assert g.guess("other") == a  # two calls alike: guessed


def test_guesses_are_bounded():
  g = _compute._Guesses(size=4)
  for i in range(10):
    g.record(i, {"m": 1}, guessed=False)
  assert list(g._last) == [6, 7, 8, 9]
