def build_dot(module: ir.Module) -> ir.Function:
    """The way clang -O0 writes it: the counter and the sum live in stack slots (alloca, load, store)."""
    f32, i64 = ir.FloatType(), ir.IntType(64)
    fn = ir.Function(module, ir.FunctionType(f32, [ir.PointerType(f32), ir.PointerType(f32), i64]), name="dot")
    a, bvec, n = fn.args
    entry, header, body, done = (fn.append_basic_block(s) for s in ("entry", "header", "body", "done"))
    b = ir.IRBuilder(entry)
    i_slot, acc_slot = b.alloca(i64, name="i"), b.alloca(f32, name="acc")
    b.store(ir.Constant(i64, 0), i_slot)
    b.store(ir.Constant(f32, 0.0), acc_slot)
    b.branch(header)
    b.position_at_end(header)
    i = b.load(i_slot)
    b.cbranch(b.icmp_signed("<", i, n), body, done)
    b.position_at_end(body)
    x = b.load(b.gep(a, [i], inbounds=True))
    y = b.load(b.gep(bvec, [i], inbounds=True))
    b.store(b.fadd(b.load(acc_slot), b.fmul(x, y)), acc_slot)
    b.store(b.add(i, ir.Constant(i64, 1)), i_slot)
    b.branch(header)
    b.position_at_end(done)
    b.ret(b.load(acc_slot))
    return fn
