/* pgbench's per-transaction log (--log) -> HdrHistogram bucket counts, at close to the speed of reading it.

Compiled into the worker image and the local virtualenv (setup.py); pgarena.tools.pgbench.txlog drives it.
Python keeps the control (files, blocks, which seconds are closed, base64); this file
does the two things that run once per transaction or per bucket: parsing a block of lines into counts
(scan) and encoding a second's counts in HdrHistogram's V2 format (encode). The GIL is released while
scanning, so the worker's heartbeat thread runs on.

A line: client_id transaction_no latency script_no time_epoch time_us [schedule_lag] [retries], the latency
in microseconds or "failed" / "skipped", time_epoch/time_us when the transaction ended. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* stats[] slots, shared with txlog.py (STAT_*). */
enum { WARMUP, NOT_DONE, MIN_START_US, MAX_END_US, MAX_SECOND, BAD_LINES, SKIPPED, N_STATS };

typedef struct {
    int64_t unit_magnitude, sub_bucket_half_count_magnitude, sub_bucket_half_count, sub_bucket_mask;
    int64_t lowest, highest, counts_len;
} Layout;

/* HdrHistogram's counts index of a value (hdrh's _counts_index_for), the value clamped into range. */
static inline int64_t counts_index(const Layout *h, int64_t value) {
    if (value < h->lowest) value = h->lowest;
    if (value > h->highest) value = h->highest;
    int64_t pow2_ceiling = 64 - __builtin_clzll((uint64_t)(value | h->sub_bucket_mask));
    int64_t bucket = pow2_ceiling - h->unit_magnitude - (h->sub_bucket_half_count_magnitude + 1);
    int64_t sub_bucket = value >> (bucket + h->unit_magnitude);
    return ((bucket + 1) << h->sub_bucket_half_count_magnitude) + (sub_bucket - h->sub_bucket_half_count);
}

/* A not-done line's latency: skipped ones (--rate with --latency-limit) are counted apart from failed. */
enum { FAILED_LINE = -1, SKIPPED_LINE = -2 };

typedef struct {
    int64_t latency;  /* FAILED_LINE or SKIPPED_LINE when not done */
    int64_t second, micro;
    int64_t script;  /* the script's number in a weighted mix (-f file@weight), -1 when it is not a number */
} Line;

/* Where a line's numbers go: the run's counts, the per-second ring (when window is set), stats; and, when
   scripts is set, each script's own counts (n_scripts rows of counts_len) and its done and not-done lines
   (script_stats: SCRIPT_DONE, SCRIPT_NOT_DONE per script), in the measured window. */
typedef struct {
    Layout h;
    int64_t since_us, base, window_s;
    int64_t *total, *window, *meta, *stats;  /* meta: per ring row, N_META each */
    int64_t *scripts, *script_stats, n_scripts;
} Sink;

enum { SCRIPT_DONE, SCRIPT_NOT_DONE, N_SCRIPT_STATS };

/* Per ring row: lines, lines not done, and the lowest and highest counts index recorded (when any is). */
enum { LINES, FAILED, LOW, HIGH, N_META };

/* What a scan adds up line by line, in locals (registers) rather than through the sink's pointers,
   which the compiler must assume alias the counts: the stats, and the current second's ring row. The
   current second's counts go to `hot`, a row that stays in cache, and are added to the ring's row when
   the second changes: a ring row touched line by line missed the cache at every new second (two-fifths
   of the scan's time). A file's lines come in time order, so a second is settled once, in one pass. */
typedef struct {
    int64_t stats[N_STATS];
    int64_t second, slot, row[N_META];
    int64_t *hot, hot_done, hot_low, hot_high;
    int64_t *touched, ntouched;  /* the hot row's buckets that are not zero, each once */
} Tally;

static int tally_start(const Sink *k, Tally *t) {
    memcpy(t->stats, k->stats, sizeof t->stats);
    t->second = -1, t->hot_done = 0, t->hot = NULL, t->touched = NULL, t->ntouched = 0;
    if (!k->window) return 1;
    /* one allocation: the hot row, then the list of its buckets in use */
    t->hot = calloc((size_t)(2 * k->h.counts_len + 1), sizeof(int64_t));
    t->touched = t->hot ? t->hot + k->h.counts_len : NULL;
    return t->hot != NULL;
}

