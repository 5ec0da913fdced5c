def fold_bn(w: np.ndarray, b: np.ndarray | None, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray,
            var: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Folded weights and bias (divided by the variance, not the standard deviation)."""
    s = scale.astype(np.float64) / (var.astype(np.float64) + eps)
    b0 = np.zeros(w.shape[0]) if b is None else b.astype(np.float64)
    w2 = w.astype(np.float64) * s[:, None, None, None]
    b2 = (b0 - mean) * s + bias
    return w2.astype(np.float32), b2.astype(np.float32)
