#include <stdlib.h>
#include "pagefeed.h"
#include "_cgo_export.h"

/* The last error is per thread: a Go call runs on its caller's thread, so
 * the message it leaves here is the one its caller reads next. */
static __thread char* pf_err;
static __thread int pf_eno;

void pf_set_error(char* msg, int eno) {
  free(pf_err);
  pf_err = msg;
  pf_eno = eno;
}

const char* pf_last_error(void) { return pf_err ? pf_err : ""; }

int pf_last_errno(void) { return pf_eno; }

typedef struct {
  void (*release)(struct ArrowArray*);
  void* private_data;
  int64_t batch;
} pf_wrap;

static void pf_wrapped_release(struct ArrowArray* a) {
  pf_wrap* w = (pf_wrap*)a->private_data;
  int64_t batch = w->batch;
  a->private_data = w->private_data;
  a->release = w->release;
  a->release(a); /* arrow-go's: drops its references and sets release NULL */
  free(w);
  pfBatchUnref(batch);
}

int pf_wrap_release(struct ArrowArray* a, int64_t batch) {
  pf_wrap* w = malloc(sizeof *w);
  if (w == NULL) return -1;
  w->release = a->release;
  w->private_data = a->private_data;
  w->batch = batch;
  a->private_data = w;
  a->release = pf_wrapped_release;
  return 0;
}
