# Resolves VIDGRAPH_GPU (auto|hip|cuda|off) into VIDGRAPH_GPU_BACKEND (hip, cuda or empty).
#  - cuda: enables CMake's CUDA language; CMAKE_CUDA_ARCHITECTURES defaults to sm_80 + sm_90a
#    (override it, e.g. -DCMAKE_CUDA_ARCHITECTURES=90a).
#  - hip: finds hipcc (VIDGRAPH_HIPCC overrides). The kernels compile through hipcc custom commands
#    rather than CMake's HIP language, so a bare hipcc (Debian's 5.2 package, no full ROCm CMake
#    setup) is enough. CMAKE_HIP_ARCHITECTURES (default gfx90a;gfx940) picks the targets, e.g.
#    -DCMAKE_HIP_ARCHITECTURES="gfx942;gfx950".
#  - auto: cuda when nvcc works, else hip when hipcc is found, else off.
set(VIDGRAPH_GPU_BACKEND "")
string(TOLOWER "${VIDGRAPH_GPU}" _vg_gpu)
if(_vg_gpu STREQUAL "auto")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(_vg_gpu cuda)
  else()
    find_program(VIDGRAPH_HIPCC hipcc)
    if(VIDGRAPH_HIPCC)
      set(_vg_gpu hip)
    else()
      set(_vg_gpu off)
    endif()
  endif()
endif()
if(_vg_gpu STREQUAL "cuda")
  # VIDGRAPH_CUDA_ARCHITECTURES is what the kernels are built for: a CUDA LibTorch's CMake config
  # (found before this file) overrides CMAKE_CUDA_ARCHITECTURES with OFF, so the user's cache value
  # is read back here and applied to our targets as their CUDA_ARCHITECTURES property.
  set(VIDGRAPH_CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
  if(VIDGRAPH_CUDA_ARCHITECTURES STREQUAL "" OR VIDGRAPH_CUDA_ARCHITECTURES STREQUAL "OFF")
    set(VIDGRAPH_CUDA_ARCHITECTURES "$CACHE{CMAKE_CUDA_ARCHITECTURES}")
  endif()
  if(VIDGRAPH_CUDA_ARCHITECTURES STREQUAL "" OR VIDGRAPH_CUDA_ARCHITECTURES STREQUAL "OFF")
    set(VIDGRAPH_CUDA_ARCHITECTURES 80-real 90a-real)
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES ${VIDGRAPH_CUDA_ARCHITECTURES})
  endif()
  message(STATUS "Vidgraph CUDA kernels for: ${VIDGRAPH_CUDA_ARCHITECTURES}")
  enable_language(CUDA)
  set(VIDGRAPH_GPU_BACKEND cuda)
elseif(_vg_gpu STREQUAL "hip")
  find_program(VIDGRAPH_HIPCC hipcc PATHS /opt/rocm/bin ENV ROCM_PATH PATH_SUFFIXES bin)
  if(NOT VIDGRAPH_HIPCC)
    message(FATAL_ERROR "VIDGRAPH_GPU=hip needs hipcc: install ROCm (or Debian's hipcc package) "
                        "or pass -DVIDGRAPH_HIPCC=/path/to/hipcc.")
  endif()
  if(NOT DEFINED CMAKE_HIP_ARCHITECTURES)
    set(CMAKE_HIP_ARCHITECTURES gfx90a gfx940)
  endif()
  set(VIDGRAPH_GPU_BACKEND hip)
elseif(NOT _vg_gpu STREQUAL "off")
  message(FATAL_ERROR "VIDGRAPH_GPU must be auto, hip, cuda or off (got '${VIDGRAPH_GPU}').")
endif()
message(STATUS "Vidgraph GPU backend: ${VIDGRAPH_GPU_BACKEND}")
