/* PJRT runtime, part 4: programs that span several devices of the client
 * (compiled collectives). One program is compiled with num_partitions = n,
 * SPMD partitioning on and a 1 x n device assignment of the devices' global
 * ids, and launched once with one argument list per device. Across
 * processes (tt_compile_spmd_global) the assignment lists every process's
 * devices and each process launches its own share with its own arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/trace.h"
#include "pjrt/runtime_internal.h"

static tt_error *oom(void) { return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory"); }

/* ------------------------------------------------------ protobuf writing */

typedef struct {
  uint8_t *p;
  size_t n, cap;
  bool failed;
} pb_buf;

static void pb_byte(pb_buf *b, uint8_t v) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 64;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
      b->failed = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  b->p[b->n++] = v;
}

static void pb_varint(pb_buf *b, uint64_t v) {
  while (v >= 0x80) {
    pb_byte(b, (uint8_t)(v | 0x80));
    v >>= 7;
  }
  pb_byte(b, (uint8_t)v);
}

static void pb_int(pb_buf *b, unsigned field, uint64_t v) {
  pb_varint(b, (uint64_t)field << 3);
  pb_varint(b, v);
}

static void pb_bytes(pb_buf *b, unsigned field, const pb_buf *inner) {
  pb_varint(b, ((uint64_t)field << 3) | 2);
  pb_varint(b, inner->n);
  for (size_t i = 0; i < inner->n; i++) pb_byte(b, inner->p[i]);
  if (inner->failed) b->failed = true;
}

/* CompileOptionsProto {
 *   executable_build_options (3) {
 *     num_replicas (4) = 1, num_partitions (5) = n, use_spmd_partitioning (6) = true,
 *     device_assignment (9) { replica_count (1) = 1, computation_count (2) = n,
 *                             computation_devices (3) { replica_device_ids (1) = id } x n } } }
 * Field numbers: ../shared/DESIGN-NOTES.md, section 5. */
static tt_error *encode_spmd_options(const int *ids, int n, pb_buf *out) {
  pb_buf da = {0}, ebo = {0};
  pb_int(&da, 1, 1);
  pb_int(&da, 2, (uint64_t)n);
  for (int i = 0; i < n; i++) {
    pb_buf cd = {0};
    pb_int(&cd, 1, (uint64_t)ids[i]);
    pb_bytes(&da, 3, &cd);
    free(cd.p);
  }
  pb_int(&ebo, 4, 1);
  pb_int(&ebo, 5, (uint64_t)n);
  pb_int(&ebo, 6, 1);
  pb_bytes(&ebo, 9, &da);
  pb_bytes(out, 3, &ebo);
  free(da.p);
  free(ebo.p);
  if (out->failed) {
    free(out->p);
    out->p = NULL;
    return oom();
  }
  return NULL;
}

/* The global id (PJRT_DeviceDescription_Id) of client device `device`. */
static tt_error *device_global_id(tt_runtime *rt, int device, int *id) {
  const PJRT_Api *api = rt->api;
  if (!TT_PJRT_HAS(api, PJRT_DeviceDescription_Id))
    return tt_error_new(TT_ERR_NOT_IMPLEMENTED, "the PJRT plugin has no PJRT_DeviceDescription_Id");
  PJRT_Device_GetDescription_Args g = {.struct_size = PJRT_Device_GetDescription_Args_SIZE,
                                       .device = rt->devices[device]};
  TT_TRY(tt_pjrt_error(api, api->PJRT_Device_GetDescription(&g), TT_ERR_PLUGIN,
                       "PJRT_Device_GetDescription failed"));
  PJRT_DeviceDescription_Id_Args a = {.struct_size = PJRT_DeviceDescription_Id_Args_SIZE,
                                      .device_description = g.device_description};
  TT_TRY(tt_pjrt_error(api, api->PJRT_DeviceDescription_Id(&a), TT_ERR_PLUGIN,
                       "PJRT_DeviceDescription_Id failed"));
  *id = a.id;
  return NULL;
}

/* Compiles for n partitions on the devices of global ids ids[0..n-1]; the
 * executable must address n_local of them (this process's share). */
