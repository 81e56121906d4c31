// Reading <bundle>/config.json: JSON syntax errors become one line with
// the line and column of the problem.
#include <string_view>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "spec/spec.hpp"

namespace crx::spec {
namespace {

// nlohmann's what() is "[json.exception.parse_error.101] parse error at
// line 3, column 5: syntax error ..."; keep the part a person needs.
std::string describe_parse_error(const nlohmann::json::parse_error& e) {
  std::string_view what = e.what();
  auto colon = what.find(": ", what.find("column"));
  std::string detail(colon == std::string_view::npos ? what : what.substr(colon + 2));
  for (auto& c : detail)
    if (c == '\n' || c == '\r') c = ' ';
  std::string where;
  auto at = what.find("at line ");
  if (at != std::string_view::npos && colon != std::string_view::npos) {
    where = std::string(what.substr(at, colon - at));  // "at line 3, column 5"
    auto comma = where.find(", column");
    if (comma != std::string::npos) where.erase(comma, 1);
  } else {
    where = "at byte " + std::to_string(e.byte);
  }
  return "parse error " + where + ": " + detail;
}

}  // namespace

Spec parse_spec_text(const std::string& text, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(source + ": " + describe_parse_error(e));
  } catch (const nlohmann::json::out_of_range& e) {
    // a number too large for a double ("1e999") is no parse_error
    std::string_view what = e.what();
    auto end = what.find("] ");
    throw Error(source + ": " + std::string(end == what.npos ? what : what.substr(end + 2)));
  }
  return parse_spec(doc, source);
}

Spec load_spec(const std::string& bundle_dir) {
  return parse_spec_text(read_file(bundle_dir + "/config.json"), "config.json");
}

}  // namespace crx::spec