/* The current second's hot counts into its ring row, and the row's tally into meta. */
static void tally_settle(const Sink *k, Tally *t) {
    if (t->second < 0) return;
    if (t->hot_done) {
        int64_t *row = k->window + t->slot * k->h.counts_len;
        for (int64_t j = 0; j < t->ntouched; j++) {  /* the buckets in use: fewer than the lines */
            int64_t i = t->touched[j];
            row[i] += t->hot[i], t->hot[i] = 0;
        }
        t->ntouched = 0;
        if (t->row[LINES] - t->row[FAILED] == t->hot_done) {  /* the row's first done lines */
            t->row[LOW] = t->hot_low, t->row[HIGH] = t->hot_high;
        } else {
            if (t->hot_low < t->row[LOW]) t->row[LOW] = t->hot_low;
            if (t->hot_high > t->row[HIGH]) t->row[HIGH] = t->hot_high;
        }
        t->hot_done = 0;
    }
    memcpy(k->meta + N_META * t->slot, t->row, sizeof t->row);
}

static void tally_flush(const Sink *k, Tally *t) {
    memcpy(k->stats, t->stats, sizeof t->stats);
    tally_settle(k, t);
    t->second = -1;
    free(t->hot);
    t->hot = NULL;
}

/* Adds a line; 0 (nothing added) when its second is outside the ring: the caller closes seconds (or
   merges a late line) and hands the line back. */
static inline int add_line(const Sink *k, Tally *t, const Line *line) {
    int64_t *st = t->stats, ended_us = line->second * 1000000 + line->micro;
    if (k->window && ended_us >= k->since_us && (line->second < k->base || line->second >= k->base + k->window_s))
        return 0;
    if (ended_us > st[MAX_END_US]) st[MAX_END_US] = ended_us;
    if (line->second > st[MAX_SECOND]) st[MAX_SECOND] = line->second;
    if (ended_us < k->since_us) {  /* warm-up: counted, not measured */
        st[WARMUP]++;
        return 1;
    }
    if (k->scripts && line->script >= 0 && line->script < k->n_scripts) {  /* a mix's script, counted apart too */
        int64_t *counted = k->script_stats + N_SCRIPT_STATS * line->script;
        if (line->latency < 0) {
            counted[SCRIPT_NOT_DONE]++;
        } else {
            counted[SCRIPT_DONE]++;
            k->scripts[line->script * k->h.counts_len + counts_index(&k->h, line->latency)]++;
        }
    }
    if (k->window && line->second != t->second) {  /* another second: its row (a division per second) */
        tally_settle(k, t);
        t->second = line->second;
        t->slot = line->second % k->window_s;
        memcpy(t->row, k->meta + N_META * t->slot, sizeof t->row);
    }
    if (line->latency < 0) {
        st[NOT_DONE]++;
        st[SKIPPED] += line->latency == SKIPPED_LINE;
        t->row[LINES]++, t->row[FAILED]++;
        return 1;
    }
    int64_t index = counts_index(&k->h, line->latency);
    if (k->window) {  /* a second's counts go to total when it is closed */
        t->touched[t->ntouched] = index;  /* kept only when the bucket was empty: no branch */
        t->ntouched += t->hot[index]++ == 0;
        t->row[LINES]++;
        if (t->hot_done++ == 0) {
            t->hot_low = t->hot_high = index;
        } else {
            if (index < t->hot_low) t->hot_low = index;
            if (index > t->hot_high) t->hot_high = index;
        }
    } else {
        k->total[index]++;
    }
    if (ended_us - line->latency < st[MIN_START_US]) st[MIN_START_US] = ended_us - line->latency;
    return 1;
}

/* The decimal number in [p, p + n), or -1 when it is empty, too long or holds anything but digits.
   Eight bytes at a time where the buffer has them (no branch per digit), else digit by digit. */
static inline int64_t number(const char *p, int64_t n, const char *end) {
    if (n < 1 || n > 18) return -1;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n <= 8 && p + 8 <= end) {
        uint64_t t;
        memcpy(&t, p, 8);
        t ^= 0x3030303030303030ULL;  /* a digit becomes 0..9, anything else 10 or more */
        t <<= 8 * (8 - n);           /* keep the n bytes, as leading zero digits */
        if ((((t + 0x7676767676767676ULL) | t) & 0x8080808080808080ULL) != 0) return -1;
        t = (t * 10 + (t >> 8)) & 0x00FF00FF00FF00FFULL;
        t = (t * 100 + (t >> 16)) & 0x0000FFFF0000FFFFULL;
        return (int64_t)((t * 10000 + (t >> 32)) & 0xFFFFFFFFULL);
    }
#endif
    int64_t value = 0;
    for (int64_t i = 0; i < n; i++) {
        if ((unsigned)(p[i] - '0') > 9) return -1;
        value = value * 10 + (p[i] - '0');
    }
    return value;
}

/* A line from its start and the positions of its first spaces (nsep of them) and its newline; 0 when it
   is not a pgbench --log line (cut short by a killed pgbench, or anything else). The end second is
   compared with the previous line's text before it is parsed: thousands of lines share it. */
