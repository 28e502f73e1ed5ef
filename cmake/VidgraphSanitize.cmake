# VIDGRAPH_SANITIZE=ON: AddressSanitizer + UndefinedBehaviorSanitizer on every C and C++ target (not
# the CUDA/HIP device code: configure with -DVIDGRAPH_GPU=off). Undefined behaviour aborts the
# process, so a test that triggers it fails. tests/CMakeLists.txt gives the suites the matching
# ASAN_OPTIONS/UBSAN_OPTIONS, and the build's own tools (the demo model) run with them too. Leak
# checking is off (Debian's LibTorch and Qt keep globals alive at exit), and so is the
# malloc/delete pairing check: Debian's SentencePiece (absl's flag registry, uninstrumented) frees
# with operator delete what it allocated with malloc when it loads.
option(VIDGRAPH_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
if(VIDGRAPH_SANITIZE)
  set(_vg_sanitize -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_vg_sanitize}>")
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fsanitize=address,undefined>")
  set(VIDGRAPH_SANITIZER_ENV
    "ASAN_OPTIONS=detect_leaks=0:detect_odr_violation=0:alloc_dealloc_mismatch=0:abort_on_error=1"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()
