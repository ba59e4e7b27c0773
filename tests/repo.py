"""Where the repository's files are, for the tests in any folder of tests/."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository
DATA = ROOT / "tests" / "data"  # data shipped with the tests (trec_eval's test suite, ...)
