#include "store/etcd_module.h"

#include <dlfcn.h>

#include <filesystem>
#include <system_error>

namespace tessera::store {

namespace {

constexpr const char* kModuleFile = "libtessera-etcd.so";

Result<const EtcdModule*> Load() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return FailedPrecondition("etcd: cannot find this binary's directory: " + ec.message());
  const std::string path = (self.parent_path() / kModuleFile).string();
  // RTLD_NOW: a symbol missing shows here, not mid-call. RTLD_LOCAL: its libraries stay its own.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return FailedPrecondition("etcd: the module " + path +
                              " (built with this binary, kept beside it) cannot be loaded: " +
                              (why != nullptr ? why : "unknown reason"));
  }
  using Entry = const EtcdModule* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, "tessera_etcd_module"));
  if (entry == nullptr)
    return FailedPrecondition("etcd: " + path + " is not Tessera's etcd module");
  const EtcdModule* module = entry();
  if (module == nullptr || module->version != kEtcdModuleVersion) {
    return FailedPrecondition("etcd: " + path + " was built from other sources than this binary");
  }
  return module;  // never unloaded: its objects live as long as the process
}

}  // namespace

Result<const EtcdModule*> LoadEtcdModule() {
  static const Result<const EtcdModule*> loaded = Load();
  return loaded;
}

}  // namespace tessera::store
