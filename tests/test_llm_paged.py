"""The paged KV cache (infopt.llm.paged, infopt.llm.paged_blocks): the ref-counted allocator, append_slot's
copy-on-write, paged_attention through a block table, and PagedKVCache against the contiguous cache and the
uncached model (batches at mixed positions, forks, swapping, OutOfBlocks), plus the waste accounting."""
from __future__ import annotations

import math
import random

import pytest

torch = pytest.importorskip("torch")

from infopt.llm.kv_cache import ContiguousKVCache, kv_bytes_per_token  # noqa: E402
from infopt.llm.model import TARGET_CONFIG, TinyConfig, TinyLlama  # noqa: E402
from infopt.llm.paged import (  # noqa: E402
    BlockAllocator, OutOfBlocks, PagedKVCache, append_slot, fork_table, free_table, measure_waste, memory_waste,
    num_blocks_for, paged_attention,
)

torch.set_num_threads(1)
SMALL = TinyConfig(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16, ffn_dim=96, max_seq_len=128)


@pytest.fixture(scope="module")
def model() -> TinyLlama:
    return TinyLlama(SMALL, seed=3).eval()


def assert_close(got: torch.Tensor, want: torch.Tensor, tol: float = 1e-4) -> None:
    """Same shape, and equal within tol (torch.testing.assert_close costs seconds to import on a loaded machine)."""
    assert got.shape == want.shape, f"shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    err = (got - want).abs()
    assert torch.allclose(got, want, rtol=tol, atol=tol), \
        f"max abs error {err.max().item():.3g} at index {tuple(int(i) for i in torch.nonzero(err == err.max())[0])}"


def refs(allocator: BlockAllocator) -> list[int]:
    return [allocator.ref_count(b) for b in range(allocator.num_blocks)]


# --- the allocator -------------------------------------------------------------------------------------------------
def test_allocator_hands_out_the_lowest_free_block_and_counts_references():
    a = BlockAllocator(4)
    assert [a.allocate() for _ in range(3)] == [0, 1, 2] and a.num_free == 1
    a.free(1)
    a.free(0)
    assert a.allocate() == 0 and a.allocate() == 1 and a.allocate() == 3 and a.num_free == 0
    a.fork(2)
    assert a.ref_count(2) == 2
    a.free(2)
    assert a.ref_count(2) == 1 and a.num_free == 0  # still held by one table
    a.free(2)
    assert a.ref_count(2) == 0 and a.num_free == 1
    with pytest.raises(ValueError, match="double free"):
        a.free(2)
    with pytest.raises(ValueError, match="is free"):
        a.fork(2)
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        a.ref_count(4)


def test_out_of_blocks_is_a_clear_error_that_changes_nothing():
    a = BlockAllocator(2)
    a.allocate(), a.allocate()
    before = refs(a)
    with pytest.raises(OutOfBlocks, match="all 2 KV-cache blocks are in use"):
        a.allocate()
    assert refs(a) == before and a.num_free == 0
    assert issubclass(OutOfBlocks, RuntimeError)


def test_append_slot_allocates_at_block_boundaries_only():
    a = BlockAllocator(8)
    table: list[int] = []
    for n in range(10):  # block size 4: tokens 0, 4, 8 open a block
        new, copy = append_slot(a, table, n, 4)
        assert copy is None
        assert len(new) == num_blocks_for(n + 1, 4) and new[:len(table)] == table
        table = new
    assert table == [0, 1, 2] and refs(a)[:3] == [1, 1, 1] and a.num_free == 5


