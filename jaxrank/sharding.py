"""Many devices: lists split over one mesh axis, a large catalog split over another.

Every jaxrank entry point already accepts arrays sharded with :class:`jax.sharding.NamedSharding`
when the *lists* (users, queries: the leading axes) are split over a mesh axis and each list's
items stay on one device: every computation is per list, so XLA partitions it with no
communication and the results come back sharded like the lists. Two things need more than that,
and live here:

* :func:`from_sparse_sharded` -- the sparse-catalog form with the *catalog* split too, over a
  second mesh axis. A rank is ``1 + #{items above}``, a sum over item blocks, so each device
  counts against its own slice of the catalog and one ``psum`` over the item axis adds the counts
  (the relevant items' own scores are fetched the same way: one ``psum`` of ``[lists, r]``
  keys). No device ever holds a whole list of scores, so a catalog larger than one device's
  memory works; the result is a :class:`jaxrank.Ranks` sharded over the list axis only.
* :func:`pad_lists` -- lists padded to a multiple of the devices on the list axis (``jax``
  shards only dimensions that divide evenly), with the mask to pass to
  :meth:`jaxrank.MetricState.update` as ``list_mask`` so the padding lists are not counted.

Build meshes with ``axis_types=(jax.sharding.AxisType.Auto, ...)`` (or :class:`jax.sharding.Mesh`
directly): with JAX 0.10's default *explicit* axes, an indexed read of a constant table by a
sharded index (as the tie-aware formulas do) asks for an output sharding and fails.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P
from jax.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core import counting as _counting
from jaxrank._core import ranks as _ranks
from jaxrank._core.ranks import Ranks

__all__ = ["from_sparse_sharded", "pad_lists"]


def pad_lists(x: ArrayLike, multiple: int, *,
              value: float = 0) -> tuple[np.ndarray, np.ndarray]:
  """``x`` with its first axis padded (with ``value``) to a multiple of ``multiple``, and the
  ``[lists]`` bool mask of the original lists.

  Example:
    >>> from jaxrank.sharding import pad_lists
    >>> x, mask = pad_lists([[0.5, 0.1], [0.2, 0.3], [0.9, 0.0]], 2)
    >>> x.shape, mask.tolist()
    ((4, 2), [True, True, True, False])
  """
  x = np.asarray(x)
  if isinstance(multiple, bool) or not isinstance(multiple, (int, np.integer)) or multiple < 1:
    raise ValueError(f"multiple must be a positive int, got {multiple!r}")
  extra = -x.shape[0] % multiple
  pad = np.full((extra, *x.shape[1:]), value, x.dtype)
  return np.concatenate([x, pad]), np.arange(x.shape[0] + extra) < x.shape[0]


def from_sparse_sharded(scores: ArrayLike, relevant_ids: ArrayLike,
                        relevant_grades: ArrayLike | None = None, where: ArrayLike | None = None,
                        *, mesh: Mesh, lists_axis: str | None = "data", items_axis: str = "model",
                        ties: str = "average") -> Ranks:
  r""":func:`jaxrank.from_sparse` with the catalog split over ``items_axis`` of ``mesh``.

  ``scores`` (and ``where``) ``[lists, n]`` are sharded ``P(lists_axis, items_axis)``; the ids
  and grades ``[lists, r]`` ``P(lists_axis)``. Each device counts, for every relevant item, the
  valid items of its catalog slice scored above (and at or above) it; the ranks are
  :math:`\mathrm{lo} = 1 + \sum_{\text{slices}} \#\{s_j > s_i\}` and
  :math:`\mathrm{hi} = \sum_{\text{slices}} \#\{s_j \ge s_i\}` -- one ``psum`` over
  ``items_axis``. ``ties="first"`` ranks tied items by their global catalog index. The values
  equal :func:`jaxrank.from_sparse` on the whole array, ties included, for every metric but the
  three that read judged non-relevant items (bpref, infap, judged): grade-0 ids are dropped here
  and the Ranks carry no judgments, so those three would read every ranked item as judged.

  Args:
    scores: ``[lists, n]`` float or int scores; ``n`` divisible by the ``items_axis`` size and
      ``lists`` by the ``lists_axis`` size (:func:`pad_lists`).
    relevant_ids: ``[lists, r]`` ids in ``[0, n)``, ``-1`` pads.
    relevant_grades: optional ``[lists, r]`` grades (default 1).
    where: optional ``[lists, n]`` bool of rankable items.
    mesh: the device mesh; ``lists_axis`` may be ``None`` (lists not split).
    ties: as in :func:`jaxrank.from_sparse` (no ``tie_key``).

  Returns:
    :class:`jaxrank.Ranks` of size ``n``, its arrays sharded over ``lists_axis``.

  Example (one device: a 1 x 1 mesh):
    >>> import jax, jaxrank
    >>> from jaxrank.sharding import from_sparse_sharded
    >>> mesh = jax.sharding.Mesh(jax.devices()[:1], ("model",))
    >>> r = from_sparse_sharded([[0.3, 0.9, 0.1, 0.5]], [[3, -1]], mesh=mesh, lists_axis=None)
    >>> r.lo.tolist(), r.grades.tolist()
    ([[2, 5]], [[1.0, 0.0]])
  """
  (scores,) = _ranks.as_scores(("scores", scores, 2))
  if scores.ndim != 2:
    raise ValueError(f"scores must be [lists, n] for from_sparse_sharded, got shape "
                     f"{scores.shape}")
  ids = _checks.as_array("relevant_ids", relevant_ids, kinds="i")
  _checks.check_leading("relevant_ids", ids, "scores", scores.shape[:-1])
  _checks.check_ids("relevant_ids", ids, scores.shape[-1], "the number of scores")
  grades = _ranks.sparse_grades(ids, relevant_grades)
  valid = _checks.as_where(where, scores.shape)
  _checks.check_choice("ties", ties, _ranks.TIES)
  for axis in (lists_axis, items_axis):
    if axis is not None and axis not in mesh.axis_names:
      raise ValueError(f"mesh has no axis {axis!r}; its axes are {mesh.axis_names}")
  parts = mesh.shape[items_axis]
  if scores.shape[-1] % parts:
    raise ValueError(f"scores' catalog axis ({scores.shape[-1]} items) must divide evenly over "
                     f"the {parts} devices of mesh axis {items_axis!r}")
  lists = 1 if lists_axis is None else mesh.shape[lists_axis]
  if scores.shape[0] % lists:
    raise ValueError(f"scores' list axis ({scores.shape[0]} lists) must divide evenly over the "
                     f"{lists} devices of mesh axis {lists_axis!r}: pad it (jaxrank.sharding."
                     f"pad_lists)")
  return _sharded(scores, ids.astype(jnp.int32), grades, valid, mesh=mesh, lists_axis=lists_axis,
                  items_axis=items_axis, ties=ties)


@functools.partial(jax.jit, static_argnames=("mesh", "lists_axis", "items_axis", "ties"))
def _sharded(scores: jax.Array, ids: jax.Array, grades: jax.Array, valid: jax.Array | None, *,
             mesh: Mesh, lists_axis: str | None, items_axis: str,
             ties: str) -> Ranks:
  n = scores.shape[-1]
  cat = P(lists_axis, items_axis)
  row = P(lists_axis)

  def body(scores: jax.Array, ids: jax.Array, grades: jax.Array, *rest: jax.Array) -> Ranks:
    valid = rest[0] if rest else None
    width = scores.shape[-1]
    offset = jax.lax.axis_index(items_axis) * width
    keys = _ranks.sort_keys(scores, valid)
    local = ids - offset
    mine = (ids >= 0) & (local >= 0) & (local < width)
    safe = jnp.clip(local, 0, width - 1)
    take = functools.partial(jnp.take_along_axis, indices=safe, axis=-1)
    slot_keys = jax.lax.psum(jnp.where(mine, take(keys), 0), items_axis)
    ok = mine if valid is None else mine & take(valid)
    slot_ok = jax.lax.psum(ok.astype(jnp.int32), items_axis) > 0
    used = (ids >= 0) & (grades > 0)
    ranked = used & slot_ok
    q = slot_keys[..., :, None]
    qi = ids[..., :, None]
    items = (scores,) if valid is None else (scores, valid)

    def count(chunk: tuple[jax.Array, ...], index: jax.Array) -> tuple[jax.Array, ...]:
      key = _ranks.sort_keys(chunk[0], chunk[1] if len(chunk) > 1 else None)
      real = chunk[1] if len(chunk) > 1 else True
      if ties == "first":
        return (((key > q) | ((key == q) & (offset + index < qi))) & real,)
      return (key > q) & real, (key >= q) & real

    counts = jax.lax.psum(_counting.sum_over_items(count, items), items_axis)
    num = (jnp.full(scores.shape[:-1], width, jnp.int32) if valid is None
           else jnp.sum(valid, axis=-1, dtype=jnp.int32))
    num = jax.lax.psum(num, items_axis)
    out = jnp.int32(n + 1)
    if ties == "first":
      lo = hi = jnp.where(ranked, counts[0] + 1, out)
    else:
      lo, hi = jnp.where(ranked, counts[0] + 1, out), jnp.where(ranked, counts[1], out)
    return Ranks(lo=lo, hi=hi, grades=jnp.where(used, grades, 0.0), num_items=num,
                 overflow=jnp.zeros(num.shape, bool), size=n, resolved=ties == "first")

  args = (scores, ids, grades) + (() if valid is None else (valid,))
  in_specs = (cat, row, row) + (() if valid is None else (cat,))
  # out_specs is a prefix of the output's tree: every array of the Ranks is split by lists.
  return jax.shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=row,
                       check_vma=False)(*args)