static tt_error *compile_with_ids(tt_runtime *rt, const char *mlir_text, size_t text_len,
                                  const int *ids, int n, int n_local, tt_executable **out) {
  pb_buf opts = {0};
  TT_TRY(encode_spmd_options(ids, n, &opts));
  PJRT_LoadedExecutable *le = NULL;
  tt_error *err = tt_pjrt_compile(rt, mlir_text, text_len, opts.p, opts.n,
                                  "the PJRT plugin rejected the multi-device program", &le);
  free(opts.p);
  if (err) return err;
  TT_TRY(tt_executable_wrap(rt, le, true, out));
  (*out)->may_donate = false;
  if ((*out)->num_spmd_devices != n_local) {
    int got = (*out)->num_spmd_devices;
    tt_executable_release(*out);
    *out = NULL;
    return tt_error_new(TT_ERR_RUNTIME,
                        "the multi-device program addresses %d devices of this process, %d were "
                        "assigned (of %d partitions)",
                        got, n_local, n);
  }
  return NULL;
}

tt_error *tt_compile_spmd(tt_runtime *rt, const char *mlir_text, size_t text_len,
                          const int *devices, int n, tt_executable **out) {
  if (!rt || !mlir_text || !devices || !out || n < 1)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_compile_spmd: bad arguments");
  *out = NULL;
  int *ids = calloc((size_t)n, sizeof *ids);
  if (!ids) return oom();
  tt_error *err = NULL;
  for (int i = 0; i < n && !err; i++) {
    if (devices[i] < 0 || devices[i] >= rt->num_devices)
      err = tt_error_new(TT_ERR_INDEX, "tt_compile_spmd: device %d out of range (the %s client has %d)",
                         devices[i], rt->platform, rt->num_devices);
    for (int j = 0; j < i && !err; j++)
      if (devices[j] == devices[i])
        err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_compile_spmd: device %d listed twice",
                           devices[i]);
    if (!err) err = device_global_id(rt, devices[i], &ids[i]);
  }
  if (!err) err = compile_with_ids(rt, mlir_text, text_len, ids, n, n, out);
  free(ids);
  return err;
}

tt_error *tt_compile_spmd_global(tt_runtime *rt, const char *mlir_text, size_t text_len,
                                 const int *ids, int n, tt_executable **out) {
  if (!rt || !mlir_text || !ids || !out || n < 1)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_compile_spmd_global: bad arguments");
  *out = NULL;
  int table_n = 0;
  TT_TRY(tt_runtime_global_devices(rt, NULL, 0, &table_n));
  tt_global_device *table = calloc((size_t)(table_n ? table_n : 1), sizeof *table);
  int *part = calloc((size_t)n, sizeof *part), *local = calloc((size_t)n, sizeof *local);
  tt_error *err = table && part && local ? NULL : oom();
  int got = 0, n_local = 0;
  if (!err) err = tt_runtime_global_devices(rt, table, table_n, &got);
  if (!err) err = tt_spmd_assignment(ids, n, table, got < table_n ? got : table_n, part, local, &n_local);
  if (!err) err = compile_with_ids(rt, mlir_text, text_len, ids, n, n_local, out);
  /* the executable must run on exactly this process's share */
  for (int k = 0; !err && k < n_local; k++) {
    bool listed = false;
    for (int j = 0; j < (*out)->num_spmd_devices; j++) listed |= (*out)->spmd_devices[j] == local[k];
    if (!listed) {
      err = tt_error_new(TT_ERR_RUNTIME,
                         "the multi-device program does not run on client device %d, which the "
                         "assignment gives partition %d",
                         local[k], part[k]);
      tt_executable_release(*out);
      *out = NULL;
    }
  }
  free(table);
  free(part);
  free(local);
  return err;
}

int tt_executable_num_devices(const tt_executable *exe) {
  return !exe ? 0 : exe->num_spmd_devices > 0 ? exe->num_spmd_devices : 1;
}

/* trace_t0 >= 0: the launch is traced; each device's run, from the launch to
 * the return of its completion event's await, becomes a "device" span. */
