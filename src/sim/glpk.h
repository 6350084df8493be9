// GLPK (Debian's libglpk40), loaded with dlopen the first time the simulator solves its bound
// (sim/bound.h): it and the six libraries it needs (SuiteSparse, GMP, zlib, ltdl) are then no
// part of every other command's start-up (bench/cli_call.sh). The functions the bound calls,
// typed from glpk.h.
#ifndef TESSERA_SIM_GLPK_H_
#define TESSERA_SIM_GLPK_H_

#include <glpk.h>

#include "core/status.h"

namespace tessera::sim {

struct Glpk {
  decltype(&glp_term_out) term_out;
  decltype(&glp_create_prob) create_prob;
  decltype(&glp_delete_prob) delete_prob;
  decltype(&glp_set_obj_dir) set_obj_dir;
  decltype(&glp_add_rows) add_rows;
  decltype(&glp_add_cols) add_cols;
  decltype(&glp_set_row_bnds) set_row_bnds;
  decltype(&glp_set_col_bnds) set_col_bnds;
  decltype(&glp_set_obj_coef) set_obj_coef;
  decltype(&glp_load_matrix) load_matrix;
  decltype(&glp_scale_prob) scale_prob;
  decltype(&glp_init_smcp) init_smcp;
  decltype(&glp_simplex) simplex;
  decltype(&glp_get_status) get_status;
  decltype(&glp_get_obj_val) get_obj_val;
};

// GLPK's functions (loaded once, kept for the process's life); FailedPrecondition naming the
// library and the loader's reason when it cannot be loaded.
Result<const Glpk*> LoadGlpk();

}  // namespace tessera::sim

#endif  // TESSERA_SIM_GLPK_H_
