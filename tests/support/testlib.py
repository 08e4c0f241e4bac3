"""What the Python tests share: results/ on the import path (the report's modules), the skip where
matplotlib is missing (exit 77, ctest's SKIP_RETURN_CODE), a check that prints each failure and
ends the test with its status (0 passed, 1 failed), and a runner of assert-style cases, each in a
folder of its own."""
import os
import shutil
import sys
import tempfile
import traceback

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


def run_in_folders(cases, prefix):
    """Runs each (name, function of a fresh temporary folder) case, the folder removed after it; a
    failed assert is printed with its line, since a bare assert has no message of its own. Returns
    the exit status: 0 when all passed, 1 when any failed."""
    failed = 0
    for name, case in cases:
        tmp = tempfile.mkdtemp(prefix=prefix)
        try:
            case(tmp)
            print(f"{name}: ok")
        except AssertionError as e:
            failed += 1
            where = traceback.extract_tb(e.__traceback__)[-1]
            print(f"{name}: FAILED at line {where.lineno} ({where.line}): {e}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{failed} failed" if failed else "all passed")
    return 1 if failed else 0
