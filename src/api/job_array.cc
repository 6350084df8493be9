#include "api/job_array.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "api/json_read.h"
#include "api/pod_failure_policy.h"

namespace tessera::api {

using nlohmann::json;

namespace {

Status Bad(std::string_view text, std::string_view what) {
  return InvalidArgument("index list \"" + std::string(text.substr(0, 64)) +
                         "\": " + std::string(what));
}

bool ParseIndex(std::string_view s, int32_t* out) {
  if (s.empty() || s.size() > 9) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && *out >= 0;
}

bool IsFinal(const json& entry) {
  const std::string phase = Str(Member(entry, "state"), "phase");
  return phase == "Succeeded" || phase == "Failed";
}

// The index an entry of status.pods runs, or -1.
int32_t IndexOf(const json& entry) {
  const json& i = Member(entry, "index");
  return i.is_number_integer() && i.get<int64_t>() >= 0 && i.get<int64_t>() < INT32_MAX
             ? static_cast<int32_t>(i.get<int64_t>())
             : -1;
}

// Indexes on the slots of status.pods.
std::set<int32_t> SlotIndexes(const json& status) {
  std::set<int32_t> out;
  for (const json& p : ListOf(Member(status, "pods"))) {
    if (const int32_t i = IndexOf(p); i >= 0) out.insert(i);
  }
  return out;
}

ArrayProgress ProgressOrEmpty(const json& status, const ArraySpec& spec) {
  auto p = ReadProgress(status, spec);
  return p.ok() ? std::move(p).value() : ArrayProgress{};
}

}  // namespace

bool IsArrayJob(const json& job) {
  return Member(Member(job, "spec"), "completions").is_number_integer();
}

Result<IndexSet> IndexSet::Parse(std::string_view text, int32_t limit) {
  IndexSet out;
  if (text.ends_with(',')) return Bad(text, "ends with a comma");
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(pos, comma - pos);
    const size_t dash = item.find('-');
    int32_t first = 0, last = 0;
    if (!ParseIndex(item.substr(0, dash), &first) ||
        !ParseIndex(dash == std::string_view::npos ? item : item.substr(dash + 1), &last)) {
      return Bad(text, "must be indexes and ranges (\"1,3-5\")");
    }
    if (last < first || last >= limit) return Bad(text, "a range is empty or past completions");
    out.ranges_.emplace_back(first, last);
    pos = comma + 1;
  }
  // In any order, overlapping or adjacent: kept merged.
  std::sort(out.ranges_.begin(), out.ranges_.end());
  std::vector<std::pair<int32_t, int32_t>> merged;
  for (const auto& r : out.ranges_) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  out.ranges_ = std::move(merged);
  return out;
}

std::string IndexSet::Text() const {
  std::string out;
  for (const auto& [first, last] : ranges_) {
    if (!out.empty()) out += ',';
    out += std::to_string(first);
    if (last != first) out += "-" + std::to_string(last);
  }
  return out;
}

bool IndexSet::Contains(int32_t i) const {
  auto it =
      std::upper_bound(ranges_.begin(), ranges_.end(), i,
                       [](int32_t v, const std::pair<int32_t, int32_t>& r) { return v < r.first; });
  return it != ranges_.begin() && std::prev(it)->second >= i;
}

int32_t IndexSet::NextAbsent(int32_t i) const {
  auto it =
      std::upper_bound(ranges_.begin(), ranges_.end(), i,
                       [](int32_t v, const std::pair<int32_t, int32_t>& r) { return v < r.first; });
  return it != ranges_.begin() && std::prev(it)->second >= i ? std::prev(it)->second + 1 : i;
}

void IndexSet::Insert(int32_t i) {
  if (Contains(i)) return;
  auto it =
      std::upper_bound(ranges_.begin(), ranges_.end(), i,
                       [](int32_t v, const std::pair<int32_t, int32_t>& r) { return v < r.first; });
  const bool joins_prev = it != ranges_.begin() && std::prev(it)->second + 1 == i;
  const bool joins_next = it != ranges_.end() && it->first == i + 1;
  if (joins_prev && joins_next) {
    std::prev(it)->second = it->second;
    ranges_.erase(it);
  } else if (joins_prev) {
    std::prev(it)->second = i;
  } else if (joins_next) {
    it->first = i;
  } else {
    ranges_.insert(it, {i, i});
  }
}

