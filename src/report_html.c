/* The HTML report (docs/report-html.md): one self-contained page, inline CSS
 * and inline SVG, no scripts and no external resources. Written straight to
 * the stream with fprintf: nothing is allocated, so memory does not grow with
 * the trace (duty-cycle rows are downsampled on the fly, by averaging bins).
 * Write errors are caught once, with ferror() at the end. */
#include "lumosim/report.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/alloc.h"
#include "lumosim/text.h"

/* ---- fixed colours ------------------------------------------------------ */

/* breakdown parts, bottom to top of a bar */
static const char *const BD_NAME[4] = {"exposed compute", "overlapped", "exposed comm", "other"};
static const char *const BD_COLOR[4] = {"#4e79a7", "#76b7b2", "#f28e2b", "#c9c3bf"};
/* critical-path categories, in lsim_cp_cat order */
static const char *const CP_COLOR[LSIM_CP_NCATS] = {"#59a14f", "#a5d596", "#edc948", "#4e79a7",
                                                    "#f28e2b", "#e15759", "#c9c3bf"};
static const char *const DUTY_COLOR[2] = {"#4e79a7", "#59a14f"}; /* actual, predicted */

#define DUTY_MAX_POINTS 1000

/* ---- small helpers ------------------------------------------------------ */

static double ms(lsim_ns x) { return (double)x / 1e6; }

/* An item's rank, source and iteration names: from its brief when it has
 * one (a GPU of an archive read without its graph), else from its graph. */
static int rank_of(const lsim_replay_item *it, size_t i)
{
    int r = it->brief ? it->brief->rank : it->g->rank;
    return r >= 0 ? r : (int)i;
}
static const char *source_of(const lsim_replay_item *it) { return it->brief ? it->brief->source : it->g->source; }

/* Text from a trace (names, paths) for element content and attribute values:
 * & < > " ' escaped, control characters shown as spaces, bytes that are not
 * UTF-8 as U+FFFD, and "://" broken up
 * (":&#47;/") so that no text can read as a URL to a checker. At most `max`
 * bytes are written (cut on a UTF-8 boundary, then an ellipsis); max 0 means
 * no limit. */
static void esc_n(FILE *f, const char *s, size_t max)
{
    if (!s) s = "";
    size_t len = strlen(s), lim = len;
    if (max && len > max) {
        lim = max;
        while (lim > 0 && ((unsigned char)s[lim] & 0xC0) == 0x80) lim--;
    }
    for (size_t i = 0; i < lim; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        case '/':
            if (i > 0 && s[i - 1] == ':' && i + 1 < len && s[i + 1] == '/') fputs("&#47;", f);
            else fputc('/', f);
            break;
        default:
            if (c >= 0x80) { /* a file name need not be UTF-8; the page says it is */
                size_t l = lsim_utf8_seq(s + i, lim - i);
                if (l) {
                    fwrite(s + i, 1, l, f);
                    i += l - 1;
                } else {
                    fputs("\xEF\xBF\xBD", f); /* U+FFFD */
                }
            } else {
                fputc(c < 0x20 || c == 0x7f ? ' ' : (int)c, f);
            }
            break;
        }
    }
    if (lim < len) fputs("\xe2\x80\xa6", f); /* … */
}

static void esc(FILE *f, const char *s) { esc_n(f, s, 0); }

static const char *str(const lsim_graph *g, uint32_t id)
{
    const char *s = lsim_strtab_get(g->strings, id);
    return s ? s : "?";
}

/* Milliseconds with a precision that suits the magnitude. */
static void put_ms(FILE *f, double v)
{
    double a = fabs(v);
    if (v == 0) {
        fputc('0', f);
        return;
    }
    fprintf(f, a >= 100 ? "%.1f" : a >= 1 ? "%.2f" : a >= 0.01 ? "%.3f" : "%.4f", v);
}

/* A share of a whole, in percent; a small but non-zero share is not "0.0%". */
static void put_share(FILE *f, lsim_ns part, lsim_ns whole)
{
    double p = whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
    if (p > 0 && p < 0.05) fputs("&lt;0.1%", f);
    else fprintf(f, "%.1f%%", p);
}

static void put_pct(FILE *f, double frac)
{
    double p = 100 * frac;
    if (fabs(p) < 0.005) fputs("0.00%", f); /* not "-0.00%" */
    else fprintf(f, "%+.2f%%", p);
}

/* css class for an error: small, notable, large */
static const char *err_class(double frac)
{
    double a = fabs(frac);
    return a <= 0.02 ? "ok" : a <= 0.10 ? "warn" : "bad";
}

/* A round tick step so that [0, max] gets about `want` ticks. */
static double nice_step(double max, int want)
{
    if (!(max > 0)) return 1;
    double raw = max / want, mag = pow(10, floor(log10(raw))), n = raw / mag;
    return (n < 1.5 ? 1 : n < 3 ? 2 : n < 7 ? 5 : 10) * mag;
}

static int step_decimals(double step)
{
    int d = (int)ceil(-log10(step) - 1e-9);
    return d < 0 ? 0 : d > 6 ? 6 : d;
}

static double sum4(const double v[4]) { return v[0] + v[1] + v[2] + v[3]; }

static void bd_ms(const lsim_breakdown *b, double out[4])
{
    out[0] = ms(b->exposed_compute);
    out[1] = ms(b->overlapped);
    out[2] = ms(b->exposed_comm);
    out[3] = ms(b->other);
}

static void legend(FILE *f, int n, const char *const *names, const char *const *colors)
{
    fputs("<div class=\"legend\">", f);
    for (int k = 0; k < n; k++)
        fprintf(f, "<span><i class=\"sw\" style=\"background:%s\"></i>%s</span>", colors[k], names[k]);
    fputs("</div>\n", f);
}

static double mean(const double *v, uint32_t n)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++) s += v[i];
    return n ? s / n : 0.0;
}

/* A graph with no observed node (synthesized or what-if): its "actual"
 * figures are absent. Such a rank is drawn predicted only, with "-" where an
 * actual figure would be; ranks with observations are drawn as before. */
static int has_obs(const lsim_replay_item *it)
{
    return it->brief ? it->brief->observed : lsim_metrics_observed_nodes(it->g) > 0;
}
/* the actual side is shown: observed, and not a copy of another rank */
static int shows_obs(const lsim_replay_item *it) { return has_obs(it) && !it->unmeasured; }

static const char *iter_name(const lsim_replay_item *it, uint32_t k)
{
    if (it->brief && it->brief->iter_names) return it->brief->iter_names[k] ? it->brief->iter_names[k] : "?";
    return it->g ? str(it->g, it->r->iters[k].name) : "?";
}

static const char NO_OBS_NOTE[] = "no observed times (synthesized or what-if graph)";


/* ---- page frame ----------------------------------------------------------- */

static const char CSS[] =
    ":root{--fg:#1d2430;--mut:#5b6472;--line:#dde1e6;--bg:#f3f5f8}"
    "*{box-sizing:border-box}"
    "body{margin:0;background:var(--bg);color:var(--fg);"
    "font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif}"
    "header{background:#1f2a37;color:#fff;padding:16px 28px}"
    "header h1{margin:0;font-size:21px;font-weight:600}"
    "header .meta{color:#c3ccd8;font-size:13px;margin-top:3px}"
    "main{max-width:1240px;margin:0 auto;padding:8px 20px 40px}"
    "h2{font-size:19px;margin:26px 0 2px}"
    "h3{font-size:15px;margin:0 0 4px}h3.sub{margin-top:16px}"
    ".card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:12px 18px 14px;margin:12px 0}"
    ".note{color:var(--mut);font-size:12.5px;margin:0 0 8px}"
    ".src{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;color:var(--mut);"
    "word-break:break-all}"
    ".scroll{overflow-x:auto}"
    "table{border-collapse:collapse;font-size:13px;margin-top:6px}"
    "th,td{padding:3px 10px;border-bottom:1px solid #eceff3;text-align:right;white-space:nowrap;"
    "font-variant-numeric:tabular-nums}"
    "th{background:#f6f7f9;font-weight:600}"
    "th.l,td.l{text-align:left}"
    "td.nm{text-align:left;white-space:normal;word-break:break-all;max-width:680px;"
    "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}"
    ".kv td:first-child{text-align:left;color:var(--mut)}"
    ".cols{display:flex;flex-wrap:wrap;gap:10px 36px;align-items:flex-start}"
    ".legend{display:flex;flex-wrap:wrap;gap:4px 18px;font-size:13px;margin:2px 0 4px}"
    ".sw{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:-1px}"
    ".ok{color:#2e7d32}.warn{color:#a15c00}.bad{color:#c62828}"
    "svg{display:block}"
    "svg text{font-family:inherit;font-size:11px;fill:#3a4250}"
    "svg .t{font-size:12px;font-weight:600;fill:#1d2430}"
    "svg .m{fill:#6b7482}"
    "svg text.ok{fill:#2e7d32}svg text.warn{fill:#a15c00}svg text.bad{fill:#c62828}"
    "svg .gl{stroke:#e8ebef}svg .ax{stroke:#8a93a0}"
    "details{margin:8px 0}summary{cursor:pointer;font-weight:600;padding:6px 2px;font-size:15px}"
    "footer{color:var(--mut);font-size:12px;text-align:center;padding:8px 0 24px}";

/* ---- iteration bars --------------------------------------------------------- */

enum { IT_ML = 64, IT_MR = 28, IT_MT = 42, IT_MB = 50, IT_H = 280, IT_W = 1120 };

/* The short label of an iteration: "ProfilerStep#12" -> "#12". */
static const char *short_iter_name(const char *s)
{
    return strncmp(s, "ProfilerStep", 12) == 0 && s[12] ? s + 12 : s;
}

static void bar(FILE *f, double x, double w, double y0, double scale, const double v[4], const char *which)
{
    double y = y0;
    for (int k = 0; k < 4; k++) {
        if (!(v[k] > 0)) continue;
        double h = v[k] * scale;
        y -= h;
        fprintf(f, "<rect x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\" fill=\"%s\"><title>%s, %s: ", x, y, w, h,
                BD_COLOR[k], which, BD_NAME[k]);
        put_ms(f, v[k]);
        fputs(" ms</title></rect>", f);
    }
}

