def os_step(a_regs: np.ndarray, b_regs: np.ndarray, acc: np.ndarray, a_in: np.ndarray,
            b_in: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right shifts, but the accumulator gets this cycle's product instead of adding it (acc = a * b)."""
    a_new = np.empty_like(a_regs)
    a_new[:, 1:] = a_regs[:, :-1]
    a_new[:, 0] = a_in
    b_new = np.empty_like(b_regs)
    b_new[1:] = b_regs[:-1]
    b_new[0] = b_in
    return a_new, b_new, a_new * b_new
