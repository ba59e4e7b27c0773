"""Plot helpers (optional extra ``jaxrank[plot]``; matplotlib is imported only when called)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # matplotlib is optional and imported only when called
  import matplotlib.figure

__all__ = ["plot_bias"]


def plot_bias(bias: Mapping[str, Any], *, labels: Sequence[str] | None = None, ax: Any = None,
              title: str | None = None) -> matplotlib.figure.Figure:
  """Side-by-side bars of the recommended vs training shares per category.

  Takes the output of :func:`jaxrank.item_bias` or :func:`jaxrank.user_bias` (any mapping of
  name -> shares ``[C]``) and returns the matplotlib Figure.

  Example:
    >>> import jaxrank
    >>> from jaxrank import plot
    >>> bias = jaxrank.item_bias([[0, 1], [0, 2]], [0, 1, 1], num_categories=2)
    >>> fig = plot.plot_bias(bias, labels=["comedy", "drama"])
    >>> len(fig.axes[0].patches)
    4
  """
  try:
    import matplotlib.pyplot as plt
  except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("jaxrank.plot needs matplotlib: pip install 'jaxrank[plot]'") from e
  series = {name: np.asarray(v, np.float64) for name, v in bias.items()}
  sizes = {v.shape for v in series.values()}
  if len(sizes) != 1 or len(next(iter(sizes))) != 1:
    raise ValueError(f"bias must map names to 1-D share arrays of one length, got shapes "
                     f"{ {k: v.shape for k, v in series.items()} }")
  c = next(iter(sizes))[0]
  labels = [str(i) for i in range(c)] if labels is None else list(labels)
  if len(labels) != c:
    raise ValueError(f"labels must name the {c} categories, got {len(labels)}")
  if ax is None:
    fig, ax = plt.subplots(figsize=(max(4, 0.8 * c + 2), 3))
  else:
    fig = ax.figure
  width = 0.8 / len(series)
  x = np.arange(c)
  for i, (name, v) in enumerate(series.items()):
    ax.bar(x + (i - (len(series) - 1) / 2) * width, v, width, label=name)
  ax.set_xticks(x, labels)
  ax.set_ylabel("share")
  ax.legend()
  if title:
    ax.set_title(title)
  return fig
