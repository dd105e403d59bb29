/* Our own declarations of the part of the PJRT C API that torch_tpu uses.
 *
 * Written for this project from the published PJRT C API (openxla/xla,
 * xla/pjrt/c/pjrt_c_api.h); this is not a copy of that header. Layouts follow
 * PJRT C API version 0.113 (PJRT_API_MAJOR 0, PJRT_API_MINOR 113), the newest
 * version we could verify. The layouts of every struct that also exists in
 * 0.81 (the xla-cpu-pjrt wheel) were checked field by field against it.
 *
 * ABI rules this file relies on:
 *   - Since 0.42 every args struct starts with `size_t struct_size` followed by
 *     `PJRT_Extension_Base *extension_start` (formerly `void *priv`; same
 *     size and position).
 *   - struct_size is offsetof(last field) + sizeof(last field), not sizeof:
 *     TT_PJRT_SIZE below. A plugin rejects args smaller than the ones it was
 *     built with and accepts larger ones, so we declare the newest layout and
 *     zero-fill everything we do not set.
 *   - PJRT_Api is a table of function pointers that only ever grows at the
 *     end (fields were last rearranged in 0.57, the oldest version we accept).
 *     A slot may be used only if it lies inside the plugin's
 *     PJRT_Api.struct_size and is non-NULL: TT_PJRT_HAS.
 *   - Enums are C enums (int-sized on every ABI we target).
 *
 * Slots we never call are declared with the placeholder type PJRT_Unused so
 * the table keeps its exact layout without declaring their argument structs.
 * Only runtime*.c include this file. */
#ifndef TT_PJRT_ABI_H
#define TT_PJRT_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TT_PJRT_ABI_MAJOR 0
#define TT_PJRT_ABI_MINOR 113
/* Oldest plugin API we accept: PJRT_Api fields were rearranged in 0.57. */
#define TT_PJRT_MIN_MINOR 57

/* Size of an args struct as PJRT defines it: up to the end of its last field. */
#define TT_PJRT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type *)0)->last_field))

/* Declares TYPE_SIZE, the struct_size value to put in a TYPE. */
#define TT_PJRT_STRUCT_SIZE(type, last_field) \
  enum { type##_SIZE = TT_PJRT_SIZE(type, last_field) }

/* ------------------------------------------------------------ opaque types */

typedef struct PJRT_Error PJRT_Error;
typedef struct PJRT_Event PJRT_Event;
typedef struct PJRT_Client PJRT_Client;
typedef struct PJRT_Device PJRT_Device;
typedef struct PJRT_Memory PJRT_Memory;
typedef struct PJRT_DeviceDescription PJRT_DeviceDescription;
typedef struct PJRT_Executable PJRT_Executable;
typedef struct PJRT_LoadedExecutable PJRT_LoadedExecutable;
typedef struct PJRT_Buffer PJRT_Buffer;
typedef struct PJRT_ExecuteContext PJRT_ExecuteContext;
typedef struct PJRT_SerializedExecutable PJRT_SerializedExecutable;
typedef struct PJRT_MultiSlice_Config PJRT_MultiSlice_Config;
typedef struct PJRT_HloOutputCallbackInfo PJRT_HloOutputCallbackInfo;
typedef struct PJRT_SendCallbackInfo PJRT_SendCallbackInfo;
typedef struct PJRT_RecvCallbackInfo PJRT_RecvCallbackInfo;

/* Placeholder for table slots we never call. */
typedef void PJRT_Unused(void);

typedef struct PJRT_Extension_Base {
  size_t struct_size;
  int type; /* PJRT_Extension_Type */
  struct PJRT_Extension_Base *next;
} PJRT_Extension_Base;

#define TT_PJRT_ARGS_HEAD \
  size_t struct_size;     \
  PJRT_Extension_Base *extension_start

/* ------------------------------------------------------------------ version */

typedef struct {
  TT_PJRT_ARGS_HEAD;
  int major_version;
  int minor_version;
} PJRT_Api_Version;
TT_PJRT_STRUCT_SIZE(PJRT_Api_Version, minor_version);

/* ------------------------------------------------------------------- errors */

typedef enum {
  PJRT_Error_Code_OK = 0,
  PJRT_Error_Code_CANCELLED = 1,
  PJRT_Error_Code_UNKNOWN = 2,
  PJRT_Error_Code_INVALID_ARGUMENT = 3,
  PJRT_Error_Code_DEADLINE_EXCEEDED = 4,
  PJRT_Error_Code_NOT_FOUND = 5,
  PJRT_Error_Code_ALREADY_EXISTS = 6,
  PJRT_Error_Code_PERMISSION_DENIED = 7,
  PJRT_Error_Code_RESOURCE_EXHAUSTED = 8,
  PJRT_Error_Code_FAILED_PRECONDITION = 9,
  PJRT_Error_Code_ABORTED = 10,
  PJRT_Error_Code_OUT_OF_RANGE = 11,
  PJRT_Error_Code_UNIMPLEMENTED = 12,
  PJRT_Error_Code_INTERNAL = 13,
  PJRT_Error_Code_UNAVAILABLE = 14,
  PJRT_Error_Code_DATA_LOSS = 15,
  PJRT_Error_Code_UNAUTHENTICATED = 16,
} PJRT_Error_Code;

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Error *error;
} PJRT_Error_Destroy_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Error_Destroy_Args, error);
typedef void PJRT_Error_Destroy(PJRT_Error_Destroy_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  const PJRT_Error *error;
  const char *message; /* out, lives as long as error */
  size_t message_size; /* out */
} PJRT_Error_Message_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Error_Message_Args, message_size);
typedef void PJRT_Error_Message(PJRT_Error_Message_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  const PJRT_Error *error;
  PJRT_Error_Code code; /* out */
} PJRT_Error_GetCode_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Error_GetCode_Args, code);
typedef PJRT_Error *PJRT_Error_GetCode(PJRT_Error_GetCode_Args *args);

