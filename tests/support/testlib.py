"""What the Python tests share: results/ on the import path (the report's modules), the skip where
matplotlib is missing (exit 77, ctest's SKIP_RETURN_CODE), and a check that prints each failure and
ends the test with its status (0 passed, 1 failed)."""
import os
import sys

# HERE is tests/ (this file stands in tests/support/): the fixtures and the repository are found from it.
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(HERE, "..", "results"))


def require_matplotlib(test):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"{test}: matplotlib is missing: skipped")
        sys.exit(77)


class Checks:
    def __init__(self, test):
        self.test, self.failures = test, []

    def __call__(self, ok, what):
        if not ok:
            self.failures.append(what)
            print(f"{self.test}: FAILED: {what}")

    def finish(self):
        print(f"{self.test}: {len(self.failures)} failed" if self.failures else f"{self.test}: passed")
        sys.exit(1 if self.failures else 0)
