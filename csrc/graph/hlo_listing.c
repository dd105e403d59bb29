#include "graph/hlo_listing.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Field numbers of xla/service/hlo.proto and xla/xla_data.proto. */
enum {
  MODULE_NAME = 1, MODULE_ENTRY_NAME = 2, MODULE_COMPUTATIONS = 3, MODULE_ENTRY_ID = 6,
  COMP_NAME = 1, COMP_INSTRUCTIONS = 2, COMP_ID = 5, COMP_ROOT_ID = 6, COMP_IS_FUSION = 7,
  INSTR_NAME = 1, INSTR_OPCODE = 2, INSTR_SHAPE = 3, INSTR_PARAMETER_NUMBER = 9,
  INSTR_FUSION_KIND = 11, INSTR_TUPLE_INDEX = 13, INSTR_CUSTOM_CALL_TARGET = 28, INSTR_ID = 35,
  INSTR_OPERAND_IDS = 36, INSTR_CALLED_IDS = 38, INSTR_COMPARISON = 63,
  SHAPE_ELEMENT_TYPE = 2, SHAPE_DIMENSIONS = 3, SHAPE_TUPLE_SHAPES = 4,
};
enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_BYTES = 2, WIRE_FIXED32 = 5 };
enum { TYPE_TUPLE = 13, MAX_SHAPE_DEPTH = 16, MAX_NAME_CHARS = 256 };

/* ------------------------------------------------------ wire format reader */

typedef struct {
  const uint8_t *base; /* start of the whole input: offsets in messages */
  const uint8_t *p, *end;
} reader;

typedef struct {
  uint32_t field, wire;
  uint64_t value;      /* varint and fixed fields */
  const uint8_t *data; /* length-delimited fields */
  size_t len;
} field;

static tt_error *malformed(const reader *r, const char *what) {
  return tt_error_new(TT_ERR_INVALID_ARGUMENT, "malformed HloModuleProto at byte %zu: %s",
                      (size_t)(r->p - r->base), what);
}

static bool read_varint(reader *r, uint64_t *v) {
  *v = 0;
  for (int i = 0; i < 10; i++) {
    if (r->p >= r->end) return false;
    uint8_t b = *r->p++;
    *v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) return true;
  }
  return false;
}

static bool at_end(const reader *r) { return r->p >= r->end; }

/* The next field of a message; an error on truncation or an unknown wire type. */
static tt_error *next_field(reader *r, field *f) {
  uint64_t key;
  memset(f, 0, sizeof *f);
  if (!read_varint(r, &key)) return malformed(r, "truncated field key");
  f->field = (uint32_t)(key >> 3);
  f->wire = (uint32_t)(key & 7);
  if (key >> 3 == 0 || key >> 3 > 536870911u) return malformed(r, "bad field number");
  switch (f->wire) {
    case WIRE_VARINT:
      if (!read_varint(r, &f->value)) return malformed(r, "truncated varint");
      return NULL;
    case WIRE_FIXED64:
    case WIRE_FIXED32: {
      size_t n = f->wire == WIRE_FIXED64 ? 8 : 4;
      if ((size_t)(r->end - r->p) < n) return malformed(r, "truncated fixed-width field");
      for (size_t i = 0; i < n; i++) f->value |= (uint64_t)r->p[i] << (8 * i);
      r->p += n;
      return NULL;
    }
    case WIRE_BYTES: {
      uint64_t len;
      if (!read_varint(r, &len)) return malformed(r, "truncated length");
      if (len > (uint64_t)(r->end - r->p)) return malformed(r, "length past the end of its message");
      f->data = r->p;
      f->len = (size_t)len;
      r->p += len;
      return NULL;
    }
    default:
      return malformed(r, "unsupported wire type (groups are not used by HLO protos)");
  }
}

static reader sub_reader(const reader *r, const field *f) {
  return (reader){r->base, f->data, f->data + f->len};
}

/* The values of a repeated integer field: packed (one length-delimited
 * field) or one varint per occurrence. Calls each(v, ctx) per value. */
static tt_error *for_each_int(const reader *r, const field *f, void (*each)(int64_t, void *),
                              void *ctx) {
  if (f->wire == WIRE_VARINT) {
    each((int64_t)f->value, ctx);
    return NULL;
  }
  if (f->wire != WIRE_BYTES) return malformed(r, "a repeated integer with a fixed-width wire type");
  reader packed = sub_reader(r, f);
  while (!at_end(&packed)) {
    uint64_t v;
    if (!read_varint(&packed, &v)) return malformed(&packed, "truncated packed integer");
    each((int64_t)v, ctx);
  }
  return NULL;
}