static void iter_chart(FILE *f, const lsim_replay_item *it, const lsim_rank_report *r, int obs)
{
    uint32_t ng = r->niters ? r->niters : 1;
    double ymax = 0;
    for (uint32_t k = 0; k < ng; k++) {
        double a[4], p[4];
        bd_ms(r->niters ? &r->iters[k].bd_actual : &r->bd_actual, a);
        bd_ms(r->niters ? &r->iters[k].bd_predicted : &r->bd_predicted, p);
        double ta = ms(r->niters ? r->iters[k].actual : r->window_actual);
        double tp = ms(r->niters ? r->iters[k].predicted : r->window_predicted);
        double m = obs ? fmax(fmax(sum4(a), sum4(p)), fmax(ta, tp)) : fmax(sum4(p), tp);
        if (m > ymax) ymax = m;
    }
    if (!(ymax > 0)) ymax = 1;
    double step = nice_step(ymax, 5), top = ceil(ymax / step - 1e-9) * step;
    int dec = step_decimals(step);
    double gw = (double)(IT_W - IT_ML - IT_MR) / ng;
    if (gw > 200) gw = 200;
    if (gw < 24) gw = 24;
    double plot_w = gw * ng, scale = IT_H / top, y0 = IT_MT + IT_H;
    int svg_w = (int)ceil(IT_ML + plot_w + IT_MR), svg_h = IT_MT + IT_H + IT_MB;
    double bw = gw * 0.34, gap = gw * 0.06;
    if (bw > 60) bw = 60;
    if (gap < 2) gap = 2;
    int show_tot = bw >= 26, show_err = gw >= 44, long_ap = bw >= 38, show_ap = bw >= 11;
    int every = (int)ceil(64.0 / gw); /* a name every `every` groups */

    fprintf(f, "<div class=\"scroll\"><svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
               "aria-label=\"iteration breakdown, %s\">\n",
            svg_w, svg_h, svg_w, svg_h, obs ? "actual beside predicted" : "predicted");
    /* y grid and axis */
    for (int t = 0; t * step <= top + step * 1e-6; t++) {
        double y = y0 - t * step * scale;
        fprintf(f, "<line class=\"%s\" x1=\"%d\" x2=\"%.1f\" y1=\"%.2f\" y2=\"%.2f\"/>", t ? "gl" : "ax", IT_ML,
                IT_ML + plot_w, y, y);
        fprintf(f, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\" dominant-baseline=\"middle\">%.*f</text>\n",
                IT_ML - 6, y, dec, t * step);
    }
    fprintf(f, "<line class=\"ax\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%.2f\"/>", IT_ML, IT_ML, IT_MT - 6, y0);
    fprintf(f, "<text class=\"m\" x=\"14\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">"
               "time (ms)</text>\n",
            IT_MT + IT_H / 2.0, IT_MT + IT_H / 2.0);

    for (uint32_t k = 0; k < ng; k++) {
        const char *name = r->niters ? iter_name(it, k) : "window";
        double a[4], p[4];
        bd_ms(r->niters ? &r->iters[k].bd_actual : &r->bd_actual, a);
        bd_ms(r->niters ? &r->iters[k].bd_predicted : &r->bd_predicted, p);
        lsim_ns ta = r->niters ? r->iters[k].actual : r->window_actual;
        lsim_ns tp = r->niters ? r->iters[k].predicted : r->window_predicted;
        double e = lsim_rel_err(ta, tp);
        double cx = IT_ML + (k + 0.5) * gw, xa = cx - gap / 2 - bw, xp = cx + gap / 2;

        fputs("<g class=\"iter\" data-iter=\"", f);
        esc(f, name);
        fputs("\"><title>", f);
        esc(f, r->niters ? name : "whole window (no ProfilerStep iterations)");
        if (!obs) {
            /* predicted only: one bar in the middle of the group */
            xp = cx - bw / 2;
            fputs(": predicted ", f);
            put_ms(f, ms(tp));
            fputs(" ms</title>\n", f);
            bar(f, xp, bw, y0, scale, p, "predicted");
            fputc('\n', f);
            if (show_tot) {
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", cx,
                        y0 - fmax(sum4(p), ms(tp)) * scale - 4);
                put_ms(f, ms(tp));
                fputs("</text>", f);
            }
            if (k % (uint32_t)every == 0) {
                fprintf(f, "<text class=\"t\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", cx, y0 + 18);
                if (!r->niters) fputs("whole window", f);
                else {
                    size_t room = (size_t)(every * gw / 6.5);
                    esc_n(f, gw >= 120 ? name : short_iter_name(name), room < 4 ? 4 : room > 40 ? 40 : room);
                }
                fputs("</text>", f);
            }
            fputs("</g>\n", f);
            continue;
        }
        fputs(": actual ", f);
        put_ms(f, ms(ta));
        fputs(" ms, predicted ", f);
        put_ms(f, ms(tp));
        fputs(" ms, error ", f);
        put_pct(f, e);
        fputs("</title>\n", f);
        bar(f, xa, bw, y0, scale, a, "actual");
        bar(f, xp, bw, y0, scale, p, "predicted");
        fputc('\n', f);
        double ya = y0 - fmax(sum4(a), ms(ta)) * scale, yp = y0 - fmax(sum4(p), ms(tp)) * scale;
        if (show_tot) {
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", xa + bw / 2, ya - 4);
            put_ms(f, ms(ta));
            fprintf(f, "</text><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", xp + bw / 2, yp - 4);
            put_ms(f, ms(tp));
            fputs("</text>", f);
        }
        if (show_err) {
            fprintf(f, "<text class=\"%s\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-weight=\"600\">",
                    err_class(e), cx, fmin(ya, yp) - (show_tot ? 19 : 5));
            put_pct(f, e);
            fputs("</text>", f);
        }
        if (show_ap)
            fprintf(f, "<text class=\"m\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>"
                       "<text class=\"m\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
                    xa + bw / 2, y0 + 14, long_ap ? "actual" : "A", xp + bw / 2, y0 + 14, long_ap ? "pred." : "P");
        if (k % (uint32_t)every == 0) {
            fprintf(f, "<text class=\"t\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", cx, y0 + (show_ap ? 32 : 18));
            if (!r->niters) fputs("whole window", f);
            else {
                /* about 6.5 px per character at 12 px: cut to the room there is */
                size_t room = (size_t)(every * gw / 6.5);
                esc_n(f, gw >= 120 ? name : short_iter_name(name), room < 4 ? 4 : room > 40 ? 40 : room);
            }
            fputs("</text>", f);
        }
        fputs("</g>\n", f);
    }
    fputs("</svg></div>\n", f);
}

/* The CPU-side span of iteration k (the annotation's own span, beside the
 * GPU row): "-" for a side not observed or not recorded, and for the
 * window row of a trace without iterations. */
static void cpu_span_cell(FILE *f, const lsim_rank_report *r, uint32_t k, int obs)
{
    const lsim_iter_report *ir = r->niters ? &r->iters[k] : NULL;
    int known = ir && ir->cpu_predicted != LSIM_SPAN_UNKNOWN;
    fputs("<td>", f);
    if (known && obs) put_ms(f, ms(ir->cpu_actual));
    else fputc('-', f);
    fputs(" / ", f);
    if (known) put_ms(f, ms(ir->cpu_predicted));
    else fputc('-', f);
    fputs("</td>", f);
}

static void iter_table(FILE *f, const lsim_replay_item *it, const lsim_rank_report *r, int obs)
{
    fputs("<div class=\"scroll\"><table><tr><th class=\"l\">iteration</th><th>actual ms</th><th>predicted ms</th>"
          "<th>error</th>",
          f);
    for (int k = 0; k < 4; k++)
        fprintf(f, "<th><i class=\"sw\" style=\"background:%s\"></i>%s<br>actual / pred. ms</th>", BD_COLOR[k],
                BD_NAME[k]);
    fputs("<th>CPU-side span<br>actual / pred. ms</th></tr>\n", f);
    uint32_t ng = r->niters ? r->niters : 1;
    for (uint32_t k = 0; k < ng; k++) {
        const char *name = r->niters ? iter_name(it, k) : "window";
        lsim_ns ta = r->niters ? r->iters[k].actual : r->window_actual;
        lsim_ns tp = r->niters ? r->iters[k].predicted : r->window_predicted;
        double a[4], p[4];
        bd_ms(r->niters ? &r->iters[k].bd_actual : &r->bd_actual, a);
        bd_ms(r->niters ? &r->iters[k].bd_predicted : &r->bd_predicted, p);
        double e = lsim_rel_err(ta, tp);
        fputs("<tr><td class=\"l\">", f);
        esc(f, name);
        if (!obs) {
            fputs("</td><td>-</td><td>", f);
            put_ms(f, ms(tp));
            fputs("</td><td>-</td>", f);
            for (int c = 0; c < 4; c++) {
                fputs("<td>- / ", f);
                put_ms(f, p[c]);
                fputs("</td>", f);
            }
            cpu_span_cell(f, r, k, obs);
            fputs("</tr>\n", f);
            continue;
        }
        fputs("</td><td>", f);
        put_ms(f, ms(ta));
        fputs("</td><td>", f);
        put_ms(f, ms(tp));
        fprintf(f, "</td><td class=\"%s\">", err_class(e));
        put_pct(f, e);
        fputs("</td>", f);
        for (int c = 0; c < 4; c++) {
            fputs("<td>", f);
            put_ms(f, a[c]);
            fputs(" / ", f);
            put_ms(f, p[c]);
            fputs("</td>", f);
        }
        cpu_span_cell(f, r, k, obs);
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n", f);
}

/* ---- duty-cycle timeline ---------------------------------------------------- */

enum { DU_ML = 96, DU_MR = 40, DU_MT = 10, DU_ROW = 64, DU_GAP = 16, DU_MB = 36, DU_W = 1120 };

/* One row: the duty cycle as a step area, bins averaged in groups so that at
 * most DUTY_MAX_POINTS steps are drawn. */
static void duty_row(FILE *f, const double *v, uint32_t nb, lsim_ns bin_ns, lsim_ns window, double xscale,
                     double ytop, const char *color, const char *label)
{
    double base = ytop + DU_ROW;
    fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"#f4f6f9\"/>", DU_ML, ytop,
            (double)(DU_W - DU_ML - DU_MR), DU_ROW);
    fprintf(f, "<line class=\"gl\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke-dasharray=\"3 3\"/>", DU_ML,
            DU_W - DU_MR, ytop + DU_ROW / 2.0, ytop + DU_ROW / 2.0);
    fprintf(f, "<text class=\"t\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>", DU_ML - 8, ytop + 22, label);
    fprintf(f, "<text class=\"m\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">mean %.1f%%</text>", DU_ML - 8, ytop + 38,
            100 * mean(v, nb));
    fprintf(f, "<text class=\"m\" x=\"%d\" y=\"%.1f\" font-size=\"10\">100%%</text>"
               "<text class=\"m\" x=\"%d\" y=\"%.1f\" font-size=\"10\">50%%</text>"
               "<text class=\"m\" x=\"%d\" y=\"%.1f\" font-size=\"10\">0</text>",
            DU_W - DU_MR + 4, ytop + 8, DU_W - DU_MR + 4, ytop + DU_ROW / 2.0 + 3.5, DU_W - DU_MR + 4, ytop + DU_ROW);
    if (nb == 0 || bin_ns <= 0) {
        fputs("\n", f);
        return;
    }
    uint32_t grp = (nb + DUTY_MAX_POINTS - 1) / DUTY_MAX_POINTS;
    fprintf(f, "\n<path fill=\"%s\" fill-opacity=\"0.85\" stroke=\"%s\" stroke-width=\"0.8\" d=\"M%d %.1f", color,
            color, DU_ML, base);
    for (uint32_t b0 = 0; b0 < nb; b0 += grp) {
        uint32_t b1 = b0 + grp < nb ? b0 + grp : nb;
        double s = 0;
        for (uint32_t b = b0; b < b1; b++) s += v[b];
        double m = s / (b1 - b0);
        if (m < 0) m = 0;
        if (m > 1) m = 1;
        double t0 = (double)b0 * (double)bin_ns, t1 = (double)b1 * (double)bin_ns;
        if (t1 > (double)window && window > 0) t1 = (double)window;
        if (t0 > t1) t0 = t1;
        double y = base - m * DU_ROW;
        fprintf(f, "L%.1f %.1fL%.1f %.1f", DU_ML + t0 * xscale, y, DU_ML + t1 * xscale, y);
    }
    {
        double tend = (double)nb * (double)bin_ns;
        if (tend > (double)window && window > 0) tend = (double)window;
        fprintf(f, "L%.1f %.1fZ\"/>\n", DU_ML + tend * xscale, base);
    }
}

/* Actual above predicted; predicted alone when the rank has no observed times. */
static void duty_chart(FILE *f, const lsim_rank_report *r, int obs)
{
    lsim_ns span = obs && r->window_actual > r->window_predicted ? r->window_actual : r->window_predicted;
    if (span <= 0) span = 1;
    double plot_w = DU_W - DU_ML - DU_MR, xscale = plot_w / (double)span;
    int h = obs ? DU_MT + 2 * DU_ROW + DU_GAP + DU_MB : DU_MT + DU_ROW + DU_MB;
    fprintf(f, "<div class=\"scroll\"><svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
               "aria-label=\"stream-active duty cycle, %s\">\n",
            DU_W, h, DU_W, h, obs ? "actual above predicted" : "predicted");
    if (obs)
        duty_row(f, r->duty_actual, r->nbins_actual, r->bin_ns, r->window_actual, xscale, DU_MT, DUTY_COLOR[0],
                 "actual");
    duty_row(f, r->duty_predicted, r->nbins_predicted, r->bin_ns, r->window_predicted, xscale,
             obs ? DU_MT + DU_ROW + DU_GAP : DU_MT, DUTY_COLOR[1], "predicted");
    double ybase = obs ? DU_MT + 2 * DU_ROW + DU_GAP : DU_MT + DU_ROW;
    double smax = ms(span), step = nice_step(smax, 8);
    int dec = step_decimals(step);
    fprintf(f, "<line class=\"ax\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>", DU_ML, DU_W - DU_MR, ybase + 0.5,
            ybase + 0.5);
    for (int t = 0; t * step <= smax * (1 + 1e-9); t++) {
        double x = DU_ML + t * step / smax * plot_w;
        fprintf(f, "<line class=\"ax\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>",
                x, x, ybase, ybase + 5, x, ybase + 17, dec, t * step);
    }
    fprintf(f, "<text class=\"m\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">ms from window start</text>\n",
            DU_W - DU_MR, ybase + 32);
    fputs("</svg></div>\n", f);
}

