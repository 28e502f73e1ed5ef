// Type-erased values that flow between nodes (images, latents, models, ...).
//
// Contract: the engine never looks inside a Value. `type` is the port value-type name ("IMAGE",
// "LATENT", "MODEL", ...), `data` owns an immutable C++ object, `cpp_type` records which C++ type
// it is so value_as<T>() can refuse a wrong cast, and `bytes` is the caller's estimate of the memory
// the object holds (host + device); it feeds the result cache's byte budget, so be honest for big
// objects (a model's weights, a video's frames). Values are cheap to copy (shared ownership) and must
// be treated as read-only by every node: a node that wants to change data makes a new object.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <typeinfo>
#include <utility>

namespace vidgraph::engine {

struct Value {
  std::string type;                      // port value-type name, e.g. "IMAGE"
  std::shared_ptr<const void> data;      // the object; null = empty value
  const std::type_info* cpp_type = nullptr;
  std::size_t bytes = 0;                 // memory estimate for the cache budget

  bool empty() const { return data == nullptr; }
};

// Output port name → value (what a node's compute returns; also its inputs, keyed by input port).
using ValueMap = std::map<std::string, Value>;

// Wraps a copy (or moved) object. `bytes` defaults to sizeof(T); pass the real size for big objects.
template <class T>
Value make_value(std::string type, T object, std::size_t bytes = sizeof(T)) {
  Value v;
  v.type = std::move(type);
  v.data = std::make_shared<const T>(std::move(object));
  v.cpp_type = &typeid(T);
  v.bytes = bytes;
  return v;
}

// Wraps an object that is already shared (no copy).
template <class T>
Value make_value_shared(std::string type, std::shared_ptr<const T> object, std::size_t bytes = sizeof(T)) {
  Value v;
  v.type = std::move(type);
  v.data = std::move(object);
  v.cpp_type = &typeid(T);
  v.bytes = bytes;
  return v;
}

// The object if the value holds a T, else nullptr (empty value or another C++ type).
template <class T>
const T* value_as(const Value& v) {
  if (!v.data || !v.cpp_type || *v.cpp_type != typeid(T)) return nullptr;
  return static_cast<const T*>(v.data.get());
}

// Shared ownership of the object if the value holds a T, else null.
template <class T>
std::shared_ptr<const T> value_shared(const Value& v) {
  if (!value_as<T>(v)) return nullptr;
  return std::static_pointer_cast<const T>(v.data);
}

}  // namespace vidgraph::engine
