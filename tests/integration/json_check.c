/* json_check: assert facts about a JSON document, for CLI tests on machines
 * without python.
 *
 *   json_check FILE ASSERTION...
 *
 * ASSERTION is  TERM OP VALUE  where
 *   TERM  is PATH, abs(PATH) or len(PATH);
 *   PATH  is dot-separated: object keys, array indices (ranks.0.window) and
 *         '*' for every element of an array or every member of an object
 *         (ranks.*.window.error): the assertion must then hold for every
 *         match, and there must be at least one;
 *   OP    is one of  ==  !=  <  <=  >  >=;
 *   VALUE is a number, true, false, null or a string (quotes optional), or
 *         @PATH: the value found at another (wildcard-free) path.
 * Numbers compare as numbers, strings only with == and !=. len() is the number
 * of elements of an array or object, or the length of a string.
 *
 * Prints one line per assertion (ok/FAIL with the value found). Exit status:
 * 0 all hold, 1 some failed, 2 usage error or the file is not valid JSON. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

enum op { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE };
enum fn { FN_NONE, FN_ABS, FN_LEN };

typedef struct assertion {
    const char *text;
    enum fn fn;
    char *path;   /* owned copy of the path text */
    enum op op;
    const char *value; /* points into text */
} assertion;

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return NULL;
        }
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int parse_assertion(const char *text, assertion *a)
{
    memset(a, 0, sizeof *a);
    a->text = text;
    const char *p = strpbrk(text, "=!<>");
    if (!p || p == text)
        return -1;
    const char *term_end = p;
    if (p[0] == '=' && p[1] == '=') {
        a->op = OP_EQ;
        p += 2;
    } else if (p[0] == '!' && p[1] == '=') {
        a->op = OP_NE;
        p += 2;
    } else if (p[0] == '<' && p[1] == '=') {
        a->op = OP_LE;
        p += 2;
    } else if (p[0] == '>' && p[1] == '=') {
        a->op = OP_GE;
        p += 2;
    } else if (p[0] == '<') {
        a->op = OP_LT;
        p += 1;
    } else if (p[0] == '>') {
        a->op = OP_GT;
        p += 1;
    } else {
        return -1;
    }
    while (*p == ' ')
        p++;
    a->value = p;
    if (*p == '\0')
        return -1;

    /* the term, trimmed */
    const char *t0 = text, *t1 = term_end;
    while (t0 < t1 && *t0 == ' ')
        t0++;
    while (t1 > t0 && t1[-1] == ' ')
        t1--;
    if (t1 - t0 > 5 && strncmp(t0, "abs(", 4) == 0 && t1[-1] == ')') {
        a->fn = FN_ABS;
        t0 += 4;
        t1--;
    } else if (t1 - t0 > 5 && strncmp(t0, "len(", 4) == 0 && t1[-1] == ')') {
        a->fn = FN_LEN;
        t0 += 4;
        t1--;
    }
    if (t1 <= t0)
        return -1;
    a->path = malloc((size_t)(t1 - t0) + 1);
    if (!a->path)
        return -1;
    memcpy(a->path, t0, (size_t)(t1 - t0));
    a->path[t1 - t0] = '\0';
    return 0;
}

static int cmp_num(double x, enum op op, double y)
{
    switch (op) {
    case OP_EQ: return x == y;
    case OP_NE: return x != y;
    case OP_LT: return x < y;
    case OP_LE: return x <= y;
    case OP_GT: return x > y;
    case OP_GE: return x >= y;
    }
    return 0;
}

static int parse_number(const char *s, double *out)
{
    if (!*s)
        return -1;
    char *end = NULL;
    errno = 0;
    double d = strtod(s, &end);
    if (errno || !end || *end != '\0')
        return -1;
    *out = d;
    return 0;
}

/* Unquote "..." if quoted (no escapes needed in our tests). */
static void unquote(const char *v, char *buf, size_t cap)
{
    size_t n = strlen(v);
    if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
        v++;
        n -= 2;
    }
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, v, n);
    buf[n] = '\0';
}

static void describe(const cJSON *node, char *buf, size_t cap)
{
    if (!node) {
        snprintf(buf, cap, "(missing)");
        return;
    }
    char *s = cJSON_PrintUnformatted(node);
    if (!s) {
        snprintf(buf, cap, "(unprintable)");
        return;
    }
    if (strlen(s) > cap - 1) {
        memcpy(buf, s, cap - 4);
        strcpy(buf + cap - 4, "...");
    } else {
        strcpy(buf, s);
    }
    free(s);
}

