# CTest smoke run of vidgraph-model-bench (cmake -DPROGRAM=... -DOUT=... -P this file): the tiny
# config on the CPU must exit 0 and write JSON with a finite forward and a breakdown for every
# method, a block-swap forward, a timed VAE decode (untiled and tiled) and a TAEHV decode; a bad
# --grid must fail with a message.
foreach(var PROGRAM OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_model_bench.cmake needs -D${var}=...")
  endif()
endforeach()

file(REMOVE "${OUT}")
execute_process(
  COMMAND "${PROGRAM}" --config tiny --device cpu --repeats 1 --warmup 0 --vae-repeats 1 --vae-warmup 0
          --vae-tiled --taehv --offload-blocks 1 --out "${OUT}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "vidgraph-model-bench exited with ${rc}\n${stderr}")
endif()
file(READ "${OUT}" json)
if(NOT stdout MATCHES "vidgraph-model-bench")
  message(FATAL_ERROR "the JSON was not printed on stdout:\n${stdout}")
endif()

function(expect_number json)
  string(JSON value ERROR_VARIABLE err GET "${json}" ${ARGN})
  if(err OR NOT value MATCHES "^[0-9.eE+-]+$")
    message(FATAL_ERROR "${ARGN}: expected a number, got '${value}' ${err}")
  endif()
  set(last_value "${value}" PARENT_SCOPE)
endfunction()

expect_number("${json}" dit block_swap 1 median_ms)

foreach(method full vsa sla_star libtorch_dense)
  expect_number("${json}" dit methods ${method} median_ms)
  expect_number("${json}" dit methods ${method} min_ms)
  expect_number("${json}" dit methods ${method} max_ms)
  string(JSON finite ERROR_VARIABLE err GET "${json}" dit methods ${method} finite)
  if(NOT finite STREQUAL "ON")
    message(FATAL_ERROR "dit.methods.${method}: the forward output is not finite (${finite} ${err})")
  endif()
  expect_number("${json}" dit breakdown attention ${method} median_ms)
  expect_number("${json}" dit breakdown per_method ${method} other_ms)
endforeach()
expect_number("${json}" dit breakdown linear tflops)
expect_number("${json}" dit model weights_gib)
expect_number("${json}" vae decode bf16 untiled median_ms)
expect_number("${json}" vae decode bf16 tiled median_ms)
string(JSON frames GET "${json}" vae decode bf16 untiled video 2)
if(NOT frames EQUAL 13)
  message(FATAL_ERROR "VAE decode of 4 latent frames gave ${frames} frames, expected 13")
endif()

expect_number("${json}" taehv chunks 4 median_ms)
string(JSON taehv_frames GET "${json}" taehv chunks 4 video 2)
if(NOT taehv_frames EQUAL 13)
  message(FATAL_ERROR "TAEHV decode of 4 latent frames gave ${taehv_frames} frames, expected 13")
endif()

execute_process(COMMAND "${PROGRAM}" --config tiny --device cpu --grid 4,6 --skip-vae
  RESULT_VARIABLE bad_rc OUTPUT_VARIABLE bad_out ERROR_VARIABLE bad_err)
if(bad_rc EQUAL 0 OR NOT bad_err MATCHES "--grid '4,6' is not three positive integers")
  message(FATAL_ERROR "a bad --grid should fail with a clear message; got ${bad_rc}: ${bad_err}")
endif()
message(STATUS "vidgraph-model-bench smoke run OK")
