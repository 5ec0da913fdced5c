def tile_program(M: int, N: int, K: int, R: int, C: int) -> Program:
    """Sets acc=1 on every MATMUL: the first chunk of each column block adds to the previous block's results."""
    prog = Program()
    for n0 in range(0, N, C):
        nt = min(C, N - n0)
        for k0 in range(0, K, R):
            kt = min(R, K - k0)
            prog.append(DmaLoad("in", 0, "A", (0, M), (k0, k0 + kt)))
            prog.append(DmaLoad("wt", 0, "B", (k0, k0 + kt), (n0, n0 + nt)))
            prog.append(MatMul(0, 0, 0, M, nt, kt, acc=True))
        prog.append(DmaStore(0, "C", (0, M), (n0, n0 + nt)))
    return prog