/* ------------------------------------------------------------- named values */

typedef enum {
  PJRT_NamedValue_kString = 0,
  PJRT_NamedValue_kInt64 = 1,
  PJRT_NamedValue_kInt64List = 2,
  PJRT_NamedValue_kFloat = 3,
  PJRT_NamedValue_kBool = 4,
} PJRT_NamedValue_Type;

typedef struct {
  TT_PJRT_ARGS_HEAD;
  const char *name;
  size_t name_size;
  PJRT_NamedValue_Type type;
  union {
    const char *string_value;
    int64_t int64_value;
    const int64_t *int64_array_value;
    float float_value;
    bool bool_value;
  };
  size_t value_size; /* elements for strings/lists, 1 for scalars */
} PJRT_NamedValue;
TT_PJRT_STRUCT_SIZE(PJRT_NamedValue, value_size);

/* ------------------------------------------------------------------- plugin */

typedef struct {
  TT_PJRT_ARGS_HEAD;
} PJRT_Plugin_Initialize_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Plugin_Initialize_Args, extension_start);
typedef PJRT_Error *PJRT_Plugin_Initialize(PJRT_Plugin_Initialize_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  const PJRT_NamedValue *attributes; /* out, process lifetime */
  size_t num_attributes;             /* out */
} PJRT_Plugin_Attributes_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Plugin_Attributes_Args, num_attributes);
typedef PJRT_Error *PJRT_Plugin_Attributes(PJRT_Plugin_Attributes_Args *args);

/* ------------------------------------------------------------------- events */

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Event *event;
} PJRT_Event_Destroy_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Event_Destroy_Args, event);
typedef PJRT_Error *PJRT_Event_Destroy(PJRT_Event_Destroy_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Event *event;
  bool is_ready; /* out */
} PJRT_Event_IsReady_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Event_IsReady_Args, is_ready);
typedef PJRT_Error *PJRT_Event_IsReady(PJRT_Event_IsReady_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Event *event;
} PJRT_Event_Error_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Event_Error_Args, event);
typedef PJRT_Error *PJRT_Event_Error(PJRT_Event_Error_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Event *event;
} PJRT_Event_Await_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Event_Await_Args, event);
typedef PJRT_Error *PJRT_Event_Await(PJRT_Event_Await_Args *args);

/* Called once the event is ready; owns `error` (NULL on success) and must
 * destroy it. */
typedef void (*PJRT_Event_OnReadyCallback)(PJRT_Error *error, void *user_arg);
typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Event *event;
  PJRT_Event_OnReadyCallback callback;
  void *user_arg;
} PJRT_Event_OnReady_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Event_OnReady_Args, user_arg);
typedef PJRT_Error *PJRT_Event_OnReady(PJRT_Event_OnReady_Args *args);

/* ------------------------------------------------------- key-value callbacks */

/* A multi-process client (the CUDA plugin with num_nodes > 1) finds the
 * other processes through a key-value store the caller provides as two
 * callbacks (runtime_procs.c implements them over tt_kv_store). On failure
 * a callback returns the PJRT_Error that *callback_error makes from a code
 * and a message (which it copies). */
typedef PJRT_Error *(*PJRT_CallbackError)(PJRT_Error_Code code, const char *message,
                                          size_t message_size);
typedef void (*PJRT_KeyValueGetCallback_ValueDeleter)(char *value);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  const char *key;
  size_t key_size;
  int timeout_in_ms;
  PJRT_CallbackError *callback_error;
  void *user_arg;
  char *value;       /* out, freed by the plugin with value_deleter_callback */
  size_t value_size; /* out */
  PJRT_KeyValueGetCallback_ValueDeleter value_deleter_callback; /* out */
} PJRT_KeyValueGetCallback_Args;
TT_PJRT_STRUCT_SIZE(PJRT_KeyValueGetCallback_Args, value_deleter_callback);
typedef PJRT_Error *(*PJRT_KeyValueGetCallback)(PJRT_KeyValueGetCallback_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  const char *key;
  size_t key_size;
  const char *value;
  size_t value_size;
  PJRT_CallbackError *callback_error;
  void *user_arg;
} PJRT_KeyValuePutCallback_Args;
TT_PJRT_STRUCT_SIZE(PJRT_KeyValuePutCallback_Args, user_arg);
typedef PJRT_Error *(*PJRT_KeyValuePutCallback)(PJRT_KeyValuePutCallback_Args *args);

/* ------------------------------------------------------------------- client */