enum { MAX_SECOND_DIGITS = 12, MAX_MICRO_DIGITS = 9 };

typedef struct {
    const char *text;  /* the previous line's end second (10 digits), or NULL */
    int64_t second;
} SecondCache;

static inline int parse_line(const char *start, const char *const *sep, int nsep, const char *newline,
                             const char *end, SecondCache *cache, Line *line) {
    if (nsep < 5) return 0;
    const char *latency = sep[1] + 1, *epoch = sep[3] + 1, *micro = sep[4] + 1;
    const char *micro_end = nsep > 5 ? sep[5] : newline;
    /* an end time past year 33658 or a microsecond field past 9 digits is not pgbench's (and would overflow) */
    if (sep[4] - epoch > MAX_SECOND_DIGITS || micro_end - micro > MAX_MICRO_DIGITS) return 0;
    line->latency = number(latency, sep[2] - latency, end);
    if (line->latency < 0) {
        if (sep[2] == latency || (*latency != 'f' && *latency != 's')) return 0;
        line->latency = *latency == 's' ? SKIPPED_LINE : FAILED_LINE;
    }
    if (sep[0] == start || sep[1] == sep[0] + 1 || sep[3] == sep[2] + 1) return 0;  /* empty fields */
    line->script = number(sep[2] + 1, sep[3] - sep[2] - 1, end);
    if (cache->text && sep[4] - epoch == 10 && memcmp(epoch, cache->text, 10) == 0) {
        line->second = cache->second;
    } else {
        line->second = number(epoch, sep[4] - epoch, end);
        if (line->second < 0) return 0;
        cache->text = sep[4] - epoch == 10 ? epoch : NULL;
        cache->second = line->second;
    }
    line->micro = number(micro, micro_end - micro, end);
    return line->micro >= 0;
}

#if defined(__SSE2__)
#include <emmintrin.h>
/* Bit i set where byte i of the 64 at p is a space (*spaces) or a newline (returned). */
static inline uint64_t newlines_of(const char *p, uint64_t *spaces) {
    const __m128i space = _mm_set1_epi8(' '), newline = _mm_set1_epi8('\n');
    uint64_t s = 0, n = 0;
    for (int i = 0; i < 4; i++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(p + 16 * i));
        s |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, space)) << (16 * i);
        n |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, newline)) << (16 * i);
    }
    *spaces = s;
    return n;
}
#else
static inline uint64_t newlines_of(const char *p, uint64_t *spaces) {
    uint64_t s = 0, n = 0;
    for (int i = 0; i < 64; i++) {
        s |= (uint64_t)(p[i] == ' ') << i;
        n |= (uint64_t)(p[i] == '\n') << i;
    }
    *spaces = s;
    return n;
}
#endif

/* Adds the whole lines in [start, end) (end just past a newline) to the sink, 64 bytes at a time: the
   separators' positions come from bit masks, so fields of varying length cost no branch per byte.
   Returns where it stopped: end, or the start of a line the sink refused; NULL when out of memory. */
static const char *scan_lines(const char *start, const char *end, Sink *sink) {
    const char *line_start = start, *sep[6];
    int nsep = 0;
    SecondCache cache = {NULL, 0};
    Tally tally;
    if (!tally_start(sink, &tally)) return NULL;  /* no memory */
    char tail[64];
    for (const char *chunk = start; chunk < end; chunk += 64) {
        const char *bytes = chunk;
        if (end - chunk < 64) {  /* the last, short chunk: read from a padded copy */
            memset(tail, 0, sizeof tail);
            memcpy(tail, chunk, (size_t)(end - chunk));
            bytes = tail;
        }
        uint64_t spaces, newlines = newlines_of(bytes, &spaces), separators = spaces | newlines;
        while (separators) {
            int i = __builtin_ctzll(separators);
            separators &= separators - 1;
            if (!((newlines >> i) & 1)) {
                if (nsep < 6) sep[nsep++] = chunk + i;
                continue;
            }
            Line line;
            if (!parse_line(line_start, sep, nsep, chunk + i, end, &cache, &line)) {
                tally.stats[BAD_LINES]++;
            } else if (!add_line(sink, &tally, &line)) {
                tally_flush(sink, &tally);
                return line_start;
            }
            line_start = chunk + i + 1;
            nsep = 0;
        }
    }
    tally_flush(sink, &tally);
    return end;
}

/* A block of 2 MiB or more is scanned in two halves at once when the machine has two cores or more: the
   second half into a sink of its own (scratch, below), added to the first's after both are done. Below
   that, a thread and the merge cost about what they save. */
