"""Compiled kernels kept on disk as serialized XLA executables, for the ``jaxrank`` command.

JAX's persistent compilation cache (which the command also turns on) saves XLA's compile, but
every new process still traces the kernel and lowers it to find the cache entry: a few tenths of
a second per shape, most of a small evaluation's time. Here a kernel call is looked up by
everything that shapes its executable, and the executable is loaded and called directly.

The key is a JSON text: the jax and jaxlib versions, the backend, its devices (and on a CPU the
processor's features), ``XLA_FLAGS``, jaxrank's source, the function, its static arguments (the
measures and options), the structure, shapes and dtypes of its arguments and the x64 flag; the
entry is ``<sha256 of the key>.xla``, so any change to the code or the environment is a new entry
(never a stale kernel).

Safety. Loading an executable runs machine code from the file, and JAX's
``deserialize_and_load`` unpickles its payload (JAX's own format: a pickle of the unloaded
executable, which it documents as unsafe on untrusted input), so no file format can make a
planted entry safe to load: only entries that nobody else can have written are read.

- The directory must be a real directory (not a symbolic link) owned by the current user and not
  writable by its group or others; one created here is made ``0700`` whatever the umask. A
  directory that breaks the rules is not used (one warning line on stderr, then the command runs
  as if it had no cache); one that cannot be created or read is not used either, silently.
- An entry is opened without following a symbolic link and without blocking (a FIFO), and read
  only if it is a regular file owned by the current user and not writable by its group or others;
  anything else is skipped (the same warning line, once per process) and compiled again.
- An entry holds a header (magic, format version, the full key text, the lengths of its parts)
  and the payload, all under a sha256 checked before anything is parsed: a damaged entry (a
  flipped bit, a truncated write) or a misplaced one (another key's file copied over it) is a
  miss, compiled again and rewritten, never deserialised. The pytree structures of the arguments
  and results are kept as JAX's protobuf serialization (no pickle).

Entries are written atomically (a private temporary file, then a rename), so concurrent commands
share a directory, and a crash while writing leaves the old entry or none; a directory that
cannot be written costs nothing but the saving. Off (a plain call) until
:func:`jaxrank._host.cache.use_directory` (where the directory's rules are checked) names a
directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Callable
from typing import Any, cast

import jax
import numpy as np

from jaxrank._host import cache
from jaxrank._host.cache import unsafe_owner_or_mode, warn

_LOADED: dict[tuple[str, str], Any] = {}  # (directory, entry) -> executable or _PLAIN, this process

MAGIC = b"jaxrank-xla\n"  # the first bytes of every entry
FORMAT = 1  # the entry format's version, in its header
_DIGEST = 32  # bytes of the sha256 that follows the magic
_PLAIN = "plain"  # an entry's kind: XLA could not serialize it, call the function as it is
_EXECUTABLE = "executable"
_SUFFIX = ".xla"


def _source_digest() -> str:
  """A digest of jaxrank's own source files, every subpackage included (an edit is a new key)."""
  package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  digest = hashlib.sha256()
  for folder, subfolders, files in sorted(os.walk(package)):
    subfolders.sort()
    for name in sorted(files):
      if name.endswith(".py"):
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
          digest.update(os.path.relpath(path, package).encode() + b"\0" + f.read())
  return digest.hexdigest()


def _processor() -> str:
  """A digest of the host processor's features: a CPU executable is machine code for them (a
  cache shared between machines must not run one built for another's instructions)."""
  try:
    with open("/proc/cpuinfo", "rb") as f:
      text = f.read()
    lines = [ln for ln in text.splitlines()
             if ln.split(b":")[0].strip() in (b"flags", b"Features", b"model name", b"vendor_id")]
    info = b"\n".join(dict.fromkeys(lines))
  except OSError:
    import platform

    info = f"{platform.machine()} {platform.processor()}".encode()
  return hashlib.sha256(info).hexdigest()


_ENVIRONMENT: list[dict] = []  # computed on first use


def _environment() -> dict:
  if not _ENVIRONMENT:
    import jaxlib

    devices = jax.devices()
    _ENVIRONMENT.append({
        "jax": jax.__version__, "jaxlib": jaxlib.__version__, "platform": devices[0].platform,
        "devices": [d.device_kind for d in devices],
        "processor": _processor() if devices[0].platform == "cpu" else "",
        "xla_flags": os.environ.get("XLA_FLAGS", ""), "jaxrank_source": _source_digest()})
  return _ENVIRONMENT[0]