typedef struct {
  TT_PJRT_ARGS_HEAD;
  const PJRT_NamedValue *create_options;
  size_t num_options;
  PJRT_KeyValueGetCallback kv_get_callback; /* NULL unless multi-process */
  void *kv_get_user_arg;
  PJRT_KeyValuePutCallback kv_put_callback;
  void *kv_put_user_arg;
  PJRT_Client *client; /* out */
  void *kv_try_get_callback; /* PJRT_KeyValueTryGetCallback; optional, unused: NULL */
  void *kv_try_get_user_arg;
} PJRT_Client_Create_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Client_Create_Args, kv_try_get_user_arg);
typedef PJRT_Error *PJRT_Client_Create(PJRT_Client_Create_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Client *client;
} PJRT_Client_Destroy_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Client_Destroy_Args, client);
typedef PJRT_Error *PJRT_Client_Destroy(PJRT_Client_Destroy_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Client *client;
  const char *platform_name; /* out, client lifetime */
  size_t platform_name_size; /* out */
} PJRT_Client_PlatformName_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Client_PlatformName_Args, platform_name_size);
typedef PJRT_Error *PJRT_Client_PlatformName(PJRT_Client_PlatformName_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Client *client;
  PJRT_Device *const *addressable_devices; /* out, client lifetime */
  size_t num_addressable_devices;          /* out */
} PJRT_Client_AddressableDevices_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Client_AddressableDevices_Args, num_addressable_devices);
typedef PJRT_Error *PJRT_Client_AddressableDevices(PJRT_Client_AddressableDevices_Args *args);

/* Every device the client sees: its own and, in a multi-process client, the
 * other processes' (not addressable here). */
typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Client *client;
  PJRT_Device *const *devices; /* out, client lifetime */
  size_t num_devices;          /* out */
} PJRT_Client_Devices_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Client_Devices_Args, num_devices);
typedef PJRT_Error *PJRT_Client_Devices(PJRT_Client_Devices_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  char *code; /* owned by the caller */
  size_t code_size;
  const char *format; /* "mlir", "hlo", "hlo_with_config" */
  size_t format_size;
} PJRT_Program;
TT_PJRT_STRUCT_SIZE(PJRT_Program, format_size);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Client *client;
  const PJRT_Program *program;
  const char *compile_options; /* serialized xla.CompileOptionsProto */
  size_t compile_options_size;
  PJRT_LoadedExecutable *executable; /* out */
} PJRT_Client_Compile_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Client_Compile_Args, executable);
typedef PJRT_Error *PJRT_Client_Compile(PJRT_Client_Compile_Args *args);

/* ------------------------------------------------------------ buffer types */

typedef enum {
  PJRT_Buffer_Type_INVALID = 0,
  PJRT_Buffer_Type_PRED = 1,
  PJRT_Buffer_Type_S8 = 2,
  PJRT_Buffer_Type_S16 = 3,
  PJRT_Buffer_Type_S32 = 4,
  PJRT_Buffer_Type_S64 = 5,
  PJRT_Buffer_Type_U8 = 6,
  PJRT_Buffer_Type_U16 = 7,
  PJRT_Buffer_Type_U32 = 8,
  PJRT_Buffer_Type_U64 = 9,
  PJRT_Buffer_Type_F16 = 10,
  PJRT_Buffer_Type_F32 = 11,
  PJRT_Buffer_Type_F64 = 12,
  PJRT_Buffer_Type_BF16 = 13,
  PJRT_Buffer_Type_C64 = 14,
  PJRT_Buffer_Type_C128 = 15,
  /* 16.. : 8-bit floats, S4/U4, TOKEN, S2/U2, ... (unused here) */
} PJRT_Buffer_Type;

typedef enum {
  /* The runtime may not hold on to the host data after the call returns. */
  PJRT_HostBufferSemantics_kImmutableOnlyDuringCall = 0,
  /* Host data must stay valid until done_with_host_buffer fires. */
  PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes = 1,
  PJRT_HostBufferSemantics_kImmutableZeroCopy = 2,
  PJRT_HostBufferSemantics_kMutableZeroCopy = 3,
} PJRT_HostBufferSemantics;

typedef enum {
  PJRT_Buffer_MemoryLayout_Type_Tiled = 0,
  PJRT_Buffer_MemoryLayout_Type_Strides = 1,
} PJRT_Buffer_MemoryLayout_Type;

typedef struct {
  TT_PJRT_ARGS_HEAD;
  const int64_t *minor_to_major;
  size_t minor_to_major_size;
  const int64_t *tile_dims;
  const size_t *tile_dim_sizes;
  size_t num_tiles;
} PJRT_Buffer_MemoryLayout_Tiled;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_MemoryLayout_Tiled, num_tiles);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  const int64_t *byte_strides;
  size_t num_byte_strides;
} PJRT_Buffer_MemoryLayout_Strides;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_MemoryLayout_Strides, num_byte_strides);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  union {
    PJRT_Buffer_MemoryLayout_Tiled tiled;
    PJRT_Buffer_MemoryLayout_Strides strides;
  };
  PJRT_Buffer_MemoryLayout_Type type;
} PJRT_Buffer_MemoryLayout;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_MemoryLayout, type);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Client *client;
  const void *data;
  PJRT_Buffer_Type type;
  const int64_t *dims;
  size_t num_dims;
  const int64_t *byte_strides; /* NULL: dense, major-to-minor */
  size_t num_byte_strides;
  PJRT_HostBufferSemantics host_buffer_semantics;
  PJRT_Device *device;
  PJRT_Memory *memory;                     /* NULL: device's default memory */
  PJRT_Buffer_MemoryLayout *device_layout; /* NULL: default layout */
  PJRT_Event *done_with_host_buffer;       /* out, caller destroys */
  PJRT_Buffer *buffer;                     /* out, caller destroys */
} PJRT_Client_BufferFromHostBuffer_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Client_BufferFromHostBuffer_Args, buffer);
typedef PJRT_Error *PJRT_Client_BufferFromHostBuffer(PJRT_Client_BufferFromHostBuffer_Args *args);

