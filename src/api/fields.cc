#include "api/fields.h"

#include <algorithm>
#include <cctype>

namespace tessera::api {

using nlohmann::json;

namespace {

// The value as the user wrote it, for messages.
std::string Shown(const json& v) {
  return v.is_string() ? "\"" + v.get<std::string>() + "\"" : v.dump();
}

}  // namespace

Fields::Fields(const json& obj, std::string path, bool null_ok)
    : obj_(obj),
      path_(std::move(path)),
      is_object_(obj.is_object() || (null_ok && obj.is_null())) {}

std::string Fields::At(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const json* Fields::Get(std::string_view key) {
  known_.emplace(key);
  if (!obj_.is_object()) return nullptr;
  const auto it = obj_.find(key);
  return it == obj_.end() || it->is_null() ? nullptr : &*it;
}

Status Fields::String(std::string_view key, std::string* out, bool required) {
  if (!is_object_) return FieldError(path_, "must be an object");
  const json* v = Get(key);
  if (v == nullptr) return required ? FieldError(At(key), "is required") : Status::Ok();
  if (!v->is_string()) return FieldError(At(key), "must be a string, got " + Shown(*v));
  *out = v->get<std::string>();
  return Status::Ok();
}

Status Fields::Int(std::string_view key, int64_t* out, int64_t min, int64_t max, bool required) {
  if (!is_object_) return FieldError(path_, "must be an object");
  const json* v = Get(key);
  if (v == nullptr) return required ? FieldError(At(key), "is required") : Status::Ok();
  if (!v->is_number_integer()) {
    return FieldError(At(key), "must be an integer, got " + Shown(*v));
  }
  // Unsigned values above int64 arrive as number_unsigned; compare in that domain.
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(max)) {
    return FieldError(At(key), "must be in [" + std::to_string(min) + ", " + std::to_string(max) +
                                   "], got " + v->dump());
  }
  const int64_t x = v->get<int64_t>();
  if (x < min || x > max) {
    return FieldError(At(key), "must be in [" + std::to_string(min) + ", " + std::to_string(max) +
                                   "], got " + std::to_string(x));
  }
  *out = x;
  return Status::Ok();
}

Status Fields::Bool(std::string_view key, bool* out) {
  if (!is_object_) return FieldError(path_, "must be an object");
  const json* v = Get(key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_boolean()) return FieldError(At(key), "must be true or false, got " + Shown(*v));
  *out = v->get<bool>();
  return Status::Ok();
}

Status Fields::Enum(std::string_view key, const std::vector<std::string_view>& allowed, int* out) {
  std::string s;
  if (Status st = String(key, &s); !st.ok() || s.empty()) return st;
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (allowed[i] == s) {
      *out = static_cast<int>(i);
      return Status::Ok();
    }
  }
  std::string list;
  for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  return FieldError(At(key), "must be one of " + list + ", got \"" + s + "\"");
}

Status Fields::StringList(std::string_view key, std::vector<std::string>* out) {
  if (!is_object_) return FieldError(path_, "must be an object");
  const json* v = Get(key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_array()) return FieldError(At(key), "must be a list of strings");
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) return FieldError(Index(At(key), i), "must be a string");
    out->push_back((*v)[i].get<std::string>());
  }
  return Status::Ok();
}

Status Fields::Pairs(std::string_view key, bool quantities,
                     std::vector<std::pair<std::string, std::string>>* out) {
  if (!is_object_) return FieldError(path_, "must be an object");
  const json* v = Get(key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_object()) return FieldError(At(key), "must be a map");
  for (const auto& [k, x] : v->items()) {
    if (x.is_string()) {
      out->emplace_back(k, x.get<std::string>());
    } else if (quantities && x.is_number()) {
      out->emplace_back(k, x.dump());
    } else {
      return FieldError(At(key) + "." + k, quantities ? "must be a quantity" : "must be a string");
    }
  }
  return Status::Ok();
}

Status Fields::StringMap(std::string_view key, std::map<std::string, std::string>* out,
                         bool quantities) {
  std::vector<std::pair<std::string, std::string>> pairs;
  Status s = Pairs(key, quantities, &pairs);
  out->insert(pairs.begin(), pairs.end());
  return s;
}

Status Fields::StringMap(std::string_view key,
                         std::map<std::string, std::string, std::less<>>* out) {
  std::vector<std::pair<std::string, std::string>> pairs;
  Status s = Pairs(key, false, &pairs);
  out->insert(pairs.begin(), pairs.end());
  return s;
}

Status Fields::Finish() const {
  if (!is_object_) return FieldError(path_, "must be an object");
  if (!obj_.is_object()) return Status::Ok();
  for (const auto& [k, v] : obj_.items()) {
    if (!known_.contains(k)) {
      return UnknownField(At(k), k, std::vector<std::string_view>(known_.begin(), known_.end()));
    }
  }
  return Status::Ok();
}

std::string ClosestName(std::string_view name, const std::vector<std::string_view>& known) {
  auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  // Optimal string alignment distance over three rows.
  auto distance = [&](std::string_view a, std::string_view b) {
    std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
        if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
            lower(a[i - 2]) == lower(b[j - 1])) {
          cur[j] = std::min(cur[j], prev2[j - 2] + 1);
        }
      }
      prev2.swap(prev);
      prev.swap(cur);
    }
    return prev[b.size()];
  };
  std::string best;
  size_t best_distance = 0;
  for (std::string_view k : known) {
    const size_t d = distance(name, k);
    // A misspelling: at most a third of the longer name wrong, and at most 3 edits.
    const size_t allowed = std::min<size_t>(3, std::max(name.size(), k.size()) / 3);
    if (d > allowed) continue;
    if (best.empty() || d < best_distance || (d == best_distance && k < best)) {
      best = std::string(k);
      best_distance = d;
    }
  }
  return best;
}

Status UnknownField(const std::string& path, std::string_view name,
                    const std::vector<std::string_view>& known) {
  const std::string closest = ClosestName(name, known);
  return FieldError(path, closest.empty() ? "unknown field"
                                          : "unknown field (did you mean \"" + closest + "\"?)");
}

Status FieldError(const std::string& path, std::string_view what) {
  return InvalidArgument(path + ": " + std::string(what));
}

std::string Index(std::string_view path, size_t i) {
  return std::string(path) + "[" + std::to_string(i) + "]";
}

}  // namespace tessera::api
