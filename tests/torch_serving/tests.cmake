# End-to-end serving tests on torchvision (issue 5): `memplan run` on a real
# model gives the plain run's output bytes and serves from its slab. Added only
# when /usr/bin/python3 imports torch and torchvision, and only in plain
# builds: the drop-in is not built under the sanitizers or for fuzzing.
# Included by tests/CMakeLists.txt.
if(NOT MEMPLAN_SANITIZE AND NOT MEMPLAN_BUILD_FUZZ AND TARGET memplan_replay_preload AND TARGET memplan)
  set(MEMPLAN_TORCH_PYTHON /usr/bin/python3)
  if(NOT DEFINED MEMPLAN_PYTHON_HAS_TORCHVISION)
    execute_process(COMMAND ${MEMPLAN_TORCH_PYTHON} -c "import torch, torchvision"
      RESULT_VARIABLE _memplan_torchvision_result OUTPUT_QUIET ERROR_QUIET TIMEOUT 120)
    if(_memplan_torchvision_result EQUAL 0)
      set(MEMPLAN_PYTHON_HAS_TORCHVISION ON CACHE BOOL "python3 imports torch and torchvision")
    else()
      set(MEMPLAN_PYTHON_HAS_TORCHVISION OFF CACHE BOOL "python3 imports torch and torchvision")
    endif()
  endif()
  # torch_serving.run_matches_plain_NAME: run_matches_plain.py on
  # examples/SCRIPT with ARGS (outputs identical to a plain run, requests
  # served); ENV ("" for none) is added to the test's environment.
  function(memplan_run_matches_plain name script timeout env)
    add_test(NAME torch_serving.run_matches_plain_${name}
      COMMAND ${MEMPLAN_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/torch_serving/run_matches_plain.py
        $<TARGET_FILE:memplan> ${PROJECT_SOURCE_DIR}/examples/${script}
        ${CMAKE_CURRENT_BINARY_DIR}/torch_serving_${name} ${ARGN})
    set(environment "LD_PRELOAD=" ${env})
    set_tests_properties(torch_serving.run_matches_plain_${name} PROPERTIES LABELS torch TIMEOUT ${timeout}
      ENVIRONMENT "${environment}")
  endfunction()
  if(MEMPLAN_PYTHON_HAS_TORCHVISION)
    # resnet18 at 64 px: a few hundred tensor allocations per pass, each pass
    # well under a second; 4 warm-up passes cover the 2 profiled ones.
    memplan_run_matches_plain(resnet18 infer_torchvision.py 180 ""
      resnet18 --size 64 --batch 1 --threads 1 --warmup 4 --iterations 3)
    # Four batch sizes at one resolution in turn: the same operators with
    # other sizes, served from one upper-bound plan (docs/runtime.md, "Variants").
    memplan_run_matches_plain(rotating_batches infer_rotating_shapes.py 300 ""
      resnet18 --shapes 1x64,2x64,3x64,4x64 --rounds 4 --threads 1)
    # Six shapes (batch 1 to 4, 64 and 80 px), each marked with its key: one
    # plan per shape (docs/runtime.md, "Keyed plans"). Six rounds: planned in
    # the background (the default), a shape's plan is adopted at the end of
    # its third or fourth pass.
    memplan_run_matches_plain(rotating_shapes_keyed infer_rotating_shapes.py 300 ""
      resnet18 --shapes 1x64,2x64,1x80,3x64,2x80,4x64 --rounds 6 --threads 1 --keyed)
    # The same six shapes with plain marks: the learner tells the shapes'
    # request structures apart and predicts the next one from the rotation
    # (docs/runtime.md, "Predicted variants").
    memplan_run_matches_plain(rotating_shapes_unkeyed infer_rotating_shapes.py 300 ""
      resnet18 --shapes 1x64,2x64,1x80,3x64,2x80,4x64 --rounds 6 --threads 1)
    # The benchmarks' example loops (bench/e2e_dynamic.py, e2e_training.py),
    # each once with tiny settings: outputs (every pass's, or the final
    # weights) identical to a plain run, and requests served from slabs. The
    # keyed transformer run has two shapes (batch 1 or 2, every sequence 16
    # tokens: --sigma 0), so that each key is seen often enough in 12 passes
    # to be planned; the last training run has every variant at once
    # (Adam, accumulation, evaluation passes, keyed marks, fork workers).
    # The batching loop's tensors vary in number from pass to pass, so 12
    # passes need not give it a plan: requests served from the small-request
    # pools count there (--pooled-suffices).
    # workers_thread_marks: two Python threads serving their own requests on
    # one model, each request a memplan_mark_thread boundary.
    # These plan at the boundary that agrees: the runs are a few passes long,
    # and a plan made in the background may arrive after the last one (the
    # rotating-shapes tests above run with the default, background planning).
    set(_memplan_example_runs
      "transformer_random_batches\;serve_transformer.py\;--warmup\;8\;--passes\;4\;--max-batch\;3\;--median-tokens\;16"
      "transformer_dynamic_batching\;serve_transformer.py\;--pooled-suffices\;--batching\;--warmup\;8\;--passes\;4\;--max-batch\;3\;--median-tokens\;16"
      "transformer_keyed\;serve_transformer.py\;--keyed\;--key-by\;shape\;--warmup\;8\;--passes\;4\;--max-batch\;2\;--median-tokens\;16\;--sigma\;0"
      "transformer_keyed_by_batch\;serve_transformer.py\;--keyed\;--warmup\;8\;--passes\;6\;--max-batch\;2\;--median-tokens\;16"
      "workers_thread_marks\;serve_threads.py\;resnet18\;--workers\;2\;--size\;32\;--warmup\;4\;--requests\;3"
      "train_resnet18_sgd\;train_loop.py\;resnet18\;--batch\;2\;--size\;32\;--warmup\;4\;--steps\;2"
      "train_transformer_adam_eval_loader\;train_loop.py\;transformer\;--optimizer\;adam\;--batch\;2\;--tokens\;16\;--accumulate\;2\;--eval-every\;2\;--loader-workers\;2\;--keyed\;--warmup\;4\;--steps\;2")
    foreach(_memplan_run IN LISTS _memplan_example_runs)
      list(POP_FRONT _memplan_run _memplan_name _memplan_script)
      memplan_run_matches_plain(${_memplan_name} ${_memplan_script} 300 MEMPLAN_PLAN_IN_BACKGROUND=0
        ${_memplan_run} --threads 1)
    endforeach()
  endif()
endif()

# The libtorch allocator (src/torch/): unit tests, and a TorchScript
# module, traced at test time from a torchvision model (weights=None), run through
# TorchReplayAllocator with one and two torch threads; outputs must equal the
# default allocator's and requests must be served from the slab.
if(TARGET memplan_torch)
  add_executable(memplan_torch_serve ${CMAKE_CURRENT_SOURCE_DIR}/torch_serving/torch_serve.cc)
  target_link_libraries(memplan_torch_serve PRIVATE memplan::torch)
  # Synthetic iterations in named RecordFunction scopes: order, deviation, safety.
  # refused_requests_test runs one program through this allocator and the
  # device replay allocator on the runtime tests' mock device.
  # torch_plans_test: plan files learnt by one allocator and served by another.
  add_executable(memplan_torch_allocator_tests ${CMAKE_CURRENT_SOURCE_DIR}/torch_serving/torch_allocator_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/torch_serving/refused_requests_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/torch_serving/torch_plans_test.cc)
  target_link_libraries(memplan_torch_allocator_tests PRIVATE memplan::torch GTest::gtest GTest::gtest_main)
  target_include_directories(memplan_torch_allocator_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/runtime)
  gtest_discover_tests(memplan_torch_allocator_tests PROPERTIES LABELS torch DISCOVERY_TIMEOUT 60)
  if(MEMPLAN_PYTHON_HAS_TORCHVISION)
    set(_memplan_torchscript ${CMAKE_CURRENT_BINARY_DIR}/torch_serving/resnet18_64.pt)
    add_test(NAME torch_serving.trace_resnet18
      COMMAND ${MEMPLAN_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/torch_serving/make_torchscript.py
        resnet18 64 ${_memplan_torchscript})
    set_tests_properties(torch_serving.trace_resnet18 PROPERTIES LABELS torch TIMEOUT 120
      FIXTURES_SETUP memplan_torchscript_resnet18)
    foreach(threads 1 2)
      add_test(NAME torch_serving.allocator_matches_default_${threads}_threads
        COMMAND memplan_torch_serve ${_memplan_torchscript} --size 64 --threads ${threads} --iterations 6)
      set_tests_properties(torch_serving.allocator_matches_default_${threads}_threads PROPERTIES
        LABELS torch TIMEOUT 120 FIXTURES_REQUIRED memplan_torchscript_resnet18)
    endforeach()
    # mimalloc behind the slab (MEMPLAN_BACKING): the same bytes.
    if(MEMPLAN_WITH_MIMALLOC)
      add_test(NAME torch_serving.allocator_matches_default_mimalloc
        COMMAND memplan_torch_serve ${_memplan_torchscript} --size 64 --threads 2 --iterations 6)
      set_tests_properties(torch_serving.allocator_matches_default_mimalloc PROPERTIES
        LABELS torch TIMEOUT 120 FIXTURES_REQUIRED memplan_torchscript_resnet18 ENVIRONMENT MEMPLAN_BACKING=mimalloc)
    endif()
    # Six input shapes in turn, each pass marked with the shape key of its
    # input (one plan per shape); and four batch sizes with plain marks (one
    # upper-bound plan, grown when a larger batch arrives).
    add_test(NAME torch_serving.allocator_rotating_shapes_keyed
      COMMAND memplan_torch_serve ${_memplan_torchscript} --shapes 1x64,2x64,1x80,3x64,2x80,4x64 --threads 1
        --iterations 4)
    add_test(NAME torch_serving.allocator_rotating_batches_upper_bound
      COMMAND memplan_torch_serve ${_memplan_torchscript} --shapes 1x64,2x64,3x64,4x64 --threads 1 --iterations 4
        --plain-marks)
    # Plan files across processes (MEMPLAN_SAVE_PLANS, MEMPLAN_PLANS): a second
    # run of the command profiles nothing; another command line or input size
    # is refused or falls back.
    add_test(NAME torch_serving.plans_across_processes
      COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/torch_serving/plans_torch_serve.sh $<TARGET_FILE:memplan_torch_serve>
        ${_memplan_torchscript})
    set_tests_properties(torch_serving.allocator_rotating_shapes_keyed torch_serving.allocator_rotating_batches_upper_bound
      torch_serving.plans_across_processes
      PROPERTIES LABELS torch TIMEOUT 180 FIXTURES_REQUIRED memplan_torchscript_resnet18)
  endif()
endif()
