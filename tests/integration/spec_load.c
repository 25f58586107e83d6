/* spec_load gpu|topo FILE: load a GPU spec (lsim_gpu_spec_load) or a
 * topology (lsim_topology_load) and print its fields as key=value lines, for
 * the calibrate tests (calibrate.sh). Exit 1 with the error on stderr. */
#include <stdio.h>
#include <string.h>

#include "lumosim/cost.h"

int main(int argc, char **argv)
{
    lsim_err err = {0};
    if (argc != 3) {
        fprintf(stderr, "usage: spec_load gpu|topo FILE\n");
        return 2;
    }
    if (!strcmp(argv[1], "gpu")) {
        lsim_gpu_spec g;
        if (lsim_gpu_spec_load(argv[2], &g, &err)) {
            fprintf(stderr, "spec_load: %s\n", err.msg);
            return 1;
        }
        printf("name=%s\npeak_flops=%.17g\ngemm_eff_max=%.17g\ngemm_eff_half=%.17g\nmem_eff=%.17g\n"
               "kernel_min_ns=%lld\nlaunch_cpu_ns=%lld\nlaunch_latency_ns=%lld\n",
               g.name, g.peak_flops, g.gemm_eff_max, g.gemm_eff_half, g.mem_eff, (long long)g.kernel_min_ns,
               (long long)g.launch_cpu_ns, (long long)g.launch_latency_ns);
        return 0;
    }
    lsim_topology t;
    if (lsim_topology_load(argv[2], &t, &err)) {
        fprintf(stderr, "spec_load: %s\n", err.msg);
        return 1;
    }
    printf("gpus_per_node=%d\nintra_bw=%.17g\nintra_lat_ns=%lld\ninter_bw=%.17g\ninter_lat_ns=%lld\ncoll_base_ns=%lld\n"
           "algo=%s\n",
           t.gpus_per_node, t.intra_bw, (long long)t.intra_lat_ns, t.inter_bw, (long long)t.inter_lat_ns,
           (long long)t.coll_base_ns, lsim_coll_algo_name(t.algo));
    return 0;
}