int32_t IndexSet::Count() const {
  int32_t n = 0;
  for (const auto& [first, last] : ranges_) n += last - first + 1;
  return n;
}

Result<ArrayProgress> ReadProgress(const json& status, const ArraySpec& spec) {
  ArrayProgress p;
  for (const auto& [key, out] :
       {std::pair<const char*, int32_t*>{"succeeded", &p.succeeded}, {"failed", &p.failed}}) {
    const json& v = Member(status, key);
    if (v.is_null()) continue;
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
      return InvalidArgument(std::string("status.") + key + ": must be a pod count");
    }
    *out = static_cast<int32_t>(v.get<int64_t>());
  }
  for (const auto& [key, out] :
       {std::pair<const char*, IndexSet*>{"completedIndexes", &p.completed},
        {"failedIndexes", &p.failed_indexes}}) {
    const json& v = Member(status, key);
    if (v.is_null()) continue;
    if (!v.is_string()) return InvalidArgument(std::string("status.") + key + ": must be a string");
    auto set = IndexSet::Parse(v.get<std::string>(), spec.completions);
    if (!set.ok())
      return InvalidArgument(std::string("status.") + key + ": " + set.status().message());
    *out = std::move(set).value();
  }
  const json& failures = Member(status, "indexFailures");
  if (!failures.is_null() && !failures.is_object()) {
    return InvalidArgument("status.indexFailures: must map indexes to failure counts");
  }
  if (!failures.is_object()) return p;
  for (auto it = failures.begin(); it != failures.end(); ++it) {
    int32_t index = 0;
    const json& n = it.value();
    if (!ParseIndex(it.key(), &index) || index >= spec.completions || !n.is_number_integer() ||
        n.get<int64_t>() < 1 || n.get<int64_t>() > INT32_MAX) {
      return InvalidArgument("status.indexFailures." + it.key() + ": must be an index's failures");
    }
    p.index_failures[index] = static_cast<int32_t>(n.get<int64_t>());
  }
  return p;
}

void WriteProgress(const ArrayProgress& p, const ArraySpec& spec, json* status) {
  (*status)["succeeded"] = p.succeeded;
  (*status)["failed"] = p.failed;
  (*status)["completedIndexes"] = p.completed.Text();
  if (spec.backoff_limit_per_index >= 0) {
    (*status)["failedIndexes"] = p.failed_indexes.Text();
  } else {
    status->erase("failedIndexes");
  }
  json failures = json::object();
  for (const auto& [index, n] : p.index_failures) failures[std::to_string(index)] = n;
  if (failures.empty()) {
    status->erase("indexFailures");
  } else {
    (*status)["indexFailures"] = std::move(failures);
  }
}

void KeepProgress(const json& from, json* to) {
  for (const char* key :
       {"succeeded", "failed", "completedIndexes", "failedIndexes", "indexFailures"}) {
    if (from.is_object() && from.contains(key)) (*to)[key] = from[key];
  }
}

int32_t IndexesToStart(const ArraySpec& spec, const json& status) {
  const ArrayProgress p = ProgressOrEmpty(status, spec);
  int32_t on_slots = 0;
  for (int32_t i : SlotIndexes(status)) {
    if (!p.completed.Contains(i) && !p.failed_indexes.Contains(i)) ++on_slots;
  }
  return std::max(0, spec.completions - p.completed.Count() - p.failed_indexes.Count() - on_slots);
}

