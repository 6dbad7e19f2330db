# Compiles the Python files under DIR to bytecode (__pycache__ beside them) with the interpreter PY,
# at build time (CMakeLists.txt, reprun_python): best effort, a failure (another Python version, no
# python3) leaves the sources to be compiled at run time as before. Run with cmake -P, so that no
# shell reads the paths.
execute_process(COMMAND "${PY}" -m compileall -q "${DIR}" RESULT_VARIABLE ignored OUTPUT_QUIET ERROR_QUIET)
