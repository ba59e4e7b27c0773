"""Input validation: every error names the argument, what was expected and what was given.

Shape and dtype checks always run (they are static under ``jit``). Value checks (negative or NaN
labels, out-of-range ids) run only when the value is concrete, i.e. outside ``jit``/``vmap``
tracing; under tracing the documented fallbacks apply instead.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike


def is_concrete(x: Any) -> bool:
  """True when ``x`` holds a value (not a tracer), so value checks can run eagerly."""
  return not isinstance(x, jax.core.Tracer)


def check_k(k: Any, name: str = "k") -> int | None:
  """``k`` must be ``None`` or a positive Python/NumPy integer (bools are rejected)."""
  if k is None:
    return None
  if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
    raise TypeError(f"{name} must be a positive int or None, got {k!r} of type {type(k).__name__}")
  if k <= 0:
    raise ValueError(f"{name} must be a positive int or None, got {k}")
  return int(k)


def check_choice(name: str, value: Any, choices: Sequence[str]) -> None:
  if not isinstance(value, str) or value not in choices:
    raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")


def check_unit_interval(name: str, value: Any) -> float:
  """``value`` must be a real number strictly between 0 and 1 (a level or a probability)."""
  if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < 1:
    raise ValueError(f"{name} must be a number between 0 and 1, got {value!r}")
  return float(value)


def check_positive_number(name: str, value: Any) -> float:
  if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
    raise ValueError(f"{name} must be a positive number, got {value!r}")
  return float(value)


def as_array(name: str, x: Any, *, kinds: str, min_ndim: int = 0) -> jax.Array:
  """Converts ``x`` to an array whose dtype kind is in ``kinds`` ('f' float, 'i' int, 'b' bool)."""
  try:
    arr = x if isinstance(x, jax.Array) else jnp.asarray(x)
  except TypeError as e:
    raise TypeError(f"{name} must be an array, got {type(x).__name__}: {e}") from None
  dtype = arr.dtype
  kind = "b" if dtype == jnp.bool_ else "f" if jnp.issubdtype(dtype, jnp.floating) else (
      "i" if jnp.issubdtype(dtype, jnp.integer) else "?")
  if kind not in kinds:
    wanted = {"f": "floating", "i": "integer", "b": "bool"}
    raise TypeError(f"{name} must have a {' or '.join(wanted[c] for c in kinds)} dtype, "
                    f"got {dtype}")
  if arr.ndim < min_ndim:
    raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {arr.shape}")
  return arr


def check_same_shape(name: str, arr: jax.Array, ref_name: str, ref_shape: tuple[int, ...]) -> None:
  if tuple(arr.shape) != tuple(ref_shape):
    raise ValueError(f"{name} must have the shape of {ref_name} {tuple(ref_shape)}, "
                     f"got {tuple(arr.shape)}")


def as_where(where: ArrayLike | None, shape: tuple[int, ...]) -> jax.Array | None:
  """The ``where`` mask (bool, the shape of ``scores``), or None when there is none."""
  if where is None:
    return None
  valid = as_array("where", where, kinds="b")
  check_same_shape("where", valid, "scores", shape)
  return valid


def check_leading(name: str, arr: jax.Array, ref_name: str, lead: tuple[int, ...]) -> None:
  if tuple(arr.shape[:len(lead)]) != tuple(lead) or arr.ndim != len(lead) + 1:
    raise ValueError(f"{name} must have shape {tuple(lead)} + (m,) to match the leading "
                     f"dimensions of {ref_name}, got {tuple(arr.shape)}")


@jax.jit
def label_summary(labels: jax.Array) -> tuple[jax.Array, jax.Array]:
  """(any NaN, any negative) in one fused pass on the device."""
  if jnp.issubdtype(labels.dtype, jnp.floating):
    return jnp.any(jnp.isnan(labels)), jnp.any(labels < 0)
  return jnp.zeros((), bool), jnp.any(labels < 0)


def check_labels(name: str, labels: jax.Array) -> None:
  """Rejects NaN and negative relevance labels when the value is concrete.

  The common (valid) case costs one fused device reduction; only a failing input is copied to
  the host to find the first offending index for the message.
  """
  if not is_concrete(labels) or labels.dtype == jnp.bool_:
    return
  raise_label_error(name, labels, *(bool(v) for v in label_summary(labels)))


def raise_label_error(name: str, labels: jax.Array, has_nan: bool, has_negative: bool) -> None:
  """Raises for NaN or negative labels, naming the first offending index (no-op when clean)."""
  if not (has_nan or has_negative):
    return
  values = np.asarray(labels).astype(np.float64)
  if has_nan:
    i = tuple(int(j) for j in np.argwhere(np.isnan(values))[0])
    raise ValueError(f"{name} must not contain NaN, found NaN at index {i}")
  i = tuple(int(j) for j in np.argwhere(values < 0)[0])
  raise ValueError(f"{name} must be >= 0 (0 = not relevant), got {values[i]:g} at index {i}")


def check_ids(name: str, ids: jax.Array, upper: int, upper_name: str) -> None:
  """Ids are -1 (padding) or in [0, upper); no duplicates within a row. Concrete values only."""
  if not is_concrete(ids):
    return
  values = np.asarray(ids)
  bad = np.argwhere((values < -1) | (values >= upper))
  if bad.size:
    i = tuple(int(j) for j in bad[0])
    raise ValueError(f"{name} must be -1 (padding) or in [0, {upper}) ({upper_name}), "
                     f"got {values[i]} at index {i}")
  if values.shape[-1] > 1:
    rows = np.sort(values.reshape(-1, values.shape[-1]), axis=-1)
    dup = (rows[:, 1:] == rows[:, :-1]) & (rows[:, 1:] >= 0)
    if dup.any():
      row = int(np.argwhere(dup)[0][0])
      lead = np.unravel_index(row, values.shape[:-1]) if values.ndim > 1 else ()
      raise ValueError(f"{name} must not repeat an id within a list; list at index "
                       f"{tuple(int(j) for j in lead)} repeats id "
                       f"{int(rows[row][1:][dup[row]][0])}")