static tt_error *execute_spmd(tt_executable *exe, const int *devices, tt_buffer *const *args,
                              int num_args, tt_buffer **outs, int num_outs, double trace_t0) {
  int n = exe->num_spmd_devices;
  if (n <= 0)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "tt_execute_spmd: not a multi-device program (use tt_execute)");
  if (num_outs != exe->num_outputs)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "tt_execute_spmd: program has %d outputs, caller gave %d", exe->num_outputs,
                        num_outs);
  tt_runtime *rt = exe->rt;
  const PJRT_Api *api = rt->api;
  /* caller's order (devices[r]) -> the plugin's order (spmd_devices[k]) */
  int *order = calloc((size_t)n, sizeof *order);
  PJRT_Buffer **argv = calloc((size_t)n * (size_t)(num_args ? num_args : 1), sizeof *argv);
  PJRT_Buffer **outv = calloc((size_t)n * (size_t)(num_outs ? num_outs : 1), sizeof *outv);
  PJRT_Buffer *const **arg_lists = calloc((size_t)n, sizeof *arg_lists);
  PJRT_Buffer ***out_lists = calloc((size_t)n, sizeof *out_lists);
  PJRT_Event **done = calloc((size_t)n, sizeof *done);
  tt_error *err = NULL;
  if (!order || !argv || !outv || !arg_lists || !out_lists || !done) err = oom();
  for (int k = 0; k < n && !err; k++) {
    order[k] = -1;
    for (int r = 0; r < n; r++)
      if (devices[r] == exe->spmd_devices[k]) order[k] = r;
    if (order[k] < 0)
      err = tt_error_new(TT_ERR_INVALID_ARGUMENT,
                         "tt_execute_spmd: the program runs on device %d, which the caller's "
                         "device list lacks",
                         exe->spmd_devices[k]);
  }
  for (int k = 0; k < n && !err; k++) {
    int r = order[k];
    for (int i = 0; i < num_args && !err; i++) {
      tt_buffer *b = args[(size_t)r * (size_t)num_args + (size_t)i];
      if (!b)
        err = tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_execute_spmd: argument %d of rank %d is NULL",
                           i, r);
      else if (b->device != devices[r])
        err = tt_error_new(TT_ERR_INVALID_ARGUMENT,
                           "tt_execute_spmd: argument %d of rank %d lives on device %d, not %d", i,
                           r, b->device, devices[r]);
      else
        argv[(size_t)k * (size_t)num_args + (size_t)i] = b->buf;
    }
    arg_lists[k] = argv + (size_t)k * (size_t)num_args;
    out_lists[k] = outv + (size_t)k * (size_t)num_outs;
  }
  if (!err) {
    PJRT_ExecuteOptions xo = {.struct_size = PJRT_ExecuteOptions_SIZE};
    PJRT_LoadedExecutable_Execute_Args a = {
        .struct_size = PJRT_LoadedExecutable_Execute_Args_SIZE,
        .executable = exe->exe,
        .options = &xo,
        .argument_lists = arg_lists,
        .num_devices = (size_t)n,
        .num_args = (size_t)num_args,
        .output_lists = out_lists,
        .device_complete_events = done,
    };
    err = tt_pjrt_error(api, api->PJRT_LoadedExecutable_Execute(&a), TT_ERR_RUNTIME,
                        "launching the multi-device program failed");
    /* Completion is awaited here: the executable must outlive the launch,
     * and the callers' threads each wait for their own outputs anyway. */
    for (int k = 0; k < n; k++) {
      if (!done[k]) continue;
      tt_error *e = tt_pjrt_await(api, done[k], TT_ERR_RUNTIME, "the multi-device program failed");
      if (trace_t0 >= 0 && tt_trace_on()) {
        /* awaited in turn: a device that finished before an earlier one
         * shows as ending with it (the collective ends them together) */
        char name[48], detail[64];
        snprintf(name, sizeof name, "program #%lu", exe->trace_id);
        snprintf(detail, sizeof detail, "device %d, %d-device program%s", exe->spmd_devices[k], n,
                 e ? ", failed" : "");
        tt_trace_add("device", name, trace_t0, tt_trace_now_us() - trace_t0,
                     (unsigned long)exe->spmd_devices[k], detail);
      }
      if (e && !err) err = e;
      else tt_error_free(e);
    }
    for (int k = 0; k < n; k++) {
      int r = order[k];
      for (int i = 0; i < num_outs; i++) {
        PJRT_Buffer *pb = outv[(size_t)k * (size_t)num_outs + (size_t)i];
        tt_buffer **slot = &outs[(size_t)r * (size_t)num_outs + (size_t)i];
        *slot = NULL;
        if (!pb) continue;
        if (err) {
          tt_pjrt_buffer_destroy(api, pb);
          continue;
        }
        tt_error *werr = exe->out_known ? tt_buffer_wrap(rt, pb, devices[r], exe->out_dtypes[i],
                                                         exe->out_ndims[i], exe->out_dims[i], slot)
                                        : tt_buffer_wrap_queried(rt, pb, devices[r], slot);
        if (werr && !err) err = werr;
        else tt_error_free(werr);
      }
    }
    if (err)
      for (int j = 0; j < n * num_outs; j++) {
        tt_buffer_release(outs[j]);
        outs[j] = NULL;
      }
  }
  free(order);
  free(argv);
  free(outv);
  free(arg_lists);
  free(out_lists);
  free(done);
  return err;
}

