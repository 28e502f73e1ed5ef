# vidgraph-run: the headless workflow runner. The run_* sources form vidgraph_run_lib, which the
# product executable and the test runner (tests/cli: vidgraph-run-test, with test-only node types)
# both link, so the product never contains test nodes.
add_library(vidgraph_run_lib STATIC
  ${CMAKE_CURRENT_LIST_DIR}/history_command.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_commands.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_driver.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_launch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_logging.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_render.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_signals.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sweep_command.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sweep_plan.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sweep_report.cpp
  ${CMAKE_CURRENT_LIST_DIR}/user_file.cpp
)
target_include_directories(vidgraph_run_lib PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(vidgraph_run_lib
  PUBLIC vidgraph_engine
  PUBLIC nlohmann_json::nlohmann_json
  PRIVATE vidgraph_nodes_io vidgraph_interop CLI11::CLI11 spdlog::spdlog)
# --previews writes PNGs: only with the media helpers (OpenCV; no LibTorch).
if(TARGET vidgraph_nodes_media)
  target_sources(vidgraph_run_lib PRIVATE ${CMAKE_CURRENT_LIST_DIR}/run_previews.cpp)
  target_compile_definitions(vidgraph_run_lib PRIVATE VIDGRAPH_HAVE_PREVIEW_FILES)
  target_link_libraries(vidgraph_run_lib PRIVATE vidgraph_nodes_media)
endif()

add_executable(vidgraph-run ${CMAKE_CURRENT_LIST_DIR}/vidgraph_run_main.cpp)
target_compile_definitions(vidgraph-run PRIVATE VIDGRAPH_VERSION="${PROJECT_VERSION}")
target_link_libraries(vidgraph-run PRIVATE vidgraph_run_lib spdlog::spdlog)
if(TARGET vidgraph_nodes_media)
  target_sources(vidgraph-run PRIVATE ${CMAKE_CURRENT_LIST_DIR}/compare_command.cpp)
  target_compile_definitions(vidgraph-run PRIVATE VIDGRAPH_HAVE_COMPARE)
  target_link_libraries(vidgraph-run PRIVATE vidgraph_nodes_media)
endif()
# `vidgraph-run models` (the test runner goes without: it stays free of LibTorch and starts fast).
if(TARGET vidgraph_model_io)
  target_sources(vidgraph-run PRIVATE ${CMAKE_CURRENT_LIST_DIR}/run_models.cpp)
  target_compile_definitions(vidgraph-run PRIVATE VIDGRAPH_HAVE_MODEL_IO)
  target_link_libraries(vidgraph-run PRIVATE vidgraph_model_io nlohmann_json::nlohmann_json)
endif()
if(TARGET vidgraph_nodes)
  target_compile_definitions(vidgraph-run PRIVATE VIDGRAPH_HAVE_NODES)
  target_link_libraries(vidgraph-run PRIVATE vidgraph_nodes)
  # The session loads the plugin at run time; build it with the runner so the build tree works as is.
  if(TARGET vidgraph_attention)
    add_dependencies(vidgraph-run vidgraph_attention)
  endif()
endif()
