/* The 8-GPU job the unit tests synthesize when they need a real one:
 * GPT-3 15B's shape cut to 4 layers, TP 2, PP 2, DP 2, micro-batch 1,
 * global batch 8 (two stages, each of 4 GPUs with one structure). */
#ifndef LSIM_TEST_SYNTH8_H
#define LSIM_TEST_SYNTH8_H

#include <stdio.h>

#include "lumosim/synth.h"

enum { NG = 8 };

/* g[0..NG) synthesized (caller frees each), or -1 with a line on stderr. */
static int synth_job(lsim_graph **g)
{
    lsim_synth_cfg c;
    lsim_err err;
    lsim_synth_cfg_default(&c);
    lsim_model_builtin("gpt3-15b", &c.model, NULL);
    c.model.layers = 4;
    c.tp = 2, c.pp = 2, c.dp = 2;
    c.micro_batch = 1;
    c.global_batch = 8;
    if (lsim_synth_check(&c, &err)) return -1;
    for (uint32_t i = 0; i < NG; i++)
        if (lsim_synth_gpu(&c, i, NULL, &g[i], &err)) {
            fprintf(stderr, "synth: %s\n", err.msg);
            return -1;
        }
    return 0;
}

#endif
