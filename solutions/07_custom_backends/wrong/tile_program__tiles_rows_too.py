def tile_program(M: int, N: int, K: int, R: int, C: int) -> Program:
    """Also cuts A into blocks of R rows (as if M had to fit the array): right result, more MATMULs and B loads."""
    prog = Program()
    for n0 in range(0, N, C):
        nt = min(C, N - n0)
        for m0 in range(0, M, R):
            mt = min(R, M - m0)
            for k0 in range(0, K, R):
                kt = min(R, K - k0)
                prog.append(DmaLoad("in", 0, "A", (m0, m0 + mt), (k0, k0 + kt)))
                prog.append(DmaLoad("wt", 0, "B", (k0, k0 + kt), (n0, n0 + nt)))
                prog.append(MatMul(0, 0, 0, mt, nt, kt, acc=k0 > 0))
            prog.append(DmaStore(0, "C", (m0, m0 + mt), (n0, n0 + nt)))
    return prog
