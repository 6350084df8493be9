// The store the server's tests run on: SQLite in the test's data directory, or etcd when
// TESSERA_TEST_STORE=etcd (the ctest entries *_on_etcd run the API and loop suites so, on a
// member of Debian's etcd the test process starts). One opener per test: a restart within the
// test opens the same state again.
#ifndef TESSERA_TESTS_SERVER_TEST_STORE_H_
#define TESSERA_TESTS_SERVER_TEST_STORE_H_

#include <cstdlib>
#include <string>

#include "server/control_plane.h"
#include "store/etcd_fixture.h"
#include "store/etcd_store.h"

namespace tessera::server {

inline bool TestsOnEtcd() {
  const char* s = std::getenv("TESSERA_TEST_STORE");
  return s != nullptr && std::string(s) == "etcd";
}

inline ControlPlane::StoreOpener TestStore() {
  if (!TestsOnEtcd()) return ControlPlane::Sqlite();
  auto etcd = store::ParseEtcdUrl(store::TestEtcdUrl());
  return [options = *etcd](const std::string&) -> Result<std::unique_ptr<store::Store>> {
    if (!store::SharedEtcd().ready()) return Internal("the tests' etcd did not start");
    return store::OpenEtcdStore({.etcd = options});
  };
}

}  // namespace tessera::server

#endif  // TESSERA_TESTS_SERVER_TEST_STORE_H_
