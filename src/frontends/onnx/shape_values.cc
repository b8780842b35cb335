// shape_values.cc — evaluates the small tensors of shape computations (see
// shape_values.h). One table names every operator evaluated (kOperators,
// below): what it reads, how many input values it needs, its evaluator and,
// for the element-wise families, its rule per element. Each evaluator checks
// what it reads and says why when it cannot evaluate.
#include "shape_values.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>

namespace memplan::onnx_values {
namespace {

using T = onnx::TensorProto;

bool is_int_type(int32_t type) {
  switch (type) {
    case T::INT64:
    case T::INT32:
    case T::INT16:
    case T::INT8:
    case T::UINT64:
    case T::UINT32:
    case T::UINT16:
    case T::UINT8:
    case T::BOOL:
      return true;
    default:
      return false;
  }
}

// The range a value of an integer type holds; UINT64 is kept to INT64's.
std::pair<int64_t, int64_t> int_range(int32_t type) {
  switch (type) {
    case T::INT32:
      return {INT32_MIN, INT32_MAX};
    case T::INT16:
      return {INT16_MIN, INT16_MAX};
    case T::INT8:
      return {INT8_MIN, INT8_MAX};
    case T::UINT32:
      return {0, UINT32_MAX};
    case T::UINT16:
      return {0, UINT16_MAX};
    case T::UINT8:
      return {0, UINT8_MAX};
    case T::BOOL:
      return {0, 1};
    case T::UINT64:
      return {0, INT64_MAX};
    default:
      return {INT64_MIN, INT64_MAX};
  }
}

// product(dims), or nullopt past kMaxKnownElements (or for a negative dim).
std::optional<int64_t> element_count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || d > kMaxKnownElements) return std::nullopt;  // also with a 0 elsewhere: sums of dims stay small
    if (d != 0 && n > kMaxKnownElements / d) return std::nullopt;
    n *= d;
  }
  return n;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

// An evaluation that did not happen, with its reason.
Evaluation refuse(std::string why) { return Evaluation{.outputs = {}, .why_not = std::move(why)}; }
// A refusal because input `i`'s value is not known.
Evaluation refuse_input(size_t i, const std::string& what = "") {
  Evaluation e = refuse("input " + std::to_string(i) + (what.empty() ? "" : " (" + what + ")") +
                        " is not known before the model runs");
  e.missing_input = static_cast<int>(i);
  return e;
}
Evaluation one(KnownTensor t) {
  Evaluation e;
  e.outputs.push_back(std::move(t));
  return e;
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t int_attribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const onnx::AttributeProto* a = attribute(node, name);
  return a != nullptr && a->type() == onnx::AttributeProto::INT ? a->i() : fallback;
}

std::optional<std::vector<int64_t>> ints_attribute(const onnx::NodeProto& node, const std::string& name) {
  const onnx::AttributeProto* a = attribute(node, name);
  if (a == nullptr || a->type() != onnx::AttributeProto::INTS) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

// The values of a known tensor as integers (reals truncated).
std::vector<int64_t> as_ints(const KnownTensor& t) {
  if (!t.is_real()) return t.ints;
  std::vector<int64_t> v;
  for (double r : t.reals) v.push_back(std::isfinite(r) && std::fabs(r) < 9.2e18 ? static_cast<int64_t>(r) : 0);
  return v;
}

double real_at(const KnownTensor& t, int64_t i) {
  return t.is_real() ? t.reals[static_cast<size_t>(i)] : static_cast<double>(t.ints[static_cast<size_t>(i)]);
}

// An empty tensor of `type` with `dims`, its value vector sized.
KnownTensor make(int32_t type, std::vector<int64_t> dims, int64_t n) {
  KnownTensor t{.type = type, .dims = std::move(dims)};
  if (t.is_real())
    t.reals.assign(static_cast<size_t>(n), 0.0);
  else
    t.ints.assign(static_cast<size_t>(n), 0);
  return t;
}

// Copies element `from` of `src` to element `to` of `dst` (same type class).
void copy_element(const KnownTensor& src, int64_t from, KnownTensor* dst, int64_t to) {
  if (dst->is_real())
    dst->reals[static_cast<size_t>(to)] = real_at(src, from);
  else
    dst->ints[static_cast<size_t>(to)] = src.ints[static_cast<size_t>(from)];
}

// Row-major strides of `dims`.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// Calls fn(index) for every multi-index of `dims` in row-major order.
void for_each_index(const std::vector<int64_t>& dims, const std::function<void(const std::vector<int64_t>&)>& fn) {
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  std::vector<int64_t> index(dims.size(), 0);
  while (true) {
    fn(index);
    size_t k = dims.size();
    while (k > 0) {
      --k;
      if (++index[k] < dims[k]) break;
      index[k] = 0;
      if (k == 0) return;
    }
    if (dims.empty()) return;
  }
}

// Multidirectional (numpy) broadcasting of several shapes.
std::optional<std::vector<int64_t>> broadcast(const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o != 1) return std::nullopt;
      o = s[i];
    }
  }
  return out;
}

// The flat offset into a tensor of `dims` of output index `index` under
// broadcasting (dims aligned to the right, size-1 dims repeat).
int64_t broadcast_offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  const size_t shift = index.size() - dims.size();
  for (size_t i = 0; i < dims.size(); ++i) offset = offset * dims[i] + (dims[i] == 1 ? 0 : index[shift + i]);
  return offset;
}

