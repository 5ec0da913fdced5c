from infopt.accel.pe_trace import _trace_ws


def pe_schedule(i: int, j: int, m: int, n: int, k: int, R: int) -> list[tuple[int, int, int, int]]:
    """The (cycle, m_index, n_index, k_index) of every useful MAC of PE(i, j) in a weight-stationary tile."""
    # record a tile of ones on an array just wide enough for column j, and read PE(i, j)'s MACs
    cfg = AccelConfig(R, max(n, j + 1), "ws", "int8")
    run = _trace_ws(np.ones((m, k), np.int32), np.ones((k, n), np.int32), cfg)
    mac = run.trace.mac[:, i, j]
    return [(int(t), int(mac[t][0]), int(mac[t][1]), int(mac[t][2])) for t in range(len(mac)) if mac[t][0] >= 0]
