# The Jinja oracle (label `jinja`): every chat template under
# tests/jinja/templates/ rendered by `ridge template` and by Jinja2 itself
# (Debian's python3-jinja2, configured as transformers configures it) over the
# conversations of tests/jinja/conversations.json; outputs must be byte-equal.
# One test per template file: jinja_oracle_NAME. The unit tests of the
# interpreter (tests/jinja/*_test.cc) are registered by tests/CMakeLists.txt.
#
# The sanitizer trees run the unit tests only: the oracle tests text, not memory.
if(RIDGE_SANITIZE OR RIDGE_SANITIZE_THREAD)
  return()
endif()

# Debian's python3-jinja2 (scripts/setup.sh) serves /usr/bin/python3; a python3
# that comes first on PATH (pyenv, a virtualenv) may lack jinja2.
find_package(Python3 COMPONENTS Interpreter)
set(RIDGE_JINJA_PYTHON "")
foreach(candidate IN ITEMS /usr/bin/python3 "${Python3_EXECUTABLE}")
  if(candidate AND NOT RIDGE_JINJA_PYTHON)
    execute_process(COMMAND ${candidate} -c "import jinja2" RESULT_VARIABLE _jinja2_rc OUTPUT_QUIET ERROR_QUIET)
    if(_jinja2_rc EQUAL 0)
      set(RIDGE_JINJA_PYTHON ${candidate})
    endif()
  endif()
endforeach()
if(NOT RIDGE_JINJA_PYTHON)
  message(FATAL_ERROR "tests/jinja: a python3 with jinja2 is required for the Jinja oracle. "
                      "Run scripts/setup.sh (it installs python3-jinja2).")
endif()

file(GLOB RIDGE_JINJA_TEMPLATES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/templates/*.jinja)
foreach(template IN LISTS RIDGE_JINJA_TEMPLATES)
  get_filename_component(name ${template} NAME_WLE)
  add_test(NAME jinja_oracle_${name}
           COMMAND ${RIDGE_JINJA_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/oracle.py --ridge $<TARGET_FILE:ridge> ${template})
  set_tests_properties(jinja_oracle_${name} PROPERTIES LABELS jinja TIMEOUT 120
                       ENVIRONMENT PYTHONDONTWRITEBYTECODE=1)
endforeach()