// Element-wise over broadcast inputs: fn(values at one index) -> one value.
// `type` is the output's; reals when it is real or when any input is.
template <typename Fn>
std::optional<KnownTensor> elementwise(const std::vector<const KnownTensor*>& in, int32_t type, Fn fn,
                                       std::string* why) {
  std::vector<std::vector<int64_t>> shapes;
  for (const KnownTensor* t : in) shapes.push_back(t->dims);
  std::optional<std::vector<int64_t>> dims = broadcast(shapes);
  if (!dims) {
    *why = "its inputs' shapes do not broadcast";
    return std::nullopt;
  }
  std::optional<int64_t> n = element_count(*dims);
  if (!n) {
    *why = "its output would have more than " + std::to_string(kMaxKnownElements) + " elements";
    return std::nullopt;
  }
  KnownTensor out = make(type, *dims, *n);
  int64_t flat = 0;
  bool ok = true;
  for_each_index(*dims, [&](const std::vector<int64_t>& index) {
    std::vector<int64_t> offsets;
    for (const KnownTensor* t : in) offsets.push_back(broadcast_offset(t->dims, index));
    if (!fn(offsets, &out, flat)) ok = false;
    ++flat;
  });
  if (!ok) {
    *why = "an element has no value (division by zero or an integer overflow)";
    return std::nullopt;
  }
  return out;
}

bool any_real(const std::vector<const KnownTensor*>& in) {
  for (const KnownTensor* t : in) {
    if (t->is_real()) return true;
  }
  return false;
}

// Values of integer type `type` outside its range have no value.
bool fits(int32_t type, int64_t v) {
  auto [lo, hi] = int_range(type);
  return v >= lo && v <= hi;
}

// Normalises axis `a` against rank `rank`; nullopt when out of range.
std::optional<int64_t> normalize_axis(int64_t a, int64_t rank) {
  if (a < -rank || a >= rank) return std::nullopt;
  return a < 0 ? a + rank : a;
}

// ---- Operators ------------------------------------------------------------

Evaluation evaluate_constant(const onnx::NodeProto& node) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == "value") {
      std::optional<KnownTensor> t = read_tensor(a.t());
      if (!t) return refuse("its value is not a small tensor of a numeric type");
      return one(*t);
    }
    if (a.name() == "value_int") return one(KnownTensor{.type = T::INT64, .dims = {}, .ints = {a.i()}});
    if (a.name() == "value_ints") {
      return one(KnownTensor{.type = T::INT64, .dims = {a.ints_size()}, .ints = {a.ints().begin(), a.ints().end()}});
    }
    if (a.name() == "value_float") return one(KnownTensor{.type = T::FLOAT, .dims = {}, .reals = {a.f()}});
    if (a.name() == "value_floats") {
      return one(
          KnownTensor{.type = T::FLOAT, .dims = {a.floats_size()}, .reals = {a.floats().begin(), a.floats().end()}});
    }
  }
  return refuse("it has no numeric value attribute");
}

Evaluation evaluate_shape(const onnx::NodeProto& node, const InputFacts& in, int64_t opset) {
  if (!in.shape) return refuse("its input's shape is not known");
  const int64_t rank = static_cast<int64_t>(in.shape->size());
  int64_t start = opset >= 15 ? int_attribute(node, "start", 0) : 0;
  int64_t end = opset >= 15 ? int_attribute(node, "end", rank) : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> dims(in.shape->begin() + start, in.shape->begin() + std::max(start, end));
  return one(KnownTensor{.type = T::INT64, .dims = {static_cast<int64_t>(dims.size())}, .ints = dims});
}

Evaluation evaluate_size(const InputFacts& in) {
  if (!in.shape) return refuse("its input's shape is not known");
  int64_t n = 1;
  for (int64_t d : *in.shape) {
    if (__builtin_mul_overflow(n, d, &n)) return refuse("its input's size overflows 64 bits");
  }
  return one(KnownTensor{.type = T::INT64, .dims = {}, .ints = {n}});
}

Evaluation evaluate_gather(const onnx::NodeProto& node, const KnownTensor& data, const KnownTensor& indices) {
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  std::optional<int64_t> axis = normalize_axis(int_attribute(node, "axis", 0), rank);
  if (!axis) return refuse("axis out of range for data of rank " + std::to_string(rank));
  std::vector<int64_t> dims(data.dims.begin(), data.dims.begin() + *axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + *axis + 1, data.dims.end());
  std::optional<int64_t> n = element_count(dims);
  if (!n) return refuse("its output is too large to evaluate");
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < *axis; ++i) outer *= data.dims[static_cast<size_t>(i)];
  for (int64_t i = *axis + 1; i < rank; ++i) inner *= data.dims[static_cast<size_t>(i)];
  const int64_t extent = data.dims[static_cast<size_t>(*axis)];
  const std::vector<int64_t> idx = as_ints(indices);
  KnownTensor out = make(data.type, dims, *n);
  int64_t at = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j : idx) {
      if (j < 0) j += extent;
      if (j < 0 || j >= extent) return refuse("index out of range [0, " + std::to_string(extent) + ")");
      for (int64_t k = 0; k < inner; ++k) copy_element(data, (o * extent + j) * inner + k, &out, at++);
    }
  }
  return one(std::move(out));
}

