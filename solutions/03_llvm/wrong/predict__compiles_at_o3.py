def predict_o3(kernel: Kernel, vector_bits: int) -> dict:
    """Compiles the kernel at -O3 and reads the vector width off the result: the measurement, not a prediction."""
    text = optimize(emit_llvm(kernel), 3)
    widths = [int(w) for w in re.findall(r"<(\d+) x (?:float|double|i32|i64)>", text)]
    w = max(widths) if widths else 1
    return {"vectorized": w > 1, "width": w}
