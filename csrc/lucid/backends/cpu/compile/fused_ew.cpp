// Block interpreter for FusedElementwise bodies (see fused_ew.h): building the program (compute
// dtypes, casts, register allocation) and running it over 1024-element blocks.
#include "lucid/backends/cpu/compile/fused_ew.h"

#include <algorithm>
#include <map>

#include "lucid/backends/cpu/elementwise_blocks.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/elementwise_util.h"

namespace lucid {

std::optional<DType> ew_block_dtype(OpId op, const TensorList& inputs, const Attrs& attrs, DType out) {
  const OpDef& def = op_def(op);
  if (def.lowering != Lowering::Elementwise || def.num_inputs != static_cast<int>(inputs.size())) return std::nullopt;
  for (const Tensor& t : inputs)
    if (!t.defined()) return std::nullopt;
  std::vector<TensorMeta> m;
  try {
    m = def.infer(inputs, attrs);  // also validates the attributes (celu's alpha != 0)
  } catch (const Error&) {
    return std::nullopt;
  }
  if (m.size() != 1 || m[0].dtype != out) return std::nullopt;
  // As run_elementwise: comparisons compute in the result type, logical ops in bool, every other
  // op in its output dtype (where's output is the result type of its values, not its condition;
  // an op with parameters computes in its infer's dtype, the output's: clamp's bounds promote).
  auto rule = static_cast<EwDType>(def.ew_rule);
  DType c = rule == EwDType::BoolInputs ? DType::Bool : rule == EwDType::Bool ? result_type(inputs) : out;
  if (def.float_scalar_input >= 0 && c == out && elementwise_compute_dtype(op, rule, inputs) == DType::Float32)
    c = DType::Float32;
  if (!(def.ew_dtypes & dtype_bit(c))) return std::nullopt;
  return c;
}

std::vector<Tensor> wrapped_inputs(const ir::Graph& g, const ir::Node& fused) {
  std::vector<Tensor> w;
  for (int in : fused.inputs) {
    const ir::Value& v = g.value(in);
    bool wrapped = v.kind == ir::ValueKind::Const && g.const_data(v.slot).impl()->is_wrapped_number;
    w.push_back(wrapped ? g.const_data(v.slot) : Tensor());
  }
  return w;
}

// ---- dtype conversion, with cpu::copy_into's rules ----------------------------------------------

template <class O, class I>
static O convert_one(I v) {
  if constexpr (std::is_same_v<O, I>) return v;
  else if constexpr (std::is_same_v<O, bool>) return static_cast<float>(v) != 0.f || static_cast<double>(v) != 0.0;
  else if constexpr (std::is_same_v<I, Half> || std::is_same_v<I, BFloat16>) return static_cast<O>(static_cast<float>(v));
  else return static_cast<O>(v);
}

// n elements from src (byte stride ss) into contiguous dst.
template <class O, class I>
static void convert_row(const char* src, int64_t ss, char* dst, int64_t n) {
  O* o = reinterpret_cast<O*>(dst);
  if (ss == static_cast<int64_t>(sizeof(I))) {
    const I* a = reinterpret_cast<const I*>(src);
    for (int64_t i = 0; i < n; ++i) o[i] = convert_one<O, I>(a[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = convert_one<O, I>(*reinterpret_cast<const I*>(src + i * ss));
  }
}

static FusedProgram::ConvertFn convert_fn(DType to, DType from) {
  FusedProgram::ConvertFn f = nullptr;
  LUCID_DISPATCH_ALL(to, "fused_elementwise", [&] {
    using O = scalar_t;
    LUCID_DISPATCH_ALL(from, "fused_elementwise", [&] { f = &convert_row<O, scalar_t>; });
  });
  return f;
}

// ---- building ----------------------------------------------------------------------------------

FusedProgram::FusedProgram(const ir::Graph& body, std::vector<Tensor> wrapped) {
  using SK = StepKind;
  const char* me = "fused_elementwise";
  LUCID_CHECK(body.states().empty() && body.consts().empty() && body.assigns().empty() && !body.outputs().empty(),
              Error, me, ": a body has inputs, nodes and at least one output, and nothing else");
  if (wrapped.empty()) wrapped.assign(body.inputs().size(), Tensor());
  LUCID_CHECK(wrapped.size() == body.inputs().size(), Error, me, ": ", wrapped.size(), " wrapped flags for ",
              body.inputs().size(), " inputs");
  shape = body.value(body.outputs()[0]).shape;
  std::vector<Tensor> proxy(body.values().size());
  for (size_t i = 0; i < body.inputs().size(); ++i) {
    const ir::Value& v = body.value(body.inputs()[i]);
    LUCID_CHECK(broadcast_shapes(v.shape, shape, me) == shape, Error, me, ": input ", i, " does not broadcast to ",
                "the iteration shape");
    inputs.push_back(v.meta());
    proxy[body.inputs()[i]] = ew_stand_in(v, wrapped[i]);
  }
  std::vector<int> output_of(body.values().size(), -1);
  for (size_t k = 0; k < body.outputs().size(); ++k) {
    int id = body.outputs()[k];
    LUCID_CHECK(body.value(id).kind == ir::ValueKind::Node && output_of[id] < 0, Error, me, ": output ", k,
                " is not a node result, or repeats one");
    output_of[id] = static_cast<int>(k);
    outputs.push_back(body.value(id).meta());
  }

  // Operands by (value, dtype); Loads and Casts made on first use.
  std::map<std::pair<int, DType>, int> have;
  std::vector<Step> loads, rest;
  auto new_operand = [&](DType dt, int output) {
    operands.push_back({dt, -1, output});
    return static_cast<int>(operands.size()) - 1;
  };
  auto operand = [&](int value, DType dt) {
    auto it = have.find({value, dt});
    if (it != have.end()) return it->second;
    const ir::Value& v = body.value(value);
    int o = new_operand(dt, -1);
    Step s{v.kind == ir::ValueKind::Input ? SK::Load : SK::Cast};
    s.dst = o;
    s.convert = convert_fn(dt, v.dtype);
    if (s.kind == SK::Load) {
      s.input = v.slot;
      loads.push_back(s);
    } else {
      s.src[0] = have.at({value, v.dtype});
      rest.push_back(s);
    }
    have[{value, dt}] = o;
    return o;
  };
  for (const ir::Node& n : body.nodes()) {
    const OpDef& def = op_def(n.op);
    LUCID_CHECK(n.outputs.size() == 1 && body.value(n.outputs[0]).shape == shape, Error, me, ": ", def.api_name,
                " must give one output of the iteration shape");
    if (n.op == OpId::Copy) {  // a dtype conversion (cast): copy_into's rules, as the eager kernel
      const ir::Value &iv = body.value(n.inputs.at(0)), &ov = body.value(n.outputs[0]);
      LUCID_CHECK(iv.shape == shape, Error, me, ": Copy must read a value of the iteration shape");
      Step s{SK::Cast};
      s.src[0] = operand(n.inputs[0], iv.dtype);
      s.dst = new_operand(ov.dtype, output_of[n.outputs[0]]);
      s.convert = convert_fn(ov.dtype, iv.dtype);
      have[{n.outputs[0], ov.dtype}] = s.dst;
      proxy[n.outputs[0]] = ew_stand_in(ov, false);
      rest.push_back(s);
      continue;
    }
    TensorList ins;
    for (int in : n.inputs) ins.push_back(in >= 0 ? proxy[in] : Tensor());
    int out = n.outputs[0];
    std::optional<DType> c = ew_block_dtype(n.op, ins, n.attrs, body.value(out).dtype);
    LUCID_CHECK(c.has_value(), Error, me, ": ", def.api_name, " can't run on the block interpreter for these dtypes");
    Step s{SK::Op};
    s.arity = static_cast<int>(n.inputs.size());
    for (int k = 0; k < s.arity; ++k) s.src[k] = operand(n.inputs[k], *c);
    if (cpu::has_ew_param_block(n.op)) s.param = cpu::ew_param_block(n.op, *c, n.attrs);
    else s.fn = cpu::ew_block(n.op, *c);
    LUCID_CHECK(s.fn || s.param.fn, Error, me, ": ", def.api_name, " has no block for ", dtype_name(*c));
    const DType odt = body.value(out).dtype;
    auto rule = static_cast<EwDType>(def.ew_rule);
    const DType written = (rule == EwDType::Bool || rule == EwDType::BoolInputs) ? DType::Bool : *c;
    if (written == odt) {
      s.dst = new_operand(odt, output_of[out]);
    } else {  // computed in float32 for a 16-bit output: one rounding, at this cast
      s.dst = new_operand(written, -1);
      rest.push_back(s);
      s = Step{SK::Cast};
      s.src[0] = rest.back().dst;
      s.convert = convert_fn(odt, written);
      s.dst = new_operand(odt, output_of[out]);
    }
    have[{out, odt}] = s.dst;
    proxy[out] = ew_stand_in(body.value(out), false);
    rest.push_back(s);
  }
  steps = std::move(loads);
  steps.insert(steps.end(), rest.begin(), rest.end());

  // kParallelGrain is one elementwise op's break-even size; a group does the work of all its ops
  // per element, so it pays for a second thread at proportionally fewer elements.
  int64_t n_ops = 0;
  for (const Step& st : steps) n_ops += st.kind == SK::Op;
  grain_blocks = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, n_ops) / kBlock);

  input_last_read.assign(inputs.size(), -1);
  output_write.assign(outputs.size(), -1);
  {
    std::vector<int> read_at(operands.size(), -1);  // last step reading each operand
    for (size_t i = 0; i < steps.size(); ++i)
      for (int k = 0; k < 3; ++k)
        if (steps[i].src[k] >= 0) read_at[steps[i].src[k]] = static_cast<int>(i);
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step& st = steps[i];
      if (st.kind == SK::Load) {
        bool direct = inputs[st.input].dtype == operands[st.dst].dtype;  // else converted here
        int at = direct ? read_at[st.dst] : static_cast<int>(i);
        input_last_read[st.input] = std::max(input_last_read[st.input], at);
      } else if (st.kind != SK::Load && operands[st.dst].output >= 0) {
        output_write[operands[st.dst].output] = static_cast<int>(i);
      }
    }
  }

