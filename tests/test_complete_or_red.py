"""Complete or red: the run is green only when every function of the contract (or of the part a module
declares with CONTRACT) holds; a later chapter's function is optional; a missing keyword is named."""

import textwrap

from tests.helpers import run_suite


def _module(tmp_path, name: str, body: str):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_a_function_without_is_causal_fails_naming_it(tmp_path):
    mine = _module(tmp_path, "no_causal", '''
        from impls.numpy_fast import *  # noqa: F401,F403
        from impls.numpy_fast import BACKEND, DTYPES  # noqa: F401
        import impls.numpy_fast as _fast

        def scaled_dot_product_attention(q, k, v, mask=None, scale=None):
            return _fast.scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)
    ''')
    code, out, report = run_suite("--impl", str(mine), "--claim", "SDPA-3", report=tmp_path / "r.json")
    assert code == 1, out[-3000:]
    assert report["claims"]["SDPA-3"]["no_causal"] == "failed"
    messages = [t["message"] for t in report["tests"] if t["outcome"] == "failed"]
    assert messages and all("'is_causal'" in m and "not implemented" not in m for m in messages), messages[:2]


def test_a_missing_v1_function_keeps_the_run_red(tmp_path):
    mine = _module(tmp_path, "no_layer_norm", '''
        from impls.numpy_fast import (BACKEND, DTYPES, attention_weights, merge_heads,  # noqa: F401
                                      multi_head_attention, scaled_dot_product_attention,
                                      sinusoidal_positional_encoding, split_heads)
    ''')
    code, out, report = run_suite("--impl", str(mine), "--claim", "LN-1,SDPA-1", report=tmp_path / "r.json")
    assert code == 1, out[-3000:]
    assert report["claims"]["LN-1"]["no_layer_norm"] == "not implemented"
    assert report["claims"]["SDPA-1"]["no_layer_norm"] == "passed"
    assert "required functions not implemented" in out


def test_a_declared_contract_leaves_the_rest_not_applicable(tmp_path):
    kernel = _module(tmp_path, "kernel", '''
        from impls.numpy_fast import BACKEND, DTYPES, scaled_dot_product_attention  # noqa: F401
        CONTRACT = ("scaled_dot_product_attention",)
    ''')
    code, out, report = run_suite("--impl", str(kernel), "--claim", "SDPA-1,LN-1,MHA-1", report=tmp_path / "r.json")
    assert code == 0, out[-3000:]
    assert report["claims"]["SDPA-1"]["kernel"] == "passed"
    assert report["claims"]["LN-1"]["kernel"] == report["claims"]["MHA-1"]["kernel"] == "not applicable"
    assert "kernel declares CONTRACT = (scaled_dot_product_attention)" in out


def test_later_chapters_stay_optional(tmp_path):
    """A later function missing (T5 buckets), or left as the template's stub raising NotImplementedError
    (RoPE): "not implemented", and the run is not red on their account."""
    mine = _module(tmp_path, "v1_and_a_stub", '''
        from impls.numpy_fast import (BACKEND, DTYPES, attention_weights, layer_norm, merge_heads,  # noqa: F401
                                      multi_head_attention, scaled_dot_product_attention,
                                      sinusoidal_positional_encoding, split_heads)

        def rotary_embedding(x, positions, base=10000.0):
            raise NotImplementedError("rotary_embedding: not written yet")
    ''')
    code, out, report = run_suite("--impl", str(mine), "--claim", "PE-4,PE-5,SDPA-1", report=tmp_path / "r.json")
    assert code == 0, out[-3000:]
    assert report["claims"]["PE-4"]["v1_and_a_stub"] == "not implemented"
    t5 = [t["outcome"] for t in report["tests"] if t["test"].startswith("test_t5_")]
    assert t5 and set(t5) == {"not implemented"}, t5  # (numpy_fast's bias= carries PE-5's other tests)
    assert "optional later-chapter functions" in out
