# CTest smoke run of vidgraph-train-bench (cmake -DPROGRAM=... -DOUT=... -P this file): the tiny
# config on the CPU must exit 0 and report a finite step time and peak memory for every method,
# for a training step and for a distillation step (--mode dmd).
foreach(var PROGRAM OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_train_bench.cmake needs -D${var}=...")
  endif()
endforeach()
# Runs the bench with ARGN; every method must report a positive step time and peak memory and a
# finite loss. `what` prefixes the messages ("" or "dmd ").
function(check_bench what)
  file(REMOVE "${OUT}")
  execute_process(COMMAND "${PROGRAM}" ${ARGN} --out "${OUT}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
  if(NOT rc EQUAL 0)
    string(JOIN " " args ${ARGN})
    message(FATAL_ERROR "vidgraph-train-bench ${args} exited with ${rc}\n${stderr}")
  endif()
  file(READ "${OUT}" json)
  foreach(method full vsa sla_star)
    foreach(key median_ms peak_gib)
      string(JSON value ERROR_VARIABLE err GET "${json}" methods ${method} ${key})
      if(err OR NOT value MATCHES "^[0-9.eE+-]+$" OR value EQUAL 0)
        message(FATAL_ERROR "${what}methods.${method}.${key}: expected a positive number, got '${value}' ${err}")
      endif()
    endforeach()
    string(JSON finite GET "${json}" methods ${method} finite)
    if(NOT finite STREQUAL "ON")
      message(FATAL_ERROR "${what}methods.${method}: a loss is not finite")
    endif()
  endforeach()
endfunction()

check_bench("" --repeats 2 --warmup 1 --checkpointing)
# One distillation step per student method.
check_bench("dmd " --mode dmd --repeats 1 --warmup 0 --critic-updates 1 --rank 4)
execute_process(COMMAND "${PROGRAM}" --grid 4,x,4 RESULT_VARIABLE rc ERROR_VARIABLE stderr OUTPUT_QUIET)
if(rc EQUAL 0 OR NOT stderr MATCHES "--grid")
  message(FATAL_ERROR "a bad --grid was not refused with a message (rc ${rc}): ${stderr}")
endif()
