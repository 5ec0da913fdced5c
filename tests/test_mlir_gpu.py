"""infopt.mlir.gpu: a parallel loop becomes a launched kernel, is outlined, lowered to NVVM and to PTX, no GPU needed."""
import pytest

from infopt.mlir.gpu import lower_to_ptx, ptx_of

SCALE = """
func.func @scale(%x: memref<1024xf32>, %y: memref<1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1024 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %x[%i] : memref<1024xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %y[%i] : memref<1024xf32>
  }
  return
}
"""


@pytest.fixture(scope="module")
def stages():
    return lower_to_ptx(SCALE)


def test_each_stage_holds_what_it_is_named_for(stages):
    assert "gpu.launch blocks" in stages["launch"] and "gpu.module" not in stages["launch"]
    outlined = stages["outlined"]
    assert "gpu.launch_func" in outlined and "gpu.func @scale_kernel" in outlined and "kernel" in outlined
    assert "nvvm.read.ptx.sreg.tid.x" in stages["nvvm"] and "gpu.thread_id" not in stages["nvvm"]


def test_the_ptx_is_nvptx_for_the_chip_with_one_global_load_and_store(stages):
    ptx = stages["ptx"]
    assert ".target sm_90" in ptx and ".visible .entry scale_kernel(" in ptx and "%tid.x" in ptx
    assert ptx.count("ld.global.f32") == 1 and ptx.count("st.global.f32") == 1 and "mul.rn.f32" in ptx


def test_another_chip_and_a_missing_binary():
    assert ".target sm_80" in lower_to_ptx(SCALE, chip="sm_80")["ptx"]
    with pytest.raises(ValueError, match="no gpu.binary"):
        ptx_of("module {}")
