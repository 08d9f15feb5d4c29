// Random ops: Uniform (rand, uniform_), Normal (randn, normal_; Box-Muller), RandInt, Bernoulli,
// RandPerm, Multinomial: their records and C++ API (kernels: backends/<device>/kernels/random.*).
// Each is a non-differentiable op with Lowering::Random whose attributes carry the generator's
// seed and the draw offset reserved for it (see core/generator.h) and the number of draws it
// takes (random_draws). Element i only depends on (seed, offset, i) through the device-neutral
// rules of ops/random_draws.h: results are deterministic, independent of the thread count and
// of the device, and a compiled step can re-run the op by changing the offset attribute.
#include "lucid/ops/creation.h"
#include "lucid/ops/random_draws.h"

namespace lucid {

static Generator& gen_or_default(Generator* g) { return g ? *g : *default_generator(); }

static OpDef random_op() {
  OpDef d;
  d.num_inputs = 0;
  d.differentiable = false;
  d.lowering = Lowering::Random;
  d.infer = [](const TensorList&, const Attrs& a) { return std::vector<TensorMeta>{{a.ints("shape"), a.dtype("dtype")}}; };
  return d;
}

static Attrs random_attrs(const Shape& shape, DType dtype, Generator& g, uint64_t draws) {
  return {{"shape", shape}, {"dtype", dtype}, {"seed", static_cast<int64_t>(g.initial_seed())},
          {"offset", static_cast<int64_t>(g.reserve(draws))}};
}

static void check_float(DType t, const char* op) {
  LUCID_CHECK(is_floating(t), TypeError, op, ": expected a floating point dtype, got ", dtype_name(t));
}

// ---- Uniform ---------------------------------------------------------------------------------
LUCID_REGISTER_OP(Uniform, "shape:ints, dtype:dtype, seed:int, offset:int, low:float, high:float", [] {
  OpDef d = random_op();
  d.infer = [](const TensorList&, const Attrs& a) {
    check_float(a.dtype("dtype"), "uniform");
    LUCID_CHECK(a.f("low") <= a.f("high"), ValueError, "uniform_: expects 'from' <= 'to', got from=", a.f("low"),
                " and to=", a.f("high"));
    return std::vector<TensorMeta>{{a.ints("shape"), a.dtype("dtype")}};
  };
  return d;
}());

static uint64_t uniform_count(int64_t n, DType t) { return static_cast<uint64_t>(n) * (t == DType::Float64 ? 2 : 1); }

Tensor rand(const Shape& shape, DType dtype, Generator* gen) {
  Attrs a = random_attrs(shape, dtype, gen_or_default(gen), uniform_count(numel_of(shape), dtype));
  a.set("low", 0.0).set("high", 1.0);
  return dispatch1(OpId::Uniform, {}, a);
}

const Tensor& uniform_(const Tensor& x, double low, double high, Generator* gen) {
  Attrs a = random_attrs(x.shape(), x.dtype(), gen_or_default(gen), uniform_count(x.numel(), x.dtype()));
  a.set("low", low).set("high", high);
  return dispatch_inplace(OpId::Uniform, x, {}, a);
}

// ---- Normal (Box-Muller on pairs of uniforms) ----------------------------------------------------
LUCID_REGISTER_OP(Normal, "shape:ints, dtype:dtype, mean:float, std:float, seed:int, offset:int", [] {
  OpDef d = random_op();
  d.infer = [](const TensorList&, const Attrs& a) {
    check_float(a.dtype("dtype"), "normal");
    LUCID_CHECK(a.f("std") >= 0, ValueError, "normal_: expects std >= 0.0, got std=", a.f("std"));
    return std::vector<TensorMeta>{{a.ints("shape"), a.dtype("dtype")}};
  };
  return d;
}());

static uint64_t normal_count(int64_t n, DType t) { return static_cast<uint64_t>((n + 1) / 2) * (t == DType::Float64 ? 4 : 2); }

Tensor randn(const Shape& shape, DType dtype, Generator* gen) {
  Attrs a = random_attrs(shape, dtype, gen_or_default(gen), normal_count(numel_of(shape), dtype));
  a.set("mean", 0.0).set("std", 1.0);
  return dispatch1(OpId::Normal, {}, a);
}

const Tensor& normal_(const Tensor& x, double mean, double std, Generator* gen) {
  Attrs a = random_attrs(x.shape(), x.dtype(), gen_or_default(gen), normal_count(x.numel(), x.dtype()));
  a.set("mean", mean).set("std", std);
  return dispatch_inplace(OpId::Normal, x, {}, a);
}

// ---- RandInt ---------------------------------------------------------------------------------
LUCID_REGISTER_OP(RandInt, "shape:ints, dtype:dtype, seed:int, offset:int, low:int, high:int", [] {
  OpDef d = random_op();
  d.infer = [](const TensorList&, const Attrs& a) {
    LUCID_CHECK(a.i("low") < a.i("high"), ValueError, "randint: expects 'low' < 'high', got low=", a.i("low"),
                " and high=", a.i("high"));
    return std::vector<TensorMeta>{{a.ints("shape"), a.dtype("dtype")}};
  };
  return d;
}());

Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Generator* gen) {
  LUCID_CHECK(low < high, ValueError, "randint: expects 'low' < 'high', got low=", low, " and high=", high);
  uint64_t draws = static_cast<uint64_t>(numel_of(shape)) * randint_draws(low, high);
  Attrs a = random_attrs(shape, dtype, gen_or_default(gen), draws);
  a.set("low", low).set("high", high);
  return dispatch1(OpId::RandInt, {}, a);
}

