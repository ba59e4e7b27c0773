"""The host ranker's sorts within groups (``jaxrank._host.ranks``): every path (keys already in
order, the padded block, the global sort) gives the permutation ``np.lexsort`` gives."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxrank._host import ranks as hostranks


def _grouped(sizes: list[int], keys: list[int]) -> tuple[np.ndarray, np.ndarray]:
  group = np.repeat(np.arange(len(sizes)), sizes)
  return group, np.resize(np.asarray(keys or [0], np.int64), group.size)


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(0, 12), min_size=1, max_size=8),
       keys=st.lists(st.integers(-3, 3), max_size=40), presort=st.booleans(),
       stable=st.booleans())
def test_order_within_sorts_each_group(sizes, keys, presort, stable):
  group, key = _grouped(sizes, keys)
  if presort:  # in order within each group already (a run file in rank order)
    key = key[np.lexsort((key, group))]
  order = hostranks.order_within(group, key, len(sizes), stable=stable)
  assert sorted(order.tolist()) == list(range(group.size))
  assert np.array_equal(group[order], group)
  want = np.lexsort((key, group))
  if stable:
    assert np.array_equal(order, want)
  else:
    assert np.array_equal(key[order], key[want])


@pytest.mark.parametrize("key", [[5, 4, 4, 1], [1, 1, 1, 1], [1, 2, 2, 3]])
def test_order_within_keys_in_order_give_the_identity(key):
  group = np.zeros(4, np.int64)
  key = np.asarray(key, np.int64)
  order = hostranks.order_within(group, -key, 1)
  assert np.array_equal(order, np.lexsort((-key, group)))
  # the same keys in two groups: only their order inside each group counts
  two = hostranks.order_within(np.r_[group, group + 1], np.r_[-key, -key], 2)
  assert np.array_equal(two, np.lexsort((np.r_[-key, -key], np.r_[group, group + 1])))


def test_order_within_empty():
  empty = np.zeros(0, np.int64)
  assert hostranks.order_within(empty, empty, 0).size == 0