/* ---- critical path ------------------------------------------------------------ */

static void cp_section(FILE *f, const lsim_graph *g, const lsim_critical_path *cp)
{
    fputs("<div class=\"card\"><h3>Critical path (replayed run)</h3>\n<p class=\"note\">", f);
    fputs("The chain of nodes and edges that decided when the replay ended, walked back from the node that ends "
          "last; every nanosecond of its length is counted once, as node time, edge delay or waiting.</p>\n",
          f);
    fprintf(f, "<p>Length <b>");
    put_ms(f, ms(cp->length));
    fprintf(f, " ms</b> over %zu nodes (", cp->n);
    put_ms(f, ms(cp->start - g->t0));
    fputs(" to ", f);
    put_ms(f, ms(cp->end - g->t0));
    fputs(" ms of simulated time from the trace start).</p>\n", f);

    /* stacked horizontal bar of the categories */
    double pos = 0;
    for (int c = 0; c < LSIM_CP_NCATS; c++)
        if (cp->by_cat[c] > 0) pos += (double)cp->by_cat[c];
    const int W = 1080, H = 30;
    fprintf(f, "<div class=\"scroll\"><svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
               "aria-label=\"critical path share per category\">",
            W, H, W, H);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f4f6f9\"/>", W, H);
    double x = 0;
    for (int c = 0; pos > 0 && c < LSIM_CP_NCATS; c++) {
        if (cp->by_cat[c] <= 0) continue;
        double w = (double)cp->by_cat[c] / pos * W;
        double share = cp->length > 0 ? (double)cp->by_cat[c] / (double)cp->length : 0;
        fprintf(f, "<rect x=\"%.2f\" y=\"0\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>%s: ", x, w, H,
                CP_COLOR[c], lsim_cp_cat_name((lsim_cp_cat)c));
        put_ms(f, ms(cp->by_cat[c]));
        fprintf(f, " ms (%.1f%%)</title></rect>", 100 * share);
        if (w >= 44)
            fprintf(f, "<text x=\"%.2f\" y=\"19.5\" text-anchor=\"middle\" class=\"t\">%.0f%%</text>", x + w / 2,
                    100 * share);
        x += w;
    }
    fputs("</svg></div>\n", f);
    const char *names[LSIM_CP_NCATS];
    for (int c = 0; c < LSIM_CP_NCATS; c++) names[c] = lsim_cp_cat_name((lsim_cp_cat)c);
    legend(f, LSIM_CP_NCATS, names, CP_COLOR);

    fputs("<div class=\"cols\">", f);
    /* categories */
    fputs("<table><tr><th class=\"l\">category</th><th>ms</th><th>share</th></tr>\n", f);
    for (int c = 0; c < LSIM_CP_NCATS; c++) {
        fprintf(f, "<tr><td class=\"l\"><i class=\"sw\" style=\"background:%s\"></i>%s</td><td>", CP_COLOR[c],
                names[c]);
        put_ms(f, ms(cp->by_cat[c]));
        fputs("</td><td>", f);
        put_share(f, cp->by_cat[c], cp->length);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    /* edges per class */
    fputs("<table><tr><th class=\"l\">edge class on the path</th><th>edges</th><th>delay ms</th></tr>\n", f);
    for (int c = 0; c < LSIM_E_NCLASSES; c++) {
        fprintf(f, "<tr><td class=\"l\">%s</td><td>%llu</td><td>", lsim_edge_class_name((lsim_edge_class)c),
                (unsigned long long)cp->edges_by_class[c]);
        put_ms(f, ms(cp->by_class[c]));
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    /* node time per kind */
    fputs("<table><tr><th class=\"l\">node kind</th><th>own time ms</th></tr>\n", f);
    for (int k = 0; k < LSIM_N_NKINDS; k++) {
        fprintf(f, "<tr><td class=\"l\">%s</td><td>", lsim_node_kind_name((lsim_node_kind)k));
        put_ms(f, ms(cp->by_kind[k]));
        fputs("</td></tr>\n", f);
    }
    fputs("</table></div>\n", f);

    /* top contributors */
    size_t ntop = cp->ntop < LSIM_CP_TOP ? cp->ntop : LSIM_CP_TOP;
    if (ntop) {
        fputs("<h3 style=\"margin-top:14px\">Top contributors</h3>\n<p class=\"note\">Nodes with the most own time "
              "on the path.</p>\n<div class=\"scroll\"><table><tr><th>#</th><th class=\"l\">node</th>"
              "<th class=\"l\">kind</th><th class=\"l\">where</th><th>time &micro;s</th><th>share</th></tr>\n",
              f);
        for (size_t i = 0; i < ntop; i++) {
            uint32_t v = cp->top[i];
            if ((size_t)v >= g->n) continue;
            const char *nm = str(g, g->name[v]);
            fprintf(f, "<tr><td>%zu</td><td class=\"nm\" title=\"", i + 1);
            esc(f, nm);
            fputs("\">", f);
            esc_n(f, nm, 160);
            fprintf(f, "</td><td class=\"l\">%s</td><td class=\"l\">", lsim_node_kind_name((lsim_node_kind)g->kind[v]));
            if (g->proc[v] < g->nprocs) {
                const lsim_proc *p = &g->procs[g->proc[v]];
                if (p->is_gpu) fprintf(f, "GPU %lld stream %lld", (long long)p->pid, (long long)p->tid);
                else fprintf(f, "thread %lld", (long long)p->tid);
            }
            fprintf(f, "</td><td>%.1f</td><td>", (double)cp->top_time[i] / 1e3);
            put_share(f, cp->top_time[i], cp->length);
            fputs("</td></tr>\n", f);
        }
        fputs("</table></div>\n", f);
    }
    fputs("</div>\n", f);
}

/* The job's critical path (critical.h, lsim_job_path): where the step's
 * time went across GPUs, each GPU's share, and the nodes with most time. */
/* replay --replicate-from's range (docs/intervals.md): the job's p5 / p50 /
 * p95 from the traced rank's own durations, what it assumes, and the real
 * job against it when every rank's trace was given (the text report's
 * "job range" lines, report.c). */
static void job_range_card(FILE *f, const lsim_job_range *r)
{
    fprintf(f, "<div class=\"card\"><h3>Job range from one traced rank</h3>\n<p>From rank %d's own durations "
               "(%llu samples, seed %llu): p5 <b>",
            (int)r->source, (unsigned long long)r->n, (unsigned long long)r->seed);
    static const char *const QN[3] = {"p5", "p50", "p95"};
    for (int k = 0; k < 3; k++) {
        if (k) fprintf(f, "</b> ms, %s <b>", QN[k]);
        put_ms(f, ms(r->q[k]));
    }
    fputs("</b> ms.</p>\n<p class=\"note\">", f);
    fprintf(f, "Assumes every rank runs rank %d's work; each collective takes one of rank %d's durations of its "
               "kind and size, its waiting for peers included (rank %d waited ",
            (int)r->source, (int)r->source, (int)r->source);
    put_ms(f, ms(r->waited));
    fprintf(f, " ms in %llu of %llu collectives); each copy's kernels one of rank %d's durations of the same "
               "kernel.</p>\n<p>Real job: ",
            (unsigned long long)r->colls_waited, (unsigned long long)r->colls, (int)r->source);
    if (r->actual < 0) {
        fputs("not measured (only one rank's trace was given).</p></div>\n", f);
        return;
    }
    int in = r->actual >= r->q[0] && r->actual <= r->q[2];
    put_ms(f, ms(r->actual));
    fprintf(f, " ms, <b class=\"%s\">%s</b> the p5..p95 range.</p></div>\n", in ? "ok" : "bad",
            in ? "inside" : "outside");
}

static void job_path_card(FILE *f, const lsim_job_path *jp)
{
    fputs("<div class=\"card\"><h3>Job critical path</h3>\n<p class=\"note\">One path across the GPUs: walked back "
          "from the node that ends last in the job, at each collective it continues on the participant that "
          "arrived last, so waiting for peers is replaced by the late GPU's own work. Every nanosecond of the "
          "job's span is counted once, on the GPU where it was spent.</p>\n",
          f);
    fputs("<p>Length <b>", f);
    put_ms(f, ms(jp->length));
    fprintf(f, " ms</b> over %zu nodes; it moves to the last-arriving GPU at %llu collectives.</p>\n", jp->n,
            (unsigned long long)jp->crossings);
    fputs("<div class=\"cols\"><table><tr><th class=\"l\">category</th><th>ms</th><th>share</th></tr>\n", f);
    for (int c = 0; c < LSIM_CP_NCATS; c++) {
        if (!jp->by_cat[c]) continue;
        fprintf(f, "<tr><td class=\"l\"><i class=\"sw\" style=\"background:%s\"></i>%s</td><td>", CP_COLOR[c],
                lsim_cp_cat_name((lsim_cp_cat)c));
        put_ms(f, ms(jp->by_cat[c]));
        fputs("</td><td>", f);
        put_share(f, jp->by_cat[c], jp->length);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n<table><tr><th class=\"l\">GPU (rank)</th><th>ms on the path</th><th>share</th></tr>\n", f);
    /* the 10 GPUs with the most path time (out of memory: none listed) */
    uint32_t *order = NULL;
    size_t ns = 0;
    if (lsim_job_path_gpu_order(jp, &order, &ns)) ns = 0;
    for (size_t k = 0; k < ns && k < 10; k++) {
        uint32_t best = order[k];
        const lsim_graph *g = jp->graphs[best];
        fprintf(f, "<tr><td class=\"l\">%d</td><td>", g->rank >= 0 ? g->rank : (int)best);
        put_ms(f, ms(jp->by_gpu[best]));
        fputs("</td><td>", f);
        put_share(f, jp->by_gpu[best], jp->length);
        fputs("</td></tr>\n", f);
    }
    lsim_free(order);
    fputs("</table></div>\n", f);
    if (jp->ntop) {
        fputs("<div class=\"scroll\"><table><tr><th>#</th><th class=\"l\">node</th><th class=\"l\">kind</th>"
              "<th>rank</th><th>time &micro;s</th><th>share</th></tr>\n",
              f);
        for (size_t i = 0; i < jp->ntop; i++) {
            const lsim_graph *g = jp->graphs[jp->top_gpu[i]];
            uint32_t v = jp->top_node[i];
            const char *nm = str(g, g->name[v]);
            fprintf(f, "<tr><td>%zu</td><td class=\"nm\" title=\"", i + 1);
            esc(f, nm);
            fputs("\">", f);
            esc_n(f, nm, 160);
            fprintf(f, "</td><td class=\"l\">%s</td><td>%d</td><td>%.1f</td><td>",
                    lsim_node_kind_name((lsim_node_kind)g->kind[v]), g->rank >= 0 ? g->rank : (int)jp->top_gpu[i],
                    (double)jp->top_time[i] / 1e3);
            put_share(f, jp->top_time[i], jp->length);
            fputs("</td></tr>\n", f);
        }
        fputs("</table></div>\n", f);
    }
    fputs("</div>\n", f);
}

/* ---- graph statistics ----------------------------------------------------------- */

static void kv_u(FILE *f, const char *k, uint64_t v)
{
    fprintf(f, "<tr><td>%s</td><td>%llu</td></tr>\n", k, (unsigned long long)v);
}

static void graph_stats(FILE *f, const lsim_graph *g, const lsim_rank_report *r, int obs)
{
    uint32_t threads = 0, streams = 0;
    for (uint32_t i = 0; i < g->nprocs; i++) {
        if (g->procs[i].is_gpu) streams++;
        else threads++;
    }
    uint64_t byk[LSIM_COLL_OTHER + 1] = {0}, nk = 0, nb = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (!(g->flags[v] & LSIM_NF_COLL) || g->coll[v] < 0 || (size_t)g->coll[v] >= g->ncoll) continue;
        const lsim_coll_info *c = &g->colls[g->coll[v]];
        nk++;
        if (c->kind <= LSIM_COLL_OTHER) byk[c->kind]++;
        if (c->bytes >= 0) nb++;
    }

    fputs("<div class=\"card\"><h3>Graph statistics</h3>\n<div class=\"cols\">", f);
    fputs("<table class=\"kv\"><tr><th class=\"l\">graph</th><th></th></tr>\n", f);
    kv_u(f, "nodes", g->n);
    kv_u(f, "edges", g->nedges);
    kv_u(f, "CPU threads", threads);
    kv_u(f, "GPU streams", streams);
    kv_u(f, "inferred edges", lsim_graph_inferred_total(g));
    kv_u(f, "pre-window GPU ops", g->prewindow);
    kv_u(f, "&nbsp;&nbsp;released at observed start", lsim_metrics_prewindow_released(g));
    fputs("<tr><td>launch latency (median)</td><td>", f);
    fprintf(f, "%.1f &micro;s</td></tr>\n", (double)g->launch_latency_ns / 1e3);
    kv_u(f, "launch latency samples", g->launch_samples);
    kv_u(f, "cuda_sync events used", g->sync_events_used);
    int mfig = g->mem_source == LSIM_MEM_SRC_TOTALS || g->mem_source == LSIM_MEM_SRC_DELTAS ||
               g->mem_source == LSIM_MEM_SRC_REESTIMATED;
    if (mfig) {
        /* the trace's own memory figures (graph.h mem_*; a what-if's: carried from its source GPU, or re-estimated) */
        fprintf(f, "<tr><td>peak memory allocated%s</td><td>%.2f GB</td></tr>\n",
                g->mem_source == LSIM_MEM_SRC_DELTAS ? " (at least: sizes only)" : "", (double)g->mem_peak_allocated / 1e9);
        if (g->mem_source == LSIM_MEM_SRC_TOTALS || g->mem_source == LSIM_MEM_SRC_REESTIMATED)
            fprintf(f, "<tr><td>peak memory reserved</td><td>%.2f GB</td></tr>\n", (double)g->mem_peak_reserved / 1e9);
        kv_u(f, "[memory] events", g->mem_events);
    }
    if (g->mem_source == LSIM_MEM_SRC_DROPPED)
        fputs("<tr><td>peak memory</td><td>not carried: the what-if changed what this GPU holds</td></tr>\n", f);
    if (g->mem_capacity > 0) fprintf(f, "<tr><td>GPU memory</td><td>%.2f GB</td></tr>\n", (double)g->mem_capacity / 1e9);
    int64_t mpeak = g->mem_peak_reserved > g->mem_peak_allocated ? g->mem_peak_reserved : g->mem_peak_allocated;
    if (g->mem_source == LSIM_MEM_SRC_REESTIMATED)
        fputs("<tr><td>peak memory source</td><td>re-estimated by the what-if (--model)</td></tr>\n", f);
    if (mfig && g->mem_capacity > 0 && mpeak > g->mem_capacity)
        fprintf(f, "<tr><td><b>%s</b></td><td><b>the peak exceeds the GPU's memory</b></td></tr>\n",
                obs ? "OVER CAPACITY" : "OOM");
    kv_u(f, "collective kernels", nk);
    for (int k = 1; k <= LSIM_COLL_OTHER; k++)
        if (byk[k]) {
            fprintf(f, "<tr><td>&nbsp;&nbsp;%s</td><td>%llu</td></tr>\n", lsim_coll_kind_name((lsim_coll_kind)k),
                    (unsigned long long)byk[k]);
        }
    if (nk) kv_u(f, "&nbsp;&nbsp;with message size", nb);
    fputs("</table>\n", f);

    fputs("<table><tr><th class=\"l\">edge class</th><th>edges</th><th>inferred</th></tr>\n", f);
    for (int c = 0; c < LSIM_E_NCLASSES; c++)
        fprintf(f, "<tr><td class=\"l\">%s</td><td>%llu</td><td>%llu</td></tr>\n",
                lsim_edge_class_name((lsim_edge_class)c), (unsigned long long)g->edges_by_class[c],
                (unsigned long long)g->inferred_by_class[c]);
    fputs("</table>\n", f);

    fputs("<table><tr><th class=\"l\">dropped inferred edges</th><th></th></tr>\n", f);
    for (int d = 0; d < LSIM_DROP_NREASONS; d++)
        fprintf(f, "<tr><td class=\"l\">%s</td><td>%llu</td></tr>\n", lsim_drop_reason_name((lsim_drop_reason)d),
                (unsigned long long)g->dropped[d]);
    fprintf(f, "<tr><td class=\"l\"><b>total</b></td><td><b>%llu</b></td></tr>\n",
            (unsigned long long)lsim_graph_dropped_total(g));
    fputs("</table>\n", f);

    fputs("<table class=\"kv\"><tr><th class=\"l\">node agreement</th><th></th></tr>\n", f);
    if (!obs) {
        fputs("<tr><td>max |start error|</td><td>-</td></tr>\n<tr><td>max |end error|</td><td>-</td></tr>\n"
              "<tr><td>nodes exact</td><td>-</td></tr>\n</table></div></div>\n",
              f);
        return;
    }
    fprintf(f, "<tr><td>max |start error|</td><td>%.3f ms</td></tr>\n", (double)r->max_abs_start_err / 1e6);
    fprintf(f, "<tr><td>max |end error|</td><td>%.3f ms</td></tr>\n", (double)r->max_abs_end_err / 1e6);
    fprintf(f, "<tr><td>nodes exact</td><td>%.1f%%</td></tr>\n",
            g->n ? 100.0 * (double)r->nodes_exact / (double)g->n : 100.0);
    if (r->has_fidelity) {
        const lsim_err_dist *d[2] = {&r->start_err_gpu, &r->start_err_cpu};
        for (int k = 0; k < 2; k++)
            fprintf(f, "<tr><td>|start error|, %llu %s ops</td><td>median %.3f &micro;s, p90 %.3f &micro;s, "
                       "max %.3f &micro;s</td></tr>\n",
                    (unsigned long long)d[k]->n, k ? "CPU" : "GPU", (double)d[k]->median / 1e3,
                    (double)d[k]->p90 / 1e3, (double)d[k]->max / 1e3);
        fprintf(f, "<tr><td>duty cycle, mean |difference| per bin</td><td>%.1f points</td></tr>\n",
                100 * r->duty_abs_diff);
    }
    fputs("</table></div></div>\n", f);
}