/* ------------------------------------------------------------ text output */

typedef struct {
  char *s;
  size_t n, cap;
  bool oom;
} text;

static void grow(text *t, size_t more) {
  if (t->oom || t->n + more + 1 <= t->cap) return;
  size_t cap = t->cap ? t->cap : 1024;
  while (cap < t->n + more + 1) cap *= 2;
  char *s = realloc(t->s, cap);
  if (!s) {
    t->oom = true;
    return;
  }
  t->s = s;
  t->cap = cap;
}

__attribute__((format(printf, 2, 3))) static void put(text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  grow(t, (size_t)n);
  if (t->oom) return;
  va_start(ap, fmt);
  vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
  va_end(ap);
  t->n += (size_t)n;
}

/* A string field, printable characters only, at most MAX_NAME_CHARS. */
static void put_str(text *t, const uint8_t *s, size_t n) {
  if (n > MAX_NAME_CHARS) n = MAX_NAME_CHARS;
  grow(t, n);
  if (t->oom) return;
  for (size_t i = 0; i < n; i++) t->s[t->n++] = (s[i] >= 0x20 && s[i] < 0x7f) ? (char)s[i] : '?';
  t->s[t->n] = 0;
}

static const char *type_name(uint64_t type) {
  static const char *const names[] = {
      "invalid", "pred", "s8",  "s16", "s32",    "s64",  "u8",    "u16",  "u32", "u64",
      "f16",     "f32",  "f64", "tuple", "opaque", "c64", "bf16", "token", "c128", "f8e5m2",
      "f8e4m3fn", "s4",  "u4"};
  if (type < sizeof names / sizeof names[0]) return names[type];
  if (type == 26) return "s2";
  if (type == 27) return "u2";
  if (type == 28) return "f8e4m3";
  return NULL;
}

typedef struct {
  text *t;
  int count;
} dims_ctx;

static void put_dim(int64_t v, void *ctx) {
  dims_ctx *d = ctx;
  put(d->t, "%s%lld", d->count++ ? "," : "", (long long)v);
}

/* A ShapeProto: f32[4,8], or (f32[4], s32[]) for a tuple. */
static tt_error *put_shape(text *t, reader r, int depth) {
  if (depth > MAX_SHAPE_DEPTH) return malformed(&r, "tuple shapes nested too deep");
  uint64_t type = 0;
  reader scan = r;
  field f;
  while (!at_end(&scan)) {
    TT_TRY(next_field(&scan, &f));
    if (f.field == SHAPE_ELEMENT_TYPE && f.wire == WIRE_VARINT) type = f.value;
  }
  if (type == TYPE_TUPLE) {
    put(t, "(");
    int k = 0;
    while (!at_end(&r)) {
      TT_TRY(next_field(&r, &f));
      if (f.field != SHAPE_TUPLE_SHAPES || f.wire != WIRE_BYTES) continue;
      if (k++) put(t, ", ");
      TT_TRY(put_shape(t, sub_reader(&r, &f), depth + 1));
    }
    put(t, ")");
    return NULL;
  }
  const char *name = type_name(type);
  if (name) put(t, "%s[", name);
  else put(t, "type%llu[", (unsigned long long)type);
  dims_ctx d = {t, 0};
  while (!at_end(&r)) {
    TT_TRY(next_field(&r, &f));
    if (f.field == SHAPE_DIMENSIONS) TT_TRY(for_each_int(&r, &f, put_dim, &d));
  }
  put(t, "]");
  return NULL;
}

/* ---------------------------------------------------------------- listing */

typedef struct {
  int64_t id;
  const uint8_t *name;
  size_t name_len;
} named;

typedef struct {
  named *v;
  int n, cap;
} names;

static bool names_add(names *ns, int64_t id, const uint8_t *name, size_t len) {
  if (ns->n == ns->cap) {
    int cap = ns->cap ? 2 * ns->cap : 32;
    named *v = realloc(ns->v, (size_t)cap * sizeof *v);
    if (!v) return false;
    ns->v = v;
    ns->cap = cap;
  }
  ns->v[ns->n++] = (named){id, name, len};
  return true;
}

static const named *names_find(const names *ns, int64_t id) {
  for (int i = 0; i < ns->n; i++)
    if (ns->v[i].id == id) return &ns->v[i];
  return NULL;
}

typedef struct {
  text *t;
  const names *ns;
  int count;
} refs_ctx;

