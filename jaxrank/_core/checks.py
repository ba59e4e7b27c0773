"""Input validation: every error names the argument, what was expected and what was given.

Shape and dtype checks always run (they are static under ``jit``). Value checks (negative or NaN
labels, out-of-range ids) run only when the value is concrete, i.e. outside ``jit``/``vmap``
tracing; under tracing the documented fallbacks apply instead.

Importing this module does not import JAX (the option checks also run on the host, before any
array work); the checks of JAX arrays import it when they run.
"""

from __future__ import annotations

import functools
import math
import numbers
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast, overload

import numpy as np

if TYPE_CHECKING:
  import jax
  from jax.typing import ArrayLike


def is_concrete(x: Any) -> bool:
  """True when ``x`` holds a value (not a tracer), so value checks can run eagerly.

  A concrete array may still sit inside an outer ``jit``/``vmap``/``grad`` trace (closed over by
  the traced function): compute on it only through :func:`host_values`, which evaluates now
  instead of adding to the trace.
  """
  jax = sys.modules.get("jax")  # no tracer exists before JAX is imported
  return jax is None or not isinstance(x, jax.core.Tracer)


def host_values(fn: Any, *args: Any) -> Any:
  """``fn(*args)`` on concrete arrays, evaluated now and brought to the host (NumPy values).

  Inside an outer trace (labels closed over by a jitted function, say) JAX would stage ``fn``'s
  operations into the trace and hand back tracers, which the host cannot read; evaluating at
  trace time keeps the host-side checks and slot counts of concrete values working there.

  Example:
    >>> import jax, jax.numpy as jnp
    >>> from jaxrank._core import checks as _checks
    >>> y = jnp.array([1, 2, 3])
    >>> jax.jit(lambda x: x + int(_checks.host_values(jnp.max, y)))(0).tolist()
    3
  """
  import jax  # only ever called on JAX arrays

  with jax.ensure_compile_time_eval():
    return jax.device_get(fn(*args))


# The types: an int gives an int; anything else (None included) int or None.
@overload
def check_k(k: int | np.integer, name: str = "k") -> int: ...
@overload
def check_k(k: Any, name: str = "k") -> int | None: ...


def check_k(k: Any, name: str = "k") -> int | None:
  """``k`` must be ``None`` or a positive Python/NumPy integer (bools are rejected).

  Any size is valid (a cutoff beyond the list keeps everything); the kernels clamp it or use it
  as a float, so a huge ``k`` never overflows the int32 ranks.
  """
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
  # (cast: numbers.Real declares no comparison with an int; every real number has one)
  if (isinstance(value, bool) or not isinstance(value, numbers.Real)
      or not 0 < cast(float, value) < 1):
    raise ValueError(f"{name} must be a number between 0 and 1, got {value!r}")
  return float(value)


def check_positive_number(name: str, value: Any) -> float:
  """A positive, finite real number (bools, NaN and inf are rejected)."""
  if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)
      or not 0 < cast(float, value) < math.inf):  # (cast: as in check_unit_interval)
    raise ValueError(f"{name} must be a positive finite number, got {value!r}")
  return float(value)


def _int32_range(dtype: np.dtype) -> np.iinfo:
  return np.iinfo(np.int32 if dtype.kind == "i" else np.uint32)


def wraps_in_jax(arr: np.ndarray) -> bool:
  """True for a 64-bit int NumPy array that JAX, without x64 mode, would wrap to 32 bits."""
  import jax
  if jax.enable_x64.value or arr.dtype.kind not in "iu" or arr.dtype.itemsize < 8:
    return False
  info = _int32_range(arr.dtype)
  return arr.size > 0 and bool(arr.min() < info.min or arr.max() > info.max)


def as_numpy(name: str, x: Any) -> np.ndarray:
  """``np.asarray(x)`` with one-line errors for None, ragged lists and non-numbers."""
  if x is None:
    raise TypeError(f"{name} must be an array, got None")
  try:
    arr = np.asarray(x)
  except ValueError as e:
    if "inhomogeneous" in str(e) or "sequence" in str(e):
      raise ValueError(f"{name} must be a rectangular array, got a ragged nested list (rows of "
                       f"different lengths): use where= (padding) or jaxrank.numpy for ragged "
                       f"lists") from None
    raise ValueError(f"{name} must be an array of numbers: {e}") from None
  except TypeError as e:
    raise TypeError(f"{name} must be an array, got {type(x).__name__}: {e}") from None
  if arr.dtype == object:
    raise TypeError(f"{name} must hold numbers, got {type(x).__name__} that makes an object "
                    f"array (a None, a ragged row, a non-number or an int beyond 64 bits "
                    f"inside?); use where= (padding) or jaxrank.numpy for ragged lists")
  return arr


