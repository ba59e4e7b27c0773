"""Where the ``jaxrank`` command keeps compiled kernels, and whether it may: the cache
directory's rules, checked without importing JAX.

Loading a compiled kernel runs code from the file (:mod:`jaxrank._host.executables`), so a
directory is used only if nobody else can have written to it: it must be a real directory owned
by the current user and not writable by its group or others (each one created here is ``0700``,
whatever the umask). One that breaks the rules prints one warning line (:func:`warn`) and the
command runs as if it had no cache; one that cannot be created is not used either, silently.

The command names its directories here (:func:`use_directory` for jaxrank's executables,
:func:`use_jax_cache` for JAX's persistent compilation cache); JAX is configured only when a
kernel is first called (:func:`configure_jax`), so a run scored on the host never imports it.
"""

from __future__ import annotations

import os
import stat
import sys

_DIRECTORY: str | None = None  # jaxrank's executables (None: off)
_JAX_ASKED: str | None = None  # JAX's persistent cache directory, as use_jax_cache asked
_JAX_CONFIGURED: str | None = None  # the one configure_jax last gave JAX
_WARNED: list[str] = []  # the one warning this process printed


def directory() -> str | None:
  """The directory of jaxrank's executables, or ``None`` when the cache is off."""
  return _DIRECTORY


def use_jax_cache(path: str | None) -> None:
  """Points JAX's persistent compilation cache at ``path`` (already checked by the caller) when
  JAX is next used (:func:`configure_jax`), every kernel however quick to compile."""
  global _JAX_ASKED
  _JAX_ASKED = path
  if "jax" in sys.modules:
    configure_jax()


def configure_jax() -> None:
  """Applies :func:`use_jax_cache`'s directory to JAX's configuration (once per directory), once
  JAX is imported."""
  global _JAX_CONFIGURED
  path = _JAX_ASKED
  if path is None or _JAX_CONFIGURED == path or "jax" not in sys.modules:
    return
  jax = sys.modules["jax"]  # a caller about to run a kernel has imported JAX
  jax.config.update("jax_compilation_cache_dir", path)
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
  _JAX_CONFIGURED = path


def use_directory(path: str | None) -> bool:
  """Keeps executables in ``path`` (created ``0700`` if needed); ``None`` turns it off.

  Returns whether ``path`` is used: a directory that breaks the rules of the module docstring
  prints one warning line and is not used, nor is one that cannot be created (silently).

  Example:
    >>> from jaxrank._host import cache
    >>> cache.use_directory(None)
    False
  """
  global _DIRECTORY
  _DIRECTORY = None
  if path is None:
    return False
  path = os.path.abspath(path)
  try:
    reason = check_directory(path, follow=False)
  except OSError:  # a read-only home, a file in the way: no cache, no error
    return False
  if reason is not None:
    warn(f"cache directory {path}", reason)
    return False
  _DIRECTORY = path
  return True


_UID: int | None = os.getuid() if hasattr(os, "getuid") else None  # None: no owners (Windows)


def check_directory(path: str, *, follow: bool = True) -> str | None:
  """Creates the directory ``path`` (each missing directory ``0700``, whatever the umask) and
  returns why it is unsafe for a cache, or ``None`` when it is safe: it must be owned by the
  current user and not writable by its group or others; with ``follow=False`` it must not be a
  symbolic link. Raises OSError when it cannot be created or is not a directory.

  Example:
    >>> import tempfile
    >>> from jaxrank._host import cache
    >>> with tempfile.TemporaryDirectory() as root:
    ...   print(cache.check_directory(os.path.join(root, "new", "cache")),
    ...         oct(os.stat(os.path.join(root, "new")).st_mode & 0o777))
    None 0o700
  """
  missing = []
  top = os.path.abspath(path)
  while not os.path.lexists(top):
    missing.append(top)
    parent = os.path.dirname(top)
    if parent == top:
      break
    top = parent
  for directory in reversed(missing):
    try:
      os.mkdir(directory, 0o700)
    except FileExistsError:  # another command made it meanwhile: checked below as any other
      continue
    _private(directory)
  st = os.lstat(path) if not follow else os.stat(path)
  if stat.S_ISLNK(st.st_mode):
    return "it is a symbolic link"
  if not stat.S_ISDIR(st.st_mode):
    raise NotADirectoryError(f"{path} is not a directory")
  return unsafe_owner_or_mode(st)


def _private(directory: str) -> None:
  """Makes the directory just created ``0700`` (``mkdir``'s mode is cut by a umask like 0277),
  through a descriptor that does not follow a symbolic link put there meanwhile."""
  if _UID is None:
    return
  fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
  try:
    if os.fstat(fd).st_uid == _UID:
      os.fchmod(fd, 0o700)
  finally:
    os.close(fd)


def unsafe_owner_or_mode(st: os.stat_result) -> str | None:
  """Why a file or directory with the status ``st`` could have been written by someone other
  than the current user, or ``None``: it must be owned by the user and not writable by its group
  or others (not checked where the system has no user ids).

  Example:
    >>> import tempfile
    >>> from jaxrank._host import cache
    >>> with tempfile.TemporaryDirectory() as private:  # made 0700
    ...   print(cache.unsafe_owner_or_mode(os.stat(private)))
    None
  """
  if _UID is None:
    return None
  if st.st_uid != _UID:
    return f"it is owned by user {st.st_uid}, not by you (user {_UID})"
  if st.st_mode & 0o022:
    return (f"it is writable by its group or others (mode {stat.S_IMODE(st.st_mode):04o}; "
            f"chmod go-w makes it usable)")
  return None


def warn(what: str, reason: str) -> None:
  """Prints ``jaxrank: warning: not using WHAT: REASON; compiling without it`` on stderr, once
  per process (the first problem found)."""
  if _WARNED:
    return
  line = f"jaxrank: warning: not using {what}: {reason}; compiling without it\n"
  _WARNED.append(line)
  try:
    sys.stderr.write(line)
    sys.stderr.flush()
  except (OSError, ValueError):
    pass