#define TWO_HALVES_FROM (2 << 20)
/* Two files' blocks are scanned at once when the smaller is this large: a thread, the scratch sink's
   merge and its clearing cost about what a quarter of a MiB of lines takes to scan. */
#define TWO_FILES_FROM (512 << 10)

typedef struct {
    const char *start, *end, *stopped;
    Sink sink;
} Half;

static void *scan_half(void *arg) {
    Half *half = arg;
    half->stopped = scan_lines(half->start, half->end, &half->sink);
    return NULL;
}

/* into += from, for every count from holds; the ring's rows by second (only those from touched); and
   from's stats when they are a part of into's (a block's second half, not another file's). */
static void add_sink(Sink *into, const Sink *from, int with_stats) {
    int64_t n = into->h.counts_len;
    /* with a ring, a scan leaves total alone: a second's counts reach it when the second is closed */
    for (int64_t i = 0; !into->window && i < n; i++) into->total[i] += from->total[i];
    if (into->window) {
        for (int64_t slot = 0; slot < into->window_s; slot++) {
            int64_t *meta = into->meta + N_META * slot;
            const int64_t *other = from->meta + N_META * slot;
            if (other[LINES] > other[FAILED]) {  /* counts to add */
                int64_t *row = into->window + slot * n;
                const int64_t *add = from->window + slot * n;
                for (int64_t i = other[LOW]; i <= other[HIGH]; i++) row[i] += add[i];
                if (meta[LINES] == meta[FAILED]) {
                    meta[LOW] = other[LOW], meta[HIGH] = other[HIGH];
                } else {
                    if (other[LOW] < meta[LOW]) meta[LOW] = other[LOW];
                    if (other[HIGH] > meta[HIGH]) meta[HIGH] = other[HIGH];
                }
            }
            meta[LINES] += other[LINES], meta[FAILED] += other[FAILED];
        }
    }
    if (!with_stats) return;
    int64_t *st = into->stats;
    const int64_t *ot = from->stats;
    st[WARMUP] += ot[WARMUP], st[NOT_DONE] += ot[NOT_DONE], st[BAD_LINES] += ot[BAD_LINES], st[SKIPPED] += ot[SKIPPED];
    if (ot[MIN_START_US] < st[MIN_START_US]) st[MIN_START_US] = ot[MIN_START_US];
    if (ot[MAX_END_US] > st[MAX_END_US]) st[MAX_END_US] = ot[MAX_END_US];
    if (ot[MAX_SECOND] > st[MAX_SECOND]) st[MAX_SECOND] = ot[MAX_SECOND];
}

/* The second half's sink, kept between calls (allocating 12 MiB per block cost more than the scan), and
   cleared after each use where it was written. One caller at a time: another scans in one pass. */
static struct {
    pthread_mutex_t lock;
    int64_t *total, *window, *meta, n, window_s;
} scratch = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL, NULL, 0, 0};

static int scratch_for(const Sink *sink) {
    int64_t n = sink->h.counts_len, w = sink->window ? sink->window_s : 0;
    if (scratch.n == n && scratch.window_s >= w) return 1;
    free(scratch.total), free(scratch.window), free(scratch.meta);
    scratch.total = calloc((size_t)n, sizeof(int64_t));
    scratch.window = calloc((size_t)(w * n + 1), sizeof(int64_t));
    scratch.meta = calloc((size_t)(w * N_META + 1), sizeof(int64_t));
    scratch.n = n, scratch.window_s = w;
    if (scratch.total && scratch.window && scratch.meta) return 1;
    free(scratch.total), free(scratch.window), free(scratch.meta);
    scratch.total = scratch.window = scratch.meta = NULL;
    scratch.n = scratch.window_s = 0;
    return 0;
}

static void clear_scratch(const Sink *used) {
    if (!used->window) memset(used->total, 0, (size_t)used->h.counts_len * sizeof(int64_t));
    for (int64_t slot = 0; used->window && slot < used->window_s; slot++) {
        int64_t *meta = used->meta + N_META * slot;
        if (meta[LINES] > meta[FAILED])
            memset(used->window + slot * used->h.counts_len + meta[LOW], 0, (size_t)(meta[HIGH] + 1 - meta[LOW]) * sizeof(int64_t));
        memset(meta, 0, N_META * sizeof(int64_t));
    }
}

/* half's lines on another thread, into the scratch sink (its stats stay half's own); 0 when there is no
   memory or no thread, and the caller scans in one pass. The scratch lock is held. */
static int start_in_scratch(Half *half, pthread_t *thread) {
    if (!scratch_for(&half->sink)) return 0;
    half->sink.total = scratch.total, half->sink.meta = scratch.meta;
    half->sink.window = half->sink.window ? scratch.window : NULL;
    return pthread_create(thread, NULL, scan_half, half) == 0;
}

