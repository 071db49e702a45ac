"""The adapters of Hugging Face LLaMA RoPE and T5 buckets, ONNX's reference Attention, torchtune's and
x-transformers' multi-head attention (adapters/): each conversion gives the contract's answer where the
library agrees with it, declares what the library cannot express, and keeps what the library does
differently (causal alignment, GQA's head mapping) as the library does it. And a module with multi-head
attention only has its per-head claims (MHA-3, MHA-4, MHA-6) judged, not "not applicable"."""

import importlib
import textwrap

import numpy as np
import pytest

import reference
from spec_tests import OutOfScope
from tests.helpers import run_suite

RNG = np.random.default_rng(0)


def _adapter(name: str):
    """The adapter module, or a skip when its library is not installed here."""
    try:
        return importlib.import_module(f"adapters.{name}")
    except ImportError as exc:
        pytest.skip(f"adapters.{name}: its library is not installed ({exc})")


def _torch(*arrays):
    import torch

    return tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays)


def _numpy(y):
    return y.detach().numpy() if hasattr(y, "detach") else np.asarray(y)


def test_llama_rope_half_split_is_converted_to_interleaved_pairs():
    rope = _adapter("hf_llama_rope")
    x, positions = RNG.standard_normal((2, 5, 8)).astype(np.float32), np.arange(3, 8)
    out = _numpy(rope.rotary_embedding(*_torch(x, positions)))
    np.testing.assert_allclose(out, reference.rotary_embedding(x.astype(np.float64), positions), atol=2e-5)
    # without the permutation the answer would be HF's own layout, which differs
    assert not np.allclose(out, reference.rotary_embedding_half_split(x.astype(np.float64), positions), atol=1e-3)


def test_t5_buckets_are_hugging_faces():
    buckets = _adapter("hf_t5_buckets")
    n = np.arange(-300, 301)
    for bidirectional in (True, False):
        seen = _numpy(buckets.t5_relative_position_bucket(*_torch(n), bidirectional=bidirectional))
        np.testing.assert_array_equal(seen, reference.t5_relative_position_bucket(n, bidirectional))


def test_onnx_attention_mask_bias_weights_and_top_left_causal():
    onnx_attn = _adapter("onnx_attention")
    q, k, v = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 5, 4)), RNG.standard_normal((2, 5, 2))
    mask, bias = RNG.random((3, 5)) > 0.3, RNG.standard_normal((2, 3, 5))
    np.testing.assert_allclose(onnx_attn.scaled_dot_product_attention(q, k, v, mask=mask),
                               reference.scaled_dot_product_attention(q, k, v, mask=mask), atol=1e-12)
    np.testing.assert_allclose(onnx_attn.scaled_dot_product_attention(q, k, v, bias=bias),
                               reference.scaled_dot_product_attention(q, k, v, bias=bias), atol=1e-12)
    np.testing.assert_allclose(onnx_attn.attention_weights(q, k, mask=mask),
                               reference.attention_weights(q, k, mask=mask), atol=1e-12)
    assert onnx_attn.scaled_dot_product_attention(q[0], k[0], v[0], mask=np.zeros((3, 5), bool)).tolist() == [[0.0, 0.0]] * 3
    # the operator's causal is top-left without a KV cache: query 0 sees key 0 alone
    one = onnx_attn.scaled_dot_product_attention(np.zeros((1, 1)), np.zeros((2, 1)), np.array([[1.0], [3.0]]), is_causal=True)
    assert one.tolist() == [[1.0]]
    with pytest.raises(OutOfScope, match="one attn_mask"):
        onnx_attn.scaled_dot_product_attention(q, k, v, mask=mask, bias=bias)
    assert onnx_attn.scaled_dot_product_attention(np.ones((0, 4)), k[0], v[0]).shape == (0, 2)


def _mha_case(D=8, H=2, G=None, bias=False, L_q=4, L_k=4):
    d_k = D // H
    x, kv = RNG.standard_normal((2, L_q, D)), RNG.standard_normal((2, L_k, D))
    kv_width = (G or H) * d_k
    w = {"w_q": RNG.standard_normal((D, D)), "w_k": RNG.standard_normal((D, kv_width)),
         "w_v": RNG.standard_normal((D, kv_width)), "w_o": RNG.standard_normal((D, D))}
    if bias:
        w.update(b_q=RNG.standard_normal(D), b_k=RNG.standard_normal(kv_width), b_v=RNG.standard_normal(kv_width),
                 b_o=RNG.standard_normal(D))
    return x, kv, w


