/* The memcached load's per-request loop, in C.
 *
 * Why not Python: on loopback a set costs the kernel about 8 us (the write delivers it to the
 * server and wakes one of its threads, the read takes the reply); the Python path through
 * uvloop added 4-5 us of interpreter work to each, so on a host whose cores are shared (the
 * server's threads, other load) memcslap's threaded C client went ahead of the probe
 * (tests/bench/bench_memcached.py prints both, with CPU per request). Here the connections
 * opened by the Engine (asyncio transports, reading paused) are driven from epoll sets with
 * the GIL released for a whole burst of a few milliseconds; the event loop runs between bursts
 * (samples, timers, signals, a worker's channel). With `lanes` above 1 the connections are
 * split in that many parts, each with its own epoll set, counters and latencies, all but the
 * first driven by a thread of its own during each burst: one thread the scheduler holds back
 * (another process on its core, a server thread woken onto it) no longer holds back every
 * request.
 *
 * Only the expected replies are handled here: STORED to a set, END or one complete
 * VALUE ... END to a get, and replies split over several reads. Anything else (error lines,
 * replies while idle, a closed or failed socket) stops the connection here and is handed to
 * Python as an event (`events()`); Python counts it as the Python path would and then either
 * resumes the connection (`resume(i)`: the next request) or drops it (`drop(i)`) before it
 * closes the transport. Latencies (ns, from the write of a request to the read of its reply,
 * CLOCK_MONOTONIC: the clock of time.perf_counter_ns) are kept in C arrays until `take()`.
 *
 * nearest_ranks() and fold() do the latencies' bookkeeping (probes/memcached/latency.py) in
 * one pass each instead of a sort and chains of map() over Python ints: at memcslap's rate
 * that was most of the interpreter's work left per request.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define OP_IDLE 0
#define OP_SET 1
#define OP_GET 2

#define EV_REPLY 0          /* an unexpected reply: payload = the bytes read */
#define EV_EOF 1            /* the server closed the connection */
#define EV_ERROR 2          /* read/write failed: payload = errno */

#define MAX_BUFFERED (1 << 21)   /* a reply this long without making sense goes to Python */
#define MAX_EVENTS 256

typedef struct {
    int fd;
    int lane;               /* the lane (thread) that drives it */
    int op;                 /* OP_*: the request in flight */
    int polled;             /* in its lane's epoll set */
    int out;                /* handed to Python (an event), or dropped */
    int finished;           /* no more requests from this connection */
    int want_write;         /* EPOLLOUT registered: the rest of a request to write */
    int queued;             /* in the send queue of this turn */
    int64_t sent_at;
    int64_t remaining;
    int64_t cursor;
    const char *req;        /* the request being written */
    Py_ssize_t req_len, written;
    char *buf;              /* a reply read in parts */
    Py_ssize_t buf_len, buf_cap;
} Conn;

typedef struct {
    int64_t *v;
    Py_ssize_t n, cap;
} Lat;

typedef struct {
    int index, kind, err;
    char *data;
    Py_ssize_t len;
} Event;

struct Loop;

/* One thread's share of the connections: its own epoll set, counters and latencies, so the
 * lanes of a burst share nothing they write. */
typedef struct {
    struct Loop *L;
    int epfd;
    Py_ssize_t first, end;  /* its connections: conns[first:end] */
    Py_ssize_t active;      /* of them, not finished */
    long long sent_set, sent_get, hits, misses;
    Lat lat_set, lat_get;
    Event *events;
    Py_ssize_t n_events, cap_events;
    Py_ssize_t *sendq;
    Py_ssize_t n_send;
    uint64_t rng;
    int stopping;           /* its stop_at_ns passed */
    int run;                /* its thread runs it in this burst */
    pthread_t thread;       /* lanes after the first: their own thread */
    int nomem;
    int os_error;           /* errno of a failed epoll_wait */
} Lane;

#define MAX_LANES 8
#define LATE_LANE_NS 100000     /* the first lane's steps while it waits for a late lane */

typedef struct Loop {
    PyObject_HEAD
    Py_ssize_t n;
    Conn *conns;
    Lane lanes[MAX_LANES];
    int n_lanes;
    PyObject *set_reqs, *get_reqs;    /* tuples of bytes, kept alive for the pointers below */
    const char **set_ptr, **get_ptr;
    Py_ssize_t *set_len, *get_len;
    Py_ssize_t key_count;
    double set_ratio;
    int stopping, closed;   /* set by Python between bursts */
    /* the threads of the lanes after the first: started by the first burst, a burst at a
     * time (go counts the bursts, arrived the threads done with the current one) */
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int sync_ready, threads, no_threads, quit;
    unsigned long go;
    int arrived;
    long long until, stop_at;
} Loop;

