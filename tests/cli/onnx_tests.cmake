# onnx_tests.cmake — CLI tests (label cli) of `memplan extract` on the small
# ONNX models in tests/cli/data/onnx (made by make_models.py there): a good
# model with and without its input shape, and each kind of bad model.
# Included by tests/CMakeLists.txt with the other tests/cli/*.cmake.
set(onnx_data ${CMAKE_CURRENT_LIST_DIR}/data/onnx)

if(NOT MEMPLAN_WITH_ONNX)
  memplan_cli_test(extract_onnx_without_the_front_end EXIT 1 ARGS extract ${onnx_data}/tiny.onnx --output out.csv
    STDERR "built without the ONNX front end")
  return()
endif()

# tiny.onnx: x[batch,4] @ w[4,8] -> mm; relu(mm) -> r; r + mm -> y (a graph output).
memplan_cli_test(extract_onnx_tiny EXIT 0 ARGS extract ${onnx_data}/tiny.onnx --input x=2x4 --output tiny.csv
  STDOUT "3 nodes.*buffers +3 intermediate tensors, 192 B in all, load 192 B.*left out +1 initializers \\(128 B\\), 1 graph inputs \\(32 B\\), 0 constants"
  FILE tiny.csv FILE_REGEX "mm,0,3,64,64,MatMul matmul\nr,1,3,64,64,Relu relu\ny,2,3,64,64,Add add")
memplan_cli_test(extract_onnx_recognised_by_content EXIT 0 ARGS extract ${onnx_data}/tiny.model --input x=2x4 --output -
  STDOUT "mm,0,3,64,64,MatMul matmul" STDERR "model +.*tiny.model: ONNX IR 8")
# constant.onnx: Constant -> c; x + c -> y. The constant is left out unless asked for.
memplan_cli_test(extract_onnx_folds_constants EXIT 0 ARGS extract ${onnx_data}/constant.onnx --input x=2x4 --output -
  STDOUT "^id,lower,upper,size,alignment,operator\ny,1,2,32,64,Add add\n$" STDERR "1 constants \\(16 B\\)")
memplan_cli_test(extract_onnx_keep_constants EXIT 0 ARGS extract ${onnx_data}/constant.onnx --input x=2x4 --keep-constants --output -
  STDOUT "^id,lower,upper,size,alignment,operator\nc,0,2,16,64,Constant const\ny,1,2,32,64,Add add\n$" STDERR "0 constants")
memplan_cli_test(extract_onnx_to_stdout EXIT 0 ARGS extract ${onnx_data}/tiny.onnx --input x=1x4 --output -
  STDOUT "^id,lower,upper,size,alignment,operator\nmm,0,3,32,64,MatMul matmul" STDERR "wrote +-")
memplan_cli_test(extract_onnx_alignment EXIT 0 ARGS extract ${onnx_data}/tiny.onnx --input x=1x4 -a 256 --output -
  STDOUT "mm,0,3,32,256,MatMul matmul")
memplan_cli_test(extract_onnx_symbolic_dimension_is_named EXIT 1 ARGS extract ${onnx_data}/tiny.onnx --output out.csv
  STDERR "symbolic dimensions left open: batch \\(input 'x' dim 0.*--input NAME=DIMS")
memplan_cli_test(extract_onnx_unknown_input EXIT 1 ARGS extract ${onnx_data}/tiny.onnx --input image=1x4 --output out.csv
  STDERR "--input image: the model has no such input \\(its inputs: x\\)")
memplan_cli_test(extract_onnx_wrong_rank EXIT 1 ARGS extract ${onnx_data}/tiny.onnx --input x=1x4x4 --output out.csv
  STDERR "the model gives that input rank 2")
memplan_cli_test(extract_onnx_fixed_dimension_disagrees EXIT 1 ARGS extract ${onnx_data}/tiny.onnx --input x=1x5 --output out.csv
  STDERR "the model fixes dim 1 at 4")
memplan_cli_test(extract_onnx_bad_input_syntax EXIT 1 ARGS extract ${onnx_data}/tiny.onnx --input x=1xq --output out.csv
  STDERR "dimension 'q' is not a non-negative integer")
