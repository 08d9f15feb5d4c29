// IR text printer and parser. The parser accepts exactly what the printer writes (plus free
// whitespace), so pass tests can be written as IR text in -> pass -> IR text out.
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "lucid/compile/ir/graph.h"

namespace lucid::ir {

static std::string type_str(const Value& v) {
  std::ostringstream os;
  os << dtype_name(v.dtype) << "[";
  for (size_t i = 0; i < v.shape.size(); ++i) os << (i ? "," : "") << v.shape[i];
  os << "]";
  if (!v.device.is_cpu()) os << "@" << v.device.str();  // CPU text stays as it was (graph.h)
  return os.str();
}

// One graph at indentation `ind`; a FusedElementwise node's body follows its result types as a
// nested block, indented two more levels.
static void print_graph(std::ostream& os, const Graph& g, const std::string& ind) {
  std::vector<int> c = canonical_ids(g);
  os << ind << "graph(";
  bool first = true;
  auto header = [&](int id, const char* kind) {
    os << (first ? "" : ", ") << "%" << c[id] << ": " << type_str(g.value(id)) << " " << kind;
    first = false;
  };
  for (int id : g.inputs()) header(id, "input");
  for (int id : g.states()) header(id, "state");
  for (int id : g.consts()) {
    // A Python scalar (wrapped number) promotes like a scalar, a 0-d tensor like a tensor: the
    // text keeps them apart ("scalar=1.5" vs "const=1.5").
    const Tensor& c = g.const_data(g.value(id).slot);
    header(id, c.impl()->is_wrapped_number ? "scalar" : "const");
    if (c.numel() == 1) {
      double v = 0;
      LUCID_DISPATCH_ALL(c.dtype(), "print", [&] { v = static_cast<double>(static_cast<compute_t<scalar_t>>(*c.contiguous_data().data<scalar_t>())); });
      os << "=" << v;
    }
  }
  os << ") {\n";
  for (const Node& n : g.nodes()) {
    os << ind << "  ";
    for (size_t k = 0; k < n.outputs.size(); ++k) os << (k ? ", " : "") << "%" << c[n.outputs[k]];
    os << " = " << op_name(n.op) << "(";
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      os << (k ? ", " : "");
      if (n.inputs[k] < 0) os << "none";
      else os << "%" << c[n.inputs[k]];
    }
    os << ")";
    if (!n.attrs.items().empty()) os << " " << n.attrs.str();
    os << " : ";
    for (size_t k = 0; k < n.outputs.size(); ++k) os << (k ? ", " : "") << type_str(g.value(n.outputs[k]));
    if (n.body) {
      os << " {\n";
      print_graph(os, *n.body, ind + "    ");
      os << ind << "  }";
    }
    os << "\n";
  }
  for (const Assign& a : g.assigns()) os << ind << "  assign %" << c[a.state] << " <- %" << c[a.value] << "\n";
  if (g.rng_draws() > 0) os << ind << "  rng_draws " << g.rng_draws() << "\n";
  os << ind << "  return (";
  for (size_t k = 0; k < g.outputs().size(); ++k) os << (k ? ", " : "") << "%" << c[g.outputs()[k]];
  os << ")\n" << ind << "}\n";
}

std::string print(const Graph& g) {
  std::ostringstream os;
  os.precision(17);
  print_graph(os, g, "");
  return os.str();
}

namespace {

struct Parser {
  const std::string& s;
  const std::vector<Tensor>* consts = nullptr;  // payloads of the constants, in order (or null)
  size_t i = 0;
  size_t next_const = 0;
  int depth = 0;
  std::vector<int> remap;  // text id -> graph id

