/* SPDX-License-Identifier: MIT */
/*
 * Prints one row of python/layouts.h: the offsets cprof reads in the
 * CPython version whose headers it is compiled against (3.8-3.12).  3.13
 * publishes them in _Py_DebugOffsets at the start of _PyRuntime: for it,
 * the row gives where in that struct each offset is (python/debug_offsets.h).
 * Built by python-offsets.sh.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>

#if PY_VERSION_HEX < 0x03090000
#include "internal/pycore_pystate.h"
#else
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_frame.h"
#define FRAME struct _PyInterpreterFrame
#else
#include "frameobject.h"
#define FRAME PyFrameObject
#endif

/* One row per version on one line: the rows are a table, read across. */
#define F(name, value) printf(" ." #name " = %u,", (unsigned)(value))

#if PY_VERSION_HEX >= 0x030d0000
/* Where each offset cprof reads lies in _Py_DebugOffsets, in bytes. */
#define D(name, member) F(name, offsetof(_Py_DebugOffsets, member))
int main(void)
{
	printf("#define PY_DEBUG_OFFSETS_SIZE %u\n", (unsigned)sizeof(_Py_DebugOffsets));
	printf("#define PY_DEBUG_OFFSETS_VERSION %u\n", (unsigned)offsetof(_Py_DebugOffsets, version));
	printf("#define PY_DEBUG_OFFSETS_FREE_THREADED %u\n",
	       (unsigned)offsetof(_Py_DebugOffsets, free_threaded));
	printf("static const struct py_layout py_debug_positions = {");
	F(minor, PY_MINOR_VERSION);
	D(rt_interp_head, runtime_state.interpreters_head);
	D(is_next, interpreter_state.next);
	D(is_tstate_head, interpreter_state.threads_head);
	D(ts_next, thread_state.next);
	D(ts_interp, thread_state.interp);
	D(ts_frame, thread_state.current_frame);
	D(ts_thread_id, thread_state.thread_id);
	D(ts_native_thread_id, thread_state.native_thread_id);
	D(fr_previous, interpreter_frame.previous);
	D(fr_code, interpreter_frame.executable);
	D(fr_instr, interpreter_frame.instr_ptr);
	D(fr_owner, interpreter_frame.owner);
	D(co_qualname, code_object.qualname);
	D(co_code_adaptive, code_object.co_code_adaptive);
	D(co_linetable, code_object.linetable);
	D(co_filename, code_object.filename);
	D(co_name, code_object.name);
	D(co_firstlineno, code_object.firstlineno);
	D(bytes_size, bytes_object.ob_size);
	D(bytes_sval, bytes_object.ob_sval);
	D(uni_length, unicode_object.length);
	D(uni_state, unicode_object.state);
	D(uni_ascii_size, unicode_object.asciiobject_size);
	printf(" };\n");
	return 0;
}
#else
int main(void)
{
	printf("\t{");
	F(minor, PY_MINOR_VERSION);
	F(rt_interp_head, offsetof(_PyRuntimeState, interpreters.head));
	F(rt_main_thread, offsetof(_PyRuntimeState, main_thread));
	F(is_next, offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX >= 0x030b0000
	F(is_tstate_head, offsetof(PyInterpreterState, threads.head));
#else
	F(is_tstate_head, offsetof(PyInterpreterState, tstate_head));
#endif
	F(ts_next, offsetof(PyThreadState, next));
	F(ts_interp, offsetof(PyThreadState, interp));
	F(ts_thread_id, offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030b0000
	F(ts_native_thread_id, offsetof(PyThreadState, native_thread_id));
	F(ts_frame, offsetof(PyThreadState, cframe));
	F(cframe_current_frame, offsetof(_PyCFrame, current_frame));
	F(fr_previous, offsetof(FRAME, previous));
	F(fr_code, offsetof(FRAME, f_code));
	F(fr_instr, offsetof(FRAME, prev_instr));
	F(fr_owner, offsetof(FRAME, owner));
#if PY_VERSION_HEX < 0x030c0000
	F(fr_is_entry, offsetof(FRAME, is_entry));
#endif
	F(co_qualname, offsetof(PyCodeObject, co_qualname));
	F(co_code_adaptive, offsetof(PyCodeObject, co_code_adaptive));
	F(co_linetable, offsetof(PyCodeObject, co_linetable));
#else
	F(ts_frame, offsetof(PyThreadState, frame));
	F(fr_previous, offsetof(FRAME, f_back));
	F(fr_code, offsetof(FRAME, f_code));
	F(fr_lasti, offsetof(FRAME, f_lasti));
#if PY_VERSION_HEX >= 0x030a0000
	F(co_linetable, offsetof(PyCodeObject, co_linetable));
#else
	F(co_linetable, offsetof(PyCodeObject, co_lnotab));
#endif
#endif
	F(co_filename, offsetof(PyCodeObject, co_filename));
	F(co_name, offsetof(PyCodeObject, co_name));
	F(co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	F(bytes_size, offsetof(PyVarObject, ob_size));
	F(bytes_sval, offsetof(PyBytesObject, ob_sval));
	F(uni_length, offsetof(PyASCIIObject, length));
	F(uni_state, offsetof(PyASCIIObject, state));
	F(uni_ascii_size, sizeof(PyASCIIObject));
	F(uni_compact_size, sizeof(PyCompactUnicodeObject));
	printf(" },\n");
	return 0;
}
#endif