memplan_cli_test(extract_onnx_input_on_a_trace EXIT 100 ARGS extract ${MEMPLAN_CLI_DATA}/small.csv --input x=1 --output out.csv
  STDERR "--input applies to ONNX models")

# Bad models: each a clear error, exit 1, no output file.
memplan_cli_test(extract_onnx_truncated EXIT 1 ARGS extract ${onnx_data}/truncated.onnx --input x=1x4 --output out.csv
  STDERR "truncated.onnx: not an ONNX model")
memplan_cli_test(extract_onnx_missing_shape EXIT 1 ARGS extract ${onnx_data}/missing_shape.onnx --input x=1x4 --output out.csv
  STDERR "shape inference failed.*node name mystery")
memplan_cli_test(extract_onnx_string_tensor EXIT 1 ARGS extract ${onnx_data}/string_tensor.onnx --input x=1x4 --output out.csv
  STDERR "tensor 's' .*element type STRING has no fixed size")
memplan_cli_test(extract_onnx_unknown_element_type EXIT 1 ARGS extract ${onnx_data}/unknown_type.onnx --input x=1x4 --output out.csv
  STDERR "input .x.: unknown element type 99 \\(not an ONNX TensorProto data type\\)")
# An If on a constant condition: replaced by the branch it takes (then: Relu).
memplan_cli_test(extract_onnx_if_on_a_constant_takes_its_branch EXIT 0 ARGS extract ${onnx_data}/subgraph.onnx --input x=1x4 --output -
  STDOUT "^id,lower,upper,size,alignment,operator\ny,0,1,16,64,Relu\n$")
memplan_cli_test(extract_onnx_unsorted EXIT 1 ARGS extract ${onnx_data}/unsorted.onnx --input x=1x4 --output out.csv
  STDERR "node 0 \\(Relu 'relu'\\) reads 'mm'.*not topologically sorted")
memplan_cli_test(extract_onnx_scan_without_body EXIT 1 ARGS extract ${onnx_data}/scan_without_body.onnx --input x=1x4 --output out.csv
  STDERR "node 1 \\(Scan 'scan'\\): Loop and Scan are not handled")
memplan_cli_test(extract_onnx_missing_required_attribute EXIT 1 ARGS extract ${onnx_data}/missing_attribute.onnx --input x=1x4 --output out.csv
  STDERR "node 0 \\(Cast 'cast'\\) does not match the Cast operator of opset 13: .*to")

# Shape computations evaluated before the run, one model per operator family
# (tests/cli/data/onnx/make_models.py): each output's size follows x's shape.
# Shape -> Gather -> Unsqueeze -> Concat -> Reshape: x[3,4] reshaped to [3,2,2].
memplan_cli_test(extract_onnx_evaluates_gather_concat EXIT 0 ARGS extract ${onnx_data}/fold_gather_concat.onnx --input x=3x4 --output -
  STDOUT "new_shape,6,8,24,64,Concat concat\ny,7,8,48,64,Reshape reshape\n$" STDERR "7 values of shape computations evaluated")
# Shape start/end, Slice, Mul, Div, Sub, Cast, Min, Max, Squeeze, Unsqueeze, Expand: x[5,4] as [10,2].
memplan_cli_test(extract_onnx_evaluates_arithmetic EXIT 0 ARGS extract ${onnx_data}/fold_arithmetic.onnx --input x=5x4 --output -
  STDOUT "n,5,8,8,64,Mul mul\nh,7,9,8,64,Div div.*new_shape,14,18,16,64,Concat concat\nr,17,19,80,64,Reshape reshape\ny,18,19,80,64,Expand expand\n$")
# Range -> Expand (position ids): range(0, 4) as int64, expanded to [3,4]: 96 B.
memplan_cli_test(extract_onnx_evaluates_range_expand EXIT 0 ARGS extract ${onnx_data}/fold_range_expand.onnx --input x=3x4 --output -
  STDOUT "positions,5,7,32,64,Range range\ne,6,8,96,64,Expand expand\n")
# ConstantOfShape, Equal, Where -> Expand: x[6,4] expanded to its own shape.
memplan_cli_test(extract_onnx_evaluates_where EXIT 0 ARGS extract ${onnx_data}/fold_where.onnx --input x=6x4 --output -
  STDOUT "target,5,7,16,64,Where where\ny,6,7,96,64,Expand expand\n$")

