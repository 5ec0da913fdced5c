"""Decode kernels (infopt.kernels.decoding): flash-decoding's split + log-sum-exp reduce against a float64 reference
(any number of splits, empty splits, GQA, fp16), and paged_decode against infopt.llm.paged.paged_attention through
block tables with odd context lengths, stale slots full of huge values, forked (shared) blocks, and bad tables."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("infopt.kernels.backend")  # before triton itself: it sets TRITON_INTERPRET

from infopt.kernels.decoding import (  # noqa: E402
    decode_reference, flash_decoding, paged_decode, paged_decode_kernel,
)
from infopt.llm.paged import BlockAllocator, append_slot, fork_table, paged_attention  # noqa: E402

torch.set_num_threads(1)


def rand(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def max_err(got: torch.Tensor, want: torch.Tensor) -> float:
    return (got.to(torch.float64) - want.to(torch.float64)).abs().max().item()


# --- flash-decoding ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("S,num_splits", [(1, 1), (1, 4), (37, 3), (64, 4), (100, 5), (9, 8)])
def test_flash_decoding_matches_the_float64_reference(S, num_splits):
    # (1, 4) and (9, 8): splits that hold no key at all must drop out of the reduction
    q, k, v = rand(1, 2, 16, seed=S), rand(1, 2, S, 16, seed=S + 1), rand(1, 2, S, 16, seed=S + 2)
    got = flash_decoding(q, k, v, num_splits=num_splits)
    assert got.shape == (1, 2, 16) and got.dtype == torch.float32
    assert max_err(got, decode_reference(q, k, v)) < 1e-5


def test_flash_decoding_gqa_odd_head_dim_and_fp16():
    q, k, v = rand(2, 4, 24, seed=1), rand(2, 2, 33, 24, seed=2) * 3, rand(2, 2, 33, 24, seed=3)
    assert max_err(flash_decoding(q, k, v, num_splits=2), decode_reference(q, k, v)) < 1e-5
    h = [t.half() for t in (q, k, v)]
    got = flash_decoding(*h, num_splits=3)
    assert got.dtype == torch.float16 and max_err(got, decode_reference(*h)) < 1e-2


def test_flash_decoding_splits_agree_with_each_other_and_with_the_paged_reference_math():
    q, k, v = rand(1, 2, 32, seed=4), rand(1, 1, 50, 32, seed=5) * 4, rand(1, 1, 50, 32, seed=6)
    one = flash_decoding(q, k, v, num_splits=1)
    assert max_err(flash_decoding(q, k, v, num_splits=4), one) < 1e-5
    mask = torch.ones(1, 1, 50, dtype=torch.bool)
    from infopt.llm.model import grouped_attention
    assert max_err(one, grouped_attention(q[:, :, None], k, v, mask)[:, :, 0]) < 1e-5


def test_flash_decoding_rejects_bad_inputs():
    q, k = rand(1, 2, 16), rand(1, 2, 8, 16)
    with pytest.raises(ValueError, match=r"q \[B, H, D\]"):
        flash_decoding(q[0], k, k)
    with pytest.raises(ValueError, match="H a multiple of Hkv"):
        flash_decoding(rand(1, 3, 16), k, k)
    with pytest.raises(ValueError, match="num_splits must be an int >= 1"):
        flash_decoding(q, k, k, num_splits=0)
    with pytest.raises(ValueError, match="S = 0"):
        flash_decoding(q, k[:, :, :0], k[:, :, :0])
    with pytest.raises(TypeError, match="share a dtype"):
        flash_decoding(q, k.half(), k)


# --- paged decode --------------------------------------------------------------------------------------------------
NUM_BLOCKS, HKV, BLOCK, D = 12, 2, 8, 16


def paged_setup(lens, hq=4, seed=0, stale=1e4):
    """Random K/V blocks, tables built with the paged cache's allocator (sequence 1 forked from sequence 0 after
    its prefix, so they share blocks), and every slot no table's context reaches filled with `stale`."""
    kb, vb = rand(NUM_BLOCKS, HKV, BLOCK, D, seed=seed), rand(NUM_BLOCKS, HKV, BLOCK, D, seed=seed + 1)
    alloc = BlockAllocator(NUM_BLOCKS)
    tables = [[]]
    for pos in range(lens[0]):
        tables[0], _ = append_slot(alloc, tables[0], pos, BLOCK)
    for n in lens[1:]:
        tables.append([])
        for pos in range(n):
            tables[-1], _ = append_slot(alloc, tables[-1], pos, BLOCK)
    live = torch.zeros(NUM_BLOCKS, BLOCK, dtype=torch.bool)
    for table, n in zip(tables, lens):
        for i in range(n):
            live[table[i // BLOCK], i % BLOCK] = True
    for t in (kb, vb):
        t.permute(0, 2, 1, 3)[~live] = stale  # slots past every context length: must never be read
    width = max(len(t) for t in tables) + 1
    padded = torch.tensor([t + [NUM_BLOCKS + 5] * (width - len(t)) for t in tables], dtype=torch.int32)
    return rand(len(lens), hq, D, seed=seed + 2), kb, vb, tables, padded


def check_per_sequence(q, kb, vb, tables, padded, lens):
    got = paged_decode(q, kb, vb, padded, torch.tensor(lens, dtype=torch.int32))
    assert got.shape == q.shape and torch.isfinite(got).all()
    for i, n in enumerate(lens):
        assert max_err(got[i], paged_attention(q[i], kb, vb, tables[i], n)) < 1e-5, f"sequence {i}"
    return got


def test_paged_decode_matches_paged_attention_with_odd_lengths_and_stale_slots():
    lens = [29, 1, 8, 17]  # mid-block, a single token, exactly one full block, one past a boundary
    q, kb, vb, tables, padded = paged_setup(lens)
    # the allocator's tables are in order; shuffle the physical blocks so logical != physical
    perm = torch.randperm(NUM_BLOCKS, generator=torch.Generator().manual_seed(3))
    inv = torch.argsort(perm)
    kb, vb = kb[perm], vb[perm]
    tables = [[int(inv[b]) for b in t] for t in tables]
    padded = torch.where(padded < NUM_BLOCKS, inv[padded.clamp(max=NUM_BLOCKS - 1).long()].int(), padded)
    check_per_sequence(q, kb, vb, tables, padded, lens)


def test_paged_decode_gqa_groups_and_mha():
    lens = [13, 20]
    for hq in (2, 8):  # MHA (Hq == Hkv) and 4 query heads per KV head
        q, kb, vb, tables, padded = paged_setup(lens, hq=hq, seed=hq)
        check_per_sequence(q, kb, vb, tables, padded, lens)


def test_paged_decode_reads_shared_forked_blocks():
    kb, vb = rand(NUM_BLOCKS, HKV, BLOCK, D, seed=10), rand(NUM_BLOCKS, HKV, BLOCK, D, seed=11)
    alloc = BlockAllocator(NUM_BLOCKS)
    parent = []
    for pos in range(19):
        parent, _ = append_slot(alloc, parent, pos, BLOCK)
    child = fork_table(alloc, parent)  # shares all three blocks, the last one partly filled
    child, copy = append_slot(alloc, child, 19, BLOCK)  # the child's first own token copies the shared last block
    assert copy is not None
    src, dst = copy
    kb[dst], vb[dst] = kb[src], vb[src]
    kb[dst, :, 19 % BLOCK] = rand(HKV, D, seed=12)
    vb[dst, :, 19 % BLOCK] = rand(HKV, D, seed=13)
    assert parent[:2] == child[:2]
    for t in (kb, vb):  # the stale tails of both last blocks
        t[parent[2], :, 19 % BLOCK:] = 1e4
        t[child[2], :, 20 % BLOCK:] = 1e4
    q = rand(2, 4, D, seed=14)
    padded = torch.tensor([parent + [0], child + [0]], dtype=torch.int32)
    check_per_sequence(q, kb, vb, [parent, child], padded, [19, 20])
    # two sequences on the very same table (a fork before any write)
    same = torch.tensor([parent, parent], dtype=torch.int32)
    got = paged_decode(q, kb, vb, same, torch.tensor([19, 19], dtype=torch.int32))
    assert max_err(got[1], paged_attention(q[1], kb, vb, parent, 19)) < 1e-5


def test_paged_decode_never_reads_stale_slots_or_unused_table_entries():
    from infopt.kernels.trace import run_traced

    lens = [11, 3]
    q, kb, vb, tables, padded = paged_setup(lens, hq=2, seed=20)
    ctx = torch.tensor(lens, dtype=torch.int32)
    o = torch.empty_like(q)
    log = run_traced(paged_decode_kernel, (2, 2), q, kb, vb, padded, ctx, o, 1, 0.25, q.stride(0), q.stride(1),
                     kb.stride(0), kb.stride(1), kb.stride(2), vb.stride(0), vb.stride(1), vb.stride(2),
                     padded.stride(0), o.stride(0), o.stride(1), D=D, BLOCK_D=D, BLOCK_SIZE=BLOCK, BLOCK_SLOTS=BLOCK)
    per_head = sum(lens) * D * 2  # 2 query heads, one KV head each (Hkv = 2, group 1)
    assert log.reads("k_ptr") == per_head == log.reads("v_ptr")  # exactly the live tokens, no stale slot
    assert log.reads("tables_ptr") == 2 * (2 + 1)  # 2 + 1 table entries, once per head: never the padding
    assert log.writes("o_ptr") == q.numel()


def test_paged_decode_rejects_bad_tables_and_shapes():
    q, kb, vb, tables, padded = paged_setup([10, 5])
    lens = torch.tensor([10, 5], dtype=torch.int32)
    bad = padded.clone()
    bad[0, 1] = NUM_BLOCKS
    with pytest.raises(ValueError, match=r"block_tables\[0\] names block 12 .* outside \[0, 12\)"):
        paged_decode(q, kb, vb, bad, lens)
    bad[0, 1] = -1
    with pytest.raises(ValueError, match="names block -1"):
        paged_decode(q, kb, vb, bad, lens)
    with pytest.raises(ValueError, match=r"context_lens\[1\] = 25: it must lie in 1..24"):
        paged_decode(q, kb, vb, padded, torch.tensor([10, 25], dtype=torch.int32))
    with pytest.raises(ValueError, match=r"context_lens\[0\] = 0"):
        paged_decode(q, kb, vb, padded, torch.tensor([0, 5], dtype=torch.int32))
    with pytest.raises(ValueError, match="block_tables must be int32"):
        paged_decode(q, kb, vb, padded.long(), lens)
    with pytest.raises(ValueError, match="context_lens must be int32"):
        paged_decode(q, kb, vb, padded, lens[:1])
    with pytest.raises(ValueError, match="Hq a multiple of Hkv"):
        paged_decode(rand(2, 3, D), kb, vb, padded, lens)
    with pytest.raises(ValueError, match=r"\[num_blocks, Hkv, block_size, D\]"):
        paged_decode(q, kb, vb[:, :1], padded, lens)