ArrayStep AdvanceArray(const ArraySpec& spec, json* status) {
  ArrayStep step;
  ArrayProgress p = ProgressOrEmpty(*status, spec);
  const json before = Member(*status, "pods");
  json slots = json::array();
  for (const json& entry : ListOf(before)) {
    if (!entry.is_object()) continue;  // waiting slots are counted again below
    if (!IsFinal(entry)) {
      slots.push_back(entry);
      continue;
    }
    const int32_t index = IndexOf(entry);
    if (Str(Member(entry, "state"), "phase") == "Succeeded") {
      ++p.succeeded;
      if (index >= 0 && index < spec.completions && !p.failed_indexes.Contains(index)) {
        p.completed.Insert(index);
      }
      p.index_failures.erase(index);
      continue;
    }
    // Kubernetes' podFailurePolicy decides first what the failure means.
    const json& state = Member(entry, "state");
    const int code = Member(state, "signal").is_number_integer()
                         ? 128 + Member(state, "signal").get<int>()
                         : static_cast<int>(Member(state, "exitCode").is_number_integer()
                                                ? Member(state, "exitCode").get<int64_t>()
                                                : 1);
    const FailureVerdict verdict =
        JudgeFailure(spec.pod_failure_policy, code, spec.pod_prefix + Str(entry, "name"));
    if (verdict.action == "Ignore") continue;  // not counted: the index runs again
    ++p.failed;
    if (verdict.action == "FailJob" && step.outcome.empty()) {
      step.outcome = "Failed";
      step.reason = "PodFailurePolicy";
      step.message = verdict.message;
    }
    if (index < 0 || index >= spec.completions) continue;
    if (verdict.action == "FailIndex") {
      p.failed_indexes.Insert(index);
      p.index_failures.erase(index);
      continue;
    }
    const int32_t failures = ++p.index_failures[index];
    if (spec.backoff_limit_per_index >= 0 && failures > spec.backoff_limit_per_index) {
      p.failed_indexes.Insert(index);
      p.index_failures.erase(index);
    }
  }
  const int32_t done = p.completed.Count() + p.failed_indexes.Count();
  if (!step.outcome.empty()) {
    // Failed by a FailJob rule.
  } else if (spec.backoff_limit_per_index < 0 && p.failed > spec.backoff_limit) {
    step.outcome = "Failed";
    step.reason = "BackoffLimitExceeded";
    step.message = "Job has reached the specified backoff limit (" +
                   std::to_string(spec.backoff_limit) + " failed pods)";
  } else if (spec.max_failed_indexes >= 0 && p.failed_indexes.Count() > spec.max_failed_indexes) {
    step.outcome = "Failed";
    step.reason = "MaxFailedIndexesExceeded";
    step.message = "Job has exceeded the specified maximal number of failed indexes (" +
                   std::to_string(spec.max_failed_indexes) + "): failed " + p.failed_indexes.Text();
  } else if (done >= spec.completions && p.failed_indexes.Count() > 0) {
    step.outcome = "Failed";
    step.reason = "FailedIndexes";
    step.message = "Job has failed indexes: " + p.failed_indexes.Text();
  } else if (p.completed.Count() >= spec.completions) {
    step.outcome = "Succeeded";
    step.message = std::to_string(spec.completions) + " of " + std::to_string(spec.completions) +
                   " completions succeeded";
  }
  WriteProgress(p, spec, status);
  (*status)["pods"] = slots;
  if (step.outcome.empty()) {
    const int32_t running = static_cast<int32_t>(slots.size());
    const int32_t want = std::min(spec.parallelism, running + IndexesToStart(spec, *status));
    for (int32_t i = running; i < want; ++i) (*status)["pods"].push_back(nullptr);
  }
  step.changed = step.changed || (*status)["pods"] != before || !step.outcome.empty();
  return step;
}

void AssignIndexes(const ArraySpec& spec, const std::string& task, json* status) {
  const ArrayProgress p = ProgressOrEmpty(*status, spec);
  std::set<int32_t> taken = SlotIndexes(*status);
  int32_t next = 0;
  for (json& entry : (*status)["pods"]) {
    if (!entry.is_object() || IndexOf(entry) >= 0) continue;
    for (int32_t was = -1; was != next;) {
      was = next;
      next = p.failed_indexes.NextAbsent(p.completed.NextAbsent(next));
      while (taken.contains(next)) ++next;
    }
    if (next >= spec.completions) {
      entry = nullptr;  // nothing left to run: the slot is given back
      continue;
    }
    taken.insert(next);
    entry["index"] = next;
    std::string name = task + "-" + std::to_string(next);
    if (auto f = p.index_failures.find(next); f != p.index_failures.end()) {
      name += "-" + std::to_string(f->second);
    }
    entry["name"] = name;
  }
}

}  // namespace tessera::api
