"""The host paths' jitted kernel: the rank core's formulas on padded blocks of slots in one
compiled call, in JAX's x64 mode (float64 values, like trec_eval's), through the executables
kept on disk (:mod:`jaxrank._host.executables`). :mod:`jaxrank._host.scoring` calls it for large
inputs; small ones are scored on NumPy without importing JAX.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank._core import compute as _compute
from jaxrank._core.rankform import Judgments, Ranks
from jaxrank._host import executables as _executables


@functools.partial(jax.jit, static_argnames=("specs", "options", "size", "resolved"))
def _kernel(lo, hi, grades, num_items, judged=None, *, specs, options, size, resolved):
  ranks = Ranks(lo=lo, hi=hi, grades=grades, num_items=num_items,
                overflow=jnp.zeros(num_items.shape, bool), size=size, resolved=resolved,
                judged=None if judged is None else Judgments(*judged))
  return _compute.compute_ranks(ranks, specs=specs, options=options)


def score(lo: np.ndarray, hi: np.ndarray, grades: np.ndarray, num_items: np.ndarray,
          judged: tuple[np.ndarray, ...] | None, *, specs: tuple, options: Any, size: int,
          resolved: bool) -> list[np.ndarray]:
  """The metrics ``specs`` of one padded block ``[rows, slots]`` (see
  :func:`jaxrank._host.scoring.score_ranks`), as float64 NumPy arrays.

  Example:
    >>> import numpy as np
    >>> from jaxrank._core.options import make_options
    >>> from jaxrank._host import device
    >>> out = device.score(np.array([[1, 3]], np.int32), np.array([[1, 3]], np.int32),
    ...                    np.ones((1, 2), np.float32), np.array([4], np.int32), None,
    ...                    specs=(("average_precision", None),), options=make_options(),
    ...                    size=4, resolved=True)
    >>> [v.tolist() for v in out]
    [[0.8333333333333333]]
  """
  with jax.enable_x64(True):  # float64 formulas: means print as trec_eval's doubles do
    out = _executables.call(_kernel, lo, hi, grades, num_items, judged, specs=specs,
                            options=options, size=size, resolved=resolved)
    return [np.asarray(v, np.float64) for v in out]
