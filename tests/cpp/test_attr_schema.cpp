// Attribute schemas: parsing and canonical text, check_attrs (unknown, missing, wrong type,
// optional), the registry hash (deterministic, sensitive to names and schemas), and the verifier
// rejecting a parsed graph whose attributes break its op's schema.
#include <gtest/gtest.h>

#include "lucid/compile/ir/graph.h"
#include "lucid/ops/op_def.h"

using namespace lucid;

static std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(AttrSchema, ParseAndCanonicalText) {
  auto s = parse_attr_schema("T", "  dims :ints,keepdim:bool ,eps: float ? ");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].name, "dims");
  EXPECT_EQ(s[0].type, AttrType::Ints);
  EXPECT_FALSE(s[0].optional);
  EXPECT_EQ(s[2].type, AttrType::Float);
  EXPECT_TRUE(s[2].optional);
  EXPECT_EQ(format_attr_schema(s), "dims:ints, keepdim:bool, eps:float?");
  EXPECT_EQ(parse_attr_schema("T", format_attr_schema(s)), s);
  EXPECT_TRUE(parse_attr_schema("T", "").empty());
  EXPECT_EQ(format_attr_schema(parse_attr_schema("T", "a:int, b:float, c:bool, d:ints, e:dtype, f:str")),
            "a:int, b:float, c:bool, d:ints, e:dtype, f:str");
}