/* The node at a wildcard-free path (for @PATH values), or NULL. */
static const cJSON *lookup(const cJSON *root, const char *path)
{
    char buf[512];
    if (strlen(path) >= sizeof buf)
        return NULL;
    strcpy(buf, path);
    const cJSON *node = root;
    for (char *comp = strtok(buf, "."); comp && node; comp = strtok(NULL, ".")) {
        if (cJSON_IsArray(node)) {
            char *end = NULL;
            long idx = strtol(comp, &end, 10);
            node = (end && *end == '\0' && end != comp && idx >= 0)
                       ? cJSON_GetArrayItem(node, (int)idx) : NULL;
        } else if (cJSON_IsObject(node)) {
            node = cJSON_GetObjectItemCaseSensitive(node, comp);
        } else {
            node = NULL;
        }
    }
    return node;
}

static const cJSON *g_root; /* the document, for @PATH values */

/* Evaluate one matched node. Returns 1 holds, 0 fails; *why explains. */
static int eval_node(const assertion *a, const cJSON *node, char *why, size_t cap)
{
    char got[160];
    describe(node, got, sizeof got);
    double want;
    char refbuf[512];
    const char *value = a->value;
    if (value[0] == '@') {
        const cJSON *ref = lookup(g_root, value + 1);
        if (!ref) {
            snprintf(why, cap, "reference %s not found", value);
            return 0;
        }
        if (cJSON_IsNumber(ref))
            snprintf(refbuf, sizeof refbuf, "%.17g", ref->valuedouble);
        else if (cJSON_IsString(ref))
            snprintf(refbuf, sizeof refbuf, "%s", ref->valuestring);
        else if (cJSON_IsBool(ref))
            snprintf(refbuf, sizeof refbuf, "%s", cJSON_IsTrue(ref) ? "true" : "false");
        else if (cJSON_IsNull(ref))
            snprintf(refbuf, sizeof refbuf, "null");
        else {
            snprintf(why, cap, "reference %s is not a scalar", value);
            return 0;
        }
        value = refbuf;
    }
    if (a->fn == FN_LEN) {
        double len;
        if (cJSON_IsArray(node) || cJSON_IsObject(node))
            len = (double)cJSON_GetArraySize(node);
        else if (cJSON_IsString(node))
            len = (double)strlen(node->valuestring);
        else {
            snprintf(why, cap, "len() of a %s", got);
            return 0;
        }
        if (parse_number(value, &want) != 0) {
            snprintf(why, cap, "len() compared with a non-number '%.60s'", value);
            return 0;
        }
        snprintf(why, cap, "len = %.17g", len);
        return cmp_num(len, a->op, want);
    }
    if (cJSON_IsNumber(node)) {
        double x = node->valuedouble;
        if (a->fn == FN_ABS)
            x = fabs(x);
        if (parse_number(value, &want) != 0) {
            snprintf(why, cap, "number %s compared with non-number '%.60s'", got, value);
            return 0;
        }
        if (isnan(x) || isinf(x)) {
            snprintf(why, cap, "value is not finite: %s", got);
            return 0;
        }
        snprintf(why, cap, "value %s%s", got, a->fn == FN_ABS ? " (abs taken)" : "");
        return cmp_num(x, a->op, want);
    }
    if (a->fn == FN_ABS) {
        snprintf(why, cap, "abs() of a non-number %s", got);
        return 0;
    }
    char v[256];
    unquote(value, v, sizeof v);
    snprintf(why, cap, "value %s", got);
    if (a->op != OP_EQ && a->op != OP_NE) {
        snprintf(why, cap, "ordering comparison on a non-number %s", got);
        return 0;
    }
    int eq;
    if (cJSON_IsString(node))
        eq = strcmp(node->valuestring, v) == 0;
    else if (cJSON_IsBool(node))
        eq = (cJSON_IsTrue(node) && strcmp(v, "true") == 0) ||
             (cJSON_IsFalse(node) && strcmp(v, "false") == 0);
    else if (cJSON_IsNull(node))
        eq = strcmp(v, "null") == 0;
    else
        eq = 0;
    return a->op == OP_EQ ? eq : !eq;
}

typedef struct walk_state {
    const assertion *a;
    const char *file;
    int matches;
    int failures;
} walk_state;

/* Walk the remaining path components (a mutable copy of the path, split in
 * place), with 'shown' the concrete path so far for messages. */
