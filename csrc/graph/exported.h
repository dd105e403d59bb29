/* Exported programs run back in this process (torch_tpu.load).
 *
 * An artifact written by torch_tpu.export holds one region program's
 * StableHLO and its parameter plan. Loading it compiles the text and
 * describes the program as a graph replay (graph/replay.h): the same
 * argument matching, launch, device-side checks and new output storages
 * as a torch.compile graph's fast path. */
#ifndef TT_GRAPH_EXPORTED_H
#define TT_GRAPH_EXPORTED_H

#include "graph/replay.h"

/* Compiles text (a StableHLO module) as region programs are compiled. */
tt_error *tt_exported_compile(const char *text, tt_executable **out);

/* A replay of the program `text` launched on `device`: parameter p reads
 * params[p] (a STORAGE parameter's storage field names the argument whose
 * storage feeds it: it must be one of args' storages), program result o is
 * written to outs[result_out[o]]'s storage, and the n_checks device checks
 * (checks) follow the results. args and outs describe the graph's
 * arguments and outputs; outs' storages are placeholders of the outputs'
 * byte sizes (a run makes new ones). exe: the caller's executable, or NULL
 * to compile text. On success *out is the caller's. */
tt_error *tt_exported_replay(const char *text, tt_executable *exe, int device,
                             const tt_launch_param *params, int n_params, const int *result_out,
                             int n_results, const tt_check_site *checks, int n_checks,
                             const tt_tensor_ref *args, int n_args, const tt_tensor_ref *outs,
                             int n_outs, tt_replay **out);

#endif