def test_append_slot_copies_a_shared_last_block_and_does_not_mutate_its_input():
    a = BlockAllocator(8)
    parent = [a.allocate(), a.allocate()]  # 6 tokens in blocks of 4: the last block is half full
    child = fork_table(a, parent)
    assert refs(a)[:2] == [2, 2]
    frozen = list(child)
    new, copy = append_slot(a, child, 6, 4)
    assert child == frozen  # the input list is untouched
    assert copy == (1, 2) and new == [0, 2]  # fresh block 2 (the lowest free) replaces shared block 1
    assert refs(a)[:3] == [2, 1, 1]
    again, copy = append_slot(a, parent, 6, 4)  # block 1 is now the parent's alone: no copy
    assert copy is None and again == parent and refs(a)[:3] == [2, 1, 1]
    # a shared FULL last block is not written: the next token opens a new block, nothing is copied
    full = fork_table(a, [0])
    new, copy = append_slot(a, full, 4, 4)
    assert copy is None and new == [0, 3] and a.ref_count(0) == 3


def test_append_slot_on_out_of_blocks_leaves_allocator_and_table_unchanged():
    a = BlockAllocator(2)
    parent = [a.allocate()]
    child = fork_table(a, parent)
    a.allocate()  # the pool is now empty
    for table, n in ((child, 2), (child, 4)):  # a copy-on-write, then a new block: neither can be had
        before, frozen = refs(a), list(table)
        with pytest.raises(OutOfBlocks):
            append_slot(a, table, n, 4)
        assert refs(a) == before and table == frozen
    with pytest.raises(ValueError, match="holds 1 blocks, this one holds 2"):
        append_slot(a, [0, 1], 3, 4)


def test_random_fork_append_free_keeps_ref_counts_equal_to_table_membership():
    rnd = random.Random(7)
    a, bs = BlockAllocator(24), 3
    seqs: dict[int, tuple[list[int], int]] = {}
    next_id = 0
    for _ in range(600):
        op = rnd.random()
        if op < 0.15 or not seqs:
            seqs[next_id] = ([], 0)
            next_id += 1
        elif op < 0.3:
            parent = rnd.choice(list(seqs))
            seqs[next_id] = (fork_table(a, seqs[parent][0]), seqs[parent][1])
            next_id += 1
        elif op < 0.42:
            sid = rnd.choice(list(seqs))
            free_table(a, seqs.pop(sid)[0])
        else:
            sid = rnd.choice(list(seqs))
            table, n = seqs[sid]
            try:
                table, copy = append_slot(a, table, n, bs)
            except OutOfBlocks:
                continue
            if copy is not None:
                src, dst = copy
                assert a.ref_count(dst) == 1 and a.ref_count(src) >= 1 and n % bs != 0
            seqs[sid] = (table, n + 1)
        members = [0] * a.num_blocks
        for table, n in seqs.values():
            assert len(table) == num_blocks_for(n, bs)
            for b in table:
                members[b] += 1
        assert refs(a) == members and a.num_free == members.count(0)
    for table, _ in seqs.values():
        free_table(a, table)
    assert a.num_free == a.num_blocks and not any(refs(a))


def test_fork_and_free_table_check_everything_before_changing_anything():
    a = BlockAllocator(4)
    b0 = a.allocate()
    with pytest.raises(ValueError, match="free block 1"):
        fork_table(a, [b0, 1])
    assert a.ref_count(b0) == 1
    with pytest.raises(ValueError, match="double free of block 0"):
        free_table(a, [b0, b0])
    assert a.ref_count(b0) == 1


# --- paged_attention ---------------------------------------------------------------------------------------------
def dense_attention(q, k, v):
    """An independent reference: one query per head against every key, KV head h // (Hq // Hkv)."""
    g = q.shape[0] // k.shape[0]
    kr, vr = k.repeat_interleave(g, dim=0), v.repeat_interleave(g, dim=0)  # [Hq, S, D]
    scores = torch.einsum("hd,hsd->hs", q, kr) / math.sqrt(q.shape[-1])
    return torch.einsum("hs,hsd->hd", torch.softmax(scores, dim=-1), vr)