static inline int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline double next_random(Lane *W)
{
    /* xorshift64*: the mix test's set/get draw */
    uint64_t x = W->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    W->rng = x;
    return (double)((x * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static int lat_push(Lane *W, Lat *lat, int64_t value)
{
    if (lat->n == lat->cap) {
        Py_ssize_t cap = lat->cap ? lat->cap * 2 : 4096;
        int64_t *v = realloc(lat->v, (size_t)cap * sizeof(int64_t));
        if (v == NULL) {
            W->nomem = 1;
            return -1;
        }
        lat->v = v;
        lat->cap = cap;
    }
    lat->v[lat->n++] = value;
    return 0;
}

static inline Lane *lane_of(Loop *L, Py_ssize_t i)
{
    return &L->lanes[L->conns[i].lane];
}

static void set_poll(Lane *W, Conn *c, Py_ssize_t i, int want_write)
{
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | (want_write ? EPOLLOUT : 0);
    ev.data.u64 = (uint64_t)i;
    if (!c->polled) {
        if (epoll_ctl(W->epfd, EPOLL_CTL_ADD, c->fd, &ev) == 0)
            c->polled = 1;
    } else if (c->want_write != want_write) {
        epoll_ctl(W->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    }
    c->want_write = want_write;
}

static void unpoll(Lane *W, Conn *c)
{
    if (c->polled) {
        struct epoll_event ev;
        epoll_ctl(W->epfd, EPOLL_CTL_DEL, c->fd, &ev);
        c->polled = 0;
        c->want_write = 0;
    }
}

static void finish(Lane *W, Conn *c)
{
    if (!c->finished) {
        c->finished = 1;
        W->active--;
    }
}

static void hand_out(Lane *W, Py_ssize_t i, int kind, int err)
{
    Conn *c = &W->L->conns[i];
    unpoll(W, c);
    c->out = 1;
    if (W->n_events == W->cap_events) {
        Py_ssize_t cap = W->cap_events ? W->cap_events * 2 : 16;
        Event *e = realloc(W->events, (size_t)cap * sizeof(Event));
        if (e == NULL) {
            W->nomem = 1;
            return;
        }
        W->events = e;
        W->cap_events = cap;
    }
    Event *e = &W->events[W->n_events++];
    e->index = (int)i;
    e->kind = kind;
    e->err = err;
    e->data = NULL;
    e->len = 0;
    if (kind == EV_REPLY) {            /* the reply read so far goes with it */
        e->data = c->buf;
        e->len = c->buf_len;
        c->buf = NULL;
        c->buf_len = c->buf_cap = 0;
    }
}

/* Write what is left of the connection's request; 0 done or waiting for EPOLLOUT, -1 failed
 * (handed out). */
static int write_rest(Lane *W, Py_ssize_t i)
{
    Conn *c = &W->L->conns[i];
    while (c->written < c->req_len) {
        ssize_t w = write(c->fd, c->req + c->written, (size_t)(c->req_len - c->written));
        if (w > 0) {
            c->written += w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            set_poll(W, c, i, 1);
            return 0;
        }
        hand_out(W, i, EV_ERROR, w < 0 ? errno : EPIPE);
        return -1;
    }
    if (c->want_write)
        set_poll(W, c, i, 0);
    return 0;
}

/* The next request of a connection whose reply is in (Engine.send_next in C). */
static void send_next(Lane *W, Py_ssize_t i)
{
    Loop *L = W->L;
    Conn *c = &L->conns[i];
    c->op = OP_IDLE;
    if (L->stopping || W->stopping || c->remaining <= 0 || L->closed) {
        finish(W, c);
        return;
    }
    c->remaining--;
    Py_ssize_t k = (Py_ssize_t)c->cursor;
    c->cursor = k + 1 < L->key_count ? k + 1 : 0;
    double ratio = L->set_ratio;
    if (ratio >= 1.0 || (ratio > 0.0 && next_random(W) < ratio)) {
        c->op = OP_SET;
        W->sent_set++;
        c->req = L->set_ptr[k];
        c->req_len = L->set_len[k];
    } else {
        c->op = OP_GET;
        W->sent_get++;
        c->req = L->get_ptr[k];
        c->req_len = L->get_len[k];
    }
    c->written = 0;
    c->sent_at = now_ns();
    write_rest(W, i);
}

/* 1: a complete expected reply (counted, latency stored); 0: wait for more; -1: not ours. */
static int parse_reply(Lane *W, Conn *c, const char *d, Py_ssize_t len, int64_t t)
{
    if (c->op == OP_SET) {
        if (len == 8 && memcmp(d, "STORED\r\n", 8) == 0) {
            if (lat_push(W, &W->lat_set, t - c->sent_at) < 0)
                return -1;
            return 1;
        }
        return (len < 8 && memcmp(d, "STORED\r\n", (size_t)len) == 0) ? 0 : -1;
    }
    if (c->op != OP_GET)
        return -1;
    if (len >= 6 && memcmp(d, "VALUE ", 6) == 0) {
        const char *eol = memchr(d, '\r', (size_t)len);
        if (eol == NULL)
            return len < 512 ? 0 : -1;         /* the header line, still coming */
        Py_ssize_t e = eol - d;
        if (e + 1 >= len)
            return 0;
        if (d[e + 1] != '\n')
            return -1;
        /* VALUE <key> <flags> <bytes>[ <cas>]: the length is the field after the flags; the
         * Python path reads the last field, which is the same without cas (never asked) */
        Py_ssize_t s = e;
        while (s > 0 && d[s - 1] != ' ')
            s--;
        if (s == e)
            return -1;
        long long bytes = 0;
        for (Py_ssize_t j = s; j < e; j++) {
            if (d[j] < '0' || d[j] > '9' || bytes > (1LL << 40))
                return -1;
            bytes = bytes * 10 + (d[j] - '0');
        }
        Py_ssize_t need = e + 9 + (Py_ssize_t)bytes;
        if (len < need)
            return 0;
        if (len == need && memcmp(d + len - 5, "END\r\n", 5) == 0) {
            if (lat_push(W, &W->lat_get, t - c->sent_at) < 0)
                return -1;
            W->hits++;
            return 1;
        }
        return -1;
    }
    if (len == 5 && memcmp(d, "END\r\n", 5) == 0) {
        if (lat_push(W, &W->lat_get, t - c->sent_at) < 0)
            return -1;
        W->misses++;
        return 1;
    }
    if (len < 6 && (memcmp(d, "VALUE ", (size_t)len) == 0
                    || (len < 5 && memcmp(d, "END\r\n", (size_t)len) == 0)))
        return 0;
    return -1;
}

static int buf_append(Lane *W, Conn *c, const char *d, Py_ssize_t len)
{
    if (c->buf_len + len > c->buf_cap) {
        Py_ssize_t cap = c->buf_cap ? c->buf_cap : 256;
        while (cap < c->buf_len + len)
            cap *= 2;
        char *b = realloc(c->buf, (size_t)cap);
        if (b == NULL) {
            W->nomem = 1;
            return -1;
        }
        c->buf = b;
        c->buf_cap = cap;
    }
    memcpy(c->buf + c->buf_len, d, (size_t)len);
    c->buf_len += len;
    return 0;
}

/* What was read (`d`, or the connection's buffer when d is NULL): a complete reply is counted
 * and the next request queued; a partial one is kept; anything else is handed to Python. */
static void consume(Lane *W, Py_ssize_t i, const char *d, Py_ssize_t len, int64_t t)
{
    Conn *c = &W->L->conns[i];
    if (d == NULL) {
        d = c->buf;
        len = c->buf_len;
    }
    /* a reply before the request is all written waits for the write to end */
    int got = (c->written < c->req_len) ? 0 : parse_reply(W, c, d, len, t);
    if (got == 1) {
        c->buf_len = 0;
        if (!c->queued) {
            c->queued = 1;
            W->sendq[W->n_send++] = i;
        }
        return;
    }
    if (d != c->buf && buf_append(W, c, d, len) < 0)    /* kept, or carried by the event */
        return;
    if (c->buf_len < MAX_BUFFERED
        && (got == 0 || memchr(c->buf, '\n', (size_t)c->buf_len) == NULL))
        return;                    /* Python reads replies by the line: a whole one first */
    hand_out(W, i, EV_REPLY, 0);
}

/* Read a ready connection. */
static void on_readable(Lane *W, Py_ssize_t i, char *rbuf, Py_ssize_t rcap)
{
    Conn *c = &W->L->conns[i];
    ssize_t r;
    do {
        r = read(c->fd, rbuf, (size_t)rcap);
    } while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    if (r <= 0 && c->finished && c->op == OP_IDLE) {
        unpoll(W, c);              /* done with it: a close now is no failure */
        c->out = 1;
        return;
    }
    if (r < 0) {
        hand_out(W, i, EV_ERROR, errno);
        return;
    }
    if (r == 0) {
        hand_out(W, i, EV_EOF, 0);
        return;
    }
    int64_t t = now_ns();
    if (c->buf_len) {
        if (buf_append(W, c, rbuf, r) < 0)
            return;
        consume(W, i, NULL, 0, t);
    } else {
        consume(W, i, rbuf, r, t);
    }
}

/* One lane's share of a burst (no Python in it): replies read and the next requests written,
 * each after all the replies of one epoll_wait (as the Python path does), until `until`, an
 * event for Python, or every connection of the lane finished. */
static void run_lane(Lane *W, int64_t until, int64_t stop_at)
{
    Loop *L = W->L;
    char rbuf[16384];
    struct epoll_event evs[MAX_EVENTS];
    for (;;) {
        int64_t t = now_ns();
        if (stop_at && t >= stop_at)
            W->stopping = 1;
        if (W->stopping) {             /* idle connections end; those in flight drain */
            for (Py_ssize_t i = W->first; i < W->end; i++) {
                Conn *c = &L->conns[i];
                if (c->op == OP_IDLE && !c->out)
                    finish(W, c);
            }
        }
        if (W->active <= 0 || W->n_events || W->nomem || W->os_error || t >= until)
            return;
        int ms = (int)((until - t + 999999) / 1000000);
        int got = epoll_wait(W->epfd, evs, MAX_EVENTS, ms);
        if (got < 0) {
            if (errno != EINTR)
                W->os_error = errno;
            return;                    /* a signal: let Python see it */
        }
        W->n_send = 0;
        for (int j = 0; j < got; j++) {
            Py_ssize_t i = (Py_ssize_t)evs[j].data.u64;
            Conn *c = &L->conns[i];
            if (c->out)
                continue;
            if ((evs[j].events & EPOLLOUT) && c->written < c->req_len) {
                if (write_rest(W, i) < 0)
                    continue;
                if (c->written == c->req_len && c->buf_len)
                    consume(W, i, NULL, 0, now_ns());
                if (c->out)
                    continue;
            }
            if (evs[j].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                on_readable(W, i, rbuf, (Py_ssize_t)sizeof rbuf);
        }
        for (Py_ssize_t q = 0; q < W->n_send; q++) {
            Py_ssize_t i = W->sendq[q];
            L->conns[i].queued = 0;
            if (!L->conns[i].out)
                send_next(W, i);
        }
        W->n_send = 0;
    }
}

static void *lane_thread(void *arg)
{
    Lane *W = arg;
    Loop *L = W->L;
    unsigned long seen = 0;
    sigset_t all;                      /* signals are the main thread's (Python handles them) */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_mutex_lock(&L->mutex);
    for (;;) {
        while (L->go == seen && !L->quit)
            pthread_cond_wait(&L->cond, &L->mutex);
        if (L->quit)
            break;
        seen = L->go;
        int64_t until = L->until, stop_at = L->stop_at;
        int run = W->run;
        pthread_mutex_unlock(&L->mutex);
        if (run)
            run_lane(W, until, stop_at);
        pthread_mutex_lock(&L->mutex);
        if (++L->arrived == L->threads)
            pthread_cond_broadcast(&L->cond);
    }
    pthread_mutex_unlock(&L->mutex);
    return NULL;
}

static void stop_threads(Loop *L)
{
    if (L->threads) {
        pthread_mutex_lock(&L->mutex);
        L->quit = 1;
        pthread_cond_broadcast(&L->cond);
        pthread_mutex_unlock(&L->mutex);
        for (int w = 1; w <= L->threads; w++)
            pthread_join(L->lanes[w].thread, NULL);
        L->threads = 0;
    }
}

/* The threads of lanes 1..n-1, once; 0 when they run (or there are none to run). */
static int start_threads(Loop *L)
{
    if (L->threads || L->no_threads || L->n_lanes < 2)
        return 0;
    for (int w = 1; w < L->n_lanes; w++) {
        if (pthread_create(&L->lanes[w].thread, NULL, lane_thread, &L->lanes[w]) != 0) {
            stop_threads(L);           /* those started end; this thread runs every lane */
            L->quit = 0;
            L->no_threads = 1;
            return -1;
        }
        L->threads = w;
    }
    return 0;
}

static void Loop_dealloc(Loop *L)
{
    stop_threads(L);
    if (L->sync_ready) {
        pthread_mutex_destroy(&L->mutex);
        pthread_cond_destroy(&L->cond);
    }
    for (int w = 0; w < MAX_LANES; w++) {
        Lane *W = &L->lanes[w];
        if (W->epfd >= 0)
            close(W->epfd);
        for (Py_ssize_t k = 0; k < W->n_events; k++)
            free(W->events[k].data);
        free(W->events);
        free(W->sendq);
        free(W->lat_set.v);
        free(W->lat_get.v);
    }
    if (L->conns) {
        for (Py_ssize_t i = 0; i < L->n; i++)
            free(L->conns[i].buf);
        free(L->conns);
    }
    PyMem_Free((void *)L->set_ptr);
    PyMem_Free((void *)L->get_ptr);
    PyMem_Free(L->set_len);
    PyMem_Free(L->get_len);
    Py_XDECREF(L->set_reqs);
    Py_XDECREF(L->get_reqs);
    Py_TYPE(L)->tp_free((PyObject *)L);
}

static int requests_of(PyObject *seq, PyObject **keep, const char ***ptr, Py_ssize_t **lens,
                       Py_ssize_t count)
{
    PyObject *t = PySequence_Tuple(seq);
    if (t == NULL)
        return -1;
    *keep = t;
    if (PyTuple_GET_SIZE(t) < count) {
        PyErr_SetString(PyExc_ValueError, "Loop: fewer requests than keys");
        return -1;
    }
    *ptr = PyMem_Calloc((size_t)count, sizeof(char *));
    *lens = PyMem_Calloc((size_t)count, sizeof(Py_ssize_t));
    if (*ptr == NULL || *lens == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *b = PyTuple_GET_ITEM(t, k);
        if (!PyBytes_Check(b)) {
            PyErr_SetString(PyExc_TypeError, "Loop: requests must be bytes");
            return -1;
        }
        (*ptr)[k] = PyBytes_AS_STRING(b);
        (*lens)[k] = PyBytes_GET_SIZE(b);
    }
    return 0;
}

/* Loop(fds, cursors, remaining, set_requests, get_requests, set_ratio, seed, lanes) */
static int Loop_init(Loop *L, PyObject *args, PyObject *kw)
{
    PyObject *fds, *cursors, *remaining, *set_reqs, *get_reqs;
    double ratio;
    unsigned long long seed;
    int lanes = 1;
    if (L->conns != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Loop: already initialised");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "OOOOOdK|i", &fds, &cursors, &remaining, &set_reqs, &get_reqs,
                          &ratio, &seed, &lanes))
        return -1;
    Py_ssize_t n = PySequence_Size(fds);
    if (n < 0)
        return -1;
    if (PySequence_Size(cursors) != n || PySequence_Size(remaining) != n) {
        PyErr_SetString(PyExc_ValueError, "Loop: one cursor and one count per connection");
        return -1;
    }
    if (lanes < 1 || lanes > MAX_LANES) {
        PyErr_SetString(PyExc_ValueError, "Loop: lanes must be within 1..8");
        return -1;
    }
    if (lanes > n)
        lanes = n > 0 ? (int)n : 1;
    Py_ssize_t keys = PySequence_Size(get_reqs);
    if (keys <= 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "Loop: no keys");
        return -1;
    }
    L->key_count = keys;
    if (requests_of(set_reqs, &L->set_reqs, &L->set_ptr, &L->set_len, keys) < 0
        || requests_of(get_reqs, &L->get_reqs, &L->get_ptr, &L->get_len, keys) < 0)
        return -1;
    L->conns = calloc((size_t)(n ? n : 1), sizeof(Conn));
    if (L->conns == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    L->n = n;
    L->n_lanes = lanes;
    for (int w = 0; w < lanes; w++) {
        Lane *W = &L->lanes[w];
        W->L = L;
        W->first = n * w / lanes;
        W->end = n * (w + 1) / lanes;
        W->active = W->end - W->first;
        W->rng = (seed ? seed : 0x9E3779B97F4A7C15ULL) ^ (0xD1B54A32D192ED03ULL * (uint64_t)w);
        W->sendq = calloc((size_t)(W->active ? W->active : 1), sizeof(Py_ssize_t));
        W->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (W->sendq == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (W->epfd < 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *f = PySequence_GetItem(fds, i);
        PyObject *cu = PySequence_GetItem(cursors, i);
        PyObject *re = PySequence_GetItem(remaining, i);
        Conn *c = &L->conns[i];
        c->fd = f ? (int)PyLong_AsLong(f) : -1;
        c->cursor = cu ? PyLong_AsLongLong(cu) : 0;
        c->remaining = re ? PyLong_AsLongLong(re) : 0;
        Py_XDECREF(f);
        Py_XDECREF(cu);
        Py_XDECREF(re);
        if (PyErr_Occurred())
            return -1;
        if (c->cursor < 0 || c->cursor >= keys) {
            PyErr_SetString(PyExc_ValueError, "Loop: cursor out of range");
            return -1;
        }
        for (int w = 0; w < lanes; w++)
            if (i >= L->lanes[w].first && i < L->lanes[w].end)
                c->lane = w;
    }
    if (pthread_mutex_init(&L->mutex, NULL) != 0 || pthread_cond_init(&L->cond, NULL) != 0) {
        PyErr_SetString(PyExc_OSError, "Loop: cannot make the lanes' lock");
        return -1;
    }
    L->sync_ready = 1;
    L->set_ratio = ratio;
    return 0;
}

static PyObject *Loop_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    Loop *L = (Loop *)type->tp_alloc(type, 0);
    if (L != NULL)
        for (int w = 0; w < MAX_LANES; w++)
            L->lanes[w].epfd = -1;
    return (PyObject *)L;
}

static int check_index(Loop *L, Py_ssize_t i)
{
    if (L->conns == NULL || i < 0 || i >= L->n) {
        PyErr_SetString(PyExc_IndexError, "Loop: no such connection");
        return -1;
    }
    return 0;
}

static int any_nomem(Loop *L)
{
    for (int w = 0; w < L->n_lanes; w++)
        if (L->lanes[w].nomem)
            return 1;
    return 0;
}

/* start(): the first request on every connection. */
static PyObject *Loop_start(Loop *L, PyObject *unused)
{
    for (Py_ssize_t i = 0; i < L->n; i++) {
        Lane *W = lane_of(L, i);
        set_poll(W, &L->conns[i], i, 0);
        send_next(W, i);
    }
    if (any_nomem(L))
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static int lane_can_run(Lane *W)
{
    return W->active > 0 && !W->n_events && !W->nomem && !W->os_error;
}

/* burst(until_ns, stop_at_ns) -> True when events wait for Python. Each lane runs its
 * connections (those after the first in their own threads) until `until_ns`, until it has an
 * event for Python, or until all its connections are finished; from `stop_at_ns` on (when
 * non-zero) no new request is sent. The GIL is released throughout. */
static PyObject *Loop_burst(Loop *L, PyObject *args)
{
    long long until, stop_at;
    if (!PyArg_ParseTuple(args, "LL", &until, &stop_at))
        return NULL;
    if (L->conns == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Loop: not initialised");
        return NULL;
    }
    if (!L->closed) {
        start_threads(L);
        Py_BEGIN_ALLOW_THREADS
        if (L->threads) {
            pthread_mutex_lock(&L->mutex);
            L->until = until;
            L->stop_at = stop_at;
            L->arrived = 0;
            for (int w = 1; w < L->n_lanes; w++)
                L->lanes[w].run = lane_can_run(&L->lanes[w]);
            L->go++;
            pthread_cond_broadcast(&L->cond);
            pthread_mutex_unlock(&L->mutex);
            /* the first lane goes on while a thread the scheduler held back finishes its
             * burst (waiting idle would hold back this lane's requests too) */
            int64_t end = until;
            for (;;) {
                if (lane_can_run(&L->lanes[0]))
                    run_lane(&L->lanes[0], end, stop_at);
                pthread_mutex_lock(&L->mutex);
                int all = L->arrived >= L->threads;
                if (!all && !lane_can_run(&L->lanes[0]))
                    while (L->arrived < L->threads)
                        pthread_cond_wait(&L->cond, &L->mutex);
                pthread_mutex_unlock(&L->mutex);
                if (all || !lane_can_run(&L->lanes[0]))
                    break;
                end = now_ns() + LATE_LANE_NS;
            }
        } else {                       /* one thread: the lanes take turns */
            for (int w = 0; w < L->n_lanes; w++) {
                int64_t t = now_ns();
                if (lane_can_run(&L->lanes[w]))
                    run_lane(&L->lanes[w], t + (until - t) / (L->n_lanes - w), stop_at);
            }
        }
        Py_END_ALLOW_THREADS
    }
    if (any_nomem(L))
        return PyErr_NoMemory();
    int pending = 0;
    for (int w = 0; w < L->n_lanes; w++) {
        Lane *W = &L->lanes[w];
        if (W->os_error) {
            errno = W->os_error;
            W->os_error = 0;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        pending |= W->n_events > 0;
    }
    return PyBool_FromLong(pending);
}

/* events() -> [(index, kind, op, payload)]: payload the bytes read (EV_REPLY) or errno. */
static PyObject *Loop_events(Loop *L, PyObject *unused)
{
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (int w = 0; w < L->n_lanes; w++) {
        Lane *W = &L->lanes[w];
        for (Py_ssize_t k = 0; k < W->n_events; k++) {
            Event *e = &W->events[k];
            PyObject *payload = e->kind == EV_REPLY
                ? PyBytes_FromStringAndSize(e->data ? e->data : "", e->len)
                : PyLong_FromLong(e->err);
            PyObject *item = payload ? Py_BuildValue("iiiN", e->index, e->kind,
                                                     L->conns[e->index].op, payload) : NULL;
            if (item == NULL || PyList_Append(out, item) < 0) {
                Py_XDECREF(item);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(item);
        }
        for (Py_ssize_t k = 0; k < W->n_events; k++)
            free(W->events[k].data);
        W->n_events = 0;
    }
    return out;
}

/* resume(i): a connection Python handled goes on with its next request (or finishes). */
static PyObject *Loop_resume(Loop *L, PyObject *arg)
{
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (check_index(L, i) < 0)
        return NULL;
    Conn *c = &L->conns[i];
    Lane *W = lane_of(L, i);
    if (!c->finished && !L->closed) {
        c->out = 0;
        c->buf_len = 0;
        set_poll(W, c, i, 0);
        send_next(W, i);
    }
    Py_RETURN_NONE;
}

/* drop(i): the connection leaves the loop for good (before Python closes its socket). */
static PyObject *Loop_drop(Loop *L, PyObject *arg)
{
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (check_index(L, i) < 0)
        return NULL;
    Conn *c = &L->conns[i];
    Lane *W = lane_of(L, i);
    unpoll(W, c);
    c->out = 1;
    c->op = OP_IDLE;
    finish(W, c);
    Py_RETURN_NONE;
}

/* close(): every connection leaves the loop (the transports are closed next). */
static PyObject *Loop_close(Loop *L, PyObject *unused)
{
    for (Py_ssize_t i = 0; i < L->n; i++) {
        Conn *c = &L->conns[i];
        Lane *W = lane_of(L, i);
        unpoll(W, c);
        c->out = 1;
        finish(W, c);
    }
    L->closed = 1;
    L->stopping = 1;
    Py_BEGIN_ALLOW_THREADS
    stop_threads(L);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *Loop_stop_sending(Loop *L, PyObject *unused)
{
    L->stopping = 1;
    for (Py_ssize_t i = 0; i < L->n; i++) {
        Conn *c = &L->conns[i];
        if (c->op == OP_IDLE && !c->out)
            finish(lane_of(L, i), c);
    }
    Py_RETURN_NONE;
}

/* overdue(timeout_ns) -> [index]: connections whose request has waited that long. */
static PyObject *Loop_overdue(Loop *L, PyObject *arg)
{
    long long timeout = PyLong_AsLongLong(arg);
    if (timeout == -1 && PyErr_Occurred())
        return NULL;
    int64_t limit = now_ns() - timeout;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < L->n; i++) {
        Conn *c = &L->conns[i];
        if (c->op != OP_IDLE && !c->out && c->sent_at < limit) {
            PyObject *x = PyLong_FromSsize_t(i);
            if (x == NULL || PyList_Append(out, x) < 0) {
                Py_XDECREF(x);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(x);
        }
    }
    return out;
}

/* op(i) -> the request in flight (0 none, 1 set, 2 get). */
static PyObject *Loop_op(Loop *L, PyObject *arg)
{
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (check_index(L, i) < 0)
        return NULL;
    return PyLong_FromLong(L->conns[i].op);
}

static PyObject *take_lat(Loop *L, int get)
{
    Py_ssize_t n = 0;
    for (int w = 0; w < L->n_lanes; w++)
        n += get ? L->lanes[w].lat_get.n : L->lanes[w].lat_set.n;
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (out == NULL)
        return NULL;
    char *p = PyBytes_AS_STRING(out);
    for (int w = 0; w < L->n_lanes; w++) {
        Lat *lat = get ? &L->lanes[w].lat_get : &L->lanes[w].lat_set;
        if (lat->n)
            memcpy(p, lat->v, (size_t)lat->n * sizeof(int64_t));
        p += lat->n * (Py_ssize_t)sizeof(int64_t);
        lat->n = 0;
    }
    return out;
}

/* take() -> (set latencies, get latencies) as bytes of native int64, and clears them. */
static PyObject *Loop_take(Loop *L, PyObject *unused)
{
    PyObject *s = take_lat(L, 0);
    PyObject *g = s ? take_lat(L, 1) : NULL;
    if (g == NULL) {
        Py_XDECREF(s);
        return NULL;
    }
    return Py_BuildValue("NN", s, g);
}

/* counters() -> (sent_set, sent_get, get_hits, get_misses, active, stopping) */
static PyObject *Loop_counters(Loop *L, PyObject *unused)
{
    long long sent_set = 0, sent_get = 0, hits = 0, misses = 0;
    Py_ssize_t active = 0;
    int stopping = L->stopping;
    for (int w = 0; w < L->n_lanes; w++) {
        Lane *W = &L->lanes[w];
        sent_set += W->sent_set;
        sent_get += W->sent_get;
        hits += W->hits;
        misses += W->misses;
        active += W->active;
        stopping |= W->stopping;
    }
    return Py_BuildValue("LLLLni", sent_set, sent_get, hits, misses, active, stopping);
}

/* in_flight() -> requests sent and not answered, on the connections in the loop */
static PyObject *Loop_in_flight(Loop *L, PyObject *unused)
{
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < L->n; i++)
        n += L->conns[i].op != OP_IDLE && !L->conns[i].out;
    return PyLong_FromSsize_t(n);
}

/* lanes() -> the number of threads that drive the connections in a burst */
static PyObject *Loop_lanes(Loop *L, PyObject *unused)
{
    return PyLong_FromLong(L->n_lanes);
}

static PyMethodDef Loop_methods[] = {
    {"start", (PyCFunction)Loop_start, METH_NOARGS, "The first request on every connection."},
    {"burst", (PyCFunction)Loop_burst, METH_VARARGS,
     "burst(until_ns, stop_at_ns) -> events waiting: replies and requests, GIL released."},
    {"events", (PyCFunction)Loop_events, METH_NOARGS,
     "[(index, kind, op, payload)] of the connections handed to Python."},
    {"resume", (PyCFunction)Loop_resume, METH_O, "resume(i): the next request of connection i."},
    {"drop", (PyCFunction)Loop_drop, METH_O, "drop(i): connection i leaves the loop."},
    {"close", (PyCFunction)Loop_close, METH_NOARGS, "Every connection leaves the loop."},
    {"stop_sending", (PyCFunction)Loop_stop_sending, METH_NOARGS,
     "No new requests; those in flight finish."},
    {"overdue", (PyCFunction)Loop_overdue, METH_O,
     "overdue(timeout_ns) -> indices of requests waiting that long."},
    {"op", (PyCFunction)Loop_op, METH_O, "op(i) -> the request in flight on connection i."},
    {"take", (PyCFunction)Loop_take, METH_NOARGS,
     "(set, get) latencies as int64 bytes, cleared."},
    {"counters", (PyCFunction)Loop_counters, METH_NOARGS,
     "(sent_set, sent_get, get_hits, get_misses, active, stopping)"},
    {"in_flight", (PyCFunction)Loop_in_flight, METH_NOARGS,
     "Requests sent and not answered."},
    {"lanes", (PyCFunction)Loop_lanes, METH_NOARGS,
     "The number of threads that drive the connections in a burst."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LoopType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inspector.probes.memcached._mcloop.Loop",
    .tp_basicsize = sizeof(Loop),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Connections of one Engine driven in C (see the module's source).",
    .tp_new = Loop_new,
    .tp_init = (initproc)Loop_init,
    .tp_dealloc = (destructor)Loop_dealloc,
    .tp_methods = Loop_methods,
};


/* --- the latencies' bookkeeping (probes/memcached/latency.py) ------------------------------- */

static PyObject *from_u128(unsigned __int128 x)
{
    PyObject *hi = PyLong_FromUnsignedLongLong((unsigned long long)(x >> 64));
    PyObject *lo = PyLong_FromUnsignedLongLong((unsigned long long)x);
    PyObject *shift = PyLong_FromLong(64);
    PyObject *out = NULL, *hi_shifted = NULL;
    if (hi && lo && shift && (hi_shifted = PyNumber_Lshift(hi, shift)) != NULL)
        out = PyNumber_Or(hi_shifted, lo);
    Py_XDECREF(hi);
    Py_XDECREF(lo);
    Py_XDECREF(shift);
    Py_XDECREF(hi_shifted);
    return out;
}

static int64_t *copy_values(Py_buffer *b, Py_ssize_t *n)
{
    if (b->itemsize != (Py_ssize_t)sizeof(int64_t) || b->len % (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_TypeError, "values must be an array('q')");
        return NULL;
    }
    *n = b->len / (Py_ssize_t)sizeof(int64_t);
    int64_t *v = malloc((size_t)(*n ? *n : 1) * sizeof(int64_t));
    if (v == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(v, b->buf, (size_t)b->len);
    return v;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Put the k-th smallest of v[lo..hi) at v[k], smaller ones before it, larger after. */
static void select_kth(int64_t *v, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t k)
{
    int rounds = 0;
    while (hi - lo > 16) {
        if (++rounds > 64) {                 /* a pathological order: sort what is left */
            qsort(v + lo, (size_t)(hi - lo), sizeof(int64_t), cmp_i64);
            return;
        }
        Py_ssize_t mid = lo + (hi - lo) / 2;
        int64_t a = v[lo], b = v[mid], c = v[hi - 1];
        int64_t pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        Py_ssize_t i = lo, lt = lo, gt = hi;          /* three-way: < pivot | == | > */
        while (i < gt) {
            if (v[i] < pivot) {
                int64_t t = v[lt]; v[lt++] = v[i]; v[i++] = t;
            } else if (v[i] > pivot) {
                int64_t t = v[--gt]; v[gt] = v[i]; v[i] = t;
            } else {
                i++;
            }
        }
        if (k < lt)
            hi = lt;
        else if (k >= gt)
            lo = gt;
        else
            return;
    }
    qsort(v + lo, (size_t)(hi - lo), sizeof(int64_t), cmp_i64);
}

/* nearest_ranks(values, ranks) -> ([value at each 1-based rank], max, sum): exact, by selection
 * on a copy (ranks ascending). */
static PyObject *nearest_ranks(PyObject *self, PyObject *args)
{
    Py_buffer b;
    PyObject *ranks_obj, *result = NULL, *values_out = NULL;
    if (!PyArg_ParseTuple(args, "y*O", &b, &ranks_obj))
        return NULL;
    Py_ssize_t n = 0;
    int64_t *v = copy_values(&b, &n);
    PyBuffer_Release(&b);
    if (v == NULL)
        return NULL;
    PyObject *ranks = PySequence_Fast(ranks_obj, "ranks must be a sequence");
    if (ranks == NULL || n == 0) {
        if (ranks != NULL)
            PyErr_SetString(PyExc_ValueError, "no values");
        goto done;
    }
    Py_ssize_t m = PySequence_Fast_GET_SIZE(ranks);
    values_out = PyList_New(m);
    if (values_out == NULL)
        goto done;
    Py_ssize_t from = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        Py_ssize_t r = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(ranks, j));
        if (r == -1 && PyErr_Occurred())
            goto done;
        if (r < 1 || r > n || r - 1 < from) {
            PyErr_SetString(PyExc_ValueError, "ranks must ascend within 1..len(values)");
            goto done;
        }
        select_kth(v, from, n, r - 1);
        from = r - 1;
        PyObject *x = PyLong_FromLongLong(v[r - 1]);
        if (x == NULL)
            goto done;
        PyList_SET_ITEM(values_out, j, x);
    }
    int64_t max = v[0];
    __int128 sum = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (v[i] > max)
            max = v[i];
        sum += v[i];
    }
    PyObject *sum_obj = sum >= 0 ? from_u128((unsigned __int128)sum) : NULL;
    if (sum_obj == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "negative latencies");
        goto done;
    }
    result = Py_BuildValue("OLN", values_out, (long long)max, sum_obj);
done:
    Py_XDECREF(values_out);
    Py_XDECREF(ranks);
    free(v);
    return result;
}

/* fold(values, sub_bucket_mask, half_count_magnitude) -> (floors, counts, total, total_sq,
 * min, max): each value rounded down to the lowest value of its HdrHistogram bucket (unit
 * magnitude 0) and counted per bucket, with the exact sums; values are all >= 1. */
static PyObject *fold(PyObject *self, PyObject *args)
{
    Py_buffer b;
    long long mask;
    int half_magnitude;
    if (!PyArg_ParseTuple(args, "y*Li", &b, &mask, &half_magnitude))
        return NULL;
    Py_ssize_t n = 0;
    int64_t *v = copy_values(&b, &n);
    PyBuffer_Release(&b);
    if (v == NULL)
        return NULL;
    PyObject *result = NULL, *floors = NULL, *counts = NULL;
    size_t cap = 1024, used = 0;
    int64_t *keys = calloc(cap, sizeof(int64_t));
    int64_t *cnt = calloc(cap, sizeof(int64_t));
    if (keys == NULL || cnt == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int base = half_magnitude + 1;
    int64_t lo = n ? v[0] : 0, hi = lo;
    unsigned __int128 total = 0, total_sq = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t x = v[i];
        if (x < 1) {
            PyErr_SetString(PyExc_ValueError, "fold: values must be >= 1");
            goto done;
        }
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        total += (uint64_t)x;
        total_sq += (unsigned __int128)(uint64_t)x * (uint64_t)x;
        int shift = 64 - __builtin_clzll((unsigned long long)(x | mask)) - base;
        int64_t floor = shift > 0 ? (x >> shift) << shift : x;
        size_t h = ((uint64_t)floor * 0x9E3779B97F4A7C15ULL) >> 32 & (cap - 1);
        while (keys[h] != 0 && keys[h] != floor)
            h = (h + 1) & (cap - 1);
        if (keys[h] == 0) {
            keys[h] = floor;
            if (++used * 2 > cap) {         /* grow: rehash into twice the room */
                size_t ncap = cap * 2;
                int64_t *nk = calloc(ncap, sizeof(int64_t)), *nc = calloc(ncap, sizeof(int64_t));
                if (nk == NULL || nc == NULL) {
                    free(nk);
                    free(nc);
                    PyErr_NoMemory();
                    goto done;
                }
                cnt[h] += 1;
                for (size_t j = 0; j < cap; j++) {
                    if (keys[j] == 0)
                        continue;
                    size_t g = ((uint64_t)keys[j] * 0x9E3779B97F4A7C15ULL) >> 32 & (ncap - 1);
                    while (nk[g] != 0)
                        g = (g + 1) & (ncap - 1);
                    nk[g] = keys[j];
                    nc[g] = cnt[j];
                }
                free(keys);
                free(cnt);
                keys = nk;
                cnt = nc;
                cap = ncap;
                continue;
            }
        }
        cnt[h] += 1;
    }
    floors = PyList_New((Py_ssize_t)used);
    counts = PyList_New((Py_ssize_t)used);
    if (floors == NULL || counts == NULL)
        goto done;
    Py_ssize_t k = 0;
    for (size_t j = 0; j < cap; j++) {
        if (keys[j] == 0)
            continue;
        PyObject *f = PyLong_FromLongLong(keys[j]), *c = PyLong_FromLongLong(cnt[j]);
        if (f == NULL || c == NULL) {
            Py_XDECREF(f);
            Py_XDECREF(c);
            goto done;
        }
        PyList_SET_ITEM(floors, k, f);
        PyList_SET_ITEM(counts, k, c);
        k++;
    }
    PyObject *t = from_u128(total), *t2 = t ? from_u128(total_sq) : NULL;
    if (t2 == NULL) {
        Py_XDECREF(t);
        goto done;
    }
    result = Py_BuildValue("OONNLL", floors, counts, t, t2, (long long)lo, (long long)hi);
done:
    Py_XDECREF(floors);
    Py_XDECREF(counts);
    free(keys);
    free(cnt);
    free(v);
    return result;
}

static PyMethodDef module_methods[] = {
    {"nearest_ranks", nearest_ranks, METH_VARARGS,
     "nearest_ranks(values, ranks) -> ([value at each 1-based rank], max, sum)"},
    {"fold", fold, METH_VARARGS,
     "fold(values, sub_bucket_mask, half_count_magnitude) -> (floors, counts, total, "
     "total_sq, min, max)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_mcloop",
    "The memcached load's per-request loop in C (probes/memcached/_mcloop.c).", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__mcloop(void)
{
    if (PyType_Ready(&LoopType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&LoopType);
    if (PyModule_AddObject(m, "Loop", (PyObject *)&LoopType) < 0
        || PyModule_AddIntConstant(m, "EV_REPLY", EV_REPLY) < 0
        || PyModule_AddIntConstant(m, "EV_EOF", EV_EOF) < 0
        || PyModule_AddIntConstant(m, "EV_ERROR", EV_ERROR) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
