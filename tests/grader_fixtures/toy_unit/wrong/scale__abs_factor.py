def scale(x, k):
    """Return k * x as a float64 numpy array."""
    return np.asarray(x, dtype=np.float64) * abs(k)