@pytest.mark.parametrize("context_len", [1, 7, 8, 13])
@pytest.mark.parametrize("garbage", [float("nan"), 1e9])
def test_paged_attention_reads_through_the_table_and_never_the_stale_slots(context_len, garbage):
    gen = torch.Generator().manual_seed(context_len)
    hq, hkv, d, bs, nblocks = 4, 2, 16, 4, 10
    k = torch.randn(hkv, context_len, d, generator=gen)
    v = torch.randn(hkv, context_len, d, generator=gen)
    q = torch.randn(hq, d, generator=gen)
    table = [int(b) for b in torch.randperm(nblocks, generator=gen)[:num_blocks_for(context_len, bs)]]
    k_blocks = torch.full((nblocks, hkv, bs, d), garbage)
    v_blocks = torch.full((nblocks, hkv, bs, d), garbage)
    for i in range(context_len):
        k_blocks[table[i // bs], :, i % bs] = k[:, i]
        v_blocks[table[i // bs], :, i % bs] = v[:, i]
    out = paged_attention(q, k_blocks, v_blocks, table + [9] * 2, context_len)  # a longer table is fine
    assert out.shape == (hq, d) and torch.isfinite(out).all()
    assert_close(out, dense_attention(q, k, v), tol=1e-5)


def test_paged_attention_rejects_bad_input():
    kb = torch.zeros(3, 2, 4, 8)
    with pytest.raises(ValueError, match="need 2 table entries"):
        paged_attention(torch.zeros(4, 8), kb, kb, [0], 5)
    with pytest.raises(ValueError, match="outside"):
        paged_attention(torch.zeros(4, 8), kb, kb, [0, 3], 5)
    with pytest.raises(ValueError, match="context_len"):
        paged_attention(torch.zeros(4, 8), kb, kb, [0], 0)
    with pytest.raises(ValueError, match="one decode query"):
        paged_attention(torch.zeros(1, 4, 8), kb, kb, [0], 1)
    # integer scalars of numpy and torch are ints too (a table read out of a tensor)
    import numpy as np
    out = paged_attention(torch.ones(4, 8), kb, kb, torch.tensor([2, 1]), np.int64(5))
    assert out.shape == (4, 8)
    a = BlockAllocator(np.int64(3))
    assert append_slot(a, [], np.int64(0), np.int64(4)) == ([0], None) and a.ref_count(np.int64(0)) == 1
    with pytest.raises(ValueError, match="num_tokens must be an int >= 0"):
        append_slot(a, [0], 1.0, 4)


# --- PagedKVCache through the model ------------------------------------------------------------------------------
def uncached(model, tokens: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([tokens]))[0]  # [T, V]


def step(model, cache, seq_ids, tokens, starts):
    """One batched call: row b holds tokens[b] (all the same length) at positions starts[b]..."""
    t = len(tokens[0])
    positions = torch.tensor([[s + i for i in range(t)] for s in starts])
    with torch.no_grad():
        return model(torch.tensor(tokens), positions, cache, seq_ids)


def test_paged_equals_contiguous_and_uncached_for_a_batch_at_mixed_positions(model):
    gen = torch.Generator().manual_seed(0)
    prompts = [torch.randint(0, 256, (n,), generator=gen).tolist() for n in (5, 11, 16)]
    decode = torch.randint(0, 256, (3, 6), generator=gen).tolist()
    paged = PagedKVCache(SMALL, num_blocks=16, block_size=4)
    contiguous = ContiguousKVCache(SMALL, max_seqs=3, max_len=32)
    full = [p + d for p, d in zip(prompts, decode)]
    expected = [uncached(model, f) for f in full]
    for cache in (paged, contiguous):
        for sid, p in enumerate(prompts):  # prefill in chunks of up to 6 tokens
            for a in range(0, len(p), 6):
                chunk = p[a:a + 6]
                logits = step(model, cache, [sid], [chunk], [a])[0]
                assert_close(logits, expected[sid][a:a + len(chunk)])
        for i in range(6):  # batched decodes, each row at its own position
            logits = step(model, cache, [0, 1, 2], [[d[i]] for d in decode], [len(p) + i for p in prompts])
            for sid in range(3):
                assert_close(logits[sid, 0], expected[sid][len(prompts[sid]) + i])
    assert paged.bytes_used() == contiguous.bytes_used() == sum(map(len, full)) * paged.bytes_per_token
    assert paged.blocks_used == sum(num_blocks_for(len(f), 4) for f in full)
    assert paged.copies_done == 0 and paged.tokens_stored == sum(map(len, full))


@pytest.mark.parametrize("garbage", [float("nan"), 1e9])
def test_garbage_in_free_and_stale_slots_never_reaches_the_output(model, garbage):
    cache = PagedKVCache(SMALL, num_blocks=8, block_size=4)
    cache.k.fill_(garbage)
    cache.v.fill_(garbage)
    short, long = [3, 1, 4, 1, 5, 9], [2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2]
    out_short = step(model, cache, [0], [short[:5]], [0])[0]
    out_long = step(model, cache, [1], [long[:10]], [0])[0]
    # one batch: the short row reads its stale tail (and padding) where the long row reads real tokens
    both = step(model, cache, [0, 1], [[short[5]], [long[10]]], [5, 10])
    out_short, out_long = torch.cat([out_short, both[0]]), torch.cat([out_long, both[1]])
    assert torch.isfinite(out_short).all() and torch.isfinite(out_long).all()
    assert_close(out_short, uncached(model, short))
    assert_close(out_long, uncached(model, long))


@pytest.mark.parametrize("prompt_len, copies", [(6, 1), (8, 0)])
def test_fork_copies_exactly_when_a_shared_last_block_is_written(model, prompt_len, copies):
    gen = torch.Generator().manual_seed(prompt_len)
    prompt = torch.randint(0, 256, (prompt_len,), generator=gen).tolist()
    cache = PagedKVCache(SMALL, num_blocks=10, block_size=4)
    step(model, cache, [0], [prompt], [0])
    cache.fork(0, 1)
    shared = cache.block_table(0)
    assert cache.block_table(1) == shared and all(cache.allocator.ref_count(b) == 2 for b in shared)
    assert cache.bytes_used() == prompt_len * cache.bytes_per_token  # shared slots count once
    assert cache.blocks_needed([0, 1]) == 1 + (1 - copies) and cache.can_append([0, 1])
    streams = {0: [7, 8, 9, 10, 11], 1: [20, 21, 22, 23, 24]}  # parallel sampling: two continuations
    for i in range(5):
        logits = step(model, cache, [0, 1], [[streams[0][i]], [streams[1][i]]], [prompt_len + i] * 2)
        for sid in (0, 1):
            assert_close(logits[sid, 0], uncached(model, prompt + streams[sid][:i + 1])[-1])
        assert cache.copies_done == copies  # the one copy happens at the first write, never again
    full_blocks = prompt_len // 4
    assert cache.block_table(0)[:full_blocks] == cache.block_table(1)[:full_blocks] == shared[:full_blocks]
    assert all(cache.allocator.ref_count(b) == 2 for b in shared[:full_blocks])
    cache.free(0)
    cache.free(1)
    assert cache.num_free_blocks == cache.num_blocks and cache.blocks_used == 0 and cache.bytes_used() == 0
    assert not any(refs(cache.allocator))


def test_parallel_sampling_shares_the_prompt_and_copies_its_tail_once_per_extra_sample():
    cache = PagedKVCache(SMALL, num_blocks=64, block_size=16)
    cache.reserve([(0, 0, 200)])  # the blocks only, as the engine's model-free simulation does
    for child in (1, 2, 3):
        cache.fork(0, child)
    assert cache.blocks_used == 13 and cache.allocator.ref_count(cache.block_table(0)[-1]) == 4
    for t in range(200, 250):
        cache.reserve([(s, t, t + 1) for s in range(4)])
    # the prompt's partly filled 13th block is copied by the first three writers; the last one keeps it
    assert cache.copies_done == 3
    assert cache.blocks_used == 12 + 4 * num_blocks_for(250 - 192, 16)
    assert cache.bytes_used() == (192 + 4 * (250 - 192)) * cache.bytes_per_token
    for s in range(4):
        cache.free(s)
    assert cache.num_free_blocks == 64 and not any(refs(cache.allocator))


def test_swap_out_and_in_keeps_the_logits(model):
    gen = torch.Generator().manual_seed(5)
    a, b = (torch.randint(0, 256, (n,), generator=gen).tolist() for n in (9, 7))
    cache = PagedKVCache(SMALL, num_blocks=6, block_size=4)
    step(model, cache, [0], [a[:6]], [0])
    step(model, cache, [1], [b[:5]], [0])
    table_before = cache.block_table(0)
    assert cache.swap_out(0) == 2 and cache.swapped_ids == [0] and cache.length(0) == 6
    with pytest.raises(ValueError, match="swapped out"):
        step(model, cache, [0], [[a[6]]], [6])
    step(model, cache, [1], [b[5:7]], [5])  # the other sequence runs on, in blocks the swapped one freed
    cache.k[:, table_before] = float("nan")  # whatever is left in its old blocks is not what comes back
    cache.swap_in(0)
    logits = step(model, cache, [0], [a[6:9]], [6])[0]
    assert_close(logits, uncached(model, a)[6:9])
    logits = step(model, cache, [1], [[a[0]]], [7])[0, 0]
    assert_close(logits, uncached(model, b + [a[0]])[-1])


def test_swap_in_without_room_raises_and_changes_nothing(model):
    cache = PagedKVCache(SMALL, num_blocks=3, block_size=4)
    step(model, cache, [0], [[1, 2, 3, 4, 5]], [0])  # 2 blocks
    cache.swap_out(0)
    step(model, cache, [1], [[6, 7, 8, 9, 10]], [0])  # takes 2 of the 3 blocks
    before = (cache.block_tables(), refs(cache.allocator), cache.swapped_ids)
    with pytest.raises(OutOfBlocks, match="needs 2 blocks, 1 are free"):
        cache.swap_in(0)
    assert (cache.block_tables(), refs(cache.allocator), cache.swapped_ids) == before
    cache.free(1)
    cache.swap_in(0)
    cache.free(0)
    assert cache.num_free_blocks == 3 and not cache.swapped_ids


def test_out_of_blocks_in_a_batch_changes_nothing_and_the_step_succeeds_later(model):
    cache = PagedKVCache(SMALL, num_blocks=4, block_size=4)
    step(model, cache, [0], [[1, 2, 3]], [0])            # block 0, room for one more token
    step(model, cache, [1], [[4, 5, 6, 7]], [0])         # block 1, full
    step(model, cache, [2], [[8, 9, 10, 11, 12]], [0])   # blocks 2, 3: the pool is full
    assert not cache.can_append([0, 1]) and cache.can_append([0]) and cache.blocks_needed([0, 1, 2]) == 1
    state = (cache.block_tables(), {s: cache.length(s) for s in (0, 1, 2)}, refs(cache.allocator),
             cache.k.clone(), cache.v.clone())
    with pytest.raises(OutOfBlocks, match="needs 1 more KV-cache blocks, 0 of 4 are free"):
        step(model, cache, [0, 1], [[13], [14]], [3, 4])  # sequence 0 fits, sequence 1 needs a block
    after = (cache.block_tables(), {s: cache.length(s) for s in (0, 1, 2)}, refs(cache.allocator), cache.k, cache.v)
    assert after[:3] == state[:3] and torch.equal(after[3], state[3]) and torch.equal(after[4], state[4])
    cache.free(2)  # the scheduler preempts one; the same step now runs and is right
    logits = step(model, cache, [0, 1], [[13], [14]], [3, 4])
    assert_close(logits[0, 0], uncached(model, [1, 2, 3, 13])[-1])
    assert_close(logits[1, 0], uncached(model, [4, 5, 6, 7, 14])[-1])


def test_attend_rejects_gaps_unknown_sequences_and_bad_shapes(model):
    cache = PagedKVCache(SMALL, num_blocks=4, block_size=4)
    with pytest.raises(KeyError, match="unknown sequence 5"):
        step(model, cache, [5], [[1, 2]], [3])
    step(model, cache, [0], [[1, 2]], [0])
    with pytest.raises(ValueError, match="gap"):
        step(model, cache, [0], [[3]], [4])
    with pytest.raises(ValueError, match="once per call"):
        step(model, cache, [0, 0], [[3], [3]], [2, 2])
    q = torch.zeros(1, 4, 2, 16)
    with pytest.raises(ValueError, match="consecutive"):
        cache.attend(0, [0], torch.tensor([[2, 4]]), q, torch.zeros(1, 2, 2, 16), torch.zeros(1, 2, 2, 16))
    with pytest.raises(ValueError, match=r"k, v \[B, 2, T, 16\]"):
        cache.attend(0, [0], torch.tensor([[2, 3]]), q, torch.zeros(1, 1, 2, 16), torch.zeros(1, 1, 2, 16))
    with pytest.raises(ValueError, match="already exists"):
        cache.add_sequence(0)
    cache.add_sequence(1)
    assert cache.block_table(1) == [] and cache.length(1) == 0
    assert cache.num_free_blocks == 3  # only sequence 0's one block; nothing leaked by the failed calls


def test_truncate_frees_the_blocks_past_the_kept_tokens(model):
    cache = PagedKVCache(SMALL, num_blocks=4, block_size=4)
    tokens = [5, 6, 7, 8, 9, 10, 11]
    step(model, cache, [0], [tokens], [0])
    cache.truncate(0, 3)  # rejected speculative tokens
    assert cache.length(0) == 3 and cache.block_table(0) == [0] and cache.num_free_blocks == 3
    logits = step(model, cache, [0], [[42]], [3])[0, 0]
    assert_close(logits, uncached(model, tokens[:3] + [42])[-1])


# --- memory accounting -------------------------------------------------------------------------------------------
def test_bytes_match_the_per_token_formula():
    cache = PagedKVCache(TARGET_CONFIG, num_blocks=5, block_size=16)
    assert cache.bytes_per_token == kv_bytes_per_token(TARGET_CONFIG, 4)
    assert cache.bytes_reserved() == 5 * 16 * kv_bytes_per_token(TARGET_CONFIG, 4)
    half = PagedKVCache(TARGET_CONFIG, num_blocks=5, block_size=16, dtype=torch.float16)
    assert half.bytes_reserved() == 5 * 16 * kv_bytes_per_token(TARGET_CONFIG, 2)


def test_memory_waste_counts_last_block_tails_against_max_len_reservations():
    report = memory_waste([1, 16, 17], max_len=32, block_size=16)
    assert (report.used_bytes, report.paged_bytes, report.contiguous_bytes) == (34, 64, 96)
    assert report.paged_waste_bytes == 15 + 0 + 15 and report.contiguous_waste_bytes == 31 + 16 + 15
    assert report.paged_over_contiguous == pytest.approx(30 / 62)
    with pytest.raises(ValueError, match="max_len=32"):
        memory_waste([33], max_len=32, block_size=16)


def test_measured_waste_from_real_caches_equals_the_computed_one():
    rnd = random.Random(11)
    lengths = [rnd.randint(1, 48) for _ in range(6)] + [0]
    for block_size in (1, 8, 16):
        measured = measure_waste(SMALL, lengths, max_len=48, block_size=block_size)
        computed = memory_waste(lengths, 48, block_size, bytes_per_token=kv_bytes_per_token(SMALL, 4))
        assert measured == computed
        assert measured.paged_waste_bytes < block_size * len(lengths) * kv_bytes_per_token(SMALL, 4)
    assert measure_waste(SMALL, lengths, 48, 1).paged_waste_bytes == 0  # one-token blocks: no fragmentation


def test_the_block_bookkeeping_imports_no_torch():
    """The scheduler counts blocks with paged_blocks: it must stay pure Python."""
    import subprocess
    import sys
    code = "import sys, infopt.llm.paged_blocks; assert 'torch' not in sys.modules, 'paged_blocks imported torch'"
    subprocess.run([sys.executable, "-c", code], check=True)