/* ---- the page ---------------------------------------------------------------------- */

static void rank_section(FILE *f, const lsim_replay_item *it, size_t i)
{
    const lsim_graph *g = it->g;
    const lsim_rank_report *r = it->r;
    int rk = rank_of(it, i), obs = shows_obs(it);
    double we = lsim_rel_err(r->window_actual, r->window_predicted);
    fprintf(f, "<section id=\"rank-%zu\">\n<h2>Rank %d</h2>\n<div class=\"src\">", i, rk);
    esc(f, source_of(it));
    if (obs) {
        fputs("</div>\n<p class=\"note\" style=\"margin-top:4px\">Window: actual ", f);
        put_ms(f, ms(r->window_actual));
        fputs(" ms, predicted ", f);
        put_ms(f, ms(r->window_predicted));
        fprintf(f, " ms, error <b class=\"%s\">", err_class(we));
        put_pct(f, we);
        fputs("</b>", f);
    } else {
        fprintf(f, "</div>\n<p class=\"note\" style=\"margin-top:4px\">Predicted only: %s.</p>\n", NO_OBS_NOTE);
        fputs("<p class=\"note\">Window: actual -, predicted ", f);
        put_ms(f, ms(r->window_predicted));
        fputs(" ms, error -", f);
    }
    fprintf(f, "; %u iteration%s.</p>\n", r->niters, r->niters == 1 ? "" : "s");

    fprintf(f, "<div class=\"card\"><h3>Iterations: breakdown, %s</h3>\n<p class=\"note\">",
            obs ? "actual beside predicted" : "predicted");
    if (r->niters && obs)
        fputs("Each iteration (ProfilerStep) projected onto the GPU, from its first GPU op to the next step's "
              "(the first from the window start, the last to its end), so the bars add up to the window; as two "
              "stacked bars, actual (trace) and predicted (replay), split into "
              "the time only compute runs, compute and communication overlap, only communication runs, and no GPU "
              "work runs. Labels: total ms and the relative error of the prediction. The table also gives each "
              "step's CPU-side span.",
              f);
    else if (r->niters)
        fputs("Each iteration (ProfilerStep) projected onto the GPU, from its first GPU op to the next step's "
              "(the first from the window start, the last to its end), so the bars add up to the window; as one "
              "stacked bar, predicted (replay), split into the time only "
              "compute runs, compute and communication overlap, only communication runs, and no GPU work runs. "
              "Labels: total ms. The table also gives each step's CPU-side span.",
              f);
    else if (obs)
        fputs("No ProfilerStep annotations in this trace: the bars show the whole window.", f);
    else
        fputs("No ProfilerStep annotations in this graph: the bar shows the whole window.", f);
    fputs("</p>\n", f);
    legend(f, 4, BD_NAME, BD_COLOR);
    iter_chart(f, it, r, obs);
    iter_table(f, it, r, obs);
    fputs("</div>\n", f);

    fputs("<div class=\"card\"><h3>Timeline: stream-active duty cycle</h3>\n<p class=\"note\">", f);
    fprintf(f, "Fraction of each %g ms bin in which at least one GPU stream of the rank is active (not SM "
               "utilization), %s",
            (double)r->bin_ns / 1e6, obs ? "from the start of each window" : "predicted, from the start of the window");
    if (obs && (r->nbins_actual > DUTY_MAX_POINTS || r->nbins_predicted > DUTY_MAX_POINTS))
        fprintf(f, "; neighbouring bins averaged to at most %d points per row", DUTY_MAX_POINTS);
    else if (!obs && r->nbins_predicted > DUTY_MAX_POINTS)
        fprintf(f, "; neighbouring bins averaged to at most %d points", DUTY_MAX_POINTS);
    if (obs && r->has_fidelity)
        fprintf(f, ". Bin by bin, actual and predicted differ by %.1f points on average (mean absolute difference)",
                100 * r->duty_abs_diff);
    fputs(".</p>\n", f);
    duty_chart(f, r, obs);
    fputs("</div>\n", f);

    if (!g) {
        fputs("<p class=\"note\">The run keeps no graph of this GPU (it was written with --detail summary): "
              "its critical path's ops and its graph statistics are not in the archive (rerun lumosim sim with "
              "--detail ops for them).</p>\n",
              f);
    } else {
        if (it->cp) cp_section(f, g, it->cp);
        graph_stats(f, g, r, obs);
    }
    fputs("</section>\n", f);
}

/* Ranks beyond which only the slowest and the fastest get a full section
 * (a 512-GPU page stays small; every rank is in the overview). */
#define HTML_FULL_RANKS 16
#define HTML_TOP_KERNELS 15

/* qsort has no context argument: the array being sorted (one page at a time) */
static const lsim_report_kernel *g_kern;
static int cmp_kidx(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    lsim_ns p = g_kern[x].predicted_ns, q = g_kern[y].predicted_ns;
    if (p != q) return p > q ? -1 : 1;
    return (x > y) - (x < y);
}

/* The slowest and fastest ranks by predicted window, and the one whose
 * predicted window ends last (what the job waits for). */
static void extremes(const lsim_replay_item *items, size_t n, size_t *slow, size_t *fast, size_t *late)
{
    *slow = *fast = *late = 0;
    for (size_t i = 1; i < n; i++) {
        const lsim_rank_report *r = items[i].r;
        if (r->window_predicted > items[*slow].r->window_predicted) *slow = i;
        if (r->window_predicted < items[*fast].r->window_predicted) *fast = i;
        lsim_ns e = r->window_predicted_start + r->window_predicted,
                le = items[*late].r->window_predicted_start + items[*late].r->window_predicted;
        if (e > le) *late = i;
    }
}

/* ---- the job at scale --------------------------------------------------------- */

/* GPUs beyond which the page shows the job aggregated (heat map by pipeline
 * stage x data-parallel replica, distributions, the slowest GPUs named) instead
 * of one bar and one open table row per GPU: 64 hairline bars are still
 * readable, 512 are not (issue 39). */
#define HTML_AGG_MIN 64
/* the slowest GPUs named in the aggregated view, each with a full section */
#define HTML_SLOWEST 5
/* heat-map colours, low to high (ColorBrewer YlOrRd, 8 classes) */
#define HEAT_N 8
static const char *const HEAT_COLOR[HEAT_N] = {"#ffffcc", "#ffeda0", "#fed976", "#feb24c",
                                               "#fd8d3c", "#fc4e2a", "#e31a1c", "#b10026"};

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* nearest-rank percentile of sorted v[0..n) */
static double pctl(const double *v, size_t n, double p)
{
    if (!n) return 0;
    size_t k = (size_t)ceil(p / 100.0 * (double)n);
    return v[k ? k - 1 : 0];
}

