// onnx_frontend.cc — ONNX model + input shapes -> Problem (see onnx_frontend.h).
// With shape_values.cc, the only files that include ONNX's and protobuf's
// headers.
#include "onnx_frontend.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <climits>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "shape_values.h"

namespace memplan {
namespace {

using onnx_values::KnownTensor;

// Bytes per element of an ONNX TensorProto data type; nullopt for types
// without a fixed size (STRING) and for values this version does not know.
std::optional<int64_t> element_size(int32_t type) {
  using T = onnx::TensorProto;
  switch (type) {
    case T::UINT8:
    case T::INT8:
    case T::BOOL:
      return 1;
    case T::UINT16:
    case T::INT16:
    case T::FLOAT16:
    case T::BFLOAT16:
      return 2;
    case T::FLOAT:
    case T::INT32:
    case T::UINT32:
      return 4;
    case T::INT64:
    case T::UINT64:
    case T::DOUBLE:
    case T::COMPLEX64:
      return 8;
    case T::COMPLEX128:
      return 16;
    default:
      return std::nullopt;
  }
}

// Why a tensor of element type `type` cannot be sized.
std::string element_type_problem(int32_t type) {
  if (type == onnx::TensorProto::UNDEFINED) return "element type UNDEFINED (0)";
  if (!onnx::TensorProto_DataType_IsValid(type)) {
    return "unknown element type " + std::to_string(type) + " (not an ONNX TensorProto data type)";
  }
  return "element type " + onnx::TensorProto_DataType_Name(type) + " has no fixed size in bytes";
}

std::string node_label(const onnx::NodeProto& node, size_t index) {
  std::string label = "node " + std::to_string(index) + " (" + node.op_type();
  if (!node.name().empty()) label += " '" + node.name() + "'";
  return label + ")";
}

std::string format_dims(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += 'x';
    s += std::to_string(dims[i]);
  }
  return s.empty() ? "scalar" : s;
}

// product(dims) x element size, checked for overflow; `what` names the tensor.
StatusOr<int64_t> tensor_bytes(const std::vector<int64_t>& dims, int64_t element, const std::string& what) {
  int64_t bytes = element;
  for (int64_t d : dims) {
    if (d < 0) return InvalidArgument(what + ": negative dimension " + std::to_string(d));
    if (d != 0 && bytes > INT64_MAX / d)
      return InvalidArgument(what + ": " + format_dims(dims) + " overflows 64-bit bytes");
    bytes *= d;
  }
  return bytes;
}

// *total += bytes unless that overflows (then false, *total unchanged).
bool add_bytes(int64_t* total, int64_t bytes) {
  if (bytes > INT64_MAX - *total) return false;
  *total += bytes;
  return true;
}

// The fixed shape and size of a tensor-typed value, or an error naming what
// is missing. `open` collects dimensions left symbolic (name -> tensors).
StatusOr<int64_t> value_bytes(const onnx::TypeProto& type, const std::string& what,
                              std::map<std::string, std::vector<std::string>>* open) {
  if (type.value_case() != onnx::TypeProto::kTensorType) {
    if (type.value_case() == onnx::TypeProto::VALUE_NOT_SET) {
      return InvalidArgument(what + ": no type (shape inference could not infer it)");
    }
    return Unimplemented(what + ": not a tensor (sequences, maps, optionals and sparse tensors are not handled)");
  }
  const onnx::TypeProto_Tensor& tensor = type.tensor_type();
  const std::optional<int64_t> element = element_size(tensor.elem_type());
  if (!element) return InvalidArgument(what + ": " + element_type_problem(tensor.elem_type()));
  if (!tensor.has_shape()) return InvalidArgument(what + ": no shape (shape inference could not infer it)");
  std::vector<int64_t> dims;
  bool symbolic = false;
  for (int i = 0; i < tensor.shape().dim_size(); ++i) {
    const onnx::TensorShapeProto_Dimension& d = tensor.shape().dim(i);
    if (d.has_dim_value()) {
      dims.push_back(d.dim_value());
      continue;
    }
    symbolic = true;
    const std::string name = d.has_dim_param() && !d.dim_param().empty() ? d.dim_param() : "?";
    (*open)[name].push_back(what + " dim " + std::to_string(i));
  }
  if (symbolic) return InvalidArgument("");  // the caller reports every open dimension at once
  return tensor_bytes(dims, *element, what);
}

// Loop and Scan: refused whether or not their subgraph attributes are there
// (without them libonnx 1.12's Scan inference reads through a null body,
// found by tests/fuzz/onnx_model_fuzz.cc). If is taken when its condition is
// known before the model runs (resolve_shapes inlines the branch taken).
bool is_default_domain(const onnx::NodeProto& node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

bool is_loop(const onnx::NodeProto& node) {
  return is_default_domain(node) && (node.op_type() == "Loop" || node.op_type() == "Scan");
}

bool is_if(const onnx::NodeProto& node) { return is_default_domain(node) && node.op_type() == "If"; }

Status check_node_schemas(const onnx::GraphProto& graph, int64_t opset);

// A tensor's data agrees with its dims and type: libonnx's inference reads
// tensors (Constant values, initializers a shape depends on) without checking
// (a Constant with too little raw data crashed it; found by the fuzz target).
Status check_tensor_data(const onnx::TensorProto& t, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d != 0 && n > INT64_MAX / d))
      return InvalidArgument(what + ": dims " + std::to_string(d) + " out of range");
    n *= d;
  }
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return Status::Ok();  // not read: memplan reads no files a model names
  const std::optional<int64_t> element = element_size(t.data_type());
  if (!element) return Status::Ok();  // strings and the like: refused where a tensor of the type is sized
  const std::string count = std::to_string(n) + " elements of " + onnx::TensorProto_DataType_Name(t.data_type());
  if (t.has_raw_data()) {
    if (n > INT64_MAX / *element || static_cast<int64_t>(t.raw_data().size()) != n * *element) {
      return InvalidArgument(what + ": " + std::to_string(t.raw_data().size()) + " bytes of raw data for " + count);
    }
    return Status::Ok();
  }
  using T = onnx::TensorProto;
  int64_t given = 0;  // the values in the field the type's data is read from
  switch (t.data_type()) {
    case T::FLOAT:
    case T::COMPLEX64:
      given = t.float_data_size();
      break;
    case T::INT64:
      given = t.int64_data_size();
      break;
    case T::DOUBLE:
    case T::COMPLEX128:
      given = t.double_data_size();
      break;
    case T::UINT32:
    case T::UINT64:
      given = t.uint64_data_size();
      break;
    default:
      given = t.int32_data_size();
      break;  // the 8- and 16-bit types, INT32, BOOL, FLOAT16, BFLOAT16
  }
  const bool complex = t.data_type() == T::COMPLEX64 || t.data_type() == T::COMPLEX128;
  if (given != (complex ? 2 * n : n)) {
    return InvalidArgument(what + ": " + std::to_string(given) + " values for " + count);
  }
  return Status::Ok();
}