static void put_ref(int64_t id, void *ctx) {
  refs_ctx *c = ctx;
  put(c->t, "%s%%", c->count++ ? ", " : "");
  const named *n = names_find(c->ns, id);
  if (n) put_str(c->t, n->name, n->name_len);
  else put(c->t, "id%lld", (long long)id);
}

static bool field_is(const field *f, const char *s) {
  size_t n = strlen(s);
  return f->len == n && memcmp(f->data, s, n) == 0;
}

static tt_error *put_instruction(text *t, reader r, const names *instrs, const names *comps,
                                 int64_t root_id, tt_hlo_listing_stats *st) {
  field f, name = {0}, opcode = {0}, shape = {0}, kind = {0}, target = {0}, cmp = {0};
  int64_t id = INT64_MIN, param = -1, tuple_index = -1;
  bool has_shape = false;
  reader scan = r;
  while (!at_end(&scan)) {
    TT_TRY(next_field(&scan, &f));
    if (f.wire == WIRE_BYTES) {
      if (f.field == INSTR_NAME) name = f;
      else if (f.field == INSTR_OPCODE) opcode = f;
      else if (f.field == INSTR_SHAPE) shape = f, has_shape = true;
      else if (f.field == INSTR_FUSION_KIND) kind = f;
      else if (f.field == INSTR_CUSTOM_CALL_TARGET) target = f;
      else if (f.field == INSTR_COMPARISON) cmp = f;
    } else if (f.wire == WIRE_VARINT) {
      if (f.field == INSTR_ID) id = (int64_t)f.value;
      else if (f.field == INSTR_PARAMETER_NUMBER) param = (int64_t)f.value;
      else if (f.field == INSTR_TUPLE_INDEX) tuple_index = (int64_t)f.value;
    }
  }
  if (!opcode.data) return malformed(&r, "an instruction without an opcode");
  st->instructions++;
  if (field_is(&opcode, "fusion")) st->fusions++;
  put(t, "  %s%%", id == root_id ? "ROOT " : "");
  put_str(t, name.data, name.len);
  put(t, " = ");
  if (has_shape) {
    TT_TRY(put_shape(t, sub_reader(&r, &shape), 0));
    put(t, " ");
  }
  put_str(t, opcode.data, opcode.len);
  put(t, "(");
  if (field_is(&opcode, "parameter")) {
    put(t, "%lld", (long long)(param < 0 ? 0 : param));
  } else {
    refs_ctx operands = {t, instrs, 0};
    reader ops = r;
    while (!at_end(&ops)) {
      TT_TRY(next_field(&ops, &f));
      if (f.field == INSTR_OPERAND_IDS) TT_TRY(for_each_int(&ops, &f, put_ref, &operands));
    }
  }
  put(t, ")");
  if (tuple_index >= 0 && field_is(&opcode, "get-tuple-element"))
    put(t, ", index=%lld", (long long)tuple_index);
  if (cmp.data) put(t, ", direction="), put_str(t, cmp.data, cmp.len);
  if (kind.data) put(t, ", kind="), put_str(t, kind.data, kind.len);
  if (target.data) put(t, ", custom_call_target=\""), put_str(t, target.data, target.len), put(t, "\"");
  refs_ctx called = {t, comps, 0};
  reader calls = r;
  while (!at_end(&calls)) {
    TT_TRY(next_field(&calls, &f));
    if (f.field != INSTR_CALLED_IDS) continue;
    if (!called.count) put(t, ", calls=");
    TT_TRY(for_each_int(&calls, &f, put_ref, &called));
  }
  put(t, "\n");
  return NULL;
}

static tt_error *put_computation(text *t, reader r, const names *comps, int64_t entry_id,
                                 tt_hlo_listing_stats *st) {
  names instrs = {0};
  field f, name = {0};
  int64_t id = INT64_MIN, root_id = INT64_MIN;
  bool fusion = false;
  tt_error *err = NULL;
  reader scan = r;
  while (!err && !at_end(&scan)) {
    if ((err = next_field(&scan, &f))) break;
    if (f.field == COMP_NAME && f.wire == WIRE_BYTES) name = f;
    else if (f.field == COMP_ID && f.wire == WIRE_VARINT) id = (int64_t)f.value;
    else if (f.field == COMP_ROOT_ID && f.wire == WIRE_VARINT) root_id = (int64_t)f.value;
    else if (f.field == COMP_IS_FUSION && f.wire == WIRE_VARINT) fusion = f.value != 0;
    else if (f.field == COMP_INSTRUCTIONS && f.wire == WIRE_BYTES) {
      /* the instruction's id and name, for operand references */
      reader ir = sub_reader(&scan, &f);
      field g, iname = {0};
      int64_t iid = INT64_MIN;
      while (!err && !at_end(&ir)) {
        if ((err = next_field(&ir, &g))) break;
        if (g.field == INSTR_NAME && g.wire == WIRE_BYTES) iname = g;
        else if (g.field == INSTR_ID && g.wire == WIRE_VARINT) iid = (int64_t)g.value;
      }
      if (!err && !names_add(&instrs, iid, iname.data, iname.len))
        err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory listing HLO");
    }
  }
  if (!err) {
    st->computations++;
    put(t, "\ncomputation ");
    put_str(t, name.data, name.len);
    put(t, "%s%s:\n", fusion ? " (fusion)" : "", id == entry_id ? " (entry)" : "");
  }
  while (!err && !at_end(&r)) {
    if ((err = next_field(&r, &f))) break;
    if (f.field == COMP_INSTRUCTIONS && f.wire == WIRE_BYTES)
      err = put_instruction(t, sub_reader(&r, &f), &instrs, comps, root_id, st);
  }
  free(instrs.v);
  return err;
}

