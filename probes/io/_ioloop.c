/* The IO latency probe's timed request loop, in C.
 *
 * Why not Python: a Python loop adds interpreter work to every request, a large part of what
 * ioping spends per request in all (tests/bench/bench_io_latency.py prints both loops' and
 * ioping's time per request), and worse, its second clock read comes after the GIL is taken
 * back: when any other thread of the process (the TUI's, a busy collector) holds the GIL, a
 * read is timed with up to the interpreter's switch interval (5 ms by default) added. Here a
 * whole burst runs with the GIL released and both clock reads sit tight around the syscall,
 * as in ioping.
 *
 * burst(fd, buf, size, offsets, ops, first, count, lat, lat_pos, stop_at_ns, flags, stop)
 *     -> (ran, t1_ns, writes, err, nbytes)
 *
 * Runs up to `count` requests of `size` bytes, one at a time, at offsets[first:first+count]
 * (a buffer of uint64) from/into `buf`, storing each latency (ns) at lat[lat_pos + i] (a
 * writable buffer of int64). It stops after the first request that ends at or after
 * `stop_at_ns` (CLOCK_MONOTONIC, the clock of time.monotonic_ns), at the first failure, or
 * before the next request once stop[0] (a bytearray the probe's stop() sets) is non-zero: so
 * a burst may last until the next interval tick and still stop at once, and a thousand
 * workers need the GIL a few times a second each, not every few milliseconds.
 * flags: WRITE (pwrite instead of pread), FADVISE (POSIX_FADV_DONTNEED on the range before each
 * request, outside the timed window), MIXED (ops[first + i] != 0 means a write).
 * Returns: ran = requests completed (latencies stored); t1 = the clock after the last request
 * (0 if none ran); writes among them; on a failure of request number `ran`, err = its errno
 * (0 for a short transfer) and nbytes = what it transferred (-1 when err is set); else
 * err = 0 and nbytes = size.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define FLAG_WRITE 1
#define FLAG_FADVISE 2
#define FLAG_MIXED 4

static inline int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static PyObject *burst(PyObject *self, PyObject *args)
{
    int fd, flags;
    Py_ssize_t size, first, count, lat_pos;
    long long stop_at;
    Py_buffer buf, offsets, ops = {0}, lat, stop;
    PyObject *ops_obj, *result = NULL;

    if (!PyArg_ParseTuple(args, "iw*ny*Onnw*nLiy*", &fd, &buf, &size, &offsets, &ops_obj,
                          &first, &count, &lat, &lat_pos, &stop_at, &flags, &stop))
        return NULL;
    int mixed = (flags & FLAG_MIXED) != 0;
    if (mixed && PyObject_GetBuffer(ops_obj, &ops, PyBUF_SIMPLE) < 0)
        goto release;
    if (size <= 0 || size > buf.len || first < 0 || count < 0 || lat_pos < 0
        || first + count > offsets.len / (Py_ssize_t)sizeof(uint64_t)
        || lat_pos + count > lat.len / (Py_ssize_t)sizeof(int64_t)
        || (mixed && first + count > ops.len) || stop.len < 1) {
        PyErr_SetString(PyExc_ValueError, "burst: request, offsets or latency slots out of range");
        goto release;
    }

    const uint64_t *off = (const uint64_t *)offsets.buf + first;
    const unsigned char *op = mixed ? (const unsigned char *)ops.buf + first : NULL;
    int64_t *out = (int64_t *)lat.buf + lat_pos;
    char *data = buf.buf;
    const unsigned char *stopped = stop.buf;
    int always_write = (flags & FLAG_WRITE) != 0, fadvise = (flags & FLAG_FADVISE) != 0;
    Py_ssize_t ran = 0, writes = 0, nbytes = size;
    int64_t t1 = 0;
    int err = 0;

    Py_BEGIN_ALLOW_THREADS
    for (; ran < count; ran++) {
        if (__atomic_load_n(stopped, __ATOMIC_RELAXED))
            break;
        off_t where = (off_t)off[ran];
        int is_write = mixed ? op[ran] != 0 : always_write;
        if (fadvise) {
            int rc = posix_fadvise(fd, where, size, POSIX_FADV_DONTNEED);
            if (rc) { err = rc; nbytes = -1; break; }
        }
        ssize_t n;
        int64_t t0 = now_ns();
        do {
            n = is_write ? pwrite(fd, data, size, where) : pread(fd, data, size, where);
        } while (n < 0 && errno == EINTR);   /* a signal for the main thread: not a failure */
        t1 = now_ns();
        if (n != size) {
            err = n < 0 ? errno : 0;
            nbytes = n;
            break;
        }
        out[ran] = t1 - t0;
        writes += is_write;
        if (t1 >= stop_at) { ran++; break; }
    }
    Py_END_ALLOW_THREADS

    result = Py_BuildValue("(nLnin)", ran, (long long)t1, writes, err, nbytes);
