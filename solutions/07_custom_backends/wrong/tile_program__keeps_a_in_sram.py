def tile_program(M: int, N: int, K: int, R: int, C: int) -> Program:
    """Loads every k-chunk of A once, each at its own address (like the library's driver), instead of the schedule's
    address 0 per chunk and column block."""
    prog = Program()
    for k0 in range(0, K, R):
        prog.append(DmaLoad("in", M * k0, "A", (0, M), (k0, min(K, k0 + R))))
    for n0 in range(0, N, C):
        nt = min(C, N - n0)
        for k0 in range(0, K, R):
            kt = min(R, K - k0)
            prog.append(DmaLoad("wt", 0, "B", (k0, k0 + kt), (n0, n0 + nt)))
            prog.append(MatMul(M * k0, 0, 0, M, nt, kt, acc=k0 > 0))
        prog.append(DmaStore(0, "C", (0, M), (n0, n0 + nt)))
    return prog