Evaluation evaluate_slice(const onnx::NodeProto& node, const std::vector<InputFacts>& in, int64_t opset) {
  const KnownTensor& data = *in[0].value;
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    starts = ints_attribute(node, "starts").value_or(std::vector<int64_t>{});
    ends = ints_attribute(node, "ends").value_or(std::vector<int64_t>{});
    axes = ints_attribute(node, "axes").value_or(std::vector<int64_t>{});
  } else {
    for (size_t i = 1; i < in.size() && i <= 4; ++i) {
      if (in[i].present && in[i].value == nullptr) return refuse_input(i);
    }
    if (in.size() < 3) return refuse("it has no starts and ends");
    starts = as_ints(*in[1].value);
    ends = as_ints(*in[2].value);
    if (in.size() > 3 && in[3].present) axes = as_ints(*in[3].value);
    if (in.size() > 4 && in[4].present) steps = as_ints(*in[4].value);
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    return refuse("starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> first(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1), dims = data.dims;
  for (size_t i = 0; i < starts.size(); ++i) {
    std::optional<int64_t> axis = normalize_axis(axes[i], rank);
    if (!axis) return refuse("axis " + std::to_string(axes[i]) + " out of range");
    const int64_t dim = data.dims[static_cast<size_t>(*axis)];
    int64_t s = starts[i], e = ends[i], k = steps[i];
    if (k == 0) return refuse("a step is 0");
    if (s < 0) s = s < INT64_MIN + dim ? 0 : s + dim;
    if (e < 0) e = e < INT64_MIN + dim ? -1 : e + dim;
    int64_t count = 0;
    if (k > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > s ? (e - s - 1) / k + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = s > e ? (s - e - 1) / (k == INT64_MIN ? INT64_MAX : -k) + 1 : 0;
    }
    first[static_cast<size_t>(*axis)] = s;
    step[static_cast<size_t>(*axis)] = k;
    dims[static_cast<size_t>(*axis)] = count;
  }
  std::optional<int64_t> n = element_count(dims);
  if (!n) return refuse("its output is too large to evaluate");
  KnownTensor out = make(data.type, dims, *n);
  const std::vector<int64_t> strides = strides_of(data.dims);
  int64_t at = 0;
  for_each_index(dims, [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += (first[d] + index[d] * step[d]) * strides[d];
    copy_element(data, offset, &out, at++);
  });
  return one(std::move(out));
}

Evaluation evaluate_concat(const onnx::NodeProto& node, const std::vector<const KnownTensor*>& in) {
  const int64_t rank = static_cast<int64_t>(in[0]->dims.size());
  std::optional<int64_t> axis = normalize_axis(int_attribute(node, "axis", 0), rank);
  if (!axis) return refuse("axis out of range for rank " + std::to_string(rank));
  std::vector<int64_t> dims = in[0]->dims;
  dims[static_cast<size_t>(*axis)] = 0;
  for (const KnownTensor* t : in) {
    if (t->dims.size() != static_cast<size_t>(rank)) return refuse("its inputs differ in rank");
    for (int64_t d = 0; d < rank; ++d) {
      if (d != *axis && t->dims[static_cast<size_t>(d)] != in[0]->dims[static_cast<size_t>(d)]) {
        return refuse("its inputs differ in a dimension other than the axis");
      }
    }
    dims[static_cast<size_t>(*axis)] += t->dims[static_cast<size_t>(*axis)];
  }
  std::optional<int64_t> n = element_count(dims);
  if (!n) return refuse("its output is too large to evaluate");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < *axis; ++d) outer *= dims[static_cast<size_t>(d)];
  for (int64_t d = *axis + 1; d < rank; ++d) inner *= dims[static_cast<size_t>(d)];
  KnownTensor out = make(in[0]->type, dims, *n);
  int64_t at = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const KnownTensor* t : in) {
      const int64_t chunk = t->dims[static_cast<size_t>(*axis)] * inner;
      for (int64_t k = 0; k < chunk; ++k) copy_element(*t, o * chunk + k, &out, at++);
    }
  }
  return one(std::move(out));
}

// Unsqueeze, Squeeze, Reshape, Flatten, Identity: the values unchanged, new dims.
// The axes of Unsqueeze and Squeeze: an input from opset 13, an attribute
// before it; nullopt when there are none. Sets *refused when the input's
// value is not known.
std::optional<std::vector<int64_t>> squeeze_axes(const onnx::NodeProto& node, const std::vector<InputFacts>& in,
                                                 int64_t opset, std::optional<Evaluation>* refused) {
  if (opset < 13) return ints_attribute(node, "axes");
  if (in.size() <= 1 || !in[1].present) return std::nullopt;
  if (in[1].value == nullptr) {
    *refused = refuse_input(1, "axes");
    return std::nullopt;
  }
  return as_ints(*in[1].value);
}

Evaluation evaluate_unsqueeze(const onnx::NodeProto& node, const std::vector<InputFacts>& in, int64_t opset) {
  const KnownTensor& data = *in[0].value;
  std::optional<Evaluation> refused;
  const std::optional<std::vector<int64_t>> axes = squeeze_axes(node, in, opset, &refused);
  if (refused) return std::move(*refused);
  if (!axes) return refuse("it has no axes");
  const int64_t out_rank = static_cast<int64_t>(data.dims.size() + axes->size());
  std::set<int64_t> at;
  for (int64_t a : *axes) {
    std::optional<int64_t> n = normalize_axis(a, out_rank);
    if (!n || !at.insert(*n).second) return refuse("axis " + std::to_string(a) + " is out of range or repeated");
  }
  KnownTensor out = data;
  out.dims.clear();
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) out.dims.push_back(at.count(d) ? 1 : data.dims[next++]);
  return one(std::move(out));
}

Evaluation evaluate_squeeze(const onnx::NodeProto& node, const std::vector<InputFacts>& in, int64_t opset) {
  const KnownTensor& data = *in[0].value;
  std::optional<Evaluation> refused;
  const std::optional<std::vector<int64_t>> axes = squeeze_axes(node, in, opset, &refused);
  if (refused) return std::move(*refused);
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  std::set<int64_t> at;
  if (axes) {
    for (int64_t a : *axes) {
      std::optional<int64_t> n = normalize_axis(a, rank);
      if (!n || data.dims[static_cast<size_t>(*n)] != 1)
        return refuse("axis " + std::to_string(a) + " is not of size 1");
      at.insert(*n);
    }
  }
  KnownTensor out = data;
  out.dims.clear();
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t dim = data.dims[static_cast<size_t>(d)];
    if (axes ? at.count(d) == 0 : dim != 1) out.dims.push_back(dim);
  }
  return one(std::move(out));
}

Evaluation evaluate_flatten(const onnx::NodeProto& node, const KnownTensor& data) {
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  std::optional<int64_t> axis = normalize_axis(int_attribute(node, "axis", 1), rank + 1);
  if (!axis) return refuse("axis out of range");
  int64_t a = 1, b = 1;
  for (int64_t d = 0; d < rank; ++d) (d < *axis ? a : b) *= data.dims[static_cast<size_t>(d)];
  KnownTensor out = data;
  out.dims = {a, b};
  return one(std::move(out));
}

