"""Generated mutants: cosmic-ray's operators over the implementations a learner would write, each run through the suite.

    targets.py       what is mutated, and which chapters' tests each function's mutants run through
    run.py           python -m tests.mutation.run [--targets ...] [--sample N]: enumerate, run, record
    equivalent.toml  the surviving mutants that compute the same function as the original, each with a reason

The run writes docs_gen/data/mutation.json; docs_gen/validation.py renders it as docs/validation.md.
"""
