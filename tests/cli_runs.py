"""Helpers of the tests that call `jaxrank evaluate` in process (tests/cli, tests/trec)."""

from jaxrank import cli


def run_cli(capsys, *args):
  """``jaxrank evaluate ARGS`` in this process: (exit code, stdout, stderr)."""
  code = cli.main(["evaluate", *map(str, args)])
  captured = capsys.readouterr()
  return code, captured.out, captured.err


def write(tmp_path, name, text):
  """``text`` written to ``tmp_path / name``; returns the path."""
  path = tmp_path / name
  path.write_text(text)
  return path