// Reshape: 0 copies the input's dimension (unless allowzero), -1 is inferred.
Evaluation evaluate_reshape(const onnx::NodeProto& node, const std::vector<InputFacts>& in) {
  const KnownTensor& data = *in[0].value;
  if (in.size() < 2) return refuse("it has no shape input");
  if (in[1].value == nullptr) return refuse_input(1, "shape");
  const std::vector<int64_t> shape = as_ints(*in[1].value);
  const bool allowzero = int_attribute(node, "allowzero", 0) != 0;
  int64_t known = 1, infer = -1;
  KnownTensor out = data;
  out.dims.clear();
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d == 0 && !allowzero) {
      if (i >= data.dims.size()) return refuse("shape copies a dimension the input does not have");
      d = data.dims[i];
    }
    if (d == -1) {
      if (infer >= 0) return refuse("shape has two -1");
      infer = static_cast<int64_t>(i);
      d = 1;
    } else if (d < 0) {
      return refuse("shape has a negative dimension");
    } else if (__builtin_mul_overflow(known, d, &known)) {
      return refuse("shape " + dims_text(shape) + " overflows 64 bits");
    }
    out.dims.push_back(d);
  }
  const int64_t total = data.elements();
  if (infer >= 0) {
    if (known == 0 || total % known != 0) return refuse("shape " + dims_text(shape) + " does not divide the input");
    out.dims[static_cast<size_t>(infer)] = total / known;
  } else if (known != total) {
    return refuse("shape " + dims_text(shape) + " has a different number of elements than the input");
  }
  return one(std::move(out));
}

Evaluation evaluate_expand(const KnownTensor& data, const KnownTensor& shape) {
  std::optional<std::vector<int64_t>> dims = broadcast({data.dims, as_ints(shape)});
  if (!dims) return refuse("shape does not broadcast with the input");
  std::optional<int64_t> n = element_count(*dims);
  if (!n) return refuse("its output is too large to evaluate");
  KnownTensor result = make(data.type, *dims, *n);
  int64_t at = 0;
  for_each_index(*dims, [&](const std::vector<int64_t>& index) {
    copy_element(data, broadcast_offset(data.dims, index), &result, at++);
  });
  return one(std::move(result));
}

Evaluation evaluate_range(const KnownTensor& start, const KnownTensor& limit, const KnownTensor& delta) {
  if (start.elements() != 1 || limit.elements() != 1 || delta.elements() != 1)
    return refuse("an input is not a scalar");
  if (start.is_real()) {
    const double s = start.reals[0], l = real_at(limit, 0), d = real_at(delta, 0);
    if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d))
      return refuse("delta is 0 or a bound is not finite");
    const double count = std::max(std::ceil((l - s) / d), 0.0);
    if (count > kMaxKnownElements) return refuse("its output is too large to evaluate");
    KnownTensor out = make(start.type, {static_cast<int64_t>(count)}, static_cast<int64_t>(count));
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i)
      out.reals[static_cast<size_t>(i)] = s + static_cast<double>(i) * d;
    return one(std::move(out));
  }
  const int64_t s = start.ints[0], l = limit.ints[0], d = delta.ints[0];
  if (d == 0) return refuse("delta is 0");
  const long double span = static_cast<long double>(l) - static_cast<long double>(s);
  const long double count = std::max<long double>(std::ceil(span / static_cast<long double>(d)), 0);
  if (count > kMaxKnownElements) return refuse("its output is too large to evaluate");
  KnownTensor out = make(start.type, {static_cast<int64_t>(count)}, static_cast<int64_t>(count));
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) {
    int64_t step = 0;
    if (__builtin_mul_overflow(i, d, &step) || __builtin_add_overflow(s, step, &out.ints[static_cast<size_t>(i)])) {
      return refuse("a value overflows 64 bits");
    }
  }
  return one(std::move(out));
}

Evaluation evaluate_constant_of_shape(const onnx::NodeProto& node, const KnownTensor& shape) {
  const std::vector<int64_t> dims = as_ints(shape);
  std::optional<int64_t> n = element_count(dims);
  if (!n) return refuse("its output is too large to evaluate");
  KnownTensor fill{.type = T::FLOAT, .dims = {1}, .reals = {0.0}};
  if (const onnx::AttributeProto* a = attribute(node, "value")) {
    std::optional<KnownTensor> v = read_tensor(a->t());
    if (!v || v->elements() != 1) return refuse("its value is not one number of a numeric type");
    fill = *v;
  }
  KnownTensor out = make(fill.type, dims, *n);
  for (int64_t i = 0; i < *n; ++i) copy_element(fill, 0, &out, i);
  return one(std::move(out));
}

Evaluation evaluate_transpose(const onnx::NodeProto& node, const KnownTensor& data) {
  const size_t rank = data.dims.size();
  std::vector<int64_t> perm = ints_attribute(node, "perm").value_or(std::vector<int64_t>{});
  if (perm.empty()) {
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != static_cast<int64_t>(i) || sorted.size() != rank)
      return refuse("perm is not a permutation of the axes");
  }
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(data.dims[static_cast<size_t>(p)]);
  const std::vector<int64_t> strides = strides_of(data.dims);
  KnownTensor out = make(data.type, dims, data.elements());
  int64_t at = 0;
  for_each_index(dims, [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += index[d] * strides[static_cast<size_t>(perm[d])];
    copy_element(data, offset, &out, at++);
  });
  return one(std::move(out));
}

