def build_dot(module: ir.Module) -> ir.Function:
    """A do-while loop: the body runs once before the first test, so n == 0 still reads a[0] * b[0]."""
    f32, i64 = ir.FloatType(), ir.IntType(64)
    fn = ir.Function(module, ir.FunctionType(f32, [ir.PointerType(f32), ir.PointerType(f32), i64]), name="dot")
    a, bvec, n = fn.args
    entry, body, done = (fn.append_basic_block(s) for s in ("entry", "body", "done"))
    b = ir.IRBuilder(entry)
    b.branch(body)
    b.position_at_end(body)
    i = b.phi(i64, name="i")
    acc = b.phi(f32, name="acc")
    i.add_incoming(ir.Constant(i64, 0), entry)
    acc.add_incoming(ir.Constant(f32, 0.0), entry)
    x = b.load(b.gep(a, [i], inbounds=True))
    y = b.load(b.gep(bvec, [i], inbounds=True))
    acc_next = b.fadd(acc, b.fmul(x, y), name="acc.next")
    i_next = b.add(i, ir.Constant(i64, 1), name="i.next")
    i.add_incoming(i_next, body)
    acc.add_incoming(acc_next, body)
    b.cbranch(b.icmp_signed("<", i_next, n), body, done)
    b.position_at_end(done)
    b.ret(acc_next)
    return fn