// ---- Bernoulli -------------------------------------------------------------------------------
// With no input: probability attribute p. With one input: per-element probabilities (output
// has the input's shape; dtype from the attribute).
LUCID_REGISTER_OP(Bernoulli, "shape:ints, dtype:dtype, p:float?, seed:int, offset:int", [] {
  OpDef d = random_op();
  d.num_inputs = -1;
  d.nondiff_inputs = {0};
  d.infer = [](const TensorList& in, const Attrs& a) {
    LUCID_CHECK(in.size() <= 1, ValueError, "bernoulli: expected at most one probability tensor");
    if (in.empty()) {
      double p = a.f("p");
      LUCID_CHECK(p >= 0 && p <= 1, ValueError, "bernoulli_: expects 0 <= p <= 1, got p=", p);
    } else {
      LUCID_CHECK(is_floating(in[0].dtype()), TypeError, "bernoulli: expected a floating point probability tensor, got ",
                  dtype_name(in[0].dtype()));
      LUCID_CHECK(broadcast_shapes(in[0].shape(), a.ints("shape"), "bernoulli") == a.ints("shape"), ValueError,
                  "bernoulli: probabilities of shape ", shape_str(in[0].shape()), " do not broadcast to the output shape ",
                  shape_str(a.ints("shape")));
    }
    return std::vector<TensorMeta>{{a.ints("shape"), a.dtype("dtype")}};
  };
  return d;
}());

Tensor bernoulli(const Shape& shape, double p, DType dtype, Generator* gen) {
  Attrs a = random_attrs(shape, dtype, gen_or_default(gen), static_cast<uint64_t>(numel_of(shape)));
  a.set("p", p);
  return dispatch1(OpId::Bernoulli, {}, a);
}

Tensor bernoulli(const Tensor& probs, Generator* gen) {
  Attrs a = random_attrs(probs.shape(), probs.dtype(), gen_or_default(gen), static_cast<uint64_t>(probs.numel()));
  Tensor pr = probs.detach();
  return dispatch1(OpId::Bernoulli, {pr}, a);
}

const Tensor& bernoulli_(const Tensor& x, double p, Generator* gen) {
  Attrs a = random_attrs(x.shape(), x.dtype(), gen_or_default(gen), static_cast<uint64_t>(x.numel()));
  a.set("p", p);
  return dispatch_inplace(OpId::Bernoulli, x, {}, a);
}

const Tensor& bernoulli_(const Tensor& x, const Tensor& p, Generator* gen) {
  Attrs a = random_attrs(x.shape(), x.dtype(), gen_or_default(gen), static_cast<uint64_t>(x.numel()));
  Tensor pr = p.detach();
  return dispatch_inplace(OpId::Bernoulli, x, {pr}, a);
}

// ---- RandPerm --------------------------------------------------------------------------------
// Sorting indices by 64-bit Philox keys gives a uniform permutation (ties, probability ~n^2/2^65,
// fall back to index order), deterministic and independent of the thread count.
LUCID_REGISTER_OP(RandPerm, "n:int, dtype:dtype, seed:int, offset:int", [] {
  OpDef d = random_op();
  d.infer = [](const TensorList&, const Attrs& a) {
    int64_t n = a.i("n");
    LUCID_CHECK(n >= 0, ValueError, "randperm: argument 'n' must be non-negative, got ", n);
    LUCID_CHECK(a.dtype("dtype") != DType::Bool, TypeError, "randperm: dtype bool is not supported");
    return std::vector<TensorMeta>{{{n}, a.dtype("dtype")}};
  };
  return d;
}());

