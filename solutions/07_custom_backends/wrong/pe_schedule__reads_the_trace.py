def pe_schedule(i: int, j: int, m: int, n: int, k: int, R: int) -> list[tuple[int, int, int, int]]:
    """Runs the simulator in trace mode on a dummy tile and reads the answer off its trace."""
    a = np.ones((m, k), dtype=np.int8)
    b = np.ones((k, n), dtype=np.int8)
    return run_tile(a, b, AccelConfig(R, max(n, j + 1), "ws", "int8"), mode="trace").trace.pe_schedule(i, j)
