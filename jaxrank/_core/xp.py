"""The array namespace of the metric formulas: NumPy on the host, ``jax.numpy`` under ``jit``.

The formulas of :mod:`jaxrank._core.formulas` are written once against the namespace that
:func:`ops_of` returns for their :class:`~jaxrank._core.rankform.Ranks`' arrays: :data:`NUMPY`
for NumPy arrays (small inputs on the host: JAX is not even imported) and the JAX namespace for
anything else (JAX arrays, tracers under ``jit``/``vmap``; JAX is imported then). Both give the
common functions of their array module (``where``, ``sum``, ``cumsum``, ``take_along_axis``, ...:
any attribute that is not one of theirs is the module's) and the few operations the formulas need
beyond it, with the semantics of their ``lax`` counterparts:

* ``float``: the formulas' float dtype: float64 on NumPy; on JAX float64 under x64 mode, else
  float32 (read each time, so a kernel traced inside ``jax.enable_x64`` sees it);
* ``name``: ``"numpy"``, ``"jax64"`` or ``"jax32"`` (a cache key for tables built per dtype);
* ``sum`` (on NumPy, a float sum along an axis adds in order, whatever the padding),
  ``sort_together``, ``cummax``, ``top_k`` (the values), ``searchsorted_rows`` (row-wise),
  ``bitcast``, ``scatter_add``, ``scatter_set``, ``scatter_along_axis`` (each returns a new array);
* ``while_loop``, ``fori_loop``, ``cond`` (plain Python control flow on NumPy);
* ``optimization_barrier`` (the identity on NumPy), ``device_count`` (1 on NumPy) and
  ``ensure_compile_time_eval`` (a no-op context on NumPy).

NumPy warns where IEEE arithmetic gives inf or NaN (``inf * 0``, ``0 / 0``) and JAX is silent; the
formulas mask such values, so a caller on the host runs them under ``np.errstate(all="ignore")``.

Example:
  >>> import numpy as np
  >>> from jaxrank._core.xp import ops_of
  >>> xp = ops_of(np.array([3, 1, 2]))
  >>> xp.name, xp.float.__name__, xp.cummax(np.array([1, 3, 2]), axis=0).tolist()
  ('numpy', 'float64', [1, 3, 3])
  >>> xp.sort_together((np.array([2, 1, 2]), np.array([0.5, 1.5, 2.5])), num_keys=1)[1].tolist()
  [1.5, 0.5, 2.5]
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np


class _Namespace:
  """The common functions of ``module`` (attribute lookup falls through to it), and the rest."""

  xp: Any  # the array module (numpy or jax.numpy)

  if TYPE_CHECKING:
    @property
    def name(self) -> str: ...  # a class attribute, or a property that reads JAX's x64 mode

  def __getattr__(self, attr: str) -> Any:
    value = getattr(self.xp, attr)
    setattr(self, attr, value)  # later look-ups find it on the instance
    return value


class NumpyOps(_Namespace):
  """The NumPy namespace: eager, float64, and JAX's ``lax`` semantics for the extra operations."""

  name = "numpy"
  xp = np
  float = np.float64

  @staticmethod
  def sort_together(operands: Sequence[np.ndarray], num_keys: int = 1) -> tuple[np.ndarray, ...]:
    """``lax.sort(operands, dimension=-1, num_keys=num_keys)``: every operand in the stable
    lexicographic order of the first ``num_keys`` along the last axis."""
    keys = [np.asarray(k) for k in operands[:num_keys]]
    order = np.lexsort(keys[::-1], axis=-1) if keys[0].shape[-1] else np.zeros(keys[0].shape, int)
    return tuple(np.take_along_axis(np.asarray(a), order, axis=-1) for a in operands)

  @staticmethod
  def cummax(x: np.ndarray, axis: int) -> np.ndarray:
    return np.maximum.accumulate(x, axis=axis)

  @staticmethod
  def sum(x: Any, axis: int | None = None, dtype: Any = None, **kwargs: Any) -> Any:
    """``np.sum``, but a float sum along one axis adds the elements in order, one after the
    other, as XLA's CPU reduction does (NumPy's pairwise sum groups them by the axis' length):
    zeros padded at the end of a row change no bit of its sum, so a list's value does not depend
    on the width of the batch it was scored in (a run read whole or a few queries at a time)."""
    a = np.asarray(x)
    if (axis is None or kwargs or np.result_type(a.dtype, dtype or a.dtype).kind not in "fc"
        or a.ndim == 0 or not a.shape[axis]):
      return np.sum(a, axis=axis, dtype=dtype, **kwargs)
    return np.add.accumulate(a, axis=axis, dtype=dtype).take(-1, axis=axis)

  @staticmethod
  def top_k(x: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` largest values of each row, largest first (``lax.top_k(x, k)[0]``)."""
    return np.flip(np.sort(x, axis=-1), axis=-1)[..., :k]

  @staticmethod
  def searchsorted_rows(sorted_: np.ndarray, queries: np.ndarray,
                        side: Literal["left", "right"]) -> np.ndarray:
    """``searchsorted`` of each row of ``queries`` in the same row of ``sorted_`` (any leading
    dimensions; int64 positions)."""
    lead = queries.shape[:-1]
    rows, m, q = math.prod(lead), sorted_.shape[-1], queries.shape[-1]
    if np.can_cast(sorted_.dtype, np.int32) and np.can_cast(queries.dtype, np.int32):
      # int32 keys (ranks): row i's keys shifted by i * 2^32 make one sorted array, searched
      # at once.
      shift = (np.arange(rows, dtype=np.int64) << 32)[:, None]
      low = np.int64(np.iinfo(np.int32).min)
      flat = (sorted_.reshape(rows, m).astype(np.int64) - low + shift).reshape(-1)
      at = (queries.reshape(rows, q).astype(np.int64) - low + shift).reshape(-1)
      found = np.searchsorted(flat, at, side=side).reshape(rows, q) - np.arange(rows)[:, None] * m
      return found.reshape(queries.shape)
    out = np.empty((rows, q), np.int64)
    for i, (s, v) in enumerate(zip(sorted_.reshape(rows, m), queries.reshape(rows, q))):
      out[i] = np.searchsorted(s, v, side=side)
    return out.reshape(queries.shape)

  @staticmethod
  def bitcast(x: np.ndarray, dtype: Any) -> np.ndarray:
    return x.view(dtype)

  @staticmethod
  def scatter_add(x: np.ndarray, index: Any, values: Any) -> np.ndarray:
    """``x.at[index].add(values)``: a copy of ``x`` with ``values`` added (repeats add up)."""
    out = x.copy()
    np.add.at(out, index, values)
    return out

  @staticmethod
  def scatter_set(x: np.ndarray, index: Any, values: Any) -> np.ndarray:
    """``x.at[index].set(values)``: a copy of ``x`` with ``values`` at ``index``."""
    out = x.copy()
    out[index] = values
    return out

  @staticmethod
  def scatter_along_axis(x: np.ndarray, indices: np.ndarray, values: np.ndarray,
                         axis: int) -> np.ndarray:
    """``put_along_axis`` into a copy of ``x``."""
    out = x.copy()
    np.put_along_axis(out, indices, values, axis=axis)
    return out

  @staticmethod
  def while_loop(cond_fun: Callable, body_fun: Callable, init: Any) -> Any:
    state = init
    while cond_fun(state):
      state = body_fun(state)
    return state

  @staticmethod
  def fori_loop(lower: int, upper: int, body_fun: Callable, init: Any) -> Any:
    state = init
    for i in range(lower, upper):
      state = body_fun(i, state)
    return state

  @staticmethod
  def cond(pred: Any, true_fun: Callable, false_fun: Callable, operand: Any) -> Any:
    return true_fun(operand) if pred else false_fun(operand)

  @staticmethod
  def optimization_barrier(x: Any) -> Any:
    return x

  @staticmethod
  def device_count() -> int:
    return 1

  @staticmethod
  def ensure_compile_time_eval() -> contextlib.AbstractContextManager:
    return contextlib.nullcontext()


NUMPY = NumpyOps()


@functools.cache
def jax_ops() -> _Namespace:
  """The JAX namespace (imports JAX on the first call)."""
  import jax
  import jax.numpy as jnp
  from jax import lax

  class JaxOps(_Namespace):
    """``jax.numpy`` and the ``lax`` operations, as the formulas always called them."""

    xp = jnp

    @property
    def float(self):
      return jnp.float64 if jax.enable_x64.value else jnp.float32

    @property
    def name(self):
      return "jax64" if jax.enable_x64.value else "jax32"

    @staticmethod
    def sort_together(operands, num_keys=1):
      return tuple(lax.sort(tuple(operands), dimension=-1, num_keys=num_keys))

    @staticmethod
    def cummax(x, axis):
      return lax.cummax(x, axis=axis)

    @staticmethod
    def top_k(x, k):
      return lax.top_k(x, k)[0]

    @staticmethod
    def searchsorted_rows(sorted_, queries, side):
      rows = math.prod(queries.shape[:-1])  # not -1: the last axis may be empty
      # "scan_unrolled" is 1.3-2.3x faster than "scan" on CPU for up to a few hundred slots
      # (1,000 x 96: 1.2-2.9 vs 2.9-3.7 ms); at 1,000 slots (one per item, under jit) "scan" is
      # faster.
      method = "scan_unrolled" if queries.shape[-1] <= 256 else "scan"
      flat = jax.vmap(functools.partial(jnp.searchsorted, side=side, method=method))(
          sorted_.reshape(rows, sorted_.shape[-1]), queries.reshape(rows, queries.shape[-1]))
      return flat.reshape(queries.shape)

    @staticmethod
    def bitcast(x, dtype):
      return lax.bitcast_convert_type(x, dtype)

    @staticmethod
    def scatter_add(x, index, values):
      return x.at[index].add(values)

    @staticmethod
    def scatter_set(x, index, values):
      return x.at[index].set(values)

    @staticmethod
    def scatter_along_axis(x, indices, values, axis):
      return jnp.put_along_axis(x, indices, values, axis=axis, inplace=False)

    while_loop = staticmethod(lax.while_loop)
    fori_loop = staticmethod(lax.fori_loop)
    cond = staticmethod(lax.cond)
    optimization_barrier = staticmethod(lax.optimization_barrier)
    device_count = staticmethod(jax.device_count)
    ensure_compile_time_eval = staticmethod(jax.ensure_compile_time_eval)

  return JaxOps()


def ops_of(*arrays: Any) -> _Namespace:
  """:data:`NUMPY` when every one of ``arrays`` is a NumPy array or scalar, else the JAX
  namespace (for JAX arrays, tracers, and Python numbers, which JAX functions always took).

  Example:
    >>> import numpy as np
    >>> from jaxrank._core.xp import ops_of
    >>> ops_of(np.zeros(3), np.ones(2)).name
    'numpy'
  """
  for a in arrays:
    if not isinstance(a, (np.ndarray, np.generic)):
      return jax_ops()
  return NUMPY


def ops_named(name: str) -> _Namespace:
  """The namespace whose ``name`` is ``name`` (the JAX one for ``"jax64"`` and ``"jax32"``).

  Example:
    >>> from jaxrank._core.xp import ops_named
    >>> ops_named("numpy").float.__name__
    'float64'
  """
  return NUMPY if name == "numpy" else jax_ops()
