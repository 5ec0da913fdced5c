def os_step(a_regs: np.ndarray, b_regs: np.ndarray, acc: np.ndarray, a_in: np.ndarray,
            b_in: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gives every PE of a row this cycle's a_in (and of a column b_in) at once: a broadcast, not a systolic shift."""
    a_new = np.repeat(a_in[:, None], a_regs.shape[1], axis=1).astype(a_regs.dtype)
    b_new = np.repeat(b_in[None, :], b_regs.shape[0], axis=0).astype(b_regs.dtype)
    return a_new, b_new, acc + a_new * b_new
