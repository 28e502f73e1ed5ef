# GPU path of the attention plugin (included by ../CMakeLists.txt after vidgraph_attention_core).
# Built when the kernels are (VIDGRAPH_GPU_BACKEND) AND LibTorch has the matching GPU backend
# (Debian's LibTorch 1.13 is CPU-only: there the kernels build alone and this path is skipped).
set(_vg_torch_gpu OFF)
if(VIDGRAPH_GPU_BACKEND STREQUAL "cuda" AND (TARGET torch_cuda OR TARGET c10_cuda))
  set(_vg_torch_gpu ON)
elseif(VIDGRAPH_GPU_BACKEND STREQUAL "hip" AND (TARGET torch_hip OR TARGET c10_hip))
  set(_vg_torch_gpu ON)
endif()
if(TARGET vidgraph_kernels AND _vg_torch_gpu)
  target_sources(vidgraph_attention_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gpu_path.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_staging.cpp ${CMAKE_CURRENT_LIST_DIR}/gpu_dit_kernels.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_vae_kernels.cpp)
  target_link_libraries(vidgraph_attention_core PUBLIC vidgraph_kernels)
  target_compile_definitions(vidgraph_attention_core PUBLIC VIDGRAPH_ATTENTION_GPU)
  message(STATUS "Attention plugin: GPU path (${VIDGRAPH_GPU_BACKEND}) enabled")
elseif(VIDGRAPH_GPU_BACKEND)
  message(STATUS "Attention plugin: GPU path not built (LibTorch has no ${VIDGRAPH_GPU_BACKEND} backend)")
endif()