def key_text(fn: Callable, args: tuple, static: dict) -> str:
  """The full key of ``fn(*args, **static)``'s executable, as the JSON text its entry records
  (see the module docstring); the entry's file is named by its sha256.

  Example:
    >>> import json, numpy as np
    >>> from jaxrank._host import executables as _executables
    >>> key = json.loads(_executables.key_text(np.sort, (np.zeros(3),), {"axis": 0}))
    >>> key["function"], key["static"], key["leaves"]
    ('numpy.sort', {'axis': '0'}, [[[3], 'float64']])
  """
  is_leaf = lambda x: x is None  # noqa: E731
  leaves = [None if a is None else [list(np.shape(a)), str(_dtype(a))]
            for a in jax.tree_util.tree_leaves(args, is_leaf=is_leaf)]
  key = {"format": FORMAT, **_environment(),
         "function": f"{fn.__module__}.{getattr(fn, '__qualname__', repr(fn))}",
         "static": {name: repr(value) for name, value in sorted(static.items())},
         "arguments": repr(jax.tree_util.tree_structure(args, is_leaf=is_leaf)),
         "leaves": leaves, "x64": bool(jax.enable_x64.value)}
  return json.dumps(key, sort_keys=True, separators=(",", ":"))


def _dtype(a: Any) -> np.dtype:
  """``a``'s dtype, without copying an array to the host."""
  return a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype


def call(fn: Callable, *args: Any, **static: Any) -> Any:
  """``fn(*args, **static)`` for a ``jax.jit`` function whose keyword arguments are its static
  ones: from the executable kept on disk when there is one (see the module docstring).

  Example:
    >>> import jax, numpy as np
    >>> from jaxrank._host import executables as _executables
    >>> _executables.call(jax.jit(lambda x: x + 1), np.arange(3)).tolist()
    [1, 2, 3]
  """
  directory = cache.directory()
  if directory is None:
    return fn(*args, **static)
  cache.configure_jax()
  key = key_text(fn, args, static)
  name = hashlib.sha256(key.encode()).hexdigest() + _SUFFIX
  exe = _LOADED.get((directory, name))
  if exe is None:
    exe = _load(directory, name, key)
    if exe is None:
      exe = _compile(fn, args, static)
      _save(directory, name, key, exe)
    _LOADED[directory, name] = exe
  if exe is _PLAIN:  # XLA would not serialize it: JAX's own caches
    return fn(*args, **static)
  return exe(*args)


def _compile(fn: Callable, args: tuple, static: dict) -> Any:
  """Compiles outside JAX's persistent cache: an executable loaded from there serializes
  without the code of its fused functions (jax 0.10: "Function ... not found" when called)."""
  # jax sets its flags on Config as properties at run time: its types do not declare them
  before = jax.config.jax_enable_compilation_cache  # type: ignore[attr-defined]
  jax.config.update("jax_enable_compilation_cache", False)
  try:
    return cast(jax.stages.Wrapped, fn).lower(*args, **static).compile()  # a jax.jit function
  finally:
    jax.config.update("jax_enable_compilation_cache", before)


def encode(key: str, kind: str, parts: tuple[bytes, ...] = ()) -> bytes:
  """An entry's bytes: :data:`MAGIC`, the sha256 of the rest, then a one-line JSON header
  (format, kind, the full key text, the lengths of the parts) and the parts (the in and out
  pytree structures and the executable) one after the other.

  Example:
    >>> from jaxrank._host import executables as _executables
    >>> data = _executables.encode('{"k":1}', "plain")
    >>> _executables.decode(data, '{"k":1}'), _executables.decode(data, '{"k":2}')
    (('plain',), None)
  """
  header = json.dumps({"format": FORMAT, "kind": kind, "key": key,
                       "lengths": [len(p) for p in parts]}, separators=(",", ":")).encode()
  rest = header + b"\n" + b"".join(parts)
  return MAGIC + hashlib.sha256(rest).digest() + rest


