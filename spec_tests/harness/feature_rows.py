"""A score feature's masked call, judged row by row on the implementation's own unmasked calls with the feature.

A softcap (cap · tanh(S / cap)), a sink logit and an additive bias (PE-5, cut to the row and its keys) act on one
query row's scores: masking only chooses which keys
that row sees. So a masked call with the feature equals, row by row, the same function's call with the feature
and no mask on the keys that row sees (0 for a row that sees none, sink or not):

    out_i = attention(q_i, K[vis_i], V[vis_i], softcap=cap, sinks=σ)

For an implementation whose masking is wrong, vis_i is the keys its own masked call without the feature gives a
nonzero weight (the keys it lets row i see), and a row the reference says sees nothing keeps that call's output:
its masking bug, carried forward unchanged.

When the implementation's own weights without the feature already differ from the reference's on the call's q, k
and mask, its masked call with the feature is judged against that composition: the masking bug is charged to the masks
chapter, and the feature is still judged (its unmasked calls against the reference, and every call of an
implementation whose masking holds). A correct implementation never gets here: this runs only after the
comparison with the reference has failed.
"""

from __future__ import annotations

import numpy as np

import reference
from reference.mask_algebra import visible_keys
from spec_tests.harness import carried, check, tolerance
from spec_tests.harness.context import current
from spec_tests.harness.feedback import SpecFailure

SDPA = "scaled_dot_product_attention"
MASKING = ("mask", "is_causal")  # the keywords that choose the keys a row sees
FEATURES = ("softcap", "sinks", "scale")  # the keywords each row's own call keeps


def masking_wrong_here(subject, args, kwargs, feature=("softcap", "sinks", "bias")) -> bool:
    """Do the implementation's own weights without the feature (the keywords named in `feature`), on this call's
    q, k and mask, already differ from the reference's (a masking or formula bug, charged to its own chapter's
    claims)?"""
    if not subject.has("attention_weights"):
        return False
    plain = {key: kwargs[key] for key in MASKING + ("scale",) if kwargs.get(key) is not None and key not in feature}
    with carried.off_the_record(subject):
        try:
            seen = subject.call("attention_weights", *args[:2], **plain)
        except Exception:  # noqa: BLE001 - raising on a plain masked call is its own chapter's failure
            return True
    r_args, r_kwargs = subject.round(tuple(args[:2])), subject.round(plain)
    expected = reference.attention_weights(*r_args, **r_kwargs)
    bound = tolerance.bound_against(carried.judged_dtype(subject), reference.attention_weights, r_args, r_kwargs,
                                    expected, "attention_weights")
    try:
        check.compare(subject, seen, expected, bound, "attention_weights(...) without the feature")
    except SpecFailure:
        return True
    return False


def by_rows(subject, fname: str, args, kwargs, seen) -> np.ndarray:
    """fname(*args, **kwargs) (attention or its weights) built from the implementation's own calls: each row is its
    call with the feature and no mask on the keys its own masked weights without the feature leave nonzero (0 for
    none); a row the reference says sees no key may instead be its own masked call without the feature (a dead
    row ignores the feature: 0, sink or not), whichever of the two is nearer `seen` (the call judged)."""
    n = 3 if fname == SDPA else 2
    arrays = [np.asarray(a) for a in args[:n]]
    L_q, L_k = arrays[0].shape[-2], arrays[1].shape[-2]
    masking = {key: kwargs[key] for key in MASKING if key in kwargs}
    plain_kwargs = dict(masking, **{key: kwargs[key] for key in ("scale",) if kwargs.get(key) is not None})
    with carried.off_the_record(subject):
        weights = np.asarray(subject.call("attention_weights", *args[:2], **plain_kwargs), dtype=np.float64)
        plain = np.asarray(subject.call(fname, *args[:n], **plain_kwargs), dtype=np.float64)
    allowed = np.asarray(visible_keys(kwargs.get("mask"), bool(kwargs.get("is_causal", False)), L_q, L_k), bool)
    sinks, bias = kwargs.get("sinks"), kwargs.get("bias")
    leads = [a.shape[:-2] for a in arrays] + [allowed.shape[:-2], weights.shape[:-2]] + \
        ([np.shape(sinks)] if sinks is not None else []) + ([np.shape(bias)[:-2]] if bias is not None else [])
    lead = np.broadcast_shapes(*leads)
    dead = ~np.broadcast_to(allowed, lead + (L_q, L_k)).any(axis=-1)  # (lead, L_q): the reference's dead rows
    seen_keys = np.broadcast_to(weights != 0, lead + (L_q, L_k))
    q, k, *v = (np.broadcast_to(a, lead + a.shape[-2:]) for a in arrays)
    out = np.array(np.broadcast_to(plain, lead + plain.shape[-2:]), dtype=np.float64)
    keep = {key: kwargs[key] for key in FEATURES if kwargs.get(key) is not None}
    with carried.off_the_record(subject):
        for index in np.ndindex(*lead):
            at = tuple(slice(j, j + 1) for j in index)  # the leading dims kept, each of size 1
            if sinks is not None:
                keep["sinks"] = np.broadcast_to(np.asarray(sinks), lead)[at]
            for i in range(L_q):
                keys = np.flatnonzero(seen_keys[index + (i,)])
                built = np.zeros(out.shape[-1])
                if keys.size:
                    row_args = [q[at][..., i:i + 1, :], k[at][..., keys, :]] + ([v[0][at][..., keys, :]] if v else [])
                    if bias is not None:  # an additive bias goes with the scores it is added to: its row, those keys
                        keep["bias"] = np.broadcast_to(np.asarray(bias), lead + (L_q, L_k))[at][..., i:i + 1, keys]
                    row = np.asarray(subject.call(fname, *row_args, **keep), dtype=np.float64).reshape(-1)
                    if fname == "attention_weights":
                        built[keys] = row
                    else:
                        built = row
                if not dead[index + (i,)] or _off_by(built, seen[index + (i,)]) <= _off_by(out[index + (i,)],
                                                                                         seen[index + (i,)]):
                    out[index + (i,)] = built
    return out