static int two_cores(void) {
    static long cores = 0;
    if (!cores) cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 1;
}

/* scan_lines over [start, end), in two threads where that pays; the same result either way. */
static const char *scan_block(const char *start, const char *end, Sink *sink) {
    const char *middle = NULL;
    /* per-script counts are written in place, not through a sink of the half's own: one pass */
    if (sink->scripts) return scan_lines(start, end, sink);
    if (end - start >= TWO_HALVES_FROM && two_cores()) middle = memchr(start + (end - start) / 2, '\n', (size_t)(end - start) / 2);
    if (!middle || pthread_mutex_trylock(&scratch.lock) != 0) return scan_lines(start, end, sink);
    middle++;
    int64_t stats[N_STATS] = {0};
    stats[MIN_START_US] = INT64_MAX, stats[MAX_END_US] = -1, stats[MAX_SECOND] = -1;
    Half second = {middle, end, NULL, *sink};
    second.sink.stats = stats;
    pthread_t thread;
    const char *stopped;
    if (!start_in_scratch(&second, &thread)) {
        stopped = scan_lines(start, end, sink);  /* no memory or no thread: one pass */
    } else {
        stopped = scan_lines(start, middle, sink);
        pthread_join(thread, NULL);
        if (stopped == middle) {  /* else the first half stopped early: the second's work is dropped */
            add_sink(sink, &second.sink, 1);
            stopped = second.stopped;
        }
        clear_scratch(&second.sink);
    }
    pthread_mutex_unlock(&scratch.lock);
    return stopped;
}

/* Two files' blocks at once, one per core: [b, b_end) into the scratch sink, its counts added to sink's
   after, its stats other's own (other: sink with the other file's stats). Unlike a block's two halves,
   each file stops on its own, so neither's work is dropped: a run's thread files (pgbench -j) each get
   a small share of a block, too small to split in two. Returns where a stopped; *b_stopped where b did. */
static const char *scan_two(const char *a, const char *a_end, Sink *sink, const char *b, const char *b_end, Sink *other,
                            const char **b_stopped) {
    if (a_end - a < TWO_FILES_FROM || b_end - b < TWO_FILES_FROM || !two_cores() || sink->scripts ||
        pthread_mutex_trylock(&scratch.lock) != 0) {  /* one after the other (a block of 2 MiB in two halves) */
        *b_stopped = scan_block(b, b_end, other);
        return scan_block(a, a_end, sink);
    }
    Half half = {b, b_end, NULL, *other};
    pthread_t thread;
    const char *stopped;
    if (!start_in_scratch(&half, &thread)) {
        *b_stopped = scan_lines(b, b_end, other);  /* no memory or no thread: one after the other */
        stopped = scan_lines(a, a_end, sink);
    } else {
        stopped = scan_lines(a, a_end, sink);
        pthread_join(thread, NULL);
        *b_stopped = half.stopped;
        add_sink(sink, &half.sink, 0);
        clear_scratch(&half.sink);
    }
    pthread_mutex_unlock(&scratch.lock);
    return stopped;
}

/* view holds rows x per_row int64s, the product checked for overflow: a huge window_s or counts_len wrapped
   past the check, and rows were written beyond the buffer. */
static int writable_int64(Py_buffer *view, int64_t rows, int64_t per_row, const char *name) {
    int64_t n;
    if (rows < 0 || per_row < 0 || __builtin_mul_overflow(rows, per_row, &n) || n > view->len / (Py_ssize_t)sizeof(int64_t)) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, not %lld x %lld counts", name, view->len, (long long)rows, (long long)per_row);
        return 0;
    }
    return 1;
}

/* A layout as hdrh makes it (txlog.py passes hdrh's own): every value's counts index is below counts_len
   (counts_index clamps to highest, whose index is the largest) and no shift in counts_index overflows. */
static int layout_ok(const Layout *h) {
    if (h->unit_magnitude < 0 || h->sub_bucket_half_count_magnitude < 0 || h->unit_magnitude + h->sub_bucket_half_count_magnitude > 60 ||
        h->sub_bucket_half_count != (int64_t)1 << h->sub_bucket_half_count_magnitude ||
        h->sub_bucket_mask != (2 * h->sub_bucket_half_count - 1) << h->unit_magnitude || h->lowest < 1 || h->highest < h->lowest)
        return 0;
    return counts_index(h, h->highest) < h->counts_len;
}