// check_tensor_data for every initializer and every tensor attribute of every
// node, If branches included.
Status check_tensors(const onnx::GraphProto& graph) {
  for (const onnx::TensorProto& t : graph.initializer()) {
    if (Status s = check_tensor_data(t, "initializer '" + t.name() + "'"); !s.ok()) return s;
  }
  for (int k = 0; k < graph.node_size(); ++k) {
    const onnx::NodeProto& node = graph.node(k);
    for (const onnx::AttributeProto& a : node.attribute()) {
      const std::string what = node_label(node, k) + " attribute '" + a.name() + "'";
      if (a.has_t()) {
        if (Status s = check_tensor_data(a.t(), what); !s.ok()) return s;
      }
      for (const onnx::TensorProto& t : a.tensors()) {
        if (Status s = check_tensor_data(t, what); !s.ok()) return s;
      }
      if (a.has_g()) {
        if (Status s = check_tensors(a.g()); !s.ok()) return Status(s.code(), what + ": " + s.message());
      }
    }
  }
  return Status::Ok();
}

// The branches of If nodes are checked as the graph is, recursively, before
// shape inference walks into them (a Scan without its body inside a branch
// crashes libonnx's inference as one outside does; found by the fuzz target).
Status check_no_subgraphs(const onnx::GraphProto& graph, int64_t opset) {
  constexpr const char* kNotHandled = "Loop and Scan are not handled; their tensors would be sized and timed wrongly";
  for (int k = 0; k < graph.node_size(); ++k) {
    const onnx::NodeProto& node = graph.node(k);
    if (is_loop(node)) return Unimplemented(node_label(node, k) + ": " + kNotHandled);
    for (const onnx::AttributeProto& a : node.attribute()) {
      const bool branch = is_if(node) && (a.name() == "then_branch" || a.name() == "else_branch") &&
                          a.type() == onnx::AttributeProto::GRAPH;
      if (!branch && (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS ||
                      a.has_g() || a.graphs_size() > 0)) {
        return Unimplemented(node_label(node, k) + " has a subgraph (attribute '" + a.name() +
                             "'), which only If's branches may have: " + kNotHandled);
      }
      if (!branch) continue;
      Status inside = check_no_subgraphs(a.g(), opset);
      if (inside.ok()) inside = check_node_schemas(a.g(), opset);
      if (!inside.ok()) return Status(inside.code(), node_label(node, k) + " " + a.name() + ": " + inside.message());
    }
  }
  return Status::Ok();
}

// Every node of the default domain against its operator's schema (required
// attributes, input and output counts), before shape inference: libonnx's
// inference functions assume nodes the schema accepts. Runs after
// check_no_subgraphs. Operators the registry does not know are left to shape
// inference, which reports them.
Status check_node_schemas(const onnx::GraphProto& graph, int64_t opset) {
  for (int k = 0; k < graph.node_size(); ++k) {
    const onnx::NodeProto& node = graph.node(k);
    if (!node.domain().empty() && node.domain() != "ai.onnx") continue;
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(std::min<int64_t>(opset, INT_MAX)), "");
    if (schema == nullptr) continue;
    try {
      schema->Verify(node);
    } catch (const std::exception& e) {
      return InvalidArgument(node_label(node, k) + " does not match the " + node.op_type() + " operator of opset " +
                             std::to_string(opset) + ": " + e.what());
    }
  }
  return Status::Ok();
}