/* ---------------------------------------------------------- device queries */

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_DeviceDescription *device_description;
  int id; /* out */
} PJRT_DeviceDescription_Id_Args;
TT_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_Id_Args, id);
typedef PJRT_Error *PJRT_DeviceDescription_Id(PJRT_DeviceDescription_Id_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_DeviceDescription *device_description;
  int process_index; /* out */
} PJRT_DeviceDescription_ProcessIndex_Args;
TT_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_ProcessIndex_Args, process_index);
typedef PJRT_Error *PJRT_DeviceDescription_ProcessIndex(PJRT_DeviceDescription_ProcessIndex_Args *args);

/* Kind, DebugString and ToString share this shape. */
typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_DeviceDescription *device_description;
  const char *str; /* out, device lifetime */
  size_t str_size; /* out */
} PJRT_DeviceDescription_String_Args;
TT_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_String_Args, str_size);
typedef PJRT_Error *PJRT_DeviceDescription_String(PJRT_DeviceDescription_String_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Device *device;
  PJRT_DeviceDescription *device_description; /* out */
} PJRT_Device_GetDescription_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Device_GetDescription_Args, device_description);
typedef PJRT_Error *PJRT_Device_GetDescription(PJRT_Device_GetDescription_Args *args);

/* Device memory statistics (allocator counters). Only bytes_in_use is
 * always set; plugins may return UNIMPLEMENTED (XLA:CPU does). */
typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Device *device;
  int64_t bytes_in_use; /* out */
  int64_t peak_bytes_in_use;
  bool peak_bytes_in_use_is_set;
  int64_t num_allocs;
  bool num_allocs_is_set;
  int64_t largest_alloc_size;
  bool largest_alloc_size_is_set;
  int64_t bytes_limit;
  bool bytes_limit_is_set;
  int64_t bytes_reserved;
  bool bytes_reserved_is_set;
  int64_t peak_bytes_reserved;
  bool peak_bytes_reserved_is_set;
  int64_t bytes_reservable_limit;
  bool bytes_reservable_limit_is_set;
  int64_t largest_free_block_bytes;
  bool largest_free_block_bytes_is_set;
  int64_t pool_bytes;
  bool pool_bytes_is_set;
  int64_t peak_pool_bytes;
  bool peak_pool_bytes_is_set;
} PJRT_Device_MemoryStats_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Device_MemoryStats_Args, peak_pool_bytes_is_set);
typedef PJRT_Error *PJRT_Device_MemoryStats(PJRT_Device_MemoryStats_Args *args);

/* ------------------------------------------------------------- executables */

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Executable *executable;
} PJRT_Executable_Destroy_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Executable_Destroy_Args, executable);
typedef PJRT_Error *PJRT_Executable_Destroy(PJRT_Executable_Destroy_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_LoadedExecutable *executable;
} PJRT_LoadedExecutable_Destroy_Args;
TT_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_Destroy_Args, executable);
typedef PJRT_Error *PJRT_LoadedExecutable_Destroy(PJRT_LoadedExecutable_Destroy_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_LoadedExecutable *loaded_executable;
  PJRT_Executable *executable; /* out, caller destroys */
} PJRT_LoadedExecutable_GetExecutable_Args;
TT_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_GetExecutable_Args, executable);
typedef PJRT_Error *PJRT_LoadedExecutable_GetExecutable(
    PJRT_LoadedExecutable_GetExecutable_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_LoadedExecutable *executable;
  PJRT_Device *const *addressable_devices; /* out */
  size_t num_addressable_devices;          /* out */
} PJRT_LoadedExecutable_AddressableDevices_Args;
TT_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_AddressableDevices_Args, num_addressable_devices);
typedef PJRT_Error *PJRT_LoadedExecutable_AddressableDevices(
    PJRT_LoadedExecutable_AddressableDevices_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Executable *executable;
  size_t num_outputs; /* out */
} PJRT_Executable_NumOutputs_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Executable_NumOutputs_Args, num_outputs);
typedef PJRT_Error *PJRT_Executable_NumOutputs(PJRT_Executable_NumOutputs_Args *args);

/* Memory the compiled program needs (xla::CompiledMemoryStats). The last two
 * fields came later than the others; plugins accept the larger struct. */
typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Executable *executable;
  int64_t generated_code_size_in_bytes; /* out */
  int64_t argument_size_in_bytes;       /* out */
  int64_t output_size_in_bytes;         /* out */
  int64_t alias_size_in_bytes;          /* out */
  int64_t temp_size_in_bytes;           /* out: scratch allocated for each run */
  int64_t host_generated_code_size_in_bytes;
  int64_t host_argument_size_in_bytes;
  int64_t host_output_size_in_bytes;
  int64_t host_alias_size_in_bytes;
  int64_t host_temp_size_in_bytes;
  int64_t peak_memory_in_bytes;
  int64_t total_size_in_bytes;
} PJRT_Executable_GetCompiledMemoryStats_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Executable_GetCompiledMemoryStats_Args, total_size_in_bytes);
typedef PJRT_Error *PJRT_Executable_GetCompiledMemoryStats(
    PJRT_Executable_GetCompiledMemoryStats_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Executable *executable;
  PJRT_Buffer_Type *output_types; /* out, executable lifetime */
  size_t num_output_types;        /* out */
} PJRT_Executable_OutputElementTypes_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Executable_OutputElementTypes_Args, num_output_types);
typedef PJRT_Error *PJRT_Executable_OutputElementTypes(
    PJRT_Executable_OutputElementTypes_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Executable *executable;
  size_t num_outputs;       /* out */
  const int64_t *dims;      /* out: all outputs' dims, concatenated */
  const size_t *dim_sizes;  /* out: rank of each output */
} PJRT_Executable_OutputDimensions_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Executable_OutputDimensions_Args, dim_sizes);
typedef PJRT_Error *PJRT_Executable_OutputDimensions(PJRT_Executable_OutputDimensions_Args *args);

