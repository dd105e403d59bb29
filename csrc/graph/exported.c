/* Exported programs run back in this process (see exported.h). */
#include "graph/exported.h"

#include <stdlib.h>
#include <string.h>

#include "graph/core.h"

tt_error *tt_exported_compile(const char *text, tt_executable **out) {
  *out = NULL;
  TT_TRY(tt_pool_before_compile());
  tt_compile_options opts = {2, true}; /* as a fused region compiles */
  tt_error *err = tt_compile(tt_core_runtime(), text, strlen(text), &opts, out);
  if (err) return tt_error_wrap(tt_pool_explain_compile_error(err), "compiling an exported program: ");
  return NULL;
}

tt_error *tt_exported_replay(const char *text, tt_executable *exe, int device,
                             const tt_launch_param *params, int n_params, const int *result_out,
                             int n_results, const tt_check_site *checks, int n_checks,
                             const tt_tensor_ref *args, int n_args, const tt_tensor_ref *outs,
                             int n_outs, tt_replay **out) {
  *out = NULL;
  for (int p = 0; p < n_params; p++)
    if (params[p].kind == TT_LAUNCH_STORAGE && !params[p].storage)
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "exported program: parameter %d has no storage", p);
  for (int o = 0; o < n_results; o++)
    if (result_out[o] < 0 || result_out[o] >= n_outs || outs[result_out[o]].ndim == TT_REF_NONE)
      return tt_error_new(TT_ERR_INVALID_ARGUMENT, "exported program: result %d names no output", o);
  tt_storage **results = calloc((size_t)(n_results ? n_results : 1), sizeof *results);
  tt_pool_entry *slot = tt_pool_entry_new();
  tt_error *err = NULL;
  if (!results || !slot) err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory");
  if (!err && exe) exe = tt_executable_retain(exe);
  else if (!err) err = tt_exported_compile(text, &exe);
  if (!err) {
    tt_executable_release(tt_pool_install(slot, exe)); /* the pool owns it now */
    for (int o = 0; o < n_results; o++) results[o] = outs[result_out[o]].storage;
    tt_launch_record rec = {slot, slot, device, params, n_params, results, n_results,
                            checks, n_checks, text};
    const char *why_not = NULL;
    *out = tt_replay_new(&rec, args, n_args, outs, n_outs, &why_not);
    if (!*out) err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "exported program: %s", why_not);
  }
  tt_pool_entry_release(slot);
  free(results);
  return err;
}
