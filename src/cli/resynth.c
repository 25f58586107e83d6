/* lumosim whatif --ep / --cp / --fsdp on a synthesized store: the job is
 * synthesized again from the store's recorded arguments (its "synth_args"
 * attribute, written by lumosim synth) with the new widths, and written as
 * lumosim synth writes a store, with the what-if's record (the row and its
 * reasons: src/run/whatif_resynth.c; docs/whatif.md "Re-synthesis").
 *
 * The rules a what-if keeps for every width it changes hold here too:
 * the other widths stay as they were; --dp keeps the per-replica batch
 * (the micro-batches per pipeline stay, the global batch follows DP);
 * --micro-batches sets the micro-batches; a full-shard FSDP stays full
 * shard over the new DP. Options that edit graphs rather than the job's
 * description (stragglers, noise, a source GPU or network) are refused:
 * they apply to the new store with a second lumosim whatif. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "lumosim/store.h"
#include "lumosim/whatif_steps.h"

/* The growing argument list of the new job. */
typedef struct argl {
    char **v;
    int n;
    size_t cap;
} argl;

static int push(argl *a, const char *s)
{
    if (LSIM_GROW(a->v, &a->cap, (size_t)a->n + 2)) return LSIM_ENOMEM;
    if (!(a->v[a->n] = strdup(s))) return LSIM_ENOMEM;
    a->v[++a->n] = NULL;
    return 0;
}

static int push2(argl *a, const char *opt, const char *val)
{
    int rc = push(a, opt);
    return rc ? rc : push(a, val);
}

static int push_long(argl *a, const char *opt, long x)
{
    char b[32];
    snprintf(b, sizeof b, "%ld", x);
    return push2(a, opt, b);
}

static void argl_free(argl *a)
{
    for (int i = 0; i < a->n; i++) free(a->v[i]);
    free(a->v);
}

/* The options whose recorded values the re-synthesis replaces (they take
 * a value each): dropped from the recorded list, then given again. */
/* The what-if options given with use u (whatif_steps.h's resynth use), in
 * table order: *i is where to look from, the next one's index returned
 * (SIZE_MAX: none left). */
static size_t next_given(const lsim_wi_request *rq, lsim_wi_resynth_use u, size_t i)
{
    for (; i < lsim_wi_nopts(); i++)
        if (lsim_wi_opt_at(i)->resynth == u && lsim_wi_opt_given(rq, i)) return i;
    return SIZE_MAX;
}

/* A recorded argument the new job's replace: those the re-synthesis always
 * writes, and lumosim synth's options of the what-if options given. */
static int replaced(const char *tok, const lsim_wi_request *rq, size_t *len)
{
    static const char *const ALWAYS[] = {"--dp", "--global-batch", "--gpus", "--fsdp", "-o", "--output"};
    *len = strcspn(tok, "=");
    for (size_t k = 0; k < sizeof ALWAYS / sizeof *ALWAYS; k++)
        if (strlen(ALWAYS[k]) == *len && !strncmp(tok, ALWAYS[k], *len)) return 1;
    for (int u = LSIM_WI_RS_SYNTH; u <= LSIM_WI_RS_OWN; u++)
        for (size_t i = next_given(rq, (lsim_wi_resynth_use)u, 0); i != SIZE_MAX;
             i = next_given(rq, (lsim_wi_resynth_use)u, i + 1)) {
            const char *nm = lsim_wi_opt_at(i)->name;
            if (strlen(nm) == *len && !strncmp(tok, nm, *len)) return 1;
        }
    return 0;
}

/* An option that edits graphs, which the re-synthesis cannot carry. */
static const char *graph_option(const lsim_wi_request *rq)
{
    size_t i = next_given(rq, LSIM_WI_RS_EDITS, 0);
    return i == SIZE_MAX ? NULL : lsim_wi_opt_at(i)->name;
}

