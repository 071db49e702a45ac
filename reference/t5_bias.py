"""T5's relative position bias (lecture note 2 §5.2; Raffel et al. 2020, §2.1; Shaw et al. 2018).

    n = j - i                                   key position minus query position
    bias[h, i, j] = table[h, bucket(j - i)]     one learned scalar per head and bucket,
                                                added to the scores: softmax(Q K^T / sqrt(d_k) + bias)

    bucket(n), with N = num_buckets and max_distance = M:
      bidirectional:  N ← N/2; keys after the query (n > 0) use buckets N .. 2N-1, keys at or before it 0 .. N-1
      causal:         only n <= 0 is distinguished; every n > 0 falls in bucket 0 (the mask hides those keys)
      r = |n| (bidirectional) or max(-n, 0) (causal), E = N/2
      r < E:   bucket r                                           exact for small distances
      r >= E:  E + floor( log(r / E) / log(M / E) · (N - E) ),    logarithmic up to M,
               capped at N - 1                                    everything at or beyond M shares the last bucket

The bias depends on j - i only, so the (L_q, L_k) matrix is Toeplitz: constant along
every diagonal (claim PE-5). Positions are relative, so no position ever falls off the
end of a table: lengths beyond those seen in training reuse the last bucket.
"""

import numpy as np


# --8<-- [start:t5_relative_position_bucket]
def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """bucket(j - i) ∈ {0, ..., num_buckets - 1}: exact below num_buckets/2 (per direction), logarithmic to max_distance."""
    n = np.asarray(relative_position).astype(np.int64)  # (...,) of j - i
    bucket = np.zeros(n.shape, dtype=np.int64)
    if bidirectional:
        num_buckets //= 2  # half the buckets for each direction
        bucket += (n > 0) * num_buckets  # keys after the query: upper half
        r = np.abs(n)
    else:
        r = np.maximum(-n, 0)  # keys after the query all land in bucket 0 (a causal mask hides them)
    exact = num_buckets // 2  # E: distances 0 .. E-1 each get their own bucket
    r_far = np.maximum(r, exact)  # avoids log(0) below; only used where r >= E
    log_ratio = np.log(r_far / exact) / np.log(max_distance / exact)  # 0 at r = E, 1 at r = M
    far = exact + np.floor(log_ratio * (num_buckets - exact)).astype(np.int64)
    far = np.minimum(far, num_buckets - 1)  # r >= M: the last bucket
    return bucket + np.where(r < exact, r, far)
# --8<-- [end:t5_relative_position_bucket]


# --8<-- [start:t5_bias]
def relative_positions(L_q: int, L_k: int) -> np.ndarray:
    """n[i, j] = j - i with the queries as the last L_q positions (as for is_causal); (L_q, L_k) int."""
    i = np.arange(L_q)[:, None] + (L_k - L_q)  # (L_q, 1): query i sits at position i + L_k - L_q
    j = np.arange(L_k)[None, :]  # (1, L_k)
    return j - i


def t5_bias(table, L_q: int, L_k: int, bidirectional=True, max_distance=128) -> np.ndarray:
    """bias[h, i, j] = table[h, bucket(j - i)]; table (H, num_buckets) -> (H, L_q, L_k), for SDPA's bias=."""
    H, num_buckets = table.shape
    buckets = t5_relative_position_bucket(relative_positions(L_q, L_k), bidirectional, num_buckets, max_distance)
    return table[:, buckets]  # (H, L_q, L_k): a lookup, one Toeplitz matrix per head
# --8<-- [end:t5_bias]
