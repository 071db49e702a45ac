"""`python -m spec_tests.grade`: the grader's command line (the grader lives in `grader/`)."""

import sys

from grader.grade import main

if __name__ == "__main__":
    sys.exit(main())