/* The recorded arguments: a JSON array of strings into a (with -o out). */
static int recorded(const lsim_wi_request *rq, const char *txt, argl *a, lsim_err *err)
{
    cJSON *doc = cJSON_Parse(txt);
    int rc = 0;
    if (!doc || !cJSON_IsArray(doc)) {
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: attribute synth_args is not a JSON array of arguments", rq->in);
        goto cleanup;
    }
    for (const cJSON *it = doc->child; it; it = it->next) {
        if (!cJSON_IsString(it)) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: attribute synth_args holds a value that is not a string", rq->in);
            goto cleanup;
        }
        if ((rc = push(a, it->valuestring))) goto cleanup;
    }
cleanup:
    cJSON_Delete(doc);
    if (rc == LSIM_ENOMEM) lsim_err_set(err, rc, "out of memory");
    return rc;
}

/* The new job's arguments: the recorded ones but those replaced, then
 * the widths, batch and files of the what-if; sa0 the recorded job. */
static int new_args(const lsim_wi_request *rq, const argl *old, const lsim_cli_synth_args *sa0, argl *a)
{
    int rc = 0;
    for (int i = 0; !rc && i < old->n; i++) {
        size_t len;
        if (replaced(old->v[i], rq, &len)) {
            i += old->v[i][len] == '=' ? 0 : 1; /* and its value */
            continue;
        }
        rc = push(a, old->v[i]);
    }
    long dp = rq->dp ? rq->dp : sa0->dp;
    long m = rq->micro_batches ? rq->micro_batches : sa0->global_batch / ((long)sa0->micro_batch * sa0->dp);
    long fsdp = rq->fsdp > 0                       ? rq->fsdp
                : rq->fsdp == LSIM_WI_FSDP_FULL    ? dp
                : rq->fsdp == LSIM_WI_FSDP_OFF     ? 0
                : sa0->fsdp > 0 && sa0->fsdp == sa0->dp ? dp /* full shard stays full shard */
                                                   : sa0->fsdp;
    if (!rc) rc = push_long(a, "--dp", dp);
    if (!rc) rc = push_long(a, "--global-batch", (long)sa0->micro_batch * dp * m);
    if (!rc && fsdp > 0) rc = push_long(a, "--fsdp", fsdp);
    /* lumosim synth's options of the what-if options given, as given */
    for (size_t i = next_given(rq, LSIM_WI_RS_SYNTH, 0); !rc && i != SIZE_MAX; i = next_given(rq, LSIM_WI_RS_SYNTH, i + 1)) {
        const lsim_wi_opt *o = lsim_wi_opt_at(i);
        const char *at = (const char *)rq + o->off;
        if (o->kind == LSIM_WI_OPT_LONG) rc = push_long(a, o->name, *(const long *)(const void *)at);
        else if (o->kind == LSIM_WI_OPT_STR) rc = push2(a, o->name, *(const char *const *)(const void *)at);
        /* LSIM_WI_RS_SYNTH is for integer and string options only
         * (test_whatif_rules checks the table); any other is left out */
    }
    if (!rc && rq->vstages) {
        char b[48];
        if (rq->vstages > 1) snprintf(b, sizeof b, "interleaved:%ld", rq->vstages);
        else snprintf(b, sizeof b, "1f1b");
        rc = push2(a, "--schedule", b);
    }
    return rc;
}

/* The record: the source, the arguments before and after, and each width
 * that changed as [from, to]. NULL: out of memory. */