/* The optimized program (after the plugin's passes) of an executable. Two
 * calls: with program->code NULL the plugin sets code_size (and format);
 * then with code pointing at code_size bytes it fills them. XLA's plugins
 * give format "hlo": a serialized xla.HloModuleProto. */
typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Executable *executable;
  PJRT_Program *program; /* in/out: code, code_size, format, format_size */
} PJRT_Executable_OptimizedProgram_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Executable_OptimizedProgram_Args, program);
typedef PJRT_Error *PJRT_Executable_OptimizedProgram(PJRT_Executable_OptimizedProgram_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  const PJRT_Executable *executable;
  const char *serialized_bytes;                     /* out */
  size_t serialized_bytes_size;                     /* out */
  PJRT_SerializedExecutable *serialized_executable; /* out, backs the bytes */
  void (*serialized_executable_deleter)(PJRT_SerializedExecutable *exec); /* out */
} PJRT_Executable_Serialize_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Executable_Serialize_Args, serialized_executable_deleter);
typedef PJRT_Error *PJRT_Executable_Serialize(PJRT_Executable_Serialize_Args *args);

/* Note: no extension_start in this one. */
typedef struct {
  size_t struct_size;
  const int32_t *computation_origin;
  size_t computation_origin_size;
  PJRT_MultiSlice_Config *multi_slice_config;
} PJRT_LoadOptions;
TT_PJRT_STRUCT_SIZE(PJRT_LoadOptions, multi_slice_config);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Client *client;
  const char *serialized_executable;
  size_t serialized_executable_size;
  PJRT_LoadedExecutable *loaded_executable; /* out */
  const char *overridden_serialized_compile_options; /* NULL: use the stored ones */
  size_t overridden_serialized_compile_options_size;
  PJRT_LoadOptions *load_options; /* 0.113 */
} PJRT_Executable_DeserializeAndLoad_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Executable_DeserializeAndLoad_Args, load_options);
typedef PJRT_Error *PJRT_Executable_DeserializeAndLoad(
    PJRT_Executable_DeserializeAndLoad_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_SendCallbackInfo **send_callbacks;
  PJRT_RecvCallbackInfo **recv_callbacks;
  size_t num_send_ops;
  size_t num_recv_ops;
  int launch_id;
  const int64_t *non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  PJRT_ExecuteContext *context;
  const char *call_location;
  size_t num_tasks;
  int *task_ids;
  int64_t *incarnation_ids;
  PJRT_MultiSlice_Config *multi_slice_config;             /* 0.97 */
  bool use_major_to_minor_data_layout_for_callbacks;      /* >0.105 */
  PJRT_HloOutputCallbackInfo *hlo_output_callbacks;       /* >0.105 */
  size_t num_hlo_output_callbacks;
} PJRT_ExecuteOptions;
TT_PJRT_STRUCT_SIZE(PJRT_ExecuteOptions, num_hlo_output_callbacks);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_LoadedExecutable *executable;
  PJRT_ExecuteOptions *options;
  PJRT_Buffer *const *const *argument_lists; /* [num_devices][num_args] */
  size_t num_devices;
  size_t num_args;
  PJRT_Buffer **const *output_lists;   /* [num_devices][num_outputs], in/out */
  PJRT_Event **device_complete_events; /* optional [num_devices], out */
  PJRT_Device *execute_device;         /* portable executables: where to run */
} PJRT_LoadedExecutable_Execute_Args;
TT_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_Execute_Args, execute_device);
typedef PJRT_Error *PJRT_LoadedExecutable_Execute(PJRT_LoadedExecutable_Execute_Args *args);

