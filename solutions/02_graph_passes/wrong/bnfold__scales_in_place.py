def fold_bn(w: np.ndarray, b: np.ndarray | None, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray,
            var: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Folded weights and bias (the weights scaled in place)."""
    s = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
    b0 = np.zeros(w.shape[0]) if b is None else b.astype(np.float64)
    w *= s[:, None, None, None].astype(w.dtype)
    w2 = w.astype(np.float64)
    b2 = (b0 - mean) * s + bias
    return w2.astype(np.float32), b2.astype(np.float32)