  // Registers by linear scan: a step's result gets one before its operands' are freed, so a
  // BlockFn never writes over an operand it reads.
  std::vector<int> last_use(operands.size(), -1);
  for (size_t i = 0; i < steps.size(); ++i)
    for (int k = 0; k < 3; ++k)
      if (steps[i].src[k] >= 0) last_use[steps[i].src[k]] = static_cast<int>(i);
  std::vector<int> free_regs;
  std::vector<bool> freed(operands.size(), false);
  // Once per operand: a step that reads one operand twice (x + x) must not free its register
  // twice, or two later operands would share it.
  auto release = [&](int o) {
    if (operands[o].reg >= 0 && !freed[o]) free_regs.push_back(operands[o].reg);
    freed[o] = true;
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    Operand& d = operands[steps[i].dst];
    if (d.output < 0) {
      if (free_regs.empty()) free_regs.push_back(num_regs++);
      d.reg = free_regs.back();
      free_regs.pop_back();
    }
    for (int k = 0; k < 3; ++k)
      if (steps[i].src[k] >= 0 && last_use[steps[i].src[k]] == static_cast<int>(i)) release(steps[i].src[k]);
    if (last_use[steps[i].dst] < 0) release(steps[i].dst);
  }
}

// ---- running -----------------------------------------------------------------------------------

