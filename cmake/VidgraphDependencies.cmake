# Every dependency comes from a Debian 12 package; nothing is vendored or downloaded.
find_package(Threads REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
find_library(XXHASH_LIBRARY xxhash REQUIRED)
add_library(xxhash::xxhash UNKNOWN IMPORTED)
set_target_properties(xxhash::xxhash PROPERTIES IMPORTED_LOCATION ${XXHASH_LIBRARY}
                      INTERFACE_INCLUDE_DIRECTORIES ${XXHASH_INCLUDE_DIR})

find_package(Torch REQUIRED)
# LibTorch's imported targets carry its flags (ABI define); keep them off the Qt-only and
# engine-only targets by linking `vidgraph::torch` only where a layer may use LibTorch.
add_library(vidgraph_torch INTERFACE)
target_link_libraries(vidgraph_torch INTERFACE ${TORCH_LIBRARIES})
target_compile_options(vidgraph_torch INTERFACE ${TORCH_CXX_FLAGS})
add_library(vidgraph::torch ALIAS vidgraph_torch)

set(VIDGRAPH_QT_COMPONENTS Core)
if(VIDGRAPH_TESTS)
  list(APPEND VIDGRAPH_QT_COMPONENTS Test)
endif()
if(VIDGRAPH_GUI)
  list(APPEND VIDGRAPH_QT_COMPONENTS Gui Widgets)
endif()
if(VIDGRAPH_TESTS OR VIDGRAPH_GUI)
  find_package(Qt6 REQUIRED COMPONENTS ${VIDGRAPH_QT_COMPONENTS})
endif()

if(VIDGRAPH_MEDIA)
  # Debian's OpenCVConfig.cmake ships only in the all-modules libopencv-dev; import the three
  # modules we use from their own -dev packages instead.
  find_path(OPENCV_INCLUDE_DIR opencv2/imgcodecs.hpp PATH_SUFFIXES opencv4 REQUIRED)
  add_library(vidgraph_opencv INTERFACE)
  foreach(_m core imgproc imgcodecs)
    find_library(OPENCV_${_m}_LIBRARY opencv_${_m} REQUIRED)
    target_link_libraries(vidgraph_opencv INTERFACE ${OPENCV_${_m}_LIBRARY})
  endforeach()
  target_include_directories(vidgraph_opencv INTERFACE ${OPENCV_INCLUDE_DIR})
  add_library(vidgraph::opencv ALIAS vidgraph_opencv)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(FFMPEG REQUIRED IMPORTED_TARGET libavformat libavcodec libavutil libswscale)
endif()

# sentencepiece: models/t5 opens libsentencepiece at run time (its bundled protobuf clashes with
# LibTorch's; see models/t5/sentencepiece_library.h), so only its header is used, when present, to
# check the layout. Never link sentencepiece::sentencepiece into a program that also uses LibTorch.
find_path(SENTENCEPIECE_INCLUDE_DIR sentencepiece_processor.h)
find_library(SENTENCEPIECE_LIBRARY sentencepiece)
if(SENTENCEPIECE_INCLUDE_DIR AND SENTENCEPIECE_LIBRARY)
  add_library(sentencepiece::sentencepiece UNKNOWN IMPORTED)
  set_target_properties(sentencepiece::sentencepiece PROPERTIES IMPORTED_LOCATION ${SENTENCEPIECE_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${SENTENCEPIECE_INCLUDE_DIR})
endif()