/* The GPU indices of the HTML_SLOWEST largest predicted windows, slowest
 * first (ties: the lower index); returns how many (at most n). */
static size_t slowest_of(const lsim_replay_item *items, size_t n, size_t *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        lsim_ns w = items[i].r->window_predicted;
        if (k == HTML_SLOWEST && !(w > items[out[k - 1]].r->window_predicted)) continue;
        size_t j = k < HTML_SLOWEST ? k++ : HTML_SLOWEST - 1;
        for (; j > 0 && w > items[out[j - 1]].r->window_predicted; j--) out[j] = out[j - 1];
        out[j] = i;
    }
    return k;
}

/* One GPU's place and figures in the aggregated view. */
typedef struct gpu_pos {
    int stage, replica;
    double win, comm; /* predicted window, exposed communication, ms */
} gpu_pos;

/* Where each GPU sits: stage and replica from its process groups
 * (lsim_report_coords_of); a GPU whose replica is unknown (TP 1: no "tp:"
 * group) is its stage's k-th GPU in GPU order, and a job without stages is
 * laid out 64 GPUs to a row. *nst, *nrep: the grid's rows and columns. */
static int gpu_positions(const lsim_replay_item *items, size_t n, gpu_pos *p, int *nst, int *nrep, int *by_coords)
{
    int *seen = lsim_calloc(n, sizeof *seen), known = 1;
    if (!seen) return LSIM_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (items[i].brief) p[i].stage = items[i].brief->stage, p[i].replica = items[i].brief->replica;
        else lsim_report_coords_of(items[i].g, &p[i].stage, &p[i].replica);
        if (p[i].stage < 0 || (size_t)p[i].stage >= n) known = 0;
        p[i].win = ms(items[i].r->window_predicted);
        p[i].comm = ms(items[i].r->bd_predicted.exposed_comm);
    }
    *nst = *nrep = 0;
    for (size_t i = 0; i < n; i++) {
        if (!known) {
            p[i].stage = (int)(i / HTML_AGG_MIN), p[i].replica = (int)(i % HTML_AGG_MIN);
        } else if (p[i].replica < 0 || (size_t)p[i].replica >= n) {
            p[i].replica = seen[p[i].stage]++;
        }
        if (p[i].stage + 1 > *nst) *nst = p[i].stage + 1;
        if (p[i].replica + 1 > *nrep) *nrep = p[i].replica + 1;
    }
    *by_coords = known;
    free(seen);
    return 0;
}

/* A heat map of one figure: a cell per (stage, replica), the largest value
 * of the cell's GPUs (its TP group: the one the others wait for), coloured
 * in HEAT_N equal classes from the smallest cell to the largest; hovering a
 * cell names its GPU and value. More replicas than HEAT_COLS are binned,
 * B consecutive replicas a column (still the largest of its GPUs): the
 * 768 replicas of the 98,304-GPU job were 1-px columns, 12,288 cells and
 * 1.5 MB a map. */
#define HEAT_W 740
#define HEAT_LW 64
#define HEAT_COLS ((HEAT_W - HEAT_LW - 8) / 2) /* columns at least 2 px wide */
static int heat_map(FILE *f, const lsim_replay_item *items, const gpu_pos *p, size_t n, int nst, int nrep,
                    int comm, const char *what)
{
    int bin = nrep > HEAT_COLS ? (nrep + HEAT_COLS - 1) / HEAT_COLS : 1, ncol = (nrep + bin - 1) / bin;
    size_t cells = (size_t)nst * (size_t)ncol;
    double *v = lsim_malloc(cells * sizeof *v);
    size_t *who = lsim_malloc(cells * sizeof *who);
    if (!v || !who) {
        free(v);
        free(who);
        return LSIM_ENOMEM;
    }
    for (size_t c = 0; c < cells; c++) v[c] = -1, who[c] = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        size_t c = (size_t)p[i].stage * (size_t)ncol + (size_t)(p[i].replica / bin);
        double x = comm ? p[i].comm : p[i].win;
        if (who[c] == SIZE_MAX || x > v[c]) v[c] = x, who[c] = i;
    }
    double lo = 0, hi = 0;
    int first = 1;
    for (size_t c = 0; c < cells; c++) {
        if (who[c] == SIZE_MAX) continue;
        if (first || v[c] < lo) lo = v[c];
        if (first || v[c] > hi) hi = v[c];
        first = 0;
    }
    int lw = HEAT_LW, cw = (HEAT_W - lw - 8) / (ncol > 0 ? ncol : 1);
    if (cw > 24) cw = 24;
    int ch = nst <= 8 ? 22 : nst <= 32 ? 8 : 3, H = nst * ch + 36, gw = lw + cw * ncol + 8;
    fprintf(f, "<h3 class=\"sub\">%s per GPU: stage &times; replica</h3>\n<p class=\"note\">", what);
    fprintf(f, "Rows: pipeline stages (%d); columns: data-parallel replicas (%d", nst, nrep);
    if (bin > 1) fprintf(f, ", %d to a column", bin);
    fputs("); a cell is the largest of its GPUs (the tensor-parallel group, which waits for its slowest). Colour from ", f);
    put_ms(f, lo);
    fputs(" ms (light) to ", f);
    put_ms(f, hi);
    fputs(" ms (dark), in 8 equal classes.</p>\n", f);
    fprintf(f, "<svg class=\"heat\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
               "aria-label=\"%s heat map\">\n",
            gw, H, gw, H, comm ? "exposed communication" : "step time");
    for (int s = 0; s < nst; s++) {
        if (s % (ch >= 11 ? 1 : ch >= 8 ? 2 : 8) == 0) /* labels 16 px apart at least (9 px text) */
            fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">stage %d</text>", lw - 4, s * ch + (ch < 11 ? 9 : ch / 2 + 4), s);
        for (int r = 0; r < ncol; r++) {
            size_t c = (size_t)s * (size_t)ncol + (size_t)r;
            if (who[c] == SIZE_MAX) continue;
            int k = hi > lo ? (int)((v[c] - lo) / (hi - lo) * HEAT_N) : 0;
            if (k >= HEAT_N) k = HEAT_N - 1;
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>stage %d, ",
                    lw + r * cw, s * ch, cw, ch, HEAT_COLOR[k], s);
            int last = (r + 1) * bin - 1 < nrep ? (r + 1) * bin - 1 : nrep - 1;
            if (bin > 1) fprintf(f, "replicas %d-%d", r * bin, last);
            else fprintf(f, "replica %d", r);
            fprintf(f, ": GPU %d, ", rank_of(&items[who[c]], who[c]));
            put_ms(f, v[c]);
            fputs(" ms</title></rect>", f);
        }
        fputc('\n', f);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"m\">replica 0</text><text x=\"%d\" y=\"%d\" class=\"m\" "
               "text-anchor=\"end\">%d</text>\n</svg>\n",
            lw, nst * ch + 16, lw + cw * ncol, nst * ch + 16, nrep - 1);
    free(v);
    free(who);
    return 0;
}

/* A histogram of the predicted windows (24 equal bins from the smallest to
 * the largest) with the p5 / p50 / p95 marked. */
static void histogram(FILE *f, const double *sorted, size_t n)
{
    enum { NB = 24, W = 740, H = 150, L = 48, B = 30 };
    size_t cnt[NB] = {0}, top = 0;
    double lo = sorted[0], hi = sorted[n - 1], span = hi > lo ? hi - lo : 1;
    for (size_t i = 0; i < n; i++) {
        int b = hi > lo ? (int)((sorted[i] - lo) / span * NB) : 0;
        cnt[b >= NB ? NB - 1 : b]++;
    }
    for (int b = 0; b < NB; b++)
        if (cnt[b] > top) top = cnt[b];
    double bw = (double)(W - L - 10) / NB, sc = (double)(H - B - 10) / (double)top;
    fprintf(f, "<svg class=\"hist\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
               "aria-label=\"histogram of predicted windows\">\n",
            W, H, W, H);
    for (int b = 0; b < NB; b++) {
        if (!cnt[b]) continue;
        double h = (double)cnt[b] * sc;
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%zu GPUs</title></rect>",
                L + b * bw + 0.5, H - B - h, bw - 1, h, BD_COLOR[0], cnt[b]);
    }
    static const double P[3] = {5, 50, 95};
    for (int k = 0; k < 3; k++) {
        double x = L + (hi > lo ? (pctl(sorted, n, P[k]) - lo) / span : 0) * (W - L - 10);
        fprintf(f, "\n<line x1=\"%.1f\" x2=\"%.1f\" y1=\"4\" y2=\"%d\" stroke=\"#e15759\" stroke-dasharray=\"3 2\"/>"
                   "<text x=\"%.1f\" y=\"%d\" class=\"m\">p%g</text>",
                x, x, H - B, x + 2, 12 + 12 * k, P[k]);
    }
    fprintf(f, "\n<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%zu</text><text x=\"%d\" y=\"%d\">", L - 4, 14, top, L, H - 12);
    put_ms(f, lo);
    fprintf(f, " ms</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">", W - 10, H - 12);
    put_ms(f, hi);
    fputs(" ms</text>\n</svg>\n", f);
}

/* The job at a glance when it has more than HTML_AGG_MIN GPUs: the slowest
 * GPUs named and linked to their sections, the distributions (p5, p50, p95,
 * max) of the predicted breakdown and a histogram of the windows, the
 * figures per pipeline stage, and the heat maps of step time and of exposed
 * communication by stage x replica. */
