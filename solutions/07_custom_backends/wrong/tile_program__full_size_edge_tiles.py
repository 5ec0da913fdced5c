def tile_program(M: int, N: int, K: int, R: int, C: int) -> Program:
    """Always uses full R x C tiles, so the last chunk and column block reach past the end of A and B."""
    prog = Program()
    for n0 in range(0, N, C):
        for k0 in range(0, K, R):
            prog.append(DmaLoad("in", 0, "A", (0, M), (k0, k0 + R)))
            prog.append(DmaLoad("wt", 0, "B", (k0, k0 + R), (n0, n0 + C)))
            prog.append(MatMul(0, 0, 0, M, C, R, acc=k0 > 0))
        prog.append(DmaStore(0, "C", (0, M), (n0, n0 + C)))
    return prog