def _kinds_error(name: str, kinds: str, dtype: Any) -> TypeError:
  wanted = {"f": "floating", "i": "integer", "b": "bool"}
  return TypeError(f"{name} must have a {' or '.join(wanted[c] for c in kinds)} dtype, "
                   f"got {dtype}")


def as_array(name: str, x: Any, *, kinds: str, min_ndim: int = 0,
             wide_ints: str = "error") -> jax.Array:
  """Converts ``x`` to an array whose dtype kind is in ``kinds`` ('f' float, 'i' int, 'b' bool).

  A 64-bit int NumPy array is narrowed to 32 bits when JAX's x64 mode is off and every value
  fits; otherwise (JAX would wrap the values) ``wide_ints="error"`` raises and ``"float"``
  converts it to float (where only the magnitude matters, e.g. soft ranks).
  """
  import jax
  import jax.numpy as jnp
  if isinstance(x, jax.Array):
    arr = x
  else:
    host = as_numpy(name, x)
    if host.dtype.kind in "iu" and host.dtype.itemsize == 8 and not jax.enable_x64.value:
      info = _int32_range(host.dtype)
      if not wraps_in_jax(host):
        host = host.astype(info.dtype)
      elif wide_ints == "float":
        host = host.astype(np.float64)
      else:
        i = tuple(int(j) for j in np.argwhere((host < info.min) | (host > info.max))[0])
        raise ValueError(f"{name} must fit in {info.dtype} when JAX's x64 mode is off, got "
                         f"{host[i]} at index {i}; enable x64 with "
                         f"jax.config.update('jax_enable_x64', True)")
    try:
      # Without x64, float64 beyond float32's range becomes inf: no NumPy warning for it (the
      # label checks name such a value; scores keep their order).
      with np.errstate(over="ignore"):
        arr = jnp.asarray(host)
    except TypeError:
      raise _kinds_error(name, kinds, host.dtype) from None
  dtype = arr.dtype
  kind = "b" if dtype == jnp.bool_ else "f" if jnp.issubdtype(dtype, jnp.floating) else (
      "i" if jnp.issubdtype(dtype, jnp.integer) else "?")
  if kind not in kinds:
    raise _kinds_error(name, kinds, dtype)
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


# Grades are float32 on the device: a larger (or infinite) grade cannot be represented.
MAX_GRADE = float(np.finfo(np.float32).max)


def label_summary(labels: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
  """(any NaN, any negative, any above ``MAX_GRADE`` or +inf) in one fused pass on the device."""
  return _label_summary_kernel()(labels)


@functools.cache
def _label_summary_kernel():
  import jax
  return jax.jit(_label_summary)


def _label_summary(labels):
  import jax.numpy as jnp
  if jnp.issubdtype(labels.dtype, jnp.floating):
    # float16 and bfloat16 hold no finite value above MAX_GRADE (nor can they hold it)
    huge = (labels > MAX_GRADE if float(jnp.finfo(labels.dtype).max) > MAX_GRADE
            else jnp.isposinf(labels))
    return jnp.any(jnp.isnan(labels)), jnp.any(labels < 0), jnp.any(huge)
  no = jnp.zeros((), bool)
  return no, jnp.any(labels < 0), no


def check_labels(name: str, labels: jax.Array) -> None:
  """Rejects NaN, negative and non-float32 (huge or infinite) labels when the value is concrete.

  The common (valid) case costs one fused device reduction; only a failing input is copied to
  the host to find the first offending index for the message.
  """
  if not is_concrete(labels) or labels.dtype == np.bool_:
    return
  raise_label_error(name, labels, *(bool(v) for v in host_values(label_summary, labels)))


def raise_label_error(name: str, labels: jax.Array, has_nan: bool, has_negative: bool,
                      has_huge: bool = False) -> None:
  """Raises for NaN, negative or huge labels, naming the first offending index (no-op if clean)."""
  if not (has_nan or has_negative or has_huge):
    return
  values = np.asarray(labels).astype(np.float64)
  if has_nan:
    i = tuple(int(j) for j in np.argwhere(np.isnan(values))[0])
    raise ValueError(f"{name} must not contain NaN, found NaN at index {i}")
  if has_negative:
    i = tuple(int(j) for j in np.argwhere(values < 0)[0])
    raise ValueError(f"{name} must be >= 0 (0 = not relevant), got {values[i]:g} at index {i}")
  i = tuple(int(j) for j in np.argwhere(values > MAX_GRADE)[0])
  raise ValueError(f"{name} must be finite and at most {MAX_GRADE:g} (grades are float32), got "
                   f"{values[i]:g} at index {i}")


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


def check_temperature(name: str, value) -> float | jax.Array:
  """A positive finite number; a traced scalar (e.g. an annealed temperature under jit) passes."""
  if not is_concrete(value):
    return value
  if hasattr(value, "ndim") and value.ndim == 0:
    value = float(value)
  return check_positive_number(name, value)