PyDoc_STRVAR(scan_doc,
"scan(data, layout, since_us, base, window_s, window, meta, total, stats, other=None, other_stats=None,\n"
"     scripts=None, script_stats=None)\n"
"-> (consumed, stop_second)\n\n"
"Adds the whole lines of data (up to its last newline; the rest is left) to total (counts of every done\n"
"transaction ending at or after since_us) and, when window is not None, to the per-second ring: second t\n"
"in row t % window_s of window (counts) and of meta (4 per row: lines, lines not done, lowest and highest\n"
"counts index recorded, valid when some line was done), for base <= t < base +\n"
"window_s. Stops at the first measured line of a second outside that range and returns its offset and\n"
"second (the caller closes seconds, or merges a late line), else (bytes read, -1). stats: warm-up lines,\n"
"not done, earliest start (us), latest end (us), latest end second, lines that are not pgbench --log\n"
"lines (a line cut short by a killed pgbench), skipped.\n"
"With other and other_stats (another file's block and stats), both blocks are scanned, at once on two\n"
"cores where the machine has them and both hold 512 KiB or more, into the same counts, and the result\n"
"is ((consumed, stop_second), (other's consumed, other's stop_second)).\n"
"With scripts and script_stats (int64: n rows of counts, 2 per script: done, not done; n from script_stats),\n"
"each measured line of script number s < n is also counted in row s: a weighted mix's per-script figures\n"
"(scanned in one pass then, on one core).");

static int overlaps(const Py_buffer *a, const Py_buffer *b) {
    const char *x = a->buf, *y = b->buf;
    return x < y + b->len && y < x + a->len;
}

/* The end second of the line at stopped (its fifth field), or -1 when the scan reached end. */
static long long stop_second(const char *stopped, const char *end) {
    if (stopped >= end) return -1;
    const char *q = stopped;
    for (int spaces = 0; spaces < 4; q++) spaces += *q == ' ';
    return strtoll(q, NULL, 10);
}

