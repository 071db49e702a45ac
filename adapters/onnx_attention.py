"""ONNX's reference implementation of the `Attention` operator (opset 23), run by `onnx.reference.ReferenceEvaluator`
on a one-node model (the operator's executable definition, in NumPy).

Conversions (as the operator's specification asks):

- q, k, v (..., L, d) are the operator's 4-D (batch, heads, length, d) with the leading dimensions as the
  batch and one head; the answer goes back to (..., L_q, d_v).
- The contract's boolean mask is `attn_mask` as it is: for the operator too, True means the query may
  attend to the key. It is broadcast to (..., L_q, L_k) and laid out like q. `is_causal` and `scale` are
  the node's attributes of those names.
- `bias=` (a float bias) is the float `attn_mask`, which the operator adds to the scores; a boolean mask
  and a bias together would need one float mask combined by hand (a correction, not a conversion):
  out of scope.
- `softcap=` is the attribute of that name (applied to the scaled scores before the mask).
- `attention_weights` are the operator's fourth output, `qk_matmul_output`, with
  `qk_matmul_output_mode=3` (the weights after the softmax).
- With `is_causal` the operator aligns causal to the first key unless a KV cache (`past_key`) is given:
  left as it is (the inputs are not split into a cache).
"""

import numpy as np
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from spec_tests import OutOfScope

BACKEND = "numpy"
DTYPES = ("float64", "float32")
CONTRACT = ("scaled_dot_product_attention", "attention_weights")
OPSET = 23
_ELEM = {np.dtype(np.float64): TensorProto.DOUBLE, np.dtype(np.float32): TensorProto.FLOAT}


def _model(dtype, mask_kind, attributes: dict):
    """A model of one Attention node: inputs Q, K, V (and attn_mask), outputs Y and the weights."""
    elem = _ELEM[np.dtype(dtype)]
    names = ["Q", "K", "V"] + (["attn_mask"] if mask_kind else [])
    inputs = [helper.make_tensor_value_info(n, elem, None) for n in names[:3]]
    if mask_kind:
        inputs.append(helper.make_tensor_value_info("attn_mask", TensorProto.BOOL if mask_kind == "bool" else elem, None))
    outputs = [helper.make_tensor_value_info(n, elem, None) for n in ("Y", "present_key", "present_value", "qk")]
    node = helper.make_node("Attention", names, ["Y", "present_key", "present_value", "qk"], **attributes)
    graph = helper.make_graph([node], "attention", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def _attend(q, k, v, mask, is_causal, scale, bias, softcap):
    if mask is not None and bias is not None:
        raise OutOfScope("the operator takes one attn_mask, boolean or a float bias: a boolean mask with a bias "
                         "would have to be merged into one float mask by hand")
    q, k, v = (np.asarray(a) for a in (q, k, v))
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    L_q, L_k, N = q.shape[-2], k.shape[-2], int(np.prod(lead, dtype=np.int64))
    q4, k4, v4 = (np.ascontiguousarray(np.broadcast_to(a, (*lead, *a.shape[-2:])).reshape(N, 1, *a.shape[-2:]))
                  for a in (q, k, v))
    feeds = {"Q": q4, "K": k4, "V": v4}
    extra = mask if mask is not None else bias
    kind = None
    if extra is not None:
        extra = np.asarray(extra)
        kind = "bool" if extra.dtype == np.bool_ else "float"
        feeds["attn_mask"] = np.ascontiguousarray(
            np.broadcast_to(extra, (*lead, L_q, L_k)).reshape(N, 1, L_q, L_k)).astype(extra.dtype if kind == "bool" else q.dtype)
    attributes = {"is_causal": int(bool(is_causal)), "qk_matmul_output_mode": 3}
    if scale is not None:
        attributes["scale"] = float(scale)
    if softcap is not None:
        attributes["softcap"] = float(softcap)
    y, _, _, weights = ReferenceEvaluator(_model(q.dtype, kind, attributes)).run(None, feeds)
    return y.reshape(*lead, L_q, v.shape[-1]), weights.reshape(*lead, L_q, L_k)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, softcap=None):
    """Attention(Q, K, V, attn_mask; is_causal, scale, softcap) -> Y."""
    return _attend(q, k, v, mask, is_causal, scale, bias, softcap)[0]


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None, softcap=None):
    """Attention(...; qk_matmul_output_mode=3) -> qk_matmul_output: the softmax's weights, (..., L_q, L_k)."""
    return _attend(q, k, np.zeros_like(np.asarray(k)), mask, is_causal, scale, bias, softcap)[1]