Tensor randperm(int64_t n, DType dtype, Generator* gen) {
  LUCID_CHECK(n >= 0, ValueError, "randperm: argument 'n' must be non-negative, got ", n);
  Attrs a{{"n", n}, {"dtype", dtype}, {"seed", static_cast<int64_t>(gen_or_default(gen).initial_seed())},
          {"offset", static_cast<int64_t>(gen_or_default(gen).reserve(2 * static_cast<uint64_t>(n)))}};
  return dispatch1(OpId::RandPerm, {}, a);
}

// ---- Multinomial ------------------------------------------------------------------------------
// Rows of non-negative weights (1-D: one row). With replacement, sample s of a row inverts the
// row's cumulative sum at a 53-bit uniform; without, the row's categories are ranked by
// w_c / E_c with E_c ~ Exp(1) (the exponential race, as PyTorch) and the first num_samples are
// taken. Each uniform takes two draws: rows * (num_samples or categories) * 2 in all.
static uint64_t multinomial_draws(const Attrs& a) {
  int64_t per_row = a.b("replacement") ? a.i("num_samples") : a.i("categories");
  return 2 * static_cast<uint64_t>(a.i("rows")) * static_cast<uint64_t>(per_row);
}

static void check_multinomial(const Tensor& p, int64_t num_samples, bool replacement) {
  LUCID_CHECK(p.ndim() == 1 || p.ndim() == 2, Error, "multinomial: argument 'input' (prob_dist) must be 1 or 2 dim, got ",
              p.ndim(), " dims (shape ", shape_str(p.shape()), ")");
  LUCID_CHECK(is_floating(p.dtype()), Error, "multinomial: argument 'input' must have a floating point dtype, got ",
              dtype_name(p.dtype()));
  LUCID_CHECK(num_samples > 0, Error, "multinomial: argument 'num_samples' must be positive (cannot sample n_sample <= 0 "
              "samples), got ", num_samples);
  int64_t cats = p.shape().back();
  LUCID_CHECK(replacement || num_samples <= cats, Error, "multinomial: argument 'num_samples' (", num_samples,
              ") cannot exceed the number of categories (", cats, ") when sampling without replacement");
  LUCID_CHECK(cats <= (int64_t{1} << 24), Error, "multinomial: the number of categories cannot exceed 2^24, got ", cats);
}

LUCID_REGISTER_OP(Multinomial, "num_samples:int, replacement:bool, rows:int, categories:int, seed:int, offset:int", [] {
  OpDef d = random_op();
  d.num_inputs = 1;
  d.nondiff_inputs = {0};
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& p = in[0];
    int64_t ns = a.i("num_samples");
    check_multinomial(p, ns, a.b("replacement"));
    int64_t rows = p.ndim() == 2 ? p.shape()[0] : 1;
    LUCID_CHECK(a.i("rows") == rows && a.i("categories") == p.shape().back(), ValueError,
                "multinomial: the rows/categories attributes do not match the input of shape ", shape_str(p.shape()));
    Shape s = p.ndim() == 2 ? Shape{rows, ns} : Shape{ns};
    return std::vector<TensorMeta>{{s, DType::Int64}};
  };
  return d;
}());

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  check_multinomial(probs, num_samples, replacement);
  Attrs a{{"num_samples", num_samples}, {"replacement", replacement},
          {"rows", probs.ndim() == 2 ? probs.shape()[0] : int64_t{1}}, {"categories", probs.shape().back()}};
  Generator& g = gen_or_default(gen);
  a.set("seed", static_cast<int64_t>(g.initial_seed())).set("offset", static_cast<int64_t>(g.reserve(multinomial_draws(a))));
  return dispatch1(OpId::Multinomial, {probs.detach()}, a);
}

uint64_t random_draws(OpId id, const Attrs& a) {
  switch (id) {
    case OpId::Uniform: return uniform_count(numel_of(a.ints("shape")), a.dtype("dtype"));
    case OpId::Normal: return normal_count(numel_of(a.ints("shape")), a.dtype("dtype"));
    case OpId::RandInt: return static_cast<uint64_t>(numel_of(a.ints("shape"))) * randint_draws(a.i("low"), a.i("high"));
    case OpId::Bernoulli: return static_cast<uint64_t>(numel_of(a.ints("shape")));
    case OpId::RandPerm: return 2 * static_cast<uint64_t>(a.i("n"));
    case OpId::Multinomial: return multinomial_draws(a);
    default: throw Error(str("random_draws: ", op_name(id), " is not a random op"));
  }
}

}  // namespace lucid
