#include "server/log_store.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/object.h"
#include "api/time.h"

namespace tessera::server {

namespace fs = std::filesystem;

namespace {

// The generation of a pod's log lives in a side file, so positions survive restarts.
int64_t ReadGeneration(const std::string& path) {
  std::ifstream in(path + ".gen");
  int64_t g = 0;
  in >> g;
  return g;
}

std::string ReadRange(const std::string& path, int64_t from, int64_t* size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *size = 0;
    return "";
  }
  in.seekg(0, std::ios::end);
  *size = static_cast<int64_t>(in.tellg());
  if (from >= *size) return "";
  in.seekg(from);
  std::string out(static_cast<size_t>(*size - from), '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

// The times of a log's pieces (its side file <log>.times: "<offset> <ms>" per piece), in
// order of offset.
std::vector<std::pair<int64_t, int64_t>> ReadTimes(const std::string& path) {
  std::vector<std::pair<int64_t, int64_t>> out;
  std::ifstream in(path + ".times");
  int64_t offset = 0, ms = 0;
  while (in >> offset >> ms) {
    if (out.empty() || offset >= out.back().first) out.emplace_back(offset, ms);
  }
  return out;
}

}  // namespace

Status LogStore::CheckNames(std::string_view ns, std::string_view job, std::string_view uid,
                            std::string_view pod) const {
  if (Status s = api::ValidateName(ns, true, "namespace"); !s.ok()) return s;
  if (Status s = api::ValidateName(job, false, "job"); !s.ok()) return s;
  if (uid.empty() || uid.size() > 64 || !std::all_of(uid.begin(), uid.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-';
      })) {
    return InvalidArgument("uid: must be the Job's uid");
  }
  return api::ValidateName(pod, true, "pod");
}

std::string LogStore::PathOf(std::string_view ns, std::string_view job, std::string_view uid,
                             std::string_view pod) const {
  return dir_ + "/" + std::string(ns) + "/" + std::string(job) + "/" + std::string(uid) + "/" +
         std::string(pod) + ".log";
}

std::string LogStore::Key(std::string_view ns, std::string_view job, std::string_view uid,
                          std::string_view pod) {
  return std::string(ns) + "/" + std::string(job) + "/" + std::string(uid) + "/" + std::string(pod);
}

LogStore::Starts& LogStore::StartsOf(const std::string& key, const std::string& path) const {
  auto [it, added] = starts_.try_emplace(key);
  if (added) {
    std::ifstream in(path + ".starts");
    Start s;
    std::string token;
    while (in >> s.generation >> s.offset >> token) {
      it->second.tokens.insert(token);
      if (s.generation != 0 || s.offset != 0) it->second.later.push_back(s);
    }
  }
  return it->second;
}

bool LogStore::Grown(const std::string& key, const std::string& path, const Position& from) const {
  if (static_cast<int64_t>(StartsOf(key, path).later.size()) > from.run) return true;
  auto it = ends_.find(key);
  if (it == ends_.end()) return false;
  return it->second.generation != from.generation || it->second.offset > from.offset;
}

Status LogStore::RangeOf(const std::string& key, const std::string& path, Runs runs,
                         int64_t generation, int64_t size, int64_t* lo, int64_t* hi,
                         int64_t* run) const {
  const std::vector<Start>& later = StartsOf(key, path).later;
  const int64_t n = static_cast<int64_t>(later.size());
  *lo = 0;
  *hi = size;
  *run = n;
  // A start in this file bounds a run; one in an older file began before all of this one.
  auto here = [&](int64_t i) {
    return i >= 0 && later[i].generation == generation ? std::min(later[i].offset, size) : 0;
  };
  if (runs == Runs::kCurrent) *lo = here(n - 1);
  if (runs == Runs::kPrevious) {
    if (n == 0) return NotFound("the container has not run before");
    if (later[n - 1].generation != generation) {
      return NotFound("the previous run's output was rotated away (the log outgrew its cap)");
    }
    *hi = here(n - 1);
    *lo = std::min(here(n - 2), *hi);
    *run = n - 1;
  }
  return Status::Ok();
}

Status LogStore::Append(std::string_view ns, std::string_view job, std::string_view uid,
                        std::string_view pod, std::string_view data, int64_t at_ms,
                        std::string_view start) {
  if (Status s = CheckNames(ns, job, uid, pod); !s.ok()) return s;
  const std::string path = PathOf(ns, job, uid, pod), key = Key(ns, job, uid, pod);
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) return Internal("logs: " + ec.message());
    Position& end = ends_[key];
    if (end.offset == 0 && end.generation == 0) {
      end.generation = ReadGeneration(path);
      end.offset = fs::exists(path, ec) ? static_cast<int64_t>(fs::file_size(path, ec)) : 0;
    }
    if (end.offset + static_cast<int64_t>(data.size()) > max_bytes_ && end.offset > 0) {
      fs::rename(path, path + ".1", ec);
      if (ec) return Internal("logs: " + ec.message());
      fs::rename(path + ".times", path + ".times.1", ec);
      ec.clear();
      ++end.generation;
      end.offset = 0;
      std::ofstream(path + ".gen", std::ios::trunc) << end.generation;
    }
    // A new run begins here (its token not seen before: a retried Append marks it once).
    bool run_started = false;
    if (!start.empty()) {
      if (start.size() > 128 || start.find_first_of(" \t\r\n") != std::string_view::npos) {
        return InvalidArgument("start: must be a token of at most 128 characters, no spaces");
      }
      Starts& starts = StartsOf(key, path);
      if (starts.tokens.insert(std::string(start)).second) {
        std::ofstream(path + ".starts", std::ios::app)
            << end.generation << " " << end.offset << " " << start << "\n";
        if (end.generation != 0 || end.offset != 0) {
          starts.later.push_back({end.generation, end.offset});
          run_started = true;
        }
      }
    }
    if (at_ms > 0 && !data.empty()) {
      std::ofstream(path + ".times", std::ios::app) << end.offset << " " << at_ms << "\n";
    }
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) return Internal("logs: cannot write " + path);
    end.offset += static_cast<int64_t>(data.size());
    ended_.erase(key);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->second.key == key && (run_started || Grown(key, path, it->second.from))) {
        wake.push_back(std::move(it->second.wake));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& w : wake) w();
  return Status::Ok();
}