Evaluation evaluate_cast(const onnx::NodeProto& node, const KnownTensor& data) {
  const int64_t to = int_attribute(node, "to", 0);
  if (!is_known_type(static_cast<int32_t>(to))) return refuse("it casts to a type memplan does not evaluate");
  KnownTensor out = make(static_cast<int32_t>(to), data.dims, data.elements());
  for (int64_t i = 0; i < data.elements(); ++i) {
    if (out.is_real()) {
      out.reals[static_cast<size_t>(i)] =
          to == T::FLOAT ? static_cast<double>(static_cast<float>(real_at(data, i))) : real_at(data, i);
      continue;
    }
    int64_t v = 0;
    if (data.is_real()) {
      const double r = data.reals[static_cast<size_t>(i)];
      if (to == T::BOOL) {
        v = r != 0;
      } else {
        if (!std::isfinite(r) || std::fabs(r) >= 9.2e18) return refuse("a value does not fit the target type");
        v = static_cast<int64_t>(r);
      }
    } else {
      v = to == T::BOOL ? data.ints[static_cast<size_t>(i)] != 0 : data.ints[static_cast<size_t>(i)];
    }
    if (!fits(static_cast<int32_t>(to), v)) return refuse("a value does not fit the target type");
    out.ints[static_cast<size_t>(i)] = v;
  }
  return one(std::move(out));
}

// ---- The table of operators -------------------------------------------------

// The rule of an element-wise operator for one element, on integers and on
// reals. nullopt: the element has no value (an integer overflow, a division
// by zero, an operation not defined on that kind). A null rule: the operator
// is not defined on that kind at all. `b` is 0 for unary operators; `fmod` is
// Mod's attribute (false elsewhere). Comparisons and logic give 0 or 1.
struct ScalarRule {
  std::optional<int64_t> (*ints)(int64_t a, int64_t b, bool fmod) = nullptr;
  std::optional<double> (*reals)(double a, double b, bool fmod) = nullptr;
};

// What an operator's evaluator is given.
struct Call {
  const onnx::NodeProto& node;
  const std::vector<InputFacts>& inputs;          // every input, present or not
  const std::vector<const KnownTensor*>& values;  // the present inputs' values (Reads::kValues)
  int64_t opset;
  const ScalarRule& rule;  // the row's, for the element-wise families
};

// What must be known of a node's inputs before its evaluator runs.
enum class Reads {
  kNothing,     // Constant: its attribute alone
  kFirstShape,  // Shape, Size: the first input's shape
  kValues,      // the values of every present input, at least OperatorRow::values of them
};

// One operator evaluate() computes: the only place its name is spelled.
struct OperatorRow {
  std::string_view name;
  Reads reads = Reads::kValues;
  size_t values = 1;  // kValues: the fewest inputs with values ("it needs N inputs")
  Evaluation (*evaluate)(const Call&) = nullptr;
  ScalarRule rule = {};
};

// An element of a rule's result, or false when it has none; integers must fit `type`.
bool store_int(std::optional<int64_t> r, int32_t type, KnownTensor* o, int64_t k) {
  if (!r || !fits(type, *r)) return false;
  o->ints[static_cast<size_t>(k)] = *r;
  return true;
}
bool store_real(std::optional<double> r, KnownTensor* o, int64_t k) {
  if (!r) return false;
  o->reals[static_cast<size_t>(k)] = *r;
  return true;
}

Evaluation from(std::optional<KnownTensor> out, const std::string& why) {
  if (!out) return refuse(why);
  return one(std::move(*out));
}

// Unary and binary arithmetic (Neg, Add, ...): the output has the first
// input's type; reals when any input is real.
Evaluation evaluate_arithmetic(const Call& c) {
  const std::vector<const KnownTensor*>& in = c.values;
  const bool real = any_real(in);
  const bool fmod = int_attribute(c.node, "fmod", 0) != 0;
  const int32_t type = in[0]->type;
  std::string why;
  std::optional<KnownTensor> out = elementwise(
      in, type,
      [&](const std::vector<int64_t>& at, KnownTensor* o, int64_t k) {
        if (real) {
          const double b = in.size() > 1 ? real_at(*in[1], at[1]) : 0.0;
          return c.rule.reals != nullptr && store_real(c.rule.reals(real_at(*in[0], at[0]), b, fmod), o, k);
        }
        const int64_t b = in.size() > 1 ? in[1]->ints[static_cast<size_t>(at[1])] : 0;
        return c.rule.ints != nullptr &&
               store_int(c.rule.ints(in[0]->ints[static_cast<size_t>(at[0])], b, fmod), type, o, k);
      },
      &why);
  return from(std::move(out), why);
}

// Min, Max, Sum: the rule folded over every input, left to right.
Evaluation evaluate_fold(const Call& c) {
  const std::vector<const KnownTensor*>& in = c.values;
  const bool real = any_real(in);
  const int32_t type = in[0]->type;
  std::string why;
  std::optional<KnownTensor> out = elementwise(
      in, type,
      [&](const std::vector<int64_t>& at, KnownTensor* o, int64_t k) {
        if (real) {
          std::optional<double> r = real_at(*in[0], at[0]);
          for (size_t i = 1; i < in.size() && r; ++i) r = c.rule.reals(*r, real_at(*in[i], at[i]), false);
          return store_real(r, o, k);
        }
        std::optional<int64_t> r = in[0]->ints[static_cast<size_t>(at[0])];
        for (size_t i = 1; i < in.size() && r; ++i) r = c.rule.ints(*r, in[i]->ints[static_cast<size_t>(at[i])], false);
        return store_int(r, type, o, k);
      },
      &why);
  return from(std::move(out), why);
}

// Comparisons (BOOL out, inputs of either kind) and logic (BOOL out and in).
Evaluation evaluate_predicate(const Call& c) {
  const std::vector<const KnownTensor*>& in = c.values;
  const bool real = any_real(in);
  std::string why;
  std::optional<KnownTensor> out = elementwise(
      in, T::BOOL,
      [&](const std::vector<int64_t>& at, KnownTensor* o, int64_t k) {
        std::optional<int64_t> r;
        if (real && c.rule.reals != nullptr) {
          const std::optional<double> d = c.rule.reals(real_at(*in[0], at[0]), real_at(*in[1], at[1]), false);
          if (d) r = *d != 0;
        } else if (!real) {
          r = c.rule.ints(in[0]->ints[static_cast<size_t>(at[0])], in[1]->ints[static_cast<size_t>(at[1])], false);
        }
        return store_int(r, T::BOOL, o, k);
      },
      &why);
  return from(std::move(out), why);
}