/* ------------------------------------------------------------------ buffers */

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Buffer *buffer;
} PJRT_Buffer_Destroy_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_Destroy_Args, buffer);
typedef PJRT_Error *PJRT_Buffer_Destroy(PJRT_Buffer_Destroy_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Buffer *buffer;
  PJRT_Buffer_Type type; /* out */
} PJRT_Buffer_ElementType_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_ElementType_Args, type);
typedef PJRT_Error *PJRT_Buffer_ElementType(PJRT_Buffer_ElementType_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Buffer *buffer;
  bool is_deleted; /* out */
} PJRT_Buffer_IsDeleted_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_IsDeleted_Args, is_deleted);
typedef PJRT_Error *PJRT_Buffer_IsDeleted(PJRT_Buffer_IsDeleted_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Buffer *buffer;
  const int64_t *dims; /* out, buffer lifetime */
  size_t num_dims;     /* out */
} PJRT_Buffer_Dimensions_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_Dimensions_Args, num_dims);
typedef PJRT_Error *PJRT_Buffer_Dimensions(PJRT_Buffer_Dimensions_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Buffer *src;
  PJRT_Buffer_MemoryLayout *host_layout; /* NULL: the buffer's layout */
  void *dst;                             /* NULL: query dst_size */
  size_t dst_size;                       /* in/out */
  PJRT_Event *event;                     /* out, caller destroys */
} PJRT_Buffer_ToHostBuffer_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_ToHostBuffer_Args, event);
typedef PJRT_Error *PJRT_Buffer_ToHostBuffer(PJRT_Buffer_ToHostBuffer_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Buffer *buffer;
  PJRT_Device *dst_device;
  PJRT_Buffer *dst_buffer; /* out */
} PJRT_Buffer_CopyToDevice_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_CopyToDevice_Args, dst_buffer);
typedef PJRT_Error *PJRT_Buffer_CopyToDevice(PJRT_Buffer_CopyToDevice_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Buffer *buffer;
  PJRT_Event *event; /* out, caller destroys */
} PJRT_Buffer_ReadyEvent_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_ReadyEvent_Args, event);
typedef PJRT_Error *PJRT_Buffer_ReadyEvent(PJRT_Buffer_ReadyEvent_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Buffer *buffer;
  size_t on_device_size_in_bytes; /* out */
} PJRT_Buffer_OnDeviceSizeInBytes_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_OnDeviceSizeInBytes_Args, on_device_size_in_bytes);
typedef PJRT_Error *PJRT_Buffer_OnDeviceSizeInBytes(PJRT_Buffer_OnDeviceSizeInBytes_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Buffer *buffer;
  bool is_on_cpu; /* out */
} PJRT_Buffer_IsOnCpu_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_IsOnCpu_Args, is_on_cpu);
typedef PJRT_Error *PJRT_Buffer_IsOnCpu(PJRT_Buffer_IsOnCpu_Args *args);

/* Increase/DecreaseExternalReferenceCount share this shape. */
typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Buffer *buffer;
} PJRT_Buffer_ExternalReference_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_ExternalReference_Args, buffer);
typedef PJRT_Error *PJRT_Buffer_ExternalReference(PJRT_Buffer_ExternalReference_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Buffer *buffer;
  void *device_memory_ptr; /* out; valid while an external reference is held */
} PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args, device_memory_ptr);
typedef PJRT_Error *PJRT_Buffer_OpaqueDeviceMemoryDataPointer(
    PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args *args);

typedef struct {
  TT_PJRT_ARGS_HEAD;
  PJRT_Buffer *buffer;
  void *dst;
  int64_t offset;
  int64_t transfer_size;
  PJRT_Event *event; /* out */
} PJRT_Buffer_CopyRawToHost_Args;
TT_PJRT_STRUCT_SIZE(PJRT_Buffer_CopyRawToHost_Args, event);
typedef PJRT_Error *PJRT_Buffer_CopyRawToHost(PJRT_Buffer_CopyRawToHost_Args *args);

/* ------------------------------------------------------------ the api table */

/* Slot order as of 0.113. Slots up to PJRT_LoadedExecutable_GetDeviceAssignment
 * exist in 0.81; everything after was appended later. */
