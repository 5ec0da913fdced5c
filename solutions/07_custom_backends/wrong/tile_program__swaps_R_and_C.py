def tile_program(M: int, N: int, K: int, R: int, C: int) -> Program:
    """Steps the columns of B by R and K by C: the weight tile is C x R, which does not fit a non-square array."""
    prog = Program()
    for n0 in range(0, N, R):
        nt = min(R, N - n0)
        for k0 in range(0, K, C):
            kt = min(C, K - k0)
            prog.append(DmaLoad("in", 0, "A", (0, M), (k0, k0 + kt)))
            prog.append(DmaLoad("wt", 0, "B", (k0, k0 + kt), (n0, n0 + nt)))
            prog.append(MatMul(0, 0, 0, M, nt, kt, acc=k0 > 0))
        prog.append(DmaStore(0, "C", (0, M), (n0, n0 + nt)))
    return prog