  [[noreturn]] void fail(const std::string& what) {
    size_t line = 1;
    for (size_t k = 0; k < i && k < s.size(); ++k) line += s[k] == '\n';
    std::string near;  // printable ASCII as is, other bytes escaped (the text may be damaged)
    for (char c : s.substr(std::min(i, s.size()), 20)) {
      unsigned char u = static_cast<unsigned char>(c);
      if (u >= 0x20 && u < 0x7f) near += c;
      else near += str("\\x", "0123456789abcdef"[u >> 4], "0123456789abcdef"[u & 15]);
    }
    throw ValueError(str("ir.parse: line ", line, ": expected ", what, " near '", near, "'"));
  }
  void ws() { while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i; }
  bool peek(const char* t) { ws(); return s.compare(i, std::strlen(t), t) == 0; }
  void expect(const char* t) { if (!peek(t)) fail(str("'", t, "'")); i += std::strlen(t); }
  bool accept(const char* t) { if (!peek(t)) return false; i += std::strlen(t); return true; }
  std::string ident() {
    ws();
    size_t b = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
    if (b == i) fail("a name");
    return s.substr(b, i - b);
  }
  int64_t integer() {
    ws();
    char* end = nullptr;
    long long v = std::strtoll(s.c_str() + i, &end, 10);
    if (end == s.c_str() + i) fail("an integer");
    i = end - s.c_str();
    return v;
  }
  int value_ref() {
    expect("%");
    int64_t t = integer();
    if (t < 0 || t >= static_cast<int64_t>(remap.size()) || remap[t] < 0) fail(str("a defined value, not %", t));
    return remap[t];
  }
  int new_value_ref() {
    expect("%");
    int64_t t = integer();
    // Ids are dense, so each takes some text: a larger one is malformed (and would size `remap`).
    if (t < 0 || t > static_cast<int64_t>(s.size())) fail("a value id");
    return static_cast<int>(t);
  }
  void bind(int text_id, int graph_id) {
    if (static_cast<int>(remap.size()) <= text_id) remap.resize(text_id + 1, -1);
    if (remap[text_id] >= 0) fail(str("%", text_id, " to be defined only once"));
    remap[text_id] = graph_id;
  }
  TensorMeta type() {
    TensorMeta m;
    m.dtype = dtype_from_name(ident());
    expect("[");
    if (!accept("]")) {
      do {
        int64_t d = integer();
        if (d < 0) fail("a non-negative size");
        m.shape.push_back(d);
      } while (accept(","));
      expect("]");
    }
    if (accept("@")) {  // "@cuda:0": a value off the CPU
      ws();
      size_t b = i;  // the device string as written, for parse_device to judge
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == ':' || s[i] == '-')) ++i;
      std::string dev = s.substr(b, i - b);
      try {
        m.device = parse_device(dev);
      } catch (const Error&) {
        fail(str("a device ('cpu', 'cuda' or 'cuda:N'), not '", dev, "'"));
      }
    }
    if (m.shape.size() > 64) fail("at most 64 dimensions");
    try {
      numel_of(m.shape);
    } catch (const Error&) {
      fail("a shape whose size fits int64");
    }
    return m;
  }
  AttrValue attr_value() {
    ws();
    if (accept("[")) {
      IntList l;
      if (!accept("]")) {
        do l.push_back(integer()); while (accept(","));
        expect("]");
      }
      return l;
    }
    if (accept("\"")) {
      size_t b = i;
      while (i < s.size() && s[i] != '"') ++i;
      std::string v = s.substr(b, i - b);
      expect("\"");
      return v;
    }
    if (std::isalpha(static_cast<unsigned char>(s[i]))) {
      std::string w = ident();
      if (w == "true") return true;
      if (w == "false") return false;
      if (w == "inf") return std::numeric_limits<double>::infinity();
      if (w == "nan") return std::nan("");
      return dtype_from_name(w);
    }
    size_t b = i;
    if (s[i] == '-' || s[i] == '+') ++i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == '-' || s[i] == '+')) ++i;
    std::string tok = s.substr(b, i - b);
    if (tok == "-inf") return -std::numeric_limits<double>::infinity();
    bool is_float = tok.find_first_of(".eEn") != std::string::npos;
    if (is_float) return std::strtod(tok.c_str(), nullptr);
    return static_cast<int64_t>(std::strtoll(tok.c_str(), nullptr, 10));
  }
  Attrs attrs() {
    Attrs a;
    if (!accept("{")) return a;
    if (accept("}")) return a;
    do {
      std::string k = ident();
      expect("=");
      a.set(k, attr_value());
    } while (accept(","));
    expect("}");
    return a;
  }

  // "graph(...) { ... }": value ids are local to the graph, so a nested body numbers its own.
  Graph graph() {
    std::vector<int> outer = std::move(remap);
    remap.clear();
    Graph g;
    expect("graph");
    expect("(");
    if (!accept(")")) {
      do {
        int tid = new_value_ref();
        expect(":");
        TensorMeta m = type();
        std::string kind = ident();
        int id;
        if (kind == "input") {
          id = g.add_input(m);
        } else if (kind == "state") {
          id = g.add_state(m);
        } else if (kind == "const" || kind == "scalar") {
          LUCID_CHECK(kind == "const" || m.shape.empty(), ValueError, "parse: a Python-scalar constant ('scalar') is 0-d");
          // A constant's payload is a tensor, which only the CPU backend can hold in this build.
          if (!m.device.is_cpu()) fail(str("a CPU constant (this build of lucid has no CUDA backend), not one on ", m.device.str()));
          Tensor c;
          double v = 0;
          bool has_value = false;
          if (accept("=")) {
            std::variant<int64_t, double, bool, IntList, DType, std::string> av = attr_value();
            if (std::holds_alternative<double>(av)) v = std::get<double>(av);
            else if (std::holds_alternative<int64_t>(av)) v = static_cast<double>(std::get<int64_t>(av));
            else fail("a number");
            has_value = true;
          }
          if (consts) {  // the payload comes with the text (an artifact): exact, and no allocation here
            if (next_const >= consts->size()) fail(str("at most ", consts->size(), " constants"));
            const Tensor& given = (*consts)[next_const++];
            if (given.shape() != m.shape || given.dtype() != m.dtype)
              fail(str("a constant matching its payload (", dtype_name(given.dtype()), shape_str(given.shape()), ")"));
            c = given;
          } else {
            c = Tensor::empty(m.shape, m.dtype);
            LUCID_DISPATCH_ALL(m.dtype, "parse", [&] {
              scalar_t sv = static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(has_value ? v : 0.0));
              for (int64_t k = 0; k < c.numel(); ++k) c.data<scalar_t>()[k] = sv;
            });
          }
          c.impl()->is_wrapped_number = kind == "scalar";
          id = g.add_const(c);
        } else {
          fail("input, state, const or scalar");
        }
        bind(tid, id);
      } while (accept(","));
      expect(")");
    }
    expect("{");
    while (true) {
      if (accept("return")) {
        expect("(");
        std::vector<int> outs;
        if (!accept(")")) {
          do outs.push_back(value_ref()); while (accept(","));
          expect(")");
        }
        g.set_outputs(outs);
        expect("}");
        break;
      }
      if (accept("rng_draws")) {
        ws();
        size_t e = i;
        while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
        if (e == i || e - i > 18) fail("a number of draws");
        g.set_rng_draws(std::stoll(s.substr(i, e - i)));
        i = e;
        continue;
      }
      if (accept("assign")) {
        int st = value_ref();
        expect("<-");
        g.add_assign(st, value_ref());
        continue;
      }
      std::vector<int> outs_text;
      do outs_text.push_back(new_value_ref()); while (accept(","));
      expect("=");
      OpId op = op_from_name(ident());
      expect("(");
      std::vector<int> ins;
      if (!accept(")")) {
        do {
          if (accept("none")) ins.push_back(-1);
          else ins.push_back(value_ref());
        } while (accept(","));
        expect(")");
      }
      Attrs a = attrs();
      expect(":");
      std::vector<TensorMeta> metas;
      do metas.push_back(type()); while (accept(","));
      if (metas.size() != outs_text.size()) fail(str(outs_text.size(), " result types"));
      std::vector<int> outs;
      if (accept("{")) {
        if (op != OpId::FusedElementwise || !a.items().empty()) fail("a body only on FusedElementwise, without attributes");
        if (depth >= 4) fail("bodies nested at most 4 deep");
        ++depth;
        auto body = std::make_shared<const Graph>(graph());
        --depth;
        expect("}");
        outs = g.add_fused(ins, std::move(body), metas);
      } else {
        outs = g.add_node(op, ins, a, metas);
      }
      for (size_t k = 0; k < outs.size(); ++k) bind(outs_text[k], outs[k]);
    }
    remap = std::move(outer);
    return g;
  }

  Graph run() {
    Graph g = graph();
    ws();
    if (i != s.size()) fail("end of text");
    return g;
  }
};

}  // namespace

Graph parse(const std::string& text, const std::vector<Tensor>* consts) {
  Parser p{text, consts};
  Graph g = p.run();
  if (consts && p.next_const != consts->size())
    throw ValueError(str("ir.parse: ", consts->size(), " constant payloads given, the text declares ", p.next_const));
  verify(g);
  return g;
}

}  // namespace lucid::ir
