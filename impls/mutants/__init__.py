"""Deliberately buggy implementations ("mutants") of the v1 contract.

`_base.py` is a correct, plain NumPy implementation of the whole contract.
Every other module here starts from it and plants exactly one bug of the kind
learners really write (a missing transpose, a wrong softmax axis, a -1e9 mask
fill, ...).  Each mutant is a complete contract module and carries two plain
attributes: `BUG`, the bug in words, and `CAUGHT_BY`, the claim ID
(spec_tests/claims.toml) whose tests should fail on it.  The suite's own tests use them to
show that every claim has teeth: the base passes, each mutant fails its claim.
"""
