#include "spec/json_field.hpp"

#include <cmath>

#include "common/error.hpp"

namespace crx::spec::detail {

const char* json_type_name(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return "boolean";
    case nlohmann::json::value_t::string: return "string";
    case nlohmann::json::value_t::array: return "array";
    case nlohmann::json::value_t::object: return "object";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return "number";
    default: return "binary";
  }
}

static bool is_identifier(std::string_view key) {
  if (key.empty()) return false;
  for (size_t i = 0; i < key.size(); ++i) {
    char c = key[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0)) return false;
  }
  return true;
}

std::string child_path(const std::string& parent, std::string_view key) {
  if (is_identifier(key)) return parent + "." + std::string(key);
  return parent + "[" + nlohmann::json(std::string(key)).dump() + "]";
}

void Field::fail(std::string_view message) const {
  std::string line = *source_ + ": ";
  if (!path_.empty()) line += path_ + ": ";
  line += message;
  throw Error(line);
}

std::string Field::out_of_range(const std::string& v, const std::string& lo,
                                const std::string& hi) {
  return "value " + v + " out of range [" + lo + ", " + hi + "]";
}

void Field::expect_object() const {
  if (!value_->is_object()) fail(std::string("expected object, got ") + json_type_name(*value_));
}

std::optional<Field> Field::member(std::string_view key) const {
  expect_object();
  auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return Field(*it, child_path(path_, key), *source_);
}

Field Field::required(std::string_view key) const {
  auto f = member(key);
  if (!f) Field(*value_, child_path(path_, key), *source_).fail("required field missing");
  return *f;
}

void Field::for_each_member(
    const std::function<void(const std::string&, const Field&)>& fn) const {
  expect_object();
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    if (it->is_null()) continue;
    fn(it.key(), Field(*it, child_path(path_, it.key()), *source_));
  }
}

void Field::expect_array() const {
  if (!value_->is_array()) fail(std::string("expected array, got ") + json_type_name(*value_));
}

size_t Field::size() const {
  expect_array();
  return value_->size();
}

Field Field::element(size_t index) const {
  expect_array();
  return Field((*value_)[index], path_ + "[" + std::to_string(index) + "]", *source_);
}

void Field::for_each_element(const std::function<void(const Field&)>& fn) const {
  size_t n = size();
  for (size_t i = 0; i < n; ++i) fn(element(i));
}

std::string Field::as_string() const {
  if (!value_->is_string()) fail(std::string("expected string, got ") + json_type_name(*value_));
  return value_->get<std::string>();
}

bool Field::as_bool() const {
  if (!value_->is_boolean())
    fail(std::string("expected boolean, got ") + json_type_name(*value_));
  return value_->get<bool>();
}

static void expect_integer(const Field& f) {
  const auto& v = f.json();
  if (v.is_number_float()) f.fail("expected integer, got number " + v.dump());
  if (!v.is_number_integer()) f.fail(std::string("expected integer, got ") + json_type_name(v));
}

int64_t Field::as_int64() const {
  expect_integer(*this);
  if (value_->is_number_unsigned()) {
    uint64_t v = value_->get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(out_of_range(std::to_string(v), std::to_string(std::numeric_limits<int64_t>::min()),
                        std::to_string(std::numeric_limits<int64_t>::max())));
    return static_cast<int64_t>(v);
  }
  return value_->get<int64_t>();
}

uint64_t Field::as_uint64() const {
  expect_integer(*this);
  if (value_->is_number_unsigned()) return value_->get<uint64_t>();
  // Documents built in code hold small values as signed integers.
  int64_t v = value_->get<int64_t>();
  if (v < 0) fail("expected a non-negative integer, got " + std::to_string(v));
  return static_cast<uint64_t>(v);
}

std::vector<std::string> Field::as_string_list() const {
  std::vector<std::string> out;
  for_each_element([&](const Field& e) { out.push_back(e.as_string()); });
  return out;
}

std::map<std::string, std::string> Field::as_string_map() const {
  std::map<std::string, std::string> out;
  for_each_member([&](const std::string& key, const Field& v) { out[key] = v.as_string(); });
  return out;
}

std::optional<bool> optional_bool(const Field& obj, std::string_view key) {
  if (auto f = obj.member(key)) return f->as_bool();
  return std::nullopt;
}

std::string string_or_empty(const Field& obj, std::string_view key) {
  if (auto f = obj.member(key)) return f->as_string();
  return {};
}

}  // namespace crx::spec::detail
