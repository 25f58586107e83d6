/* A link-sharing run's tables (sim --link-sharing, netshare.h): every flow
 * and every loaded link of the last sweep, as /runs/NAME/net_flows and
 * /runs/NAME/net_links (docs/hdf5-schema.md). The run's attribute
 * "network" summarizes them; these are the rows behind it (issue 37: per
 * collective, its transfer alone and shared; per link, its busy time). */
#include "h5_internal.h"

#include <stddef.h>
#include <stdlib.h>

#include "lumosim/netshare.h"

#define NF(nm, f, t) {nm, t, 1, offsetof(lsim_netshare_flow_row, f), FSZ(lsim_netshare_flow_row, f), M_COPY}
static const mcol flow_cols[] = {
    NF("gpu", gpu, T_U64),          NF("node", node, T_U64),   NF("kind", kind, T_I64),
    NF("participants", parts, T_I64), NF("bytes", bytes, T_I64), NF("links", links, T_I64),
    NF("start", start, T_I64),      NF("alone", alone, T_I64), NF("shared", shared, T_I64),
};
#define NL(nm, f, t) {nm, t, 1, offsetof(lsim_netshare_link_row, f), FSZ(lsim_netshare_link_row, f), M_COPY}
static const mcol link_cols[] = {
    NL("link", link, T_U64),
    NL("flows", flows, T_U64),
    NL("busy", busy_ns, T_F64),
};
#define NCOLS(a) (sizeof a / sizeof a[0])

int h5s_write_run_network(sctx *c, hid_t run, const char *where, const lsim_netshare_detail *d)
{
    /* every rank swept the same flows: rank 0 writes the rows */
    int me0 = !c->mpi || c->rank == 0;
    size_t nf = me0 ? d->nflows : 0, nl = me0 ? d->nlinks : 0;
    const char **names = lsim_calloc(nl ? nl : 1, sizeof *names);
    char *buf = lsim_malloc((nl ? nl : 1) * 48);
    rowsel sf, sl;
    h5s_sel_one(&sf, 0, nf);
    h5s_sel_one(&sl, 0, nl);
    int rc = h5s_agree(c, names && buf ? 0 : h5s_nomem(c));
    for (size_t i = 0; !rc && i < nl; i++) {
        lsim_netshare_link_name((uint32_t)d->links[i].link, (size_t)d->ngpus, d->paths, buf + 48 * i, 48);
        names[i] = buf + 48 * i;
    }
    if (!rc)
        rc = h5s_put_records(c, run, where, "net_flows", flow_cols, NCOLS(flow_cols), d->flows, sizeof *d->flows,
                             d->nflows, &sf, nf, h5s_min_u64(d->nflows ? d->nflows : 1, CHUNK_MAX_ROWS));
    uint64_t lchunk = h5s_min_u64(d->nlinks ? d->nlinks : 1, CHUNK_MAX_ROWS);
    if (!rc)
        rc = h5s_put_records(c, run, where, "net_links", link_cols, NCOLS(link_cols), d->links, sizeof *d->links,
                             d->nlinks, &sl, nl, lchunk);
    if (!rc) rc = h5s_put_strings(c, run, where, "net_links/name", names, nl, d->nlinks, &sl, lchunk);
    h5s_sel_free(&sf);
    h5s_sel_free(&sl);
    free(names);
    free(buf);
    return rc;
}
