/* A reader of flat Avro record bodies: the fast path of `RecordCodec.decode`.
 *
 * A flat-avro record is a sequence of fields, each an `int`, `long`, `float`, `double`,
 * `string` or `bytes`, possibly in a union with `null`. fastavro's generic reader walks the
 * schema for every value; this reader is compiled once per schema into a list of
 * (name, kind, null branch) and reads a body in one loop, building the same dict fastavro
 * builds (the same keys, the same Python values).
 *
 * It never guesses: anything outside the plain encodings (a union index other than the two
 * branches, a varint over 10 bytes or 64 bits, an `int` outside 32 bits, a negative or
 * too-long length, invalid UTF-8, bytes left over, running out of bytes) makes `decode`
 * answer None, and the caller reads the body again with fastavro, which accepts or
 * refuses it exactly as before and names the field and byte offset at fault. So this reader
 * accepts nothing fastavro refuses, and on what it accepts it returns fastavro's values
 * (tests/core/test_flatread.py checks both, with hypothesis).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum kind { K_INT, K_LONG, K_FLOAT, K_DOUBLE, K_STRING, K_BYTES };

static const char *const KIND_NAMES[] = {"int", "long", "float", "double", "string", "bytes"};
#define KIND_COUNT 6

typedef struct {
    PyObject *name;  /* the dict key (a str, shared by every decoded row) */
    int kind;
    int null_branch; /* 0 or 1: the union index of null; -1: not a union (NOT NULL) */
} field_t;

typedef struct {
    PyObject_HEAD
    Py_ssize_t count;
    field_t *fields;
} Reader;

/* An unsigned varint of at most `max_bytes` bytes; 0 when it is longer, runs past `end` or
 * (at ten bytes) carries bits beyond 64. */
static inline int
read_varint(const unsigned char **at, const unsigned char *end, int max_bytes, uint64_t *out)
{
    const unsigned char *p = *at;
    uint64_t value = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (p >= end) {
            return 0;
        }
        unsigned char b = *p++;
        if (i == 9 && b > 1) {
            return 0;
        }
        value |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *at = p;
            *out = value;
            return 1;
        }
    }
    return 0;
}

static inline int64_t
unzigzag(uint64_t n)
{
    return (int64_t)(n >> 1) ^ -(int64_t)(n & 1);
}

/* A zig-zag long of at most ten bytes. */
static inline int
read_long(const unsigned char **at, const unsigned char *end, int64_t *out)
{
    uint64_t raw;
    if (!read_varint(at, end, 10, &raw)) {
        return 0;
    }
    *out = unzigzag(raw);
    return 1;
}

/* The Python value of one non-null field; NULL with no exception set: not read here;
 * NULL with an exception set: out of memory. */
static PyObject *
read_value(int kind, const unsigned char **at, const unsigned char *end)
{
    int64_t n;
    const unsigned char *p;
    switch (kind) {
    case K_INT:
        if (!read_long(at, end, &n) || n < INT32_MIN || n > INT32_MAX) {
            return NULL;
        }
        return PyLong_FromLongLong(n);
    case K_LONG:
        if (!read_long(at, end, &n)) {
            return NULL;
        }
        return PyLong_FromLongLong(n);
    case K_FLOAT: {
        p = *at;
        if (end - p < 4) {
            return NULL;
        }
        uint32_t bits = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                        (uint32_t)p[3] << 24;
        float f;
        memcpy(&f, &bits, sizeof f);
        *at = p + 4;
        return PyFloat_FromDouble((double)f);
    }
    case K_DOUBLE: {
        p = *at;
        if (end - p < 8) {
            return NULL;
        }
        uint64_t bits = 0;
        for (int i = 7; i >= 0; i--) {
            bits = bits << 8 | p[i];
        }
        double d;
        memcpy(&d, &bits, sizeof d);
        *at = p + 8;
        return PyFloat_FromDouble(d);
    }
    case K_STRING:
    case K_BYTES: {
        if (!read_long(at, end, &n) || n < 0 || n > end - *at) {
            return NULL;
        }
        p = *at;
        *at = p + n;
        if (kind == K_BYTES) {
            return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
        }
        PyObject *text = PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, "strict");
        if (text == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear(); /* fastavro names it */
        }
        return text;
    }
    }
    return NULL;
}

