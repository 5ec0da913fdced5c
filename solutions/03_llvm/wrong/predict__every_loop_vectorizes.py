def predict_o3(kernel: Kernel, vector_bits: int) -> dict:
    """Assumes every loop vectorizes, float reductions included (forgets that float + is not associative)."""
    bits = {"f32": 32, "f64": 64, "i32": 32, "i64": 64}[kernel.buffers[0].dtype]
    return {"vectorized": True, "width": vector_bits // bits}