release:
    PyBuffer_Release(&buf);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&lat);
    PyBuffer_Release(&stop);
    if (mixed && ops.obj)
        PyBuffer_Release(&ops);
    return result;
}

/* part(values, k, step) -> (total, min, max, top, mid)
 *
 * IntervalPart.of's figures of a worker's hand-off in one pass, without the GIL: the sum, the
 * minimum and maximum, the k largest values (descending, as heapq.nlargest gives them) and
 * sorted(values[::step]). Python spends several times as much per request on these
 * (tests/bench/bench_costs.py prints both costs per value).
 */
static int cmp_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void sift_down(int64_t *heap, Py_ssize_t n, Py_ssize_t i)
{   /* a min-heap: heap[0] is the smallest of the k largest seen so far */
    for (;;) {
        Py_ssize_t least = i, l = 2 * i + 1, r = l + 1;
        if (l < n && heap[l] < heap[least]) least = l;
        if (r < n && heap[r] < heap[least]) least = r;
        if (least == i) return;
        int64_t t = heap[i]; heap[i] = heap[least]; heap[least] = t;
        i = least;
    }
}

static PyObject *int64_list(const int64_t *v, Py_ssize_t n, int descending)
{
    PyObject *list = PyList_New(n);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyLong_FromLongLong(v[descending ? n - 1 - i : i]);
        if (item == NULL) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *part(PyObject *self, PyObject *args)
{
    Py_buffer values;
    Py_ssize_t k, step;
    PyObject *result = NULL, *top = NULL, *mid = NULL;

    if (!PyArg_ParseTuple(args, "y*nn", &values, &k, &step))
        return NULL;
    Py_ssize_t n = values.len / (Py_ssize_t)sizeof(int64_t);
    if (n < 1 || k < 1 || step < 1 || values.len % (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "part: needs int64 values, k >= 1 and step >= 1");
        PyBuffer_Release(&values);
        return NULL;
    }
    if (k > n)
        k = n;
    Py_ssize_t n_mid = (n + step - 1) / step;
    int64_t *heap = PyMem_RawMalloc(sizeof(int64_t) * (size_t)(k + n_mid));
    if (heap == NULL) {
        PyBuffer_Release(&values);
        return PyErr_NoMemory();
    }
    int64_t *sample = heap + k;
    const int64_t *v = values.buf;
    long long total = 0;
    int64_t lo = v[0], hi = v[0];

    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t x = v[i];
        total += x;
        if (x < lo) lo = x;
        if (x > hi) hi = x;
        if (i < k) {
            heap[i] = x;
            if (i == k - 1)
                for (Py_ssize_t j = k / 2; j-- > 0;)
                    sift_down(heap, k, j);
        } else if (x > heap[0]) {
            heap[0] = x;
            sift_down(heap, k, 0);
        }
    }
    qsort(heap, (size_t)k, sizeof(int64_t), cmp_int64);
    for (Py_ssize_t i = 0, j = 0; i < n; i += step)
        sample[j++] = v[i];
    qsort(sample, (size_t)n_mid, sizeof(int64_t), cmp_int64);
    Py_END_ALLOW_THREADS

    if ((top = int64_list(heap, k, 1)) != NULL && (mid = int64_list(sample, n_mid, 0)) != NULL)
        result = Py_BuildValue("(LLLOO)", total, (long long)lo, (long long)hi, top, mid);
    Py_XDECREF(top);
    Py_XDECREF(mid);
    PyMem_RawFree(heap);
    PyBuffer_Release(&values);
    return result;
}

static PyMethodDef methods[] = {
    {"burst", burst, METH_VARARGS,
     "burst(fd, buf, size, offsets, ops, first, count, lat, lat_pos, stop_at_ns, flags, stop)"
     " -> (ran, t1_ns, writes, err, nbytes): timed requests with the GIL released"},
    {"part", part, METH_VARARGS,
     "part(values, k, step) -> (total, min, max, top, mid): an interval part's figures"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ioloop",
    "The IO latency probe's timed request loop (GIL released, clock reads around the syscall).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__ioloop(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "WRITE", FLAG_WRITE) < 0
        || PyModule_AddIntConstant(m, "FADVISE", FLAG_FADVISE) < 0
        || PyModule_AddIntConstant(m, "MIXED", FLAG_MIXED) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
