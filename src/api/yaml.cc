#include "api/yaml.h"

#include <yaml.h>

#include <cerrno>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "api/json_text.h"

namespace tessera::api {

using nlohmann::json;

namespace {

constexpr int kMaxYamlDepth = 64;
constexpr int64_t kMaxYamlNodes = 1'000'000;
// What a manifest may expand to (aliases make a small text large) and the longest one value.
constexpr int64_t kMaxYamlBytes = 32 << 20;
constexpr size_t kMaxYamlString = 256 << 10;

// ---- YAML to JSON ---------------------------------------------------------------------------

// YAML 1.2 core schema: [-+]?[0-9]+ is an integer.
bool IsYamlInt(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// YAML 1.2 core schema: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? is a float.
bool IsYamlFloat(std::string_view s) {
  auto digits = [&](size_t i) {
    size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    return j;
  };
  size_t i = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i < s.size() && s[i] == '.') {
    const size_t j = digits(i + 1);
    if (j == i + 1) return false;
    i = j;
  } else {
    const size_t j = digits(i);
    if (j == i) return false;
    i = j;
    if (i < s.size() && s[i] == '.') i = digits(i + 1);
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    const size_t j = digits(i);
    if (j == i) return false;
    i = j;
  }
  return i == s.size();
}

json PlainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (IsYamlInt(s)) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0) return static_cast<int64_t>(v);
    return s;  // out of range: left as text, reported where a number is expected
  }
  if (IsYamlFloat(s)) {
    const double d = std::strtod(s.c_str(), nullptr);
    if (std::isfinite(d)) return d;
  }
  return s;
}

