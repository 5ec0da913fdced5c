def g(x: int) -> int:
    return x * 3
