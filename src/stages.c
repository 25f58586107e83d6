/* How a model's layers split over the virtual pipeline stages (stages.h;
 * the rules and their sources: docs/synthesis.md "Uneven pipeline
 * stages"). Pure: no MPI, no I/O. */
#include "lumosim/stages.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const NAMES[] = {"even", "embed-loss", "middle", "list"};

const char *lsim_split_name(const lsim_split *sp)
{
    return sp && sp->mode >= 0 && sp->mode <= LSIM_SPLIT_LIST ? NAMES[sp->mode] : "?";
}

int lsim_split_parse(const char *s, lsim_split *out, lsim_err *err)
{
    memset(out, 0, sizeof *out);
    for (int k = 0; k < LSIM_SPLIT_LIST; k++)
        if (!strcmp(s, NAMES[k])) {
            out->mode = k;
            return 0;
        }
    out->mode = LSIM_SPLIT_LIST;
    const char *p = s;
    for (;;) {
        char *end;
        errno = 0;
        long v = *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : -1;
        if (v <= 0 || errno || v > 65535 || (*end && *end != ','))
            return lsim_err_set(err, LSIM_EARG,
                                "--pp-layers '%.60s': expected even, embed-loss, middle or a comma list of layer "
                                "counts from 1 to 65535 (one per virtual stage)",
                                s);
        if (out->n == LSIM_SPLIT_MAX_VS)
            return lsim_err_set(err, LSIM_EARG, "--pp-layers: more than %d virtual stages listed", LSIM_SPLIT_MAX_VS);
        out->list[out->n++] = (uint16_t)v;
        if (!*end) return 0;
        p = end + 1;
    }
}

int lsim_split_check(const lsim_split *sp, int layers, int pp, int V, lsim_err *err)
{
    long S = (long)pp * V;
    if (layers <= 0 || pp <= 0 || V <= 0) return lsim_err_set(err, LSIM_EARG, "pipeline split: bad sizes");
    switch (sp->mode) {
    case LSIM_SPLIT_EVEN:
        if (layers % S)
            return lsim_err_set(err, LSIM_EARG,
                                "%d layers are not divisible by PP x V = %d x %d (pipeline stages x model chunks): "
                                "--pp-layers embed-loss, middle or a list splits them unevenly",
                                layers, pp, V);
        return 0;
    case LSIM_SPLIT_EMBED_LOSS:
        /* the embedding and the loss take one layer's place each; a
         * one-stage pipeline holds both and every layer */
        if (S > 1 && ((layers + 2) % S || (layers + 2) / S < 2))
            return lsim_err_set(err, LSIM_EARG,
                                "--pp-layers embed-loss: %d layers + the embedding + the loss = %d are not divisible "
                                "by PP x V = %d x %d into at least 2 each",
                                layers, layers + 2, pp, V);
        return 0;
    case LSIM_SPLIT_MIDDLE:
        if (layers < S)
            return lsim_err_set(err, LSIM_EARG, "--pp-layers middle: %d layers over PP x V = %d x %d virtual stages "
                                "leaves a stage without a layer", layers, pp, V);
        return 0;
    case LSIM_SPLIT_LIST: {
        if (sp->n != S)
            return lsim_err_set(err, LSIM_EARG,
                                "--pp-layers lists %d virtual stages, but PP x V = %d x %d = %ld", sp->n, pp, V, S);
        long sum = 0;
        for (int i = 0; i < sp->n; i++) sum += sp->list[i];
        if (sum != layers)
            return lsim_err_set(err, LSIM_EARG, "--pp-layers lists %ld layers in all, but the model has %d", sum,
                                layers);
        return 0;
    }
    default: return lsim_err_set(err, LSIM_EARG, "pipeline split: unknown mode %d", sp->mode);
    }
}

int lsim_split_span(const lsim_split *sp, int layers, int pp, int V, int vs, int *first)
{
    int S = pp * V, n, f;
    switch (sp->mode) {
    case LSIM_SPLIT_EMBED_LOSS: {
        if (S == 1) {
            n = layers, f = 0;
            break;
        }
        int q = (layers + 2) / S; /* slots per virtual stage, the embedding's and loss's among them */
        f = vs == 0 ? 0 : vs * q - 1;
        n = q - (vs == 0) - (vs == S - 1);
        break;
    }
    case LSIM_SPLIT_MIDDLE: {
        /* torchtitan: stage 0 gets base, stages 1 .. extra one more, the
         * last what remains */
        int base = layers / S, extra = layers % S;
        f = vs == 0 ? 0 : base + (vs - 1) * base + (vs - 1 < extra ? vs - 1 : extra);
        n = vs == S - 1 ? layers - f : vs == 0 ? base : base + (vs <= extra ? 1 : 0);
        break;
    }
    case LSIM_SPLIT_LIST:
        f = 0;
        for (int i = 0; i < vs; i++) f += sp->list[i];
        n = sp->list[vs];
        break;
    default: n = layers / S, f = vs * n; break;
    }
    if (first) *first = f;
    return n;
}