// Applies the --input shapes to the graph's inputs before shape inference.
Status apply_input_shapes(onnx::GraphProto* graph, const std::set<std::string>& initializers,
                          const std::vector<OnnxInputShape>& inputs, const std::string& source) {
  std::string known;
  for (const onnx::ValueInfoProto& v : graph->input()) {
    if (!initializers.count(v.name())) known += (known.empty() ? "" : ", ") + v.name();
  }
  std::set<std::string> seen;
  for (const OnnxInputShape& given : inputs) {
    if (!seen.insert(given.name).second) return InvalidArgument("--input " + given.name + " given twice");
    onnx::ValueInfoProto* target = nullptr;
    for (onnx::ValueInfoProto& v : *graph->mutable_input()) {
      if (v.name() == given.name && !initializers.count(v.name())) target = &v;
    }
    if (target == nullptr) {
      return InvalidArgument(source + ": --input " + given.name +
                             ": the model has no such input (its inputs: " + (known.empty() ? "none" : known) + ")");
    }
    if (target->type().value_case() != onnx::TypeProto::kTensorType) {
      return Unimplemented(source + ": input '" + given.name + "' is not a tensor");
    }
    onnx::TypeProto_Tensor* tensor = target->mutable_type()->mutable_tensor_type();
    const std::string what = source + ": --input " + given.name + "=" + format_dims(given.dims);
    if (tensor->has_shape()) {
      const onnx::TensorShapeProto& shape = tensor->shape();
      if (shape.dim_size() != static_cast<int>(given.dims.size())) {
        return InvalidArgument(what + ": the model gives that input rank " + std::to_string(shape.dim_size()));
      }
      for (int i = 0; i < shape.dim_size(); ++i) {
        if (shape.dim(i).has_dim_value() && shape.dim(i).dim_value() != given.dims[i]) {
          return InvalidArgument(what + ": the model fixes dim " + std::to_string(i) + " at " +
                                 std::to_string(shape.dim(i).dim_value()));
        }
      }
    }
    onnx::TensorShapeProto* shape = tensor->mutable_shape();
    shape->clear_dim();
    for (int64_t d : given.dims) shape->add_dim()->set_dim_value(d);
  }
  return Status::Ok();
}

// Every tensor a node reads is an input, an initializer or written by an
// earlier node, and no tensor is written twice.
Status check_order(const onnx::GraphProto& graph, const std::set<std::string>& initializers) {
  std::set<std::string> known(initializers);
  for (const onnx::ValueInfoProto& v : graph.input()) known.insert(v.name());
  for (int k = 0; k < graph.node_size(); ++k) {
    const onnx::NodeProto& node = graph.node(k);
    for (const std::string& name : node.input()) {
      if (!name.empty() && !known.count(name)) {
        return InvalidArgument(node_label(node, k) + " reads '" + name +
                               "', which no earlier node writes and which is no input or initializer "
                               "(the graph is not topologically sorted, or the tensor is missing)");
      }
    }
    for (const std::string& name : node.output()) {
      if (!name.empty() && !known.insert(name).second) {
        return InvalidArgument(node_label(node, k) + " writes '" + name + "', which is already written");
      }
    }
  }
  return Status::Ok();
}

// Nodes whose outputs differ from run to run: never folded into constants.
bool is_random(const onnx::NodeProto& node) {
  static const std::set<std::string> random = {"RandomNormal",      "RandomNormalLike", "RandomUniform",
                                               "RandomUniformLike", "Multinomial",      "Bernoulli"};
  return random.count(node.op_type()) > 0;
}

// A tensor name as a CSV id: the problem CSV has no quoting, so commas,
// blanks and control characters become '_'; a name that then clashes with
// an earlier one gets "~2", "~3", ...
std::string csv_id(const std::string& name, std::set<std::string>* taken) {
  std::string id = name.empty() ? "_" : name;
  for (char& c : id) {
    if (c == ',' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f) c = '_';
  }
  std::string unique = id;
  for (int n = 2; !taken->insert(unique).second; ++n) unique = id + "~" + std::to_string(n);
  return unique;
}

// ---- Shapes of every tensor ----------------------------------------------
//
// resolve_shapes alternates ONNX's shape inference with the evaluation of
// shape computations (shape_values.h) until neither learns anything new:
//
//   1. Shape inference runs on a light copy of the model: large initializers
//      become typed graph inputs (their values are never needed), and every
//      tensor whose value is known becomes an initializer in place of the
//      node that writes it, so that Reshape, Expand, Range, ConstantOfShape,
//      Slice, ... read their shape inputs as constants.
//   2. The nodes are walked in order; each node not yet evaluated whose
//      inputs' values (or, for Shape and Size, whose input's shape) are known
//      is evaluated. Values flow forward within one walk, so a whole
//      Shape -> Gather -> Unsqueeze -> Concat chain is learnt at once; a round
//      is needed only where a chain reads the shape of a tensor that shape
//      inference must first size (a MatMul's output, say).
//   3. An If whose condition became known is replaced by the nodes of the
//      branch it takes; the walk starts again with them.
//
// Each round learns at least one value or inlines one If, so there are at
// most as many rounds as nodes; transformer exports take a handful.

struct ShapeResolution {
  std::unordered_map<std::string, onnx::TypeProto> types;  // every typed tensor
  std::unordered_map<std::string, KnownTensor> known;      // tensors whose values are known
  size_t rounds = 0;                                       // shape inference runs
  size_t evaluated = 0;                                    // node outputs evaluated
};

// The concrete dims of a tensor type, or nullopt if any is missing.
std::optional<std::vector<int64_t>> concrete_dims(const onnx::TypeProto& type) {
  if (type.value_case() != onnx::TypeProto::kTensorType || !type.tensor_type().has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const onnx::TensorShapeProto_Dimension& d : type.tensor_type().shape().dim()) {
    if (!d.has_dim_value()) return std::nullopt;
    dims.push_back(d.dim_value());
  }
  return dims;
}

onnx::TypeProto type_of(const KnownTensor& value) {
  onnx::TypeProto type;
  type.mutable_tensor_type()->set_elem_type(value.type);
  onnx::TensorShapeProto* shape = type.mutable_tensor_type()->mutable_shape();
  for (int64_t d : value.dims) shape->add_dim()->set_dim_value(d);
  return type;
}

