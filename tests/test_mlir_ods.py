"""infopt.mlir.ods: the npu ops in ODS; mlir-tblgen-19 generates builders, accessors and verifier hooks that match
the xDSL definitions' operands and attributes."""
import re

import pytest

from infopt.mlir.npu import DmaLoadOp, DmaStoreOp, MatmulOp
from infopt.mlir.ods import generated_api, tblgen, td_text
from infopt.mlir.tools import MlirToolError


def _camel(name: str) -> str:
    return "get" + "".join(p.capitalize() for p in name.split("_"))


@pytest.mark.parametrize("cls,xdsl_op", [("MatmulOp", MatmulOp), ("DmaLoadOp", DmaLoadOp), ("DmaStoreOp", DmaStoreOp)])
def test_tblgen_generates_an_accessor_for_every_operand_and_property_of_the_xdsl_op(cls, xdsl_op):
    api = generated_api(tblgen("decls"), cls)
    fields = [name for name, _ in xdsl_op.get_irdl_definition().operands]
    fields += list(xdsl_op.get_irdl_definition().properties)
    missing = [f for f in fields if _camel(f) not in api["accessors"]]
    assert not missing, f"{cls}: no generated accessor for {missing}"
    assert any("::llvm::LogicalResult verify();" == v for v in api["verifier"])   # hasVerifier = 1
    assert len(api["builders"]) >= 3


def test_defs_and_docs_generate_and_the_dialect_is_named_npu():
    defs = tblgen("defs")
    assert "MatmulOp::parse" in defs and "MatmulOp::print" in defs
    assert "npu.matmul" in tblgen("docs")
    assert "class NpuDialect" in tblgen("dialect-decls")
    assert re.search(r'let name = "npu";', td_text())


def test_a_broken_td_file_reports_tblgens_error(tmp_path):
    bad = tmp_path / "bad.td"
    bad.write_text(td_text().replace("Index:$m,", "Nonsense:$m,"))
    with pytest.raises(MlirToolError, match="Nonsense"):
        tblgen("decls", bad)
    with pytest.raises(ValueError, match="kind must be"):
        tblgen("python")


def test_a_reference_record_of_every_random_spec_compiles_with_an_accessor_per_field():
    """reference_record (what unit 04's exercise asks for) compiles after PREAMBLE for random specs, and ODS makes an
    accessor for every operand, attribute and result the spec names."""
    import numpy as np

    from infopt.mlir.ods import class_declaration, random_op_spec, record_outputs, reference_record

    rng = np.random.default_rng(0)
    for _ in range(12):
        spec = random_op_spec(rng)
        out = record_outputs(reference_record(spec))
        cls = spec.record.split("_", 1)[1]
        api = generated_api(out["decls"], cls)
        assert {_camel(n) for n, _ in (*spec.operands, *spec.attributes, *spec.results)} <= set(api["accessors"])
        assert ("::llvm::LogicalResult verify();" in api["verifier"]) == spec.verifier
        assert ("ConditionallySpeculatable" in class_declaration(out["decls"], cls)) == spec.pure
        assert f'"npu.{spec.mnemonic}"' in out["decls"] and spec.summary.lower() in out["docs"].lower()


def test_a_record_may_not_include_files_and_a_broken_one_reports_tblgens_error():
    from infopt.mlir.ods import record_outputs

    with pytest.raises(ValueError, match="may not include"):
        record_outputs('include "/etc/passwd"\ndef Npu_XOp : Npu_Op<"x"> {}')
    with pytest.raises(ValueError, match="may not include"):
        record_outputs('#define X\ndef Npu_XOp : Npu_Op<"x"> {}')
    with pytest.raises(MlirToolError, match="Nonsense"):
        record_outputs('def Npu_XOp : Npu_Op<"x"> {\n  let arguments = (ins Nonsense:$a);\n}\n')


def test_record_outputs_lists_what_the_text_adds_with_its_fields_as_tablegen_resolved_them():
    """"records": the named defs and classes a record's text adds to PREAMBLE (anonymous records left out), and each
    def's string and bit fields, unescaped: how unit 04's tests check the record's name, its summary and that it is
    one def."""
    from infopt.mlir.ods import OpSpec, record_outputs, reference_record

    spec = OpSpec("Npu_ScaleOp", "scale", "scale a tile", (("x", "f32"),), (("k", "i64"),), (("y", "f32"),), True, True)
    records = record_outputs(reference_record(spec))["records"]
    assert records["defs"] == ["Npu_ScaleOp"] and records["classes"] == []
    fields = records["fields"]["Npu_ScaleOp"]
    assert fields["summary"] == "scale a tile" and fields["opName"] == "scale" and fields["hasVerifier"] == "1"
    extra = record_outputs('def Npu_XOp : Npu_Op<"x"> {\n  let summary = "say \\"x\\"";\n}\n'
                           "def Npu_IndexType : TypeAlias<Index>;\nclass Helper<int n> { int m = n; }\n")["records"]
    assert extra["defs"] == ["Npu_IndexType", "Npu_XOp"] and extra["classes"] == ["Helper"]
    assert extra["fields"]["Npu_XOp"]["summary"] == 'say "x"' and extra["fields"]["Npu_XOp"]["hasVerifier"] == "0"


def test_documented_reads_each_constraint_that_the_declarations_cannot_tell_apart():
    """I1 and I32 (or F32 and F64, StrAttr and SymbolNameAttr) generate the same C++ accessors; the documentation
    names each constraint, which is what unit 04's tests compare."""
    from infopt.mlir.ods import documented, record_outputs

    def doc(operand: str, attribute: str, result: str) -> dict:
        return documented(record_outputs(f'def Npu_XOp : Npu_Op<"x"> {{\n  let summary = "do x";\n'
                                         f"  let arguments = (ins {operand}:$a, {attribute}:$k);\n"
                                         f"  let results = (outs {result}:$r);\n}}\n")["docs"])

    base = doc("I1", "StrAttr", "F32")
    assert base["summary"] == "Do x"
    assert base["operands"] == [("a", "1-bit signless integer")] and base["results"] == [("r", "32-bit float")]
    assert base["attributes"] == [("k", "string attribute")]
    assert doc("I32", "StrAttr", "F32")["operands"] != base["operands"]
    assert doc("I1", "SymbolNameAttr", "F32")["attributes"] == base["attributes"]   # the records tell these apart:
    named = record_outputs('def Npu_XOp : Npu_Op<"x"> {\n  let arguments = (ins I1:$a, SymbolNameAttr:$k);\n}\n')
    assert named["records"]["fields"]["Npu_XOp"]["arguments"] == "(ins I1:$a, SymbolNameAttr:$k)"
    assert doc("I1", "StrAttr", "F64")["results"] != base["results"]
    empty = documented(record_outputs('def Npu_YOp : Npu_Op<"y"> {}\n')["docs"])
    assert empty["operands"] == empty["attributes"] == empty["results"] == []