static tt_error *listing(reader r, text *t, tt_hlo_listing_stats *st) {
  names comps = {0};
  field f, name = {0}, entry = {0};
  int64_t entry_id = INT64_MIN;
  tt_error *err = NULL;
  reader scan = r;
  while (!err && !at_end(&scan)) {
    if ((err = next_field(&scan, &f))) break;
    if (f.field == MODULE_NAME && f.wire == WIRE_BYTES) name = f;
    else if (f.field == MODULE_ENTRY_NAME && f.wire == WIRE_BYTES) entry = f;
    else if (f.field == MODULE_ENTRY_ID && f.wire == WIRE_VARINT) entry_id = (int64_t)f.value;
    else if (f.field == MODULE_COMPUTATIONS && f.wire == WIRE_BYTES) {
      reader cr = sub_reader(&scan, &f);
      field g, cname = {0};
      int64_t cid = INT64_MIN;
      while (!err && !at_end(&cr)) {
        if ((err = next_field(&cr, &g))) break;
        if (g.field == COMP_NAME && g.wire == WIRE_BYTES) cname = g;
        else if (g.field == COMP_ID && g.wire == WIRE_VARINT) cid = (int64_t)g.value;
      }
      if (!err && !names_add(&comps, cid, cname.data, cname.len))
        err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory listing HLO");
    }
  }
  if (!err && comps.n == 0) err = malformed(&scan, "no computations (not an HloModuleProto?)");
  if (!err) {
    put(t, "HloModule ");
    put_str(t, name.data, name.len);
    put(t, ", entry computation ");
    put_str(t, entry.data, entry.len);
    put(t, "\n");
  }
  while (!err && !at_end(&r)) {
    if ((err = next_field(&r, &f))) break;
    if (f.field == MODULE_COMPUTATIONS && f.wire == WIRE_BYTES)
      err = put_computation(t, sub_reader(&r, &f), &comps, entry_id, st);
  }
  free(comps.v);
  return err;
}

/* PJRT's "hlo_with_config" format is an xla.HloModuleProtoWithConfig: the
 * module in field 1, its config in field 2. The module itself when the
 * input has no computations of its own and a field 1 holds a message. */
static reader unwrap_config(reader r) {
  reader scan = r, inner = r;
  field f;
  bool has_comps = false, has_inner = false;
  while (!at_end(&scan)) {
    tt_error *err = next_field(&scan, &f);
    if (err) { /* malformed: listing() reports it */
      tt_error_free(err);
      return r;
    }
    if (f.field == MODULE_COMPUTATIONS) has_comps = true;
    if (f.field == 1 && f.wire == WIRE_BYTES && !has_inner) {
      inner = sub_reader(&scan, &f);
      has_inner = true;
    }
  }
  return has_comps || !has_inner ? r : inner;
}

tt_error *tt_hlo_listing(const void *proto, size_t n, char **out, tt_hlo_listing_stats *stats) {
  if (!out) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_hlo_listing: NULL argument");
  *out = NULL;
  if (!proto && n) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_hlo_listing: NULL argument");
  tt_hlo_listing_stats st = {0};
  const uint8_t *p = proto ? proto : (const uint8_t *)"";
  text t = {0};
  tt_error *err = listing(unwrap_config((reader){p, p, p + n}), &t, &st);
  if (!err) {
    grow(&t, 1);
    if (t.oom) err = tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory listing HLO");
  }
  if (err) {
    free(t.s);
    return err;
  }
  t.s[t.n] = 0;
  *out = t.s;
  if (stats) *stats = st;
  return NULL;
}
