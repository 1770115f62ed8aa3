/* pagefeed's C ABI: the structs the library shares with its callers.
 * The functions are declared in the header go build generates
 * (libpagefeed.h), which includes this file. */
#ifndef PAGEFEED_H
#define PAGEFEED_H

#include <stdint.h>
#include <stddef.h>

/* The version of the calls and structs below, which pf_abi_version
 * returns: it changes whenever one of them does. */
#define PF_ABI_VERSION 5

/* The Arrow C Data Interface, as its specification defines it. */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4
struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};
#endif

/* Status codes every call returns (0 or a negative code; pf_next also 1,
 * pf_next_wait also 1 and 2). */
enum {
  PF_OK = 0,
  PF_EOF = 1,            /* pf_next: the last epoch is over */
  PF_TIMEOUT = 2,        /* pf_next_wait: no batch in time, nothing taken */
  PF_ERR = -1,           /* anything else; pf_last_error says what */
  PF_ERR_CONFIG = -2,    /* invalid config, unknown key or column */
  PF_ERR_STATE = -3,     /* a state from another dataset, seed or run */
  PF_ERR_NOT_FOUND = -4, /* a path that does not exist */
  PF_ERR_CORRUPT = -5,   /* bytes that are not valid Parquet (a changed file: -9) */
  PF_ERR_MEMORY = -6,    /* the config needs more than memory_limit */
  PF_ERR_CLOSED = -7,    /* the loader is closed, or no such handle */
  PF_ERR_OS = -8,        /* a system call failed; pf_last_errno says which errno */
  PF_ERR_CHANGED = -9,   /* a file changed since the loader indexed it */
};

/* pf_state's flags. */
#define PF_STATE_COMPACT 1 /* leave out the fields that name the loader */

/* One batch, C-allocated by pf_next and freed by pf_batch_release. Every
 * pointer in it stays valid until then, also after pf_close: the token
 * matrix and its per-token arrays live in one buffer of the engine's
 * (mmap'd, outside the Go heap), which the batch holds. */
typedef struct pf_batch {
  int64_t handle;  /* pass to pf_batch_release / pf_batch_export */
  int64_t rows;
  uint64_t epoch;
  /* tokens output: a [tok_rows, seq_len] int32 matrix in the engine's
   * buffer; NULL otherwise, and with tokens_dtype "int64" (tokens64) */
  const int32_t* tokens;
  int64_t tok_rows;
  int64_t seq_len;
  /* arrow output: ncols columns of nchunks row-aligned chunks each:
   * arrays[c*nchunks + i] is chunk i of column c, schemas[c] its type */
  int64_t ncols;
  int64_t nchunks;
  const char** names;
  struct ArrowSchema* schemas;
  struct ArrowArray* arrays;
  /* tokens output with tokens_dtype "int64": the [tok_rows, seq_len]
   * matrix as int64 (tokens is then NULL); NULL otherwise */
  const int64_t* tokens64;
  /* Each NULL unless its config key is true (tokens output). A segment
   * ends after every EOS, at every row's end and where padding starts.
   * position_ids: [tok_rows, seq_len] int32, each token's position in its
   * segment (0 at a segment's start). loss_mask: [tok_rows, seq_len]
   * uint8, 1 on document tokens and EOS, 0 on padding. cu_seqlens:
   * n_cu int32, the segments' cumulative ends over the flattened matrix
   * from 0 (n_cu is the batch's segments plus one, so it varies from
   * batch to batch; its last value is tok_rows*seq_len). */
  const int32_t* position_ids;
  const uint8_t* loss_mask;
  const int32_t* cu_seqlens;
  int64_t n_cu;
} pf_batch;

/* The message of the calling thread's last failed call ("" after a call
 * that succeeded), like errno: valid until that thread's next call. */
const char* pf_last_error(void);
/* The errno behind the calling thread's last failed call (PF_ERR_OS;
 * others may carry one too), 0 if none. */
int pf_last_errno(void);
/* Set by each call on its thread; not for callers. */
void pf_set_error(char* msg, int eno);
/* Wraps an exported array so that its release also drops a reference on
 * batch (see pf_batch_export). */
int pf_wrap_release(struct ArrowArray* a, int64_t batch);

#endif