Evaluation evaluate_where(const Call& c) {
  const std::vector<const KnownTensor*>& in = c.values;
  std::string why;
  std::optional<KnownTensor> out = elementwise(
      in, in[1]->type,
      [&](const std::vector<int64_t>& at, KnownTensor* o, int64_t k) {
        const KnownTensor* pick = in[0]->ints[static_cast<size_t>(at[0])] != 0 ? in[1] : in[2];
        copy_element(*pick, pick == in[1] ? at[1] : at[2], o, k);
        return true;
      },
      &why);
  return from(std::move(out), why);
}

// Rules written once for both kinds.
template <typename Op>
constexpr ScalarRule comparison() {
  return {.ints = [](int64_t a, int64_t b, bool) -> std::optional<int64_t> { return Op{}(a, b) ? 1 : 0; },
          .reals = [](double a, double b, bool) -> std::optional<double> { return Op{}(a, b) ? 1.0 : 0.0; }};
}
template <typename Op>
constexpr ScalarRule logic() {
  return {.ints = [](int64_t a, int64_t b, bool) -> std::optional<int64_t> { return Op{}(a != 0, b != 0) ? 1 : 0; }};
}

// Python's remainder: the sign of the divisor, unless fmod (C's, the sign of the dividend).
template <typename N>
N signed_remainder(N r, N b, bool fmod) {
  return !fmod && r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

// Integer arithmetic without overflow: nullopt where it would overflow.
std::optional<int64_t> checked_add(int64_t a, int64_t b, bool) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::nullopt : std::optional<int64_t>(r);
}
std::optional<int64_t> checked_sub(int64_t a, int64_t b, bool) {
  int64_t r = 0;
  return __builtin_sub_overflow(a, b, &r) ? std::nullopt : std::optional<int64_t>(r);
}
std::optional<int64_t> checked_mul(int64_t a, int64_t b, bool) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::nullopt : std::optional<int64_t>(r);
}

// A rule on reals from a standard function object (std::plus<>: a + b).
template <typename Op>
std::optional<double> real_rule(double a, double b, bool) {
  return Op{}(a, b);
}

