"""Grading student implementations: `python -m spec_tests.grade` (rubric, isolated run, scores, reports)."""
