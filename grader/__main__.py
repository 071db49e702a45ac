"""`python -m grader`: the same command as `python -m spec_tests.grade`."""

import sys

from grader.grade import main

sys.exit(main())