def decode(data: bytes, key: str) -> tuple | None:
  """``(kind, *parts)`` of an entry made by :func:`encode` with this very ``key``; ``None`` for
  anything else (another key, another format, a damaged or truncated entry): the sha256 is
  checked before the header is read.

  Example:
    >>> from jaxrank._host import executables as _executables
    >>> data = _executables.encode("k", "executable", (b"in", b"out", b"exe"))
    >>> _executables.decode(data, "k")
    ('executable', b'in', b'out', b'exe')
    >>> _executables.decode(data[:-1] + b"x", "k") is None
    True
  """
  start = len(MAGIC) + _DIGEST
  if len(data) < start or data[:len(MAGIC)] != MAGIC:
    return None
  rest = data[start:]
  if hashlib.sha256(rest).digest() != data[len(MAGIC):start]:
    return None
  end = rest.find(b"\n")
  try:
    header = json.loads(rest[:end].decode())
    if (end < 0 or not isinstance(header, dict) or header.get("format") != FORMAT
        or header.get("key") != key or header.get("kind") not in (_EXECUTABLE, _PLAIN)):
      return None
    lengths = header["lengths"]
    if (not isinstance(lengths, list) or not all(type(n) is int and n >= 0 for n in lengths)
        or sum(lengths) != len(rest) - end - 1):
      return None
  except (ValueError, KeyError, TypeError):
    return None
  parts, at = [], end + 1
  for n in lengths:
    parts.append(rest[at:at + n])
    at += n
  return (header["kind"], *parts)


def _read(directory: str, name: str) -> bytes | None:
  """The bytes of the entry ``name`` if it is a regular file only the current user can have
  written; ``None`` (with the warning for anything unsafe) otherwise."""
  path = os.path.join(directory, name)
  flags = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
           | getattr(os, "O_BINARY", 0))
  try:
    fd = os.open(path, flags)
  except FileNotFoundError:
    return None
  except OSError:
    if os.path.islink(path):  # O_NOFOLLOW: ELOOP
      warn(f"cache entry {path}", "it is a symbolic link")
    return None
  try:
    st = os.fstat(fd)
    reason = None if stat.S_ISREG(st.st_mode) else "it is not a regular file"
    reason = reason or unsafe_owner_or_mode(st)
    if reason is not None:
      warn(f"cache entry {path}", reason)
      return None
    with os.fdopen(fd, "rb", closefd=False) as f:
      return f.read()
  finally:
    os.close(fd)


def _load(directory: str, name: str, key: str) -> Any:
  """The executable (or :data:`_PLAIN`) kept under ``name`` for ``key``; ``None`` for a miss."""
  from jax.experimental.serialize_executable import deserialize_and_load

  try:
    data = _read(directory, name)
    entry = None if data is None else decode(data, key)
    if entry is None:
      return None
    if entry[0] == _PLAIN:
      return _PLAIN
    in_tree, out_tree, payload = entry[1:]
    registry = jax.tree_util.default_registry
    return deserialize_and_load(
        payload, jax.tree_util.PyTreeDef.deserialize_using_proto(registry, in_tree),
        jax.tree_util.PyTreeDef.deserialize_using_proto(registry, out_tree))
  except Exception:  # unreadable, or our own entry that no longer loads
    return None


def _save(directory: str, name: str, key: str, exe: Any) -> None:
  """Writes ``exe`` under ``name``; one XLA cannot serialize (in-process, a computation compiled
  before can make a later one unserializable) gets a plain entry instead, so later processes
  call the function as it is (JAX's persistent cache, no tracing saved) rather than compile it."""
  from jax.experimental.serialize_executable import serialize

  try:
    try:
      payload, in_tree, out_tree = serialize(exe)
      data = encode(key, _EXECUTABLE, (in_tree.serialize_using_proto(),
                                       out_tree.serialize_using_proto(), payload))
    except Exception:  # XLA: "... is not serializable"
      data = encode(key, _PLAIN)
    # mkstemp: a new file (O_EXCL, O_NOFOLLOW), mode 0600 whatever the umask
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=_SUFFIX)
    try:
      if hasattr(os, "fchmod"):
        os.fchmod(fd, 0o600)  # a umask like 0277 would leave 0400
      with os.fdopen(fd, "wb") as f:
        f.write(data)
      os.replace(tmp, os.path.join(directory, name))  # replaces a link or FIFO, not its target
    except BaseException:
      os.unlink(tmp)
      raise
  except Exception:  # a read-only or full directory: no saving, no error
    pass
