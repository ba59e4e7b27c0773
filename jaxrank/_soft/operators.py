"""Soft (differentiable) rank operators: smooth relaxations of the 1-based rank of each item.

Every operator maps scores ``[..., n]`` (higher first) to soft ranks in ``[1, n]`` that tend to
the hard ranks ``1 + #{j: s_j > s_i}`` as ``temperature`` goes to 0. Tied scores tend to the
midpoint of their tie group (``[1, 1, 3]``-style: two items tied for the top both get 1.5);
NeuralSort only approximately (the rows at a tie group's edges also split with the neighbour).
Padded items (``where=False``) are not ranked and do not rank anyone; their own soft rank is
reported as ``n + 1``.

Operators and the meaning of ``temperature``:

* ``"sigmoid"`` (ApproxNDCG, Qin, Liu & Li 2010): :math:`r_i = 1 + \\sum_{j \\ne i}
  \\sigma((s_j - s_i)/T)`. ``T`` is in score units: score gaps much larger than ``T`` count as
  hard comparisons. Cost O(n) per ranked item, so the ranks of ``R`` items cost O(R n) time and,
  chunked, O(R) extra memory per list.
* ``"neuralsort"`` (Grover et al. 2019): relaxed permutation matrix with rows
  :math:`\\mathrm{softmax}(((n + 1 - 2i) s - A_s 1)/T)`; ``T`` in score units (its logits grow
  with ``n |s|``, so it sharpens with longer lists). Soft rank :math:`r_j = \\sum_i i P_{ij}`.
* ``"softsort"`` (Prillo & Eisenschlos 2020): rows :math:`\\mathrm{softmax}(-|\\mathrm{sort}(s)_i
  - s_j|/T)`, ``T`` in score units. Both permutation operators cost O(n^2) time and are walked in
  chunks of rows, so no ``n x n`` block is held at once.
* ``"fast_l2"`` / ``"fast_kl"`` (Blondel et al., ICML 2020): the projection of ``-s/T`` onto the
  permutahedron of ``(n, ..., 1)`` with L2 or KL regularisation. ``T`` is the regularisation
  strength ε: the result is *exactly* the hard rank once ε is below the smallest score gap
  (L2), and it must grow with the gaps and with ``n`` to stay smooth. Forward pass: one sort and a
  loop-free isotonic regression (O(n^2) work, no sequential loop over elements, O(128 n)
  memory per list); backward pass hand-written (block averages of the cotangent), O(n).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import ArrayLike

from jaxrank._core import checks as _checks
from jaxrank._core import counting as _counting
from jaxrank._core.options import OPERATORS

_ROW_CHUNK = 128  # rows of a relaxed permutation matrix held at once


def finite_scores(scores: jax.Array) -> jax.Array:
  """Float scores clipped so that differences and ``n``-fold sums stay finite; NaN ranks last."""
  s = scores.astype(jnp.promote_types(scores.dtype, jnp.float32))
  big = float(jnp.finfo(s.dtype).max) ** 0.5 / 4
  return jnp.where(jnp.isnan(s), -big, jnp.clip(s, -big, big))


def _big(dtype: jnp.dtype) -> float:
  return float(jnp.finfo(dtype).max) / 8


def _inputs(scores: ArrayLike, where: ArrayLike | None,
            temperature: float | jax.Array) -> tuple[jax.Array, jax.Array | None,
                                                     float | jax.Array]:
  scores = _checks.as_array("scores", scores, kinds="fi", min_ndim=1, wide_ints="float")
  valid = _checks.as_where(where, scores.shape)
  return scores, valid, _checks.check_temperature("temperature", temperature)


def _valid_or_all(s: jax.Array, valid: jax.Array | None) -> jax.Array:
  return jnp.ones(s.shape, bool) if valid is None else valid


# ----------------------------------------------------------------------------------------------
# Sigmoid (ApproxNDCG) ranks of chosen items: O(slots x n).


def sigmoid_slot_ranks(s: jax.Array, valid: jax.Array | None, slot_index: jax.Array,
                       temperature: float | jax.Array) -> jax.Array:
  """``1 + sum_{j valid, j != i} sigmoid((s_j - s_i)/T)`` for the items at ``slot_index``."""
  items = (s,) if valid is None else (s, valid)
  q = jnp.take_along_axis(s, slot_index, axis=-1)[..., :, None]

  def above(chunk: tuple[jax.Array, ...], _: jax.Array) -> tuple[jax.Array]:
    p = jax.nn.sigmoid((chunk[0] - q) / temperature)
    return (p if len(chunk) == 1 else jnp.where(chunk[1], p, 0.0),)

  (total,) = _counting.sum_over_items(above, items, dtype=s.dtype)
  own = 0.5 if valid is None else 0.5 * jnp.take_along_axis(valid, slot_index, axis=-1)
  return 1.0 + total - own


# ----------------------------------------------------------------------------------------------
# Relaxed permutation matrices (NeuralSort, SoftSort), walked in chunks of rows.


# logits(rows, cols, extra): the logits of rows ``rows [B]`` at the items' values ``cols``.
_Logits = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]


def _row_logits(kind: str, s: jax.Array, valid: jax.Array | None,
                temperature: float | jax.Array) -> tuple[_Logits, jax.Array]:
  """``logits(rows, cols)``: logits of rows ``rows [B]`` (0-based) at item values ``cols``."""
  ok = _valid_or_all(s, valid)
  nv = jnp.sum(ok, axis=-1).astype(s.dtype)[..., None, None]
  if kind == "neuralsort":
    # A_j = sum_k |s_j - s_k| over valid k, chunked like every item sum.
    items = (s,) if valid is None else (s, valid)
    q = s[..., :, None]
    (absdev,) = _counting.sum_over_items(
        lambda c, _: (jnp.abs(c[0] - q) if len(c) == 1 else jnp.where(c[1], jnp.abs(c[0] - q),
                                                                       0.0),),
        items, dtype=s.dtype)

    def neuralsort_logits(rows: jax.Array, col_s: jax.Array, col_a: jax.Array) -> jax.Array:
      coef = (nv + 1 - 2 * (rows + 1).astype(s.dtype)[..., :, None])
      return (coef * col_s[..., None, :] - col_a[..., None, :]) / temperature

    return neuralsort_logits, absdev
  big = jnp.asarray(_big(s.dtype) ** 0.5, s.dtype)
  srt = -jnp.sort(jnp.where(ok, -s, big), axis=-1)  # valid scores descending, padding last

  def softsort_logits(rows: jax.Array, col_s: jax.Array, _: jax.Array) -> jax.Array:
    top = jnp.take(srt, rows, axis=-1)
    return -jnp.abs(top[..., :, None] - col_s[..., None, :]) / temperature

  return softsort_logits, jnp.zeros_like(s)


def _masked_logits(logits: jax.Array, valid_cols: jax.Array | None,
                   dtype: jnp.dtype) -> jax.Array:
  big = _big(dtype)
  z = jnp.clip(logits, -big, big)
  return z if valid_cols is None else jnp.where(valid_cols[..., None, :], z, -2 * big)


def perm_slot_ranks(kind: str, s: jax.Array, valid: jax.Array | None, slot_index: jax.Array,
                    temperature: float | jax.Array) -> jax.Array:
  """``sum_i i P[i, j]`` for the items ``j`` at ``slot_index``, rows walked in chunks."""
  n = s.shape[-1]
  ok = _valid_or_all(s, valid)
  nv = jnp.sum(ok, axis=-1)[..., None, None]
  logits, extra = _row_logits(kind, s, valid, temperature)
  take = functools.partial(jnp.take_along_axis, indices=slot_index, axis=-1)
  slot_s, slot_x = take(s), take(extra)
  row_ids = jnp.arange(n, dtype=jnp.int32)

  slot_valid = None if valid is None else take(valid)

  def rows(chunk: tuple[jax.Array, ...], idx: jax.Array) -> tuple[jax.Array]:
    del chunk
    z = _masked_logits(logits(idx, s, extra), valid, s.dtype)  # [..., B, n]
    lse = jax.nn.logsumexp(z, axis=-1)[..., :, None]
    zs = _masked_logits(logits(idx, slot_s, slot_x), slot_valid, s.dtype)  # [..., B, m]
    # Rows past the valid items (all of a fully padded list) are masked before exp, so
    # neither value nor gradient overflows.
    p = jnp.exp(jnp.where(idx[:, None] < nv, zs - lse, -jnp.inf))
    return (jnp.swapaxes(p * (idx + 1).astype(s.dtype)[:, None], -1, -2),)

  (ranks,) = _counting.sum_over_items(rows, (row_ids,), dtype=s.dtype, chunk=_ROW_CHUNK)
  return ranks


def _perm_matrix(kind: str, scores: ArrayLike, where: ArrayLike | None,
                 temperature: float) -> jax.Array:
  s, valid, t = _inputs(scores, where, temperature)
  return _perm_matrix_jit(finite_scores(s), valid, t, kind=kind)


@functools.partial(jax.jit, static_argnames=("kind",))
def _perm_matrix_jit(s: jax.Array, valid: jax.Array | None, temperature: jax.Array, *,
                     kind: str) -> jax.Array:
  logits, extra = _row_logits(kind, s, valid, temperature)
  z = _masked_logits(logits(jnp.arange(s.shape[-1]), s, extra), valid, s.dtype)
  p = jax.nn.softmax(z, axis=-1)
  nv = jnp.sum(_valid_or_all(s, valid), axis=-1)[..., None, None]
  return jnp.where(jnp.arange(s.shape[-1])[:, None] < nv, p, 0.0)


def neural_sort(scores: ArrayLike, *, temperature: float = 1.0,
                where: ArrayLike | None = None) -> jax.Array:
  r"""NeuralSort's relaxed permutation matrix (Grover et al., ICLR 2019), descending order.

  .. math:: \hat P_{i,:} = \mathrm{softmax}\big(((n + 1 - 2i)\,s - A_s \mathbf 1)/T\big),
     \quad (A_s)_{jk} = |s_j - s_k|

  Row ``i`` is a distribution over the items for position ``i`` (1-based); rows sum to 1, columns
  need not. As ``T -> 0`` it tends to the sorting permutation (tied items share their rows'
  mass). ``n`` counts valid items; rows beyond it and padded columns are 0. This builds the full
  ``[..., n, n]`` matrix; the soft metrics walk it in chunks of rows instead.

  Example:
    >>> import jaxrank
    >>> jaxrank.neural_sort([[1.0, 3.0, 2.0]], temperature=0.01).round(2).tolist()
    [[[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]]
  """
  return _perm_matrix("neuralsort", scores, where, temperature)


def soft_sort(scores: ArrayLike, *, temperature: float = 1.0,
              where: ArrayLike | None = None) -> jax.Array:
  r"""SoftSort's relaxed permutation matrix (Prillo & Eisenschlos, ICML 2020), descending.

  .. math:: \hat P_{i,:} = \mathrm{softmax}\big(-|\mathrm{sort}(s)_i - s|/T\big)

  Rows sum to 1; ``T`` is in score units. Padded items and rows beyond the number of valid items
  are 0.

  Example:
    >>> import jaxrank
    >>> jaxrank.soft_sort([[1.0, 3.0, 2.0]], temperature=0.01).round(2).tolist()
    [[[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]]
  """
  return _perm_matrix("softsort", scores, where, temperature)


# ----------------------------------------------------------------------------------------------
# Fast soft rank / sort: permutahedron projection by sort + loop-free isotonic regression.


_ISOTONIC_ROWS = 128  # block starts j handled at once: O(rows x n) memory per list


def _isotonic(y: jax.Array, w: jax.Array, nv: jax.Array, kl: bool) -> jax.Array:
  """Decreasing isotonic regression of one sorted list on its first ``nv`` entries.

  L2: ``v_i = min_{j <= i} max_{k >= i} mean(y[j..k])``; KL: the block value
  ``LSE(y[j..k]) - log(sum w[j..k])`` (``w > 0``). Block sums are accumulated from each block's
  own start, so no large prefix sum is ever subtracted. O(n^2) work and no sequential loop over
  elements; the block starts ``j`` are walked in chunks, so memory is O(chunk x n).
  """
  n = y.shape[-1]
  k = jnp.arange(n)[None, :]

  def best(start: int | jax.Array, size: int) -> jax.Array:
    """min over j in [start, start + size), j <= i, of max_{k >= i} value[j, k]."""
    j = start + jnp.arange(size)[:, None]
    seg = (k >= j) & (k < nv)
    if kl:
      # y is sorted in decreasing order, so y[j] is the largest of y[j..k]: a shifted cumsum
      # is a stable LSE (much faster than cumlogsumexp on CPU).
      top = jnp.take(y, j[:, 0])[:, None]
      shifted = jnp.cumsum(jnp.where(seg, jnp.exp(y[None, :] - top), 0.0), axis=1)
      total_w = jnp.cumsum(jnp.where(seg, w[None, :], 0.0), axis=1)
      value = (top + jnp.log(jnp.where(seg, shifted, 1.0))
               - jnp.log(jnp.where(seg, total_w, 1.0)))
    else:
      value = jnp.cumsum(jnp.where(seg, y[None, :], 0.0), axis=1) / (k - j + 1).astype(y.dtype)
    value = jnp.where(seg, value, -jnp.inf)
    best_end = lax.cummax(value, axis=1, reverse=True)  # [j, i] = max_{k >= i} value[j, k]
    return jnp.min(jnp.where(j <= k, best_end, jnp.inf), axis=0)

  if n <= _ISOTONIC_ROWS:
    return best(0, n)
  full = n // _ISOTONIC_ROWS
  v = lax.fori_loop(0, full, lambda c, v: jnp.minimum(v, best(c * _ISOTONIC_ROWS,
                                                              _ISOTONIC_ROWS)),
                    jnp.full((n,), jnp.inf, y.dtype))
  if n % _ISOTONIC_ROWS:
    v = jnp.minimum(v, best(full * _ISOTONIC_ROWS, n % _ISOTONIC_ROWS))
  return v


def _blocks(v: jax.Array, nv: jax.Array) -> jax.Array:
  """Block id of each sorted position (equal isotonic values), padding in its own blocks."""
  n = v.shape[-1]
  i = jnp.arange(n)
  tol = 64 * jnp.finfo(v.dtype).eps * jnp.maximum(1.0, jnp.abs(v))
  prev = jnp.concatenate([v[:1], v[:-1]])
  start = (i == 0) | (i >= nv) | (jnp.abs(v - prev) > jnp.maximum(tol, jnp.roll(tol, 1)))
  return jnp.cumsum(start) - 1


def _block_average(g: jax.Array, z: jax.Array, v: jax.Array, nv: jax.Array,
                   kl: bool) -> jax.Array:
  """The isotonic regression's VJP: per block, the mean (L2) or softmax(z)-weighted sum (KL)."""
  n = g.shape[-1]
  bid = _blocks(v, nv)
  total = jax.ops.segment_sum(g, bid, num_segments=n)[bid]
  if not kl:
    size = jax.ops.segment_sum(jnp.ones_like(g), bid, num_segments=n)[bid]
    return total / size
  top = jax.ops.segment_max(z, bid, num_segments=n)[bid]
  e = jnp.exp(z - top)
  return e / jax.ops.segment_sum(e, bid, num_segments=n)[bid] * total


# What the projection's backward pass reads: the sort, the sorted values, the isotonic values, nv.
_ProjectRes = tuple[jax.Array, jax.Array, jax.Array, jax.Array]


def _project_fwd_1d(theta: jax.Array, ok: jax.Array,
                    kl: bool) -> tuple[jax.Array, _ProjectRes]:
  """Projection of ``theta`` onto the permutahedron of ``(nv, ..., 1)`` (valid items only)."""
  n = theta.shape[-1]
  nv = jnp.sum(ok)
  key = jnp.where(ok, theta, -jnp.inf)
  perm = jnp.argsort(-key, stable=True)
  z = theta[perm]
  w = (nv - jnp.arange(n)).astype(theta.dtype)
  lw = jnp.log(jnp.maximum(w, 1.0))
  y = z - lw if kl else z - w
  v = _isotonic(z if kl else y, jnp.maximum(w, 1.0), nv, kl)
  # w + (y - v) rather than z - v: exact where a block is a single item (y == v), even when
  # z = -s/eps is huge.
  primal = jnp.where(jnp.arange(n) < nv, (lw if kl else w) + (y - v), 0.0)
  out = jnp.zeros_like(theta).at[perm].set(primal)
  return out, (perm, z, v, nv)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _project(theta: jax.Array, ok: jax.Array, kl: bool) -> jax.Array:
  return _project_fwd_1d(theta, ok, kl)[0]


def _project_fwd(theta: jax.Array, ok: jax.Array,
                 kl: bool) -> tuple[jax.Array, tuple[_ProjectRes, jax.Array]]:
  out, res = _project_fwd_1d(theta, ok, kl)
  return out, (res, ok)


def _project_bwd(kl: bool, res: tuple[_ProjectRes, jax.Array],
                 g: jax.Array) -> tuple[jax.Array, None]:
  (perm, z, v, nv), ok = res
  gs = jnp.where(jnp.arange(g.shape[-1]) < nv, g[perm], 0.0)
  gz = gs - _block_average(gs, z, v, nv, kl)
  return jnp.zeros_like(g).at[perm].set(gz), None


_project.defvjp(_project_fwd, _project_bwd)


def _batched(fn: Callable[..., jax.Array], *arrays: jax.Array) -> jax.Array:
  """Applies a 1-D function over all leading dimensions."""
  lead, n = arrays[0].shape[:-1], arrays[0].shape[-1]
  flat = [a.reshape(math.prod(lead), n) for a in arrays]  # not -1: n may be 0
  return jax.vmap(fn)(*flat).reshape(*lead, n)


@functools.partial(jax.jit, static_argnames=("kl",))
def fast_ranks(s: jax.Array, valid: jax.Array | None, temperature: float | jax.Array, *,
               kl: bool) -> jax.Array:
  ok = _valid_or_all(s, valid)
  n = s.shape[-1]
  if n == 0:
    return s
  # Keep theta and the n-term block sums finite at any regularisation strength.
  limit = _big(s.dtype) / (4 * n)
  theta = jnp.clip(-s / temperature, -limit, limit)
  primal = _batched(lambda t, o: _project(t, o, kl), theta, ok)
  ranks = jnp.exp(primal) if kl else primal
  return jnp.where(ok, ranks, n + 1)


def _sort_1d(values: jax.Array, ok: jax.Array,
             temperature: float | jax.Array) -> tuple[jax.Array, jax.Array]:
  n = values.shape[-1]
  nv = jnp.sum(ok)
  srt_perm = jnp.argsort(jnp.where(ok, -values, jnp.inf), stable=True)
  w = values[srt_perm]
  rho = (nv - jnp.arange(n)).astype(values.dtype) / temperature
  return _sorted_projection(rho, jnp.where(jnp.arange(n) < nv, w, 0.0), nv), srt_perm


@jax.custom_vjp
def _sorted_projection(rho: jax.Array, w: jax.Array, nv: jax.Array) -> jax.Array:
  """``rho - isotonic(rho - w)``: the L2 projection of sorted ``rho`` onto P(w)."""
  return _sorted_projection_fwd(rho, w, nv)[0]


def _sorted_projection_fwd(rho: jax.Array, w: jax.Array,
                           nv: jax.Array) -> tuple[jax.Array, tuple[jax.Array, jax.Array,
                                                                   jax.Array]]:
  y = rho - w
  v = _isotonic(y, w, nv, False)
  # w + (y - v) rather than rho - v: exact for unpooled items (y == v) however large rho/eps is.
  return jnp.where(jnp.arange(w.shape[-1]) < nv, w + (y - v), 0.0), (v, nv, rho)


def _sorted_projection_bwd(res: tuple[jax.Array, jax.Array, jax.Array],
                           g: jax.Array) -> tuple[jax.Array, jax.Array, None]:
  v, nv, rho = res
  gs = jnp.where(jnp.arange(g.shape[-1]) < nv, g, 0.0)
  avg = _block_average(gs, rho, v, nv, False)
  return gs - avg, avg, None


_sorted_projection.defvjp(_sorted_projection_fwd, _sorted_projection_bwd)


def fast_soft_sort(scores: ArrayLike, *, temperature: float = 1.0,
                   where: ArrayLike | None = None) -> jax.Array:
  r"""Blondel et al.'s fast soft sort (L2), descending: :math:`P(\rho/\varepsilon, s)`.

  .. math:: \mathrm{softsort}_\varepsilon(s) = \arg\min_{y \in \mathcal P(s)}
     \|y - \rho/\varepsilon\|^2, \quad \rho = (n, \ldots, 1)

  The hard descending sort once ``temperature`` (ε) is below about the smallest gap between
  sorted scores; neighbouring values are pooled towards their mean as ε grows. Entries past the
  number of valid items are 0. Under ``jit``/``vmap``; hand-written backward pass.

  Example:
    >>> import jaxrank
    >>> jaxrank.fast_soft_sort([[1.0, 3.0, 2.0]], temperature=0.1).tolist()
    [[3.0, 2.0, 1.0]]
    >>> [round(float(v), 2) for v in jaxrank.fast_soft_sort([[1.0, 3.0, 2.0]], temperature=10.0)[0]]
    [2.1, 2.0, 1.9]
  """
  s, valid, t = _inputs(scores, where, temperature)
  return _fast_sort(finite_scores(s), valid, t)


@jax.jit
def _fast_sort(s: jax.Array, valid: jax.Array | None, temperature: jax.Array) -> jax.Array:
  if s.shape[-1] == 0:
    return s
  ok = _valid_or_all(s, valid)
  return _batched(lambda x, o: _sort_1d(x, o, temperature)[0], s, ok)


def fast_soft_rank(scores: ArrayLike, *, temperature: float = 1.0,
                   where: ArrayLike | None = None, regularization: str = "l2") -> jax.Array:
  r"""Blondel et al.'s fast soft rank (ICML 2020), rank 1 = highest score.

  .. math:: r_\varepsilon(s) = \arg\min_{y \in \mathcal P(\rho)} \|y + s/\varepsilon\|^2
     \ \text{(L2)}, \qquad \rho = (n, \ldots, 1)

  and for ``regularization="kl"`` the KL projection :math:`\exp P_{KL}(-s/\varepsilon,
  \log\rho)`. ``temperature`` is ε (in score units): with L2 the result is exactly the hard rank
  once ε is smaller than every score gap; ties get their midpoint rank; ε must grow with the
  score gaps and with ``n`` for useful gradients. Padded items get ``n + 1``.

  Example:
    >>> import jaxrank
    >>> jaxrank.fast_soft_rank([[5.0, 1.0, 2.0]], temperature=0.1).tolist()
    [[1.0, 3.0, 2.0]]
    >>> jaxrank.fast_soft_rank([[1.0, 1.0, 0.0]], temperature=0.1).tolist()
    [[1.5, 1.5, 3.0]]
  """
  s, valid, t = _inputs(scores, where, temperature)
  _checks.check_choice("regularization", regularization, ("l2", "kl"))
  return fast_ranks(finite_scores(s), valid, t, kl=regularization == "kl")


# ----------------------------------------------------------------------------------------------
# One entry point for every operator.


def slot_ranks(operator: str, s: jax.Array, valid: jax.Array | None, slot_index: jax.Array,
               temperature: float | jax.Array) -> jax.Array:
  """Soft ranks of the items at ``slot_index`` under ``operator`` (``s`` already finite)."""
  if operator == "sigmoid":
    return sigmoid_slot_ranks(s, valid, slot_index, temperature)
  if operator in ("neuralsort", "softsort"):
    return perm_slot_ranks(operator, s, valid, slot_index, temperature)
  ranks = fast_ranks(s, valid, temperature, kl=operator == "fast_kl")
  return jnp.take_along_axis(ranks, slot_index, axis=-1)


@functools.partial(jax.jit, static_argnames=("operator",))
def _all_ranks(s: jax.Array, valid: jax.Array | None, temperature: jax.Array, *,
               operator: str) -> jax.Array:
  index = jnp.broadcast_to(jnp.arange(s.shape[-1], dtype=jnp.int32), s.shape)
  ranks = slot_ranks(operator, s, valid, index, temperature)
  return ranks if valid is None else jnp.where(valid, ranks, s.shape[-1] + 1)


def soft_ranks(scores: ArrayLike, *, temperature: float = 1.0, where: ArrayLike | None = None,
               operator: str = "sigmoid") -> jax.Array:
  r"""Soft 1-based ranks of every item (rank 1 = highest score) under a chosen operator.

  .. math:: \text{sigmoid: } r_i = 1 + \sum_{j \ne i,\ j \text{ valid}}
     \sigma\big((s_j - s_i)/T\big)

  ``operator`` is ``"sigmoid"``, ``"neuralsort"``, ``"softsort"``, ``"fast_l2"`` or
  ``"fast_kl"`` (module docstring: meaning and scale of ``temperature`` for each). All tend to
  the hard ranks as ``temperature -> 0`` (tied items: the midpoint of their group). Values lie in
  ``[1, n]`` for valid items; padded items get ``n + 1``.

  Example:
    >>> import jaxrank
    >>> jaxrank.soft_ranks([[3.0, 1.0, 2.0]], temperature=1e-3).tolist()
    [[1.0, 3.0, 2.0]]
    >>> jaxrank.soft_ranks([[1.0, 1.0, 0.0]], temperature=1e-3).tolist()
    [[1.5, 1.5, 3.0]]
  """
  s, valid, t = _inputs(scores, where, temperature)
  _checks.check_choice("operator", operator, OPERATORS)
  return _all_ranks(finite_scores(s), valid, t, operator=operator)