@pytest.mark.parametrize("name, rtol", [("torchtune_mha", 1e-10), ("xtransformers_attention", 1e-5)])
def test_mha_only_modules_match_the_reference_where_they_agree(name, rtol):
    """Self- and cross-attention (keys and values one input), a padding mask, square causal: the contract's
    answer (x-transformers' softmax runs in float32, hence its bound)."""
    mod = _adapter(name)
    x, kv, w = _mha_case()
    tw = dict(zip(w, _torch(*w.values())))
    mask = RNG.random((2, 1, 1, 4)) > 0.3
    mask[..., 0] = True
    for args, kwargs in [((x, x, x), {}), ((x, kv, kv), {}), ((x, x, x), {"mask": mask}), ((x, x, x), {"is_causal": True})]:
        t_kwargs = {k: _torch(a)[0] if isinstance(a, np.ndarray) else a for k, a in kwargs.items()}
        seen = _numpy(mod.multi_head_attention(*_torch(*args), tw, 2, **t_kwargs))
        np.testing.assert_allclose(seen, reference.multi_head_attention(*args, w, 2, **kwargs), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", ["torchtune_mha", "xtransformers_attention"])
def test_mha_only_modules_declare_separate_keys_and_values_out_of_scope(name):
    mod = _adapter(name)
    x, kv, w = _mha_case()
    with pytest.raises(OutOfScope, match="one input"):
        mod.multi_head_attention(*_torch(x, kv, kv + 1.0), dict(zip(w, _torch(*w.values()))), 2)


def test_gqa_head_mappings_are_the_libraries():
    """torchtune: query head h reads K/V head h // (H/G), the contract's; x-transformers: h % G (a deviation)."""
    x, _, w = _mha_case(D=8, H=4, G=2)
    tw = dict(zip(w, _torch(*w.values())))
    grouped = reference.multi_head_attention(x, x, x, w, 4, num_kv_heads=2)
    order = [0, 2, 1, 3]  # query heads reordered so that h // 2 of the new order is h % 2 of the old
    d = 2
    idx = np.concatenate([np.arange(d) + h * d for h in order])
    interleaved = reference.multi_head_attention(x, x, x, dict(w, w_q=w["w_q"][:, idx], w_o=w["w_o"][idx, :]), 4,
                                                 num_kv_heads=2)
    tt = _numpy(_adapter("torchtune_mha").multi_head_attention(*_torch(x, x, x), tw, 4, num_kv_heads=2))
    np.testing.assert_allclose(tt, grouped, atol=1e-10)
    xt = _numpy(_adapter("xtransformers_attention").multi_head_attention(*_torch(x, x, x), tw, 4, num_kv_heads=2))
    np.testing.assert_allclose(xt, interleaved, rtol=1e-5, atol=1e-5)


def test_xtransformers_has_no_biases():
    mod = _adapter("xtransformers_attention")
    x, _, w = _mha_case(bias=True)
    with pytest.raises(OutOfScope, match="bias"):
        mod.multi_head_attention(*_torch(x, x, x), dict(zip(w, _torch(*w.values()))), 2)


MHA_ONLY = '''
    """{doc}"""
    from impls.mutants import {base} as _base

    BACKEND = "numpy"
    CONTRACT = ("multi_head_attention",)
    multi_head_attention = _base.multi_head_attention
'''


@pytest.mark.parametrize("base, verdict", [("_base", "passed"), ("split_heads_without_transpose", "failed")])
def test_per_head_claims_are_judged_for_a_module_with_multi_head_attention_only(tmp_path, base, verdict):
    """MHA-3/4/6 compare each head with the module's own one-head attention computing it (W_O = I): judged, and
    a head-mixing bug fails them (MHA-3 by name), where before they were not applicable."""
    path = tmp_path / "mha_only.py"
    path.write_text(textwrap.dedent(MHA_ONLY.format(doc=f"{base}'s multi-head attention alone", base=base)))
    code, out, report = run_suite("--impl", str(path), "spec_tests/test_multi_head.py", "-k",
                                  "identity_output or fused_projection or one_head_is_single",
                                  report=tmp_path / "r.json", env={"MHA_SPEC_EXAMPLES": "5"}, timeout=300)
    assert report is not None, out[-2000:]
    statuses = {cid: per.get("mha_only") for cid, per in report["claims"].items() if cid in ("MHA-3", "MHA-4", "MHA-6")}
    if verdict == "passed":
        assert statuses == {"MHA-3": "passed", "MHA-4": "passed", "MHA-6": "passed"}, (statuses, out[-2000:])
    else:
        assert statuses["MHA-3"] == "failed", (statuses, out[-2000:])