// Every operator evaluate() computes. Adding one: its row here, and its
// evaluator above when no family fits (docs/formats.md lists the names; a
// test checks the list against this table).
const OperatorRow kOperators[] = {
    {.name = "Constant", .reads = Reads::kNothing, .evaluate = [](const Call& c) { return evaluate_constant(c.node); }},
    {.name = "Shape",
     .reads = Reads::kFirstShape,
     .evaluate = [](const Call& c) { return evaluate_shape(c.node, c.inputs[0], c.opset); }},
    {.name = "Size", .reads = Reads::kFirstShape, .evaluate = [](const Call& c) { return evaluate_size(c.inputs[0]); }},
    {.name = "Gather",
     .values = 2,
     .evaluate = [](const Call& c) { return evaluate_gather(c.node, *c.values[0], *c.values[1]); }},
    {.name = "Slice", .evaluate = [](const Call& c) { return evaluate_slice(c.node, c.inputs, c.opset); }},
    {.name = "Concat", .evaluate = [](const Call& c) { return evaluate_concat(c.node, c.values); }},
    {.name = "Identity", .evaluate = [](const Call& c) { return one(*c.inputs[0].value); }},
    {.name = "Unsqueeze", .evaluate = [](const Call& c) { return evaluate_unsqueeze(c.node, c.inputs, c.opset); }},
    {.name = "Squeeze", .evaluate = [](const Call& c) { return evaluate_squeeze(c.node, c.inputs, c.opset); }},
    {.name = "Flatten", .evaluate = [](const Call& c) { return evaluate_flatten(c.node, *c.values[0]); }},
    {.name = "Reshape", .evaluate = [](const Call& c) { return evaluate_reshape(c.node, c.inputs); }},
    {.name = "Expand",
     .values = 2,
     .evaluate = [](const Call& c) { return evaluate_expand(*c.values[0], *c.values[1]); }},
    {.name = "Range",
     .values = 3,
     .evaluate = [](const Call& c) { return evaluate_range(*c.values[0], *c.values[1], *c.values[2]); }},
    {.name = "ConstantOfShape",
     .evaluate = [](const Call& c) { return evaluate_constant_of_shape(c.node, *c.values[0]); }},
    {.name = "Transpose", .evaluate = [](const Call& c) { return evaluate_transpose(c.node, *c.values[0]); }},
    {.name = "Cast", .evaluate = [](const Call& c) { return evaluate_cast(c.node, *c.values[0]); }},
    {.name = "Where", .values = 3, .evaluate = evaluate_where},
    {.name = "Equal", .values = 2, .evaluate = evaluate_predicate, .rule = comparison<std::equal_to<>>()},
    {.name = "Less", .values = 2, .evaluate = evaluate_predicate, .rule = comparison<std::less<>>()},
    {.name = "Greater", .values = 2, .evaluate = evaluate_predicate, .rule = comparison<std::greater<>>()},
    {.name = "LessOrEqual", .values = 2, .evaluate = evaluate_predicate, .rule = comparison<std::less_equal<>>()},
    {.name = "GreaterOrEqual", .values = 2, .evaluate = evaluate_predicate, .rule = comparison<std::greater_equal<>>()},
    {.name = "And", .values = 2, .evaluate = evaluate_predicate, .rule = logic<std::logical_and<>>()},
    {.name = "Or", .values = 2, .evaluate = evaluate_predicate, .rule = logic<std::logical_or<>>()},
    {.name = "Xor", .values = 2, .evaluate = evaluate_predicate, .rule = logic<std::not_equal_to<>>()},
    {.name = "Min",
     .evaluate = evaluate_fold,
     .rule = {.ints = [](int64_t a, int64_t b, bool) -> std::optional<int64_t> { return std::min(a, b); },
              .reals = [](double a, double b, bool) -> std::optional<double> { return std::min(a, b); }}},
    {.name = "Max",
     .evaluate = evaluate_fold,
     .rule = {.ints = [](int64_t a, int64_t b, bool) -> std::optional<int64_t> { return std::max(a, b); },
              .reals = [](double a, double b, bool) -> std::optional<double> { return std::max(a, b); }}},
    {.name = "Sum", .evaluate = evaluate_fold, .rule = {.ints = checked_add, .reals = real_rule<std::plus<>>}},
    {.name = "Neg",
     .evaluate = evaluate_arithmetic,
     .rule = {
         .ints = [](int64_t a, int64_t, bool) { return a == INT64_MIN ? std::nullopt : std::optional<int64_t>(-a); },
         .reals = [](double a, double, bool) -> std::optional<double> { return -a; }}},
    {.name = "Abs",
     .evaluate = evaluate_arithmetic,
     .rule = {.ints = [](int64_t a, int64_t,
                         bool) { return a == INT64_MIN ? std::nullopt : std::optional<int64_t>(a < 0 ? -a : a); },
              .reals = [](double a, double, bool) -> std::optional<double> { return std::fabs(a); }}},
    {.name = "Not",
     .evaluate = evaluate_arithmetic,
     .rule = {.ints = [](int64_t a, int64_t, bool) -> std::optional<int64_t> { return a == 0; }}},
    {.name = "Floor",
     .evaluate = evaluate_arithmetic,
     .rule = {.ints = [](int64_t a, int64_t, bool) -> std::optional<int64_t> { return a; },
              .reals = [](double a, double, bool) -> std::optional<double> { return std::floor(a); }}},
    {.name = "Ceil",
     .evaluate = evaluate_arithmetic,
     .rule = {.ints = [](int64_t a, int64_t, bool) -> std::optional<int64_t> { return a; },
              .reals = [](double a, double, bool) -> std::optional<double> { return std::ceil(a); }}},
    {.name = "Sqrt",
     .evaluate = evaluate_arithmetic,
     .rule = {.reals = [](double a, double, bool) -> std::optional<double> { return std::sqrt(a); }}},
    {.name = "Reciprocal",
     .evaluate = evaluate_arithmetic,
     .rule = {.reals = [](double a, double, bool) -> std::optional<double> { return 1.0 / a; }}},
    {.name = "Add",
     .values = 2,
     .evaluate = evaluate_arithmetic,
     .rule = {.ints = checked_add, .reals = real_rule<std::plus<>>}},
    {.name = "Sub",
     .values = 2,
     .evaluate = evaluate_arithmetic,
     .rule = {.ints = checked_sub, .reals = real_rule<std::minus<>>}},
    {.name = "Mul",
     .values = 2,
     .evaluate = evaluate_arithmetic,
     .rule = {.ints = checked_mul, .reals = real_rule<std::multiplies<>>}},
    {.name = "Div",
     .values = 2,
     .evaluate = evaluate_arithmetic,
     .rule = {.ints =
                  [](int64_t a, int64_t b, bool) {  // truncates, as ONNX Runtime's integer Div
                    return b == 0 || (a == INT64_MIN && b == -1) ? std::nullopt : std::optional<int64_t>(a / b);
                  },
              .reals = real_rule<std::divides<>>}},
    {.name = "Mod",
     .values = 2,
     .evaluate = evaluate_arithmetic,
     .rule = {.ints =
                  [](int64_t a, int64_t b, bool fmod) {
                    if (b == 0 || (a == INT64_MIN && b == -1)) return std::optional<int64_t>();
                    return std::optional<int64_t>(signed_remainder(a % b, b, fmod));
                  },
              .reals = [](double a, double b, bool fmod) -> std::optional<double> {
                return signed_remainder(std::fmod(a, b), b, fmod);
              }}},
    {.name = "Pow",
     .values = 2,
     .evaluate = evaluate_arithmetic,
     .rule = {.reals = [](double a, double b, bool) -> std::optional<double> { return std::pow(a, b); }}},
};

const OperatorRow* find_operator(std::string_view name) {
  for (const OperatorRow& row : kOperators) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

}  // namespace

bool KnownTensor::is_real() const { return type == T::FLOAT || type == T::DOUBLE; }

int64_t KnownTensor::elements() const {
  return is_real() ? static_cast<int64_t>(reals.size()) : static_cast<int64_t>(ints.size());
}

bool is_known_type(int32_t type) { return is_int_type(type) || type == T::FLOAT || type == T::DOUBLE; }