# What still stops extraction: each names the one node and why.
memplan_cli_test(extract_onnx_reshape_by_data EXIT 1 ARGS extract ${onnx_data}/reshape_by_data.onnx --input x=1x4 --output out.csv
  STDERR "node 1 \\(Reshape 'reshape'\\) writes 'y' with no concrete shape.*value of input 1 \\('target'\\).*graph input 'shape_in', which are data")
memplan_cli_test(extract_onnx_data_dependent EXIT 1 ARGS extract ${onnx_data}/nonzero.onnx --input x=1x4 --output out.csv
  STDERR "node 0 \\(NonZero 'nonzero'\\) writes 'nz' with no concrete shape.*depends on the values of its input")
memplan_cli_test(extract_onnx_if_on_data EXIT 1 ARGS extract ${onnx_data}/if_on_input.onnx --input x=1x4 --output out.csv
  STDERR "node 0 \\(If 'branch'\\): its condition 'flag' is not known before the model runs")
memplan_cli_test(extract_onnx_operator_not_evaluated EXIT 1 ARGS extract ${onnx_data}/not_evaluated.onnx --input x=1x4 --output out.csv
  STDERR "node 2 \\(Reshape 'reshape'\\).*computed by node 1 \\(ReduceProd 'reduce_prod'\\), which is not evaluated: memplan does not evaluate ReduceProd")

# Ranges and lists of input shapes: each shape planned, one upper-bound plan
# for all (its problem is the output: every buffer at its largest size).
memplan_cli_test(extract_onnx_range_of_shapes EXIT 0 ARGS extract ${onnx_data}/fold_gather_concat.onnx --input x=1..4x4 --output ub.csv
  STDOUT "3 shapes.*x=1x4 +5 .*x=2x4 +5 .*x=4x4 +5 +88 B +88 B +0.00% +88 B +\\+0.0%.*upper bound +one plan for every shape: 5 buffers"
  FILE ub.csv FILE_REGEX "new_shape,6,8,24,64,Concat concat\ny,7,8,64,64,Reshape reshape\n$")
memplan_cli_test(extract_onnx_list_of_shapes_as_json EXIT 0 ARGS extract ${onnx_data}/fold_gather_concat.onnx --input x=3,1x4 --json --output -
  STDOUT "y,7,8,48,64,Reshape reshape"
  STDERR "\"shapes\":\\[{\"inputs\":\"x=1x4\",\"buffers\":5,.*},{\"inputs\":\"x=3x4\",.*\"upper_bound\":{\"buffers\":5,\"load\":72,\"arena\":88")
memplan_cli_test(extract_onnx_empty_range EXIT 1 ARGS extract ${onnx_data}/fold_gather_concat.onnx --input x=4..1x4 --output out.csv
  STDERR "range 4..1 is empty")
memplan_cli_test(extract_onnx_json_needs_a_range EXIT 100 ARGS extract ${onnx_data}/tiny.onnx --input x=2x4 --json --output out.csv
  STDERR "--json applies to ONNX models with --input ranges or lists")
# Memory before the run: weights and constants + graph inputs + planned
# activations per shape; --capacity says which fit (totals 128, 152, 184 B).
memplan_cli_test(extract_onnx_predict_with_capacity EXIT 0 ARGS extract ${onnx_data}/fold_gather_concat.onnx --input x=1..4x4 --predict --capacity 160
  STDOUT "3 shapes;.*x=1x4 +32 B +16 B +80 B +128 B +yes\nx=2x4 +32 B +32 B +88 B +152 B +yes\nx=4x4 +32 B +64 B +88 B +184 B +no\n.*serves every shape with 88 B of activations\ncapacity +160 B: 2 of 3 shapes fit; the largest is x=2x4 \\(152 B\\)")
