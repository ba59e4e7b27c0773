"""The rank core's form: :class:`Ranks` and :class:`Judgments`, holding NumPy or JAX arrays.

Defined here without JAX, so the formulas (:mod:`jaxrank._core.formulas`) can read Ranks of NumPy
arrays on the host without importing it; :mod:`jaxrank._core.ranks`, which builds them with JAX
kernels, registers both classes as JAX pytrees when it is imported (``lo``, ``hi``, ``grades``,
``num_items``, ``overflow``, ``judged`` are leaves; ``size`` and ``resolved`` static). What each
field holds is described in :mod:`jaxrank._core.ranks`.

Example:
  >>> import numpy as np
  >>> from jaxrank._core.rankform import Ranks
  >>> r = Ranks(lo=np.array([[2, 4]], np.int32), hi=np.array([[3, 4]], np.int32),
  ...           grades=np.array([[1.0, 0.0]], np.float32), num_items=np.array([3], np.int32),
  ...           overflow=np.array([False]), size=3)
  >>> r.shape, r.resolved, r.judged
  ((1,), False, None)
"""

from __future__ import annotations

import dataclasses
from typing import Any

# A field holds a jax.Array (built by the rank core, or traced under jit) or, on the host path, a
# np.ndarray: the formulas read both (jaxrank._core.xp). Typed Any, so a caller's own array type
# flows through (a Ranks from from_dense reads as JAX arrays, one built on the host as NumPy's).
Array = Any

TIES = ("average", "optimistic", "pessimistic", "first")

# Judgments.kind values.
UNUSED, ZERO, POOLED = 0, 1, 2


@dataclasses.dataclass(frozen=True)
class Judgments:
  """The judged items of each list that are not relevant slots: the "judged, grade 0" slots.

  * ``lo[..., z]``, ``hi[..., z]`` (int32): their tie bounds, as :class:`Ranks`' (``size + 1``
    for an item that is not ranked: padding, or a judged id absent from a ranked list);
  * ``kind[..., z]`` (int8): ``ZERO`` (1) judged with grade 0, ``POOLED`` (2) in the pool but
    unjudged (a negative judgment), ``UNUSED`` (0) an empty slot.

  Items that are neither relevant slots nor here are not judged. Built by the same counting pass
  as the relevant slots (their indices are appended to the slots), only when judgments are given.
  """

  lo: Array
  hi: Array
  kind: Array


@dataclasses.dataclass(frozen=True)
class Ranks:
  """Ranks of the relevant items of a batch of lists (see :mod:`jaxrank._core.ranks`).

  ``resolved`` is True when ties were already broken at construction (``ties="first"`` or an input
  form without scores), so ``lo == hi`` everywhere. Build one with :func:`from_dense`,
  :func:`from_sparse`, :func:`from_ranked_ids` or :func:`from_candidates`; every metric and
  :func:`jaxrank.evaluate` accept it in place of ``(scores, labels)``.

  Example (the two relevant items tie for ranks 2-3):
    >>> import jaxrank
    >>> r = jaxrank.from_dense([[0.9, 0.8, 0.8, 0.1]], [[0, 2, 1, 0]])
    >>> r.lo.tolist(), r.hi.tolist(), r.grades.tolist(), r.shape
    ([[2, 2]], [[3, 3]], [[2.0, 1.0]], (1,))
    >>> float(jaxrank.reciprocal_rank(r)[0])
    0.5
  """

  lo: Array
  hi: Array
  grades: Array
  num_items: Array
  overflow: Array
  size: int
  resolved: bool = False
  judged: Judgments | None = None

  @property
  def shape(self) -> tuple[int, ...]:
    """The leading (batch) shape: the shape of every per-list metric."""
    return tuple(self.num_items.shape)


def bucket(count: int, cap: int | None = None) -> int:
  """Rounds a count up to 1, 2, 3, 4, 6, 8, 12, 16, 24, ... (at most 1.5x), capped at ``cap``.

  Few distinct slot counts means few compilations for a stream of differently sized inputs
  (the rank core's slots here, and the host paths' slots: :mod:`jaxrank._host.batches`).
  """
  b = 1
  while b < count:
    b = b + max(1, b // 2) if b & (b - 1) == 0 else b * 4 // 3
  return max(1, b if cap is None else min(b, cap))