TEST(AttrSchema, MalformedSchemaRaises) {
  EXPECT_NE(error_of([] { parse_attr_schema("T", "dim"); }).find("name:type"), std::string::npos);
  EXPECT_NE(error_of([] { parse_attr_schema("T", "dim:integer"); }).find("has type 'integer'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_attr_schema("T", "dim:int, dim:bool"); }).find("declared twice"), std::string::npos);
  EXPECT_NE(error_of([] { parse_attr_schema("T", "dim:int,"); }).find("name:type"), std::string::npos);
  EXPECT_NE(error_of([] { parse_attr_schema("T", "1x:int"); }).find("no valid name"), std::string::npos);
  EXPECT_THROW(parse_attr_schema("T", ":int"), ValueError);
}

TEST(AttrSchema, CheckAttrs) {
  auto s = parse_attr_schema("Op", "dim:int, keepdim:bool, eps:float?, dtype:dtype?");
  EXPECT_NO_THROW(check_attrs("Op", s, Attrs{{"dim", int64_t{1}}, {"keepdim", true}}));
  EXPECT_NO_THROW(check_attrs("Op", s, Attrs{{"keepdim", false}, {"eps", 1e-5}, {"dim", int64_t{0}}}));
  // A float attribute holds an int as it was given (Attrs::f reads it as a double).
  EXPECT_NO_THROW(check_attrs("Op", s, Attrs{{"dim", int64_t{1}}, {"keepdim", true}, {"eps", int64_t{1}}}));

  std::string e = error_of([&] { check_attrs("Op", s, Attrs{{"dim", int64_t{1}}, {"keepdim", true}, {"axis", int64_t{2}}}); });
  EXPECT_NE(e.find("op Op: unknown attribute 'axis'"), std::string::npos) << e;
  e = error_of([&] { check_attrs("Op", s, Attrs{{"dim", int64_t{1}}}); });
  EXPECT_NE(e.find("op Op: missing required attribute 'keepdim'"), std::string::npos) << e;
  e = error_of([&] { check_attrs("Op", s, Attrs{{"dim", 1.0}, {"keepdim", true}}); });
  EXPECT_NE(e.find("op Op: attribute 'dim': expected int, got float"), std::string::npos) << e;
  e = error_of([&] { check_attrs("Op", s, Attrs{{"dim", int64_t{1}}, {"keepdim", int64_t{1}}}); });
  EXPECT_NE(e.find("expected bool, got int"), std::string::npos) << e;
  e = error_of([&] { check_attrs("Op", s, Attrs{{"dim", int64_t{1}}, {"keepdim", true}, {"dtype", std::string("f")}}); });
  EXPECT_NE(e.find("attribute 'dtype': expected dtype, got str"), std::string::npos) << e;
  EXPECT_THROW(check_attrs("Op", s, Attrs{{"dim", IntList{1}}, {"keepdim", true}}), TypeError);
  EXPECT_THROW(check_attrs("Op", {}, Attrs{{"dim", int64_t{1}}}), ValueError);
}

TEST(AttrSchema, RegisteredOpsDeclareSchemas) {
  EXPECT_EQ(op_attr_schema(OpId::Add), "");
  EXPECT_EQ(op_attr_schema(OpId::Sum), "dims:ints, keepdim:bool, dtype:dtype?");
  EXPECT_NO_THROW(check_attrs(OpId::Sum, Attrs{{"dims", IntList{0}}, {"keepdim", false}}));
  EXPECT_THROW(check_attrs(OpId::Sum, Attrs{{"dims", int64_t{0}}, {"keepdim", false}}), TypeError);
  EXPECT_THROW(check_attrs(OpId::Add, Attrs{{"alpha", 2.0}}), ValueError);
  for (int i = 0; i < kNumOps; ++i) {
    OpId id = static_cast<OpId>(i);
    if (!op_registered(id)) continue;
    ASSERT_NE(op_def(id).attr_schema, nullptr) << op_name(id);
    // The canonical text re-parses to the same specs.
    EXPECT_EQ(parse_attr_schema(op_name(id), op_attr_schema(id)), op_def(id).attr_specs) << op_name(id);
  }
}

TEST(AttrSchema, RegistryHash) {
  std::vector<std::pair<std::string, std::string>> ops = {{"Add", ""}, {"Sum", "dims:ints, keepdim:bool"}};
  uint64_t h = attr_schema_hash(ops);
  EXPECT_EQ(h, attr_schema_hash({{"Sum", "dims:ints, keepdim:bool"}, {"Add", ""}}));  // name order, not list order
  EXPECT_NE(h, attr_schema_hash({{"Add", ""}, {"Sum", "dims:ints, keepdim:bool?"}}));
  EXPECT_NE(h, attr_schema_hash({{"Add", ""}, {"Sum", "dims:ints"}}));
  EXPECT_NE(h, attr_schema_hash({{"Add", ""}, {"Mean", "dims:ints, keepdim:bool"}}));
  EXPECT_NE(h, attr_schema_hash({{"Add", ""}}));
  EXPECT_NE(attr_schema_hash({{"ab", "c"}}), attr_schema_hash({{"a", "bc"}}));
  // Pinned: the same bytes hash the same in every process and build (FNV-1a, 64 bit).
  EXPECT_EQ(attr_schema_hash({}), 1469598103934665603ULL);
  EXPECT_EQ(attr_schema_hash({{"a", ""}}), ((1469598103934665603ULL ^ 'a') * 1099511628211ULL) * 1099511628211ULL *
                                               1099511628211ULL);

  EXPECT_EQ(op_registry_hash(), op_registry_hash());
  std::vector<std::pair<std::string, std::string>> all;
  for (int i = 0; i < kNumOps; ++i)
    if (op_registered(static_cast<OpId>(i))) all.emplace_back(op_name(static_cast<OpId>(i)), op_attr_schema(static_cast<OpId>(i)));
  EXPECT_EQ(op_registry_hash(), attr_schema_hash(all));
  for (auto& [name, schema] : all)
    if (name == "Softmax") schema += "?";
  EXPECT_NE(op_registry_hash(), attr_schema_hash(all));
}

TEST(AttrSchema, VerifierRejectsBadAttributes) {
  auto graph = [](const std::string& attrs) {
    return "graph(%0: float32[2,3] input) {\n  %1 = Sum(%0) " + attrs + " : float32[2]\n  return (%1)\n}\n";
  };
  EXPECT_NO_THROW(ir::parse(graph("{dims=[1], keepdim=false}")));
  std::string e = error_of([&] { ir::parse(graph("{dims=1, keepdim=false}")); });
  EXPECT_NE(e.find("op Sum: attribute 'dims': expected ints, got int"), std::string::npos) << e;
  e = error_of([&] { ir::parse(graph("{dims=[1], keepdim=false, axis=2}")); });
  EXPECT_NE(e.find("unknown attribute 'axis'"), std::string::npos) << e;
  e = error_of([&] { ir::parse(graph("{dims=[1]}")); });
  EXPECT_NE(e.find("missing required attribute 'keepdim'"), std::string::npos) << e;
  // Inside a fused body too.
  std::string fused =
      "graph(%0: float32[4] input) {\n"
      "  %1 = FusedElementwise(%0) : float32[4] {\n"
      "    graph(%0: float32[4] input) {\n"
      "      %1 = Relu(%0) {slope=0.5} : float32[4]\n"
      "      return (%1)\n"
      "    }\n"
      "  }\n"
      "  return (%1)\n"
      "}\n";
  e = error_of([&] { ir::parse(fused); });
  EXPECT_NE(e.find("op Relu: unknown attribute 'slope'"), std::string::npos) << e;
}