static char *record(const lsim_wi_request *rq, const char *from_json, const char *to_json, const lsim_cli_synth_args *s0,
                    const lsim_cli_synth_args *s1)
{
    cJSON *r = cJSON_CreateObject(), *ch = cJSON_CreateObject();
    char *txt = NULL;
    if (!r || !ch) goto cleanup;
    cJSON_AddStringToObject(r, "source", rq->in);
    cJSON_AddStringToObject(r, "how", "synthesized again from the source's synth_args with the new widths");
    cJSON_AddItemToObject(r, "from_args", cJSON_Parse(from_json));
    cJSON_AddItemToObject(r, "to_args", cJSON_Parse(to_json));
    const char *names[] = {"tp", "pp", "dp", "ep", "etp", "cp", "fsdp", "global_batch", "vstages"};
    long v0[] = {s0->tp, s0->pp, s0->dp, s0->ep > 1 ? s0->ep : 1, s0->etp > 1 ? s0->etp : 1, s0->cp > 1 ? s0->cp : 1,
                 s0->fsdp, s0->global_batch, s0->vstages > 1 ? s0->vstages : 1};
    long v1[] = {s1->tp, s1->pp, s1->dp, s1->ep > 1 ? s1->ep : 1, s1->etp > 1 ? s1->etp : 1, s1->cp > 1 ? s1->cp : 1,
                 s1->fsdp, s1->global_batch, s1->vstages > 1 ? s1->vstages : 1};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        if (v0[k] == v1[k]) continue;
        double p[2] = {(double)v0[k], (double)v1[k]};
        cJSON_AddItemToObject(ch, names[k], cJSON_CreateDoubleArray(p, 2));
    }
    cJSON_AddItemToObject(r, "changed", ch);
    ch = NULL;
    txt = cJSON_PrintUnformatted(r);
cleanup:
    cJSON_Delete(ch);
    cJSON_Delete(r);
    return txt;
}

int lsim_cli_whatif_resynth(const lsim_wi_request *rq, lsim_err *err)
{
    argl old = {0}, neu = {0};
    char *txt = NULL, *to_json = NULL, *rec = NULL;
    lsim_cli_synth_args s0, s1;
    int rc = 0;
    const char *g = graph_option(rq);
    if (g) {
        return lsim_err_set(err, LSIM_EARG,
                            "%s with --ep, --cp, --fsdp or --resynth: those synthesize the job again, %s edits a job's graphs: "
                            "apply it to the new store with a second lumosim whatif",
                            g, g);
    }
    if (!rq->out) return lsim_err_set(err, LSIM_EARG, "whatif --ep, --cp, --fsdp and --resynth need -o NEW.h5");
    rc = lsim_store_read_attr(rq->in, "synth_args", &txt, err);
    if (rc == LSIM_EARG)
        return lsim_err_set(err, LSIM_EARG,
                            "%s: no synth_args attribute: --ep, --cp, --fsdp and --resynth synthesize the job again from the "
                            "arguments lumosim synth records, and this store was built from traces, written by a "
                            "what-if's graph edits, or synthesized before they were recorded",
                            rq->in);
    if (rc) return rc;
    if ((rc = recorded(rq, txt, &old, err))) goto cleanup;
    if ((rc = push2(&old, "-o", rq->out))) goto nomem;
    /* the recorded job (parsed once already by the synth that wrote it) */
    if (lsim_cli_parse_synth(old.n, old.v, LSIM_USAGE_SYNTH, &s0) <= 0) {
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: attribute synth_args: not arguments lumosim synth takes", rq->in);
        goto cleanup;
    }
    if ((rc = new_args(rq, &old, &s0, &neu))) goto nomem;
    if ((rc = push2(&neu, "-o", rq->out))) goto nomem;
    if (lsim_cli_parse_synth(neu.n, neu.v, LSIM_USAGE_SYNTH, &s1) <= 0) {
        rc = lsim_err_set(err, LSIM_EARG, "the re-synthesized job's arguments are not lumosim synth's (above)");
        goto cleanup;
    }
    if (!(to_json = lsim_cli_synth_args_json(neu.n, neu.v)) || !(rec = record(rq, txt, to_json, &s0, &s1))) goto nomem;
    lsim_world one = {0, 0, 1};
    lsim_cli_synth_job j = {&s1, rq->cmd, to_json, rec, rq->in};
    if ((rc = lsim_cli_synth_write(&one, &j, err))) goto cleanup;
    fputs(rec, stdout);
    fputc('\n', stdout);
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
cleanup:
    argl_free(&old);
    argl_free(&neu);
    free(txt);
    free(to_json);
    free(rec);
    return rc;
}
