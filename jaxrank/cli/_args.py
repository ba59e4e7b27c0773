"""Checks of command-line arguments shared by ``jaxrank evaluate`` and ``jaxrank compare``."""

from __future__ import annotations

import argparse
import sys


def check_cut_and_level(args: argparse.Namespace) -> None:
  """trec_eval's ``-M`` and ``-l`` (shared by ``evaluate`` and ``compare``): positive numbers."""
  if args.max_docs is not None and args.max_docs <= 0:
    raise ValueError(f"-M must be a positive number of documents, got {args.max_docs}")
  if args.level <= 0:
    raise ValueError(f"-l must be a positive relevance level, got {args.level}")


def check_stdin(paths: dict[str, str]) -> None:
  """Refuses ``-`` (standard input) for ``paths`` (``{argument: path}``) named twice or when
  the command was started with standard input closed (``<&-``)."""
  dashes = [name for name, path in paths.items() if path == "-"]
  if len(dashes) > 1:
    raise ValueError(f"{' and '.join(dashes)} cannot all be standard input ('-'): it can be "
                     "read once; give the others as files")
  if dashes and sys.stdin is None:
    raise ValueError(f"{dashes[0]} is '-' (standard input), but standard input is closed "
                     "(`<&-`)")