namespace {

enum class InputKind : uint8_t { Scalar, Contiguous, Strided };

struct InputView {
  InputKind kind;
  char* base;
  int64_t isz;
  bool copy;                    // read through a register even when contiguous (shares an output's memory)
  std::vector<int64_t> stride;  // Strided: bytes per coalesced dim
};

// Byte ranges of two tensors' elements overlap. Compared by address, not by Storage: an
// executable's arena slots are separate Storage objects over one allocation, so an output that took
// over a dying input's buffer (memory plan, in-place reuse) shares no Storage with it.
bool overlaps(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  auto range = [](const Tensor& t, const char*& lo, const char*& hi) {
    int64_t mn = 0, mx = 0;
    for (int64_t d = 0; d < t.ndim(); ++d) {
      int64_t e = (t.shape()[d] - 1) * t.strides()[d];
      (e < 0 ? mn : mx) += e;
    }
    lo = static_cast<const char*>(t.data_ptr()) + mn * static_cast<int64_t>(itemsize(t.dtype()));
    hi = static_cast<const char*>(t.data_ptr()) + (mx + 1) * static_cast<int64_t>(itemsize(t.dtype()));
  };
  const char *alo, *ahi, *blo, *bhi;
  range(a, alo, ahi);
  range(b, blo, bhi);
  return alo < bhi && blo < ahi;
}

}  // namespace

