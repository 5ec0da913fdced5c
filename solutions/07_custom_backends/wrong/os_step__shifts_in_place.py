def os_step(a_regs: np.ndarray, b_regs: np.ndarray, acc: np.ndarray, a_in: np.ndarray,
            b_in: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right values, but shifts and accumulates in the caller's arrays and returns them (the arguments change)."""
    a_regs[:, 1:] = a_regs[:, :-1].copy()
    a_regs[:, 0] = a_in
    b_regs[1:] = b_regs[:-1].copy()
    b_regs[0] = b_in
    acc += a_regs * b_regs
    return a_regs, b_regs, acc
