def os_step(a_regs: np.ndarray, b_regs: np.ndarray, acc: np.ndarray, a_in: np.ndarray,
            b_in: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right values, but builds the new registers with np.zeros(shape): float64, whatever the arguments' dtype."""
    a_new = np.zeros(a_regs.shape)
    a_new[:, 1:] = a_regs[:, :-1]
    a_new[:, 0] = a_in
    b_new = np.zeros(b_regs.shape)
    b_new[1:] = b_regs[:-1]
    b_new[0] = b_in
    return a_new, b_new, acc + a_new * b_new
