"""Tests of the suite itself: coverage of the claims, the harness, and the suite against known bugs."""
