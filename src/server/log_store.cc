#include "server/log_store.h"

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

bool LogStore::Grown(const std::string& key, const Position& from) const {
  auto it = ends_.find(key);
  if (it == ends_.end()) return false;
  return it->second.generation != from.generation || it->second.offset > from.offset;
}

Status LogStore::Append(std::string_view ns, std::string_view job, std::string_view uid,
                        std::string_view pod, std::string_view data, int64_t at_ms) {
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
    if (at_ms > 0 && !data.empty()) {
      std::ofstream(path + ".times", std::ios::app) << end.offset << " " << at_ms << "\n";
    }
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) return Internal("logs: cannot write " + path);
    end.offset += static_cast<int64_t>(data.size());
    ended_.erase(key);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->second.key == key && Grown(key, it->second.from)) {
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

Result<std::string> LogStore::Read(std::string_view ns, std::string_view job, std::string_view uid,
                                   std::string_view pod, const ReadOptions& o,
                                   Position* end) const {
  if (o.since_ms < 0 && !o.timestamps) {
    auto text = Tail(ns, job, uid, pod, o.tail_lines, end);
    if (text.ok() && o.limit_bytes >= 0 && static_cast<int64_t>(text->size()) > o.limit_bytes) {
      text->resize(static_cast<size_t>(o.limit_bytes));
    }
    return text;
  }
  if (Status s = CheckNames(ns, job, uid, pod); !s.ok()) return s;
  const std::string path = PathOf(ns, job, uid, pod);
  std::string all;
  std::vector<std::pair<int64_t, int64_t>> times;
  {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t size = 0;
    all = ReadRange(path, 0, &size);
    times = ReadTimes(path);
    end->generation = ReadGeneration(path);
    end->offset = size;
  }
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
    while (piece + 1 < times.size() && times[piece + 1].first <= static_cast<int64_t>(at)) ++piece;
    const int64_t ms =
        !times.empty() && times[piece].first <= static_cast<int64_t>(at) ? times[piece].second : 0;
    if (o.since_ms < 0 || ms >= o.since_ms) lines.push_back({at, stop - at, ms});
    at = stop;
  }
  size_t first = 0;
  if (o.tail_lines >= 0 && static_cast<int64_t>(lines.size()) > o.tail_lines) {
    first = lines.size() - static_cast<size_t>(o.tail_lines);
  }
  std::string out;
  for (size_t i = first; i < lines.size(); ++i) {
    if (o.timestamps) out += (lines[i].ms > 0 ? api::FormatTime(lines[i].ms) : "-") + " ";
    out.append(all, lines[i].at, lines[i].size);
  }
  if (o.limit_bytes >= 0 && static_cast<int64_t>(out.size()) > o.limit_bytes) {
    out.resize(static_cast<size_t>(o.limit_bytes));
  }
  return out;
}

Result<std::string> LogStore::Tail(std::string_view ns, std::string_view job, std::string_view uid,
                                   std::string_view pod, int64_t tail_lines, Position* end) const {
  if (Status s = CheckNames(ns, job, uid, pod); !s.ok()) return s;
  const std::string path = PathOf(ns, job, uid, pod);
  std::lock_guard<std::mutex> lock(mu_);
  int64_t size = 0;
  std::string all = ReadRange(path, 0, &size);
  end->generation = ReadGeneration(path);
  end->offset = size;
  if (tail_lines < 0) return all;
  size_t pos = all.size();
  if (pos > 0 && all[pos - 1] == '\n') --pos;
  for (int64_t n = 0; n < tail_lines && pos != std::string::npos && pos > 0; ++n) {
    pos = all.rfind('\n', pos - 1);
  }
  if (tail_lines == 0) return std::string();
  return pos == std::string::npos || pos == 0 ? all : all.substr(pos + 1);
}

Result<std::string> LogStore::Since(std::string_view ns, std::string_view job, std::string_view uid,
                                    std::string_view pod, Position* from) const {
  if (Status s = CheckNames(ns, job, uid, pod); !s.ok()) return s;
  const std::string path = PathOf(ns, job, uid, pod);
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t generation = ReadGeneration(path);
  if (generation != from->generation) *from = {generation, 0};
  int64_t size = 0;
  std::string data = ReadRange(path, from->offset, &size);
  from->offset += static_cast<int64_t>(data.size());
  return data;
}

std::optional<uint64_t> LogStore::Subscribe(std::string_view ns, std::string_view job,
                                            std::string_view uid, std::string_view pod,
                                            Position from, std::function<void()> wake) {
  const std::string key = Key(ns, job, uid, pod);
  std::lock_guard<std::mutex> lock(mu_);
  if (Grown(key, from) || ended_.contains(key)) return std::nullopt;
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
