// The npu dialect's ops in ODS (MLIR's Operation Definition Specification): the same ops as the xDSL definitions
// in infopt/mlir/npu/dialect.py. `mlir-tblgen-19 -gen-op-decls / -gen-op-defs -I /usr/lib/llvm-19/include npu.td`
// generates their C++ classes: builders, accessors, the parser and printer, and the call to verify().

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributes.td"

def Npu_Dialect : Dialect {
  let name = "npu";
  let cppNamespace = "::npu";
  let summary = "DMA and tile-matmul commands of a systolic-array accelerator";
}

class Npu_Op<string mnemonic, list<Trait> traits = []> : Op<Npu_Dialect, mnemonic, traits>;

def Npu_DmaLoadOp : Npu_Op<"dma_load"> {
  let summary = "DMA a 2-D block of a DRAM tensor into an SRAM buffer";
  let arguments = (ins AnyMemRef:$src, Index:$row, Index:$col, Index:$rows, Index:$cols, Index:$addr,
                       StrAttr:$buffer, DefaultValuedAttr<I64Attr, "1">:$repeat);
  let assemblyFormat = [{
    $src `[` $row `,` $col `]` `sizes` `[` $rows `,` $cols `]` `to` $buffer `[` $addr `]` attr-dict `:` type($src)
  }];
  let hasVerifier = 1;
}

def Npu_DmaStoreOp : Npu_Op<"dma_store"> {
  let summary = "DMA the out tile back into a 2-D block of a DRAM tensor";
  let arguments = (ins AnyMemRef:$dst, Index:$row, Index:$col, Index:$rows, Index:$cols, Index:$addr,
                       UnitAttr:$relu);
  let assemblyFormat = [{
    $dst `[` $row `,` $col `]` `sizes` `[` $rows `,` $cols `]` `from` `out` `[` $addr `]` attr-dict `:` type($dst)
  }];
  let hasVerifier = 1;
}

def Npu_MatmulOp : Npu_Op<"matmul"> {
  let summary = "one m x n x k tile on the systolic array";
  let description = [{
    Multiplies the m x k tile at byte `a_addr` of the `in` SRAM by the k x n tile at `b_addr` of `wt` into the
    m x n tile at `c_addr` of `out` (adding to it when `acc` is true). `tile` bounds (m, n, k); `dataflow` is
    "ws" or "os"; `dtype` is the operand type (i8 or f32).
  }];
  let arguments = (ins Index:$a_addr, Index:$b_addr, Index:$c_addr, Index:$m, Index:$n, Index:$k, I1:$acc,
                       DenseI64ArrayAttr:$tile, StrAttr:$dataflow, TypeAttrOf<AnyTypeOf<[I8, F32]>>:$dtype);
  let assemblyFormat = [{
    $a_addr `,` $b_addr `,` $c_addr `sizes` `[` $m `,` $n `,` $k `]` `acc` $acc attr-dict
  }];
  let hasVerifier = 1;
}