# No shape fits: the table (here as JSON) still, and exit 2 as `plan --capacity` does.
memplan_cli_test(extract_onnx_predict_nothing_fits_exits_2 EXIT 2 ARGS extract ${onnx_data}/fold_gather_concat.onnx --input x=4,1x4 --predict --capacity 100 --json
  STDERR "memplan: --capacity 100 B: no shape fits"
  STDOUT "\"capacity\":100,\"shapes\":.{\"inputs\":\"x=1x4\",\"weights_bytes\":32,\"input_bytes\":16,\"activation_bytes\":80,\"activation_load_bytes\":65,\"total_bytes\":128,\"fits\":false}.*\"largest_fitting\":null}")
memplan_cli_test(extract_onnx_predict_nothing_fits_table_exits_2 EXIT 2 ARGS extract ${onnx_data}/fold_gather_concat.onnx --input x=1..4x4 --predict --capacity 127
  STDOUT "x=1x4 +32 B +16 B +80 B +128 B +no\n.*capacity +127 B: no shape fits" STDERR "no shape fits")
memplan_cli_test(extract_onnx_predict_as_json EXIT 0 ARGS extract ${onnx_data}/fold_gather_concat.onnx --input x=4,1x4 --predict --capacity 128 --json
  STDOUT "^{\"model\":\"[^\"]*fold_gather_concat.onnx\",\"planner\":\"portfolio\",\"capacity\":128,\"shapes\":\\[{\"inputs\":\"x=1x4\",.*\"fits\":true},{\"inputs\":\"x=4x4\",.*\"fits\":false}\\],\"upper_bound_activation_bytes\":88,\"largest_fitting\":\"x=1x4\"}\n$")
# Standard input: read whole, then told apart by its first bytes (the README's
# promise of - for every file argument).
memplan_cli_test(extract_onnx_from_stdin EXIT 0 ARGS extract - --input x=2x4 --output - STDIN ${onnx_data}/tiny.onnx
  STDOUT "^id,lower,upper,size,alignment,operator\nmm,0,3,64,64,MatMul matmul" STDERR "model +<stdin>: ONNX IR 8")
memplan_cli_test(extract_onnx_predict_from_stdin EXIT 0 ARGS extract - --input x=1..4x4 --predict STDIN ${onnx_data}/fold_gather_concat.onnx
  STDOUT "<stdin>: 3 shapes;.*x=4x4 +32 B +64 B +88 B +184 B")
memplan_cli_test(extract_onnx_predict_one_shape_writes_its_problem EXIT 0 ARGS extract ${onnx_data}/tiny.onnx --input x=2x4 --predict --output tiny.csv
  STDOUT "1 shape;.*x=2x4 +128 B +32 B +192 B +352 B\n.*wrote +tiny.csv"
  FILE tiny.csv FILE_REGEX "^id,lower,upper,size")
memplan_cli_test(extract_onnx_predict_on_a_trace EXIT 100 ARGS extract ${MEMPLAN_CLI_DATA}/small.csv --predict
  STDERR "--predict applies to ONNX models, not to traces")
memplan_cli_test(extract_onnx_capacity_needs_predict EXIT 100 ARGS extract ${onnx_data}/tiny.onnx --input x=2x4 --capacity 1G --output -
  STDERR "--capacity applies with --predict")
memplan_cli_test(extract_onnx_output_required_without_predict EXIT 100 ARGS extract ${onnx_data}/tiny.onnx --input x=2x4
  STDERR "--output is required")
memplan_cli_test(extract_onnx_scan_inside_a_branch EXIT 1 ARGS extract ${onnx_data}/scan_in_branch.onnx --input x=1x4 --output out.csv
  STDERR "node 0 \\(If 'branch'\\) then_branch: node 0 \\(Scan 'scan'\\): Loop and Scan are not handled")
memplan_cli_test(extract_onnx_short_constant EXIT 1 ARGS extract ${onnx_data}/short_constant.onnx --input x=2x4 --output out.csv
  STDERR "node 0 \\(Constant 'short'\\) attribute 'value': 3 bytes of raw data for 2 elements of INT64")
memplan_cli_test(extract_onnx_misplaced_constant EXIT 1 ARGS extract ${onnx_data}/misplaced_constant.onnx --input x=2x4 --output out.csv
  STDERR "node 0 \\(Constant 'misplaced'\\) attribute 'value': 0 values for 2 elements of INT64")