// "2x?x32" (or "no shape") for messages.
std::string shape_text(const onnx::TypeProto* type) {
  if (type == nullptr || type->value_case() != onnx::TypeProto::kTensorType || !type->tensor_type().has_shape()) {
    return "no shape";
  }
  std::string s;
  for (const onnx::TensorShapeProto_Dimension& d : type->tensor_type().shape().dim()) {
    if (!s.empty()) s += 'x';
    s += d.has_dim_value()                             ? std::to_string(d.dim_value())
         : d.has_dim_param() && !d.dim_param().empty() ? d.dim_param()
                                                       : "?";
  }
  return s.empty() ? "scalar" : s;
}

// Replaces node `k`, an If, by the nodes of `branch`: the branch's outputs are
// renamed to the If's outputs (or copied to them by an Identity when the
// branch passes a tensor through), its initializers join the graph's under
// fresh names when theirs are taken.
void inline_branch(onnx::GraphProto* graph, int k, const onnx::GraphProto& branch) {
  const onnx::NodeProto node = graph->node(k);
  std::set<std::string> names;
  for (const onnx::TensorProto& t : graph->initializer()) names.insert(t.name());
  for (const onnx::ValueInfoProto& v : graph->input()) names.insert(v.name());
  for (const onnx::NodeProto& n : graph->node()) names.insert(n.output().begin(), n.output().end());
  std::map<std::string, std::string> rename;
  for (const onnx::TensorProto& t : branch.initializer()) {
    std::string fresh = t.name();
    for (int n = 2; names.count(fresh); ++n) fresh = node.name() + "/" + t.name() + "~" + std::to_string(n);
    names.insert(fresh);
    rename[t.name()] = fresh;
    onnx::TensorProto* copy = graph->add_initializer();
    *copy = t;
    copy->set_name(fresh);
  }
  std::set<std::string> written;
  for (const onnx::NodeProto& n : branch.node()) written.insert(n.output().begin(), n.output().end());
  std::vector<onnx::NodeProto> passthrough;
  for (int i = 0; i < branch.output_size() && i < node.output_size(); ++i) {
    const std::string& from = branch.output(i).name();
    if (written.count(from) && !rename.count(from)) {
      rename[from] = node.output(i);
    } else {
      onnx::NodeProto copy;
      copy.set_op_type("Identity");
      copy.set_name(node.name() + "/output_" + std::to_string(i));
      copy.add_input(rename.count(from) ? rename[from] : from);
      copy.add_output(node.output(i));
      passthrough.push_back(copy);
    }
  }
  auto renamed = [&](const std::string& name) { return rename.count(name) ? rename[name] : name; };
  std::vector<onnx::NodeProto> nodes(graph->node().begin(), graph->node().begin() + k);
  for (const onnx::NodeProto& n : branch.node()) {
    onnx::NodeProto copy = n;
    for (std::string& in : *copy.mutable_input()) in = renamed(in);
    for (std::string& out : *copy.mutable_output()) out = renamed(out);
    nodes.push_back(copy);
  }
  nodes.insert(nodes.end(), passthrough.begin(), passthrough.end());
  nodes.insert(nodes.end(), graph->node().begin() + k + 1, graph->node().end());
  graph->clear_node();
  for (onnx::NodeProto& n : nodes) *graph->add_node() = std::move(n);
}

// Step 1: the light copy shape inference runs on.
onnx::ModelProto inference_copy(onnx::ModelProto* model, const ShapeResolution& r) {
  onnx::GraphProto* graph = model->mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  initializers.Swap(graph->mutable_initializer());
  onnx::ModelProto copy = *model;
  initializers.Swap(graph->mutable_initializer());
  onnx::GraphProto* g = copy.mutable_graph();
  g->clear_value_info();
  std::set<std::string> inputs;
  for (const onnx::ValueInfoProto& v : g->input()) inputs.insert(v.name());
  for (const onnx::TensorProto& t : graph->initializer()) {
    if (r.known.count(t.name())) {
      *g->add_initializer() = onnx_values::write_tensor(r.known.at(t.name()), t.name());
    } else if (!inputs.count(t.name())) {  // typed, with no data
      onnx::ValueInfoProto* v = g->add_input();
      v->set_name(t.name());
      onnx::TypeProto_Tensor* type = v->mutable_type()->mutable_tensor_type();
      type->set_elem_type(t.data_type());
      onnx::TensorShapeProto* shape = type->mutable_shape();
      for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
    }
  }
  // Nodes whose every output is known become initializers.
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (onnx::NodeProto& n : *g->mutable_node()) {
    bool all = n.output_size() > 0;
    for (const std::string& out : n.output()) all = all && (out.empty() || r.known.count(out));
    if (!all) {
      *kept.Add() = std::move(n);
      continue;
    }
    for (const std::string& out : n.output()) {
      if (!out.empty()) *g->add_initializer() = onnx_values::write_tensor(r.known.at(out), out);
    }
  }
  g->mutable_node()->Swap(&kept);
  // The names exporters give output dimensions are not facts to merge with.
  for (onnx::ValueInfoProto& v : *g->mutable_output()) {
    if (v.type().value_case() != onnx::TypeProto::kTensorType || !v.type().tensor_type().has_shape()) continue;
    for (onnx::TensorShapeProto_Dimension& d :
         *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      if (!d.has_dim_value()) d.clear_dim_param();
    }
  }
  return copy;
}

