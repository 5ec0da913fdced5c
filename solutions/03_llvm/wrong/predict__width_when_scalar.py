def predict_o3(kernel: Kernel, vector_bits: int) -> dict:
    """Says 'not vectorized' for a float reduction but still gives the full vector width."""
    dtype = kernel.buffers[0].dtype
    bits = {"f32": 32, "f64": 64, "i32": 32, "i64": 64}[dtype]
    is_reduction = any(isinstance(s, Assign) for s in kernel.body)
    if is_reduction and dtype in ("f32", "f64") and not kernel.fastmath:
        return {"vectorized": False, "width": vector_bits // bits}
    return {"vectorized": True, "width": vector_bits // bits}
