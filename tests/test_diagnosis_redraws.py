"""The diagnosis names the known bug "the caller's generator ignored" from the redraw itself, and only then.

An implementation that draws its dropout from a generator of its own gives another pattern on every call,
so no replay of a known bug can match its values (spec_tests/harness/diagnosis.py, REDRAWN). What can
match is the redraw: made again with a generator in the same state, its result changes. Here two
implementations written apart from the known bugs (NumPy's attention with dropout added in their own way)
run the dropout chapter: one keeps a generator of its own and is named; one uses the caller's generator in
its own order of draws but forgets the 1 / (1 - p) scale, and must not be given the generator's name.
"""

import textwrap

from tests.helpers import mutant_attributes, run_suite

COMMON = '''
import numpy as np

from impls.numpy_fast import *  # noqa: F401,F403
from impls import numpy_fast as fast


def _rate(dropout_p):
    if not isinstance(dropout_p, (int, float)) or not 0 <= dropout_p < 1:
        raise ValueError(f"dropout_p must lie in [0, 1), got {dropout_p}")
    return float(dropout_p)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, dropout_p=0.0, generator=None):
    p = attention_weights(q, k, mask=mask, is_causal=is_causal, scale=scale, dropout_p=dropout_p, generator=generator)
    return p @ v
'''

OWN_GENERATOR = COMMON + '''
OWN = np.random.default_rng()  # seeded by the operating system, once: the caller's generator is never read


def attention_weights(q, k, mask=None, is_causal=False, scale=None, dropout_p=0.0, generator=None):
    p = fast.attention_weights(q, k, mask=mask, is_causal=is_causal, scale=scale)
    rate = _rate(dropout_p)
    if rate == 0:
        return p
    kept = OWN.uniform(size=p.shape) > rate
    return p * kept / (1 - rate)
'''

UNSCALED = COMMON + '''
def attention_weights(q, k, mask=None, is_causal=False, scale=None, dropout_p=0.0, generator=None):
    p = fast.attention_weights(q, k, mask=mask, is_causal=is_causal, scale=scale)
    rate = _rate(dropout_p)
    if rate == 0:
        return p
    draws = generator.uniform(size=p.shape[::-1]).T  # the caller's generator, in an order of its own
    return p * (draws > rate)  # the kept weights are not scaled by 1 / (1 - p)
'''

NAME = "this matches a known bug: " + mutant_attributes("dropout_generator_ignored")["BUG"]


def _feedback(tmp_path, source: str, claim: str) -> str:
    path = tmp_path / "attention.py"
    path.write_text(textwrap.dedent(source))
    code, out, _ = run_suite("--impl", str(path), "--claim", claim, "spec_tests/test_dropout.py", "-n", "0")
    assert code == 1, f"{claim} should fail:\n{out[-3000:]}"
    return " ".join(out.split())


def test_an_implementation_with_a_generator_of_its_own_is_named(tmp_path):
    assert NAME in _feedback(tmp_path, OWN_GENERATOR, "DROP-1")


def test_a_reproducible_implementation_is_not_given_the_generators_name(tmp_path):
    assert NAME not in _feedback(tmp_path, UNSCALED, "DROP-2")
