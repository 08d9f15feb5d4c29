"""Op attribute schemas: every registered op declares one, the registry hash is stable, and a
parsed graph whose attributes break its op's schema is rejected before anything runs. (The
whole suite runs with LUCID_CHECK_ATTRS=1, see conftest.py, so every eager call conforms too.)"""
import os
import re
import subprocess
import sys

import pytest

import lucid
from lucid import _C

ENTRY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*:(int|float|bool|ints|dtype|str)\??$")


def registered_ops():
    return [o["name"] for o in _C._op_registry() if o["registered"]]


def test_suite_checks_every_call():
    assert os.environ.get("LUCID_CHECK_ATTRS") == "1"


def test_every_registered_op_has_a_well_formed_schema():
    ops = registered_ops()
    assert len(ops) > 200
    for name in ops:
        schema = _C._op_attr_schema(name)
        assert isinstance(schema, str), name
        entries = schema.split(", ") if schema else []
        assert all(ENTRY.match(e) for e in entries), (name, schema)
        assert len({e.split(":")[0] for e in entries}) == len(entries), (name, schema)


def test_schemas_of_known_ops():
    assert _C._op_attr_schema("Add") == ""
    assert _C._op_attr_schema("FusedElementwise") == ""
    assert _C._op_attr_schema("Softmax") == "dim:int"
    assert _C._op_attr_schema("Clamp") == "min:float?, max:float?"
    assert _C._op_attr_schema("ConvFused") == ("stride:ints, padding_l:ints, padding_r:ints, dilation:ints, groups:int, "
                                               "activation:str, residual_first:bool?, in_block:int?, out_block:int?")
    assert "seed:int" in _C._op_attr_schema("Uniform") and "offset:int" in _C._op_attr_schema("Uniform")
    with pytest.raises(ValueError, match="unknown op name 'NoSuchOp'"):
        _C._op_attr_schema("NoSuchOp")


def test_registry_hash_is_stable_across_processes():
    h = _C._op_registry_hash()
    assert isinstance(h, int) and 0 <= h < 2**64
    assert h == _C._op_registry_hash()
    code = "import lucid; print(lucid._C._op_registry_hash())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert int(out.stdout) == h


def sum_graph(attrs):
    return ("graph(%0: float32[2,3] input) {\n"
            f"  %1 = Sum(%0) {attrs} : float32[2]\n"
            "  return (%1)\n"
            "}\n")


def test_parse_accepts_conforming_attributes():
    g = _C._parse_ir(sum_graph("{dims=[1], keepdim=false}"))
    assert "Sum" in str(g)


def test_parse_rejects_wrong_attribute_type():
    with pytest.raises(TypeError, match="op Sum: attribute 'dims': expected ints, got int"):
        _C._parse_ir(sum_graph("{dims=1, keepdim=false}"))
    with pytest.raises(TypeError, match="op Sum: attribute 'keepdim': expected bool, got str"):
        _C._parse_ir(sum_graph('{dims=[1], keepdim="no"}'))


def test_parse_rejects_unknown_and_missing_attributes():
    with pytest.raises(ValueError, match="op Sum: unknown attribute 'axis'"):
        _C._parse_ir(sum_graph("{dims=[1], keepdim=false, axis=1}"))
    with pytest.raises(ValueError, match="op Sum: missing required attribute 'keepdim'"):
        _C._parse_ir(sum_graph("{dims=[1]}"))
    with pytest.raises(ValueError, match="op Add: unknown attribute 'alpha'"):
        _C._parse_ir("graph(%0: float32[2] input) {\n  %1 = Add(%0, %0) {alpha=2.0} : float32[2]\n  return (%1)\n}\n")


def test_parse_rejects_bad_attributes_inside_a_fused_body():
    text = ("graph(%0: float32[4] input) {\n"
            "  %1 = FusedElementwise(%0) : float32[4] {\n"
            "    graph(%0: float32[4] input) {\n"
            "      %1 = LeakyRelu(%0) {negative_slope=true} : float32[4]\n"
            "      return (%1)\n"
            "    }\n"
            "  }\n"
            "  return (%1)\n"
            "}\n")
    with pytest.raises(TypeError, match="op LeakyRelu: attribute 'negative_slope': expected float, got bool"):
        _C._parse_ir(text)
    _C._parse_ir(text.replace("true", "0.1"))


def test_float_attribute_holds_an_int_through_print_and_parse():
    # clamp(min=0) keeps the Python int as an int attribute; the printer writes `0`, the parser
    # reads an int back, and the float attribute accepts it. `0.5` stays a float.
    text = ("graph(%0: float32[3] input) {\n"
            "  %1 = Clamp(%0) {min=0, max=0.5} : float32[3]\n"
            "  return (%1)\n"
            "}\n")
    g = _C._parse_ir(text)
    assert "{min=0, max=0.5}" in str(g)
    assert str(_C._parse_ir(str(g))) == str(g)


def test_compiled_ir_round_trips_through_the_schema_check():
    # A conv + batch norm + relu model (epilogue and fold passes add attributes) and a random op:
    # the optimised IR the compiler prints parses back, attributes and all.
    m = lucid.nn.Sequential(lucid.nn.Conv2d(3, 4, 3, padding=1), lucid.nn.BatchNorm2d(4), lucid.nn.ReLU(),
                            lucid.nn.Flatten(), lucid.nn.Linear(4 * 5 * 5, 3))
    m.eval()
    cm = lucid.compile(m)
    with lucid.no_grad():
        cm(lucid.randn(2, 3, 5, 5))
    text = cm.ir()
    assert "ConvFused" in text or "Conv" in text
    assert str(_C._parse_ir(text)) == str(_C._parse_ir(str(_C._parse_ir(text))))

    f = lucid.compile(lambda x: lucid.nn.functional.dropout(x, 0.5, training=True) + lucid.rand(3).clamp(min=0))
    f(lucid.randn(3))
    text = f.ir()
    assert "seed=" in text and "offset=" in text
    _C._parse_ir(text)
