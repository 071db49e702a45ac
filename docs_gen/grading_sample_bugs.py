# -- what this student got wrong -------------------------------------------------------------

_scores_exact = _scores


def _scores(q, k, scale):
    """Scores in float32 "to save memory": float64 inputs keep only 7 or 8 digits."""
    return _scores_exact(q.astype(np.float32), k.astype(np.float32), scale).astype(q.dtype)


def layer_norm(x, gamma, beta, eps=1e-5):
    """eps added to the standard deviation instead of the variance."""
    x = np.asarray(x)
    mean = x.mean(axis=-1, keepdims=True)
    std = np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True))
    return gamma * (x - mean) / (std + eps) + beta
