def tile_program(M: int, N: int, K: int, R: int, C: int) -> Program:
    """The weight-stationary command stream for C = A @ B, edge tiles included."""
    prog = Program()
    single_chunk = K <= R                  # then `in` holds all of A for every column block: load it once
    if single_chunk:
        prog.append(DmaLoad("in", 0, "A", (0, M), (0, K)))
    for n0 in range(0, N, C):
        nt = min(C, N - n0)
        for k0 in range(0, K, R):
            kt = min(R, K - k0)
            if not single_chunk:
                prog.append(DmaLoad("in", 0, "A", (0, M), (k0, k0 + kt)))
            prog.append(DmaLoad("wt", 0, "B", (k0, k0 + kt), (n0, n0 + nt)))
            prog.append(MatMul(0, 0, 0, M, nt, kt, acc=k0 > 0))
        prog.append(DmaStore(0, "C", (0, M), (n0, n0 + nt)))
    return prog
