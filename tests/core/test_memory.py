"""Temporary memory of the compiled kernels (XLA's memory_analysis), not their speed."""

import jax
import jax.numpy as jnp
import pytest

import jaxrank

MiB = 2**20


def temp_bytes(fn, *shapes):
  compiled = jax.jit(fn).lower(*shapes).compile()
  analysis = compiled.memory_analysis()
  if analysis is None:
    pytest.skip("this backend reports no memory analysis")
  return analysis.temp_size_in_bytes


def spec(shape, dtype=jnp.float32):
  return jax.ShapeDtypeStruct(shape, dtype)


@pytest.mark.parametrize("ties", ["average", "first"])
def test_sparse_form_memory_does_not_grow_with_the_catalog(ties):
  lists, relevant, k = 2000, 16, 10

  def ndcg(scores, ids):
    return jaxrank.ndcg(jaxrank.from_sparse(scores, ids, ties=ties), k=k, ties=ties)

  sizes = {n: temp_bytes(ndcg, spec((lists, n)), spec((lists, relevant), jnp.int32))
           for n in (4_000, 64_000)}
  # A [lists, relevant, n] array would be 0.5 GB (bool) at n = 4,000 and grow 16x with n;
  # a single copy of the scores would be 32 MB and 512 MB. The kernels walk the catalog in
  # bounded chunks, so only O(lists x (relevant + k)) plus a fixed chunk buffer remains.
  bound = 40 * MiB + 64 * lists * (relevant + k)
  assert sizes[4_000] <= bound and sizes[64_000] <= bound, sizes
  assert sizes[64_000] <= 1.05 * sizes[4_000], sizes


@pytest.mark.parametrize("method", ["count", "sort"])
def test_dense_form_memory_is_linear_in_the_input(method):
  lists, relevant = 2000, 64

  def metrics(scores, labels):
    return jaxrank.evaluate(scores, labels, ["ndcg@10", "map", "mrr", "p@10", "r@10"],
                            max_relevant=relevant, method=method)

  for n in (2_000, 16_000):
    used = temp_bytes(metrics, spec((lists, n)), spec((lists, n), jnp.int32))
    one_copy = lists * n * 4
    # O(lists x n): a few copies of the scores, never lists x relevant x n (64x one copy).
    assert used <= 4 * one_copy + 40 * MiB, (n, used, one_copy)


@pytest.mark.parametrize("masked", [False, True])
def test_cut_path_holds_at_most_one_copy_of_the_scores(masked):
  """Metrics that all have a cutoff: one top_k operand and O(lists x slots), whatever branch
  the batch takes. XLA's CPU backend sizes one scratch buffer for every branch of the kernel,
  and glibc maps one over 32 MiB afresh on every call: three copies of the scores there (the
  pass that counts a list's ties at the cut) cost 4,500 page faults a call at 4,000 x 1,000."""
  lists, relevant, n = 2000, 64, 16_000

  def metrics(scores, labels, where):
    return jaxrank.evaluate(scores, labels, ["ndcg@10", "map@10", "mrr@10", "p@10", "r@10"],
                            where=where if masked else None, max_relevant=relevant)

  used = temp_bytes(metrics, spec((lists, n)), spec((lists, n), jnp.int32),
                    spec((lists, n), jnp.bool_))
  one_copy, slots = lists * n * 4, lists * relevant * 4
  assert used <= one_copy + 32 * slots, (used / one_copy, (used - one_copy) / slots)
