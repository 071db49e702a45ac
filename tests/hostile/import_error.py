"""Raises while being imported: nothing can be graded."""
from tests.hostile._honest import *  # noqa: F401,F403

raise RuntimeError("this submission fails while it is being imported")
