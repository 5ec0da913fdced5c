def build_dot(module: ir.Module) -> ir.Function:
    """Add `float dot(float* a, float* b, i64 n)` to `module`, a loop whose counter and sum are phi nodes."""
    f32, i64 = ir.FloatType(), ir.IntType(64)
    fp = ir.PointerType(f32)
    fn = ir.Function(module, ir.FunctionType(f32, [fp, fp, i64]), name="dot")
    a, b, n = fn.args
    a.name, b.name, n.name = "a", "b", "n"
    entry, head, body, done = (fn.append_basic_block(s) for s in ("entry", "head", "body", "done"))
    bld = ir.IRBuilder(entry)
    bld.branch(head)
    bld.position_at_end(head)
    i = bld.phi(i64, name="i")
    acc = bld.phi(f32, name="acc")
    i.add_incoming(ir.Constant(i64, 0), entry)
    acc.add_incoming(ir.Constant(f32, 0.0), entry)
    bld.cbranch(bld.icmp_signed("<", i, n, name="more"), body, done)
    bld.position_at_end(body)
    x = bld.load(bld.gep(a, [i], inbounds=True), name="x")
    y = bld.load(bld.gep(b, [i], inbounds=True), name="y")
    acc_next = bld.fadd(acc, bld.fmul(x, y, name="p"), name="acc.next")
    i_next = bld.add(i, ir.Constant(i64, 1), name="i.next")
    i.add_incoming(i_next, body)
    acc.add_incoming(acc_next, body)
    bld.branch(head)
    bld.position_at_end(done)
    last = ir.GlobalVariable(module, f32, name="dot_last")  # keep the last result around for debugging
    last.initializer = ir.Constant(f32, 0.0)
    bld.store(acc, last)
    bld.ret(acc)
    return fn