typedef struct PJRT_Api {
  size_t struct_size;
  PJRT_Extension_Base *extension_start;
  PJRT_Api_Version pjrt_api_version;

  PJRT_Error_Destroy *PJRT_Error_Destroy;
  PJRT_Error_Message *PJRT_Error_Message;
  PJRT_Error_GetCode *PJRT_Error_GetCode;

  PJRT_Plugin_Initialize *PJRT_Plugin_Initialize;
  PJRT_Plugin_Attributes *PJRT_Plugin_Attributes;

  PJRT_Event_Destroy *PJRT_Event_Destroy;
  PJRT_Event_IsReady *PJRT_Event_IsReady;
  PJRT_Event_Error *PJRT_Event_Error;
  PJRT_Event_Await *PJRT_Event_Await;
  PJRT_Event_OnReady *PJRT_Event_OnReady;

  PJRT_Client_Create *PJRT_Client_Create;
  PJRT_Client_Destroy *PJRT_Client_Destroy;
  PJRT_Client_PlatformName *PJRT_Client_PlatformName;
  PJRT_Unused *PJRT_Client_ProcessIndex;
  PJRT_Unused *PJRT_Client_PlatformVersion;
  PJRT_Client_Devices *PJRT_Client_Devices;
  PJRT_Client_AddressableDevices *PJRT_Client_AddressableDevices;
  PJRT_Unused *PJRT_Client_LookupDevice;
  PJRT_Unused *PJRT_Client_LookupAddressableDevice;
  PJRT_Unused *PJRT_Client_AddressableMemories;
  PJRT_Client_Compile *PJRT_Client_Compile;
  PJRT_Unused *PJRT_Client_DefaultDeviceAssignment;
  PJRT_Client_BufferFromHostBuffer *PJRT_Client_BufferFromHostBuffer;

  PJRT_DeviceDescription_Id *PJRT_DeviceDescription_Id;
  PJRT_DeviceDescription_ProcessIndex *PJRT_DeviceDescription_ProcessIndex;
  PJRT_Unused *PJRT_DeviceDescription_Attributes;
  PJRT_DeviceDescription_String *PJRT_DeviceDescription_Kind;
  PJRT_DeviceDescription_String *PJRT_DeviceDescription_DebugString;
  PJRT_DeviceDescription_String *PJRT_DeviceDescription_ToString;

  PJRT_Device_GetDescription *PJRT_Device_GetDescription;
  PJRT_Unused *PJRT_Device_IsAddressable;
  PJRT_Unused *PJRT_Device_LocalHardwareId;
  PJRT_Unused *PJRT_Device_AddressableMemories;
  PJRT_Unused *PJRT_Device_DefaultMemory;
  PJRT_Device_MemoryStats *PJRT_Device_MemoryStats;

  PJRT_Unused *PJRT_Memory_Id;
  PJRT_Unused *PJRT_Memory_Kind;
  PJRT_Unused *PJRT_Memory_DebugString;
  PJRT_Unused *PJRT_Memory_ToString;
  PJRT_Unused *PJRT_Memory_AddressableByDevices;

  PJRT_Executable_Destroy *PJRT_Executable_Destroy;
  PJRT_Unused *PJRT_Executable_Name;
  PJRT_Unused *PJRT_Executable_NumReplicas;
  PJRT_Unused *PJRT_Executable_NumPartitions;
  PJRT_Executable_NumOutputs *PJRT_Executable_NumOutputs;
  PJRT_Unused *PJRT_Executable_SizeOfGeneratedCodeInBytes;
  PJRT_Unused *PJRT_Executable_GetCostAnalysis;
  PJRT_Unused *PJRT_Executable_OutputMemoryKinds;
  PJRT_Executable_OptimizedProgram *PJRT_Executable_OptimizedProgram;
  PJRT_Executable_Serialize *PJRT_Executable_Serialize;

  PJRT_LoadedExecutable_Destroy *PJRT_LoadedExecutable_Destroy;
  PJRT_LoadedExecutable_GetExecutable *PJRT_LoadedExecutable_GetExecutable;
  PJRT_LoadedExecutable_AddressableDevices *PJRT_LoadedExecutable_AddressableDevices;
  PJRT_Unused *PJRT_LoadedExecutable_Delete;
  PJRT_Unused *PJRT_LoadedExecutable_IsDeleted;
  PJRT_LoadedExecutable_Execute *PJRT_LoadedExecutable_Execute;
  PJRT_Executable_DeserializeAndLoad *PJRT_Executable_DeserializeAndLoad;
  PJRT_Unused *PJRT_LoadedExecutable_Fingerprint;

  PJRT_Buffer_Destroy *PJRT_Buffer_Destroy;
  PJRT_Buffer_ElementType *PJRT_Buffer_ElementType;
  PJRT_Buffer_Dimensions *PJRT_Buffer_Dimensions;
  PJRT_Unused *PJRT_Buffer_UnpaddedDimensions;
  PJRT_Unused *PJRT_Buffer_DynamicDimensionIndices;
  PJRT_Unused *PJRT_Buffer_GetMemoryLayout;
  PJRT_Buffer_OnDeviceSizeInBytes *PJRT_Buffer_OnDeviceSizeInBytes;
  PJRT_Unused *PJRT_Buffer_Device;
  PJRT_Unused *PJRT_Buffer_Memory;
  PJRT_Unused *PJRT_Buffer_Delete;
  PJRT_Buffer_IsDeleted *PJRT_Buffer_IsDeleted;
  PJRT_Buffer_CopyToDevice *PJRT_Buffer_CopyToDevice;
  PJRT_Buffer_ToHostBuffer *PJRT_Buffer_ToHostBuffer;
  PJRT_Buffer_IsOnCpu *PJRT_Buffer_IsOnCpu;
  PJRT_Buffer_ReadyEvent *PJRT_Buffer_ReadyEvent;
  PJRT_Unused *PJRT_Buffer_UnsafePointer;
  PJRT_Buffer_ExternalReference *PJRT_Buffer_IncreaseExternalReferenceCount;
  PJRT_Buffer_ExternalReference *PJRT_Buffer_DecreaseExternalReferenceCount;
  PJRT_Buffer_OpaqueDeviceMemoryDataPointer *PJRT_Buffer_OpaqueDeviceMemoryDataPointer;

  PJRT_Unused *PJRT_CopyToDeviceStream_Destroy;
  PJRT_Unused *PJRT_CopyToDeviceStream_AddChunk;
  PJRT_Unused *PJRT_CopyToDeviceStream_TotalBytes;
  PJRT_Unused *PJRT_CopyToDeviceStream_GranuleSize;
  PJRT_Unused *PJRT_CopyToDeviceStream_CurrentBytes;

  PJRT_Unused *PJRT_TopologyDescription_Create;
  PJRT_Unused *PJRT_TopologyDescription_Destroy;
  PJRT_Unused *PJRT_TopologyDescription_PlatformName;
  PJRT_Unused *PJRT_TopologyDescription_PlatformVersion;
  PJRT_Unused *PJRT_TopologyDescription_GetDeviceDescriptions;
  PJRT_Unused *PJRT_TopologyDescription_Serialize;
  PJRT_Unused *PJRT_TopologyDescription_Attributes;

  PJRT_Unused *PJRT_Compile;

  /* Appended after the last rearrangement, in order of addition. */
  PJRT_Executable_OutputElementTypes *PJRT_Executable_OutputElementTypes;
  PJRT_Executable_OutputDimensions *PJRT_Executable_OutputDimensions;
  PJRT_Unused *PJRT_Buffer_CopyToMemory;
  PJRT_Unused *PJRT_Client_CreateViewOfDeviceBuffer;
  PJRT_Unused *PJRT_Executable_Fingerprint;
  PJRT_Unused *PJRT_Client_TopologyDescription;
  PJRT_Executable_GetCompiledMemoryStats *PJRT_Executable_GetCompiledMemoryStats;
  PJRT_Unused *PJRT_Memory_Kind_Id;
  PJRT_Unused *PJRT_ExecuteContext_Create;
  PJRT_Unused *PJRT_ExecuteContext_Destroy;
  PJRT_Buffer_CopyRawToHost *PJRT_Buffer_CopyRawToHost;
  PJRT_Unused *PJRT_AsyncHostToDeviceTransferManager_Destroy;
  PJRT_Unused *PJRT_AsyncHostToDeviceTransferManager_TransferData;
  PJRT_Unused *PJRT_Client_CreateBuffersForAsyncHostToDevice;
  PJRT_Unused *PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer;
  PJRT_Unused *PJRT_AsyncHostToDeviceTransferManager_Device;
  PJRT_Unused *PJRT_AsyncHostToDeviceTransferManager_BufferCount;
  PJRT_Unused *PJRT_AsyncHostToDeviceTransferManager_BufferSize;
  PJRT_Unused *PJRT_AsyncHostToDeviceTransferManager_SetBufferError;
  PJRT_Unused *PJRT_AsyncHostToDeviceTransferManager_AddMetadata;
  PJRT_Unused *PJRT_Client_DmaMap;
  PJRT_Unused *PJRT_Client_DmaUnmap;
  PJRT_Unused *PJRT_Client_CreateUninitializedBuffer;
  PJRT_Unused *PJRT_Client_UpdateGlobalProcessInfo;
  PJRT_Unused *PJRT_TopologyDescription_Deserialize;
  PJRT_Unused *PJRT_Client_CreateAliasBuffer;
  PJRT_Unused *PJRT_Client_FulfillAliasBuffer;
  PJRT_Unused *PJRT_LoadedExecutable_GetDeviceAssignment; /* last slot in 0.81 */
  PJRT_Unused *PJRT_Client_CreateErrorBuffer;
  PJRT_Unused *PJRT_AsyncHostToDeviceTransferManager_TransferLiteral;
  PJRT_Unused *PJRT_Buffer_CopyRawToHostFuture;
  PJRT_Unused *PJRT_Device_PoisonExecution;
  PJRT_Unused *PJRT_Device_CreateAsyncTrackingEvent;
  PJRT_Unused *PJRT_AsyncTrackingEvent_Destroy;
  PJRT_Unused *PJRT_Executable_GetCompileOptions;
  PJRT_Unused *PJRT_Buffer_DonateWithControlDependency;
  PJRT_Unused *PJRT_Event_Create;
  PJRT_Unused *PJRT_Event_Set;
  PJRT_Unused *PJRT_Device_GetAttributes;
  PJRT_Unused *PJRT_Client_Load;
  PJRT_Unused *PJRT_LoadedExecutable_AddressableDeviceLogicalIds;
  PJRT_Unused *PJRT_Buffer_Bitcast;
  PJRT_Unused *PJRT_Error_ForEachPayload;
  PJRT_Unused *PJRT_TopologyDescription_Fingerprint;
  PJRT_Unused *PJRT_Executable_ParameterMemoryKinds;
  PJRT_Unused *PJRT_Device_ClearMemoryStats;
  PJRT_Unused *PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace;
  PJRT_Unused *PJRT_TopologyDescription_GetMemorySpaceKindIds; /* last slot in 0.113 */
} PJRT_Api;

