/* SPDX-License-Identifier: MIT */
/*
 * Prints one row of python/layouts.h: the offsets cprof reads in the
 * CPython version whose headers it is compiled against (3.8-3.12; 3.13 and
 * later publish them in _Py_DebugOffsets).  Built by python-offsets.sh.
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

#define F(name, value) printf("\t\t." #name " = %u,\n", (unsigned)(value))

int main(void)
{
	printf("\t{\n");
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
	printf("\t},\n");
	return 0;
}