tt_error *tt_execute_spmd(tt_executable *exe, const int *devices, tt_buffer *const *args,
                          int num_args, tt_buffer **outs, int num_outs) {
  if (!exe || !devices || (num_args > 0 && !args) || (num_outs > 0 && !outs) || num_args < 0)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_execute_spmd: bad arguments");
  if (!tt_trace_on()) return execute_spmd(exe, devices, args, num_args, outs, num_outs, -1);
  double t0 = tt_trace_now_us();
  tt_error *err = execute_spmd(exe, devices, args, num_args, outs, num_outs, t0);
  char detail[96];
  snprintf(detail, sizeof detail, "program #%lu, %d devices, %d inputs, %d outputs each",
           exe->trace_id, exe->num_spmd_devices, num_args, num_outs);
  tt_trace_end("launch", err ? "launch (failed)" : "launch", t0, detail);
  return err;
}

/* ------------------------------------------------------ optimized program */

/* Largest optimized program we accept (a plugin reporting more is wrong). */
#define TT_OPTIMIZED_PROGRAM_MAX ((size_t)1 << 31)

tt_error *tt_executable_optimized_program(tt_executable *exe, void **bytes, size_t *size,
                                          char *format, size_t format_cap) {
  if (!exe || !bytes || !size)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_executable_optimized_program: NULL argument");
  *bytes = NULL;
  *size = 0;
  if (format && format_cap) format[0] = 0;
  const PJRT_Api *api = exe->rt->api;
  if (!TT_PJRT_HAS(api, PJRT_Executable_OptimizedProgram))
    return tt_error_new(TT_ERR_NOT_IMPLEMENTED, "the PJRT plugin does not expose optimized programs");
  PJRT_LoadedExecutable_GetExecutable_Args g = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_SIZE, .loaded_executable = exe->exe};
  TT_TRY(tt_pjrt_error(api, api->PJRT_LoadedExecutable_GetExecutable(&g), TT_ERR_RUNTIME,
                       "PJRT_LoadedExecutable_GetExecutable failed"));
  PJRT_Program prog = {.struct_size = PJRT_Program_SIZE};
  PJRT_Executable_OptimizedProgram_Args a = {
      .struct_size = PJRT_Executable_OptimizedProgram_Args_SIZE, .executable = g.executable,
      .program = &prog};
  /* First call: the size; second: the bytes into our buffer. */
  tt_error *err = tt_pjrt_error(api, api->PJRT_Executable_OptimizedProgram(&a), TT_ERR_RUNTIME,
                                "PJRT_Executable_OptimizedProgram (size) failed");
  char *code = NULL;
  if (!err && (prog.code_size == 0 || prog.code_size > TT_OPTIMIZED_PROGRAM_MAX))
    err = tt_error_new(TT_ERR_RUNTIME, "the plugin reported an optimized program of %zu bytes",
                       prog.code_size);
  if (!err && !(code = malloc(prog.code_size))) err = oom();
  size_t want = prog.code_size;
  if (!err) {
    prog.code = code;
    err = tt_pjrt_error(api, api->PJRT_Executable_OptimizedProgram(&a), TT_ERR_RUNTIME,
                        "PJRT_Executable_OptimizedProgram (bytes) failed");
  }
  if (!err && prog.code_size != want)
    err = tt_error_new(TT_ERR_RUNTIME, "the optimized program changed size between calls (%zu, then %zu bytes)",
                       want, prog.code_size);
  if (!err) {
    if (format && format_cap) {
      size_t n = prog.format && prog.format_size < format_cap ? prog.format_size : 0;
      if (n) memcpy(format, prog.format, n);
      format[n] = 0;
    }
    *bytes = code;
    *size = want;
    code = NULL;
  }
  free(code);
  PJRT_Executable_Destroy_Args d = {.struct_size = PJRT_Executable_Destroy_Args_SIZE,
                                    .executable = g.executable};
  tt_error_free(tt_pjrt_error(api, api->PJRT_Executable_Destroy(&d), TT_ERR_RUNTIME, "destroy"));
  return err;
}