static int job_at_scale(FILE *f, const lsim_replay_item *items, size_t n, const size_t *slow, size_t nslow)
{
    int rc = LSIM_ENOMEM, nst, nrep, by_coords;
    gpu_pos *p = lsim_malloc(n * sizeof *p);
    double *col = lsim_malloc(5 * n * sizeof *col);
    if (!p || !col || gpu_positions(items, n, p, &nst, &nrep, &by_coords)) goto cleanup;

    fputs("<h3 class=\"sub\">Slowest GPUs</h3>\n<div class=\"scroll\"><table><tr><th>GPU</th><th>stage</th><th>replica</th>"
          "<th>predicted window ms</th><th>exposed comm ms</th><th>waiting for peers ms</th></tr>\n",
          f);
    for (size_t k = 0; k < nslow; k++) {
        size_t i = slow[k];
        fprintf(f, "<tr><td><a href=\"#rank-%zu\">GPU %d</a></td><td>%d</td><td>%d</td><td>", i, rank_of(&items[i], i),
                p[i].stage, p[i].replica);
        put_ms(f, p[i].win);
        fputs("</td><td>", f);
        put_ms(f, p[i].comm);
        fputs("</td><td>", f);
        put_ms(f, ms(items[i].r->bd_predicted.exposed_comm_wait));
        fputs("</td></tr>\n", f);
    }
    fputs("</table></div>\n", f);

    /* distributions over the GPUs */
    static const char *const DNAME[5] = {"predicted window", "exposed compute", "overlapped", "exposed comm",
                                         "waiting for peers"};
    for (size_t i = 0; i < n; i++) {
        const lsim_breakdown *b = &items[i].r->bd_predicted;
        col[i] = p[i].win, col[n + i] = ms(b->exposed_compute), col[2 * n + i] = ms(b->overlapped);
        col[3 * n + i] = p[i].comm, col[4 * n + i] = ms(b->exposed_comm_wait);
    }
    fprintf(f, "<h3 class=\"sub\">Distributions over the %zu GPUs</h3>\n<div class=\"scroll\"><table><tr><th class=\"l\">ms</th>"
               "<th>p5</th><th>p50</th><th>p95</th><th>max</th></tr>\n",
            n);
    for (int d = 0; d < 5; d++) {
        qsort(col + (size_t)d * n, n, sizeof *col, cmp_dbl);
        fprintf(f, "<tr><td class=\"l\">%s</td>", DNAME[d]);
        static const double P[4] = {5, 50, 95, 100};
        for (int k = 0; k < 4; k++) {
            fputs("<td>", f);
            put_ms(f, pctl(col + (size_t)d * n, n, P[k]));
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n<p class=\"note\">The predicted windows, 24 equal bins from the smallest to the largest "
          "(hover a bar for its count):</p>\n",
          f);
    histogram(f, col, n);

    if (by_coords && nst > 1) {
        fputs("<h3 class=\"sub\">Per pipeline stage</h3>\n<div class=\"scroll\"><table><tr><th>stage</th><th>GPUs</th>"
              "<th>window p50 ms</th><th>window max ms</th><th>exposed comm p50 ms</th><th>slowest GPU</th></tr>\n",
              f);
        for (int s = 0; s < nst; s++) {
            size_t m = 0, worst = SIZE_MAX;
            for (size_t i = 0; i < n; i++) {
                if (p[i].stage != s) continue;
                col[m] = p[i].win, col[n + m] = p[i].comm, m++;
                if (worst == SIZE_MAX || p[i].win > p[worst].win) worst = i;
            }
            if (!m) continue;
            qsort(col, m, sizeof *col, cmp_dbl);
            qsort(col + n, m, sizeof *col, cmp_dbl);
            fprintf(f, "<tr><td>%d</td><td>%zu</td><td>", s, m);
            put_ms(f, pctl(col, m, 50));
            fputs("</td><td>", f);
            put_ms(f, col[m - 1]);
            fputs("</td><td>", f);
            put_ms(f, pctl(col + n, m, 50));
            fprintf(f, "</td><td>%d</td></tr>\n", rank_of(&items[worst], worst));
        }
        fputs("</table></div>\n", f);
    }
    if (!by_coords)
        fprintf(f, "<p class=\"note\">The GPUs carry no pipeline coordinates (no tp:PP:DP / dp:TP:PP process groups): "
                   "the maps below lay them out in GPU order, %d to a row.</p>\n",
                HTML_AGG_MIN);
    if (heat_map(f, items, p, n, nst, nrep, 0, "Step time (predicted window)") ||
        heat_map(f, items, p, n, nst, nrep, 1, "Exposed communication"))
        goto cleanup;
    fputs("<div class=\"legend\"><span>lowest", f);
    for (int k = 0; k < HEAT_N; k++) fprintf(f, " <i class=\"sw\" style=\"background:%s\"></i>", HEAT_COLOR[k]);
    fputs("highest</span></div>\n", f);
    rc = 0;
cleanup:
    free(p);
    free(col);
    return rc;
}

/* One bar per rank of its predicted breakdown (COL5: the overview's five
 * parts), ranks labelled up to 32 (beyond, the slowest and the fastest). */
static void rank_bars(FILE *f, const lsim_replay_item *items, size_t n, size_t slow, size_t fast,
                      const char *const *COL5)
{
    double maxw = 0;
    for (size_t i = 0; i < n; i++)
        if (ms(items[i].r->window_predicted) > maxw) maxw = ms(items[i].r->window_predicted);
    int bh = n <= 32 ? 12 : n <= 128 ? 4 : 2, gap = n <= 32 ? 4 : 1, lw = 56, W = 740, aw = W - lw - 8;
    int H = (int)n * (bh + gap) + 24;
    double sc = maxw > 0 ? aw / maxw : 0;
    fprintf(f, "<svg class=\"ranks\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
               "aria-label=\"predicted breakdown per rank\">\n",
            W, H, W, H);
    for (size_t i = 0; i < n; i++) {
        const lsim_breakdown *b = &items[i].r->bd_predicted;
        double v[5] = {ms(b->exposed_compute), ms(b->overlapped), ms(lsim_ns_sub_sat(b->exposed_comm, b->exposed_comm_wait)),
                       ms(b->exposed_comm_wait), ms(b->other)};
        double y = (double)i * (bh + gap), x = lw;
        if (n <= 32 || i == slow || i == fast)
            fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d</text>", lw - 4, y + bh, rank_of(&items[i], i));
        for (int k = 0; k < 5; k++) {
            if (!(v[k] > 0)) continue;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>", x, y, v[k] * sc, bh,
                    COL5[k]);
            x += v[k] * sc;
        }
        fputc('\n', f);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"m\">0</text><text x=\"%d\" y=\"%d\" class=\"m\" "
               "text-anchor=\"end\">",
            lw, H - 6, W - 8, H - 6);
    put_ms(f, maxw);
    fputs(" ms</text>\n</svg>\n", f);
}

/* The job at a glance, for a multi-rank page: the rank that holds the job
 * up, a bar per rank of its predicted breakdown with the exposed
 * communication split into waiting for peers and transfer, the collective
 * kernels by kind (coupled or traced), and the kernels aggregated by name
 * over all ranks (the largest predicted totals). */
static int job_overview(FILE *f, const lsim_replay_item *items, size_t n, const lsim_report_kernel *kern, size_t nk)
{
    static const char *const NAME5[5] = {"exposed compute", "overlapped", "exposed comm: transfer",
                                         "exposed comm: waiting for peers", "other"};
    static const char *const COL5[5] = {"#4e79a7", "#76b7b2", "#f28e2b", "#e15759", "#c9c3bf"};
    size_t slow, fast, late;
    extremes(items, n, &slow, &fast, &late);
    fputs("<div class=\"card\"><h3>Job overview</h3>\n<p>", f);
    fprintf(f, "The job ends with rank <b>%d</b> (its predicted window ends last). Slowest rank %d (",
            rank_of(&items[late], late), rank_of(&items[slow], slow));
    put_ms(f, ms(items[slow].r->window_predicted));
    fprintf(f, " ms predicted), fastest rank %d (", rank_of(&items[fast], fast));
    put_ms(f, ms(items[fast].r->window_predicted));
    fputs(" ms).</p>\n", f);
    int rc = 0;
    if (n <= HTML_AGG_MIN) {
        legend(f, 5, NAME5, COL5);
        rank_bars(f, items, n, slow, fast, COL5);
    } else {
        size_t top[HTML_SLOWEST];
        rc = job_at_scale(f, items, n, top, slowest_of(items, n, top));
    }
    /* collective kernels by kind, with their predicted time split into
     * waiting for the group's last arrival and transfer */
    uint64_t cc[LSIM_COLL_NKINDS] = {0}, ct[LSIM_COLL_NKINDS] = {0};
    lsim_ns tt[LSIM_COLL_NKINDS] = {0}, tw[LSIM_COLL_NKINDS] = {0};
    int any = 0, times = 1;
    for (size_t i = 0; i < n; i++)
        if (items[i].r->has_coupling) {
            times &= items[i].r->has_coll_time;
            for (int k = 0; k < LSIM_COLL_NKINDS; k++) {
                cc[k] += items[i].r->coll_coupled[k], ct[k] += items[i].r->coll_traced[k];
                tt[k] = lsim_ns_add_sat(tt[k], items[i].r->coll_time_predicted[k]);
                tw[k] = lsim_ns_add_sat(tw[k], items[i].r->coll_wait_predicted[k]);
                any |= items[i].r->coll_coupled[k] || items[i].r->coll_traced[k];
            }
        }
    if (any) {
        fprintf(f, "<h3>Collective kernels by kind</h3>\n<div class=\"scroll\"><table><tr><th class=\"l\">kind</th>"
                   "<th>coupled</th><th>kept traced</th>%s</tr>\n",
                times ? "<th>predicted ms</th><th>waiting ms</th><th>transfer ms</th>" : "");
        for (int k = 0; k < LSIM_COLL_NKINDS; k++) {
            if (!cc[k] && !ct[k]) continue;
            fprintf(f, "<tr><td class=\"l\">%s</td><td>%llu</td><td%s>%llu</td>", lsim_coll_kind_name((lsim_coll_kind)k),
                    (unsigned long long)cc[k], ct[k] ? " class=\"warn\"" : "", (unsigned long long)ct[k]);
            if (times) {
                double v[3] = {ms(tt[k]), ms(tw[k]), ms(tt[k] - tw[k])};
                for (int c = 0; c < 3; c++) {
                    fputs("<td>", f);
                    put_ms(f, v[c]);
                    fputs("</td>", f);
                }
            }
            fputs("</tr>\n", f);
        }
        fputs("</table></div>\n", f);
    }
    /* kernels by name over all ranks */
    uint32_t *idx = nk ? lsim_malloc(nk * sizeof *idx) : NULL;
    if (nk && !idx) rc = LSIM_ENOMEM;
    if (idx) {
        for (size_t k = 0; k < nk; k++) idx[k] = (uint32_t)k;
        g_kern = kern;
        qsort(idx, nk, sizeof *idx, cmp_kidx);
        fprintf(f, "<h3>Kernels by name, all ranks (the %zu largest predicted totals of %zu)</h3>\n",
                nk < HTML_TOP_KERNELS ? nk : (size_t)HTML_TOP_KERNELS, nk);
        fputs("<div class=\"scroll\"><table><tr><th class=\"l\">name</th><th>count</th><th>actual ms</th>"
              "<th>predicted ms</th><th>error</th></tr>\n",
              f);
        for (size_t j = 0; j < nk && j < HTML_TOP_KERNELS; j++) {
            const lsim_report_kernel *a = &kern[idx[j]];
            int all_obs = a->observed == a->count && a->count;
            fputs("<tr><td class=\"nm\">", f);
            esc_n(f, a->name, 160);
            fprintf(f, "</td><td>%llu</td><td>", (unsigned long long)a->count);
            if (all_obs) put_ms(f, ms(a->actual_ns));
            else fputc('-', f);
            fputs("</td><td>", f);
            put_ms(f, ms(a->predicted_ns));
            if (all_obs && a->actual_ns > 0) {
                double e = lsim_rel_err(a->actual_ns, a->predicted_ns);
                fprintf(f, "</td><td class=\"%s\">", err_class(e));
                put_pct(f, e);
            } else {
                fputs("</td><td>-", f);
            }
            fputs("</td></tr>\n", f);
        }
        fputs("</table></div>\n", f);
    }
    fputs("</div>\n", f);
    free(idx);
    return rc;
}

/* The memory card: the job's per-GPU estimate by stage, OOM in the
 * error colour where a stage exceeds the GPU (docs/memory.md). */
static void memory_card(FILE *f, const lsim_memest_job *m)
{
    const lsim_memest_stage *w = &m->stages[m->worst];
    fprintf(f, "<div class=\"card\"><h3>Memory per GPU (estimate)</h3>\n<p>Peak %.2f GB on pipeline stage %d; the ",
            w->total / 1e9, m->worst);
    esc(f, m->gpu);
    if (m->capacity > 0) fprintf(f, " has %.2f GB", m->capacity / 1e9);
    else fputs(" capacity is unknown", f);
    if (m->oom) fputs(": <b class=\"bad\">OOM, does not fit</b>", f);
    fputs(".</p>\n<div class=\"scroll\"><table><tr><th>stage</th><th>weights GB</th><th>gradients GB</th>"
          "<th>optimizer GB</th><th>activations GB</th><th>in flight</th><th>comm GB</th><th>reserve GB</th>"
          "<th>total GB</th><th></th></tr>\n",
          f);
    for (int s = 0; s < m->nstages; s++) {
        const lsim_memest_stage *g = &m->stages[s];
        int over = m->capacity > 0 && g->total > m->capacity;
        fprintf(f,
                "<tr><td>%d</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%d</td><td>%.2f</td>"
                "<td>%.2f</td><td>%.2f</td><td%s>%s</td></tr>\n",
                s, g->weights / 1e9, g->grads / 1e9, g->optim / 1e9, g->activations / 1e9, g->inflight, g->comm / 1e9,
                g->reserve / 1e9, g->total / 1e9, over ? " class=\"bad\"" : "", over ? "OOM" : "");
    }
    fputs("</table></div></div>\n", f);
}

/* The network card's collectives: each kind's flows, alone and as
 * simulated; the transfers sharing delayed most. */
static void network_kinds(FILE *f, const lsim_netshare_stats *st)
{
    fputs("<div class=\"scroll\"><table><tr><th class=\"l\">collective</th><th>flows</th><th>slowed</th>"
          "<th>alone ms</th><th>shared ms</th></tr>\n",
          f);
    for (int k = 0; k < LSIM_COLL_NKINDS; k++) {
        const lsim_netshare_kind *x = &st->by_kind[k];
        if (x->flows)
            fprintf(f, "<tr><td class=\"l\">%s</td><td>%llu</td><td>%llu</td><td>%.3f</td><td>%.3f</td></tr>\n",
                    lsim_coll_kind_name((lsim_coll_kind)k), (unsigned long long)x->flows, (unsigned long long)x->slowed,
                    x->alone_ns * 1e-6, x->shared_ns * 1e-6);
    }
    fputs("</table></div>\n", f);
    if (!st->nlate) return;
    fputs("<div class=\"scroll\"><table><tr><th class=\"l\">most delayed</th><th>GPU</th><th>node</th>"
          "<th>start ms</th><th>alone ms</th><th>shared ms</th></tr>\n",
          f);
    for (int i = 0; i < st->nlate; i++) {
        const lsim_netshare_late *x = &st->late[i];
        fprintf(f, "<tr><td class=\"l\">%s</td><td>%llu</td><td>%llu</td><td>%.3f</td><td>%.3f</td><td>%.3f</td></tr>\n",
                lsim_coll_kind_name((lsim_coll_kind)x->kind), (unsigned long long)(x->key >> 32),
                (unsigned long long)(x->key & 0xffffffffu), x->start * 1e-6, x->alone * 1e-6, x->shared * 1e-6);
    }
    fputs("</table></div>\n", f);
}