std::vector<std::string> LogStore::Pods(std::string_view ns, std::string_view job,
                                        std::string_view uid) const {
  std::vector<std::string> out;
  if (!CheckNames(ns, job, uid, "x").ok()) return out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(
           dir_ + "/" + std::string(ns) + "/" + std::string(job) + "/" + std::string(uid), ec)) {
    if (e.path().extension() == ".log") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// The last `n` lines of `text` (all when < 0).
std::string LastLines(std::string text, int64_t n) {
  if (n < 0) return text;
  if (n == 0) return std::string();
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (int64_t i = 0; i < n && pos != std::string::npos && pos > 0; ++i) {
    pos = text.rfind('\n', pos - 1);
  }
  return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

}  // namespace

Result<std::string> LogStore::Read(std::string_view ns, std::string_view job, std::string_view uid,
                                   std::string_view pod, const ReadOptions& o,
                                   Position* end) const {
  if (Status s = CheckNames(ns, job, uid, pod); !s.ok()) return s;
  const std::string path = PathOf(ns, job, uid, pod), key = Key(ns, job, uid, pod);
  std::string all;
  std::vector<std::pair<int64_t, int64_t>> times;
  int64_t lo = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t size = 0, hi = 0;
    all = ReadRange(path, 0, &size);
    end->generation = ReadGeneration(path);
    end->offset = size;
    if (Status s = RangeOf(key, path, o.runs, end->generation, size, &lo, &hi, &end->run);
        !s.ok()) {
      return s;
    }
    all = all.substr(static_cast<size_t>(lo), static_cast<size_t>(hi - lo));
    if (o.since_ms >= 0 || o.timestamps) times = ReadTimes(path);
  }
  std::string out;
  if (o.since_ms < 0 && !o.timestamps) {
    out = LastLines(std::move(all), o.tail_lines);
  } else {
    // Each line with the time of the piece it starts in (0: unknown, before times were kept).
    struct Line {
      size_t at, size;
      int64_t ms;
    };
    std::vector<Line> lines;
    size_t piece = 0;
    for (size_t at = 0; at < all.size();) {
      const size_t nl = all.find('\n', at);
      const size_t stop = nl == std::string::npos ? all.size() : nl + 1;
      const int64_t offset = lo + static_cast<int64_t>(at);  // in the file
      while (piece + 1 < times.size() && times[piece + 1].first <= offset) ++piece;
      const int64_t ms = !times.empty() && times[piece].first <= offset ? times[piece].second : 0;
      if (o.since_ms < 0 || ms >= o.since_ms) lines.push_back({at, stop - at, ms});
      at = stop;
    }
    size_t first = 0;
    if (o.tail_lines >= 0 && static_cast<int64_t>(lines.size()) > o.tail_lines) {
      first = lines.size() - static_cast<size_t>(o.tail_lines);
    }
    for (size_t i = first; i < lines.size(); ++i) {
      if (o.timestamps) out += (lines[i].ms > 0 ? api::FormatTime(lines[i].ms) : "-") + " ";
      out.append(all, lines[i].at, lines[i].size);
    }
  }
  if (o.limit_bytes >= 0 && static_cast<int64_t>(out.size()) > o.limit_bytes) {
    out.resize(static_cast<size_t>(o.limit_bytes));
  }
  return out;
}

