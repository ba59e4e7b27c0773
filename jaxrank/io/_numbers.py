"""Numbers of TREC fields read strictly in C syntax, eight bytes at a time (SWAR in uint64
words): ranks and grades (:func:`parse_ints`), scores (:func:`parse_floats`, correctly
rounded like ``strtod``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from jaxrank.io._bytes import low_bytes

_POW10 = np.array([10**i for i in range(20)], np.uint64)
_POW10_F = np.array([10.0**i for i in range(23)])  # exact doubles
_EXTENDED = np.finfo(np.longdouble).nmant >= 63  # x86's 80-bit long double (or wider)
_POW10_L = np.cumprod(np.r_[np.longdouble(1), np.full(27, 10, np.longdouble)])  # exact to 1e27


# SWAR ("SIMD within a register"): eight bytes of a field at once, as one uint64 (little-endian:
# the field's first byte is the lowest).
_W_ONES = np.uint64(0x0101010101010101)
_W_HIGH = np.uint64(0x8080808080808080)
_W_ZERO = np.uint64(0x3030303030303030)  # "00000000"
_W_F0 = np.uint64(0xF0F0F0F0F0F0F0F0)
_W_SIX = np.uint64(0x0606060606060606)
_W_CASE = np.uint64(0x2020202020202020)  # | lower-cases ASCII letters
_W_DOT = np.uint64(0x2E2E2E2E2E2E2E2E)
_W_E = np.uint64(0x6565656565656565)
_W_BYTE_NUMBER = np.uint64(0x0001020304050607)  # byte j is 7 - j
_W_INF, _W_NAN, _W_INFINITY = (np.uint64(int.from_bytes(w, "little"))
                               for w in (b"inf", b"nan", b"infinity"))
# Digits summed in lanes of 2, 4 and 8: x * scale + x >> shift, masked to the lanes.
_SUMS = tuple((np.uint64(scale), np.uint64(shift), np.uint64(lanes)) for scale, shift, lanes in (
    (10, 8, 0x00FF00FF00FF00FF), (100, 16, 0x0000FFFF0000FFFF), (10000, 32, 0xFFFFFFFF)))


def _eight_digits(w: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """The values of the ``k`` (0-8) ASCII digits in the low bytes of ``w`` (zeros above them),
  and whether they all are digits: right-aligned and '0'-filled, checked bytewise, then summed
  in lanes of 2, 4 and 8 digits (three multiply-adds)."""
  up = (8 - k).astype(np.uint64)  # bits that right-align the digits, '0's filling below
  up <<= np.uint64(3)
  x = w << up
  x |= _W_ZERO >> (np.uint64(64) - up)  # (NumPy shifts by 64 to zero)
  ok = ((x & _W_F0) == _W_ZERO) & (((x + _W_SIX) & _W_F0) == _W_ZERO)
  x -= _W_ZERO
  for scale, shift, lanes in _SUMS:  # (in place: no temporary but one)
    t = x >> shift
    x *= scale
    x += t
    x &= lanes
  return x, ok


def _digit_run(win: np.ndarray, starts: np.ndarray, k: np.ndarray) -> tuple[np.ndarray,
                                                                            np.ndarray]:
  """Values (uint64) of the ``k``-digit strings (``k`` <= 19) at ``starts``, and whether they
  are all digits; the last 8 digits, the 8 before, and up to 3 before those."""
  low = np.minimum(k, 8)
  v, ok = _eight_digits(win[starts + k - low] & low_bytes(low), low)
  more = np.flatnonzero(k > 8)
  if more.size:
    s, km = starts[more], k[more]
    mid = np.minimum(km - 8, 8)
    vm, okm = _eight_digits(win[s + km - 8 - mid] & low_bytes(mid), mid)
    top = np.maximum(km - 16, 0)
    vt, okt = _eight_digits(win[s] & low_bytes(top), top)
    v[more] += vm * np.uint64(10**8) + vt * np.uint64(10**16)
    ok[more] &= okm & okt
  return v, ok


def _first_byte(win: np.ndarray, starts: np.ndarray, lens: np.ndarray, pattern: np.uint64,
                fold: bool = False) -> np.ndarray:
  """The position of the first byte equal to ``pattern``'s (after lower-casing if ``fold``)
  in each field, or the field's length: a zero byte of ``w ^ pattern`` found by the borrow
  trick, its place by the exponent of the lowest set bit."""
  pos = lens.astype(np.int64)
  rest, j = np.flatnonzero(lens > 0), 0
  while rest.size:
    left = lens[rest] - j
    w = win[starts[rest] + j]
    x = (w | _W_CASE if fold else w) ^ pattern
    z = (x - _W_ONES) & ~x & _W_HIGH & low_bytes(left)
    found = z != 0
    if found.any():
      bit = np.frexp((z[found] & (~z[found] + np.uint64(1))).astype(np.float64))[1]
      pos[rest[found]] = j + (bit - 8) // 8
    rest, j = rest[~found & (left > 8)], j + 8
  return pos


def _sign(words: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """``(negative, signed)`` of fields of ``lens`` bytes whose first words are ``words``: a
  leading ``-``, or either sign."""
  first = words & np.uint64(0xFF)
  some = lens > 0
  neg = (first == 45) & some
  signed = (first == 43) & some
  signed |= neg
  return neg, signed


def parse_ints(buf: np.ndarray, win: np.ndarray, starts: np.ndarray,
                lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """int64 values of ``[+-]digits`` fields, and a status per field (0 ok, 1 not an integer,
  2 outside int64's range). Up to 8 unsigned digits (ranks, grades) take one 8-byte word."""
  n8 = np.clip(lens, 0, 8)
  w = win[starts]
  w &= low_bytes(n8)
  v, ok = _eight_digits(w, n8)
  ok &= (n8 >= 1) & (lens == n8)
  values = v.view(np.int64)
  if ok.all():
    return values, np.zeros(lens.size, np.int8)
  status = (~ok).view(np.int8)
  rest = np.flatnonzero(~ok)
  if rest.size:  # signs, more digits
    s, n = starts[rest], lens[rest]
    neg, signed = _sign(win[s], n)
    k = n - signed
    fits = (k >= 1) & (k <= 19)
    v, ok = _digit_run(win, s + signed, np.where(fits, k, 0))
    in_range = v <= np.where(neg, 2**63, 2**63 - 1).astype(np.uint64)
    values[rest] = np.where(neg, np.uint64(0) - v, v).view(np.int64)
    status[rest] = np.where(ok & fits, np.where(in_range, 0, 2), 1)
    for i in rest[k > 19].tolist():  # leading zeros, or too big
      text = buf[starts[i]:starts[i] + lens[i]].tobytes()
      body = text[1:] if text[:1] in (b"+", b"-") else text
      if not (body.isdigit() and body.isascii()):
        status[i] = 1
      elif -2**63 <= int(text) < 2**63:
        values[i], status[i] = int(text), 0
      else:
        status[i] = 2
  return values, status


def _decimal_value(m: np.ndarray, e: np.ndarray, neg: np.ndarray,
                   slow_text: Callable[[int], float]) -> np.ndarray:
  """``-+m * 10**e`` correctly rounded (``m`` < 10**19 uint64, ``e`` int64): Clinger's fast path
  in doubles for ``m <= 2**53``, ``|e| <= 22`` (both factors exact, one rounding); x86's 80-bit
  long double for ``|e| <= 27`` unless its result lies exactly halfway between two doubles
  (then a second rounding could differ); Python's parser (``slow_text(i)``) for the rest."""
  v = np.zeros(m.size)
  zero = m == 0
  fast = ~zero & (m <= 2**53) & (np.abs(e) <= 22)
  mf, p = m.astype(np.float64), _POW10_F[np.clip(np.abs(e), 0, 22)]
  v[fast] = np.where(e >= 0, mf * p, mf / p)[fast]
  slow = ~zero & ~fast
  if _EXTENDED and slow.any():
    ext = np.flatnonzero(slow & (np.abs(e) <= 27))
    ml, pl = m[ext].astype(np.longdouble), _POW10_L[np.abs(e[ext])]
    q = np.where(e[ext] >= 0, ml * pl, ml / pl)
    d = q.astype(np.float64)
    r = np.abs(q - d.astype(np.longdouble))
    half = np.spacing(d).astype(np.longdouble) / 2
    exact = (r != half) & (r != half / 2)
    v[ext[exact]] = d[exact]
    slow[ext[exact]] = False
  v = np.where(neg, -v, v)
  for i in np.flatnonzero(slow).tolist():
    v[i] = slow_text(i)
  return v


def parse_floats(buf: np.ndarray, win: np.ndarray, starts: np.ndarray,
                  lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """float64 values of C-syntax numbers (see the module docstring) and a status per field (0
  ok, 1 not a number, 2 NaN). Fields of at most 8 bytes after the sign with at most one dot
  (``0.850620``, ``-12.5``, ``17``) take one 8-byte word: the dot found by the borrow trick,
  the bytes after it shifted down over it, the digits read at once (:func:`_eight_digits`),
  ``M / 10**digits after the dot`` (exact: Clinger). Other decimals ``[+-]I[.F][e[+-]X]``,
  ``I`` and ``F`` up to 19 digits together and ``X`` up to 5, read each part so
  (:func:`_decimal_parts`); ``inf``, ``infinity`` and ``nan`` (any case) by comparing words;
  anything else (more digits, longer exponents, not a number) one by one by
  :func:`_python_float`."""
  w = win[starts]
  minus, signed = _sign(w, lens)
  neg: np.ndarray | None = None  # (None: no field is negative)
  if signed.any():  # a sign on some field: read the rest of each after it
    neg, s, n = minus, starts + signed, lens - signed
    w = win[s]
  else:  # (the usual file: no field is signed, one gather serves all)
    s, n = starts, lens
  n8 = np.clip(n, 0, 8)
  mask = low_bytes(n8)
  w &= mask
  # A dot's byte in z (the borrow trick; in place, as below: fewer temporaries).
  x = w ^ _W_DOT
  z = x - _W_ONES
  z &= np.invert(x, out=x)
  z &= _W_HIGH
  z &= mask
  has_dot = z != 0
  # The first dot's byte: the lowest set bit of z is its high bit (higher ones may be false),
  # 1 << 8 * byte after the shift; the multiply puts the byte's number in the top byte.
  dot = np.uint64(0) - z
  dot &= z
  dot >>= np.uint64(7)
  dot *= _W_BYTE_NUMBER
  dot >>= np.uint64(56)
  dot = np.where(has_dot, dot.view(np.int64), 8)  # (8: no byte is cut out of the word)
  # The bytes after the dot shifted down over it: (w & low) | (w >> 8 & ~low).
  above = np.invert(low_bytes(dot))
  digits = w >> np.uint64(8)
  digits ^= w
  digits &= above
  digits ^= w
  k = n8 - has_dot
  m, ok = _eight_digits(digits, k)
  ok &= (k >= 1) & (n == n8)
  nf = np.where(has_dot, n8 - 1 - dot, 0)
  values = m.astype(np.float64)
  values /= _POW10_F[nf]
  if neg is not None:
    np.negative(values, out=values, where=neg)
  if ok.all():
    return values, np.zeros(lens.size, np.int8)
  status = np.zeros(lens.size, np.int8)
  rest = np.flatnonzero(~ok)
  if neg is None:
    neg = np.zeros(lens.size, bool)
  values[rest], status[rest] = _decimal_parts(buf, win, starts[rest], lens[rest], neg[rest],
                                              s[rest], n[rest])
  return values, status


def _decimal_parts(buf: np.ndarray, win: np.ndarray, starts: np.ndarray, lens: np.ndarray,
                   neg: np.ndarray, s: np.ndarray, n: np.ndarray) -> tuple[np.ndarray,
                                                                           np.ndarray]:
  """:func:`parse_floats` for the fields its one-word path left (``s``, ``n``: after the
  sign): the integer, fraction and exponent digits found and read separately."""
  epos = _first_byte(win, s, n, _W_E, fold=True)
  dot = _first_byte(win, s, epos, _W_DOT)
  has_dot, has_e = dot < epos, epos < n
  ni, nf = dot, np.where(has_dot, epos - dot - 1, 0)
  es = s + epos + 1
  eneg, esigned = _sign(win[es], np.where(has_e, n - epos - 1, 0))
  ek = np.where(has_e, n - epos - 1 - esigned, 0)
  ok = (ni + nf >= 1) & (ni <= 19) & (nf <= 19) & (~has_e | ((ek >= 1) & (ek <= 5)))
  vi, oki = _digit_run(win, s, np.where(ok, ni, 0))
  vf, okf = _digit_run(win, s + dot + 1, np.where(ok, nf, 0))
  vx, okx = _digit_run(win, es + esigned, np.where(ok, ek, 0))
  ok &= oki & okf & okx & ((ni + nf <= 19) | (vi == 0))  # M below 10**19
  nf = np.where(ok, nf, 0)
  x = vx.astype(np.int64)
  e = np.where(eneg, -x, x) - nf
  m = np.where(ok, vi * _POW10[nf] + vf, 0)
  values = _decimal_value(m, np.where(ok, e, 0), neg, lambda i: float(
      buf[starts[i]:starts[i] + lens[i]].tobytes()))
  status = np.zeros(lens.size, np.int8)
  rest = np.flatnonzero(~ok)
  if rest.size:
    word = (win[s[rest]] | _W_CASE) & low_bytes(n[rest])
    inf = ((n[rest] == 3) & (word == _W_INF)) | ((n[rest] == 8) & (word == _W_INFINITY))
    nan = (n[rest] == 3) & (word == _W_NAN)
    values[rest[inf]] = np.where(neg[rest[inf]], -np.inf, np.inf)
    status[rest[nan]] = 2
    for i in rest[~inf & ~nan].tolist():  # longer numbers, or not numbers: one by one
      values[i], status[i] = _python_float(buf[starts[i]:starts[i] + lens[i]].tobytes())
  return values, status


_DECIMAL = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")  # C's syntax


def _python_float(text: bytes) -> tuple[float, int]:
  """``(value, status)`` of one field (status 0 ok, 1 not a number, 2 NaN), read by Python's
  correctly rounded parser once the field is known to be in C's syntax."""
  if _DECIMAL.fullmatch(text):
    return float(text), 0
  signed = text[:1] in (b"+", b"-")
  body = (text[1:] if signed else text).lower()
  if body in (b"inf", b"infinity"):
    return (-np.inf if text[:1] == b"-" else np.inf), 0
  return (np.nan, 2) if body == b"nan" else (0.0, 1)


def pythonic(text: str, integer: bool) -> bool:
  """Whether Python's ``int``/``float`` would accept ``text`` (which C's syntax does not)."""
  try:
    (int if integer else float)(text)
  except ValueError:
    return False
  return True
