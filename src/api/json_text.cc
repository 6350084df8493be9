#include "api/json_text.h"

#include <vector>

namespace tessera::api {

using nlohmann::json;

namespace {

// Length of the well-formed UTF-8 sequence at the start of `s`, or 0 when there is none.
size_t Utf8SequenceLength(std::string_view s) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (b(i) < 0x80 || b(i) > 0xBF) return 0;
  }
  return n;
}

// Builds the DOM while tracking where it is, so that every refusal names the field.
class BoundedSax {
 public:
  explicit BoundedSax(const JsonLimits& limits) : limits_(limits) {}

  bool null() { return Value(json(nullptr)); }
  bool boolean(bool v) { return Value(json(v)); }
  bool number_integer(json::number_integer_t v) { return Value(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return Value(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) { return Value(json(v)); }
  bool string(json::string_t& v) {
    if (v.size() > limits_.max_string_bytes) {
      return Fail(Path() + ": a string of " + std::to_string(v.size()) +
                  " bytes is longer than the limit of " + std::to_string(limits_.max_string_bytes));
    }
    return Value(json(std::move(v)));
  }
  bool binary(json::binary_t&) { return Fail(Path() + ": binary values are not JSON"); }

  bool start_object(std::size_t) { return Open(json::object()); }
  bool key(json::string_t& k) {
    Frame& f = stack_.back();
    const bool duplicate = f.value->contains(k);
    f.key = std::move(k);
    f.has_key = true;
    if (f.key.size() > limits_.max_string_bytes) {
      return Fail(Path() + ": a key of " + std::to_string(f.key.size()) + " bytes is too long");
    }
    if (duplicate) return Fail(Path() + ": duplicate key");
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(std::size_t) { return Open(json::array()); }
  bool end_array() { return Close(); }

  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) {
    const std::string where = stack_.empty() ? "body" : Path();
    if (ex.id == 406) {
      return Fail(where + ": number out of range (at byte " + std::to_string(position) + ")");
    }
    std::string what = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: <reason>"
    if (const size_t colon = what.find(": "); colon != std::string::npos) {
      what = what.substr(colon + 2);
    }
    return Fail(where + ": malformed JSON at byte " + std::to_string(position) + ": " +
                SafeText(what, 200));
  }

  Result<json> Take() {
    if (!error_.empty()) return InvalidArgument(error_);
    return std::move(root_);
  }

 private:
  struct Frame {
    json* value;
    std::string key;
    bool has_key = false;
  };

  bool Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }

  // "spec.tasks[0].name"; "body" at the top.
  std::string Path() const {
    std::string out;
    for (size_t i = 0; i < stack_.size(); ++i) {
      const Frame& f = stack_[i];
      if (f.value->is_array()) {
        // An inner frame's array already holds the element being read; the innermost one is
        // about to read its next.
        const size_t n = f.value->size();
        out += "[" + std::to_string(i + 1 < stack_.size() && n > 0 ? n - 1 : n) + "]";
      } else if (f.has_key) {
        out += (out.empty() ? "" : ".") + SafeText(f.key, 64);
      }
    }
    return out.empty() ? "body" : out;
  }

  json* Place(json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& f = stack_.back();
    if (f.value->is_array()) {
      f.value->push_back(std::move(v));
      return &f.value->back();
    }
    json* slot = &(*f.value)[f.key];
    *slot = std::move(v);
    return slot;
  }

  bool Value(json v) {
    Place(std::move(v));
    return true;
  }

  bool Open(json v) {
    if (static_cast<int>(stack_.size()) >= limits_.max_depth) {
      return Fail(Path() + ": nested deeper than " + std::to_string(limits_.max_depth) + " levels");
    }
    json* slot = Place(std::move(v));
    stack_.push_back({slot, {}, false});
    return true;
  }

  bool Close() {
    stack_.pop_back();
    return true;
  }

  const JsonLimits& limits_;
  json root_;
  std::vector<Frame> stack_;
  std::string error_;
};

}  // namespace

Result<json> ParseJson(std::string_view text, const JsonLimits& limits) {
  BoundedSax sax(limits);
  try {
    const bool ok = json::sax_parse(text, &sax);
    Result<json> out = sax.Take();
    if (ok && !out.ok()) return out.status();
    if (!ok && out.ok()) return InvalidArgument("body: malformed JSON");
    return out;
  } catch (const std::exception& e) {
    return InvalidArgument("body: malformed JSON: " + SafeText(e.what(), 200));
  }
}

Result<json> ParseJson(std::string_view text, int max_depth) {
  JsonLimits limits;
  limits.max_depth = max_depth;
  return ParseJson(text, limits);
}

bool ValidUtf8(std::string_view text) {
  while (!text.empty()) {
    const size_t n = Utf8SequenceLength(text);
    if (n == 0) return false;
    text.remove_prefix(n);
  }
  return true;
}

std::string SafeText(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 3);
  while (!text.empty()) {
    const size_t n = Utf8SequenceLength(text);
    const std::string_view piece = n == 0 ? std::string_view("\xEF\xBF\xBD") : text.substr(0, n);
    if (out.size() + piece.size() > max_bytes) {
      out += "...";
      break;
    }
    out += piece;
    text.remove_prefix(n == 0 ? 1 : n);
  }
  return out;
}

std::string DumpJson(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace tessera::api