static void walk(walk_state *st, const cJSON *node, char *rest, char *shown, size_t shown_len,
                 size_t shown_cap)
{
    if (!rest) {
        char why[256];
        st->matches++;
        int ok = eval_node(st->a, node, why, sizeof why);
        if (!ok) {
            char ref[160] = "";
            if (st->a->value[0] == '@') {
                char refval[128];
                describe(lookup(g_root, st->a->value + 1), refval, sizeof refval);
                snprintf(ref, sizeof ref, " (%s is %s)", st->a->value, refval);
            }
            st->failures++;
            fprintf(stderr, "FAIL: %s: %s: at %s: %s%s\n", st->file, st->a->text,
                    shown_len ? shown : "(root)", why, ref);
        } else {
            printf("ok: %s: at %s: %s\n", st->a->text, shown_len ? shown : "(root)", why);
        }
        return;
    }
    char *dot = strchr(rest, '.');
    char *next = NULL;
    if (dot) {
        *dot = '\0';
        next = dot + 1;
    }
    const char *comp = rest;

    if (strcmp(comp, "*") == 0) {
        if (!cJSON_IsArray(node) && !cJSON_IsObject(node)) {
            st->failures++;
            fprintf(stderr, "FAIL: %s: %s: at %s: '*' applied to a non-container\n",
                    st->file, st->a->text, shown_len ? shown : "(root)");
        } else {
            int i = 0;
            for (const cJSON *c = node->child; c; c = c->next, i++) {
                size_t n = shown_len;
                if (cJSON_IsArray(node))
                    n += (size_t)snprintf(shown + n, shown_cap - n, "%s%d", n ? "." : "", i);
                else
                    n += (size_t)snprintf(shown + n, shown_cap - n, "%s%s", n ? "." : "",
                                          c->string);
                if (n >= shown_cap)
                    n = shown_cap - 1;
                walk(st, c, next, shown, n, shown_cap);
                shown[shown_len] = '\0';
            }
        }
    } else {
        const cJSON *child = NULL;
        if (cJSON_IsArray(node)) {
            char *end = NULL;
            long idx = strtol(comp, &end, 10);
            if (end && *end == '\0' && end != comp && idx >= 0)
                child = cJSON_GetArrayItem(node, (int)idx);
        } else if (cJSON_IsObject(node)) {
            child = cJSON_GetObjectItemCaseSensitive(node, comp);
        }
        size_t n = shown_len;
        n += (size_t)snprintf(shown + n, shown_cap - n, "%s%s", n ? "." : "", comp);
        if (n >= shown_cap)
            n = shown_cap - 1;
        if (!child) {
            st->failures++;
            fprintf(stderr, "FAIL: %s: %s: %s not found\n", st->file, st->a->text, shown);
        } else {
            walk(st, child, next, shown, n, shown_cap);
        }
        shown[shown_len] = '\0';
    }
    if (dot)
        *dot = '.';
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: json_check FILE 'PATH OP VALUE'...\n"
                        "  PATH: a.b.0.c, '*' for every element; abs(PATH), len(PATH)\n"
                        "  OP: == != < <= > >=\n");
        return 2;
    }
    const char *file = argv[1];
    size_t len = 0;
    char *text = read_all(file, &len);
    if (!text) {
        fprintf(stderr, "json_check: %s: cannot read: %s\n", file, strerror(errno));
        return 2;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root || (size_t)(end - text) != len) {
        size_t off = end ? (size_t)(end - text) : 0;
        if (!root && cJSON_GetErrorPtr())
            off = (size_t)(cJSON_GetErrorPtr() - text);
        fprintf(stderr, "json_check: %s: not valid JSON (error near byte %zu of %zu)\n",
                file, off, len);
        cJSON_Delete(root);
        free(text);
        return 2;
    }

    g_root = root;
    int status = 0;
    for (int i = 2; i < argc; i++) {
        assertion a;
        if (parse_assertion(argv[i], &a) != 0) {
            fprintf(stderr, "json_check: bad assertion '%s' (want PATH OP VALUE)\n", argv[i]);
            free(a.path);
            status = 2;
            break;
        }
        char shown[512] = "";
        walk_state st = {&a, file, 0, 0};
        char *path = a.path;
        if (strcmp(path, ".") == 0 || strcmp(path, "$") == 0)
            walk(&st, root, NULL, shown, 0, sizeof shown);
        else
            walk(&st, root, path, shown, 0, sizeof shown);
        if (st.failures == 0 && st.matches == 0) {
            st.failures++;
            fprintf(stderr, "FAIL: %s: %s: the path matched nothing\n", file, a.text);
        }
        if (st.failures)
            status = status ? status : 1;
        free(a.path);
    }
    cJSON_Delete(root);
    free(text);
    return status;
}
