"""Input checks and array helpers shared by the :mod:`jaxrank.stats` modules."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from jaxrank._core import checks as _checks


def choice(name: str, value: Any, allowed: Sequence[str]) -> str:
  _checks.check_choice(name, value, allowed)
  return cast(str, value)  # check_choice raised unless it is one of the allowed strings


def positive_int(name: str, value: Any) -> int:
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
    raise ValueError(f"{name} must be a positive integer, got {value!r}")
  return int(value)


def checked_array(name: str, x: Any, min_queries: int = 1) -> np.ndarray:
  try:
    arr = np.asarray(x, dtype=np.float64)
  except (TypeError, ValueError):
    raise TypeError(f"{name} must be an array of numbers [..., queries], got "
                    f"{type(x).__name__}") from None
  if arr.ndim < 1:
    raise ValueError(f"{name} must have a queries axis (shape [..., queries]), got a scalar")
  if arr.shape[-1] < min_queries:
    raise ValueError(f"{name} must have at least {min_queries} queries (last axis), got "
                     f"{arr.shape[-1]}")
  bad = ~np.isfinite(arr)
  if bad.any():
    at = tuple(int(i) for i in np.argwhere(bad)[0])
    raise ValueError(f"{name} must be finite, got {arr[at]} at index {at}")
  return arr


def paired_rows(a: Any, b: Any,
                min_queries: int = 1) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
  """``a`` and ``b`` broadcast to ``[pairs, queries]``, and the leading shape."""
  a, b = checked_array("a", a, min_queries), checked_array("b", b, min_queries)
  if a.shape[-1] != b.shape[-1]:
    raise ValueError(f"a and b must have the same number of queries (last axis), got "
                     f"{a.shape[-1]} and {b.shape[-1]}")
  try:
    lead = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
  except ValueError:
    raise ValueError(f"the leading shapes of a {a.shape} and b {b.shape} do not "
                     "broadcast") from None
  q = a.shape[-1]
  a = np.broadcast_to(a, lead + (q,)).reshape(-1, q)
  b = np.broadcast_to(b, lead + (q,)).reshape(-1, q)
  return a, b, lead


def as_key(key: Any) -> jax.Array:
  if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
    return jax.random.key(int(key))
  if isinstance(key, jax.Array) and (jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)
                                     or (key.dtype == jnp.uint32 and key.shape == (2,))):
    return key
  raise TypeError(f"key must be a jax.random key or an integer seed, got {key!r:.60}")


def padded(x: np.ndarray, minimum: int = 8) -> np.ndarray:
  """x with its first axis zero-padded to a power of two (>= minimum).

  Kernels see a handful of row counts, not one per number of systems or pairs, so they compile
  a handful of times; padding rows are all zeros and are sliced off the results.
  """
  rows = x.shape[0]
  size = max(minimum, 1 << max(rows - 1, 0).bit_length())
  return np.concatenate([x, np.zeros((size - rows,) + x.shape[1:], x.dtype)]) if size > rows \
      else x


def elementwise(kernel: Callable[..., jax.Array], *args: ArrayLike) -> np.ndarray:
  """kernel(*args) on the broadcast arrays, flattened and padded to a power of two (>= 8), so
  it compiles once per size bucket; the padding repeats the last element."""
  arrays = np.broadcast_arrays(*(np.asarray(a, np.float64) for a in args))
  shape, size = arrays[0].shape, arrays[0].size
  if size == 0:
    return np.zeros(shape)
  bucket = max(8, 1 << (size - 1).bit_length())
  flat = [np.pad(a.reshape(-1), (0, bucket - size), mode="edge") for a in arrays]
  with jax.enable_x64(True):
    out = np.asarray(kernel(*(jnp.asarray(f) for f in flat)))
  return out[:size].reshape(shape)


def as_output(x: ArrayLike, lead: tuple[int, ...]) -> np.ndarray:
  return np.asarray(x, np.float64).reshape(lead)


def studentize(mean: jax.Array, sd: jax.Array, q: int) -> jax.Array:
  """mean / (sd / sqrt(q)); 0 for 0/0 and +-inf for x/0 (all differences equal)."""
  se = sd / math.sqrt(q)
  return jnp.where(se > 0, mean / jnp.where(se > 0, se, 1.0),
                   jnp.where(mean == 0, 0.0, jnp.sign(mean) * jnp.inf))
