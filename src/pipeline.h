/*
 * pipeline.h — pipeline parallelism (src/pipeline.c): the stages of a
 * model under --pp, each estimated as a model of its own, and the engine's
 * part of a stage's schedule (the micro-batches in flight).
 */
#ifndef VC_PIPELINE_H
#define VC_PIPELINE_H

#include "engine.h"

typedef struct vc_pipeline vc_pipeline;

/* The stages of m under o (o->pp > 1): their models and estimators (flags:
 * VC_EST_*). VC_ERR_USAGE naming --pp when the layers do not split. */
vc_status vc__pp_new(const vc_model *m, const vc_options *o, unsigned flags, vc_pipeline **out, vc_error *err);
/* Every stage at `batch` samples per micro-batch: the busiest stage's
 * figures, the ranks list, and each layer's row from its stage. */
vc_status vc__pp_run(vc_pipeline *p, int64_t batch, vc_result *r, vc_error *err);
/* The busiest stage's memory.total at `batch`. */
vc_status vc__pp_total(vc_pipeline *p, int64_t batch, int64_t *total, vc_error *err);
void vc__pp_free(vc_pipeline *p);
/* units layers over pp stages: count[r] for each stage (even, or the
 * middle stages ceil(units / pp) each and the first and last the rest,
 * halved); VC_ERR_USAGE naming --pp when it cannot. */
vc_status vc__pp_split(size_t units, int64_t pp, int64_t *count, vc_error *err);

struct vc_build;
/* autograd.c's part. Whether m is a stage whose schedule holds other
 * micro-batches at its first or second backward (m->stage.hold). */
bool vc__pp_holds(const vc_model *m);
/* After the forward of a stage's first micro-batch (its events from storage
 * s0 on): of what it left alive, each model chunk's part kept
 * m->stage.hold[c] times (copies after the first). */
void vc__pp_hold(struct vc_build *b, size_t s0);
/* Before the second backward: each chunk's copies brought to
 * m->stage.hold[nchunks + c] (the oldest dropped first, or copies added). */
void vc__pp_second(struct vc_build *b);
/* Drops every held micro-batch. */
void vc__pp_release(struct vc_build *b);

#endif
