// The message a call throws, or "" when it returns: what the suites' error-case tests compare.
// LibTorch's errors give their sentence without the C++ backtrace.
#pragma once

#include <exception>
#include <functional>
#include <string>

#include <c10/util/Exception.h>

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}