void run_fused(const FusedProgram& p, const TensorList& inputs, const TensorList& outputs) {
  using SK = FusedProgram::StepKind;
  constexpr int64_t kBlock = FusedProgram::kBlock;
  const char* me = "fused_elementwise";
  LUCID_CHECK(inputs.size() == p.inputs.size() && outputs.size() == p.outputs.size(), ValueError, me, ": expected ",
              p.inputs.size(), " inputs and ", p.outputs.size(), " outputs, got ", inputs.size(), " and ",
              outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    LUCID_CHECK(inputs[i].defined() && inputs[i].shape() == p.inputs[i].shape && inputs[i].dtype() == p.inputs[i].dtype,
                ValueError, me, ": input ", i, " expected ", dtype_name(p.inputs[i].dtype), " of shape ",
                shape_str(p.inputs[i].shape));
  for (size_t k = 0; k < outputs.size(); ++k)
    LUCID_CHECK(outputs[k].defined() && outputs[k].shape() == p.outputs[k].shape &&
                    outputs[k].dtype() == p.outputs[k].dtype && outputs[k].is_contiguous(),
                ValueError, me, ": output ", k, " expected contiguous ", dtype_name(p.outputs[k].dtype), " of shape ",
                shape_str(p.outputs[k].shape));
  const int64_t numel = numel_of(p.shape);
  if (numel == 0) return;

  // Iteration dims without size-1 dims; input strides in elements against them (0 = broadcast).
  const int nd0 = static_cast<int>(p.shape.size());
  Shape dims;
  std::vector<std::vector<int64_t>> st(inputs.size());
  for (int d = 0; d < nd0; ++d) {
    if (p.shape[d] == 1) continue;
    dims.push_back(p.shape[d]);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      int td = d - (nd0 - static_cast<int>(t.ndim()));
      st[i].push_back(td < 0 || t.shape()[td] == 1 ? 0 : t.strides()[td]);
    }
  }
  std::vector<InputView> in(inputs.size());
  std::vector<int> strided;
  for (size_t i = 0; i < inputs.size(); ++i) {
    InputView& v = in[i];
    v.base = static_cast<char*>(inputs[i].data_ptr());
    v.isz = static_cast<int64_t>(itemsize(inputs[i].dtype()));
    bool scalar = true, contiguous = true;
    int64_t expect = 1;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      scalar = scalar && st[i][d] == 0;
      contiguous = contiguous && st[i][d] == expect;
      expect *= dims[d];
    }
    v.kind = scalar ? InputKind::Scalar : contiguous ? InputKind::Contiguous : InputKind::Strided;
    v.copy = false;
    for (size_t k = 0; k < outputs.size(); ++k) {
      const Tensor& o = outputs[k];
      if (!overlaps(inputs[i], o)) continue;
      // A scalar input is read before any write; a contiguous one in place is read element by
      // element before that element is written (each step reads index j before writing it), so it
      // needs a register copy only when a step writes the output before the input's last read.
      LUCID_CHECK(v.kind == InputKind::Scalar || (v.kind == InputKind::Contiguous && inputs[i].data_ptr() == o.data_ptr() &&
                                                  itemsize(o.dtype()) == static_cast<size_t>(v.isz)),
                  ValueError, me, ": output overlaps input ", i, " other than exactly in place");
      if (p.output_write[k] < p.input_last_read[i]) v.copy = true;
    }
    if (v.kind == InputKind::Strided) strided.push_back(static_cast<int>(i));
  }
  // Coalesce dims that are contiguous for every strided input; strides to bytes.
  Shape cdims;
  std::vector<std::vector<int64_t>> cst(inputs.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    bool merge = !cdims.empty();
    for (int i : strided) merge = merge && cst[i].back() == st[i][d] * dims[d];
    if (merge) {
      cdims.back() *= dims[d];
      for (int i : strided) cst[i].back() = st[i][d];
    } else {
      cdims.push_back(dims[d]);
      for (int i : strided) cst[i].push_back(st[i][d]);
    }
  }
  for (int i : strided) {
    for (int64_t& s : cst[i]) s *= in[i].isz;
    in[i].stride = std::move(cst[i]);
  }
  const int nd = static_cast<int>(cdims.size());

  // Scalar inputs are converted once per call; loads point at the result with stride 0.
  std::vector<uint64_t> scalar_value(p.operands.size(), 0);
  for (const auto& s : p.steps)
    if (s.kind == SK::Load && in[s.input].kind == InputKind::Scalar)
      s.convert(in[s.input].base, 0, reinterpret_cast<char*>(&scalar_value[s.dst]), 1);

  const int64_t nblocks = (numel + kBlock - 1) / kBlock;
  parallel_for(0, nblocks, p.grain_blocks, [&](int64_t b0, int64_t b1) {
    thread_local std::vector<double> scratch;  // 8 bytes: the widest dtype
    if (scratch.size() < static_cast<size_t>(p.num_regs * kBlock)) scratch.resize(p.num_regs * kBlock);
    std::vector<char*> ptr(p.operands.size());
    std::vector<int64_t> str(p.operands.size());
    std::vector<int64_t> start(nd), idx(nd);
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t b = blk * kBlock, n = std::min(kBlock, numel - b);
      if (!strided.empty()) {
        int64_t r = b;
        for (int d = nd - 1; d >= 0; --d) { start[d] = r % cdims[d]; r /= cdims[d]; }
      }
      for (const auto& s : p.steps) {
        const FusedProgram::Operand& od = p.operands[s.dst];
        const int64_t osz = static_cast<int64_t>(itemsize(od.dtype));
        char* reg = od.reg >= 0 ? reinterpret_cast<char*>(scratch.data() + od.reg * kBlock) : nullptr;
        switch (s.kind) {
          case SK::Load: {
            const InputView& v = in[s.input];
            if (v.kind == InputKind::Scalar) {
              ptr[s.dst] = reinterpret_cast<char*>(&scalar_value[s.dst]);
              str[s.dst] = 0;
              continue;
            }
            ptr[s.dst] = reg;
            str[s.dst] = osz;
            if (v.kind == InputKind::Contiguous) {
              char* src = v.base + b * v.isz;
              if (p.inputs[s.input].dtype == od.dtype && !v.copy) ptr[s.dst] = src;
              else s.convert(src, v.isz, reg, n);
              continue;
            }
            // Strided: row by row from the block's start index.
            std::copy(start.begin(), start.end(), idx.begin());
            int64_t off = 0;
            for (int d = 0; d < nd; ++d) off += idx[d] * v.stride[d];
            for (int64_t done = 0; done < n;) {
              int64_t m = std::min(cdims[nd - 1] - idx[nd - 1], n - done);
              s.convert(v.base + off, v.stride[nd - 1], reg + done * osz, m);
              done += m;
              idx[nd - 1] += m;
              off += m * v.stride[nd - 1];
              for (int d = nd - 1; d > 0 && idx[d] == cdims[d]; --d) {
                off += v.stride[d - 1] - idx[d] * v.stride[d];
                idx[d] = 0;
                ++idx[d - 1];
              }
            }
            continue;
          }
          case SK::Cast: {
            char* dst = od.output >= 0 ? static_cast<char*>(outputs[od.output].data_ptr()) + b * osz : reg;
            s.convert(ptr[s.src[0]], str[s.src[0]], dst, n);
            ptr[s.dst] = dst;
            str[s.dst] = osz;
            continue;
          }
          case SK::Op: {
            char* pp[4];
            int64_t ss[4];
            pp[0] = od.output >= 0 ? static_cast<char*>(outputs[od.output].data_ptr()) + b * osz : reg;
            ss[0] = osz;
            for (int k = 0; k < s.arity; ++k) {
              pp[k + 1] = ptr[s.src[k]];
              ss[k + 1] = str[s.src[k]];
            }
            if (s.fn) s.fn(pp, ss, n);
            else s.param(pp, ss, n);
            ptr[s.dst] = pp[0];
            str[s.dst] = osz;
            continue;
          }
        }
      }
    }
  });
}

}  // namespace lucid