// Steps 1 to 3 until nothing changes. Errors: shape inference failing.
Status resolve_shapes(onnx::ModelProto* model, int64_t opset, ShapeResolution* r) {
  onnx::GraphProto* graph = model->mutable_graph();
  for (const onnx::TensorProto& t : graph->initializer()) {
    if (std::optional<KnownTensor> v = onnx_values::read_tensor(t)) r->known.emplace(t.name(), std::move(*v));
  }
  std::set<std::string> inputs;
  for (const onnx::ValueInfoProto& v : graph->input()) inputs.insert(v.name());
  for (;;) {
    onnx::ModelProto copy = inference_copy(model, *r);
    ++r->rounds;
    try {
      onnx::ShapeInferenceOptions inference(/*check_type=*/false, /*error_mode=*/1, /*data_prop=*/true);
      onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), inference);
    } catch (const std::exception& e) {
      return InvalidArgument(std::string("ONNX shape inference failed: ") + e.what());
    }
    r->types.clear();
    const onnx::GraphProto& g = copy.graph();
    for (const onnx::ValueInfoProto& v : g.input()) r->types[v.name()] = v.type();
    for (const onnx::ValueInfoProto& v : g.value_info()) r->types[v.name()] = v.type();
    for (const onnx::ValueInfoProto& v : g.output()) {
      if (v.type().value_case() != onnx::TypeProto::VALUE_NOT_SET && !r->known.count(v.name()))
        r->types[v.name()] = v.type();
    }
    for (const auto& [name, value] : r->known) {
      if (!inputs.count(name)) r->types[name] = type_of(value);
    }
    bool progress = false;
    for (int k = 0; k < graph->node_size(); ++k) {
      const onnx::NodeProto& node = graph->node(k);
      if (is_if(node) && node.input_size() > 0 && r->known.count(node.input(0))) {
        const KnownTensor& cond = r->known.at(node.input(0));
        if (cond.elements() != 1) continue;  // left for the error that names it
        const bool taken = cond.is_real() ? cond.reals[0] != 0 : cond.ints[0] != 0;
        for (const onnx::AttributeProto& a : node.attribute()) {
          if (a.name() == (taken ? "then_branch" : "else_branch") && a.has_g()) {
            const onnx::GraphProto branch = a.g();
            inline_branch(graph, k, branch);
            progress = true;
            break;
          }
        }
        if (progress) break;  // the walk starts again over the inlined nodes
        continue;
      }
      bool all = true;
      for (const std::string& out : node.output()) all = all && (out.empty() || r->known.count(out));
      if (all) continue;
      std::vector<onnx_values::InputFacts> facts;
      for (const std::string& in : node.input()) {
        onnx_values::InputFacts f{.present = !in.empty()};
        if (auto it = r->known.find(in); it != r->known.end()) f.value = &it->second;
        if (auto it = r->types.find(in); it != r->types.end()) f.shape = concrete_dims(it->second);
        facts.push_back(f);
      }
      onnx_values::Evaluation e = onnx_values::evaluate(node, facts, opset);
      if (e.outputs.size() != static_cast<size_t>(node.output_size())) continue;
      for (int i = 0; i < node.output_size(); ++i) {
        if (node.output(i).empty()) continue;
        r->types[node.output(i)] = type_of(e.outputs[static_cast<size_t>(i)]);
        r->known.emplace(node.output(i), std::move(e.outputs[static_cast<size_t>(i)]));
        ++r->evaluated;
      }
      progress = true;
    }
    if (!progress) return Status::Ok();
  }
}

// Why the value of tensor `name` is not known before the model runs: follows
// unknown inputs back to where the chain starts.
std::string why_unknown(const onnx::GraphProto& graph, const std::set<std::string>& initializers,
                        const ShapeResolution& r, int64_t opset, std::string name) {
  std::unordered_map<std::string, int> writer;
  for (int k = 0; k < graph.node_size(); ++k) {
    for (const std::string& out : graph.node(k).output()) writer[out] = k;
  }
  for (int step = 0; step < graph.node_size() + 1; ++step) {
    if (initializers.count(name)) {
      return "it is computed from initializer '" + name + "', too large or of a type memplan does not evaluate";
    }
    auto w = writer.find(name);
    if (w == writer.end()) return "it is computed from the values of graph input '" + name + "', which are data";
    const onnx::NodeProto& node = graph.node(w->second);
    std::vector<onnx_values::InputFacts> facts;
    for (const std::string& in : node.input()) {
      onnx_values::InputFacts f{.present = !in.empty()};
      if (auto it = r.known.find(in); it != r.known.end()) f.value = &it->second;
      if (auto it = r.types.find(in); it != r.types.end()) f.shape = concrete_dims(it->second);
      facts.push_back(f);
    }
    onnx_values::Evaluation e = onnx_values::evaluate(node, facts, opset);
    if (e.missing_input >= 0 && e.missing_input < node.input_size()) {
      name = node.input(e.missing_input);
      continue;
    }
    if (e.why_not.empty()) e.why_not = "its outputs were not all evaluated";
    return "it is computed by " + node_label(node, static_cast<size_t>(w->second)) +
           ", which is not evaluated: " + e.why_not;
  }
  return "its computation has no start";
}

