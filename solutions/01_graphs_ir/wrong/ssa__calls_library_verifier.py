def ssa_problems(graph: Graph) -> set[tuple[str, str]]:
    """Reads the answer off the library verifier's messages."""
    import re

    from infopt.ir.verify import check

    out = set()
    for msg in check(graph):
        if m := re.match(r"value %(\S+) is defined twice", msg):
            out.add(("redefined", m.group(1)))
        elif m := re.match(r"node \S+ uses value %(\S+) before its definition", msg):
            out.add(("use_before_def", m.group(1)))
        elif m := re.match(r"node \S+ uses value %(\S+), which is never defined", msg):
            out.add(("undefined", m.group(1)))
        elif m := re.match(r"graph output %(\S+) is never defined", msg):
            out.add(("undefined_output", m.group(1)))
    return out
