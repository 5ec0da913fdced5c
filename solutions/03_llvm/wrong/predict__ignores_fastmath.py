def predict_o3(kernel: Kernel, vector_bits: int) -> dict:
    """Knows float reductions stay scalar, but forgets that fastmath (reassoc) lets them vectorize."""
    dtype = kernel.buffers[0].dtype
    bits = {"f32": 32, "f64": 64, "i32": 32, "i64": 64}[dtype]
    is_reduction = any(isinstance(s, Assign) for s in kernel.body)
    if is_reduction and dtype in ("f32", "f64"):
        return {"vectorized": False, "width": 1}
    return {"vectorized": True, "width": vector_bits // bits}
