// Private to runtime/spec: a JSON value that knows where it sits in its
// document, so that every type or range error names the exact JSON path
// ("config.json: .process.rlimits[0].soft: expected integer, got string").
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace crx::spec::detail {

class Field {
 public:
  Field(const nlohmann::json& value, std::string path, const std::string& source)
      : value_(&value), path_(std::move(path)), source_(&source) {}

  const nlohmann::json& json() const { return *value_; }
  const std::string& path() const { return path_; }
  const std::string& source() const { return *source_; }
  bool is_null() const { return value_->is_null(); }

  // Throws crx::Error("<source>: <path>: <message>").
  [[noreturn]] void fail(std::string_view message) const;

  // Object access. A member that is absent or JSON null counts as absent,
  // as Go's encoding/json (runc, containerd) treats it.
  void expect_object() const;
  std::optional<Field> member(std::string_view key) const;
  Field required(std::string_view key) const;
  // Calls fn(key, value) for every non-null member of an object.
  void for_each_member(const std::function<void(const std::string&, const Field&)>& fn) const;

  // Array access.
  void expect_array() const;
  size_t size() const;
  Field element(size_t index) const;
  void for_each_element(const std::function<void(const Field&)>& fn) const;

  // Scalars with type checking.
  std::string as_string() const;
  bool as_bool() const;
  int64_t as_int64() const;
  uint64_t as_uint64() const;
  template <class T>
  T as() const {
    if constexpr (std::is_signed_v<T>) {
      int64_t v = as_int64();
      if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
        fail(out_of_range(std::to_string(v), std::to_string(std::numeric_limits<T>::min()),
                          std::to_string(std::numeric_limits<T>::max())));
      return static_cast<T>(v);
    } else {
      uint64_t v = as_uint64();
      if (v > std::numeric_limits<T>::max())
        fail(out_of_range(std::to_string(v), "0", std::to_string(std::numeric_limits<T>::max())));
      return static_cast<T>(v);
    }
  }
  std::vector<std::string> as_string_list() const;
  std::map<std::string, std::string> as_string_map() const;

 private:
  static std::string out_of_range(const std::string& v, const std::string& lo,
                                  const std::string& hi);
  const nlohmann::json* value_;
  std::string path_;
  const std::string* source_;
};

// "string", "number", "object", ... as used in "expected X, got Y".
const char* json_type_name(const nlohmann::json& value);
// ".key" for identifier-like keys, "[\"odd.key\"]" otherwise.
std::string child_path(const std::string& parent, std::string_view key);

// Optional scalar helpers: assign only when the member is present.
template <class T>
std::optional<T> optional_int(const Field& obj, std::string_view key) {
  if (auto f = obj.member(key)) return f->as<T>();
  return std::nullopt;
}
std::optional<bool> optional_bool(const Field& obj, std::string_view key);
std::string string_or_empty(const Field& obj, std::string_view key);

}  // namespace crx::spec::detail