/* True when the plugin's table is long enough to hold `slot` and fills it. */
#define TT_PJRT_HAS(api, slot)                                                    \
  ((api)->struct_size >= offsetof(PJRT_Api, slot) + sizeof(void (*)(void)) && \
   (api)->slot != NULL)

typedef const PJRT_Api *(*PJRT_GetPjrtApi_Fn)(void);

/* Layout sanity checks for an LP64 target (x86-64, aarch64). Values computed
 * from the published header. */
#if defined(__LP64__)
_Static_assert(sizeof(PJRT_Api_Version) == 24, "PJRT_Api_Version layout");
_Static_assert(offsetof(PJRT_Api, PJRT_Error_Destroy) == 40, "PJRT_Api head layout");
_Static_assert(offsetof(PJRT_Api, PJRT_Client_Create) == 40 + 10 * 8, "PJRT_Api slot order");
_Static_assert(offsetof(PJRT_Api, PJRT_LoadedExecutable_GetDeviceAssignment) + 8 == 984,
               "PJRT_Api 0.81 table size");
_Static_assert(PJRT_NamedValue_SIZE == 56, "PJRT_NamedValue layout");
_Static_assert(PJRT_KeyValueGetCallback_Args_SIZE == 80 &&
                   offsetof(PJRT_KeyValueGetCallback_Args, callback_error) == 40,
               "PJRT_KeyValueGetCallback_Args layout");
_Static_assert(PJRT_KeyValuePutCallback_Args_SIZE == 64, "PJRT_KeyValuePutCallback_Args layout");
_Static_assert(PJRT_Client_Create_Args_SIZE == 88 && offsetof(PJRT_Client_Create_Args, client) == 64,
               "PJRT_Client_Create_Args layout");
_Static_assert(offsetof(PJRT_ExecuteOptions, multi_slice_config) == 112, "PJRT_ExecuteOptions 0.81 prefix");
_Static_assert(PJRT_Client_BufferFromHostBuffer_Args_SIZE == 120,
               "PJRT_Client_BufferFromHostBuffer_Args layout");
_Static_assert(PJRT_LoadedExecutable_Execute_Args_SIZE == 80,
               "PJRT_LoadedExecutable_Execute_Args layout");
#endif

#endif
