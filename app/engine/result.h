// Errors as values for the engine and the layers above it.
//
// Contract: an Error names the node it concerns (empty node_id = the document or the run as a whole)
// and carries one actionable sentence ("what failed and what to do"). Result<T> holds either a value
// or an Error, never both; reading the wrong alternative throws std::logic_error (a programming bug,
// not a user error).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace vidgraph::engine {

struct Error {
  std::string node_id;  // empty when the error is not about one node
  std::string message;  // a sentence: what failed and what to do

  Error() = default;
  Error(std::string node, std::string text) : node_id(std::move(node)), message(std::move(text)) {}

  // "node 'sampler': message" or just "message" when node_id is empty.
  std::string to_string() const {
    return node_id.empty() ? message : "node '" + node_id + "': " + message;
  }
};

// Shorthand for an error that concerns no particular node.
inline Error make_error(std::string message) { return Error{std::string(), std::move(message)}; }

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Error error) : data_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return data_.index() == 0; }
  explicit operator bool() const { return ok(); }

  const T& value() const& { check_value(); return std::get<0>(data_); }
  T& value() & { check_value(); return std::get<0>(data_); }
  T&& value() && { check_value(); return std::get<0>(std::move(data_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  const Error& error() const {
    if (ok()) throw std::logic_error("Result::error() called on a successful result");
    return std::get<1>(data_);
  }

 private:
  void check_value() const {
    if (!ok()) throw std::logic_error("Result::value() called on an error: " + std::get<1>(data_).to_string());
  }
  std::variant<T, Error> data_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : failed_(true), error_(std::move(error)) {}  // NOLINT: implicit on purpose

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const {
    if (!failed_) throw std::logic_error("Result::error() called on a successful result");
    return error_;
  }

 private:
  bool failed_ = false;
  Error error_;
};

using Status = Result<void>;

}  // namespace vidgraph::engine