/* Reader.decode(data, start=0) -> dict | None */
static PyObject *
Reader_decode(Reader *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "decode(data, start=0)");
        return NULL;
    }
    Py_ssize_t start = 0;
    if (nargs == 2) {
        start = PyLong_AsSsize_t(args[1]);
        if (start == -1 && PyErr_Occurred()) {
            return NULL;
        }
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (start < 0 || start > view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "start is outside the data");
        return NULL;
    }
    const unsigned char *at = (const unsigned char *)view.buf + start;
    const unsigned char *end = (const unsigned char *)view.buf + view.len;
    PyObject *row = PyDict_New();
    if (row == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < self->count; i++) {
        const field_t *field = &self->fields[i];
        PyObject *value;
        if (field->null_branch >= 0) {
            int64_t branch;
            if (!read_long(&at, end, &branch) || (branch != 0 && branch != 1)) {
                goto not_here;
            }
            if (branch == field->null_branch) {
                value = Py_NewRef(Py_None);
            } else {
                value = read_value(field->kind, &at, end);
            }
        } else {
            value = read_value(field->kind, &at, end);
        }
        if (value == NULL) {
            goto not_here;
        }
        int failed = PyDict_SetItem(row, field->name, value);
        Py_DECREF(value);
        if (failed) {
            goto error;
        }
    }
    if (at != end) {
        goto not_here; /* bytes left over */
    }
    PyBuffer_Release(&view);
    return row;
not_here:
    if (PyErr_Occurred()) {
        goto error;
    }
    Py_DECREF(row);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
error:
    Py_DECREF(row);
    PyBuffer_Release(&view);
    return NULL;
}

static void
Reader_dealloc(Reader *self)
{
    for (Py_ssize_t i = 0; i < self->count; i++) {
        Py_XDECREF(self->fields[i].name);
    }
    PyMem_Free(self->fields);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
kind_of(PyObject *name)
{
    for (int k = 0; k < KIND_COUNT; k++) {
        if (PyUnicode_CompareWithASCIIString(name, KIND_NAMES[k]) == 0) {
            return k;
        }
    }
    return -1;
}

/* The `fields` argument of Reader(fields) / Writer(fields) as a fast sequence, with `*slots`
 * set to zeroed room for one entry of `size` bytes per field; NULL (exception set) on error. */
static PyObject *
fields_argument(PyObject *args, PyObject *kwargs, const char *format, const void *existing,
                size_t size, void **slots)
{
    PyObject *fields;
    static char *keywords[] = {"fields", NULL};
    if (existing != NULL) {
        PyErr_SetString(PyExc_TypeError, "a Reader or Writer is initialised once");
        return NULL;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords, &fields)) {
        return NULL;
    }
    PyObject *items = PySequence_Fast(fields, "fields must be a sequence");
    if (items == NULL) {
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(items);
    *slots = PyMem_Calloc(count ? count : 1, size);
    if (*slots == NULL) {
        Py_DECREF(items);
        PyErr_NoMemory();
        return NULL;
    }
    return items;
}

/* Reader(fields): fields is a sequence of (name: str, avro type: str, null branch: 0, 1 or
 * None). */
static int
Reader_init(Reader *self, PyObject *args, PyObject *kwargs)
{
    PyObject *items = fields_argument(args, kwargs, "O:Reader", self->fields, sizeof(field_t),
                                      (void **)&self->fields);
    if (items == NULL) {
        return -1;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *name, *type, *branch;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(items, i), "UUO:field", &name, &type,
                              &branch)) {
            goto fail;
        }
        int kind = kind_of(type);
        if (kind < 0) {
            PyErr_Format(PyExc_ValueError, "field %R: Avro type %R is not a flat-avro type",
                         name, type);
            goto fail;
        }
        int null_branch = -1;
        if (branch != Py_None) {
            long b = PyLong_AsLong(branch);
            if (b != 0 && b != 1) {
                if (!PyErr_Occurred()) {
                    PyErr_Format(PyExc_ValueError, "field %R: null branch must be 0, 1 or "
                                 "None", name);
                }
                goto fail;
            }
            null_branch = (int)b;
        }
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name);
        self->fields[i] = (field_t){name, kind, null_branch};
        self->count = i + 1;
    }
    Py_DECREF(items);
    return 0;
