"""The libraries page (docs_gen/libraries.py) renders a run's JSON: the libraries, the questions, the matrix
(out of scope shown apart), the deviations; `adapter:NAME` selects an adapter; the probes name what they see."""


from docs_gen import libraries
from docs_gen.library_probes import QUESTIONS, dead_rows, mask_with_causal
from spec_tests import OutOfScope
from spec_tests.harness import loader


def _doc():
    probes = {qid: "[0.]" for qid in QUESTIONS}
    return {"created": "2026-01-01T00:00:00+00:00", "commit": "abc", "examples": 5,
            "versions": {"torch": "2.13.0", "transformers": "5.24.0", "jax": "0.10.2"},
            "adapters": {
                "pytorch_sdpa": {"seconds": 12.5, "claims": {"SDPA-1": "passed", "MASK-3": "failed", "GRAD-1": "out of scope"},
                                 "failures": [{"claim": "MASK-3", "test": "test_causal_is_bottom_right_aligned",
                                               "dtype": "float64", "lines": ["input: sdpa((1, 1), (2, 1), (2, 1), is_causal=True)"]}],
                                 "probes": dict(probes, **{"causal-alignment": "[1.]"})},
                "jax_dpa": {"seconds": 30.0, "claims": {"SDPA-1": "failed"}, "failures": [], "probes": probes}}}


def test_the_page_shows_the_matrix_the_questions_and_the_deviations():
    page = libraries.render(_doc())
    assert "# Popular libraries, judged by the spec" in page
    assert "| `pytorch_sdpa` |" in page and "torch 2.13.0" in page and "| 12.5 |" in page
    assert "Which way is causal aligned when L\\_q != L\\_k?" in page and "| `pytorch_sdpa` | `[1.]` |" in page
    assert 'title="out of scope">scope<' in page  # the matrix cell, and its legend line
    assert "by its own declaration" in page
    assert "test_causal_is_bottom_right_aligned" in page and "is_causal=True" in page
    assert "Not adapted: timm" in page  # a library without an adapter says why
    assert page == libraries.render(_doc())  # deterministic: the committed page can be checked


def test_adapter_names_select_modules_of_the_adapters_folder():
    assert "pytorch_sdpa" in loader.adapter_names() and "hf_masks" not in loader.adapter_names() and "support" not in loader.adapter_names()
    assert loader.expand(["adapter:pytorch_sdpa,numpy_fast"]) == ["adapters.pytorch_sdpa", "numpy_fast"]
    assert set(loader.expand(["adapter:all"])) == {f"adapters.{n}" for n in loader.adapter_names()}


class _Mine:
    """A NumPy module of the contract: zero for a dead row, AND of mask and causal (the contract's answers)."""

    BACKEND = "numpy"

    @staticmethod
    def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
        import reference

        return reference.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, scale=scale)


class _Declares:
    BACKEND = "numpy"

    @staticmethod
    def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
        raise OutOfScope("no masks here")


def test_probes_answer_with_the_values_seen_or_the_declared_scope():
    assert dead_rows(_Mine) == "[0.]"
    assert mask_with_causal(_Mine) == "[1., 1.]"
    assert dead_rows(_Declares) == "out of scope: no masks here"