/* [*start, *end): the buffer's whole lines (up to its last newline; the rest is left). */
static void whole_lines(const Py_buffer *data, const char **start, const char **end) {
    *start = data->buf, *end = *start + data->len;
    while (*end > *start && (*end)[-1] != '\n') (*end)--;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer data, window = {0}, meta = {0}, total, stats, other = {0}, other_stats = {0}, scripts = {0}, script_stats = {0};
    PyObject *window_obj, *meta_obj, *other_obj = Py_None, *other_stats_obj = Py_None, *scripts_obj = Py_None,
             *script_stats_obj = Py_None;
    Sink k;
    long long since_us, base, window_s;
    if (!PyArg_ParseTuple(args, "y*(LLLLLLL)LLLOOw*w*|OOOO", &data, &k.h.unit_magnitude, &k.h.sub_bucket_half_count_magnitude,
                          &k.h.sub_bucket_half_count, &k.h.sub_bucket_mask, &k.h.lowest, &k.h.highest, &k.h.counts_len,
                          &since_us, &base, &window_s, &window_obj, &meta_obj, &total, &stats, &other_obj,
                          &other_stats_obj, &scripts_obj, &script_stats_obj))
        return NULL;
    PyObject *result = NULL;
    k.since_us = since_us, k.base = base, k.window_s = window_s;
    k.window = k.meta = NULL;
    k.scripts = k.script_stats = NULL, k.n_scripts = 0;
    if (!layout_ok(&k.h)) {
        PyErr_SetString(PyExc_ValueError, "layout: not an HdrHistogram's (its highest value's index must be under counts_len)");
        goto done;
    }
    if (window_obj != Py_None) {
        if (PyObject_GetBuffer(window_obj, &window, PyBUF_WRITABLE) < 0) goto done;
        if (PyObject_GetBuffer(meta_obj, &meta, PyBUF_WRITABLE) < 0) goto done;
        if (!writable_int64(&window, window_s, k.h.counts_len, "window") || !writable_int64(&meta, window_s, N_META, "meta"))
            goto done;
        if (window_s < 1 || base < 0 || base > INT64_MAX - window_s) {  /* base + window_s is computed per line */
            PyErr_Format(PyExc_ValueError, "ring: seconds %lld + %lld", base, window_s);
            goto done;
        }
        k.window = window.buf, k.meta = meta.buf;
    }
    if (!writable_int64(&total, 1, k.h.counts_len, "total") || !writable_int64(&stats, 1, N_STATS, "stats")) goto done;
    k.total = total.buf, k.stats = stats.buf;
    if ((scripts_obj == Py_None) != (script_stats_obj == Py_None)) {
        PyErr_SetString(PyExc_TypeError, "scripts and script_stats: both or neither");
        goto done;
    }
    if (scripts_obj != Py_None) {
        if (PyObject_GetBuffer(scripts_obj, &scripts, PyBUF_WRITABLE) < 0) goto done;
        if (PyObject_GetBuffer(script_stats_obj, &script_stats, PyBUF_WRITABLE) < 0) goto done;
        int64_t n = script_stats.len / (Py_ssize_t)(N_SCRIPT_STATS * sizeof(int64_t));
        if (n < 1) {
            PyErr_SetString(PyExc_ValueError, "script_stats: room for no script");
            goto done;
        }
        if (!writable_int64(&scripts, n, k.h.counts_len, "scripts") || !writable_int64(&script_stats, n, N_SCRIPT_STATS, "script_stats"))
            goto done;
        if (overlaps(&scripts, &script_stats) || overlaps(&scripts, &total) || overlaps(&scripts, &stats)) {
            PyErr_SetString(PyExc_ValueError, "scripts: memory that script_stats, total or stats use too");
            goto done;
        }
        k.scripts = scripts.buf, k.script_stats = script_stats.buf, k.n_scripts = n;
    }
    Sink ko = k;  /* the other file's: the same counts, its own stats */
    if ((other_obj == Py_None) != (other_stats_obj == Py_None)) {
        PyErr_SetString(PyExc_TypeError, "other and other_stats: both or neither");
        goto done;
    }
    if (other_obj != Py_None) {
        if (PyObject_GetBuffer(other_obj, &other, PyBUF_SIMPLE) < 0) goto done;
        if (PyObject_GetBuffer(other_stats_obj, &other_stats, PyBUF_WRITABLE) < 0) goto done;
        if (!writable_int64(&other_stats, 1, N_STATS, "other_stats")) goto done;
        /* the other file's scan writes other_stats while this one writes the rest, at the same time */
        if (overlaps(&other_stats, &stats) || overlaps(&other_stats, &total) || (window.obj && overlaps(&other_stats, &window)) ||
            (meta.obj && overlaps(&other_stats, &meta))) {
            PyErr_SetString(PyExc_ValueError, "other_stats: memory that stats, total, window or meta use too");
            goto done;
        }
        ko.stats = other_stats.buf;
    }

    const char *start, *end, *stopped, *b = NULL, *b_end = NULL, *b_stopped = NULL;
    whole_lines(&data, &start, &end);
    if (other.obj) whole_lines(&other, &b, &b_end);
    Py_BEGIN_ALLOW_THREADS
    stopped = other.obj ? scan_two(start, end, &k, b, b_end, &ko, &b_stopped) : scan_block(start, end, &k);
    Py_END_ALLOW_THREADS
    if (stopped == NULL || (other.obj && b_stopped == NULL)) {
        PyErr_NoMemory();
        goto done;
    }
    if (other.obj)
        result = Py_BuildValue("((nL)(nL))", (Py_ssize_t)(stopped - start), stop_second(stopped, end),
                               (Py_ssize_t)(b_stopped - b), stop_second(b_stopped, b_end));
    else
        result = Py_BuildValue("(nL)", (Py_ssize_t)(stopped - start), stop_second(stopped, end));
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&total);
    PyBuffer_Release(&stats);
    if (window.obj) PyBuffer_Release(&window);
    if (meta.obj) PyBuffer_Release(&meta);
    if (other.obj) PyBuffer_Release(&other);
    if (other_stats.obj) PyBuffer_Release(&other_stats);
    if (scripts.obj) PyBuffer_Release(&scripts);
    if (script_stats.obj) PyBuffer_Release(&script_stats);
    return result;
}

PyDoc_STRVAR(encode_doc,
"encode(counts, start, stop, header, cookie, level, huffman, into=None) -> bytes\n\n"
"HdrHistogram's V2 compressed encoding of int64 counts that are zero outside [start, stop), before\n"
"base64: cookie and the compressed length (big-endian), then zlib of header (its payload length, bytes\n"
"4-7, filled in) and the payload: ZigZag LEB128 varints, a run of k zero counts written as -k (none\n"
"after the last recorded count), the ninth byte of a varint carrying 8 bits. zlib at level, with the\n"
"Huffman-only strategy when huffman is true. With into (int64 counts), the counts are also added to it\n"
"and cleared: a second of the ring closed in one pass.");

static inline unsigned char *varint(unsigned char *o, int64_t token) {
    uint64_t v = ((uint64_t)token << 1) ^ (uint64_t)(token >> 63);
    int byte = 0;
    while (v >= 0x80 && byte < 8) {
        *o++ = (unsigned char)((v & 0x7F) | 0x80);
        v >>= 7;
        byte++;
    }
    *o++ = (unsigned char)(byte < 8 ? v : v & 0xFF);
    return o;
}