/* The network card (sim --link-sharing, docs/network.md): what sharing
 * the links cost the flows, and the busiest links, each with its busy time
 * at full load and its utilization over the flows' span, as a bar. */
/* One histogram of the network card: a row per bin (its label, its count,
 * a bar scaled to the largest). */
static void net_hist(FILE *f, const char *head, const uint64_t *cnt, int n, int util)
{
    uint64_t most = 1;
    for (int k = 0; k < n; k++)
        if (cnt[k] > most) most = cnt[k];
    fprintf(f, "<div class=\"scroll\"><table><tr><th class=\"l\">%s</th><th>count</th><th class=\"l\"></th></tr>\n", head);
    for (int k = 0; k < n; k++) {
        if (util) fprintf(f, "<tr><td class=\"l\">%d-%d %%</td>", 10 * k, 10 * (k + 1));
        else if (k + 1 < n)
            fprintf(f, "<tr><td class=\"l\">x%g-%g</td>", lsim_netshare_slow_edge(k), lsim_netshare_slow_edge(k + 1));
        else fprintf(f, "<tr><td class=\"l\">x%g and more</td>", lsim_netshare_slow_edge(k));
        fprintf(f, "<td>%llu</td><td class=\"l\"><svg width=\"200\" height=\"10\"><rect width=\"%.1f\" height=\"10\" "
                   "fill=\"#4e79a7\"/></svg></td></tr>\n",
                (unsigned long long)cnt[k], 200.0 * (double)cnt[k] / (double)most);
    }
    fputs("</table></div>\n", f);
}

static void network_card(FILE *f, const lsim_netshare_stats *st)
{
    double span = (double)st->span_ns;
    fprintf(f, "<div class=\"card\"><h3>Network (link sharing)</h3>\n<p>%llu flows, %llu slowed by sharing a link (at "
               "most x%.3f); their transfers %.3f ms alone on an idle fabric, %.3f ms as simulated; %d sweep%s%s. "
               "Busy time at full load: NICs %.3f ms, leaf uplinks %.3f ms.</p>\n",
            (unsigned long long)st->flows, (unsigned long long)st->slowed, st->max_slowdown > 1 ? st->max_slowdown : 1.0,
            st->alone_ns * 1e-6, st->shared_ns * 1e-6, st->passes, st->passes == 1 ? "" : "s",
            st->converged ? ", converged" : ", <b class=\"bad\">not converged</b>", st->nic_busy_ns * 1e-6,
            st->uplink_busy_ns * 1e-6);
    if (st->links_used)
        fprintf(f, "<p>Every link: %llu carried traffic, utilization over the flows' span median %.1f %%, p90 %.1f %%. "
                   "Every flow: shared / alone median x%.3f, p95 x%.3f. Each flow and link: the archive's net_flows "
                   "and net_links tables.</p>\n",
                (unsigned long long)st->links_used, 100 * st->util_p50, 100 * st->util_p90, st->slowdown_p50,
                st->slowdown_p95);
    uint64_t nh = 0;
    for (int k = 0; k < LSIM_NETSHARE_UBINS; k++) nh += st->util_hist[k];
    if (nh) { /* an archive written before the histograms has none */
        net_hist(f, "links by utilization", st->util_hist, LSIM_NETSHARE_UBINS, 1);
        net_hist(f, "flows by shared / alone", st->slow_hist, LSIM_NETSHARE_SBINS, 0);
    }
    if (!st->nhot) {
        fputs("</div>\n", f);
        return;
    }
    fputs("<div class=\"scroll\"><table><tr><th class=\"l\">busiest links</th><th>busy ms</th><th>utilization</th>"
          "<th class=\"l\"></th></tr>\n",
          f);
    for (int i = 0; i < st->nhot; i++) {
        char name[64];
        lsim_netshare_link_name(st->hot_link[i], (size_t)st->ngpus, st->paths, name, sizeof name);
        double u = span > 0 ? st->hot_busy_ns[i] / span : 0;
        fputs("<tr><td class=\"l\">", f);
        esc(f, name);
        fprintf(f, "</td><td>%.3f</td><td>%.1f %%</td><td class=\"l\"><svg width=\"200\" height=\"10\">"
                   "<rect width=\"%.1f\" height=\"10\" fill=\"#4e79a7\"/></svg></td></tr>\n",
                st->hot_busy_ns[i] * 1e-6, 100 * u, 200 * (u < 1 ? u : 1));
    }
    fputs("</table></div>\n", f);
    network_kinds(f, st);
    fputs("</div>\n", f);
}

static const char SUMMARY_HEAD[] =
    "<div class=\"scroll\"><table><tr><th>rank</th><th class=\"l\">source</th><th>iterations</th>"
    "<th>window actual ms</th><th>predicted ms</th><th>error</th><th>critical path ms</th></tr>\n";

/* The summary's last row: the whole job, earliest start to latest end. */
static void job_row(FILE *f, const lsim_replay_item *items, size_t n, int any_obs, lsim_ns ja, lsim_ns jp)
{
    if (n > 1 && !any_obs) {
        fprintf(f, "<tr><td></td><td class=\"l\"><b>job</b> (all ranks)</td><td></td><td><b>%s</b></td><td><b>",
                items[0].unmeasured ? "not measured" : "-");
        put_ms(f, ms(jp));
        fputs("</b></td><td><b>-</b></td><td></td></tr>\n", f);
    } else if (n > 1) {
        double je = lsim_rel_err(ja, jp);
        fputs("<tr><td></td><td class=\"l\"><b>job</b> (all ranks)</td><td></td><td><b>", f);
        put_ms(f, ms(ja));
        fputs("</b></td><td><b>", f);
        put_ms(f, ms(jp));
        fprintf(f, "</b></td><td class=\"%s\"><b>", err_class(je));
        put_pct(f, je);
        fputs("</b></td><td></td></tr>\n", f);
    }
}

/* Whether GPU i gets a full section: every rank up to HTML_FULL_RANKS, then
 * the slowest and the fastest, and beyond HTML_AGG_MIN the slowest ones named
 * in the overview (top[0..ntop)). */
static int in_full(size_t i, size_t n, size_t slow, size_t fast, const size_t *top, size_t ntop)
{
    if (n <= HTML_FULL_RANKS || i == slow || i == fast) return 1;
    for (size_t k = 0; k < ntop; k++)
        if (top[k] == i) return 1;
    return 0;
}

int lsim_report_html(FILE *f, const lsim_replay_item *items, size_t n, lsim_err *err)
{
    return lsim_report_html_mem(f, items, n, NULL, NULL, err);
}

/* The brief of g, whether it has observed times already known. */
static void brief_with(const lsim_graph *g, int observed, lsim_report_brief *b)
{
    memset(b, 0, sizeof *b);
    b->rank = g->rank;
    b->source = g->source;
    b->observed = observed;
    b->latency = g->latency;
    lsim_report_coords_of(g, &b->stage, &b->replica);
}

void lsim_report_brief_of(const lsim_graph *g, lsim_report_brief *b)
{
    brief_with(g, lsim_metrics_observed_nodes(g) > 0, b);
}

void lsim_report_kernels_free(lsim_report_kernel *k, size_t n)
{
    for (size_t i = 0; k && i < n; i++) free(k[i].name);
    free(k);
}

/* One GPU's kernels by its own string ids (name -> row, slot[name]), each
 * name interned into the job's table once. A GPU whose nodes and times
 * are the same arrays as the last GPU counted node by node (class members
 * of a symmetry-reduced run, read shared), its names the same texts, adds
 * that GPU's rows again, as the archive's kernels table does
 * (rows_as_template): report of a 4,096-GPU store interned 72 M names,
 * half its time. The sums are of non-negative durations, saturating: the
 * same totals as node by node. */
typedef struct krow {
    uint32_t name, key;
    lsim_report_kernel k;
} krow;

typedef struct kscratch {
    krow *rows;
    size_t nrows, cap;
    uint32_t *slot; /* name -> row, UINT32_MAX: none yet */
    size_t nslot;
} kscratch;

static int gpu_kernels(const lsim_replay_item *it, lsim_strtab *keys, kscratch *s)
{
    const lsim_graph *g = it->g;
    size_t ns = lsim_strtab_count(g->strings), old = s->nslot;
    s->nrows = 0;
    if (ns > s->nslot) {
        uint32_t *p = lsim_realloc(s->slot, ns * sizeof *p);
        if (!p) return LSIM_ENOMEM;
        s->slot = p;
        s->nslot = ns;
        for (size_t k = old; k < ns; k++) p[k] = UINT32_MAX;
    }
    int rc = 0;
    for (size_t v = 0; !rc && v < g->n; v++) {
        if (g->kind[v] != LSIM_N_KERNEL && g->kind[v] != LSIM_N_MEMCPY && g->kind[v] != LSIM_N_MEMSET) continue;
        uint32_t id = g->name[v], r = id < s->nslot ? s->slot[id] : UINT32_MAX;
        if (r == UINT32_MAX) {
            const char *nm = str(g, id);
            uint32_t key;
            if (lsim_strtab_intern(keys, nm, strlen(nm), &key) || LSIM_GROW(s->rows, &s->cap, s->nrows + 1)) {
                rc = LSIM_ENOMEM;
                break;
            }
            r = (uint32_t)s->nrows++;
            s->rows[r] = (krow){id, key, {0}};
            if (id < s->nslot) s->slot[id] = r; /* an id past the table ("?") is looked up each time */
        }
        lsim_report_kernel *k = &s->rows[r].k;
        k->count++;
        k->predicted_ns = lsim_ns_add_sat(k->predicted_ns, it->end[v] - it->start[v]);
        if (g->obs_start[v] != LSIM_OBS_NONE) { /* as the archive's kernels table counts them */
            k->observed++;
            k->actual_ns = lsim_ns_add_sat(k->actual_ns, g->obs_end[v] - g->obs_start[v]);
        }
    }
    for (size_t r = 0; r < s->nrows; r++)
        if (s->rows[r].name < s->nslot) s->slot[s->rows[r].name] = UINT32_MAX;
    return rc;
}

/* Whether GPU a's rows are template t's (s->rows, counted from t). */
static int same_kernels(const lsim_replay_item *a, const lsim_replay_item *t, const kscratch *s)
{
    const lsim_graph *g = a->g, *h = t->g;
    if (g->n != h->n || g->name != h->name || g->kind != h->kind || g->obs_start != h->obs_start ||
        g->obs_end != h->obs_end || a->start != t->start || a->end != t->end)
        return 0;
    for (size_t r = 0; g->strings != h->strings && r < s->nrows; r++) {
        const char *x = str(g, s->rows[r].name), *y = str(h, s->rows[r].name);
        if (x != y && strcmp(x, y)) return 0;
    }
    return 1;
}

int lsim_report_kernels_of(const lsim_replay_item *items, size_t n, lsim_report_kernel **out, size_t *nout)
{
    lsim_strtab *keys = lsim_strtab_new();
    lsim_report_kernel *ka = NULL;
    kscratch s = {0};
    size_t cap = 0, t = SIZE_MAX; /* the GPU s.rows are of */
    int rc = keys ? 0 : LSIM_ENOMEM;
    *out = NULL;
    *nout = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        if (t == SIZE_MAX || !same_kernels(&items[i], &items[t], &s)) {
            rc = gpu_kernels(&items[i], keys, &s);
            t = i;
        }
        size_t old = cap;
        if (!rc) rc = LSIM_GROW(ka, &cap, (size_t)lsim_strtab_count(keys));
        if (!rc && cap > old) memset(ka + old, 0, (cap - old) * sizeof *ka);
        for (size_t r = 0; !rc && r < s.nrows; r++) {
            const lsim_report_kernel *x = &s.rows[r].k;
            lsim_report_kernel *k = &ka[s.rows[r].key];
            k->count += x->count;
            k->observed += x->observed;
            k->predicted_ns = lsim_ns_add_sat(k->predicted_ns, x->predicted_ns);
            k->actual_ns = lsim_ns_add_sat(k->actual_ns, x->actual_ns);
        }
    }
    free(s.rows);
    free(s.slot);
    uint32_t nk = rc ? 0 : lsim_strtab_count(keys);
    for (uint32_t k = 0; k < nk && !rc; k++)
        if (!(ka[k].name = lsim_strdup(lsim_strtab_get(keys, k)))) rc = LSIM_ENOMEM;
    lsim_strtab_free(keys);
    if (rc) {
        lsim_report_kernels_free(ka, nk);
        return rc;
    }
    *out = ka;
    *nout = nk;
    return 0;
}