def _off_by(row, seen_row) -> float:
    """The largest difference of two rows, NaN where both are NaN counting as none."""
    with np.errstate(invalid="ignore"):
        both = np.isnan(row) & np.isnan(seen_row)
        diff = np.where(both, 0.0, np.abs(row - seen_row))
    return float(np.nan_to_num(diff, nan=np.inf).max(initial=0.0))


def oracle(subject, fname: str, *args, feature=("softcap", "sinks", "bias"), **kwargs):
    """check.oracle for a call with a score feature (softcap, sinks, bias); when it fails, a masked call of an
    implementation whose own weights without the feature (the keywords named in `feature`; a negative scale is
    SDPA-10's) already differ from the reference's is judged again row by row (see above)."""
    try:
        return check.oracle(subject, fname, *args, **kwargs)
    except SpecFailure as failure:
        masked = any(kwargs.get(key) is not None and kwargs.get(key) is not False for key in MASKING)
        if not masked or not masking_wrong_here(subject, args, kwargs, feature):
            raise
        try:
            with carried.off_the_record(subject):
                seen = np.asarray(subject.call(fname, *args, **kwargs), dtype=np.float64)
            built = by_rows(subject, fname, args, kwargs, seen)
        except Exception:  # noqa: BLE001 - an unmasked call raised: nothing to carry
            raise failure from None
        oracle_fn = getattr(reference, fname)
        r_args, r_kwargs = subject.round(args), subject.round(kwargs)
        expected = oracle_fn(*r_args, **r_kwargs)
        bound = tolerance.carried_bound(carried.judged_dtype(subject), oracle_fn, r_args, r_kwargs, expected, built,
                                        fname)
        whose = (f"your {fname}'s own calls with the same keywords but no mask, one query row at a time on the keys "
                 f"your attention_weights without them lets it see (error carried forward: those weights already "
                 f"differ from the reference's on this input, which is charged to the masks chapter)")
        try:
            check.compare(subject, seen, built, bound, f"{fname}(...) against {whose}")
        except SpecFailure:
            raise failure from None
        lines = carried.NOTES.setdefault(current().nodeid, [])
        if f"judged against {whose}" not in lines:
            lines.append(f"judged against {whose}")
        return seen


def neutral(subject, args, kwargs, feature: dict, relation: str) -> None:
    """A feature at its neutral value (a huge softcap, sinks=-inf) changes nothing: the call with it equals the
    implementation's own call without it. When its call without it is itself wrong (it differs from the
    reference's: a bug of another chapter, charged there), the call with the neutral feature is judged against
    the reference instead, which is what the call without it should have given."""
    with_it = subject.scaled_dot_product_attention(*args, **feature, **kwargs)
    plain = subject.scaled_dot_product_attention(*args, **kwargs)
    try:
        check.close(subject, with_it, plain, relation, size=tolerance.attention_output_size(args[2]))
    except SpecFailure as failure:
        r_args, r_kwargs = subject.round(tuple(args)), subject.round(kwargs)
        expected = reference.scaled_dot_product_attention(*r_args, **r_kwargs)
        bound = tolerance.bound_against(carried.judged_dtype(subject), reference.scaled_dot_product_attention,
                                        r_args, r_kwargs, expected, SDPA)
        try:
            check.compare(subject, plain, expected, bound, f"{SDPA}(...) without the feature")
        except SpecFailure:  # the call without it is wrong: the neutral feature is judged against the reference
            check.oracle(subject, SDPA, *args, **feature, **kwargs)
            return
        raise failure from None


def keyword_charged_elsewhere(subject, args, kwargs, keyword: str, value) -> bool:
    """Does the implementation's attention with this score keyword alone (softcap= or bias=) already differ from the
    reference's, on this call's inputs or on a fixed input of four keys (where one key would hide a bias)? Then a
    claim that combines the keyword with another feature has its error charged to the keyword's own chapter."""
    rng = np.random.default_rng(20240613)
    q, k, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 4, 3))
    fixed = rng.standard_normal((2, 3, 4)) if keyword == "bias" else value
    for call_args, call_kwargs in ((args, {**kwargs, keyword: value}), ((q, k, v), {keyword: fixed})):
        try:
            with carried.off_the_record(subject):
                check.oracle(subject, "scaled_dot_product_attention", *call_args, **call_kwargs)
        except SpecFailure:
            return True
    return False
