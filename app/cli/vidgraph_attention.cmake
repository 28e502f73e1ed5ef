# vidgraph-attention: the attention tool (run, methods, --version) and the bench subcommand.
set(_vg_attention_tool_sources
  ${CMAKE_CURRENT_LIST_DIR}/attention_main.cpp
  ${CMAKE_CURRENT_LIST_DIR}/attention_report.cpp
  ${CMAKE_CURRENT_LIST_DIR}/attention_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/attention_tool.cpp
)
# Bench hook (owned by the kernels engineer): attention_bench.{h,cpp} join the tool when present.
# attention_bench.h declares: CLI::App* vidgraph::cli::add_attention_bench_command(CLI::App&, int* exit_code)
set(_vg_attention_bench ${CMAKE_CURRENT_LIST_DIR}/attention_bench.cpp)
if(EXISTS ${_vg_attention_bench})
  list(APPEND _vg_attention_tool_sources ${_vg_attention_bench})
endif()
add_executable(vidgraph-attention ${_vg_attention_tool_sources})
if(EXISTS ${_vg_attention_bench})
  target_compile_definitions(vidgraph-attention PRIVATE VIDGRAPH_HAVE_BENCH)
endif()
target_compile_definitions(vidgraph-attention PRIVATE VIDGRAPH_VERSION="${PROJECT_VERSION}")
target_link_libraries(vidgraph-attention PRIVATE vidgraph_plugin_api vidgraph_engine vidgraph_model_io vidgraph_nodes_io vidgraph_device_memory vidgraph::torch
  spdlog::spdlog nlohmann_json::nlohmann_json CLI11::CLI11)
# The plugin is loaded at run time; build it with the tool so `vidgraph-attention` works in the tree.
if(TARGET vidgraph_attention)
  add_dependencies(vidgraph-attention vidgraph_attention)
endif()
