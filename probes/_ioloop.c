/* The IO latency probe's timed request loop, in C.
 *
 * Why not Python: a Python loop adds ~0.8 us of interpreter work per request (ioping's whole
 * per-request cost is ~1.2 us), and worse, its second clock read comes after the GIL is taken
 * back: when any other thread of the process (the TUI's, a busy collector) holds the GIL, a
 * 70 us read is timed as ~5 ms, the interpreter's switch interval. Here a whole burst runs with
 * the GIL released and both clock reads sit tight around the syscall, as in ioping.
 *
 * burst(fd, buf, size, offsets, ops, first, count, lat, lat_pos, stop_at_ns, flags)
 *     -> (ran, t1_ns, writes, err, nbytes)
 *
 * Runs up to `count` requests of `size` bytes, one at a time, at offsets[first:first+count]
 * (a buffer of uint64) from/into `buf`, storing each latency (ns) at lat[lat_pos + i] (a
 * writable buffer of int64). It stops after the first request that ends at or after
 * `stop_at_ns` (CLOCK_MONOTONIC, the clock of time.monotonic_ns), or at the first failure.
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
    Py_buffer buf, offsets, ops = {0}, lat;
    PyObject *ops_obj, *result = NULL;

    if (!PyArg_ParseTuple(args, "iw*ny*Onnw*nLi", &fd, &buf, &size, &offsets, &ops_obj,
                          &first, &count, &lat, &lat_pos, &stop_at, &flags))
        return NULL;
    int mixed = (flags & FLAG_MIXED) != 0;
    if (mixed && PyObject_GetBuffer(ops_obj, &ops, PyBUF_SIMPLE) < 0)
        goto release;
    if (size <= 0 || size > buf.len || first < 0 || count < 0 || lat_pos < 0
        || first + count > offsets.len / (Py_ssize_t)sizeof(uint64_t)
        || lat_pos + count > lat.len / (Py_ssize_t)sizeof(int64_t)
        || (mixed && first + count > ops.len)) {
        PyErr_SetString(PyExc_ValueError, "burst: request, offsets or latency slots out of range");
        goto release;
    }

    const uint64_t *off = (const uint64_t *)offsets.buf + first;
    const unsigned char *op = mixed ? (const unsigned char *)ops.buf + first : NULL;
    int64_t *out = (int64_t *)lat.buf + lat_pos;
    char *data = buf.buf;
    int always_write = (flags & FLAG_WRITE) != 0, fadvise = (flags & FLAG_FADVISE) != 0;
    Py_ssize_t ran = 0, writes = 0, nbytes = size;
    int64_t t1 = 0;
    int err = 0;

    Py_BEGIN_ALLOW_THREADS
    for (; ran < count; ran++) {
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
    if (mixed && ops.obj)
        PyBuffer_Release(&ops);
    return result;
}

static PyMethodDef methods[] = {
    {"burst", burst, METH_VARARGS,
     "burst(fd, buf, size, offsets, ops, first, count, lat, lat_pos, stop_at_ns, flags)"
     " -> (ran, t1_ns, writes, err, nbytes): timed requests with the GIL released"},
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