int lsim_report_html_mem(FILE *f, const lsim_replay_item *items, size_t n, const lsim_memest_job *memory,
                         const lsim_job_path *path, lsim_err *err)
{
    lsim_report_extra x = {memory, NULL, path, NULL};
    return lsim_report_html_x(f, items, n, &x, err);
}

int lsim_report_html_x(FILE *f, const lsim_replay_item *items, size_t n, const lsim_report_extra *x, lsim_err *err)
{
    if (!f || (n && !items)) return lsim_err_set(err, LSIM_EARG, "HTML report: no output stream or no ranks");
    for (size_t i = 0; i < n; i++)
        if (!items[i].g || !items[i].r) return lsim_err_set(err, LSIM_EARG, "HTML report: rank %zu has no data", i);
    lsim_report_view v = {NULL, 0, n ? items[0].g->latency : LSIM_LAT_MODEL, x->memory, x->path, x->range, x->network};
    lsim_report_kernel *kern = NULL;
    /* each GPU's brief made once: the page asks whether a GPU has observed
     * times for each pair of summary rows, a walk of its nodes each time
     * (13 % of a 4,096-GPU page); GPUs that share their observed times
     * (read shared) share the answer */
    lsim_replay_item *it = lsim_malloc((n ? n : 1) * sizeof *it);
    lsim_report_brief *b = lsim_malloc((n ? n : 1) * sizeof *b);
    int rc = it && b ? 0 : LSIM_ENOMEM;
    for (size_t i = 0; !rc && i < n; i++) {
        const lsim_graph *g = items[i].g, *h = i ? items[i - 1].g : NULL;
        it[i] = items[i];
        if (items[i].brief) continue;
        int same = h && !items[i - 1].brief && h->obs_start == g->obs_start && h->n == g->n;
        brief_with(g, same ? b[i - 1].observed : lsim_metrics_observed_nodes(g) > 0, &b[i]);
        it[i].brief = &b[i];
    }
    if (!rc && n > 1 && lsim_report_kernels_of(items, n, &kern, &v.nkernels)) rc = LSIM_ENOMEM;
    v.kernels = kern;
    if (rc) rc = lsim_err_set(err, LSIM_ENOMEM, "HTML report: out of memory");
    else rc = lsim_report_html_view(f, it, n, &v, err);
    lsim_report_kernels_free(kern, v.nkernels);
    free(it);
    free(b);
    return rc;
}

/* The slowest and the fastest GPU, and the slowest named in the aggregated
 * view (top[0..*ntop)): what in_full tests. */
static void full_set(const lsim_replay_item *items, size_t n, size_t *slow, size_t *fast, size_t *top, size_t *ntop)
{
    size_t late = 0;
    *slow = *fast = 0;
    *ntop = n > HTML_AGG_MIN ? slowest_of(items, n, top) : 0;
    if (n > 1) extremes(items, n, slow, fast, &late);
}

size_t lsim_report_html_full(const lsim_replay_item *items, size_t n, size_t *out)
{
    size_t slow, fast, top[HTML_SLOWEST], ntop, k = 0;
    full_set(items, n, &slow, &fast, top, &ntop);
    for (size_t i = 0; i < n && k < LSIM_REPORT_HTML_FULL_MAX; i++)
        if (in_full(i, n, slow, fast, top, ntop)) out[k++] = i;
    return k;
}

/* GPUs a and b (b = a + 1) show the same figures in the summary, and b's
 * rank follows a's: they can share one folded row. */
static int same_row(const lsim_replay_item *items, size_t a, size_t b)
{
    const lsim_replay_item *x = &items[a], *y = &items[b];
    int obs = shows_obs(x);
    if (obs != shows_obs(y) || x->unmeasured != y->unmeasured || x->r->niters != y->r->niters ||
        (long long)rank_of(y, b) != (long long)rank_of(x, a) + 1 || x->r->window_predicted != y->r->window_predicted)
        return 0;
    if (obs && x->r->window_actual != y->r->window_actual) return 0;
    if (!x->cp != !y->cp || (x->cp && x->cp->length != y->cp->length)) return 0;
    return 1;
}

/* The last GPU of the summary row that starts at GPU i: i itself for a GPU
 * shown in full, else the last of the GPUs after it that agree with it. */
static size_t fold_end(const lsim_replay_item *items, size_t n, size_t i, size_t slow, size_t fast, const size_t *top,
                       size_t ntop)
{
    size_t j = i;
    if (in_full(i, n, slow, fast, top, ntop)) return i;
    while (j + 1 < n && !in_full(j + 1, n, slow, fast, top, ntop) && same_row(items, j, j + 1)) j++;
    return j;
}

/* The summary's row of GPUs i..j (i == j: one GPU; else GPUs whose figures
 * are equal, same_row): at 98,304 GPUs one row each made 13 MB of a 16 MB
 * page, while a stage's GPUs of a synthesized job mostly agree. A GPU
 * shown in full (linked) always has its own row. */
static void summary_row(FILE *f, const lsim_replay_item *items, size_t i, size_t j, int linked)
{
    const lsim_rank_report *r = items[i].r;
    double e = lsim_rel_err(r->window_actual, r->window_predicted);
    int obs = shows_obs(&items[i]);
    if (linked) fprintf(f, "<tr><td><a href=\"#rank-%zu\">%d</a></td><td class=\"nm\">", i, rank_of(&items[i], i));
    else if (j > i) fprintf(f, "<tr><td>%d&ndash;%d</td><td class=\"nm\">", rank_of(&items[i], i), rank_of(&items[j], j));
    else fprintf(f, "<tr><td>%d</td><td class=\"nm\">", rank_of(&items[i], i));
    esc(f, source_of(&items[i]));
    if (j > i) {
        fprintf(f, " &hellip; (%zu GPUs) ", j - i + 1);
        esc(f, source_of(&items[j]));
    }
    fprintf(f, "</td><td>%u</td><td>", r->niters);
    if (obs) put_ms(f, ms(r->window_actual));
    else fputs(items[i].unmeasured ? "not measured" : "-", f);
    fputs("</td><td>", f);
    put_ms(f, ms(r->window_predicted));
    if (obs) {
        fprintf(f, "</td><td class=\"%s\">", err_class(e));
        put_pct(f, e);
    } else
        fputs("</td><td>-", f);
    fputs("</td><td>", f);
    if (items[i].cp) put_ms(f, ms(items[i].cp->length));
    else fputs("&ndash;", f);
    fputs("</td></tr>\n", f);
}

int lsim_report_html_view(FILE *f, const lsim_replay_item *items, size_t n, const lsim_report_view *view,
                          lsim_err *err)
{
    if (!f || (n && !items) || !view) return lsim_err_set(err, LSIM_EARG, "HTML report: no output stream or no ranks");
    for (size_t i = 0; i < n; i++)
        if ((!items[i].g && !items[i].brief) || !items[i].r)
            return lsim_err_set(err, LSIM_EARG, "HTML report: rank %zu has no data", i);
    const lsim_memest_job *memory = view->memory;
    const lsim_job_path *path = view->path;
    const char *mode = lsim_latency_mode_name(view->latency == LSIM_LAT_OBSERVED ? LSIM_LAT_OBSERVED : LSIM_LAT_MODEL);
    size_t slow, fast, top[HTML_SLOWEST], ntop;
    full_set(items, n, &slow, &fast, top, &ntop);
    for (size_t i = 0; i < n; i++)
        if (in_full(i, n, slow, fast, top, ntop) && ((!items[i].g && !items[i].brief) || (items[i].g && (!items[i].start || !items[i].end))))
            return lsim_err_set(err, LSIM_EARG, "HTML report: GPU %zu is shown in full and has no graph or times", i);

    /* a job without observed times was synthesized or transformed: a
     * simulation, not the replay of a trace (as the table's head says) */
    int replayed = !n;
    for (size_t i = 0; i < n && !replayed; i++) replayed = has_obs(&items[i]); /* copies included: a replay */
    const char *title = replayed ? "lumosim replay report" : "lumosim simulation report (synthesized or what-if job)";
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
          f);
    fprintf(f, "<title>%s</title>\n<style>", title);
    fputs(CSS, f);
    fprintf(f, "</style>\n</head>\n<body>\n<header><h1>%s</h1>\n", title);
    fprintf(f, "<div class=\"meta\">lumosim %s &middot; latency mode: %s &middot; %zu rank%s</div></header>\n<main>\n",
            LSIM_VERSION, mode, n, n == 1 ? "" : "s");

    /* summary */
    lsim_ns ja, jp;
    lsim_report_job_span(items, n, &ja, &jp);
    int any_obs = !n, agg = n > HTML_AGG_MIN;
    for (size_t i = 0; i < n; i++) any_obs |= shows_obs(&items[i]);
    fputs("<div class=\"card\"><h3>Summary</h3>\n<p class=\"note\">Actual: what the trace recorded; predicted: what "
          "the replay produced. Error = (predicted &minus; actual) / actual.</p>\n",
          f);
    if (agg) { /* the job's line open, the GPUs' rows folded */
        fputs(SUMMARY_HEAD, f);
        job_row(f, items, n, any_obs, ja, jp);
        size_t rows = 0;
        for (size_t i = 0; i < n; i = fold_end(items, n, i, slow, fast, top, ntop) + 1) rows++;
        fprintf(f, "</table></div>\n<details><summary>Every GPU (%zu GPUs in %zu rows: consecutive GPUs with the same "
                   "figures share one)</summary>\n",
                n, rows);
    }
    fputs(SUMMARY_HEAD, f);
    for (size_t i = 0, j; i < n; i = j + 1) {
        j = agg ? fold_end(items, n, i, slow, fast, top, ntop) : i;
        summary_row(f, items, i, j, in_full(i, n, slow, fast, top, ntop));
    }
    if (!agg) job_row(f, items, n, any_obs, ja, jp);
    fputs(agg ? "</table></div></details></div>\n" : "</table></div></div>\n", f);
    if (memory && memory->nstages > 0 && memory->worst >= 0 && memory->worst < memory->nstages)
        memory_card(f, memory);
    if (view->network) network_card(f, view->network);
    if (path) job_path_card(f, path);
    if (view->range) job_range_card(f, view->range);

    if (n > 1 && job_overview(f, items, n, view->kernels, view->nkernels)) return lsim_err_set(err, LSIM_ENOMEM, "HTML report: out of memory");
    if (agg)
        fprintf(f, "<p class=\"note\">%zu GPUs: the %zu slowest and the fastest (%d) in full below; every GPU is in "
                   "the summary, the distributions and the heat maps.</p>\n",
                n, ntop, rank_of(&items[fast], fast));
    else if (n > HTML_FULL_RANKS)
        fprintf(f, "<p class=\"note\">%zu ranks: the slowest (%d) and the fastest (%d) in full below; every rank is in "
                   "the summary and the overview.</p>\n",
                n, rank_of(&items[slow], slow), rank_of(&items[fast], fast));
    for (size_t i = 0; i < n; i++) {
        if (!in_full(i, n, slow, fast, top, ntop)) continue;
        if (n > 1) {
            fprintf(f, "<details><summary>Rank %d", rank_of(&items[i], i));
            if (i == slow) fputs(" (slowest)", f);
            else if (agg && in_full(i, n, SIZE_MAX, SIZE_MAX, top, ntop))
                fputs(" (among the slowest)", f);
            if (i == fast) fputs(" (fastest)", f);
            fputs("</summary>\n", f);
        }
        rank_section(f, &items[i], i);
        if (n > 1) fputs("</details>\n", f);
    }

    fprintf(f, "</main>\n<footer>Written by lumosim %s. Self-contained: inline CSS and SVG, no scripts, no external "
               "resources.</footer>\n</body>\n</html>\n",
            LSIM_VERSION);
    if (fflush(f) != 0 || ferror(f)) return lsim_err_set(err, LSIM_EIO, "cannot write the HTML report");
    return 0;
}
