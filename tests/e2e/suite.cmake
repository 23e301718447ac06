# End-to-end test: the official `openai` npm package (pinned in
# tests/e2e/package.json and package-lock.json) drives `ridge serve`.
#
# The package files and the script are copied into BUILD/e2e; the fixture
# test e2e_npm_install runs `npm ci` there, and e2e_openai_node runs the
# script. If npm cannot install the package (no network, say), the fixture
# fails and CTest reports the end-to-end test as failed too: it never passes
# silently. Node.js and npm are required (scripts/setup.sh installs them).
#
# The sanitizer trees leave it to the Release tree: it tests the protocol, not memory.
if(RIDGE_SANITIZE OR RIDGE_SANITIZE_THREAD)
  return()
endif()
find_program(RIDGE_NODE node)
find_program(RIDGE_NPM npm)
if(NOT RIDGE_NODE OR NOT RIDGE_NPM)
  message(FATAL_ERROR "tests/e2e: node and npm are required for the end-to-end test. Run scripts/setup.sh.")
endif()

set(RIDGE_E2E_DIR ${CMAKE_BINARY_DIR}/e2e)
foreach(file package.json package-lock.json openai_e2e.mjs)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${file} ${RIDGE_E2E_DIR}/${file} COPYONLY)
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/../node/ridge_server.mjs ${RIDGE_E2E_DIR}/ridge_server.mjs COPYONLY)

add_test(NAME e2e_npm_install
         COMMAND ${RIDGE_NPM} ci --no-audit --no-fund --prefer-offline
         WORKING_DIRECTORY ${RIDGE_E2E_DIR})
set_tests_properties(e2e_npm_install PROPERTIES FIXTURES_SETUP ridge_e2e_node TIMEOUT 600)

add_test(NAME e2e_openai_node
         COMMAND ${RIDGE_NODE} ${RIDGE_E2E_DIR}/openai_e2e.mjs $<TARGET_FILE:ridge> ${RIDGE_SHARED_DIR}
                 ${RIDGE_E2E_DIR}/work
         WORKING_DIRECTORY ${RIDGE_E2E_DIR})
set_tests_properties(e2e_openai_node PROPERTIES FIXTURES_REQUIRED ridge_e2e_node TIMEOUT 300)