fail:
    Py_DECREF(items);
    return -1;
}

static PyMethodDef Reader_methods[] = {
    {"decode", (PyCFunction)(void (*)(void))Reader_decode, METH_FASTCALL,
     "decode(data, start=0) -> dict | None\n\nThe row of the body at `start` of `data`, "
     "running to its end; None when the body is not read here (the caller reads it with "
     "fastavro)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "service.core._flatread.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Reader(fields): reads the bodies of one flat Avro record schema.",
    .tp_methods = Reader_methods,
    .tp_init = (initproc)Reader_init,
    .tp_new = PyType_GenericNew,
};


/* ---- Writer: the fast path of `RecordCodec.encode` ------------------------------------ */

/* How a field's plain-JSON value is checked before it is written as is; anything else calls
 * the field's Python converter. */
enum check { C_CONVERT, C_INT_RANGE, C_TEXT_LIMIT };

typedef struct {
    PyObject *name;
    int kind;
    PyObject *null_prefix;  /* bytes, or NULL: NOT NULL */
    PyObject *value_prefix; /* bytes (empty for NOT NULL) */
    PyObject *convert;      /* the column's encoder, or NULL (identity) */
    int check;
    long long low, high;    /* C_INT_RANGE */
    Py_ssize_t limit;       /* C_TEXT_LIMIT: characters */
} wfield_t;

typedef struct {
    PyObject_HEAD
    Py_ssize_t count;
    wfield_t *fields;
} Writer;

typedef struct {
    char *data;
    Py_ssize_t size, capacity;
} buffer_t;

static int
reserve(buffer_t *out, Py_ssize_t more)
{
    if (out->size + more <= out->capacity) {
        return 1;
    }
    Py_ssize_t capacity = out->capacity * 2 + more + 64;
    char *grown = PyMem_Realloc(out->data, capacity);
    if (grown == NULL) {
        PyErr_NoMemory();
        return 0;
    }
    out->data = grown;
    out->capacity = capacity;
    return 1;
}

static int
put(buffer_t *out, const char *data, Py_ssize_t size)
{
    if (!reserve(out, size)) {
        return 0;
    }
    memcpy(out->data + out->size, data, size);
    out->size += size;
    return 1;
}

static int
put_long(buffer_t *out, int64_t n)
{
    if (!reserve(out, 10)) {
        return 0;
    }
    uint64_t z = ((uint64_t)n << 1) ^ (uint64_t)(n >> 63);
    unsigned char *p = (unsigned char *)out->data + out->size;
    while (z > 0x7f) {
        *p++ = (unsigned char)((z & 0x7f) | 0x80);
        z >>= 7;
    }
    *p++ = (unsigned char)z;
    out->size = (char *)p - out->data;
    return 1;
}

/* 1: written; 0: not written here (no exception: the caller's Python path decides);
 * -1: out of memory. */
static int
put_value(buffer_t *out, int kind, PyObject *datum)
{
    switch (kind) {
    case K_INT:
    case K_LONG: {
        if (!PyLong_CheckExact(datum)) {
            return 0;
        }
        int overflow;
        long long n = PyLong_AsLongLongAndOverflow(datum, &overflow);
        if (overflow || (n == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        return put_long(out, n) ? 1 : -1;
    }
    case K_STRING: {
        if (!PyUnicode_CheckExact(datum)) {
            return 0;
        }
        Py_ssize_t size;
        const char *utf8 = PyUnicode_AsUTF8AndSize(datum, &size);
        if (utf8 == NULL) { /* a lone surrogate: the Python path names it */
            PyErr_Clear();
            return 0;
        }
        return put_long(out, size) && put(out, utf8, size) ? 1 : -1;
    }
    case K_BYTES:
        if (!PyBytes_CheckExact(datum)) {
            return 0;
        }
        return put_long(out, PyBytes_GET_SIZE(datum)) &&
                       put(out, PyBytes_AS_STRING(datum), PyBytes_GET_SIZE(datum))
                   ? 1
                   : -1;
    case K_FLOAT:
    case K_DOUBLE: {
        if (!PyFloat_CheckExact(datum)) {
            return 0;
        }
        double d = PyFloat_AS_DOUBLE(datum);
        int width = kind == K_FLOAT ? 4 : 8;
        if (!reserve(out, width)) {
            return -1;
        }
        int failed = kind == K_FLOAT ? PyFloat_Pack4(d, out->data + out->size, 1)
                                     : PyFloat_Pack8(d, out->data + out->size, 1);
        if (failed) { /* too large for a float: the Python path names it */
            PyErr_Clear();
            return 0;
        }
        out->size += width;
        return 1;
    }
    }
    return 0;
}

/* 1: written; 0: left to the Python path; -1: error (out of memory). */
static int
write_field(buffer_t *out, const wfield_t *field, PyObject *value)
{
    if (field->check == C_INT_RANGE && PyLong_CheckExact(value)) {
        int overflow;
        long long n = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (!overflow && !(n == -1 && PyErr_Occurred()) && n >= field->low && n <= field->high) {
            return put_long(out, n) ? 1 : -1;
        }
        PyErr_Clear();
    } else if (field->check == C_TEXT_LIMIT && PyUnicode_CheckExact(value) &&
               PyUnicode_GET_LENGTH(value) <= field->limit) {
        return put_value(out, K_STRING, value);
    } else if (field->check == C_CONVERT && field->convert == NULL) {
        return put_value(out, field->kind, value);
    }
    if (field->convert == NULL) {
        return 0;
    }
    PyObject *datum = PyObject_CallOneArg(field->convert, value);
    if (datum == NULL) { /* an invalid value: the Python path reports it */
        PyErr_Clear();
        return 0;
    }
    int written = put_value(out, field->kind, datum);
    Py_DECREF(datum);
    return written;
}

/* Writer.write(row) -> bytes | None */
static PyObject *
Writer_write(Writer *self, PyObject *row)
{
    if (!PyDict_CheckExact(row)) {
        Py_RETURN_NONE;
    }
    buffer_t out = {NULL, 0, 0};
    for (Py_ssize_t i = 0; i < self->count; i++) {
        const wfield_t *field = &self->fields[i];
        PyObject *value = PyDict_GetItemWithError(row, field->name);
        if (value == NULL && PyErr_Occurred()) {
            goto error;
        }
        int written;
        if (value == NULL || value == Py_None) {
            if (field->null_prefix == NULL) {
                goto not_here; /* NOT NULL: the Python path reports it */
            }
            written = put(&out, PyBytes_AS_STRING(field->null_prefix),
                          PyBytes_GET_SIZE(field->null_prefix)) ? 1 : -1;
        } else {
            written = put(&out, PyBytes_AS_STRING(field->value_prefix),
                          PyBytes_GET_SIZE(field->value_prefix))
                          ? write_field(&out, field, value)
                          : -1;
        }
        if (written < 0) {
            goto error;
        }
        if (written == 0) {
            goto not_here;
        }
    }
    PyObject *body = PyBytes_FromStringAndSize(out.data ? out.data : "", out.size);
    PyMem_Free(out.data);
    return body;
not_here:
    PyMem_Free(out.data);
    Py_RETURN_NONE;
error:
    PyMem_Free(out.data);
    return NULL;
}

static void
Writer_dealloc(Writer *self)
{
    for (Py_ssize_t i = 0; i < self->count; i++) {
        wfield_t *f = &self->fields[i];
        Py_XDECREF(f->name);
        Py_XDECREF(f->null_prefix);
        Py_XDECREF(f->value_prefix);
        Py_XDECREF(f->convert);
    }
    PyMem_Free(self->fields);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Writer(fields): each (name, avro type, null prefix bytes | None, value prefix bytes,
 * converter | None, check) where check is None, ("int", low, high) or ("text", limit). */
static int
Writer_init(Writer *self, PyObject *args, PyObject *kwargs)
{
    PyObject *items = fields_argument(args, kwargs, "O:Writer", self->fields, sizeof(wfield_t),
                                      (void **)&self->fields);
    if (items == NULL) {
        return -1;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *name, *type, *null_prefix, *value_prefix, *convert, *check;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(items, i), "UUOSOO:field", &name, &type,
                              &null_prefix, &value_prefix, &convert, &check)) {
            goto fail;
        }
        wfield_t f = {0};
        f.kind = kind_of(type);
        if (f.kind < 0) {
            PyErr_Format(PyExc_ValueError, "field %R: Avro type %R is not a flat-avro type",
                         name, type);
            goto fail;
        }
        if (null_prefix != Py_None && !PyBytes_Check(null_prefix)) {
            PyErr_Format(PyExc_TypeError, "field %R: null prefix must be bytes or None", name);
            goto fail;
        }
        f.check = C_CONVERT;
        if (check != Py_None) {
            const char *what;
            if (!PyTuple_Check(check) || PyTuple_GET_SIZE(check) < 2 ||
                !(what = PyUnicode_AsUTF8(PyTuple_GET_ITEM(check, 0)))) {
                PyErr_Clear();
                PyErr_Format(PyExc_ValueError, "field %R: bad check %R", name, check);
                goto fail;
            }
            if (strcmp(what, "int") == 0 && PyTuple_GET_SIZE(check) == 3) {
                f.check = C_INT_RANGE;
                f.low = PyLong_AsLongLong(PyTuple_GET_ITEM(check, 1));
                f.high = PyLong_AsLongLong(PyTuple_GET_ITEM(check, 2));
            } else if (strcmp(what, "text") == 0 && PyTuple_GET_SIZE(check) == 2) {
                f.check = C_TEXT_LIMIT;
                f.limit = PyLong_AsSsize_t(PyTuple_GET_ITEM(check, 1));
            } else {
                PyErr_Format(PyExc_ValueError, "field %R: bad check %R", name, check);
                goto fail;
            }
            if (PyErr_Occurred()) {
                goto fail;
            }
        }
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name);
        f.name = name;
        f.null_prefix = null_prefix == Py_None ? NULL : Py_NewRef(null_prefix);
        f.value_prefix = Py_NewRef(value_prefix);
        f.convert = convert == Py_None ? NULL : Py_NewRef(convert);
        self->fields[i] = f;
        self->count = i + 1;
    }
    Py_DECREF(items);
    return 0;
fail:
    Py_DECREF(items);
    return -1;
}

static PyMethodDef Writer_methods[] = {
    {"write", (PyCFunction)Writer_write, METH_O,
     "write(row) -> bytes | None\n\nThe Avro body of `row` (a dict); None when it is not "
     "written here (a value its checks do not pass, a missing NOT NULL column): the caller's "
     "Python path writes it or reports every invalid column."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WriterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "service.core._flatread.Writer",
    .tp_basicsize = sizeof(Writer),
    .tp_dealloc = (destructor)Writer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Writer(fields): writes the bodies of one flat Avro record schema.",
    .tp_methods = Writer_methods,
    .tp_init = (initproc)Writer_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "service.core._flatread",
    .m_doc = "The fast paths of flat Avro bodies: Reader (RecordCodec.decode) and Writer "
             "(RecordCodec.encode).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__flatread(void)
{
    if (PyType_Ready(&ReaderType) < 0 || PyType_Ready(&WriterType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddObjectRef(m, "Writer", (PyObject *)&WriterType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
