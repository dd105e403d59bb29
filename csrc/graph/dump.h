/* Per-compile dumps (TORCH_TPU_DUMP_DIR): for every program compiled, the
 * StableHLO module, its compile options, its cache key explained (the ops,
 * shapes and dtypes it was built for) and the optimized HLO, written as
 * numbered files, and DIR/manifest.json indexing every file in order with a timestamp and the
 * user's source line that caused it (filled in by the boundary after the
 * core call returns, tt_dump_fill_source). The Python layer adds its own
 * files (torch.compile's FX graphs) through tt_dump_note, so one sequence
 * orders them all. Nothing is done, and no sequence number is taken, when
 * the variable is unset. I/O errors only lose the dump (a warning once). */
#ifndef TT_GRAPH_DUMP_H
#define TT_GRAPH_DUMP_H

#include <stdbool.h>

#include "pjrt/runtime.h"

bool tt_dump_enabled(void);

/* One compile: kind ("op", "region"), name (op name or "<n>ops"), the
 * module text, the compile options and the key explained as text. Returns
 * the sequence number used, -1 when dumping is off or failed. */
int tt_dump_compile(const char *kind, const char *name, const char *module_text,
                    const char *options, const char *key_text);

/* After the compile numbered seq succeeded: the executable's optimized HLO
 * (PJRT_Executable_OptimizedProgram, a serialized HloModuleProto) as
 * <seq>_<kind>_<name>.optimized.hlo.pb and its listing (graph/hlo_listing.h)
 * as .optimized.txt, added to seq's manifest entry; when the plugin does not
 * expose it, the .txt says why. Nothing when seq < 0. */
void tt_dump_optimized(int seq, tt_executable *exe);

/* A file from a higher layer: DIR/<seq>_<kind>_<name><ext>, indexed in the
 * manifest. Returns its sequence number, -1 when off or failed. */
int tt_dump_note(const char *kind, const char *name, const char *ext, const char *text);

/* True when a manifest entry waits for its source line. */
bool tt_dump_source_pending(void);
/* Sets the source line of every waiting entry and rewrites the manifest. */
void tt_dump_fill_source(const char *line);

#endif
