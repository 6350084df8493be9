// Debian's etcd (etcd-server) for the tests: members started on free 127.0.0.1 ports, each in
// a temporary data directory, and stopped by PID (and killed with the test process, whatever
// ends it).
#ifndef TESSERA_TESTS_STORE_ETCD_FIXTURE_H_
#define TESSERA_TESTS_STORE_ETCD_FIXTURE_H_

#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "store/etcd_client.h"

namespace tessera::store {

// A port nothing listens on now, on 127.0.0.1.
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// An etcd cluster of `members` members on this machine.
class EtcdCluster {
 public:
  explicit EtcdCluster(int members = 1) {
    char tmpl[] = "/tmp/tessera-etcd-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return;
    dir_ = tmpl;
    std::string initial;
    for (int i = 0; i < members; ++i) {
      Member m;
      m.name = "m" + std::to_string(i);
      m.client = FreePort();
      m.peer = FreePort();
      initial +=
          (initial.empty() ? "" : ",") + m.name + "=http://127.0.0.1:" + std::to_string(m.peer);
      members_.push_back(m);
    }
    initial_ = initial;
    for (size_t i = 0; i < members_.size(); ++i) StartMember(i);
    ready_ = WaitReady();
  }
  ~EtcdCluster() {
    for (size_t i = 0; i < members_.size(); ++i) StopMember(i);
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  bool ready() const { return ready_; }
  // etcd://127.0.0.1:a,127.0.0.1:b,...<path>
  std::string Url(const std::string& path = "") const {
    std::string url = "etcd://";
    for (size_t i = 0; i < members_.size(); ++i) {
      url += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(members_[i].client);
    }
    return url + path;
  }
  void StopMember(size_t i) {
    Member& m = members_[i];
    if (m.pid <= 0) return;
    kill(m.pid, SIGKILL);
    waitpid(m.pid, nullptr, 0);
    m.pid = -1;
  }
  void StartMember(size_t i) {
    Member& m = members_[i];
    const std::string data = dir_ + "/" + m.name;
    const std::string client = "http://127.0.0.1:" + std::to_string(m.client);
    const std::string peer = "http://127.0.0.1:" + std::to_string(m.peer);
    std::vector<std::string> args = {"etcd",
                                     "--name=" + m.name,
                                     "--data-dir=" + data,
                                     "--listen-client-urls=" + client,
                                     "--advertise-client-urls=" + client,
                                     "--listen-peer-urls=" + peer,
                                     "--initial-advertise-peer-urls=" + peer,
                                     "--initial-cluster=" + initial_,
                                     "--initial-cluster-state=new",
                                     "--logger=zap",
                                     "--log-outputs=" + dir_ + "/" + m.name + ".log"};
    const pid_t parent = getpid();
    m.pid = fork();
    if (m.pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp("etcd", argv.data());
      _exit(127);
    }
  }
  // Until every running member answers (10 s at most).
  bool WaitReady() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (size_t i = 0; i < members_.size(); ++i) {
      if (members_[i].pid <= 0) continue;
      EtcdOptions o;
      o.endpoints = {"127.0.0.1:" + std::to_string(members_[i].client)};
      EtcdClient c(o);
      while (!c.Call("kv/range", {{"key", Base64("ready")}}).ok()) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    return true;
  }

 private:
  struct Member {
    std::string name;
    int client = 0, peer = 0;
    pid_t pid = -1;
  };
  std::string dir_, initial_;
  std::vector<Member> members_;
  bool ready_ = false;
};

// One member for the whole test process, started when first asked for; each test takes a key
// prefix of its own (TestEtcdUrl).
inline EtcdCluster& SharedEtcd() {
  static EtcdCluster cluster(1);
  return cluster;
}

inline std::string TestEtcdUrl() {
  static std::atomic<int> next{0};
  return SharedEtcd().Url("/t" + std::to_string(getpid()) + "-" + std::to_string(next++));
}

// Waits up to `seconds` for `done` (what etcd's watch or election brings comes a little later).
inline bool Eventually(const std::function<bool()>& done, int seconds = 10) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

}  // namespace tessera::store

#endif  // TESSERA_TESTS_STORE_ETCD_FIXTURE_H_