// YAML text to JSON values on libyaml's event parser (yaml-cpp 0.7's loader allocates without
// end on some inputs, valid or not, e.g. `"",`). Bounded: nesting, nodes and bytes produced
// (aliases count each time they are used), the length of one value, UTF-8.
class Loader {
 public:
  explicit Loader(std::string_view text) : text_(text) {
    ok_ = yaml_parser_initialize(&parser_) != 0;
    if (ok_) {
      yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                   text.size());
    }
  }
  ~Loader() {
    if (ok_) yaml_parser_delete(&parser_);
  }
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  Result<std::vector<json>> Documents() {
    if (!ok_) return Internal("YAML: cannot start the parser");
    std::vector<json> out;
    Event e;
    TESSERA_RETURN_IF_ERROR(Next(&e));  // stream start
    for (;;) {
      TESSERA_RETURN_IF_ERROR(Next(&e));
      if (e.get().type == YAML_STREAM_END_EVENT) return out;
      if (e.get().type != YAML_DOCUMENT_START_EVENT) return InvalidArgument("YAML: malformed");
      anchors_.clear();  // anchors are per document
      TESSERA_RETURN_IF_ERROR(Next(&e));
      Result<Value> v = Node(e, 0);
      if (!v.ok()) return v.status();
      out.push_back(std::move(v->value));
      TESSERA_RETURN_IF_ERROR(Next(&e));  // document end
    }
  }

 private:
  // One event, deleted when it goes or is replaced.
  class Event {
   public:
    Event() = default;
    ~Event() { Reset(); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    yaml_event_t& get() { return event_; }
    yaml_event_t* Fresh() {
      Reset();
      return &event_;
    }
    void Taken() { held_ = true; }

   private:
    void Reset() {
      if (held_) yaml_event_delete(&event_);
      held_ = false;
    }
    yaml_event_t event_{};
    bool held_ = false;
  };
  struct Value {
    json value;
    int64_t nodes = 0;
    int64_t bytes = 0;
  };

  Status Next(Event* e) {
    yaml_event_t* raw = e->Fresh();
    if (yaml_parser_parse(&parser_, raw) == 0) {
      if (parser_.error == YAML_READER_ERROR) {
        // Bytes that are not text: the reader knows the offset, not the line.
        const size_t at = std::min(parser_.problem_offset, text_.size());
        const auto line =
            std::count(text_.begin(), text_.begin() + static_cast<ptrdiff_t>(at), '\n');
        return InvalidArgument(
            "YAML: text that is not UTF-8 (line " + std::to_string(line + 1) +
            "): " + SafeText(parser_.problem != nullptr ? parser_.problem : "", 100));
      }
      return InvalidArgument(
          "YAML: " + SafeText(parser_.problem != nullptr ? parser_.problem : "malformed", 200) +
          (parser_.context != nullptr ? std::string(" ") + SafeText(parser_.context, 100) : "") +
          " (line " + std::to_string(parser_.problem_mark.line + 1) + ", column " +
          std::to_string(parser_.problem_mark.column + 1) + ")");
    }
    e->Taken();
    return Status::Ok();
  }

  static std::string Line(const yaml_event_t& e) {
    return " (line " + std::to_string(e.start_mark.line + 1) + ")";
  }

  // Counts `nodes` and `bytes` more of output; an error past a budget.
  Status Produce(int64_t nodes, int64_t bytes, const yaml_event_t& at) {
    nodes_ += nodes;
    bytes_ += bytes;
    if (nodes_ > kMaxYamlNodes) {
      return InvalidArgument("YAML: more than 1000000 nodes (after expanding aliases)" + Line(at));
    }
    if (bytes_ > kMaxYamlBytes) {
      return InvalidArgument("YAML: more than " + std::to_string(kMaxYamlBytes >> 20) +
                             " MiB of content (after expanding aliases)" + Line(at));
    }
    return Status::Ok();
  }

  // A scalar's text: UTF-8 and within the string limit.
  static Result<std::string> Text(const yaml_event_t& e) {
    const size_t n = e.data.scalar.length;
    if (n > kMaxYamlString) {
      return InvalidArgument("YAML: a value of " + std::to_string(n) +
                             " bytes is longer than the limit of " +
                             std::to_string(kMaxYamlString) + Line(e));
    }
    std::string s(reinterpret_cast<const char*>(e.data.scalar.value), n);
    if (!ValidUtf8(s)) return InvalidArgument("YAML: text that is not UTF-8" + Line(e));
    return s;
  }

  // The node that starts with `e` (read already); its events are consumed.
  Result<Value> Node(Event& e, int depth) {
    const yaml_event_t& ev = e.get();
    if (depth > kMaxYamlDepth) {
      return InvalidArgument("YAML: nested deeper than " + std::to_string(kMaxYamlDepth) +
                             " levels" + Line(ev));
    }
    Value out;
    std::string anchor;
    switch (ev.type) {
      case YAML_ALIAS_EVENT: {
        const std::string name(reinterpret_cast<const char*>(ev.data.alias.anchor));
        auto it = anchors_.find(name);
        if (it == anchors_.end()) {
          return InvalidArgument("YAML: unknown anchor \"" + SafeText(name, 64) + "\"" + Line(ev));
        }
        TESSERA_RETURN_IF_ERROR(Produce(it->second.nodes, it->second.bytes, ev));
        return it->second;
      }
      case YAML_SCALAR_EVENT: {
        if (ev.data.scalar.anchor != nullptr) {
          anchor = reinterpret_cast<const char*>(ev.data.scalar.anchor);
        }
        Result<std::string> text = Text(ev);
        if (!text.ok()) return text.status();
        out.nodes = 1;
        out.bytes = static_cast<int64_t>(text->size()) + 16;
        TESSERA_RETURN_IF_ERROR(Produce(out.nodes, out.bytes, ev));
        // Quoted and block scalars, and plain ones tagged !!str, are strings; other plain
        // scalars are typed by the core schema.
        const char* tag = reinterpret_cast<const char*>(ev.data.scalar.tag);
        const bool text_only = ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
                               (tag != nullptr && std::string_view(tag) == YAML_STR_TAG);
        out.value = text_only ? json(*text) : PlainScalar(*text);
        break;
      }
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        const bool map = ev.type == YAML_MAPPING_START_EVENT;
        const yaml_char_t* a = map ? ev.data.mapping_start.anchor : ev.data.sequence_start.anchor;
        if (a != nullptr) anchor = reinterpret_cast<const char*>(a);
        const std::string line = Line(ev);
        out.nodes = 1;
        out.bytes = 16;
        TESSERA_RETURN_IF_ERROR(Produce(1, 16, ev));
        out.value = map ? json::object() : json::array();
        for (;;) {
          TESSERA_RETURN_IF_ERROR(Next(&e));
          const yaml_event_type_t t = e.get().type;
          if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) break;
          std::string key;
          if (map) {
            if (t != YAML_SCALAR_EVENT) {
              return InvalidArgument("YAML: a map key must be a scalar" + Line(e.get()));
            }
            Result<std::string> k = Text(e.get());
            if (!k.ok()) return k.status();
            key = std::move(k).value();
            TESSERA_RETURN_IF_ERROR(Produce(0, static_cast<int64_t>(key.size()), e.get()));
            out.bytes += static_cast<int64_t>(key.size());
            if (out.value.contains(key)) {
              return InvalidArgument("YAML: duplicate key \"" + SafeText(key, 64) + "\"" +
                                     Line(e.get()));
            }
            TESSERA_RETURN_IF_ERROR(Next(&e));
          }
          Result<Value> item = Node(e, depth + 1);
          if (!item.ok()) return item.status();
          out.nodes += item->nodes;
          out.bytes += item->bytes;
          if (map) {
            out.value[key] = std::move(item->value);
          } else {
            out.value.push_back(std::move(item->value));
          }
        }
        break;
      }
      default:
        return InvalidArgument("YAML: malformed" + Line(ev));
    }
    if (!anchor.empty()) anchors_[anchor] = out;
    return out;
  }

  std::string_view text_;
  yaml_parser_t parser_{};
  bool ok_ = false;
  std::map<std::string, Value> anchors_;
  int64_t nodes_ = 0;
  int64_t bytes_ = 0;
};

}  // namespace

Result<std::vector<json>> ParseYamlDocuments(std::string_view text) {
  Loader loader(text);
  return loader.Documents();
}

}  // namespace tessera::api
