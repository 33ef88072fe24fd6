/*
 * pipeline.h — pipeline parallelism (src/parallel/pipeline.c): the stages of a
 * model under --pp, each estimated as a model of its own, and the engine's
 * part of a stage's schedule (the micro-batches in flight). It sits in
 * src/engine/, which calls it (autograd.c, estimate.c, sweep.c), as plan.h
 * holds the layouts' hooks: src/parallel/ implements both and includes
 * src/engine/, never the other way round (include_cycles).
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

/* ---- pipeline_sched.c: the schedules' rows and tables. A rank of V model
 * chunks runs M x V virtual micro-batches: warm-up forwards, 1F1B pairs,
 * cooldown backwards. */
typedef struct {
    const char *name;
    /* the warm-up forwards of rank r (of pp) with v model chunks, before the
     * cap at the M x v virtual micro-batches */
    int64_t (*warmup)(int64_t r, int64_t pp, int64_t v);
    /* the schedule's own tensors besides the micro-batches' (stage_extras) */
    bool extras;
} vc_schedule_row;

/* The row for v model chunks per rank: 1F1B (v 1) or interleaved. */
const vc_schedule_row *vc__pp_row(int64_t v);

/* m->stage.hold: the engine's state at the backwards of rank r's schedule.
 * A state is VC_PP_S(v) numbers: per chunk the copies of one micro-batch's
 * part held besides the engine's run, the schedule's one-element and
 * p2p-shaped tensors (stage_extras), and a flag: the chunks before the one
 * run have no gradients yet. hold[0] = v; hold[1 + c] the offset of chunk
 * c's list; from hold[1 + v], each chunk's first backward's state (the
 * engine's first backward, which makes the gradients); then per chunk a
 * list, its count and its states: the other backwards of that chunk, those
 * holding less than another left out (the engine's second backward, into
 * existing gradients, runs the one of them holding the most bytes). */
#define VC_PP_S(v) ((int64_t)(v) + 3)
/* The table (in a's memory, NULL when out of it); in_flight: the virtual
 * micro-batches in flight at the first backward. */
int64_t *vc__pp_schedule(struct vc_arena *a, const vc_schedule_row *row, int64_t r, int64_t pp, int64_t v, int64_t micro,
                         int64_t *in_flight);

/* Whether every state of table a holds no more than one of table b's (a
 * stage with a's table never holds more than the same stage with b's). */
bool vc__pp_below(const int64_t *a, const int64_t *b);

/* ---- pipeline_hold.c: autograd.c's part. */
struct vc_build;
/* Whether m is a stage whose schedule holds anything besides the micro-batch run. */
bool vc__pp_holds(const vc_model *m);
/* After the forward of a stage's first micro-batch (its events from storage
 * s0 on): of what it left alive, each model chunk's part kept as the last
 * chunk's first backward's state says (copies after the first). */
void vc__pp_hold(struct vc_build *b, size_t s0);
/* Before the second pass: the last chunk's state of the second backward
 * (the oldest copies dropped first, or copies added). */
void vc__pp_second(struct vc_build *b);
/* Before a backward node of instance inst: when it starts a chunk before
 * the one the backward was in, that chunk's state. */
void vc__pp_segment(struct vc_build *b, int32_t inst);
/* Drops every held micro-batch. */
void vc__pp_release(struct vc_build *b);

#endif