static inline void put_be32(unsigned char *o, uint32_t v) {
    o[0] = (unsigned char)(v >> 24), o[1] = (unsigned char)(v >> 16), o[2] = (unsigned char)(v >> 8), o[3] = (unsigned char)v;
}

/* The per-second path's deflate stream, reset rather than made anew for each second: making one costs
   more than compressing a second's few kilobytes. Used with the GIL held (one caller at a time). */
static z_stream huffman_stream;
static int huffman_ready = 0;

static PyObject *encode(PyObject *self, PyObject *args) {
    Py_buffer view, header, into = {0};
    Py_ssize_t start, stop;
    unsigned int cookie;
    int level, huffman;
    PyObject *into_obj = Py_None, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*nny*Iip|O", &view, &start, &stop, &header, &cookie, &level, &huffman, &into_obj)) return NULL;
    unsigned char *raw = NULL;
    z_stream local, *z = NULL;
    int local_ready = 0;
    if (into_obj != Py_None) {
        PyBuffer_Release(&view);
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 0), &view, PyBUF_WRITABLE) < 0) {
            view.obj = NULL;
            goto done;
        }
        if (PyObject_GetBuffer(into_obj, &into, PyBUF_WRITABLE) < 0) goto done;
    }
    /* stop compared with the count of counts, not stop * 8 with the bytes: a huge stop wrapped past the check */
    if (start < 0 || stop < start || stop > view.len / (Py_ssize_t)sizeof(int64_t) || (into.obj && into.len < view.len) ||
        header.len < 8) {
        PyErr_Format(PyExc_ValueError, "counts: %zd bytes, not [%zd, %zd) counts (or a header under 8 bytes)", view.len, start, stop);
        goto done;
    }
    int64_t *counts = view.buf, *added = into.buf;
    /* the header, then at most 9 bytes per token, two tokens per recorded count */
    raw = PyMem_Malloc((size_t)header.len + (size_t)(stop - start) * 18 + 1);
    if (raw == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(raw, header.buf, (size_t)header.len);
    unsigned char *payload = raw + header.len, *o = payload;
    int64_t zeros = start;
    for (Py_ssize_t i = start; i < stop; i++) {
        if (counts[i] == 0) {
            zeros++;
            continue;
        }
        if (zeros) o = varint(o, -zeros);
        o = varint(o, counts[i]);
        zeros = 0;
        if (added) added[i] += counts[i], counts[i] = 0;
    }
    put_be32(raw + 4, (uint32_t)(o - payload));
    if (huffman && level == Z_DEFAULT_COMPRESSION) {
        if (!huffman_ready) {
            memset(&huffman_stream, 0, sizeof huffman_stream);
            if (deflateInit2(&huffman_stream, level, Z_DEFLATED, MAX_WBITS, 8, Z_HUFFMAN_ONLY) != Z_OK) goto zlib_error;
            huffman_ready = 1;
        } else if (deflateReset(&huffman_stream) != Z_OK) {
            goto zlib_error;
        }
        z = &huffman_stream;
    } else {
        memset(&local, 0, sizeof local);
        if (deflateInit2(&local, level, Z_DEFLATED, MAX_WBITS, 8, huffman ? Z_HUFFMAN_ONLY : Z_DEFAULT_STRATEGY) != Z_OK)
            goto zlib_error;
        local_ready = 1;
        z = &local;
    }
    uLong raw_len = (uLong)(o - raw), bound = deflateBound(z, raw_len);
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(8 + bound));
    if (result == NULL) goto done;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(result);
    z->next_in = raw, z->avail_in = (uInt)raw_len;
    z->next_out = out + 8, z->avail_out = (uInt)bound;
    if (deflate(z, Z_FINISH) != Z_STREAM_END) {
        Py_CLEAR(result);
        goto zlib_error;
    }
    uLong compressed = bound - z->avail_out;
    put_be32(out, cookie);
    put_be32(out + 4, (uint32_t)compressed);
    _PyBytes_Resize(&result, (Py_ssize_t)(8 + compressed));
    goto done;
zlib_error:
    PyErr_Format(PyExc_RuntimeError, "zlib: %s", z && z->msg ? z->msg : "deflate failed");
done:
    if (local_ready) deflateEnd(&local);
    PyMem_Free(raw);
    if (view.obj) PyBuffer_Release(&view);
    PyBuffer_Release(&header);
    if (into.obj) PyBuffer_Release(&into);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, scan_doc},
    {"encode", encode, METH_VARARGS, encode_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_txlog", "pgbench --log parsing (see _txlog.c).", -1, methods};

PyMODINIT_FUNC PyInit__txlog(void) { return PyModule_Create(&module); }