std::optional<KnownTensor> read_tensor(const onnx::TensorProto& tensor) {
  const int32_t type = tensor.data_type();
  if (!is_known_type(type) || tensor.data_location() == T::EXTERNAL || tensor.has_segment()) return std::nullopt;
  std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  std::optional<int64_t> n = element_count(dims);
  if (!n) return std::nullopt;
  KnownTensor t = make(type, dims, *n);
  if (tensor.has_raw_data()) {
    const std::string& raw = tensor.raw_data();
    size_t width = 8;
    switch (type) {
      case T::INT32:
      case T::UINT32:
      case T::FLOAT:
        width = 4;
        break;
      case T::INT16:
      case T::UINT16:
        width = 2;
        break;
      case T::INT8:
      case T::UINT8:
      case T::BOOL:
        width = 1;
        break;
      default:
        break;
    }
    if (raw.size() != static_cast<size_t>(*n) * width) return std::nullopt;
    for (int64_t i = 0; i < *n; ++i) {
      const char* p = raw.data() + static_cast<size_t>(i) * width;
      switch (type) {  // little-endian, as ONNX stores raw data
        case T::INT64: {
          int64_t v;
          std::memcpy(&v, p, 8);
          t.ints[static_cast<size_t>(i)] = v;
          break;
        }
        case T::UINT64: {
          uint64_t v;
          std::memcpy(&v, p, 8);
          if (v > INT64_MAX) return std::nullopt;
          t.ints[static_cast<size_t>(i)] = static_cast<int64_t>(v);
          break;
        }
        case T::INT32: {
          int32_t v;
          std::memcpy(&v, p, 4);
          t.ints[static_cast<size_t>(i)] = v;
          break;
        }
        case T::UINT32: {
          uint32_t v;
          std::memcpy(&v, p, 4);
          t.ints[static_cast<size_t>(i)] = v;
          break;
        }
        case T::INT16: {
          int16_t v;
          std::memcpy(&v, p, 2);
          t.ints[static_cast<size_t>(i)] = v;
          break;
        }
        case T::UINT16: {
          uint16_t v;
          std::memcpy(&v, p, 2);
          t.ints[static_cast<size_t>(i)] = v;
          break;
        }
        case T::INT8:
          t.ints[static_cast<size_t>(i)] = static_cast<int8_t>(*p);
          break;
        case T::UINT8:
          t.ints[static_cast<size_t>(i)] = static_cast<uint8_t>(*p);
          break;
        case T::BOOL:
          t.ints[static_cast<size_t>(i)] = *p != 0;
          break;
        case T::FLOAT: {
          float v;
          std::memcpy(&v, p, 4);
          t.reals[static_cast<size_t>(i)] = v;
          break;
        }
        case T::DOUBLE: {
          double v;
          std::memcpy(&v, p, 8);
          t.reals[static_cast<size_t>(i)] = v;
          break;
        }
        default:
          return std::nullopt;
      }
    }
    return t;
  }
  auto take = [&](const auto& field) -> bool {
    if (field.size() != *n) return false;
    for (int64_t i = 0; i < *n; ++i) {
      if (t.is_real())
        t.reals[static_cast<size_t>(i)] = static_cast<double>(field.Get(static_cast<int>(i)));
      else
        t.ints[static_cast<size_t>(i)] = static_cast<int64_t>(field.Get(static_cast<int>(i)));
    }
    return true;
  };
  bool ok = false;
  switch (type) {
    case T::INT64:
      ok = take(tensor.int64_data());
      break;
    case T::UINT64:
    case T::UINT32:
      ok = take(tensor.uint64_data());
      for (int64_t v : t.ints) ok = ok && v >= 0;
      break;
    case T::FLOAT:
      ok = take(tensor.float_data());
      break;
    case T::DOUBLE:
      ok = take(tensor.double_data());
      break;
    default:
      ok = take(tensor.int32_data());
      break;  // INT32, INT16, INT8, UINT16, UINT8, BOOL
  }
  if (!ok) return std::nullopt;
  for (int64_t v : t.ints) {
    if (!fits(type, v)) return std::nullopt;
  }
  return t;
}

onnx::TensorProto write_tensor(const KnownTensor& value, const std::string& name) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(value.type);
  for (int64_t d : value.dims) t.add_dims(d);
  switch (value.type) {
    case T::INT64:
      for (int64_t v : value.ints) t.add_int64_data(v);
      break;
    case T::UINT64:
    case T::UINT32:
      for (int64_t v : value.ints) t.add_uint64_data(static_cast<uint64_t>(v));
      break;
    case T::FLOAT:
      for (double v : value.reals) t.add_float_data(static_cast<float>(v));
      break;
    case T::DOUBLE:
      for (double v : value.reals) t.add_double_data(v);
      break;
    default:
      for (int64_t v : value.ints) t.add_int32_data(static_cast<int32_t>(v));
      break;
  }
  return t;
}

const std::vector<std::string>& evaluated_operators() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const OperatorRow& row : kOperators) out.emplace_back(row.name);
    std::sort(out.begin(), out.end());
    return out;
  }();
  return names;
}

Evaluation evaluate(const onnx::NodeProto& node, const std::vector<InputFacts>& inputs, int64_t opset) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return refuse("it is not of the default ONNX domain");
  const OperatorRow* row = find_operator(node.op_type());
  if (row == nullptr) return refuse("memplan does not evaluate " + node.op_type());
  std::vector<const KnownTensor*> values;
  const Call call{.node = node, .inputs = inputs, .values = values, .opset = opset, .rule = row->rule};
  if (row->reads == Reads::kNothing) return row->evaluate(call);
  if (inputs.empty() || !inputs[0].present) return refuse("it has no input");
  if (row->reads == Reads::kFirstShape) return row->evaluate(call);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].present) continue;
    if (inputs[i].value == nullptr) return refuse_input(i);
    values.push_back(inputs[i].value);
  }
  if (inputs.size() < row->values || values.size() < row->values) {
    return refuse("it needs " + std::to_string(row->values) + " inputs");
  }
  return row->evaluate(call);
}

std::vector<int> shape_inputs(const onnx::NodeProto& node, int64_t opset) {
  const std::string& op = node.op_type();
  if (op == "Reshape" || op == "Expand" || op == "Tile" || op == "OneHot") return {1};
  if (op == "ConstantOfShape") return {0};
  if (op == "Range") return {0, 1, 2};
  if (op == "Slice" && opset >= 10) return {1, 2, 3, 4};
  if ((op == "Pad" && opset >= 11) || (op == "TopK" && opset >= 10)) return {1};
  if ((op == "Unsqueeze" || op == "Squeeze" || op == "Split") && opset >= 13) return {1};
  if (op == "ReduceSum" && opset >= 13) return {1};
  if (op == "Resize") return {1, 2, 3};
  if (op == "Upsample") return {1};
  return {};
}

bool is_data_dependent(const onnx::NodeProto& node) {
  static const std::set<std::string> ops = {"NonZero", "Unique", "NonMaxSuppression", "Compress", "StringNormalizer"};
  return ops.count(node.op_type()) > 0;
}

}  // namespace memplan::onnx_values