Result<std::string> LogStore::Since(std::string_view ns, std::string_view job, std::string_view uid,
                                    std::string_view pod, Position* from, bool* over) const {
  if (Status s = CheckNames(ns, job, uid, pod); !s.ok()) return s;
  const std::string path = PathOf(ns, job, uid, pod), key = Key(ns, job, uid, pod);
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t generation = ReadGeneration(path);
  if (generation != from->generation) *from = {generation, 0, from->run};
  int64_t size = 0;
  std::string data = ReadRange(path, from->offset, &size);
  // The run `from` is in ends where the next one starts.
  const std::vector<Start>& later = StartsOf(key, path).later;
  const bool ended = static_cast<int64_t>(later.size()) > from->run;
  if (ended) {
    const Start& next = later[static_cast<size_t>(from->run)];
    const int64_t stop = next.generation == generation ? next.offset : from->offset;
    data.resize(static_cast<size_t>(
        std::clamp<int64_t>(stop - from->offset, 0, static_cast<int64_t>(data.size()))));
  }
  from->offset += static_cast<int64_t>(data.size());
  if (over != nullptr) *over = ended && data.empty();
  return data;
}

std::optional<uint64_t> LogStore::Subscribe(std::string_view ns, std::string_view job,
                                            std::string_view uid, std::string_view pod,
                                            Position from, std::function<void()> wake) {
  const std::string key = Key(ns, job, uid, pod), path = PathOf(ns, job, uid, pod);
  std::lock_guard<std::mutex> lock(mu_);
  if (Grown(key, path, from) || ended_.contains(key)) return std::nullopt;
  const uint64_t id = next_id_++;
  waiting_.emplace(id, Waiter{key, from, std::move(wake)});
  return id;
}

void LogStore::Unsubscribe(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  waiting_.erase(id);
}

void LogStore::End(std::string_view ns, std::string_view job, std::string_view uid,
                   std::string_view pod) {
  const std::string key = Key(ns, job, uid, pod);
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ended_.insert(key).second) return;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->second.key == key) {
        wake.push_back(std::move(it->second.wake));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& w : wake) w();
}

bool LogStore::Ended(std::string_view ns, std::string_view job, std::string_view uid,
                     std::string_view pod) const {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_.contains(Key(ns, job, uid, pod));
}

}  // namespace tessera::server