// The error for the first node (in order) an output of which has no concrete
// shape: which node, which output, and why.
Status unsized_node_error(const onnx::GraphProto& graph, const std::set<std::string>& initializers,
                          const ShapeResolution& r, int64_t opset) {
  for (int k = 0; k < graph.node_size(); ++k) {
    const onnx::NodeProto& node = graph.node(k);
    for (const std::string& out : node.output()) {
      if (out.empty()) continue;
      auto type = r.types.find(out);
      const onnx::TypeProto* t = type == r.types.end() ? nullptr : &type->second;
      if (t != nullptr && (t->value_case() != onnx::TypeProto::kTensorType || concrete_dims(*t))) continue;
      std::string message = node_label(node, static_cast<size_t>(k)) + " writes '" + out +
                            "' with no concrete shape (shape inference gives " + shape_text(t) + "): ";
      if (is_if(node)) {
        const std::string& cond = node.input_size() > 0 ? node.input(0) : "";
        return InvalidArgument(message + "its condition '" + cond +
                               "' is not known before the model runs, so the branch "
                               "taken is not either: " +
                               why_unknown(graph, initializers, r, opset, cond));
      }
      if (onnx_values::is_data_dependent(node)) {
        return InvalidArgument(message + "the size of " + node.op_type() +
                               "'s output depends on the values of its input, not on shapes");
      }
      for (int i : onnx_values::shape_inputs(node, opset)) {
        if (i >= node.input_size() || node.input(i).empty() || r.known.count(node.input(i))) continue;
        return InvalidArgument(message + "its shape depends on the value of input " + std::to_string(i) + " ('" +
                               node.input(i) + "'), which is not known before the model runs: " +
                               why_unknown(graph, initializers, r, opset, node.input(i)));
      }
      std::string inputs;
      for (const std::string& in : node.input()) {
        auto it = r.types.find(in);
        inputs += (inputs.empty() ? "" : ", ") +
                  (in.empty() ? std::string("(none)") : shape_text(it == r.types.end() ? nullptr : &it->second));
      }
      return InvalidArgument(message + "ONNX's shape inference for " + node.op_type() +
                             " gives no concrete shape from inputs of shapes " + (inputs.empty() ? "(none)" : inputs));
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<OnnxInputShape> parse_onnx_input_shape(const std::string& text) {
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument("--input '" + text + "': expected NAME=DIMS, e.g. input=1x3x224x224");
  }
  OnnxInputShape shape{.name = text.substr(0, eq)};
  const std::string dims = text.substr(eq + 1);
  size_t at = 0;
  while (at < dims.size()) {
    size_t end = dims.find_first_of("xX,", at);
    if (end == std::string::npos) end = dims.size();
    const std::string field = dims.substr(at, end - at);
    if (field.empty() || field.size() > 18 || field.find_first_not_of("0123456789") != std::string::npos) {
      return InvalidArgument("--input '" + text + "': dimension '" + field + "' is not a non-negative integer");
    }
    shape.dims.push_back(std::stoll(field));
    at = end + 1;
    if (end + 1 == dims.size()) return InvalidArgument("--input '" + text + "': trailing separator");
  }
  return shape;
}

StatusOr<OnnxInputChoices> parse_onnx_input_choices(const std::string& text) {
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument("--input '" + text + "': expected NAME=DIMS, e.g. input=1x3x224x224 or ids=4x1..512");
  }
  OnnxInputChoices input{.name = text.substr(0, eq)};
  const std::string dims = text.substr(eq + 1);
  auto number = [&](const std::string& field) -> StatusOr<int64_t> {
    if (field.empty() || field.size() > 18 || field.find_first_not_of("0123456789") != std::string::npos) {
      return InvalidArgument("--input '" + text + "': dimension '" + field + "' is not a non-negative integer");
    }
    return std::stoll(field);
  };
  size_t at = 0;
  while (at < dims.size()) {
    size_t end = dims.find_first_of("xX", at);
    if (end == std::string::npos) end = dims.size();
    const std::string field = dims.substr(at, end - at);
    std::set<int64_t> values;
    if (const size_t dots = field.find(".."); dots != std::string::npos) {
      StatusOr<int64_t> lo = number(field.substr(0, dots));
      if (!lo.ok()) return lo.status();
      StatusOr<int64_t> hi = number(field.substr(dots + 2));
      if (!hi.ok()) return hi.status();
      if (*hi < *lo) return InvalidArgument("--input '" + text + "': range " + field + " is empty");
      values.insert(*lo);
      for (int64_t p = 1; p > 0 && p < *hi; p *= 2) {
        if (p > *lo) values.insert(p);
      }
      values.insert(*hi);
    } else {
      size_t from = 0;
      while (from <= field.size()) {
        size_t comma = field.find(',', from);
        if (comma == std::string::npos) comma = field.size();
        StatusOr<int64_t> v = number(field.substr(from, comma - from));
        if (!v.ok()) return v.status();
        values.insert(*v);
        from = comma + 1;
      }
    }
    input.dims.emplace_back(values.begin(), values.end());
    at = end + 1;
    if (end + 1 == dims.size()) return InvalidArgument("--input '" + text + "': trailing separator");
  }
  return input;
}

StatusOr<std::vector<std::vector<OnnxInputShape>>> onnx_input_grid(const std::vector<OnnxInputChoices>& inputs,
                                                                   size_t limit) {
  size_t count = 1;
  for (const OnnxInputChoices& input : inputs) {
    for (const std::vector<int64_t>& d : input.dims) {
      if (d.empty()) return InvalidArgument("--input " + input.name + ": a dimension has no value");
      if (count > limit) break;
      count *= d.size();
    }
  }
  if (count > limit) {
    return InvalidArgument("the --input ranges and lists give more than " + std::to_string(limit) +
                           " shapes; give fewer values");
  }
  std::vector<std::vector<OnnxInputShape>> grid;
  std::vector<std::pair<size_t, size_t>> axes;  // (input, dimension), in order
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t d = 0; d < inputs[i].dims.size(); ++d) axes.emplace_back(i, d);
  }
  std::vector<size_t> index(axes.size(), 0);
  for (size_t n = 0; n < count; ++n) {
    std::vector<OnnxInputShape> shapes;
    for (const OnnxInputChoices& input : inputs) shapes.push_back({.name = input.name, .dims = {}});
    for (size_t a = 0; a < axes.size(); ++a) {
      shapes[axes[a].first].dims.push_back(inputs[axes[a].first].dims[axes[a].second][index[a]]);
    }
    grid.push_back(std::move(shapes));
    for (size_t a = axes.size(); a-- > 0;) {
      if (++index[a] < inputs[axes[a].first].dims[axes[a].second].size()) break;
      index[a] = 0;
    }
  }
  return grid;
}

