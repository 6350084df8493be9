#include "sim/glpk.h"

#include <dlfcn.h>

#include <string>
#include <type_traits>

namespace tessera::sim {

namespace {

// The soname Debian's libglpk40 installs (the ABI glpk.h declares); "libglpk.so" (libglpk-dev)
// as the fallback.
constexpr const char* kLibraries[] = {"libglpk.so.40", "libglpk.so"};

Result<const Glpk*> Load() {
  void* handle = nullptr;
  std::string why;
  for (const char* name : kLibraries) {
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) break;
    const char* error = dlerror();
    why = error != nullptr ? error : name;
  }
  if (handle == nullptr) {
    return FailedPrecondition("the bound needs GLPK (Debian's libglpk40): " + why);
  }
  static Glpk glpk;
  bool missing = false;
  auto bind = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, symbol));
    if (fn == nullptr) missing = true;
  };
  bind(glpk.term_out, "glp_term_out");
  bind(glpk.create_prob, "glp_create_prob");
  bind(glpk.delete_prob, "glp_delete_prob");
  bind(glpk.set_obj_dir, "glp_set_obj_dir");
  bind(glpk.add_rows, "glp_add_rows");
  bind(glpk.add_cols, "glp_add_cols");
  bind(glpk.set_row_bnds, "glp_set_row_bnds");
  bind(glpk.set_col_bnds, "glp_set_col_bnds");
  bind(glpk.set_obj_coef, "glp_set_obj_coef");
  bind(glpk.load_matrix, "glp_load_matrix");
  bind(glpk.scale_prob, "glp_scale_prob");
  bind(glpk.init_smcp, "glp_init_smcp");
  bind(glpk.simplex, "glp_simplex");
  bind(glpk.get_status, "glp_get_status");
  bind(glpk.get_obj_val, "glp_get_obj_val");
  if (missing) return FailedPrecondition("the bound needs GLPK: a function is missing from it");
  return &glpk;
}

}  // namespace

Result<const Glpk*> LoadGlpk() {
  static const Result<const Glpk*> loaded = Load();
  return loaded;
}

}  // namespace tessera::sim
