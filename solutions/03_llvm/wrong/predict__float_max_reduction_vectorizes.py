def predict_o3(kernel: Kernel, vector_bits: int) -> dict:
    """Thinks max is associative in floats too, so a float max reduction vectorizes without fastmath."""
    dtype = kernel.buffers[0].dtype
    bits = {"f32": 32, "f64": 64, "i32": 32, "i64": 64}[dtype]
    reductions = [s for s in kernel.body if isinstance(s, Loop) and isinstance(s.body[0], Assign)]
    is_max = bool(reductions) and "max" in str(reductions[0].body[0]).lower()
    if reductions and dtype in ("f32", "f64") and not kernel.fastmath and not is_max:
        return {"vectorized": False, "width": 1}
    return {"vectorized": True, "width": vector_bits // bits}