StatusOr<Problem> upper_bound_problem(std::span<const Problem> problems) {
  if (problems.empty()) return InvalidArgument("no problems to bound");
  Problem bound = problems.front();
  for (size_t p = 1; p < problems.size(); ++p) {
    const Problem& other = problems[p];
    if (other.size() != bound.size()) {
      return InvalidArgument("the shapes give " + std::to_string(bound.size()) + " and " +
                             std::to_string(other.size()) + " buffers: the graph differs between them");
    }
    for (size_t i = 0; i < bound.size(); ++i) {
      Buffer& b = bound.buffers[i];
      const Buffer& o = other.buffers[i];
      if (b.id != o.id || b.lower != o.lower || b.upper != o.upper || b.alignment != o.alignment) {
        return InvalidArgument("buffer " + std::to_string(i) + " ('" + b.id + "') differs between shapes ('" + o.id +
                               "'): the graph differs between them");
      }
      b.size = std::max(b.size, o.size);
    }
  }
  return bound;
}

const std::vector<std::string>& onnx_evaluated_operators() { return onnx_values::evaluated_operators(); }

StatusOr<OnnxExtraction> extract_onnx_model(std::span<const uint8_t> bytes, const std::string& source,
                                            const OnnxOptions& options) {
  if (!is_power_of_two(options.alignment)) {
    return InvalidArgument("alignment " + std::to_string(options.alignment) + " is not a power of two");
  }
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return InvalidArgument(source + ": larger than 2 GiB, which protobuf cannot read in one message");
  }
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return InvalidArgument(source + ": not an ONNX model (protobuf parse failed: truncated or not a ModelProto)");
  }
  if (!model.has_graph() || model.ir_version() <= 0) {
    return InvalidArgument(source + ": not an ONNX model (no " + (model.has_graph() ? "ir_version" : "graph") +
                           "; truncated?)");
  }
  OnnxExtraction out;
  out.ir_version = model.ir_version();
  out.producer = model.producer_name() + (model.producer_version().empty() ? "" : " " + model.producer_version());
  for (const onnx::OperatorSetIdProto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") out.opset = op.version();
  }
  if (out.opset <= 0) return InvalidArgument(source + ": no opset for the default ONNX domain (truncated?)");

  onnx::GraphProto* graph = model.mutable_graph();
  if (Status s = check_no_subgraphs(*graph, out.opset); !s.ok()) return Status(s.code(), source + ": " + s.message());
  if (Status s = check_node_schemas(*graph, out.opset); !s.ok()) return Status(s.code(), source + ": " + s.message());
  if (Status s = check_tensors(*graph); !s.ok()) return Status(s.code(), source + ": " + s.message());
  std::set<std::string> initializers;
  for (const onnx::TensorProto& t : graph->initializer()) initializers.insert(t.name());
  for (const onnx::SparseTensorProto& t : graph->sparse_initializer()) initializers.insert(t.values().name());
  if (Status s = apply_input_shapes(graph, initializers, options.inputs, source); !s.ok()) return s;

  // Before shape inference, whose messages about these are less direct: the
  // nodes are in topological order, and the inputs have element types.
  if (Status s = check_order(*graph, initializers); !s.ok()) return Status(s.code(), source + ": " + s.message());
  for (const onnx::ValueInfoProto& v : graph->input()) {
    if (initializers.count(v.name()) || v.type().value_case() != onnx::TypeProto::kTensorType) continue;
    const int32_t type = v.type().tensor_type().elem_type();
    if (!element_size(type))
      return InvalidArgument(source + ": input '" + v.name() + "': " + element_type_problem(type));
  }

  std::map<std::string, std::vector<std::string>> open;  // symbolic dimension -> where
  std::string first_error;
  auto note = [&](const Status& s) {
    if (!s.message().empty() && first_error.empty()) first_error = s.message();
  };
  // Outside the arena: graph inputs, whose shapes must all be given.
  for (const onnx::ValueInfoProto& v : graph->input()) {
    if (initializers.count(v.name())) continue;
    ++out.graph_inputs;
    StatusOr<int64_t> b = value_bytes(v.type(), "input '" + v.name() + "'", &open);
    if (!b.ok()) {
      if (!b.status().message().empty()) return Status(b.status().code(), source + ": " + b.status().message());
    } else if (!add_bytes(&out.graph_input_bytes, *b)) {
      return InvalidArgument(source + ": graph inputs overflow 64-bit bytes");
    }
  }
  if (!open.empty()) {
    std::string message = source + ": symbolic dimensions left open: ";
    bool first = true;
    for (const auto& [dim, where] : open) {
      message += (first ? "" : "; ") + dim + " (" + where.front() +
                 (where.size() > 1 ? " and " + std::to_string(where.size() - 1) + " more" : "") + ")";
      first = false;
    }
    return InvalidArgument(message + "; give the inputs' shapes with --input NAME=DIMS");
  }

  // Shapes of every tensor: shape inference, strict (a node it cannot type is
  // an error, not a gap), with the shape computations evaluated.
  graph->clear_value_info();
  ShapeResolution resolution;
  if (Status s = resolve_shapes(&model, out.opset, &resolution); !s.ok())
    return Status(s.code(), source + ": " + s.message());
  out.inference_rounds = resolution.rounds;
  out.evaluated = resolution.evaluated;
  if (Status s = check_no_subgraphs(*graph, out.opset); !s.ok()) return Status(s.code(), source + ": " + s.message());
  if (Status s = unsized_node_error(*graph, initializers, resolution, out.opset); !s.ok()) {
    return Status(s.code(), source + ": " + s.message());
  }
  for (int k = 0; k < graph->node_size(); ++k) {
    const onnx::NodeProto& node = graph->node(k);
    if (!is_if(node)) continue;
    const std::string& cond = node.input_size() > 0 ? node.input(0) : "";
    return InvalidArgument(source + ": " + node_label(node, static_cast<size_t>(k)) + ": its condition '" + cond +
                           "' is not known before the model runs, so which branch's tensors to plan is not either: " +
                           why_unknown(*graph, initializers, resolution, out.opset, cond));
  }
  std::unordered_map<std::string, const onnx::TypeProto*> types;
  for (const auto& [name, type] : resolution.types) types[name] = &type;

  // Outside the arena: initializers (sized from their own dims), with those
  // of the If branches taken.
  for (const onnx::TensorProto& t : graph->initializer()) {
    initializers.insert(t.name());
    ++out.initializers;
    const std::optional<int64_t> element = element_size(t.data_type());
    if (!element)
      return InvalidArgument(source + ": initializer '" + t.name() + "': " + element_type_problem(t.data_type()));
    StatusOr<int64_t> b =
        tensor_bytes({t.dims().begin(), t.dims().end()}, *element, source + ": initializer '" + t.name() + "'");
    if (!b.ok()) return b.status();
    if (!add_bytes(&out.initializer_bytes, *b)) return InvalidArgument(source + ": initializers overflow 64-bit bytes");
  }

  // The node walk: who writes each tensor, who reads it last.
  struct Tensor {
    size_t producer = 0;
    size_t last_reader = 0;
    bool read = false;
    bool constant = false;  // every input is an initializer or a constant
  };
  std::unordered_map<std::string, Tensor> produced;
  std::vector<std::string> order;  // tensors in the order nodes write them
  out.nodes = static_cast<size_t>(graph->node_size());
  if (out.nodes == 0) return InvalidArgument(source + ": the graph has no nodes");
  std::set<std::string> fed(initializers);
  for (const onnx::ValueInfoProto& v : graph->input()) fed.insert(v.name());
  for (size_t k = 0; k < out.nodes; ++k) {
    const onnx::NodeProto& node = graph->node(static_cast<int>(k));
    bool constant = options.fold_constants && !is_random(node);
    for (const std::string& name : node.input()) {
      if (name.empty()) continue;  // an optional input left out
      auto it = produced.find(name);
      if (it != produced.end()) {
        it->second.last_reader = k;
        it->second.read = true;
        constant = constant && it->second.constant;
      } else if (fed.count(name)) {
        constant = constant && initializers.count(name) > 0;
      } else {
        return InvalidArgument(source + ": " + node_label(node, k) + " reads '" + name +
                               "', which no earlier node writes and which is no input or initializer "
                               "(the graph is not topologically sorted, or the tensor is missing)");
      }
    }
    for (const std::string& name : node.output()) {
      if (name.empty()) continue;  // an optional output not asked for
      if (produced.count(name) || fed.count(name)) {
        return InvalidArgument(source + ": " + node_label(node, k) + " writes '" + name +
                               "', which is already written");
      }
      produced[name] = Tensor{.producer = k, .last_reader = k, .constant = constant};
      order.push_back(name);
    }
  }
  std::set<std::string> outputs;
  for (const onnx::ValueInfoProto& v : graph->output()) outputs.insert(v.name());
  out.graph_outputs = outputs.size();

  out.problem.alignment = options.alignment;
  std::set<std::string> ids;
  for (const std::string& name : order) {
    const Tensor& t = produced[name];
    const onnx::NodeProto& node = graph->node(static_cast<int>(t.producer));
    const std::string what = "tensor '" + name + "' (written by " + node_label(node, t.producer) + ")";
    auto type = types.find(name);
    if (type == types.end()) {
      note(InvalidArgument(what + ": no shape (shape inference could not infer it)"));
      continue;
    }
    StatusOr<int64_t> b = value_bytes(*type->second, what, &open);
    if (!b.ok()) {
      if (b.status().code() == StatusCode::kUnimplemented && first_error.empty())
        return Status(b.status().code(), source + ": " + b.status().message());
      note(b.status());
      continue;
    }
    if (t.constant) {
      ++out.constants;
      if (!add_bytes(&out.constant_bytes, *b)) return InvalidArgument(source + ": constants overflow 64-bit bytes");
      continue;
    }
    const bool is_output = outputs.count(name) > 0;
    if (!t.read && !is_output) ++out.unread;
    const int64_t lower = static_cast<int64_t>(t.producer);
    const int64_t upper = is_output ? static_cast<int64_t>(out.nodes) : static_cast<int64_t>(t.last_reader) + 1;
    out.problem.buffers.push_back(
        Buffer{.id = csv_id(name, &ids), .lower = lower, .upper = upper, .size = *b, .alignment = options.alignment});
    out.operators.push_back(node.name().empty() ? node.op_type() : node.op_type() + " " + node.name());
  }
  if (!open.empty()) {  // unsized_node_error has named every node output without a concrete shape
    return InvalidArgument(source + ": " + open.begin()->second.front() + ": dimension '" + open.begin()->first +
                           "' left open");
  }
  if (!first_error.empty()) return InvalidArgument(source + ": " + first_error);
  if (Status s = check_problem(out.problem); !s.ok()) return Status(s.code(), source + ": " + s.message());
  return out;
}

}  // namespace memplan
